//! What a release gate and a platform-tag choice read from ELF files, and nothing else:
//! headers, program headers, the dynamic section and the symbol versions a file needs,
//! read from a bounded window of each file; the glibc arithmetic on those versions; and
//! auditwheel's manylinux policies (PEP 599/600) as data; the [`Architecture`] of a platform
//! tag or an ELF file, the one table of machines; the layout a Windows loader
//! requires of a PE file (`pe_layout`), which the packager and the gate both check; and
//! the dynamic symbols a file defines and imports, with ld.so's rule for whether its
//! imports bind (`symbols`); whether a HIP runtime carries rocm-kpack's loader
//! (`kpack_loader`).
//!
//! Owns: reading, never writing. Must not know: how files are edited (`elf-rpath`, whose
//! output this crate reads, so the two share no code, not even the ELF numbers: those are
//! goblin's), packages, or what a finding means to a release.

mod architecture;
mod elf_window;
mod glibc;
mod kpack_loader;
mod parse;
mod pe_layout;
mod policy;
mod symbols;

pub use architecture::Architecture;
pub use elf_window::{ElfWindow, WINDOW_BYTES};
pub use glibc::{is_system_library, tag_glibc_minor, VersionNeeds, SYSTEM_LIBRARIES};
pub use kpack_loader::{is_hip_runtime, kpack_loader, KpackLoader, HIP_RUNTIME, KPACK_LIBRARY, KPACK_LOADER_SYMBOLS};
pub use parse::{
    arch_name, elf_identity, parse_elf, ElfFile, ElfIdentity, Segment, ELF_MAGIC, ET_DYN, ET_EXEC, PF_W, PT_DYNAMIC,
    PT_INTERP, PT_LOAD, PT_NOTE, PT_PHDR,
};
pub use pe_layout::{check_pe_layout, PeBytes};
pub use policy::{policies, Policy, PROGRAM_INTERPRETERS};
pub use symbols::{
    is_versioned_system_library, read_dynamic_symbols, unresolved_imports, DynamicSymbols, Exports, Import,
    NeededVersion, Provider, Unresolved,
};
