//! One packaging run at a time per destination: two runs into the same `--dest-dir` would
//! interleave files, so the second fails fast naming the lock.
//!
//! The lock file lives in the destination (`--dest-dir`), which need not be the directory
//! the outputs go to ([`Destination`]): when archives go to `--dest-dir`'s `dist/`
//! (SPEC §2), that directory is what users upload and index, and an empty lock file has
//! no place there. A run also removes the lock file when it ends, so no destination keeps
//! one: it unlinks the file while still holding it, and a run that opened the file before
//! that and locks it after finds it no longer at its path and starts again
//! ([`is_current`]), so two runs never hold two different files as "the" lock.
//!
//! Whoever holds the lock also owns the writers' temp files in the destination (named
//! with `write::atomic::TEMP_MARKER`, and trees also marked inside): a run that was
//! killed (SIGKILL, power loss) could not remove its own, so the next holder removes
//! them, and a CLI interrupted by SIGINT removes them through
//! [`DestLock::remove_temp_files`] before it exits. Nothing else in the destination is
//! touched, whoever made it: another tool's `.x.tmp-y`, a symlink, a directory (a
//! destination may be shared, and what is not ours is not ours to remove).
//!
//! The run's outputs are renamed into place through the lock too ([`DestLock::commit`]),
//! so an interrupt's cleanup waits for a commit under way to finish (the set is then
//! whole) and no commit starts after a cleanup (its staged files are gone). Only a run
//! killed in the milliseconds of its renames can leave a mix of new and earlier, each
//! file complete.
//!
//! Nothing in the destination is followed or waited on: `--dest-dir` itself may be a
//! symlink to a directory (the user named it), but a symlink at the output directory
//! below it (`dist/`) or at the lock file's name is refused in words, as is a lock file
//! that is not a regular file (a FIFO would block a write-only open for ever: the open is
//! non-blocking and the type checked on the descriptor).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::config::Destination;
pub use crate::dest_error::DestinationError;
use crate::write::{self, kind_of, StagedFile, StagedTree, WriteError, WrittenFile};

const LOCK_NAME: &str = ".rocm-packager.lock";

/// How often a run tries again when the lock file it locked was removed meanwhile: each
/// retry means another run ended in between, so this many is a destination under siege.
const MAX_LOCK_ATTEMPTS: usize = 64;

/// Held for the whole write stage; released when dropped (or when the process dies).
pub struct DestLock {
    _file: File,
    /// The lock file, removed when the run ends.
    path: PathBuf,
    /// The destination the lock guards, and the directory the run's outputs go to: the
    /// writers take it from here, so a run writes only where it holds the lock.
    destination: Destination,
    /// Temp files of an earlier, killed run removed when the lock was taken.
    pub removed_stale: usize,
    /// Held while committing or cleaning up; true once an interrupt's cleanup ran.
    cleaned: Mutex<bool>,
}

impl DestLock {
    /// Takes the lock of `destination.dest_dir` for a run writing into its `output_dir`
    /// (the destination itself, or a directory below it such as `dist/`), creating both, or
    /// fails at once if another run holds it; then removes temp files killed runs left in
    /// the output directory. The lock file stays in `dest_dir`, out of the directory users
    /// upload.
    pub fn acquire(destination: &Destination) -> Result<DestLock, crate::Error> {
        let Destination { dest_dir, output_dir } = destination;
        prepare_dir(dest_dir, Role::Root)?;
        if output_dir != dest_dir {
            prepare_dir(output_dir, Role::Inside)?;
        }
        let path: PathBuf = dest_dir.join(LOCK_NAME);
        let file = lock_file(dest_dir, &path)?;
        let removed_stale = remove_temp_files_in(destination)?;
        Ok(DestLock { _file: file, path, destination: destination.clone(), removed_stale, cleaned: Mutex::new(false) })
    }

    /// The destination this lock guards.
    pub fn destination(&self) -> &Destination {
        &self.destination
    }

    /// The directory the run's outputs go to.
    pub fn output_dir(&self) -> &Path {
        &self.destination.output_dir
    }

    /// Removes every writer temp file (and `--no-build-packages` temp tree) in the
    /// destination, for a run that stops (SIGINT): its staged outputs are gone, so it can
    /// commit nothing after this. Waits for a commit under way. Only the lock holder may:
    /// the temp files of a live run belong to that run. Returns how many were removed.
    pub fn remove_temp_files(&self) -> Result<usize, WriteError> {
        let mut cleaned = self.cleaned.lock().unwrap_or_else(PoisonError::into_inner);
        let first = !*cleaned;
        *cleaned = true;
        let removed = remove_temp_files_in(&self.destination)?;
        // The run ends here (it commits nothing after a cleanup), and the process may exit
        // without dropping the lock. Once only: the next run may have made a new one since.
        if first {
            remove_lock_file(&self.path);
        }
        Ok(removed)
    }

