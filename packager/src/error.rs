//! `packager::Error`: one enum over the stages' errors, forwarding their hints. The crates
//! below (`elf-rpath`, `archive-write`) word their hints in terms of files; where a
//! packaging run has better words (its flags, its artifacts, what it does with a file it
//! may not edit), they are said here.

use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

use crate::catalog::CatalogError;
use crate::dest_error::{dest_dir_hint, DestinationError};
use crate::dest_overlap::OverlapError;
use crate::elf::{ElfError, Refusal};
use crate::launcher::LauncherError;
use crate::manylinux::TagError;
use crate::plan::PlanError;
use crate::variants::VariantsError;
use crate::write::WriteError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Launcher(#[from] LauncherError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Tag(#[from] TagError),
    #[error(transparent)]
    Variants(#[from] VariantsError),
    #[error(transparent)]
    Destination(#[from] DestinationError),
    /// A Windows DLL or program whose layout a Windows loader refuses (SPEC §7): it is
    /// copied byte for byte, so it would fail on the user's machine, not here.
    #[error("malformed PE file {}: {reason}", path.display())]
    MalformedPe { path: PathBuf, reason: String },
    /// The destination overlaps the artifacts directory (`dest_overlap`).
    #[error(transparent)]
    Overlap(#[from] OverlapError),
    /// One run at a time per destination (`dest_lock`).
    #[error("another packaging run is writing to {} (lock {} is held)", dest_dir.display(), lock.display())]
    Locked { dest_dir: PathBuf, lock: PathBuf },
}

impl Diagnostic for Error {
    /// What the user can do next, printed by the CLI as `hint: ...`.
    fn hint(&self) -> Option<&'static str> {
        match self {
            Error::Catalog(error) => error.hint(),
            Error::Plan(error) => error.hint(),
            Error::Elf(error) => elf_hint(error),
            Error::Launcher(error) => error.hint(),
            Error::Write(error) => write_hint(error),
            Error::Tag(error) => error.hint(),
            Error::Variants(error) => error.hint(),
            Error::Destination(error) => error.hint(),
            Error::Overlap(error) => error.hint(),
            Error::Locked { .. } => Some("wait for that run to finish, or pass another --dest-dir"),
            Error::MalformedPe { .. } => Some(
                "the file is truncated or corrupt: rebuild the artifact or remove the file from it, \
                 and report the build if a fresh one has it too",
            ),
        }
    }

    /// The file or directory the error is about, if it names one (CI annotations point at it).
    fn path(&self) -> Option<&Path> {
        match self {
            Error::Catalog(error) => error.path(),
            Error::Plan(error) => error.path(),
            Error::Elf(error) => error.path(),
            Error::Launcher(error) => error.path(),
            Error::Write(error) => error.path(),
            Error::Tag(error) => error.path(),
            Error::Variants(error) => error.path(),
            Error::Destination(error) => error.path(),
            Error::Overlap(error) => error.path(),
            Error::Locked { lock, .. } => Some(lock),
            Error::MalformedPe { path, .. } => Some(path),
        }
    }
}

/// The ELF editor's hint, in a packaging run's words: the file came from an artifact, and a
/// file the editor may not touch is one the packager copies unchanged (SPEC §6).
fn elf_hint(error: &ElfError) -> Option<&'static str> {
    match error {
        ElfError::Malformed { .. } => Some(
            "the file is truncated or corrupt: rebuild the artifact or remove the file from it, \
             and report the build if a fresh one has it too",
        ),
        ElfError::Unsupported { refusal: Refusal::ForeignMachine | Refusal::NoSearchPath, .. } => Some(
            "only executables and shared libraries get a search path; the packager copies other ELF files \
             (GPU code objects, object files, static programs) unchanged",
        ),
        _ => error.hint(),
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

    fn write_error(errno: i32) -> Error {
        let source = std::io::Error::from_raw_os_error(errno);
        Error::Write(WriteError::io(crate::write::WriteAction::Write, "dist/x.whl", source))
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

    /// The CLI has no flag to leave a file out, so the hint must not suggest one.
    #[test]
    fn malformed_hint_names_something_the_user_can_do() {
        let error = Error::Elf(ElfError::Malformed { path: PathBuf::from("lib/libx.so"), reason: "truncated".into() });
        let hint = error.hint().unwrap_or_default();
        assert!(hint.contains("rebuild the artifact") && hint.contains("remove the file"), "{hint}");
        assert!(hint.contains("report the build"), "{hint}");
        assert!(!hint.contains("glob") && !hint.contains("exclude"), "{hint}");
    }
}
