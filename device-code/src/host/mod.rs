//! The host binary's transform: a fat HIP ELF file (x86-64 shared object, PIE or
//! fixed-address executable) rewritten so that a kpack-enabled HIP runtime finds its code
//! objects in external `.kpack` archives instead of its `.hip_fatbin` section, as AMD's
//! rocm-kpack transform leaves it.
//!
//! What the runtime sees afterwards, as with rocm-kpack's transform: every 24-byte wrapper of
//! `.hipFatBinSegment` has magic `HIPK`, version 1, its 0-based index in the low 32 bits of
//! its reserved field, and a pointer (at run time, through its relative relocation, RELA or
//! packed, or in place for a fixed-address executable) to a MessagePack marker
//! `{kpack_search_paths, kernel_name}` in a new read-only, mapped `.rocm_kpack_ref` section.
//! The whole pages of `.hip_fatbin` leave the file; where they were mapped stays mapped, as
//! zero-fill memory (the layout is described in `layout`).
//!
//! Owns: reading the wrappers, their relocations and the symbols defined in `.hip_fatbin`
//! (`inspect`, `relocations`, `relr`, `symbols`), planning the new layout (`layout`), the
//! marker's shape (`marker`) and streaming the result (`output`).
//! Must not know: which archives hold the code objects, what the search paths say (the
//! caller gives them), or the bundles inside `.hip_fatbin` (never read here: a section can
//! be more than a gigabyte, and the transform reads only headers, wrappers and relocations).

mod inspect;
mod layout;
mod marker;
mod output;
mod relocations;
mod relr;
mod symbols;

use std::path::{Path, PathBuf};

use crate::elf_headers::{ElfHeaders, SectionHeader};

pub use inspect::inspect;
pub use output::HostReader;

/// Whether a host binary carries device code of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FatState {
    /// No `.hipFatBinSegment` wrappers: nothing to split.
    NotFat,
    /// Wrappers `HIPF`, registering bundles inside `.hip_fatbin`.
    Fat,
    /// Every wrapper `HIPK`: the code objects are already in archives.
    AlreadySplit,
}

/// The `HIPF` magic of a wrapper registering an embedded bundle, as its bytes in the file.
pub const MAGIC_FAT: [u8; 4] = *b"FPIH";
/// The `HIPK` magic of a wrapper pointing at a kpack marker, as its bytes in the file.
pub const MAGIC_KPACK: [u8; 4] = *b"HIPK";

/// One 24-byte `__CudaFatBinaryWrapper` of `.hipFatBinSegment`, as the runtime will read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wrapper {
    /// Its 0-based position in the segment (the kpack runtime's code-object index).
    pub index: u32,
    /// The magic's four bytes as stored (`FPIH` for `HIPF`, `HIPK`).
    pub magic: [u8; 4],
    pub version: u32,
    /// The pointer's value at run time, as an address in the file's own address space (the
    /// relocation's addend for a shared object or PIE, the stored value otherwise).
    pub pointer: u64,
    /// The reserved (`dummy1`) field; a split binary keeps the index in its low 32 bits.
    pub reserved: u64,
    /// The pointer minus `.hip_fatbin`'s address: the offset in the section of the bundle this
    /// wrapper registers; `None` when it points elsewhere (always so once split).
    pub fatbin_offset: Option<u64>,
}

/// Where one wrapper is, and what relocates its pointer.
#[derive(Clone, Debug)]
pub(crate) struct WrapperSite {
    /// File offset of the wrapper's 24 bytes.
    pub file_offset: u64,
    /// Address of its pointer field.
    pub pointer_address: u64,
    /// File offset of the `R_X86_64_RELATIVE` entry relocating the pointer, if any.
    pub relocation: Option<u64>,
    /// Whether a packed relative relocation relocates the pointer (its stored word is the
    /// addend, so rewriting the word is all it needs).
    pub packed: bool,
}

/// What the caller wants the marker to say: where the runtime looks for archives (relative
/// to the binary's directory, `@GFXARCH@` for the target) and the binary's key in them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KpackRef {
    pub search_paths: Vec<String>,
    pub kernel_name: String,
}

/// A host ELF file as read by [`inspect`]: its headers, wrappers and relocations.
#[derive(Clone, Debug)]
pub struct HostBinary {
    path: PathBuf,
    headers: ElfHeaders,
    state: FatState,
    /// Index of `.hip_fatbin` in the section table, when present.
    fatbin: Option<usize>,
    wrappers: Vec<Wrapper>,
    sites: Vec<WrapperSite>,
    /// Relocations other than the wrappers' that resolve into `.hip_fatbin` (their targets).
    stray_relocations: Vec<u64>,
    /// Symbols defined in `.hip_fatbin`.
    fatbin_symbols: Vec<symbols::FatbinSymbol>,
    /// The bytes of `.shstrtab`, to which the marker's section name is appended.
    section_names: Vec<u8>,
}

impl HostBinary {
    /// The file as named when inspected.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn state(&self) -> FatState {
        self.state
    }

    /// The wrappers in segment order (empty when not fat).
    pub fn wrappers(&self) -> &[Wrapper] {
        &self.wrappers
    }

    /// The `.hip_fatbin` section, when the file has one.
    pub fn fatbin(&self) -> Option<&SectionHeader> {
        self.fatbin.map(|index| &self.headers.sections[index])
    }

    /// The header tables as read.
    pub fn headers(&self) -> &ElfHeaders {
        &self.headers
    }
}

/// The planned rewrite of one host binary: pieces of the input and new bytes, in output
/// order, written by [`HostTransform::write_to`] or read through [`HostTransform::reader`]
/// without ever holding more than a buffer of the input.
#[derive(Clone)]
pub struct HostTransform {
    path: PathBuf,
    input_len: u64,
    pieces: Vec<output::Piece>,
    output_len: u64,
    removed: u64,
    marker_address: u64,
}

/// A summary: the pieces' bytes would flood a test failure or a log.
impl std::fmt::Debug for HostTransform {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("HostTransform")
            .field("path", &self.path)
            .field("input_len", &self.input_len)
            .field("output_len", &self.output_len)
            .field("removed", &self.removed)
            .field("marker_address", &format_args!("{:#x}", self.marker_address))
            .field("pieces", &self.pieces.len())
            .finish()
    }
}

impl HostTransform {
    /// Plans the transform of `binary` with the marker `reference`; refuses a binary that is
    /// not fat, already split, or laid out so that the result could not load as before.
    pub fn plan(binary: &HostBinary, reference: &KpackRef) -> Result<HostTransform, crate::DeviceCodeError> {
        layout::plan(binary, reference)
    }

    /// Bytes of the rewritten file.
    pub fn output_len(&self) -> u64 {
        self.output_len
    }

    /// Bytes of `.hip_fatbin` taken out of the file (whole pages).
    pub fn removed_len(&self) -> u64 {
        self.removed
    }

    /// The run-time address (before load bias) every wrapper now points at.
    pub fn marker_address(&self) -> u64 {
        self.marker_address
    }
}
