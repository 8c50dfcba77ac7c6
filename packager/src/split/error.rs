//! Why a split refuses a wheel (SPEC §12), each with what the user can do next.
//!
//! Owns: [`SplitError`]. Does not own: finding the problems (the stage's other modules,
//! the device-code crate).

use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

use crate::repair::RepairError;
use archive_write::WriteError;
use device_code::DeviceCodeError;

#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    /// Reading the input wheel failed (shared with `repair`'s reader of wheels).
    #[error(transparent)]
    Read(#[from] Box<RepairError>),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Destination(#[from] Box<crate::output::OutputError>),
    #[error("{}: {member}: {source}", path.display())]
    DeviceCode {
        path: PathBuf,
        member: String,
        #[source]
        source: DeviceCodeError,
    },
    #[error("{}: a Windows wheel: its device code (the `.hip_fat` section of PE files) is not split", path.display())]
    Windows { path: PathBuf },
    #[error("{}: already split: {why}", path.display())]
    AlreadySplit { path: PathBuf, why: String },
    #[error("{}: {reason}", path.display())]
    Refused { path: PathBuf, reason: String },
    #[error("{} and {} would both be written as {file_name}", first.display(), second.display())]
    SameOutput { first: PathBuf, second: PathBuf, file_name: String },
    #[error("{}: the host wheel keeps its file name, so it would replace its input", path.display())]
    ReplacesInput { path: PathBuf },
    /// `package --split-device`: the build cannot be split as asked.
    #[error(transparent)]
    Plan(Box<crate::plan::PlanError>),
}

impl Diagnostic for SplitError {
    fn hint(&self) -> Option<&'static str> {
        match self {
            SplitError::Read(error) => error.hint(),
            SplitError::Write(error) => error.hint(),
            SplitError::Destination(error) => error.hint(),
            SplitError::DeviceCode { source, .. } => source.hint(),
            SplitError::Windows { .. } => Some("split the Linux wheel of the same build; Windows wheels stay fat"),
            SplitError::AlreadySplit { .. } => {
                Some("split the fat wheel the build made; a split host wheel installs with its device wheels as it is")
            }
            SplitError::Refused { .. } => None,
            SplitError::SameOutput { .. } => Some("split wheels of different distributions or versions in one run"),
            SplitError::ReplacesInput { .. } => {
                Some("pass --dest-dir with a directory whose dist/ is not where the input wheel is")
            }
            SplitError::Plan(error) => error.hint(),
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            SplitError::Read(error) => error.path(),
            SplitError::Write(error) => error.path(),
            SplitError::Destination(error) => error.path(),
            SplitError::DeviceCode { path, .. }
            | SplitError::Windows { path }
            | SplitError::AlreadySplit { path, .. }
            | SplitError::Refused { path, .. }
            | SplitError::ReplacesInput { path } => Some(path),
            SplitError::SameOutput { second, .. } => Some(second),
            SplitError::Plan(error) => error.path(),
        }
    }
}
