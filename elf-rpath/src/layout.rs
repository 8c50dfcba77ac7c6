//! Where a grown layout puts the program header table and its appended block, and the
//! facts about a layout that an edit must keep (where the loader and the kernel find the
//! program header table).
//!
//! The table, one entry longer, stays out of the block when it can ([`table_place`]): grown
//! where it is over unused bytes, or moved into the unused tail of a read-only load's last
//! page. Only otherwise does the block carry it.
//!
//! The block starts at the end of the file (16-aligned; page-aligned when it carries the
//! table of a file without `PT_PHDR` and an earlier load's pages would reach it), so a file
//! grows by the block plus less than 16 bytes whatever holes its address space has (a
//! kpack-split library keeps the addresses of a 1.3 GB `.hip_fatbin` it no longer
//! carries). Its address is congruent to its offset modulo the page size, as the ELF spec
//! and the loaders require, and chosen in this order:
//!
//! 1. offset + the first `PT_LOAD`'s `p_vaddr - p_offset`, when nothing is mapped there:
//!    above the memory image, or inside a hole of the address space. Kernels before 5.18
//!    (RHEL 8's 4.18) pass `AT_PHDR` = load bias + that delta + `e_phoff`, so this keeps a
//!    moved program header table where they look for it.
//! 2. When the block holds no table a kernel looks for (the table stayed out of it, or the
//!    file is a library), the first page above the memory image.
//! 3. For a non-PIE program (fixed addresses, free space below them), the pages right below
//!    its first `PT_LOAD`: the block becomes the first `PT_LOAD`, read-only (SPEC §6), and
//!    rule 1's sum (computed modulo 2^64, as kernels do) lands on its table.
//! 4. For a PIE, the lowest free address that keeps rule 1, reached by zero padding up to
//!    the end of its image, refused past [`MAX_PADDING`].
//!
//! A read-only block also stays clear of every address a relocation reaches (`reach`).
//!
//! Owns: placement and layout facts. Does not own: the block's contents (`grow`).

use super::consts::{EM_AARCH64, EM_IA_64, EM_LOONGARCH, EM_MIPS, EM_PPC, EM_PPC64};
use super::parse::{
    Dynamic, ElfFile, ProgramHeader, SectionHeader, DF_1_PIE, DT_FLAGS_1, ET_EXEC, PF_W, PF_X, PT_LOAD, PT_PHDR,
    SHT_NOBITS,
};
use super::reach::Reach;
use super::source::Source;
use super::{ElfError, Refusal};

/// Zero padding we append at most so that a program's moved table stays where old kernels
/// look for it (rule 4). Shared libraries never need padding.
const MAX_PADDING: u64 = 64 << 20;

/// The block's offset is a multiple of this: its program header table and `.dynamic`
/// need 8, and the offset needs no more (its address follows it modulo the page size).
const BLOCK_ALIGN: u64 = 16;

/// The lowest address rule 3 maps at: Linux's default `vm.mmap_min_addr`.
const LOWEST_MAPPABLE: u64 = 0x10000;

/// The size of one program header (Elf64_Phdr).
const PHDR_SIZE: u64 = 56;

/// The largest page size a kernel for `machine` may use, as patchelf assumes: a segment
/// congruent modulo it maps on every kernel of that machine.
pub(crate) fn page_size(machine: u16) -> u64 {
    match machine {
        EM_MIPS | EM_PPC | EM_PPC64 | EM_IA_64 | EM_AARCH64 | EM_LOONGARCH => 0x10000,
        _ => 0x1000,
    }
}

/// Where the program header table is after the edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TablePlace {
    /// Grown by one entry where it is, over bytes nothing uses: no copy, and kernels and
    /// ld.so find it where they did.
    GrownInPlace,
    /// Moved to unused bytes at `offset`, right after the file bytes of the read-only load
    /// `load` (its index in the header table), which grows to map it.
    InSlack { load: usize, offset: u64 },
    /// Copied, one entry longer, to the start of the block.
    InBlock,
}

/// What the appended block asks of its place.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockShape {
    pub(crate) len: u64,
    pub(crate) table: TablePlace,
    /// Mapped writable (it holds `.dynamic`); a read-only block must stay clear of `reach`.
    pub(crate) writable: bool,
}

/// Where the appended block goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) offset: u64,
    pub(crate) vaddr: u64,
}

/// Whether the kernel may start this file as a program (so `AT_PHDR` matters): `ET_EXEC`,
/// a PIE, or anything with an interpreter.
pub(crate) fn runs_as_program(elf: &ElfFile) -> bool {
    let flags_1 = elf.dynamic.as_ref().and_then(|dynamic| dynamic.value(DT_FLAGS_1)).unwrap_or(0);
    elf.header.e_type == ET_EXEC || flags_1 & DF_1_PIE != 0 || elf.interpreter.is_some()
}

