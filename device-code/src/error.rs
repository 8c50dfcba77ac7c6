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
    /// An offload target id (`gfx942:xnack+`) that does not parse; not about a file, so a
    /// caller reading one from a file wraps it into that file's error.
    #[error("offload target id {text:?}: {reason}")]
    InvalidTarget { text: String, reason: &'static str },
    /// An offload bundle of `.hip_fatbin` that is malformed; `offset` is where the bundle
    /// starts inside the section.
    #[error("{}: offload bundle at offset {offset} of .hip_fatbin: {reason}", path.display())]
    Bundle { path: PathBuf, offset: u64, reason: String },
    /// A `.kpack` archive that does not follow format version 1.
    #[error("{}: kpack archive: {reason}", path.display())]
    Kpack { path: PathBuf, reason: String },
    /// A `.kpack` archive the caller asked to write that the format or its readers cannot
    /// carry (a target not in `gfx_arches`, a key written twice, a size that does not match).
    /// The writer does not know where its output goes; the caller names it.
    #[error("cannot write this kpack archive: {reason}")]
    KpackWrite { reason: String },
    /// Writing a `.kpack` archive failed: its spool (an unlinked temporary file) or the
    /// caller's output.
    #[error("writing a kpack archive: {source}")]
    KpackIo {
        #[source]
        source: std::io::Error,
    },
}

impl Diagnostic for DeviceCodeError {
    fn hint(&self) -> Option<&'static str> {
        match self {
            DeviceCodeError::Io { .. } => None,
            DeviceCodeError::Elf { .. } => {
                Some("only 64-bit little-endian ELF files are read; check that the file is complete and was built for x86-64")
            }
            DeviceCodeError::InvalidTarget { .. } => {
                Some("a target id is a processor (gfx942, gfx11-generic) followed by features such as :xnack+ or :sramecc-")
            }
            DeviceCodeError::Bundle { .. } => Some(
                "the file's device code is damaged or was written by a tool this reader does not know; check it with clang-offload-bundler --list",
            ),
            DeviceCodeError::Kpack { .. } => {
                Some("the archive is damaged or not in kpack format version 1; write it again from the fat binary")
            }
            DeviceCodeError::KpackWrite { .. } => None,
            DeviceCodeError::KpackIo { .. } => Some("check the space left in the temporary directory and the output's file system"),
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            DeviceCodeError::Io { path, .. }
            | DeviceCodeError::Elf { path, .. }
            | DeviceCodeError::Bundle { path, .. }
            | DeviceCodeError::Kpack { path, .. } => Some(path),
            DeviceCodeError::InvalidTarget { .. }
            | DeviceCodeError::KpackWrite { .. }
            | DeviceCodeError::KpackIo { .. } => None,
        }
    }
}
