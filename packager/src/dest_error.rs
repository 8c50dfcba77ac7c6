//! Why a destination cannot be used (`dest_lock`), and what to do when writing in it
//! failed, by what the system said: words shared by the lock and the crate's error, kept
//! apart from both so neither depends on the other.
//!
//! Owns: those words. Does not own: the checks (`dest_lock`), other errors (`error`).

use std::io;
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

/// Why a destination cannot be used, in words, each with what to do.
#[derive(Debug, thiserror::Error)]
pub enum DestinationError {
    #[error("the destination {} is a symlink to {}, which does not exist", path.display(), target.display())]
    DanglingSymlink { path: PathBuf, target: PathBuf },
    #[error(
        "{} is a symlink (to {}): a run never follows a symlink inside its destination",
        path.display(),
        target.display()
    )]
    SymlinkInside { path: PathBuf, target: PathBuf },
    #[error("the destination {} is {what}, not a directory", path.display())]
    NotADirectory { path: PathBuf, what: &'static str },
    #[error("cannot create the destination directory {}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the destination's lock file {} is {what}, not a regular file a run may create and lock", path.display())]
    LockNotAFile { path: PathBuf, what: &'static str },
    #[error("cannot open the destination's lock file {}", path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Diagnostic for DestinationError {
    fn path(&self) -> Option<&Path> {
        Some(match self {
            DestinationError::DanglingSymlink { path, .. }
            | DestinationError::SymlinkInside { path, .. }
            | DestinationError::NotADirectory { path, .. }
            | DestinationError::Create { path, .. }
            | DestinationError::LockNotAFile { path, .. }
            | DestinationError::Lock { path, .. } => path,
        })
    }

    fn hint(&self) -> Option<&'static str> {
        Some(match self {
            DestinationError::DanglingSymlink { .. } => {
                "create the directory it points to, remove the symlink, or pass another --dest-dir"
            }
            DestinationError::SymlinkInside { .. } => {
                "replace the symlink with a real directory, or pass a --dest-dir whose dist/ is a real directory"
            }
            DestinationError::NotADirectory { .. } => "remove or rename it, or pass another --dest-dir",
            DestinationError::LockNotAFile { .. } => {
                "remove it (a run creates its lock file itself and removes it when it ends), or pass another --dest-dir"
            }
            DestinationError::Create { source, .. } | DestinationError::Lock { source, .. } => dest_dir_hint(source),
        })
    }
}

/// What to do when writing in the destination failed, by what the system said.
pub(crate) fn dest_dir_hint(source: &std::io::Error) -> &'static str {
    match source.raw_os_error() {
        Some(libc::ENOSPC) => {
            "the destination is full: free space or pass another --dest-dir; nothing partial was left in it"
        }
        Some(libc::EDQUOT) => {
            "your disk quota is used up: free space or pass a --dest-dir elsewhere; nothing partial was left in it"
        }
        Some(libc::EFBIG) => {
            "the file is larger than the destination allows (`ulimit -f`, or a file system such as FAT32): \
             raise the limit or pass a --dest-dir on another file system"
        }
        Some(libc::EACCES | libc::EPERM) => {
            "you may not write there: check the permissions of --dest-dir, or pass one you can write to"
        }
        Some(libc::EROFS) => "that file system is read-only: pass a --dest-dir on a writable one",
        Some(libc::ENOENT) => {
            "a directory on the way does not exist and cannot be created there (a parent missing, or a file \
             system such as /proc that holds no directories of ours): pass a --dest-dir under an existing, \
             writable directory"
        }
        Some(libc::EEXIST | libc::ENOTDIR) => {
            "a part of the path is a file or a symlink to nothing, not a directory: fix that part, or pass \
             another --dest-dir"
        }
        Some(libc::EIO) => "the disk reported an I/O error: check it, or pass a --dest-dir on another disk",
        _ => "check that --dest-dir exists (or can be created) and that you can write to it, or pass another",
    }
}
