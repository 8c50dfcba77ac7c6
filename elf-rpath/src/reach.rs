//! Where relocations write, as eu-elflint (in its GNU ld mode) measures it: from `r_offset` up to
//! `r_offset` + the size of the relocation's symbol. A read-only `PT_LOAD` inside that range
//! is, to it, a text relocation the file never declared ("read-only section modified but text
//! relocation flag not set"): a jump slot at the end of `.got.plt` for a 15 KB function
//! reaches 15 KB past it. So the grown layout neither places nor leaves a read-only load there.
//!
//! Owns: that range, read from the allocated relocation sections. Does not own: where the
//! block goes (`layout`) or which flags a load keeps (`grow`).

use super::parse::{SectionHeader, SHF_ALLOC, SHT_DYNSYM, SHT_REL, SHT_RELA, SHT_SYMTAB};
use super::source::Source;
use super::ElfError;

/// Entries read per positioned read, so a large table never sits in memory whole.
const ENTRIES_PER_READ: u64 = 4096;
const SYMBOL_SIZE: u64 = 24;

/// The addresses relocations write, kept as one span from the lowest `r_offset` to the
/// highest `r_offset` + symbol size. A load in a gap between relocated ranges counts as
/// reached: conservative, so a read-only load it allows is one eu-elflint allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reach {
    span: Option<(u64, u64)>,
}

impl Reach {
    /// Whether some relocation reaches into `from..to` (eu-elflint's test, per relocation:
    /// `r_offset < to && r_offset + size >= from`).
    pub(crate) fn touches(&self, from: u64, to: u64) -> bool {
        self.span.is_some_and(|(lowest, highest)| lowest < to && highest >= from)
    }

    /// The lowest address above everything relocations reach.
    pub(crate) fn above(&self) -> u64 {
        self.span.map_or(0, |(_, highest)| highest.saturating_add(1))
    }

    pub(crate) fn include(&mut self, offset: u64, size: u64) {
        let end = offset.saturating_add(size);
        self.span = Some(match self.span {
            None => (offset, end),
            Some((lowest, highest)) => (lowest.min(offset), highest.max(end)),
        });
    }
}

/// Reads every allocated `SHT_RELA`/`SHT_REL` section and the sizes of the symbols they
/// name. Without section headers eu-elflint has nothing to check, and the reach is empty.
pub(crate) fn relocation_reach(source: &dyn Source, sections: &[SectionHeader]) -> Result<Reach, ElfError> {
    let mut reach = Reach::default();
    let mut sizes: Option<(u32, Vec<u64>)> = None;
    for section in sections {
        let entry_size = match section.sh_type {
            SHT_RELA => 24,
            SHT_REL => 16,
            _ => continue,
        };
        if section.flags & SHF_ALLOC == 0 {
            continue;
        }
        if sizes.as_ref().is_none_or(|(link, _)| *link != section.link) {
            sizes = Some((section.link, symbol_sizes(source, sections, section.link)?));
        }
        let symbol_sizes = sizes.as_ref().map(|(_, sizes)| sizes.as_slice()).unwrap_or_default();
        let count = section.size / entry_size;
        let mut first = 0;
        while first < count {
            let n = ENTRIES_PER_READ.min(count - first);
            let bytes = source.read(section.offset + first * entry_size, n * entry_size, "relocation table")?;
            for entry in bytes.chunks_exact(entry_size as usize) {
                let offset = u64::from_le_bytes(entry[0..8].try_into().unwrap_or_default());
                let symbol = u64::from_le_bytes(entry[8..16].try_into().unwrap_or_default()) >> 32;
                let size = usize::try_from(symbol).ok().and_then(|index| symbol_sizes.get(index)).copied();
                reach.include(offset, size.unwrap_or(0));
            }
            first += n;
        }
    }
    Ok(reach)
}

/// `st_size` of every symbol of the table at section index `link` (empty when it is no
/// symbol table, as eu-elflint then finds no symbol either).
fn symbol_sizes(source: &dyn Source, sections: &[SectionHeader], link: u32) -> Result<Vec<u64>, ElfError> {
    let table = usize::try_from(link).ok().and_then(|index| sections.get(index));
    let Some(table) = table.filter(|table| matches!(table.sh_type, SHT_DYNSYM | SHT_SYMTAB)) else {
        return Ok(Vec::new());
    };
    let count = table.size / SYMBOL_SIZE;
    let mut sizes = Vec::new();
    let mut first = 0;
    while first < count {
        let n = ENTRIES_PER_READ.min(count - first);
        let bytes = source.read(table.offset + first * SYMBOL_SIZE, n * SYMBOL_SIZE, "symbol table")?;
        sizes.extend(
            bytes
                .chunks_exact(SYMBOL_SIZE as usize)
                .map(|symbol| u64::from_le_bytes(symbol[16..24].try_into().unwrap_or_default())),
        );
        first += n;
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_touches_what_eu_elflint_would() {
        let mut reach = Reach::default();
        assert!(!reach.touches(0, u64::MAX) && reach.above() == 0);
        reach.include(0x9000, 15_030);
        reach.include(0x8de0, 0);
        // Below everything relocated, and above the farthest reach: untouched.
        assert!(!reach.touches(0x1000, 0x8de0));
        assert!(!reach.touches(0x9000 + 15_031, 0x20000));
        // A load right after the relocated data, within a symbol's size: touched.
        assert!(reach.touches(0xb000, 0xb478));
        assert!(reach.touches(0x9000 + 15_030, 0x20000));
        assert_eq!(reach.above(), 0x9000 + 15_031);
    }
}
