//! Which operating system a build is for, told from its binaries (SPEC §7): TheRock builds
//! ROCm for Linux (ELF) and for Windows (PE: DLLs and executables in `bin/`), into the same
//! artifacts layout. One Linux job can package both, so the host says nothing about it.
//!
//! Owns: classifying a file by its first bytes, and the scan of an artifacts directory's
//! `bin/` and `lib/` directories. Does not own: the [`BuildOs`] value (`platform`, which
//! every stage reads), what differs between the two (`plan`, `output`).

use std::io::Read;
use std::path::{Path, PathBuf};

use archive_write::{open_regular, Links};
use elf_rpath::consts::ELF_MAGIC;

use crate::input::catalog::Catalog;
use crate::platform::{BuildOs, EM_AMDGPU};

/// What the first bytes of a file say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryKind {
    /// An ELF file built for a CPU (GPU code objects are `NotABinary`: every build has them).
    Elf,
    /// A PE image: `MZ`, and `PE\0\0` where the DOS header's `e_lfanew` points.
    Pe,
    NotABinary,
}

/// Enough for the DOS header and the usual `e_lfanew` (0x80..0x110).
const HEAD_BYTES: usize = 1024;

/// Classifies a file from its first bytes.
pub fn binary_kind(head: &[u8]) -> BinaryKind {
    // AMDGPU code objects are ELF in both platforms' builds: they tell nothing.
    if head.len() >= 20 && head.starts_with(ELF_MAGIC) {
        let machine = match head[5] {
            2 => u16::from_be_bytes([head[18], head[19]]),
            _ => u16::from_le_bytes([head[18], head[19]]),
        };
        return if machine == EM_AMDGPU { BinaryKind::NotABinary } else { BinaryKind::Elf };
    }
    if head.len() >= 0x40 && head.starts_with(b"MZ") {
        let lfanew = u32::from_le_bytes([head[0x3c], head[0x3d], head[0x3e], head[0x3f]]) as usize;
        if head.get(lfanew..lfanew + 4) == Some(b"PE\0\0") {
            return BinaryKind::Pe;
        }
    }
    BinaryKind::NotABinary
}

/// A build with binaries of both systems: one file of each.
#[derive(Debug)]
pub struct MixedBinaries {
    pub elf: PathBuf,
    pub pe: PathBuf,
}

/// The build's operating system and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetectedOs {
    pub os: BuildOs,
    /// For a build told Windows by its files: the first PE file found (no ELF file was).
    pub pe_file: Option<PathBuf>,
}

/// The build's operating system: `given` if set, else told from the ELF and PE files in
/// the `bin/` and `lib/` directories of every artifact. A build with both is an error
/// naming one file of each; one with neither is Linux, as every build before SPEC §7 was.
pub fn detect(catalog: &Catalog, given: Option<BuildOs>) -> Result<DetectedOs, MixedBinaries> {
    if let Some(os) = given {
        return Ok(DetectedOs { os, pe_file: None });
    }
    let (mut elf, mut pe): (Option<PathBuf>, Option<PathBuf>) = (None, None);
    for artifact in &catalog.artifacts {
        for basedir in &artifact.basedirs {
            for dir in ["bin", "lib"] {
                scan_dir(&basedir.join(dir), &mut elf, &mut pe);
            }
        }
    }
    match (elf, pe) {
        (Some(elf), Some(pe)) => Err(MixedBinaries { elf, pe }),
        (None, Some(pe)) => Ok(DetectedOs { os: BuildOs::Windows, pe_file: Some(pe) }),
        _ => Ok(DetectedOs { os: BuildOs::Linux, pe_file: None }),
    }
}

/// Records the first ELF and the first PE file of `dir` (sorted, not recursive), unless
/// both are known already. Unreadable entries are the catalog's business, not this scan's.
fn scan_dir(dir: &Path, elf: &mut Option<PathBuf>, pe: &mut Option<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths {
        if elf.is_some() && pe.is_some() {
            return;
        }
        // Regular files only: never follow a link out of the tree, never open a FIFO.
        let is_file = std::fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.is_file());
        if !is_file {
            continue;
        }
        let mut head = Vec::with_capacity(HEAD_BYTES);
        let read =
            open_regular(&path, Links::Refuse).and_then(|file| file.take(HEAD_BYTES as u64).read_to_end(&mut head));
        if read.is_err() {
            continue;
        }
        match binary_kind(&head) {
            BinaryKind::Elf if elf.is_none() => *elf = Some(path),
            BinaryKind::Pe if pe.is_none() => *pe = Some(path),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pe_head() -> Vec<u8> {
        let mut head = vec![0u8; 0x100];
        head[..2].copy_from_slice(b"MZ");
        head[0x3c] = 0x80;
        head[0x80..0x84].copy_from_slice(b"PE\0\0");
        head
    }

    #[test]
    fn files_are_told_by_their_first_bytes() {
        assert_eq!(binary_kind(&pe_head()), BinaryKind::Pe);
        let mut dos_only = pe_head();
        dos_only[0x80] = b'X';
        assert_eq!(binary_kind(&dos_only), BinaryKind::NotABinary);
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[5] = 1;
        elf[18] = 62;
        assert_eq!(binary_kind(&elf), BinaryKind::Elf);
        elf[18..20].copy_from_slice(&EM_AMDGPU.to_le_bytes());
        assert_eq!(binary_kind(&elf), BinaryKind::NotABinary);
        assert_eq!(binary_kind(b"#!/bin/sh\n"), BinaryKind::NotABinary);
    }
}
