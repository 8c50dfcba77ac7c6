//! The grown layout: when the new RPATH does not fit in place, append one new `PT_LOAD`
//! holding a copy of `.dynstr` with the RPATH added (and, when they cannot stay, the program
//! header table and `.dynamic`), and repoint the headers at the copies. Every original byte
//! keeps its offset, so the edit is a few same-length overwrites plus an appended block,
//! which `SplicedReader` streams.
//!
//! ```text
//!  before                            after
//!  +-------------------+ 0           +-------------------+ 0
//!  | ELF header        |             | ELF header        | e_phnum + 1 (e_phoff -> copy if moved)
//!  | PHT (n entries)   |  first      | PHT (n+1 entries) | grown in place over unused bytes, or
//!  | .dynsym .dynstr   |  PT_LOAD    | .dynsym .dynstr   | moved; the first PT_LOAD of a
//!  | .text ...         |             | .text ...         | non-PIE executable stays read-only
//!  | .dynamic          |  RW load,   | .dynamic          | rewritten in place when its slots take
//!  | .got ...          |  RELRO      | .got ...          | the RPATH entry: still RELRO, still RW
//!  | .data ...         |             | .data ...         |
//!  | section headers   |             | section headers   | .dynstr (.dynamic) headers -> copies
//!  +-------------------+ end         +-------------------+ old end
//!                                    | < 16 bytes of 0   |
//!                                    +-------------------+ O
//!                                    | PHT (n+1 entries) | <- PT_PHDR, if it could not grow in place
//!                                    | .dynamic copy     | <- PT_DYNAMIC, if it could not stay
//!                                    | .dynstr + RPATH   | <- DT_STRTAB, DT_STRSZ, DT_RPATH
//!                                    +-------------------+ new end; new PT_LOAD maps O.. at V
//! ```
//!
//! - `V` is free address space congruent to `O` modulo the page size: above the memory
//!   image, in a hole of it, or below a non-PIE program's image (`layout` chooses, keeping
//!   old kernels' `AT_PHDR` rule where a program needs it). The file grows by the block plus
//!   less than 16 bytes, however far its segments are spread in memory (the exceptions, in
//!   `layout`: a table in the block of a file without `PT_PHDR`, and a PIE whose image
//!   reaches past the end of the file when its table must move).
//! - The program header table grows in place when the bytes after it are unused (an earlier
//!   patchelf run leaves such room), or moves into the unused tail of a read-only load's
//!   last page, which grows to map it (`layout::table_place`); otherwise its copy opens
//!   the block.
//! - `.dynamic` stays where it is whenever its slots take the new entries (GNU ld leaves
//!   spare `DT_NULL`s, and an existing RPATH/RUNPATH entry is retagged): it keeps its
//!   `PT_GNU_RELRO` protection and its writable load. Otherwise it moves into the block,
//!   which is then writable: ld.so writes `DT_DEBUG`, and glibc before 2.35 relocates
//!   `.dynamic` entries in place. A read-only block stays clear of what relocations reach
//!   (`reach`). The new load is listed among the loads in address order (ld.so and the
//!   kernel size the mapping from the first and last).
//! - The old `.dynstr` bytes are copied unchanged and the RPATH (and the new names of
//!   renamed needed libraries) appended after them, so every existing string offset
//!   (NEEDED, SONAME, symbol and version names) stays valid; a renamed library's
//!   `DT_NEEDED` entries and `Verneed` file names point at its new name.
//! - The section headers of `.dynamic` and `.dynstr`, and the symbols defined in them
//!   (`_DYNAMIC`, section symbols), follow the copies (`symbols`), so `eu-elflint` finds the
//!   file as consistent as before. A writable load that an earlier grown layout (ours or
//!   patchelf's) left holding only the old tables becomes read-only, unless a relocation
//!   reaches into it.
//! - Works the same on a file whose table an earlier patchelf run already moved: `e_phoff`
//!   is read wherever it points, and the copy is made from there.
//!
//! Owns: the grown layout. Does not own: choosing it (`rpath`).

