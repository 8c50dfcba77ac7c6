//! `.kpack` archives, rocm-kpack's format version 1 (KPACK.md §1): a 16-byte header
//! (`KPAK`, u32 version 1, u64 offset of the table of contents, little-endian), zero bytes
//! up to offset 64, the code objects (`zstd-per-kernel`: a u32 count, then per code object
//! a u32 length and one zstd frame that records its content size; `none`: the code objects
//! back to back), then the table of contents, one MessagePack map running to the end of
//! the file.
//!
//! Owns: the format, written ([`ArchiveWriter`], streaming with bounded memory and
//! byte-reproducible) and read ([`KpackArchive`], under the bounds of rocm-kpack's C++
//! reader). Must not know: which binary or package a key names, or how targets are grouped.

mod read;
mod write;

use std::collections::BTreeMap;

pub use read::{ArchiveCheck, KpackArchive};
pub use write::{ArchiveSpec, ArchiveSummary, ArchiveWriter, Compression};

/// The archive's first four bytes.
pub const MAGIC: &[u8; 4] = b"KPAK";
/// The only format version there is.
pub const FORMAT_VERSION: u32 = 1;
/// Where the code objects start: only the start of the blob is aligned, not each object.
pub const BLOB_START: u64 = 64;
/// The most code objects rocm-kpack's C++ reader accepts in a zstd blob.
pub const MAX_CODE_OBJECTS: u64 = 1 << 20;
/// The largest zstd blob rocm-kpack's C++ reader accepts (it reads it whole at open).
pub const MAX_ZSTD_BLOB: u64 = 4 << 30;
/// python-zstandard's default level, which rocm-kpack's writer uses.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;
/// The scheme names in `compression_scheme`.
pub const SCHEME_NONE: &str = "none";
pub const SCHEME_ZSTD: &str = "zstd-per-kernel";
/// The only code object type there is.
pub const CODE_OBJECT_TYPE: &str = "hsaco";

/// One entry of the table of contents: which code object (`ordinal`, in the order they
/// were added) and its size uncompressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TocEntry {
    pub ordinal: u32,
    pub original_size: u64,
}

/// The table of contents: binary key (`lib/libtorch_hip.so#0`) → target (`gfx942`) → entry.
pub type TocEntries = BTreeMap<String, BTreeMap<String, TocEntry>>;

/// What an archive's table of contents says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toc {
    pub group_name: String,
    pub gfx_arch_family: String,
    pub gfx_arches: Vec<String>,
    pub entries: TocEntries,
    /// `none` or `zstd-per-kernel`.
    pub compression_scheme: String,
}
