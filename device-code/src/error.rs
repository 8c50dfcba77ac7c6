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
            DeviceCodeError::KpackIo { .. } => Some("check the space left in the temporary directory and the output's file system"),
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            DeviceCodeError::Io { path, .. }
            | DeviceCodeError::Elf { path, .. }
            | DeviceCodeError::Bundle { path, .. }
            | DeviceCodeError::Kpack { path, .. }
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
            DeviceCodeError::InvalidTarget { .. }
            | DeviceCodeError::KpackWrite { .. }
            | DeviceCodeError::KpackIo { .. } => None,
        }
    }
}
