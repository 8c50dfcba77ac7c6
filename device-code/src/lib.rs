//! GPU device code inside host ELF files, as clang's HIP toolchain lays it out and as AMD's
//! kpack runtime finds it again after a split (docs/CONTRACT.md, "Splitting device code").
//!
//! Owns: reading the offload bundles of a `.hip_fatbin` section (plain and compressed),
//! writing and reading `.kpack` archives (format version 1), and rewriting a host binary so
//! that its fat-binary wrappers point at a `.rocm_kpack_ref` marker instead of embedded
//! code objects. Must not know: wheels, package names, the product's GPU families, or any
//! command-line flag: callers decide which archive a code object goes to and what the
//! marker's search paths say.
//!
//! Modules: `elf_headers` (the bounded header tables both halves read), `target` (offload
//! target ids and the runtime's feature-subset order), `bundle` (offload bundles and the
//! code objects in them), `msgpack` (the bounded MessagePack subset the formats use),
//! `kpack` (the archive format), `host` (the host binary's transform).

pub mod bundle;
pub mod elf_headers;
mod error;
pub mod host;
pub mod kpack;
pub mod msgpack;
pub mod target;

pub use bundle::{fatbin_section, Bundle, CodeObject, FatBinary, Fatbin, FatbinSection};
pub use error::DeviceCodeError;
pub use kpack::{ArchiveSpec, ArchiveSummary, ArchiveWriter, Compression, KpackArchive};
pub use target::{EntryId, Feature, TargetId};
