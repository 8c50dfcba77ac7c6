//! The output stage's error: why a run could not write its outputs, or could not commit
//! them, in a packaging run's words. The archive writer words its hints in terms of files;
//! where a run has better words (`--dest-dir`, the build's artifacts) they are said here.
//!
//! Owns: `OutputError` and those hints. Does not own: the destination's own words
//! (`destination::error`), the writing itself.

use std::path::{Path, PathBuf};

use archive_write::WriteError;
use diagnostic::Diagnostic;

use crate::input::CatalogError;
use crate::plan::PlanError;

use super::destination::error::{dest_dir_hint, DestinationError};
use super::launcher::LauncherError;
use super::manylinux::TagError;

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Launcher(#[from] LauncherError),
    #[error(transparent)]
    Tag(#[from] TagError),
    #[error(transparent)]
    Destination(#[from] DestinationError),
    /// The checkout's third-party sources, read for the bills of materials.
    #[error(transparent)]
    Input(#[from] CatalogError),
    /// A devel tree, decided again from the artifacts as it is read for the tag choice.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// SPEC §2 validations: a kpack-split build publishes the whole set or nothing.
    #[error("the build is incomplete, missing from {}: {}", output_dir.display(), missing.join(", "))]
    IncompleteOutput { output_dir: PathBuf, missing: Vec<String> },
    /// What the plan promised and the output stage did not find (a bug, said in words).
    #[error("{message}")]
    Invalid { message: String },
}

impl Diagnostic for OutputError {
    fn hint(&self) -> Option<&'static str> {
        match self {
            OutputError::Write(error) => write_hint(error),
            OutputError::Launcher(error) => error.hint(),
            OutputError::Tag(error) => error.hint(),
            OutputError::Destination(error) => error.hint(),
            OutputError::Input(error) => error.hint(),
            OutputError::Plan(error) => error.hint(),
            OutputError::IncompleteOutput { .. } | OutputError::Invalid { .. } => None,
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            OutputError::Write(error) => error.path(),
            OutputError::Launcher(error) => error.path(),
            OutputError::Tag(error) => error.path(),
            OutputError::Destination(error) => error.path(),
            OutputError::Input(error) => error.path(),
            OutputError::Plan(error) => error.path(),
            OutputError::IncompleteOutput { output_dir, .. } => Some(output_dir),
            OutputError::Invalid { .. } => None,
        }
    }
}

/// The archive writer's hint, in a packaging run's words: where it writes is `--dest-dir`,
/// and what it reads is the build's artifacts.
fn write_hint(error: &WriteError) -> Option<&'static str> {
    match error {
        WriteError::Write { source, .. } => Some(dest_dir_hint(source)),
        WriteError::NotOurs { .. } => Some(
            "a run writes only regular files and directories of its own in --dest-dir: move that one out of the \
             way, or pass another --dest-dir",
        ),
        WriteError::Changed { .. } => {
            Some("something modified the artifacts during packaging: rerun when the build has finished")
        }
        _ => error.hint(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_error(errno: i32) -> OutputError {
        let source = std::io::Error::from_raw_os_error(errno);
        OutputError::Write(WriteError::io(archive_write::WriteAction::Write, "dist/x.whl", source))
    }

    /// A run's hints name what the user passed (`--dest-dir`) and what it read (artifacts).
    #[test]
    fn full_disk_quota_and_file_size_limit_name_the_dest_dir() {
        let hint = |errno| write_error(errno).hint().unwrap_or_default();
        assert!(hint(libc::ENOSPC).starts_with("the destination is full"), "{}", hint(libc::ENOSPC));
        assert!(hint(libc::EDQUOT).contains("quota") && hint(libc::EDQUOT).contains("--dest-dir"));
        assert!(hint(libc::EFBIG).contains("ulimit -f") && hint(libc::EFBIG).contains("--dest-dir"));
        assert!(hint(libc::EACCES).contains("permissions of --dest-dir"), "{}", hint(libc::EACCES));
        assert!(hint(libc::ENOENT).contains("--dest-dir"), "{}", hint(libc::ENOENT));
    }
}
