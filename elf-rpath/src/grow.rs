//! The grown layout: when the new RPATH does not fit in place, append one new `PT_LOAD`
//! holding copies of the program header table, `.dynamic` and `.dynstr`, and repoint the
//! headers at the copies. Every original byte keeps its offset, so the edit is a few
//! same-length overwrites plus an appended block, which `SplicedReader` streams.
//!
//! ```text
//!  before                            after
//!  +-------------------+ 0           +-------------------+ 0
//!  | ELF header        |             | ELF header        | e_phoff -> new PHT, e_phnum + 1
//!  | PHT (n entries)   |  first      | old PHT (unused)  |
//!  | .dynsym .dynstr   |  PT_LOAD    | .dynsym .dynstr   | untouched, so the first PT_LOAD of a
//!  | .text ...         |             | .text ...         | non-PIE executable stays read-only
//!  | .dynamic          |  RW load    | old .dynamic      | no longer referenced
//!  | .data ...         |             | .data ...         |
//!  | section headers   |             | section headers   | .dynamic/.dynstr headers -> copies
//!  +-------------------+ end         +-------------------+ old end
//!                                    | zero padding      | less than a page, up to O
//!                                    +-------------------+ O   (page aligned)
//!                                    | PHT (n+1 entries) | <- PT_PHDR; new PT_LOAD (R+W) covers
//!                                    | .dynamic copy     | <- PT_DYNAMIC; O..new end at vaddr V
//!                                    | .dynstr + RPATH   | <- DT_STRTAB, DT_STRSZ, DT_RPATH
//!                                    +-------------------+ new end
//! ```
//!
//! - `V` is free address space congruent to `O` modulo the page size: above the memory
//!   image or in a hole of it (`layout` chooses, keeping old kernels' `AT_PHDR` rule where
//!   a program needs it). The file grows by the block plus less than a page, however far
//!   its segments are spread in memory (a program whose `.bss` reaches past the end of the
//!   file is the one exception: see `layout`).
//! - The new `PT_LOAD` is writable when it holds `.dynamic`: ld.so writes `DT_DEBUG`, and
//!   glibc before 2.35 relocates `.dynamic` entries in place. `.dynamic` stays where it is
//!   (and the new load is read-only) when it is alone in a load an earlier tool made for it
//!   and its slots take the new entries. The new load is listed among the loads in address
//!   order (ld.so and the kernel size the mapping from the first and last).
//! - The old `.dynstr` bytes are copied unchanged and the RPATH appended after them, so every
//!   existing string offset (NEEDED, SONAME, symbol and version names) stays valid.
//! - The section headers of `.dynamic` and `.dynstr`, and the symbols defined in them
//!   (`_DYNAMIC`, section symbols), follow the copies (`symbols`), so `eu-elflint` finds the
//!   file as consistent as before. A writable load that an earlier grown layout (ours or
//!   patchelf's) left holding only the old tables becomes read-only.
//! - Works the same on a file whose table an earlier patchelf run already moved: `e_phoff`
//!   is read wherever it points, and the copy is made from there.
//!
//! Owns: the grown layout. Does not own: choosing it (`rpath`).

use super::layout::{self, align_up};
use super::parse::{
    Dynamic, ElfFile, ProgramHeader, SectionHeader, DT_STRSZ, DT_STRTAB, PF_R, PF_W, PT_DYNAMIC, PT_LOAD, PT_PHDR,
    SHF_ALLOC, SHF_WRITE, SHT_DYNAMIC, SHT_NOBITS, SHT_STRTAB,
};
use super::patch::{diff_patch, encode_dynamic, sorted_patches, with_rpath};
use super::source::Source;
use super::splice::EditStrategy;
use super::symbols::{moved_symbol_patches, MovedSection};
use super::{ElfError, Refusal, RpathEdit};

