//! `cargo xtask verify` checks the tools the tests need before it runs anything.
//! With `ld.lld` and `cmake` missing from `PATH` (and `apt-get` too, so it cannot install
//! them) it prints one line for each, naming the command that installs it, and exits 2.

use std::ffi::OsString;
use std::path::Path;

mod common;
use common::{output, xtask};

/// A directory of symlinks to every program on this process's `PATH` except `without`:
/// the same machine with those tools uninstalled.
fn path_without(dir: &Path, without: &[&str]) -> OsString {
    let bin = dir.join("bin");
    fs_err::create_dir_all(&bin).expect("create the shadow bin dir");
    let path = std::env::var_os("PATH").expect("PATH is set");
    for source in std::env::split_paths(&path) {
        let Ok(entries) = fs_err::read_dir(&source) else { continue };
        let mut names: Vec<_> = entries.filter_map(Result::ok).map(|entry| entry.file_name()).collect();
        names.sort();
        for name in names {
            let link = bin.join(&name);
            // The first directory on PATH wins, as it does for a lookup.
            if without.iter().any(|skip| name == **skip) || fs_err::symlink_metadata(&link).is_ok() {
                continue;
            }
            std::os::unix::fs::symlink(source.join(&name), &link).expect("symlink a program");
        }
    }
    bin.into_os_string()
}

fn missing_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|line| line.starts_with("missing ")).collect()
}

#[test]
fn missing_tools_are_named_one_line_each_and_nothing_runs() {
    let temp = tempfile::tempdir().expect("temp dir");
    let path = path_without(temp.path(), &["ld.lld", "cmake", "apt-get"]);
    let expected = [
        "missing ld.lld: install it with `apt-get install lld`",
        "missing cmake: install it with `apt-get install cmake`",
    ];

    // The check alone, then the whole command: the check comes before any stage.
    for args in [&["verify", "--check-tools"][..], &["verify"][..]] {
        let result = output(xtask(temp.path()).args(args).env("PATH", &path));
        let stderr = String::from_utf8_lossy(&result.stderr);
        let stdout = String::from_utf8_lossy(&result.stdout);
        assert_eq!(result.status.code(), Some(2), "{args:?}:\n{stdout}\n{stderr}");
        let lines = missing_lines(&stderr);
        for line in expected {
            assert!(lines.contains(&line), "{args:?}: no {line:?} in\n{stderr}");
        }
        // Every other tool is on this machine's PATH, so only these two are reported.
        assert_eq!(lines.len(), expected.len(), "{stderr}");
        assert!(stderr.contains("\nerror: verify needs 2 more tool(s), listed above; nothing was run\n"), "{stderr}");
        assert!(stderr.ends_with("\nhint: install them, or run `cargo xtask verify` as root on Debian or Ubuntu to have it install them\n"), "{stderr}");
        assert_eq!(stdout, "", "nothing ran, nothing was installed");
    }
}

#[test]
fn with_every_tool_on_path_the_check_passes() {
    let temp = tempfile::tempdir().expect("temp dir");
    let result = output(xtask(temp.path()).args(["verify", "--check-tools"]));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(missing_lines(&stderr).is_empty(), "this machine lacks tools the tests need:\n{stderr}");
    assert_eq!(result.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&result.stdout), "verify: every tool the stages need is installed\n");
}