    /// Renames a run's staged outputs into place, all or none ([`write::commit`]).
    pub fn commit(&self, files: Vec<StagedFile>) -> Result<Vec<WrittenFile>, WriteError> {
        let cleaned = self.cleaned.lock().unwrap_or_else(PoisonError::into_inner);
        if *cleaned {
            let reason =
                format!("the run was interrupted and its temporary files removed from {}", self.output_dir().display());
            return Err(WriteError::Invalid { reason });
        }
        if let Some(file) = files.iter().find(|file| file.written.path.parent() != Some(self.output_dir())) {
            let reason = format!(
                "{} is not in {}, the locked destination",
                file.written.path.display(),
                self.output_dir().display()
            );
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
                format!("the run was interrupted and its temporary files removed from {}", self.output_dir().display());
            return Err(WriteError::Invalid { reason });
        }
        if let Some(tree) = trees.iter().find(|tree| tree.root().parent() != Some(self.output_dir())) {
            let reason =
                format!("{} is not in {}, the locked destination", tree.root().display(), self.output_dir().display());
            return Err(WriteError::Invalid { reason });
        }
        write::commit_trees(trees)
    }
}

impl Drop for DestLock {
    fn drop(&mut self) {
        // After a cleanup the file is gone already, and the path may name the next run's.
        if *self.cleaned.get_mut().unwrap_or_else(PoisonError::into_inner) {
            return;
        }
        // Before the descriptor closes: removed while still held (see the module doc).
        remove_lock_file(&self.path);
    }
}

/// Whether a directory of the destination is the one the user named (which may be a
/// symlink to a directory) or one inside it (which may not).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Root,
    Inside,
}

/// Makes sure `dir` is a directory to write into, creating it if nothing is there; what
/// stands in the way is said in words.
fn prepare_dir(dir: &Path, role: Role) -> Result<(), DestinationError> {
    let metadata = match std::fs::symlink_metadata(dir) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return std::fs::create_dir_all(dir)
                .map_err(|source| DestinationError::Create { path: dir.to_path_buf(), source });
        }
        Err(source) => return Err(DestinationError::Create { path: dir.to_path_buf(), source }),
    };
    if metadata.is_dir() {
        return Ok(());
    }
    if !metadata.is_symlink() {
        return Err(DestinationError::NotADirectory { path: dir.to_path_buf(), what: kind_of(&metadata.file_type()) });
    }
    let target = std::fs::read_link(dir).unwrap_or_default();
    match std::fs::metadata(dir) {
        Ok(followed) if followed.is_dir() && role == Role::Root => Ok(()),
        Ok(followed) if followed.is_dir() => Err(DestinationError::SymlinkInside { path: dir.to_path_buf(), target }),
        Ok(_) => Err(DestinationError::NotADirectory { path: dir.to_path_buf(), what: "a symlink to a non-directory" }),
        Err(_) => Err(DestinationError::DanglingSymlink { path: dir.to_path_buf(), target }),
    }
}

/// Opens, creates if need be, and locks the lock file at `path`, or fails at once if another
/// run holds it.
fn lock_file(dest_dir: &Path, path: &Path) -> Result<File, crate::Error> {
    let locked = || crate::Error::Locked { dest_dir: dest_dir.to_path_buf(), lock: path.to_path_buf() };
    for _ in 0..MAX_LOCK_ATTEMPTS {
        let file = open_lock_file(path)?;

        // SAFETY: flock on a file descriptor we own; no memory is involved.
        let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if result != 0 {
            return Err(locked());
        }
        if is_current(&file, path).map_err(crate::Error::from)? {
            return Ok(file);
        }
        // The run that held it ended and removed it between our open and our lock.
    }
    Err(locked())
}

/// Opens (creating it if need be) the regular file at `path` for writing: never through a
/// symlink in its place (to a file elsewhere), never waiting on a FIFO (a write-only open
/// of one blocks until a reader comes: non-blocking, it fails or returns at once, and the
/// descriptor's type decides).
fn open_lock_file(path: &Path) -> Result<File, DestinationError> {
    let not_a_file = |what: &'static str| DestinationError::LockNotAFile { path: path.to_path_buf(), what };
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if !metadata.is_file() => return Err(not_a_file(kind_of(&metadata.file_type()))),
        _ => {}
    }
    let opened = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        // Put in its place since the check above: a symlink, a FIFO no one reads, a directory.
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => return Err(not_a_file("a symlink")),
        Err(error) if error.raw_os_error() == Some(libc::ENXIO) => return Err(not_a_file("a FIFO")),
        Err(error) if error.raw_os_error() == Some(libc::EISDIR) => return Err(not_a_file("a directory")),
        Err(source) => return Err(DestinationError::Lock { path: path.to_path_buf(), source }),
    };
    let metadata = file.metadata().map_err(|source| DestinationError::Lock { path: path.to_path_buf(), source })?;
    match metadata.is_file() {
        true => Ok(file),
        false => Err(not_a_file(kind_of(&metadata.file_type()))),
    }
}