/// The appended block's contents, laid out from offset 0 of the block.
struct Block {
    phnum: u16,
    pht_size: u64,
    /// Whether `.dynamic` moves into the block. It stays, rewritten where it is, when its
    /// slots take the new entries and it is the only writable section of its load: a load
    /// an earlier grown layout (ours or patchelf's) made for it, which would otherwise be
    /// left writable with nothing writable in it.
    moves_dynamic: bool,
    dynamic_at: u64,
    dynamic_size: u64,
    slots: u64,
    dynstr_at: u64,
    dynstr: Vec<u8>,
    len: u64,
}

pub(crate) fn plan_grown(
    source: &dyn Source,
    elf: &ElfFile,
    dynamic: &Dynamic,
    sections: &[SectionHeader],
    rpath: &str,
) -> Result<RpathEdit, ElfError> {
    let refuse =
        |reason: String| ElfError::Unsupported { path: source.path().to_path_buf(), reason, refusal: Refusal::Layout };
    let Some((dynstr_offset, dynstr)) = &elf.dynstr else {
        return Err(refuse("the dynamic section has no DT_STRTAB to extend".into()));
    };
    let keep_dynamic = alone_in_its_load(elf, dynamic, sections);
    let block = block_layout(elf, dynamic, dynstr, rpath, keep_dynamic)
        .ok_or_else(|| refuse("too many program headers to add one".into()))?;
    let place = layout::place_block(source, elf, block.len)?;
    let mut entries = with_rpath(&dynamic.entries, dynstr.len() as u64);
    for entry in &mut entries {
        match entry.tag {
            DT_STRTAB => entry.value = place.vaddr + block.dynstr_at,
            DT_STRSZ => entry.value = block.dynstr.len() as u64,
            _ => {}
        }
    }
    let moved = moved_sections(sections, dynamic, *dynstr_offset, &block, place.vaddr);
    let phdrs = new_program_headers(elf, sections, &moved, &block, place);

    let padding = place.offset - source.len();
    let mut appended = vec![0u8; padding as usize];
    appended.reserve(block.len as usize);
    for phdr in &phdrs {
        appended.extend_from_slice(&phdr.to_elf64_le());
    }
    let mut patches = Vec::new();
    if block.moves_dynamic {
        appended.resize((padding + block.dynamic_at) as usize, 0);
        appended.extend_from_slice(&encode_dynamic(&entries, block.slots));
    } else {
        let old = encode_dynamic(&dynamic.entries, dynamic.slots);
        patches.extend(diff_patch(dynamic.offset, &old, &encode_dynamic(&entries, dynamic.slots)));
    }
    appended.resize((padding + block.dynstr_at) as usize, 0);
    appended.extend_from_slice(&block.dynstr);

    let old_header = source.read(0, 64, "ELF header")?;
    let mut new_header = old_header.clone();
    new_header[32..40].copy_from_slice(&place.offset.to_le_bytes());
    new_header[56..58].copy_from_slice(&block.phnum.to_le_bytes());
    patches.extend(diff_patch(0, &old_header, &new_header));
    for section in moved.iter().filter(|section| section.moves) {
        let header = &sections[section.index];
        let old = source.read(header.header_offset, 64, "section header")?;
        let mut new = old.clone();
        let (offset, size) = if section.is_dynamic {
            (place.offset + block.dynamic_at, block.dynamic_size)
        } else {
            (place.offset + block.dynstr_at, block.dynstr.len() as u64)
        };
        new[16..24].copy_from_slice(&section.new_addr.to_le_bytes());
        new[24..32].copy_from_slice(&offset.to_le_bytes());
        new[32..40].copy_from_slice(&size.to_le_bytes());
        patches.extend(diff_patch(header.header_offset, &old, &new));
    }
    patches.extend(moved_symbol_patches(source, sections, &moved)?);
    Ok(RpathEdit {
        original_len: source.len(),
        patches: sorted_patches(source, patches)?,
        appended,
        strategy: EditStrategy::Grown,
    })
}

