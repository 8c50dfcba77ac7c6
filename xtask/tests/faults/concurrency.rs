//! Two runs into one `--dest-dir` at once: the second fails fast naming the lock, and the
//! first run's output is complete and exactly what a run alone writes.

use std::process::Stdio;

use super::{add_noise, check_archives, copy_example, describe, output, package_command, wait_for_temp_file};

#[test]
fn a_second_run_into_the_same_dest_fails_fast_and_the_first_is_intact() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = copy_example(temp.path());
    add_noise(&artifacts, 32 << 20);
    let dist = temp.path().join("dist");

    let mut first = package_command(&artifacts, &dist).stderr(Stdio::piped()).spawn().expect("spawn");
    wait_for_temp_file(&dist, &mut first);
    let second = output(&mut package_command(&artifacts, &dist));
    let first = first.wait_with_output().expect("wait");
    assert!(first.status.success(), "the first run: {}", describe(&first));

    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{}", describe(&second));
    let expected = format!("another packaging run is writing to {}", dist.display());
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains("hint: wait for that run to finish, or pass another --dest-dir"), "{stderr}");

    // The first run's files, byte for byte as a run alone writes them.
    let alone = temp.path().join("alone");
    let result = output(&mut package_command(&artifacts, &alone));
    assert!(result.status.success(), "{}", describe(&result));
    let names = check_archives(&dist);
    assert_eq!(names, check_archives(&alone));
    for name in names {
        assert!(
            fs_err::read(dist.join(&name)).expect("read") == fs_err::read(alone.join(&name)).expect("read"),
            "{name}"
        );
    }
}