use std::collections::BTreeMap;

use super::layout::{self, align_up, BlockShape, TablePlace};
use super::needed::Renames;
use super::parse::{
    DynEntry, Dynamic, ElfFile, ProgramHeader, SectionHeader, DT_STRSZ, DT_STRTAB, PF_R, PF_W, PT_DYNAMIC, PT_LOAD,
    PT_PHDR, SHF_ALLOC, SHF_WRITE, SHT_DYNAMIC, SHT_NOBITS, SHT_STRTAB,
};
use super::patch::{diff_patch, encode_dynamic, sorted_patches, with_rpath};
use super::reach::{relocation_reach, Reach};
use super::source::Source;
use super::splice::BytePatch;
use super::splice::EditStrategy;
use super::symbols::{moved_symbol_patches, MovedSection};
use super::{ElfError, Refusal, RpathEdit};

/// The size of one program header (Elf64_Phdr).
const PHDR_SIZE: u64 = 56;

/// Where `.dynamic` is after the edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DynamicPlace {
    /// Rewritten where it is: its slots take the new entries.
    Kept,
    /// Copied, with one more slot, into the block.
    InBlock,
}

/// The appended block's contents, laid out from offset 0 of the block.
struct Block {
    phnum: u16,
    table: TablePlace,
    /// The new table's size (`phnum` entries), wherever it is.
    pht_size: u64,
    dynamic: DynamicPlace,
    dynamic_at: u64,
    dynamic_size: u64,
    slots: u64,
    dynstr_at: u64,
    dynstr: Vec<u8>,
    len: u64,
}

/// What the appended `.dynstr` gains, and the dynamic entries and `vn_file` fields that
/// point at it.
struct NewStrings {
    /// Appended after the old table: each string once, NUL-terminated.
    bytes: Vec<u8>,
    /// The dynamic entries, with the search path and renamed libraries pointing at `bytes`.
    entries: Vec<DynEntry>,
    /// (file offset of a `vn_file` field, its new `.dynstr` offset).
    verneed: Vec<(u64, u64)>,
    base: u64,
    offsets: BTreeMap<String, u64>,
}

impl NewStrings {
    /// The search path first (as a search-path-only edit has always laid it out), then
    /// the new names in the order they are met.
    fn new(base: u64, dynamic: &Dynamic, rpath: Option<&str>, renames: &Renames) -> NewStrings {
        let mut strings = NewStrings {
            bytes: Vec::new(),
            entries: dynamic.entries.clone(),
            verneed: Vec::new(),
            base,
            offsets: BTreeMap::new(),
        };
        let rpath_at = rpath.map(|rpath| strings.add(rpath));
        for (index, _, new) in &renames.entries {
            let at = strings.add(new);
            strings.entries[*index].value = at;
        }
        for (file, new) in &renames.verneed {
            let at = strings.add(new);
            strings.verneed.push((file.field_offset, at));
        }
        if let Some(at) = rpath_at {
            strings.entries = with_rpath(&strings.entries, at);
        }
        strings
    }

    fn add(&mut self, text: &str) -> u64 {
        if let Some(at) = self.offsets.get(text) {
            return *at;
        }
        let at = self.base + self.bytes.len() as u64;
        self.bytes.extend_from_slice(text.as_bytes());
        self.bytes.push(0);
        self.offsets.insert(text.to_owned(), at);
        at
    }

    /// The `vn_file` fields rewritten (32-bit little-endian words).
    fn verneed_patches(&self, source: &dyn Source) -> Result<Vec<BytePatch>, ElfError> {
        self.verneed
            .iter()
            .map(|(field, at)| {
                let value =
                    u32::try_from(*at).map_err(|_| source.malformed("the string table outgrows 32 bits".into()))?;
                Ok(BytePatch { offset: *field, bytes: value.to_le_bytes().to_vec() })
            })
            .collect()
    }
}

