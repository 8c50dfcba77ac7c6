//! The dynamic relocations that matter to the transform: the `R_X86_64_RELATIVE` entry of each
//! wrapper's pointer (rewritten to aim at the marker), and any other relocation resolving into
//! `.hip_fatbin` (which would leave the runtime reading pages that are no longer there).
//!
//! Owns: walking the mapped `SHT_RELA` sections (`.rela.dyn`, `.rela.plt`) in bounded chunks
//! (packed `SHT_RELR` ones are `relr`'s).
//! Must not know: the new layout or what the marker says.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;

use crate::elf_headers::{for_each_entry, u64_at, ElfHeaders, SectionHeader, SHF_ALLOC, SHT_RELA};
use crate::host::relr;
use crate::host::symbols::FatbinSymbol;
use crate::DeviceCodeError;

/// `r_type` of a base-relative relocation: the word becomes load base + addend.
pub(crate) const R_X86_64_RELATIVE: u32 = 8;
/// `r_type` of a relocation that does nothing.
const R_X86_64_NONE: u32 = 0;
/// Size of one `Elf64_Rela`.
pub(crate) const RELA_SIZE: u64 = 24;

/// What the relocation tables say about the wrappers and `.hip_fatbin`.
#[derive(Debug, Default)]
pub(crate) struct Relocations {
    /// Per wrapper: file offset and addend of the `R_X86_64_RELATIVE` entry of its pointer.
    pub wrapper_pointers: Vec<Option<(u64, i64)>>,
    /// Targets of other relocations whose result lies in `.hip_fatbin`.
    pub into_fatbin: Vec<u64>,
    /// Per wrapper: whether a packed relative relocation (`relr`) relocates its pointer.
    pub packed_pointers: Vec<bool>,
}

/// Walks every mapped `SHT_RELA` section. `segment` is `.hipFatBinSegment` (address, wrapper
/// count), `fatbin` the address range of `.hip_fatbin`, `symbols` the symbols defined in it
/// (a relocation naming one resolves into it too). A relocation on a wrapper other than
/// `R_X86_64_RELATIVE` on its pointer is refused: it is not something clang writes, and the
/// transform would not know what the runtime then reads.
pub(crate) fn read(
    file: &File,
    path: &Path,
    headers: &ElfHeaders,
    segment: (u64, usize),
    fatbin: (u64, u64),
    symbols: &[FatbinSymbol],
) -> Result<Relocations, DeviceCodeError> {
    let (segment_address, count) = segment;
    let segment_end = segment_address.saturating_add(count as u64 * 24);
    let mut found = Relocations {
        wrapper_pointers: vec![None; count],
        packed_pointers: vec![false; count],
        into_fatbin: Vec::new(),
    };
    let tables = headers.sections.iter().filter(|section| section.kind == SHT_RELA && section.flags & SHF_ALLOC != 0);
    for table in tables {
        let named: BTreeSet<u64> = symbols
            .iter()
            .filter(|symbol| symbol.table as u64 == u64::from(table.link))
            .map(|symbol| symbol.index)
            .collect();
        check_table(path, table)?;
        for_each_entry(file, path, headers, table, RELA_SIZE, |_, entry_offset, entry| {
            let target = u64_at(entry, 0);
            let info = u64_at(entry, 8);
            let addend = u64_at(entry, 16) as i64;
            let kind = (info & 0xffff_ffff) as u32;
            if (segment_address..segment_end).contains(&target) {
                let index = ((target - segment_address) / 24) as usize;
                let field = (target - segment_address) % 24;
                if field != 8 || kind != R_X86_64_RELATIVE || info >> 32 != 0 {
                    return Err(relocation_error(
                        path,
                        format!(
                            "fat-binary wrapper {index} carries a relocation of type {kind} at {target:#x} (`{}` entry at file offset {entry_offset:#x}); only R_X86_64_RELATIVE on its pointer is rewritten",
                            String::from_utf8_lossy(&table.name)
                        ),
                    ));
                }
                if found.wrapper_pointers[index].replace((entry_offset, addend)).is_some() {
                    return Err(relocation_error(
                        path,
                        format!("fat-binary wrapper {index}'s pointer at {target:#x} is relocated twice"),
                    ));
                }
            } else if (kind == R_X86_64_RELATIVE && (fatbin.0..fatbin.1).contains(&(addend as u64)))
                || (kind != R_X86_64_NONE && named.contains(&(info >> 32)))
            {
                found.into_fatbin.push(target);
            }
            Ok(())
        })?;
    }
    relr::read(file, path, headers, segment, fatbin, &mut found)?;
    Ok(found)
}

fn check_table(path: &Path, table: &SectionHeader) -> Result<(), DeviceCodeError> {
    if table.size % RELA_SIZE != 0 || (table.entsize != 0 && table.entsize != RELA_SIZE) {
        return Err(relocation_error(
            path,
            format!(
                "relocation section `{}` is {} bytes with entries of {}, not whole 24-byte Elf64_Rela entries",
                String::from_utf8_lossy(&table.name),
                table.size,
                table.entsize
            ),
        ));
    }
    Ok(())
}

pub(crate) fn relocation_error(path: &Path, reason: String) -> DeviceCodeError {
    DeviceCodeError::Relocation { path: path.to_path_buf(), reason }
}