/// The address space a file maps, page-rounded, one range per `PT_LOAD`.
struct AddressSpace {
    page: u64,
    occupied: Vec<(u64, u64)>,
}

impl AddressSpace {
    fn new(source: &dyn Source, elf: &ElfFile) -> Result<AddressSpace, ElfError> {
        let page = page_size(elf.header.machine);
        let mut occupied = Vec::new();
        for load in elf.phdrs.iter().filter(|phdr| phdr.p_type == PT_LOAD) {
            let end = load.vaddr.checked_add(load.memsz).and_then(|end| align_up(end, page));
            let end = end.ok_or_else(|| source.malformed("addresses overflow".into()))?;
            occupied.push((align_down(load.vaddr, page), end));
        }
        Ok(AddressSpace { page, occupied })
    }

    /// Whether `len` bytes at `vaddr` share no page with a load.
    fn free(&self, vaddr: u64, len: u64) -> bool {
        let start = align_down(vaddr, self.page);
        let Some(end) = vaddr.checked_add(len).and_then(|end| align_up(end, self.page)) else { return false };
        self.occupied.iter().all(|(taken_start, taken_end)| end <= *taken_start || start >= *taken_end)
    }

    fn lowest(&self) -> u64 {
        self.occupied.iter().map(|(start, _)| *start).min().unwrap_or(0)
    }

    fn highest(&self) -> u64 {
        self.occupied.iter().map(|(_, end)| *end).max().unwrap_or(0)
    }
}

/// Chooses the block's offset and address (see the module doc for the rules).
pub(crate) fn place_block(
    source: &dyn Source,
    elf: &ElfFile,
    shape: BlockShape,
    reach: &Reach,
) -> Result<Placement, ElfError> {
    let refuse =
        |reason: String| ElfError::Unsupported { path: source.path().to_path_buf(), reason, refusal: Refusal::Layout };
    let overflow = || source.malformed("addresses overflow".into());
    let Some(first) = elf.phdrs.iter().find(|phdr| phdr.p_type == PT_LOAD) else {
        return Err(source.malformed("no PT_LOAD".into()));
    };
    let space = AddressSpace::new(source, elf)?;
    let page = space.page;
    let len = shape.len;
    let fits = |vaddr: u64| -> bool {
        space.free(vaddr, len) && (shape.writable || !reach.touches(vaddr, vaddr.saturating_add(len)))
    };
    let offset = block_offset(source.len(), elf, shape.table, page).ok_or_else(overflow)?;
    // Modulo 2^64: a block that rule 3 put below a non-PIE program's image has an address
    // lower than its offset, and kernels compute `AT_PHDR` with the same wrap.
    let delta = first.vaddr.wrapping_sub(first.offset);
    let aligned = delta % page == 0;
    let identity = offset.wrapping_add(delta);
    let kernel_finds_table = shape.table == TablePlace::InBlock && runs_as_program(elf);
    let placement = if aligned && fits(identity) {
        Placement { offset, vaddr: identity }
    } else if !kernel_finds_table {
        Placement { offset, vaddr: above(&space, offset, shape, reach).ok_or_else(overflow)? }
    } else if !aligned {
        return Err(refuse(format!(
            "the first PT_LOAD maps offset {:#x} to {:#x}, not a multiple of the page size {page:#x}, so a \
             program's moved program header table cannot be placed where kernels look for it",
            first.offset, first.vaddr
        )));
    } else if let Some(placement) = below_fixed_image(elf, &space, offset, shape, &fits) {
        placement
    } else {
        padded_for_program(&space.occupied, delta, identity.max(reach.above()), &fits).ok_or_else(overflow)?
    };
    // Far below any real address space; keeps every address computed from it from overflowing.
    if placement.vaddr > u64::MAX / 4 {
        return Err(refuse(format!("the new segment would start at {:#x}", placement.vaddr)));
    }
    let padding = placement.offset.checked_sub(source.len()).ok_or_else(overflow)?;
    if padding > MAX_PADDING {
        return Err(refuse(format!(
            "a program's moved program header table must stay at the first PT_LOAD's address + e_phoff \
             (kernels before 5.18 look for it there), which would take {padding} bytes of padding"
        )));
    }
    Ok(placement)
}