pub(crate) fn plan_grown(
    source: &dyn Source,
    elf: &ElfFile,
    dynamic: &Dynamic,
    sections: &[SectionHeader],
    rpath: Option<&str>,
    renames: &Renames,
) -> Result<RpathEdit, ElfError> {
    let refuse =
        |reason: String| ElfError::Unsupported { path: source.path().to_path_buf(), reason, refusal: Refusal::Layout };
    let Some((dynstr_offset, dynstr)) = &elf.dynstr else {
        return Err(refuse("the dynamic section has no DT_STRTAB to extend".into()));
    };
    let strings = NewStrings::new(dynstr.len() as u64, dynamic, rpath, renames);
    let table = layout::table_place(source.len(), elf, dynamic, sections);
    let block = block_layout(elf, dynamic, dynstr, &strings, table)
        .ok_or_else(|| refuse("too many program headers to add one".into()))?;
    let reach = relocation_reach(source, sections)?;
    let shape = BlockShape { len: block.len, table, writable: block.dynamic == DynamicPlace::InBlock };
    let place = layout::place_block(source, elf, shape, &reach)?;
    let mut entries = strings.entries.clone();
    for entry in &mut entries {
        match entry.tag {
            DT_STRTAB => entry.value = place.vaddr + block.dynstr_at,
            DT_STRSZ => entry.value = block.dynstr.len() as u64,
            _ => {}
        }
    }
    let moved = moved_sections(sections, dynamic, *dynstr_offset, &block, place.vaddr);
    let phdrs = new_program_headers(elf, sections, &moved, &block, place, &reach);
    let table_bytes: Vec<u8> = phdrs.iter().flat_map(|phdr| phdr.to_elf64_le()).collect();

    let padding = place.offset - source.len();
    let mut appended = vec![0u8; padding as usize];
    appended.reserve(block.len as usize);
    let mut patches = Vec::new();
    let table_offset = match block.table {
        TablePlace::InBlock => {
            appended.extend_from_slice(&table_bytes);
            place.offset
        }
        TablePlace::GrownInPlace => elf.header.phoff,
        TablePlace::InSlack { offset, .. } => offset,
    };
    if block.table != TablePlace::InBlock {
        let old = source.read(table_offset, block.pht_size, "program header table")?;
        patches.extend(diff_patch(table_offset, &old, &table_bytes));
    }
    match block.dynamic {
        DynamicPlace::InBlock => {
            appended.resize((padding + block.dynamic_at) as usize, 0);
            appended.extend_from_slice(&encode_dynamic(&entries, block.slots));
        }
        DynamicPlace::Kept => {
            let old = encode_dynamic(&dynamic.entries, dynamic.slots);
            patches.extend(diff_patch(dynamic.offset, &old, &encode_dynamic(&entries, dynamic.slots)));
        }
    }
    appended.resize((padding + block.dynstr_at) as usize, 0);
    appended.extend_from_slice(&block.dynstr);

    let old_header = source.read(0, 64, "ELF header")?;
    let mut new_header = old_header.clone();
    new_header[32..40].copy_from_slice(&table_offset.to_le_bytes());
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
    patches.extend(strings.verneed_patches(source)?);
    Ok(RpathEdit {
        original_len: source.len(),
        patches: sorted_patches(source, patches)?,
        appended,
        strategy: EditStrategy::Grown,
    })
}

