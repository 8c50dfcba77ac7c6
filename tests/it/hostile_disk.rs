//! The destination fills up midway: the run fails with the ENOSPC hint, no archive and no
//! temp file is left, and a rerun with room succeeds. As root on a real small tmpfs; in
//! every case also in a child process whose file size limit stands in for a full disk.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{full_text, Example};
use crate::support::run;

/// Writes `len` bytes that do not compress into the core artifact, so the core wheel
/// is about that big.
fn add_noise(example: &Example, len: usize) -> PathBuf {
    let dir = example.core_stage().join("share/hostile");
    fs_err::create_dir_all(&dir).expect("mkdir");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let path = dir.join("noise.bin");
    fs_err::write(&path, noise).expect("write noise");
    path
}

/// Names in `dir` other than the lock file.
fn leftovers(dir: &Path) -> Vec<String> {
    fs_err::read_dir(dir)
        .expect("read dest")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".rocm-packager.lock")
        .collect()
}

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
        add_noise(&example, 4 << 20);
        let tmpfs = Tmpfs::mount(&example.temp.path().join("small"), "2m");
        let mut config = example.config();
        config.dest_dir = tmpfs.0.clone();
        let error = packager::package(&config, &packager::Silent).expect_err("a full disk fails the run");
        let text = full_text(&error);
        assert!(text.contains("destination is full"), "{text}");
        assert!(text.contains(&config.output_dir().display().to_string()), "{text}");
        assert_eq!(leftovers(&config.output_dir()), Vec::<String>::new(), "{text}");
        tmpfs.resize("64m");
        let report = packager::package(&config, &packager::Silent).expect("a rerun with room succeeds");
        assert_eq!(leftovers(&config.output_dir()).len(), report.outputs.len());
    }

    let temp = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("test binary");
    let out = run(Command::new(exe)
        .args(["hostile::disk::fault_child_packages_past_its_file_size_limit", "--exact", "--nocapture"])
        .args(["--test-threads=1"])
        .env(FSIZE_CHILD_ENV, temp.path()));
    assert!(out.contains("CHILD-OK"), "{out}");
}

const FSIZE_CHILD_ENV: &str = "PACKAGER_TEST_HOSTILE_FSIZE_DIR";

/// The child's half of the test above: no file it writes may pass 1 MiB, as if the disk
/// were full, so the 4 MiB core wheel fails midway.
#[test]
fn fault_child_packages_past_its_file_size_limit() {
    let Some(dir) = std::env::var_os(FSIZE_CHILD_ENV) else { return };
    let dir = PathBuf::from(dir);
    let example = Example { temp: tempfile::tempdir_in(&dir).expect("tempdir"), artifacts: dir.join("artifacts") };
    crate::support::write_example(&dir, false);
    add_noise(&example, 4 << 20);
    let config = example.config();
    // SAFETY: plain libc calls before the packager starts its threads.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit { rlim_cur: 1 << 20, rlim_max: libc::RLIM_INFINITY };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    let error = packager::package(&config, &packager::Silent).expect_err("the size limit fails the run");
    let text = full_text(&error);
    assert!(text.contains(&config.output_dir().display().to_string()), "{text}");
    assert!(text.contains("File too large"), "{text}");
    assert_eq!(leftovers(&config.output_dir()), Vec::<String>::new(), "{text}");
    println!("CHILD-OK");
}