/// Block layout: PHT, then `.dynamic` (16-aligned) if it moves, then `.dynstr` with the
/// RPATH appended. The old `.dynstr` is copied unchanged, so every existing string offset
/// stays valid.
fn block_layout(elf: &ElfFile, dynamic: &Dynamic, dynstr: &[u8], rpath: &str, keep_dynamic: bool) -> Option<Block> {
    let count = elf.phdrs.len() + 1;
    // 0xffff would mean "the count is elsewhere" (PN_XNUM).
    let phnum = u16::try_from(count).ok().filter(|phnum| *phnum < 0xffff)?;
    let pht_size = count as u64 * 56;
    let entries = with_rpath(&dynamic.entries, dynstr.len() as u64).len() as u64;
    // One DT_NULL must stay to end the array.
    let moves_dynamic = entries + 1 > dynamic.slots || !keep_dynamic;
    let slots = dynamic.slots.max(entries + 1);
    let (dynamic_at, dynamic_size) = if moves_dynamic { (align_up(pht_size, 16)?, slots * 16) } else { (pht_size, 0) };
    let dynstr_at = dynamic_at + dynamic_size;
    let mut new_dynstr = dynstr.to_vec();
    new_dynstr.extend_from_slice(rpath.as_bytes());
    new_dynstr.push(0);
    let len = dynstr_at + new_dynstr.len() as u64;
    Some(Block { phnum, pht_size, moves_dynamic, dynamic_at, dynamic_size, slots, dynstr_at, dynstr: new_dynstr, len })
}

/// Whether `.dynamic` is the only writable section of the load that maps it. Unknown
/// (no section headers) counts as no: the table then moves, as it always may.
fn alone_in_its_load(elf: &ElfFile, dynamic: &Dynamic, sections: &[SectionHeader]) -> bool {
    let Some(load) = elf.phdrs.iter().find(|phdr| {
        phdr.p_type == PT_LOAD
            && phdr.offset <= dynamic.offset
            && dynamic.offset < phdr.offset.saturating_add(phdr.filesz)
    }) else {
        return false;
    };
    let inside = |addr: u64| addr >= load.vaddr && addr < load.vaddr.saturating_add(load.memsz);
    let mut writable = sections.iter().filter(|section| {
        section.flags & (SHF_ALLOC | SHF_WRITE) == SHF_ALLOC | SHF_WRITE
            && (section.size > 0 || section.sh_type == SHT_NOBITS)
            && inside(section.addr)
    });
    let only_dynamic = writable.all(|section| section.sh_type == SHT_DYNAMIC && section.offset == dynamic.offset);
    !sections.is_empty() && only_dynamic
}

/// The `.dynamic` and `.dynstr` section headers that describe the tables being copied, and
/// `.dynamic` where it stays (so a `_DYNAMIC` symbol an earlier tool left stale is put
/// right while we are editing the file anyway).
fn moved_sections(
    sections: &[SectionHeader],
    dynamic: &Dynamic,
    dynstr_offset: u64,
    block: &Block,
    block_vaddr: u64,
) -> Vec<MovedSection> {
    let old_strtab = dynamic.value(DT_STRTAB);
    let mut moved = Vec::new();
    for (index, section) in sections.iter().enumerate() {
        let is_dynamic = section.sh_type == SHT_DYNAMIC && section.offset == dynamic.offset;
        let is_dynstr = section.sh_type == SHT_STRTAB
            && section.flags & SHF_ALLOC != 0
            && Some(section.addr) == old_strtab
            && section.offset == dynstr_offset;
        if is_dynamic && !block.moves_dynamic {
            moved.push(MovedSection {
                index,
                old_addr: section.addr,
                old_size: section.size,
                new_addr: section.addr,
                is_dynamic,
                moves: false,
            });
        } else if is_dynamic || is_dynstr {
            let at = if is_dynamic { block.dynamic_at } else { block.dynstr_at };
            moved.push(MovedSection {
                index,
                old_addr: section.addr,
                old_size: section.size,
                new_addr: block_vaddr + at,
                is_dynamic,
                moves: true,
            });
        }
    }
    moved
}

