//! Device code split from host binaries (SPEC §12, KPACK.md), read by the gate's own
//! readers: `.kpack` archives in wheels and the `HIPK` wrappers of host binaries pointing
//! at markers.
//!
//! Owns: the gate's own readers of those formats and the rules on them. Children:
//! `msgpack` (the bounded MessagePack reader), `source` (a member's bytes at any offset),
//! `archive_file` (one archive), `amdgpu` (code objects' targets), `host` (a host
//! binary's wrappers and markers). Does not own: reading wheels (`archive`), the rules
//! across a set (`device_split`). Shares no code with the writer it judges (`device-code`).

mod amdgpu;
mod archive_file;
mod host;
mod msgpack;
mod source;

pub(crate) use amdgpu::{feature_subsets, generic_of, is_generic, is_known, split_target};
pub(crate) use archive_file::{read_kpack, KpackArchive};
pub(crate) use host::{read_fat_binary, FatBinary, Marker, Wrapper};
pub(crate) use source::ZipMember;