/// The end of the file, 16-aligned; page-aligned when the block's table would otherwise
/// start inside the page-rounded file range of an earlier load. Without `PT_PHDR`, ld.so
/// takes the table's address from the first load whose whole pages hold it, and a load with
/// `.bss` zeroes the rest of its last page.
fn block_offset(file_len: u64, elf: &ElfFile, table: TablePlace, page: u64) -> Option<u64> {
    let packed = align_up(file_len, BLOCK_ALIGN)?;
    let found_through_phdr = elf.phdrs.iter().any(|phdr| phdr.p_type == PT_PHDR);
    if table != TablePlace::InBlock || found_through_phdr {
        return Some(packed);
    }
    let pages_reach_block = elf.phdrs.iter().filter(|phdr| phdr.p_type == PT_LOAD).any(|load| {
        let mapped =
            align_up(load.vaddr.saturating_add(load.filesz), page).map(|end| end - align_down(load.vaddr, page));
        mapped.is_none_or(|mapped| align_down(load.offset, page).saturating_add(mapped) > packed)
    });
    if pages_reach_block {
        align_up(file_len, page)
    } else {
        Some(packed)
    }
}

/// Rule 2: the first address above the memory image (and, for a read-only block, above
/// what relocations reach) congruent to `offset`. A reach too far to honour is ignored:
/// it only decides what eu-elflint says, never whether the file loads.
fn above(space: &AddressSpace, offset: u64, shape: BlockShape, reach: &Reach) -> Option<u64> {
    let image = space.highest();
    let floor = if shape.writable { image } else { image.max(reach.above()) };
    let start = align_up(floor, space.page).filter(|start| *start < u64::MAX / 8).or(align_up(image, space.page))?;
    start.checked_add(offset % space.page)
}

/// Rule 3: the pages right below a non-PIE program's image, for a read-only block (the
/// first `PT_LOAD` of such a program never becomes writable, SPEC §6).
fn below_fixed_image(
    elf: &ElfFile,
    space: &AddressSpace,
    offset: u64,
    shape: BlockShape,
    fits: &dyn Fn(u64) -> bool,
) -> Option<Placement> {
    if elf.header.e_type != ET_EXEC || shape.writable {
        return None;
    }
    let span = align_up((offset % space.page).checked_add(shape.len)?, space.page)?;
    let start = space.lowest().checked_sub(span).filter(|start| *start >= LOWEST_MAPPABLE)?;
    let vaddr = start + offset % space.page;
    fits(vaddr).then_some(Placement { offset, vaddr })
}

/// Rule 4: the lowest page boundary at the end of an occupied range, at or above
/// `lowest`, where the block fits; its offset keeps rule 1 (`vaddr - delta`).
fn padded_for_program(
    occupied: &[(u64, u64)],
    delta: u64,
    lowest: u64,
    fits: &dyn Fn(u64) -> bool,
) -> Option<Placement> {
    let mut ends: Vec<u64> = occupied.iter().map(|(_, end)| *end).filter(|end| *end >= lowest).collect();
    ends.sort_unstable();
    let vaddr = ends.into_iter().find(|end| fits(*end))?;
    Some(Placement { offset: vaddr.wrapping_sub(delta), vaddr })
}

/// Where the program header table, one entry longer, goes (first that works):
///
/// 1. Where it is, when the bytes after it are unused (an earlier patchelf run leaves such
///    room when it moves the sections that followed the table).
/// 2. Into the unused tail of a read-only load's last page (linkers pad loads to pages,
///    `-z separate-code` by whole pages): that load grows over it, and with the same
///    `p_vaddr - p_offset` as the first load the table stays where old kernels look.
/// 3. Into the block.
///
/// Bytes are unused when no section, segment, header or dynamic pointer covers them; without
/// section headers nothing proves that, and the table goes into the block.
pub(crate) fn table_place(file_len: u64, elf: &ElfFile, dynamic: &Dynamic, sections: &[SectionHeader]) -> TablePlace {
    let header = &elf.header;
    let size = (u64::from(header.phnum) + 1) * PHDR_SIZE;
    if sections.is_empty() || header.phoff < 64 || !table_facts(elf).phdr_entry_describes_it {
        return TablePlace::InBlock;
    }
    let unused = Unused { file_len, elf, dynamic, sections };
    let grows = elf.phdrs.iter().position(|phdr| {
        let end = header.phoff.saturating_add(size);
        phdr.p_type == PT_LOAD && phdr.offset <= header.phoff && end <= phdr.offset.saturating_add(phdr.filesz)
    });
    if let Some(holder) = grows {
        let old_end = header.phoff + size - PHDR_SIZE;
        if unused.range(holder, old_end, PHDR_SIZE) {
            return TablePlace::GrownInPlace;
        }
    }
    match slack_for_table(&unused, size) {
        Some((load, offset)) => TablePlace::InSlack { load, offset },
        None => TablePlace::InBlock,
    }
}

