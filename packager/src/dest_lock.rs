//! One packaging run at a time per destination: two runs into the same `--dest-dir` would
//! interleave files, so the second fails fast naming the lock.
//!
//! Whoever holds the lock also owns the writers' temp files in the destination (named
//! with `write::atomic::TEMP_MARKER`, and trees also marked inside): a run that was
//! killed (SIGKILL, power loss) could not remove its own, so the next holder removes
//! them, and a CLI interrupted by SIGINT removes them through
//! [`DestLock::remove_temp_files`] before it exits. Nothing else in the destination is
//! touched, whoever made it: another tool's `.x.tmp-y`, a symlink, a directory (issue 24).
//!
//! The run's outputs are renamed into place through the lock too ([`DestLock::commit`]),
//! so an interrupt's cleanup waits for a commit under way to finish (the set is then
//! whole) and no commit starts after a cleanup (its staged files are gone). Only a run
//! killed in the milliseconds of its renames can leave a mix of new and earlier, each
//! file complete.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::write::{self, StagedFile, StagedTree, WriteError, WrittenFile};

const LOCK_NAME: &str = ".rocm-packager.lock";

/// Held for the whole write stage; released when dropped (or when the process dies).
pub struct DestLock {
    _file: File,
    dest: PathBuf,
    /// Temp files of an earlier, killed run removed when the lock was taken.
    pub removed_stale: usize,
    /// Held while committing or cleaning up; true once an interrupt's cleanup ran.
    cleaned: Mutex<bool>,
}

impl DestLock {
    /// Takes the lock of `dest` (creating the directory), or fails at once if another run
    /// holds it; then removes temp files left by killed runs.
    pub fn acquire(dest: &Path) -> Result<DestLock, WriteError> {
        std::fs::create_dir_all(dest).map_err(|source| WriteError::Write { path: dest.to_path_buf(), source })?;
        let path: PathBuf = dest.join(LOCK_NAME);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            // A symlink in its place (to a file elsewhere) is refused, not followed.
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|source| WriteError::Write { path: path.clone(), source })?;
        // SAFETY: flock on a file descriptor we own; no memory is involved.
        let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if result != 0 {
            return Err(WriteError::Locked { dest: dest.to_path_buf(), lock: path });
        }
        let removed_stale = remove_temp_files_in(dest)?;
        Ok(DestLock { _file: file, dest: dest.to_path_buf(), removed_stale, cleaned: Mutex::new(false) })
    }

    /// The destination this lock guards.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Removes every writer temp file (and `--no-build-packages` temp tree) in the
    /// destination, for a run that stops (SIGINT): its staged outputs are gone, so it can
    /// commit nothing after this. Waits for a commit under way. Only the lock holder may:
    /// the temp files of a live run belong to that run. Returns how many were removed.
    pub fn remove_temp_files(&self) -> Result<usize, WriteError> {
        let mut cleaned = self.cleaned.lock().unwrap_or_else(PoisonError::into_inner);
        *cleaned = true;
        remove_temp_files_in(&self.dest)
    }

    /// Renames a run's staged outputs into place, all or none ([`write::commit`]).
    pub fn commit(&self, files: Vec<StagedFile>) -> Result<Vec<WrittenFile>, WriteError> {
        let cleaned = self.cleaned.lock().unwrap_or_else(PoisonError::into_inner);
        if *cleaned {
            let reason =
                format!("the run was interrupted and its temporary files removed from {}", self.dest.display());
            return Err(WriteError::Invalid { reason });
        }
        if let Some(file) = files.iter().find(|file| file.written.path.parent() != Some(self.dest.as_path())) {
            let reason =
                format!("{} is not in {}, the locked destination", file.written.path.display(), self.dest.display());
            return Err(WriteError::Invalid { reason });
        }
        write::commit(files)
    }

    /// Puts `--no-build-packages` trees in place, all or none ([`write::commit_trees`]),
    /// under the same guard as [`DestLock::commit`].
    pub fn commit_trees(&self, trees: Vec<StagedTree>) -> Result<Vec<PathBuf>, WriteError> {
        let cleaned = self.cleaned.lock().unwrap_or_else(PoisonError::into_inner);
        if *cleaned {
            let reason =
                format!("the run was interrupted and its temporary files removed from {}", self.dest.display());
            return Err(WriteError::Invalid { reason });
        }
        if let Some(tree) = trees.iter().find(|tree| tree.root().parent() != Some(self.dest.as_path())) {
            let reason = format!("{} is not in {}, the locked destination", tree.root().display(), self.dest.display());
            return Err(WriteError::Invalid { reason });
        }
        write::commit_trees(trees)
    }
}

fn remove_temp_files_in(dest: &Path) -> Result<usize, WriteError> {
    write::atomic::remove_temp_entries(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::write::atomic::{is_temp_name, temp_prefix, TEMP_TREE_MARKER_FILE};

    #[test]
    fn temp_names() {
        assert!(is_temp_name(&format!("{}Ab3xYz", temp_prefix("rocm-7.0.tar.gz"))));
        assert!(!is_temp_name(".rocm-7.0.tar.gz.tmp-Ab3xYz"), "another tool's temp name");
        assert!(!is_temp_name(LOCK_NAME));
        assert!(!is_temp_name("rocm_sdk_core-7.0.tmp-1.whl"));
        assert!(!is_temp_name("rocm-7.0.tar.gz"));
    }

    #[test]
    fn the_holder_removes_stale_temp_files_and_a_second_run_fails_fast() {
        let dest = tempfile::tempdir().expect("tempdir");
        fs_err::write(dest.path().join(format!("{}abc123", temp_prefix("rocm-7.0.tar.gz"))), "half").expect("write");
        let tree = dest.path().join(format!("{}xyz", temp_prefix("rocm_sdk_core-7.0-py3-none-any")));
        fs_err::create_dir_all(tree.join("lib")).expect("mkdir");
        fs_err::write(tree.join(TEMP_TREE_MARKER_FILE), "").expect("mark");
        fs_err::write(dest.path().join("rocm-7.0.tar.gz"), "complete").expect("write");
        let lock = DestLock::acquire(dest.path()).expect("lock");
        assert_eq!(lock.removed_stale, 2);
        let mut left: Vec<String> = fs_err::read_dir(dest.path())
            .expect("read")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [LOCK_NAME, "rocm-7.0.tar.gz"]);
        let error = DestLock::acquire(dest.path()).err().expect("held");
        assert!(error.to_string().contains("another packaging run is writing to"), "{error}");
        drop(lock);
        DestLock::acquire(dest.path()).expect("free again");
    }
}
