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
    // The host binary's transform (`host`).
    #[error("{}: has no HIP fat binary (no `.hipFatBinSegment` wrappers) to split", path.display())]
    NotFat { path: PathBuf },
    #[error("{}: is already split (every fat-binary wrapper is `HIPK`)", path.display())]
    AlreadySplit { path: PathBuf },
    #[error("{}: {split} of its {total} fat-binary wrappers are `HIPK` and the others `HIPF`: a partial split", path.display())]
    PartlySplit { path: PathBuf, split: usize, total: usize },
    #[error("{}: `.hipFatBinSegment` is {size} bytes, not a whole number of 24-byte wrappers", path.display())]
    WrapperSegment { path: PathBuf, size: u64 },
    #[error("{}: fat-binary wrapper {index} has magic {magic:02x?}, neither `HIPF` nor `HIPK`", path.display())]
    WrapperMagic { path: PathBuf, index: u32, magic: [u8; 4] },
    #[error("{}: fat-binary wrapper {index} points at {pointer:#x}, outside `.hip_fatbin` ({start:#x}..{end:#x})", path.display())]
    WrapperPointer { path: PathBuf, index: u32, pointer: u64, start: u64, end: u64 },
    #[error("{}: fat-binary wrapper {index} has version {version}; the kpack runtime reads version 1 only", path.display())]
    WrapperVersion { path: PathBuf, index: u32, version: u32 },
    #[error("{}: {reason}", path.display())]
    Relocation { path: PathBuf, reason: String },
    #[error("{}: cannot rewrite this layout: {reason}", path.display())]
    HostLayout { path: PathBuf, reason: String },
    #[error("{}: changed since it was read ({planned} bytes planned, {found} found)", path.display())]
    InputChanged { path: PathBuf, planned: u64, found: u64 },
}

impl Diagnostic for DeviceCodeError {
    fn hint(&self) -> Option<&'static str> {
        match self {
            DeviceCodeError::Io { .. } => None,
            DeviceCodeError::Elf { .. } => {
                Some("only 64-bit little-endian ELF files are read; check that the file is complete and was built for x86-64")
            }
            DeviceCodeError::NotFat { .. } => Some("pass the file through unchanged: it carries no device code"),
            DeviceCodeError::AlreadySplit { .. } => {
                Some("its code objects are already in `.kpack` archives; keep it as it is")
            }
            DeviceCodeError::PartlySplit { .. } => {
                Some("start again from the fat binary as the compiler wrote it")
            }
            DeviceCodeError::WrapperSegment { .. }
            | DeviceCodeError::WrapperMagic { .. }
            | DeviceCodeError::WrapperPointer { .. }
            | DeviceCodeError::WrapperVersion { .. } => {
                Some("the file is not a HIP fat binary as clang writes it; check that it is complete and unmodified")
            }
            DeviceCodeError::Relocation { .. } => Some(
                "the runtime would still read the embedded code: only binaries whose wrappers are relocated by R_X86_64_RELATIVE (shared objects, PIE) or not at all (fixed-address executables) are split",
            ),
            DeviceCodeError::HostLayout { .. } => Some("ship this binary fat: its device code cannot be moved out safely"),
            DeviceCodeError::InputChanged { .. } => Some("something rewrote the file while it was split; run again"),
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            DeviceCodeError::Io { path, .. }
            | DeviceCodeError::Elf { path, .. }
            | DeviceCodeError::NotFat { path }
            | DeviceCodeError::AlreadySplit { path }
            | DeviceCodeError::PartlySplit { path, .. }
            | DeviceCodeError::WrapperSegment { path, .. }
            | DeviceCodeError::WrapperMagic { path, .. }
            | DeviceCodeError::WrapperPointer { path, .. }
            | DeviceCodeError::WrapperVersion { path, .. }
            | DeviceCodeError::Relocation { path, .. }
            | DeviceCodeError::HostLayout { path, .. }
            | DeviceCodeError::InputChanged { path, .. } => Some(path),
        }
    }
}
