//! The destination fills up midway: the run fails with the ENOSPC hint, no archive and no
//! temp file is left, and a rerun with room succeeds. As root on a real small tmpfs; in
//! every case also in a child process whose file size limit stands in for a full disk.

use std::path::{Path, PathBuf};
use std::process::Command;

use packager_tests::fixtures::{add_noise, names_but_the_lock};

use super::{full_text, Example};
use crate::support::run;

/// A tmpfs mounted for the test; unmounted when dropped, also when an assert fails.
pub(super) struct Tmpfs(pub(super) PathBuf);

impl Tmpfs {
    pub(super) fn mount(dir: &Path, size: &str) -> Tmpfs {
        fs_err::create_dir_all(dir).expect("mkdir");
        run(Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir));
        Tmpfs(dir.to_path_buf())
    }

    pub(super) fn resize(&self, size: &str) {
        run(Command::new("mount").args(["-o", &format!("remount,size={size}")]).arg(&self.0));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_destination_fails_cleanly_and_a_rerun_succeeds() {
    // SAFETY: geteuid has no preconditions.
    let is_root = unsafe { libc::geteuid() } == 0;
    if is_root {
        let example = Example::new();
        add_noise(&example.artifacts, 4 << 20);
        let tmpfs = Tmpfs::mount(&example.temp.path().join("small"), "2m");
        let mut config = example.config();
        config.dest_dir = tmpfs.0.clone();
        let error = packager::package(&config, &packager::Silent).expect_err("a full disk fails the run");
        let text = full_text(&error);
        assert!(text.contains("destination is full"), "{text}");
        assert!(text.contains(&config.output_dir().display().to_string()), "{text}");
        assert_eq!(names_but_the_lock(&config.output_dir()), Vec::<String>::new(), "{text}");
        tmpfs.resize("64m");
        let report = packager::package(&config, &packager::Silent).expect("a rerun with room succeeds");
        assert_eq!(names_but_the_lock(&config.output_dir()).len(), report.outputs.len());
    }

    // In every case: a file size limit stands in for a full disk, in a process of its own.
    let temp = tempfile::tempdir().expect("tempdir");
    let out = run(Command::new(env!("CARGO_BIN_EXE_fault-child")).arg("package-past-size-limit").arg(temp.path()));
    assert!(out.contains("CHILD-OK"), "{out}");
}
