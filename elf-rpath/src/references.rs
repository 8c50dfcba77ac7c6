//! Finds every reference into `.dynstr`, so an in-place overwrite of the RPATH string can
//! prove that no other name shares its bytes. Linkers merge string tails (a symbol `lib`
//! may point into the middle of `$ORIGIN/lib`), so the check looks at dynamic entries,
//! `.dynsym` names and symbol-version names (`.gnu.version_r`, `.gnu.version_d`).
//!
//! Owns: that check. Does not own: deciding the edit (`rpath`).

use super::parse::{
    vaddr_to_offset, ElfFile, SectionHeader, DT_HASH, DT_NEEDED, DT_RPATH, DT_RUNPATH, DT_SYMENT, DT_SYMTAB, DT_VERDEF,
    DT_VERDEFNUM, DT_VERNEED, DT_VERNEEDNUM, SHT_DYNSYM, STRING_TAGS,
};
use super::source::Source;
use super::ElfError;

/// Symbols read per positioned read while scanning `.dynsym`.
const SYMBOLS_PER_READ: u64 = 4096;
/// Version records walked at most; real files have a few dozen.
const MAX_VERSION_RECORDS: usize = 1 << 16;

/// Whose string a slot about to be overwritten is: references of its owner do not count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The search path: every DT_RPATH and DT_RUNPATH entry.
    SearchPath,
    /// A needed library's name: the DT_NEEDED entries and `Verneed` file names that start
    /// exactly at the slot (they are renamed with it).
    Needed,
}

/// Whether a `.dynstr` reference other than the slot owner's points into `start..end`.
/// `Ok(None)` when not every reference can be found (no symbol count): the caller must
/// then treat the bytes as shared.
pub(crate) fn other_references_inside(
    source: &dyn Source,
    elf: &ElfFile,
    sections: &[SectionHeader],
    start: u64,
    end: u64,
    owner: Owner,
) -> Result<Option<bool>, ElfError> {
    let inside = |reference: u64| (start..end).contains(&reference);
    let Some(dynamic) = &elf.dynamic else { return Ok(Some(false)) };
    let owned = |tag: u64, value: u64| match owner {
        Owner::SearchPath => tag == DT_RPATH || tag == DT_RUNPATH,
        Owner::Needed => tag == DT_NEEDED && value == start,
    };
    let from_entries = dynamic
        .entries
        .iter()
        .any(|entry| STRING_TAGS.contains(&entry.tag) && !owned(entry.tag, entry.value) && inside(entry.value));
    if from_entries {
        return Ok(Some(true));
    }
    let Some(symbol_names) = symbol_names_inside(source, elf, sections, &inside)? else { return Ok(None) };
    let file_inside = |reference: u64| inside(reference) && !(owner == Owner::Needed && reference == start);
    if symbol_names || version_names_inside(source, elf, &inside, &file_inside)? {
        return Ok(Some(true));
    }
    Ok(Some(false))
}

