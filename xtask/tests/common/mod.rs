//! What the CLI test binaries share: the built `xtask` run as a child in a directory of
//! the test's choosing, and per-process scratch directories under `target/tmp`.
//! Each file in `xtask/tests/` is its own crate, so each includes this with `mod common;`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `xtask` binary cargo built for these tests, run in `cwd` (a temp dir: no TheRock
/// checkout is found by walking up from it), without the CI variables that change its
/// output.
pub fn xtask(cwd: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command.current_dir(cwd);
    for key in ["GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE", "RUST_LOG", "SOURCE_DATE_EPOCH"] {
        command.env_remove(key);
    }
    command
}

/// Runs `command` to completion, retrying while exec answers `ETXTBSY`: a program the test
/// has just written can still be open for writing in a child another test thread forked
/// and has not yet exec'd (close-on-exec closes it only at exec).
pub fn output(command: &mut Command) -> Output {
    let mut delay = std::time::Duration::from_millis(5);
    for _ in 0..12 {
        match command.output() {
            Err(error) if error.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(delay);
                delay = (delay * 2).min(std::time::Duration::from_millis(500));
            }
            result => return result.unwrap_or_else(|error| cannot_run(command, &error)),
        }
    }
    command.output().unwrap_or_else(|error| cannot_run(command, &error))
}

/// A program that is not installed is named, with where to read what the tests need.
fn cannot_run(command: &Command, error: &std::io::Error) -> ! {
    if error.kind() == std::io::ErrorKind::NotFound {
        panic!(
            "`{}` is needed for this test and is not on PATH: see CONTRIBUTING.md, \"What the tests need\" \
             (`cargo xtask verify` installs it when run as root)",
            command.get_program().to_string_lossy()
        );
    }
    panic!("cannot run {command:?}: {error}")
}

/// Runs `command`, which must succeed, and returns its output.
pub fn run(command: &mut Command) -> Output {
    let output = output(command);
    assert!(
        output.status.success(),
        "{command:?} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The example's artifacts in `dir/artifacts`, written by `xtask example`.
pub fn example(dir: &Path) -> PathBuf {
    let artifacts = dir.join("artifacts");
    run(xtask(dir).args(["-q", "example", "--out"]).arg(&artifacts));
    artifacts
}

/// A fresh `target/tmp/{name}/{pid}` for this test process; the directories of processes
/// that have ended are removed first, so concurrent test binaries never share one.
pub fn per_process_dir(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    if let Ok(entries) = fs_err::read_dir(&root) {
        for entry in entries.flatten() {
            if !Path::new("/proc").join(entry.file_name()).exists() {
                let _ = fs_err::remove_dir_all(entry.path());
            }
        }
    }
    let dir = root.join(std::process::id().to_string());
    if dir.exists() {
        fs_err::remove_dir_all(&dir).expect("remove a stale per-process dir");
    }
    dir
}

/// The names in `dir`, sorted, without hidden ones (the destination's lock file and staged
/// outputs).
pub fn visible_files(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = fs_err::read_dir(dir)
        .expect("test step")
        .map(|entry| entry.expect("test step").file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    files.sort();
    files
}