/// Rule 2 of [`table_place`]: the load (by index in the header table) and file offset.
fn slack_for_table(unused: &Unused, size: u64) -> Option<(usize, u64)> {
    let elf = unused.elf;
    let page = page_size(elf.header.machine);
    let first = elf.phdrs.iter().position(|phdr| phdr.p_type == PT_LOAD)?;
    let delta = |load: &ProgramHeader| load.vaddr.wrapping_sub(load.offset);
    let program = runs_as_program(elf);
    let mut candidates: Vec<usize> = (0..elf.phdrs.len())
        .filter(|index| {
            let load = &elf.phdrs[*index];
            load.p_type == PT_LOAD
                && load.flags & PF_W == 0
                && load.filesz == load.memsz
                && (!program || delta(load) == delta(&elf.phdrs[first]))
        })
        .collect();
    // The first load and executable pages last: the table is data.
    candidates.sort_by_key(|index| (*index == first, elf.phdrs[*index].flags & PF_X != 0));
    candidates.into_iter().find_map(|index| {
        let load = &elf.phdrs[index];
        let offset = align_up(load.offset.checked_add(load.filesz)?, 8)?;
        let grown_end = load.vaddr.checked_add(offset.checked_add(size)? - load.offset)?;
        // Within the load's last page (at the largest page size): it maps no new page, so
        // nothing it could collide with, nor a page the block might take.
        let same_pages = align_up(grown_end, page)? == align_up(load.vaddr.checked_add(load.memsz)?, page)?;
        (same_pages && unused.range(index, offset, size)).then_some((index, offset))
    })
}

/// Proves byte ranges unused, for the table to take them.
struct Unused<'a> {
    file_len: u64,
    elf: &'a ElfFile,
    dynamic: &'a Dynamic,
    sections: &'a [SectionHeader],
}

impl Unused<'_> {
    /// Whether `size` bytes at file offset `start`, which `holder` maps (or will), lie in
    /// the file and are used by nothing: no section, no segment but `holder` and `PT_PHDR`,
    /// neither header table, no dynamic pointer, and no other load's whole pages (ld.so
    /// without `PT_PHDR` takes the table from the first load whose pages hold it).
    fn range(&self, holder: usize, start: u64, size: u64) -> bool {
        let (elf, header) = (self.elf, &self.elf.header);
        let page = page_size(header.machine);
        let Some(end) = start.checked_add(size) else { return false };
        let overlaps = |offset: u64, len: u64| len > 0 && offset < end && offset.saturating_add(len) > start;
        let load = &elf.phdrs[holder];
        let Some(vaddr) = load.vaddr.checked_add(start.wrapping_sub(load.offset)) else { return false };
        let pages_hold = |phdr: &ProgramHeader| {
            let mapped = align_up(phdr.vaddr.saturating_add(phdr.filesz), page)
                .map(|end| end.saturating_sub(align_down(phdr.vaddr, page)));
            let from = align_down(phdr.offset, page);
            from <= start && mapped.is_some_and(|mapped| end <= from.saturating_add(mapped))
        };
        end <= self.file_len
            && !overlaps(0, 64)
            && !overlaps(header.shoff, u64::from(header.shnum).saturating_mul(64))
            && !self
                .sections
                .iter()
                .any(|section| section.sh_type != SHT_NOBITS && overlaps(section.offset, section.size))
            && !elf.phdrs.iter().enumerate().any(|(index, phdr)| {
                index != holder
                    && phdr.p_type != PT_PHDR
                    && (overlaps(phdr.offset, phdr.filesz)
                        || (phdr.p_type == PT_LOAD && index < holder && pages_hold(phdr)))
            })
            && !self.dynamic.entries.iter().any(|entry| {
                is_address_tag(entry.tag) && entry.value >= vaddr && entry.value < vaddr.saturating_add(size)
            })
    }
}

/// Dynamic tags whose value is an address in the file's image.
fn is_address_tag(tag: u64) -> bool {
    const ADDRESSES: &[u64] =
        &[3, 4, 5, 6, 7, 12, 13, 17, 23, 25, 26, 32, 34, 36, 0x6fff_fff0, 0x6fff_fffc, 0x6fff_fffe];
    ADDRESSES.contains(&tag) || (0x6fff_fe00..=0x6fff_feff).contains(&tag)
}