/// Block layout: the table copy if it moves, then `.dynamic` (16-aligned) if it moves,
/// then `.dynstr` with the new strings appended. The old `.dynstr` is copied unchanged, so
/// every existing string offset stays valid.
fn block_layout(
    elf: &ElfFile,
    dynamic: &Dynamic,
    dynstr: &[u8],
    strings: &NewStrings,
    table: TablePlace,
) -> Option<Block> {
    let count = elf.phdrs.len() + 1;
    // 0xffff would mean "the count is elsewhere" (PN_XNUM).
    let phnum = u16::try_from(count).ok().filter(|phnum| *phnum < 0xffff)?;
    let pht_size = count as u64 * PHDR_SIZE;
    let entries = strings.entries.len() as u64;
    // One DT_NULL must stay to end the array.
    let place = if entries < dynamic.slots { DynamicPlace::Kept } else { DynamicPlace::InBlock };
    let slots = dynamic.slots.max(entries + 1);
    let table_len = if table == TablePlace::InBlock { pht_size } else { 0 };
    let (dynamic_at, dynamic_size) = match place {
        DynamicPlace::InBlock => (align_up(table_len, 16)?, slots * 16),
        DynamicPlace::Kept => (table_len, 0),
    };
    let dynstr_at = dynamic_at + dynamic_size;
    let mut new_dynstr = dynstr.to_vec();
    new_dynstr.extend_from_slice(&strings.bytes);
    let len = dynstr_at + new_dynstr.len() as u64;
    Some(Block {
        phnum,
        table,
        pht_size,
        dynamic: place,
        dynamic_at,
        dynamic_size,
        slots,
        dynstr_at,
        dynstr: new_dynstr,
        len,
    })
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
        if is_dynamic && block.dynamic == DynamicPlace::Kept {
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

/// The new table: `PT_PHDR` and `PT_DYNAMIC` describe the moved tables, the block's
/// `PT_LOAD` sits among the loads in address order (ld.so and the kernel size the mapping
/// from the first and last), and a writable load left without a writable section loses
/// `PF_W` unless a relocation reaches into it (eu-elflint would call that a text
/// relocation). Every other flag stays as the linker set it.
fn new_program_headers(
    elf: &ElfFile,
    sections: &[SectionHeader],
    moved: &[MovedSection],
    block: &Block,
    place: layout::Placement,
    reach: &Reach,
) -> Vec<ProgramHeader> {
    let dynamic_moves = block.dynamic == DynamicPlace::InBlock;
    // Writable when it holds `.dynamic`: ld.so writes DT_DEBUG, and glibc before 2.35
    // relocates `.dynamic` entries in place.
    let new_load = ProgramHeader {
        p_type: PT_LOAD,
        flags: if dynamic_moves { PF_R | PF_W } else { PF_R },
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
    let slack = match block.table {
        TablePlace::InSlack { load, offset } => Some((load, offset)),
        TablePlace::GrownInPlace | TablePlace::InBlock => None,
    };
    let mut phdrs = Vec::with_capacity(elf.phdrs.len() + 1);
    for (index, phdr) in elf.phdrs.iter().enumerate() {
        if index == insert_at {
            phdrs.push(new_load);
        }
        let mut phdr = *phdr;
        match phdr.p_type {
            PT_PHDR => match block.table {
                TablePlace::InBlock => place_segment(&mut phdr, place.offset, place.vaddr, block.pht_size),
                TablePlace::InSlack { load, offset } => {
                    let holder = &elf.phdrs[load];
                    place_segment(&mut phdr, offset, holder.vaddr + (offset - holder.offset), block.pht_size)
                }
                TablePlace::GrownInPlace => {
                    phdr.filesz = block.pht_size;
                    phdr.memsz = block.pht_size;
                }
            },
            // The load whose unused tail now holds the table maps it.
            PT_LOAD if slack.is_some_and(|(load, _)| load == index) => {
                let table_end = slack.map_or(0, |(_, offset)| offset + block.pht_size);
                phdr.filesz = table_end - phdr.offset;
                phdr.memsz = phdr.filesz;
            }
            PT_DYNAMIC if dynamic_moves => place_segment(
                &mut phdr,
                place.offset + block.dynamic_at,
                place.vaddr + block.dynamic_at,
                block.dynamic_size,
            ),
            // The first load never changes (a non-PIE program's must stay as linked).
            PT_LOAD
                if Some(index) != first_load
                    && left_without_writable_section(&phdr, sections, moved)
                    && !reach.touches(phdr.vaddr, phdr.vaddr.saturating_add(phdr.memsz)) =>
            {
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