fn symbol_names_inside(
    source: &dyn Source,
    elf: &ElfFile,
    sections: &[SectionHeader],
    inside: &dyn Fn(u64) -> bool,
) -> Result<Option<bool>, ElfError> {
    let Some(dynamic) = &elf.dynamic else { return Ok(Some(false)) };
    let Some(symtab) = dynamic.value(DT_SYMTAB) else { return Ok(Some(false)) };
    let entry_size = dynamic.value(DT_SYMENT).unwrap_or(24);
    if entry_size != 24 {
        return Err(source.malformed(format!("DT_SYMENT is {entry_size}, expected 24")));
    }
    let from_section = sections
        .iter()
        .find(|section| section.sh_type == SHT_DYNSYM && section.addr == symtab)
        .map(|section| section.size / entry_size);
    let count = match from_section {
        Some(count) => count,
        None => match dynamic.value(DT_HASH) {
            // The SysV hash table's nchain equals the number of dynamic symbols.
            Some(hash) => {
                let offset = vaddr_to_offset(&elf.phdrs, hash, 8)
                    .ok_or_else(|| source.malformed(format!("DT_HASH {hash:#x} is not inside a PT_LOAD")))?;
                u64::from(elf.header.endian.u32(&source.read(offset, 8, "DT_HASH header")?, 4))
            }
            None => return Ok(None),
        },
    };
    let table = vaddr_to_offset(&elf.phdrs, symtab, count.saturating_mul(entry_size))
        .ok_or_else(|| source.malformed(format!("the {count} dynamic symbols are not inside a PT_LOAD")))?;
    let mut first = 0;
    while first < count {
        let n = SYMBOLS_PER_READ.min(count - first);
        let bytes = source.read(table + first * entry_size, n * entry_size, ".dynsym")?;
        if bytes.chunks_exact(entry_size as usize).any(|symbol| inside(u64::from(elf.header.endian.u32(symbol, 0)))) {
            return Ok(Some(true));
        }
        first += n;
    }
    Ok(Some(false))
}

/// Walks `.gnu.version_r` (file and version names) and `.gnu.version_d` (version names);
/// file names are judged by `file_inside`.
fn version_names_inside(
    source: &dyn Source,
    elf: &ElfFile,
    inside: &dyn Fn(u64) -> bool,
    file_inside: &dyn Fn(u64) -> bool,
) -> Result<bool, ElfError> {
    let Some(dynamic) = &elf.dynamic else { return Ok(false) };
    let endian = elf.header.endian;
    let record = |address: u64, size: u64, what: &str| -> Result<Vec<u8>, ElfError> {
        let offset = vaddr_to_offset(&elf.phdrs, address, size)
            .ok_or_else(|| source.malformed(format!("{what} record {address:#x} is not inside a PT_LOAD")))?;
        source.read(offset, size, what)
    };
    let mut walked = 0usize;
    let walk = |walked: &mut usize| -> Result<(), ElfError> {
        *walked += 1;
        if *walked > MAX_VERSION_RECORDS {
            return Err(source.malformed("symbol version records form a loop".into()));
        }
        Ok(())
    };
    if let (Some(mut address), Some(count)) = (dynamic.value(DT_VERNEED), dynamic.value(DT_VERNEEDNUM)) {
        for _ in 0..count {
            walk(&mut walked)?;
            let need = record(address, 16, "Verneed")?;
            if file_inside(u64::from(endian.u32(&need, 4))) {
                return Ok(true);
            }
            let mut aux = address.wrapping_add(u64::from(endian.u32(&need, 8)));
            for _ in 0..endian.u16(&need, 2) {
                walk(&mut walked)?;
                let vernaux = record(aux, 16, "Vernaux")?;
                if inside(u64::from(endian.u32(&vernaux, 8))) {
                    return Ok(true);
                }
                aux = aux.wrapping_add(u64::from(endian.u32(&vernaux, 12)));
            }
            address = address.wrapping_add(u64::from(endian.u32(&need, 12)));
        }
    }
    if let (Some(mut address), Some(count)) = (dynamic.value(DT_VERDEF), dynamic.value(DT_VERDEFNUM)) {
        for _ in 0..count {
            walk(&mut walked)?;
            let def = record(address, 20, "Verdef")?;
            let mut aux = address.wrapping_add(u64::from(endian.u32(&def, 12)));
            for _ in 0..endian.u16(&def, 6) {
                walk(&mut walked)?;
                let verdaux = record(aux, 8, "Verdaux")?;
                if inside(u64::from(endian.u32(&verdaux, 0))) {
                    return Ok(true);
                }
                aux = aux.wrapping_add(u64::from(endian.u32(&verdaux, 4)));
            }
            address = address.wrapping_add(u64::from(endian.u32(&def, 16)));
        }
    }
    Ok(false)
}