/// Facts about where the program header table is found; an edit must keep each that held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TableFacts {
    /// Mapped at the first `PT_LOAD`'s `p_vaddr - p_offset` + `e_phoff` (old kernels' `AT_PHDR`).
    pub(crate) at_first_load_delta: bool,
    /// ld.so finds it: through `PT_PHDR`, or in the first `PT_LOAD` whose pages hold it, or
    /// (in no `PT_LOAD`) by copying it from the file.
    pub(crate) found_by_loader: bool,
    /// `PT_PHDR`, if any, comes before every `PT_LOAD` and describes the table.
    pub(crate) phdr_entry_describes_it: bool,
}

pub(crate) fn table_facts(elf: &ElfFile) -> TableFacts {
    let phoff = elf.header.phoff;
    let size = u64::from(elf.header.phnum) * 56;
    let page = page_size(elf.header.machine);
    let mapped_at = |address: u64| super::parse::vaddr_to_offset(&elf.phdrs, address, size) == Some(phoff);
    let first = elf.phdrs.iter().find(|phdr| phdr.p_type == PT_LOAD);
    let at_first_load_delta =
        first.is_some_and(|first| mapped_at(first.vaddr.wrapping_sub(first.offset).wrapping_add(phoff)));
    let phdr_entry = elf.phdrs.iter().position(|phdr| phdr.p_type == PT_PHDR);
    let first_load = elf.phdrs.iter().position(|phdr| phdr.p_type == PT_LOAD);
    let phdr_entry_describes_it = match phdr_entry {
        None => true,
        Some(index) => {
            let entry = &elf.phdrs[index];
            entry.offset == phoff && entry.filesz == size && first_load.is_none_or(|load| index < load)
        }
    };
    let found_by_loader = match phdr_entry {
        Some(index) => mapped_at(elf.phdrs[index].vaddr),
        None => {
            // glibc's _dl_map_segments: the first PT_LOAD whose page-rounded file range holds
            // the table gives its address, whatever lies there in memory.
            let holder = elf.phdrs.iter().filter(|phdr| phdr.p_type == PT_LOAD).find(|load| {
                let start = align_down(load.offset, page);
                let end = load.offset.checked_add(load.filesz).and_then(|end| align_up(end, page));
                start <= phoff && end.is_some_and(|end| phoff.saturating_add(size) <= end)
            });
            holder.is_none_or(|load| load.offset <= phoff && phoff.saturating_add(size) <= load.offset + load.filesz)
        }
    };
    TableFacts { at_first_load_delta, found_by_loader, phdr_entry_describes_it }
}

pub(crate) fn align_up(value: u64, align: u64) -> Option<u64> {
    value.checked_add(align - 1).map(|value| value / align * align)
}

fn align_down(value: u64, align: u64) -> u64 {
    value / align * align
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(vaddr: u64, memsz: u64) -> (u64, u64) {
        (align_down(vaddr, 0x1000), align_up(vaddr + memsz, 0x1000).unwrap_or(u64::MAX))
    }

    #[test]
    fn a_program_pads_to_the_lowest_free_boundary_above_its_delta() {
        let occupied = [load(0, 0x1000), load(0x4000_0000, 0x2000)];
        let free = |vaddr: u64| occupied.iter().all(|(start, end)| vaddr + 0x100 <= *start || vaddr >= *end);
        // The end of the file's page (0x3000) has nothing mapped above it until the hole's
        // end, where the block then goes (rule 4 is asked only when rule 1 failed).
        let placement = padded_for_program(&occupied, 0, 0x3000, &free);
        assert_eq!(placement, Some(Placement { offset: 0x4000_2000, vaddr: 0x4000_2000 }));
        assert_eq!(padded_for_program(&occupied, 0, 0x5000_0000, &free), None);
    }

    #[test]
    fn a_read_only_block_goes_above_what_relocations_reach() {
        let space = AddressSpace { page: 0x1000, occupied: vec![load(0, 0x7990), load(0x8dd8, 0x1b70)] };
        let mut reach = Reach::default();
        reach.include(0x9000, 15_030);
        let shape = |writable| BlockShape { len: 0x300, table: TablePlace::GrownInPlace, writable };
        // Offset 0x9480 keeps its place in the page (0x480) wherever the block goes.
        assert_eq!(above(&space, 0x9480, shape(true), &reach), Some(0xb480));
        assert_eq!(above(&space, 0x9480, shape(false), &reach), Some(0xd480));
        // A reach too far to honour is left to the lint: the block still goes somewhere.
        reach.include(u64::MAX - 1, 0);
        assert_eq!(above(&space, 0x9480, shape(false), &reach), Some(0xb480));
    }

    #[test]
    fn page_sizes_follow_the_machine() {
        assert_eq!(page_size(62), 0x1000);
        assert_eq!(page_size(EM_AARCH64), 0x10000);
    }
}