/// The new table: `PT_PHDR` and `PT_DYNAMIC` point into the block, the block's `PT_LOAD`
/// sits among the loads in address order (ld.so and the kernel size the mapping from the
/// first and last), and a writable load left without a writable section loses `PF_W`.
fn new_program_headers(
    elf: &ElfFile,
    sections: &[SectionHeader],
    moved: &[MovedSection],
    block: &Block,
    place: layout::Placement,
) -> Vec<ProgramHeader> {
    // Writable when it holds `.dynamic`: ld.so writes DT_DEBUG, and glibc before 2.35
    // relocates `.dynamic` entries in place.
    let new_load = ProgramHeader {
        p_type: PT_LOAD,
        flags: if block.moves_dynamic { PF_R | PF_W } else { PF_R },
        offset: place.offset,
        vaddr: place.vaddr,
        paddr: place.vaddr,
        filesz: block.len,
        memsz: block.len,
        align: layout::page_size(elf.header.machine),
    };
    let insert_before = elf.phdrs.iter().position(|phdr| phdr.p_type == PT_LOAD && phdr.vaddr > place.vaddr);
    let insert_at = insert_before
        .or_else(|| elf.phdrs.iter().rposition(|phdr| phdr.p_type == PT_LOAD).map(|last| last + 1))
        .unwrap_or(elf.phdrs.len());
    let first_load = elf.phdrs.iter().position(|phdr| phdr.p_type == PT_LOAD);
    let mut phdrs = Vec::with_capacity(elf.phdrs.len() + 1);
    for (index, phdr) in elf.phdrs.iter().enumerate() {
        if index == insert_at {
            phdrs.push(new_load);
        }
        let mut phdr = *phdr;
        match phdr.p_type {
            PT_PHDR => place_segment(&mut phdr, place.offset, place.vaddr, block.pht_size),
            PT_DYNAMIC if block.moves_dynamic => place_segment(
                &mut phdr,
                place.offset + block.dynamic_at,
                place.vaddr + block.dynamic_at,
                block.dynamic_size,
            ),
            // The first load never changes (a non-PIE program's must stay as linked).
            PT_LOAD if Some(index) != first_load && left_without_writable_section(&phdr, sections, moved) => {
                phdr.flags &= !PF_W;
            }
            _ => {}
        }
        phdrs.push(phdr);
    }
    if insert_at == elf.phdrs.len() {
        phdrs.push(new_load);
    }
    phdrs
}

/// A writable load that held a moved table and holds no other writable section: what an
/// earlier grown layout (ours or patchelf's) leaves behind once its tables move again.
/// Without section headers nothing is known, and nothing changes.
fn left_without_writable_section(load: &ProgramHeader, sections: &[SectionHeader], moved: &[MovedSection]) -> bool {
    let inside = |addr: u64| addr >= load.vaddr && addr < load.vaddr.saturating_add(load.memsz);
    let held_moved = moved.iter().any(|section| section.moves && inside(section.old_addr));
    let writable = sections.iter().enumerate().any(|(index, section)| {
        section.flags & (SHF_ALLOC | SHF_WRITE) == SHF_ALLOC | SHF_WRITE
            && (section.size > 0 || section.sh_type == SHT_NOBITS)
            && !moved.iter().any(|moved| moved.moves && moved.index == index)
            && inside(section.addr)
    });
    load.flags & PF_W != 0 && held_moved && !writable && !sections.is_empty()
}

fn place_segment(phdr: &mut ProgramHeader, offset: u64, vaddr: u64, size: u64) {
    phdr.offset = offset;
    phdr.vaddr = vaddr;
    phdr.paddr = vaddr;
    phdr.filesz = size;
    phdr.memsz = size;
}
