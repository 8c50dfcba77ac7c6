//! Symbols defined in `.hip_fatbin` (clang's `-fgpu-rdc` exports `__hip_fatbin` at its
//! start). The split section names fewer addresses than before, so each such symbol is
//! brought inside what it still names; nothing reads these addresses at run time any more
//! (the wrappers point at the marker), but a symbol outside its section is a malformed file.
//!
//! Owns: finding those symbols in `.symtab` and `.dynsym` (in bounded chunks) and their new
//! values. Must not know: the layout that decides the section's new range.

use std::fs::File;
use std::path::Path;

use crate::elf_headers::{for_each_entry, u64_at, ElfHeaders};
use crate::DeviceCodeError;

const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
/// Size of one `Elf64_Sym`.
const SYMBOL_SIZE: u64 = 24;

/// One symbol defined in `.hip_fatbin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FatbinSymbol {
    /// Section index of its symbol table, and its index in that table (what a relocation
    /// names it by).
    pub table: usize,
    pub index: u64,
    /// File offset of its `Elf64_Sym`.
    pub file_offset: u64,
    pub value: u64,
    pub size: u64,
}

impl FatbinSymbol {
    /// Its value and size brought inside `[start, end)` (a size-0 symbol may sit at `end`),
    /// as the 16 bytes at offset 8 of the entry; `None` when already inside.
    pub fn clamped(&self, start: u64, end: u64) -> Option<(u64, [u8; 16])> {
        let value = self.value.clamp(start, end);
        let size = self.size.min(end - value);
        if (value, size) == (self.value, self.size) {
            return None;
        }
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&value.to_le_bytes());
        bytes[8..].copy_from_slice(&size.to_le_bytes());
        Some((self.file_offset + 8, bytes))
    }
}

/// Every symbol of the file's symbol tables whose section index is `section`.
pub(crate) fn read(
    file: &File,
    path: &Path,
    headers: &ElfHeaders,
    section: usize,
) -> Result<Vec<FatbinSymbol>, DeviceCodeError> {
    let mut found = Vec::new();
    let Ok(section) = u16::try_from(section) else {
        return Ok(found);
    };
    let tables = headers.sections.iter().enumerate().filter(|(_, table)| matches!(table.kind, SHT_SYMTAB | SHT_DYNSYM));
    for (table_index, table) in tables {
        for_each_entry(file, path, headers, table, SYMBOL_SIZE, |index, file_offset, entry| {
            if u16::from_le_bytes([entry[6], entry[7]]) == section {
                found.push(FatbinSymbol {
                    table: table_index,
                    index,
                    file_offset,
                    value: u64_at(entry, 8),
                    size: u64_at(entry, 16),
                });
            }
            Ok(())
        })?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: u64, size: u64, expect: Option<(u64, u64)>) {
        let symbol = FatbinSymbol { table: 2, index: 1, file_offset: 100, value, size };
        let clamped = symbol.clamped(0x2000, 0x5000).map(|(at, bytes)| {
            assert_eq!(at, 108);
            (u64_at(&bytes, 0), u64_at(&bytes, 8))
        });
        assert_eq!(clamped, expect, "{value:#x}+{size}");
    }

    #[test]
    fn symbols_come_inside_the_remaining_range() {
        check(0x1000, 0, Some((0x2000, 0)));
        check(0x3000, 16, None);
        check(0x5000, 0, None);
        check(0x4ff0, 0x100, Some((0x4ff0, 0x10)));
        check(0x6000, 8, Some((0x5000, 0)));
        check(0x1000, 0x10000, Some((0x2000, 0x3000)));
    }
}