/// Whether `path` still names the file `file` has open: a lock file removed by the run that
/// held it is no longer the lock, whoever locks it afterwards.
fn is_current(file: &File, path: &Path) -> Result<bool, DestinationError> {
    use std::os::unix::fs::MetadataExt;
    let lock_error = |source| DestinationError::Lock { path: path.to_path_buf(), source };
    let held = file.metadata().map_err(lock_error)?;
    match std::fs::symlink_metadata(path) {
        Ok(named) => Ok((named.dev(), named.ino()) == (held.dev(), held.ino())),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(lock_error(source)),
    }
}

/// Removes the lock file a run holds. Best effort: a lock file left behind (a full disk, a
/// read-only destination) is harmless, the next run takes and removes it.
fn remove_lock_file(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// The writers' temp files in the output directory, and in the destination above it
/// (where the identity cache is saved, `identity_cache`).
fn remove_temp_files_in(destination: &Destination) -> Result<usize, WriteError> {
    let mut removed = write::atomic::remove_temp_entries(&destination.output_dir)?;
    if destination.dest_dir != destination.output_dir {
        removed += write::atomic::remove_temp_entries(&destination.dest_dir)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::write::atomic::{is_temp_name, temp_prefix, TEMP_TREE_MARKER_FILE};

    /// A destination whose outputs go into it directly (as trees do).
    fn at(dir: &Path) -> Destination {
        Destination { dest_dir: dir.to_path_buf(), output_dir: dir.to_path_buf() }
    }

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
        let lock = DestLock::acquire(&at(dest.path())).expect("lock");
        assert_eq!(lock.removed_stale, 2);
        let mut left: Vec<String> = fs_err::read_dir(dest.path())
            .expect("read")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [LOCK_NAME, "rocm-7.0.tar.gz"]);
        let error = DestLock::acquire(&at(dest.path())).err().expect("held");
        assert!(error.to_string().contains("another packaging run is writing to"), "{error}");
        drop(lock);
        assert_eq!(names(dest.path()), ["rocm-7.0.tar.gz"], "a run leaves no lock file behind");
        DestLock::acquire(&at(dest.path())).expect("free again");
    }

    #[test]
    fn a_lock_file_removed_by_its_holder_is_no_longer_the_lock() {
        let dest = tempfile::tempdir().expect("tempdir");
        let path = dest.path().join(LOCK_NAME);
        let lock = DestLock::acquire(&at(dest.path())).expect("lock");
        // What a second run opened just before the first one ended.
        let opened_before = File::open(&path).expect("open the lock file");
        assert!(is_current(&opened_before, &path).expect("stat"));
        drop(lock);
        assert!(!is_current(&opened_before, &path).expect("stat"), "removed");
        let next = DestLock::acquire(&at(dest.path())).expect("the next run");
        assert!(!is_current(&opened_before, &path).expect("stat"), "another file is the lock now");
        // An interrupted run removes its lock file when it cleans up, and only then.
        next.remove_temp_files().expect("clean up");
        assert!(!path.exists());
        let after = DestLock::acquire(&at(dest.path())).expect("a run after the interrupted one");
        drop(next);
        assert!(path.exists(), "the interrupted run removed the lock file of the run after it");
        drop(after);
        assert!(!path.exists());
    }

    /// Names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs_err::read_dir(dir)
            .expect("read")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_lock_file_stays_in_the_root_out_of_the_output_dir() {
        let root = tempfile::tempdir().expect("tempdir");
        let output_dir = root.path().join("dist");
        fs_err::create_dir_all(&output_dir).expect("mkdir");
        fs_err::write(output_dir.join(format!("{}abc123", temp_prefix("rocm-7.0.tar.gz"))), "half").expect("write");
        let destination = Destination { dest_dir: root.path().to_path_buf(), output_dir: output_dir.clone() };
        let lock = DestLock::acquire(&destination).expect("lock");
        assert_eq!((lock.removed_stale, lock.output_dir()), (1, output_dir.as_path()));
        assert_eq!(names(root.path()), [LOCK_NAME, "dist"]);
        assert_eq!(names(&output_dir), Vec::<String>::new(), "nothing of the lock in the directory users upload");
        // Runs into the same root exclude each other, whatever their output directory.
        let error = DestLock::acquire(&at(root.path())).err().expect("held");
        assert!(error.to_string().contains(&format!("another packaging run is writing to {}", root.path().display())));
    }
}
