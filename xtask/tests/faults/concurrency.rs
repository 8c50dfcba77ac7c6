//! Two runs at once. Into one `--dest-dir`: the second fails fast naming the lock and
//! writes nothing; the test itself holds the lock (as a run does), so nothing depends on
//! timing. On the bundled example outside a checkout: both runs generate it, and neither
//! disturbs the other's.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::{check_archives, copy_example, describe, output, package_command, xtask};

/// Takes `lock` as a packaging run does (`DestLock`), blocking.
fn flock(lock: &File, operation: libc::c_int) {
    // SAFETY: flock on a descriptor we own; no memory is involved.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), operation) }, 0, "flock");
}

/// Every entry of `dist` with its bytes (the lock aside).
fn contents(dist: &Path) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> = fs_err::read_dir(dist)
        .expect("read dist")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.file_name().is_some_and(|name| name != ".rocm-packager.lock"))
        .map(|path| {
            (path.file_name().expect("name").to_string_lossy().into_owned(), fs_err::read(&path).expect("read"))
        })
        .collect();
    entries.sort();
    entries
}

#[test]
fn a_run_into_a_locked_dest_fails_fast_and_runs_once_the_lock_is_free() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = copy_example(temp.path());
    let dist = temp.path().join("dist");
    fs_err::create_dir_all(&dist).expect("mkdir");
    // The lock lives in the --dest-dir root, out of the dist/ users upload.
    let lock_path = temp.path().join(".rocm-packager.lock");
    let lock = File::options().create(true).truncate(false).write(true).open(&lock_path).expect("open the lock");
    flock(&lock, libc::LOCK_EX);

    let locked = output(&mut package_command(&artifacts, &dist));
    let stderr = String::from_utf8_lossy(&locked.stderr);
    assert_eq!(locked.status.code(), Some(2), "{}", describe(&locked));
    let expected = format!("another packaging run is writing to {}", temp.path().display());
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains("hint: wait for that run to finish, or pass another --dest-dir"), "{stderr}");
    assert_eq!(contents(&dist), Vec::new(), "a run without the lock writes nothing");

    flock(&lock, libc::LOCK_UN);
    let free = output(&mut package_command(&artifacts, &dist));
    assert!(free.status.success(), "{}", describe(&free));
    assert_eq!(check_archives(&dist).len(), 7);
    // Nothing but the packages is left to upload, and the run removed its lock file.
    assert!(!dist.join(".rocm-packager.lock").exists(), "a lock file in {}", dist.display());
    assert!(!lock_path.exists(), "the run left its lock file behind");
}

#[test]
fn two_runs_of_the_bundled_example_at_once_both_succeed_alike() {
    // Outside a checkout and without --artifact-dir, each run generates the example.
    let temp = tempfile::tempdir().expect("tempdir");
    let run = |dist: &str| {
        let mut command = xtask();
        command.current_dir(temp.path()).args(["package", "--quiet", "--dest-dir", dist]);
        command.stderr(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
        command.spawn().expect("spawn")
    };
    let (first, second) = (run("first"), run("second"));
    for child in [first, second] {
        let result = child.wait_with_output().expect("wait");
        assert!(result.status.success(), "{}", describe(&result));
    }
    let (first, second) = (temp.path().join("first/dist"), temp.path().join("second/dist"));
    assert_eq!(check_archives(&first).len(), 7);
    assert!(contents(&first) == contents(&second), "the two runs wrote different packages");
}
