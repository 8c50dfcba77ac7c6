//! The crate's one error type: every variant that concerns a file names it, and says what
//! was wrong with it in the format's own terms.

use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

/// What went wrong reading or writing device code.
#[derive(Debug, thiserror::Error)]
pub enum DeviceCodeError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not an ELF file we can read: {reason}", path.display())]
    Elf { path: PathBuf, reason: String },
}

impl Diagnostic for DeviceCodeError {
    fn hint(&self) -> Option<&'static str> {
        match self {
            DeviceCodeError::Io { .. } => None,
            DeviceCodeError::Elf { .. } => {
                Some("only 64-bit little-endian ELF files are read; check that the file is complete and was built for x86-64")
            }
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            DeviceCodeError::Io { path, .. } | DeviceCodeError::Elf { path, .. } => Some(path),
        }
    }
}
