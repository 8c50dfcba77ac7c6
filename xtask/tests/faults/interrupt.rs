//! A run stopped midway, by SIGKILL (nothing can clean up) or SIGINT/SIGTERM (the CLI
//! cleans up): `dist/` then holds only the complete packages of the run before, and a
//! rerun succeeds. The interrupted runs are reruns that read the old wheels to copy from
//! them (SPEC §8); those stay intact, and the rerun after them writes a cold run's bytes.
//!
//! "Midway" is made certain, not hoped for: the moment a temp file appears the run is
//! frozen with SIGSTOP, the test checks that it is in the middle of writing, and only then
//! delivers the signal (and SIGCONT). Without the freeze, a loaded machine could let the
//! run finish or commit between the test seeing the temp file and the signal landing.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Stdio};

use super::{
    add_noise, check_archives, copy_example, describe, output, package_command, temp_files, wait_for_temp_file,
};

/// The archives of `dist` with their bytes.
fn archives(dist: &Path) -> BTreeMap<String, Vec<u8>> {
    check_archives(dist).into_iter().map(|name| (name.clone(), fs_err::read(dist.join(&name)).expect("read"))).collect()
}

/// A dist from a complete run of the plain example; then noise is added, so the next
/// run's core wheel differs and takes a while to write.
fn dist_from_before(dir: &Path) -> (std::path::PathBuf, BTreeMap<String, Vec<u8>>) {
    let artifacts = copy_example(dir);
    let dist = dir.join("dist");
    let result = output(&mut package_command(&artifacts, &dist));
    assert!(result.status.success(), "{}", describe(&result));
    let before = archives(&dist);
    assert_eq!(before.len(), 7, "{:?}", before.keys());
    add_noise(&artifacts, 48 << 20);
    (artifacts, before)
}

/// Whether a lock file is in `dist` or in the --dest-dir above it (a run removes
/// its own, which lives in the --dest-dir, when it ends).
fn lock_files(dist: &Path) -> bool {
    let dest = dist.parent().expect("dist has a parent");
    assert!(!dist.join(".rocm-packager.lock").exists(), "a lock file in {}, which users upload", dist.display());
    dest.join(".rocm-packager.lock").exists()
}

fn pid(child: &Child) -> libc::pid_t {
    libc::pid_t::try_from(child.id()).expect("pid fits")
}

fn send(child: &Child, signal: libc::c_int) {
    // SAFETY: kill has no memory preconditions; the pid is our own live child.
    assert_eq!(unsafe { libc::kill(pid(child), signal) }, 0);
}

/// Waits for a temp file in `dist`, then freezes the run (SIGSTOP) and waits until it is
/// frozen; asserts that it is mid-write then: its temp files are there and the archives
/// are still those of the run before. The caller delivers its signal, then [`resume`]s.
fn freeze_mid_write(dist: &Path, child: &mut Child, before: &BTreeMap<String, Vec<u8>>) {
    wait_for_temp_file(dist, child);
    send(child, libc::SIGSTOP);
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid writes only `status`; WUNTRACED reports the stop without reaping.
        let waited = unsafe { libc::waitpid(pid(child), &mut status, libc::WUNTRACED) };
        if waited == pid(child) {
            break;
        }
        assert_eq!(std::io::Error::last_os_error().kind(), std::io::ErrorKind::Interrupted, "waitpid");
    }
    assert!(libc::WIFSTOPPED(status), "the run ended (wait status {status:#x}) before it could be frozen");
    assert!(!temp_files(dist).is_empty(), "the frozen run is writing");
    assert_eq!(&archives(dist), before, "the frozen run has committed nothing");
}

/// Lets a frozen run go on; a signal sent while it was frozen is delivered now.
fn resume(child: &Child) {
    send(child, libc::SIGCONT);
}

#[test]
fn sigkill_mid_run_leaves_only_complete_archives_and_a_rerun_succeeds() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (artifacts, before) = dist_from_before(temp.path());
    let dist = temp.path().join("dist");

    let mut child = package_command(&artifacts, &dist).stderr(Stdio::null()).spawn().expect("spawn");
    freeze_mid_write(&dist, &mut child, &before);
    // SIGKILL ends a stopped process too; no SIGCONT needed.
    send(&child, libc::SIGKILL);
    let status = child.wait().expect("wait");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    // Only the temp file of the killed run is new, and it is no archive (hidden, and
    // never under a package's name); every archive is the complete one from before.
    assert!(!temp_files(&dist).is_empty(), "the kill landed mid-write");
    assert!(lock_files(&dist), "nothing could remove the killed run's lock file");
    assert_eq!(archives(&dist), before);

    // The rerun reads the old wheels the killed run left intact, and copies from them.
    let result = output(package_command(&artifacts, &dist).args(["--json", "-"]));
    assert!(result.status.success(), "the rerun: {}", describe(&result));
    let stdout = String::from_utf8_lossy(&result.stdout);
    let reused = stdout.lines().find_map(|line| line.trim().strip_prefix("\"reused_bytes\": "));
    assert!(reused.is_some_and(|bytes| bytes.trim_end_matches(',') != "0"), "nothing reused: {stdout}");
    assert_eq!(temp_files(&dist), Vec::<String>::new(), "the rerun removes what the killed run left");
    assert!(!lock_files(&dist), "the rerun removes the lock file the killed run left");
    let after = archives(&dist);
    assert_eq!(after.keys().collect::<Vec<_>>(), before.keys().collect::<Vec<_>>());
    let core = after.keys().find(|name| name.starts_with("rocm_sdk_core-")).expect("core wheel");
    assert!(after[core].len() > 48 << 20, "the rerun's core wheel holds the new file");
    // And its archives are those of a cold run of the same input.
    let cold = temp.path().join("cold").join("dist");
    let result = output(package_command(&artifacts, &cold).arg("--no-reuse"));
    assert!(result.status.success(), "the cold run: {}", describe(&result));
    assert!(archives(&cold) == after, "the rerun's archives differ from a cold run's");
}

#[test]
fn sigint_and_sigterm_mid_run_remove_the_temp_files() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (artifacts, before) = dist_from_before(temp.path());
    let dist = temp.path().join("dist");

    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let mut child = package_command(&artifacts, &dist).stderr(Stdio::piped()).spawn().expect("spawn");
        freeze_mid_write(&dist, &mut child, &before);
        send(&child, signal);
        resume(&child);
        let result = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(128 + signal), "{name}: {}", describe(&result));
        // The wheels at work and those staged before them, none committed yet.
        let prefix = format!("interrupted by {name}: removed ");
        let removed = stderr.lines().find_map(|line| line.strip_prefix(prefix.as_str())).unwrap_or_default();
        let count = removed.strip_suffix(&format!(" temporary file(s) from {}", dist.display()));
        assert!(count.and_then(|count| count.parse::<usize>().ok()).is_some_and(|count| count >= 1), "{stderr}");
        assert_eq!(temp_files(&dist), Vec::<String>::new(), "{name} leaves no temp file");
        assert!(!lock_files(&dist), "{name} leaves the lock file");
        assert_eq!(archives(&dist), before, "{name}: the archives from before are intact");
    }
}
