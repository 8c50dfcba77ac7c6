//! The writers' one error type. Every file-system failure names what the writer was doing
//! (create a directory, a temp file, write, sync, put in place, remove) and the path, and
//! every one has a hint, chosen by what the system said (`errno`), in words of files and
//! directories: a caller that knows its flags says it in those.
//!
//! Owns: [`WriteError`], [`WriteAction`] and their hints. Does not own: the words of a
//! caller (it wraps these, see the packager's `Error`).

use std::io;
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

/// What a writer was doing when the file system refused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteAction {
    /// `create_dir_all` of a destination or of a tree's directory.
    CreateDir,
    /// A hidden temp file or temp tree beside an output.
    CreateTemp,
    /// An output's bytes (or a tree's file).
    Write,
    /// `fsync` of a file or directory.
    Sync,
    /// The rename that puts an output in place.
    PutInPlace,
    /// Moving an earlier tree aside before the new one takes its name.
    MoveAside,
    /// Removing a temp file, a stale output or an earlier tree.
    Remove,
    /// Listing a directory (for temp files a killed run left).
    List,
}

impl std::fmt::Display for WriteAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WriteAction::CreateDir => "create the directory",
            WriteAction::CreateTemp => "create a temporary file in",
            WriteAction::Write => "write",
            WriteAction::Sync => "sync to disk",
            WriteAction::PutInPlace => "put in place",
            WriteAction::MoveAside => "move aside the earlier",
            WriteAction::Remove => "remove",
            WriteAction::List => "list the directory",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot {action} {}", path.display())]
    Write {
        action: WriteAction,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Something at an output's name that a run does not replace: a symlink (never
    /// followed in a destination), a FIFO, a device, a directory where a file goes.
    #[error("{} is {what}, which a run never replaces or writes through", path.display())]
    NotOurs { path: PathBuf, what: &'static str },
    #[error("{} changed while it was being packaged: {reason}", path.display())]
    Changed { path: PathBuf, reason: String },
    #[error("invalid package: {reason}")]
    Invalid { reason: String },
    /// An existing archive read as input that does not hold what it says (its index, a
    /// member's CRC-32 or size).
    #[error("{} is damaged: {reason}", path.display())]
    Damaged { path: PathBuf, reason: String },
}

impl WriteError {
    /// A failed `action` on `path`.
    pub fn io(action: WriteAction, path: impl Into<PathBuf>, source: io::Error) -> WriteError {
        WriteError::Write { action, path: path.into(), source }
    }
}

impl From<crate::names::NameError> for WriteError {
    fn from(error: crate::names::NameError) -> WriteError {
        WriteError::Invalid { reason: error.to_string() }
    }
}

impl Diagnostic for WriteError {
    /// The file the error is about, if it names one.
    fn path(&self) -> Option<&Path> {
        match self {
            WriteError::Read { path, .. }
            | WriteError::Write { path, .. }
            | WriteError::NotOurs { path, .. }
            | WriteError::Changed { path, .. }
            | WriteError::Damaged { path, .. } => Some(path),
            WriteError::Invalid { .. } => None,
        }
    }

    /// What the user can do next, in terms of files and directories (a caller that knows
    /// its flags says it in those).
    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::Read { source, .. } => Some(read_hint(source)),
            Self::Write { source, .. } => Some(write_hint(source)),
            Self::NotOurs { .. } => Some("move it out of the way, or write elsewhere"),
            Self::Changed { .. } => Some("an input changed while it was read: write again once nothing changes it"),
            Self::Damaged { .. } => Some("the archive was cut short or altered: make or download it again"),
            Self::Invalid { .. } => None,
        }
    }
}

/// A hint for a failed write, by what the system said.
fn write_hint(source: &io::Error) -> &'static str {
    match source.raw_os_error() {
        Some(libc::ENOSPC) => "the destination is full: free space or write elsewhere; nothing partial was left in it",
        Some(libc::EDQUOT) => {
            "your disk quota is used up: free space or write elsewhere; nothing partial was left in it"
        }
        // A file-size limit (`ulimit -f`) or a file system with small files (FAT32: 4 GiB).
        Some(libc::EFBIG) => {
            "the file is larger than the destination allows (`ulimit -f`, or a file system such as FAT32): \
             raise the limit or write to another file system"
        }
        Some(libc::EACCES | libc::EPERM) => {
            "you may not write there: check the directory's permissions, or write elsewhere"
        }
        Some(libc::EROFS) => "the file system is read-only: write to a writable one",
        Some(libc::ENOENT) => {
            "a directory on the way does not exist (or was removed meanwhile): create it, or write elsewhere"
        }
        Some(libc::ENOTDIR) => "a part of the path is a file, not a directory: write elsewhere",
        Some(libc::EIO) => "the device reported an I/O error: check the disk, or write elsewhere",
        _ => "check that the directory exists and you can write to it, or write elsewhere",
    }
}

/// A hint for a failed read of an input, by what the system said.
fn read_hint(source: &io::Error) -> &'static str {
    match source.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => "you may not read it: check its permissions",
        Some(libc::ENOENT) => "it was removed while it was read: read again once nothing changes it",
        Some(libc::EIO) => "the device reported an I/O error: check the disk",
        _ if source.kind() == io::ErrorKind::InvalidData => "replace it with the regular file it should be",
        _ => "check that the file exists and you can read it",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_error(errno: i32) -> WriteError {
        WriteError::io(WriteAction::Write, "dist/x.whl", io::Error::from_raw_os_error(errno))
    }

    #[test]
    fn every_write_error_names_its_action_and_has_a_hint() {
        let hint = |errno| write_error(errno).hint().unwrap_or_default();
        assert!(hint(libc::ENOSPC).starts_with("the destination is full"), "{}", hint(libc::ENOSPC));
        assert!(hint(libc::EDQUOT).contains("quota") && hint(libc::EDQUOT).contains("write elsewhere"));
        assert!(hint(libc::EFBIG).contains("ulimit -f") && hint(libc::EFBIG).contains("another file system"));
        assert!(hint(libc::EACCES).contains("permissions"), "{}", hint(libc::EACCES));
        assert!(hint(libc::ENXIO).contains("write elsewhere"), "a fallback: {}", hint(libc::ENXIO));
        let error = WriteError::io(WriteAction::CreateDir, "/proc/x", io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(error.to_string(), "cannot create the directory /proc/x");
    }
}
