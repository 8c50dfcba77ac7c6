//! Keeps symbol tables true when the grown layout moves `.dynamic` and `.dynstr`: a symbol
//! defined in a moved section (`_DYNAMIC`, the section symbols) gets the section's new
//! address, and so does an absolute `_DYNAMIC` (aarch64's form), so `.symtab` and `.dynsym`
//! agree with the program headers (`eu-elflint` checks that `_DYNAMIC` is `PT_DYNAMIC`'s
//! address). patchelf leaves them stale.
//!
//! Owns: those `st_value` patches. Does not own: the moves themselves (`grow`).

use super::parse::{SectionHeader, SHN_ABS, SHT_DYNSYM, SHT_SYMTAB};
use super::source::Source;
use super::splice::BytePatch;
use super::ElfError;

/// Symbols read per positioned read, so a large `.symtab` never sits in memory whole.
const SYMBOLS_PER_READ: u64 = 4096;
const SYMBOL_SIZE: u64 = 24;
const STT_FILE: u8 = 4;

/// One section whose symbols must point into it after the edit, by its index in the
/// section header table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MovedSection {
    pub(crate) index: usize,
    pub(crate) old_addr: u64,
    pub(crate) old_size: u64,
    pub(crate) new_addr: u64,
    /// `.dynamic`: a `_DYNAMIC` symbol that an earlier tool left stale is repointed too.
    pub(crate) is_dynamic: bool,
    /// Whether the section moves (`new_addr` is its copy); `.dynamic` left in place is
    /// listed too, with `new_addr` its own address, for the stale `_DYNAMIC` rule.
    pub(crate) moves: bool,
}

/// `st_value` patches for every symbol of every symbol table defined in a moved section.
pub(crate) fn moved_symbol_patches(
    source: &dyn Source,
    sections: &[SectionHeader],
    moved: &[MovedSection],
) -> Result<Vec<BytePatch>, ElfError> {
    let mut patches = Vec::new();
    if moved.is_empty() {
        return Ok(patches);
    }
    for table in sections.iter().filter(|section| matches!(section.sh_type, SHT_SYMTAB | SHT_DYNSYM)) {
        let names = usize::try_from(table.link).ok().and_then(|link| sections.get(link));
        let count = table.size / SYMBOL_SIZE;
        let mut first = 0;
        while first < count {
            let n = SYMBOLS_PER_READ.min(count - first);
            let at = table.offset + first * SYMBOL_SIZE;
            let bytes = source.read(at, n * SYMBOL_SIZE, "symbol table")?;
            for (index, symbol) in bytes.chunks_exact(SYMBOL_SIZE as usize).enumerate() {
                let symbol_at = at + index as u64 * SYMBOL_SIZE;
                if let Some(value) = new_value(source, names, symbol, moved)? {
                    patches.push(BytePatch { offset: symbol_at + 8, bytes: value.to_le_bytes().to_vec() });
                }
            }
            first += n;
        }
    }
    Ok(patches)
}

/// The symbol's new `st_value`, or `None` when it stays.
fn new_value(
    source: &dyn Source,
    names: Option<&SectionHeader>,
    symbol: &[u8],
    moved: &[MovedSection],
) -> Result<Option<u64>, ElfError> {
    let shndx = u16::from_le_bytes([symbol[6], symbol[7]]);
    let value = u64::from_le_bytes(symbol[8..16].try_into().unwrap_or_default());
    // Every source file's STT_FILE symbol is absolute too: never `_DYNAMIC`, skipped unread.
    if shndx == SHN_ABS && symbol[4] & 0xf != STT_FILE {
        // aarch64's GNU ld defines `_DYNAMIC` as an absolute symbol, not in `.dynamic`.
        let Some(dynamic) = moved.iter().find(|section| section.is_dynamic) else { return Ok(None) };
        let follows = value != dynamic.new_addr && is_named_dynamic(source, names, symbol)?;
        return Ok(follows.then_some(dynamic.new_addr));
    }
    let Some(section) = moved.iter().find(|section| section.index == usize::from(shndx)) else { return Ok(None) };
    let new = if (section.old_addr..=section.old_addr.saturating_add(section.old_size)).contains(&value) {
        section.new_addr.wrapping_add(value - section.old_addr)
    } else if section.is_dynamic && is_named_dynamic(source, names, symbol)? {
        section.new_addr
    } else {
        return Ok(None);
    };
    Ok((new != value).then_some(new))
}

fn is_named_dynamic(source: &dyn Source, names: Option<&SectionHeader>, symbol: &[u8]) -> Result<bool, ElfError> {
    const NAME: &[u8] = b"_DYNAMIC\0";
    let Some(names) = names else { return Ok(false) };
    let name = u64::from(u32::from_le_bytes(symbol[0..4].try_into().unwrap_or_default()));
    if name.saturating_add(NAME.len() as u64) > names.size {
        return Ok(false);
    }
    Ok(source.read(names.offset + name, NAME.len() as u64, "symbol name")? == NAME)
}
