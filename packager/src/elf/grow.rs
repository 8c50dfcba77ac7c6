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
//!                                    | zero padding      | up to O, a multiple of the largest
//!                                    +-------------------+ O   PT_LOAD alignment
//!                                    | PHT (n+1 entries) | <- PT_PHDR; new PT_LOAD (R+W) covers
//!                                    | .dynamic copy     | <- PT_DYNAMIC; O..new end at vaddr V
//!                                    | .dynstr + RPATH   | <- DT_STRTAB, DT_STRSZ, DT_RPATH
//!                                    +-------------------+ new end
//! ```
//!
//! - `V - O` equals the first `PT_LOAD`'s `p_vaddr - p_offset`: kernels such as RHEL 8's
//!   4.18 compute `AT_PHDR` as load bias + that delta + `e_phoff`, and must find the moved
//!   table. `V` lies above the memory image (`.bss` included) of every existing `PT_LOAD`.
//! - The new `PT_LOAD` is writable: ld.so writes `DT_DEBUG`, and glibc before 2.35 relocates
//!   `.dynamic` entries in place. It is listed right after the last existing `PT_LOAD`, so
//!   loads stay sorted by address (ld.so and the kernel size the mapping from first and last).
//! - The old `.dynstr` bytes are copied unchanged and the RPATH appended after them, so every
//!   existing string offset (NEEDED, SONAME, symbol and version names) stays valid.
//! - Works the same on a file whose table an earlier patchelf run already moved: `e_phoff`
//!   is read wherever it points, and the copy is made from there.
//!
//! Owns: the grown layout. Does not own: choosing it (`rpath`).

use super::parse::{Dynamic, ElfFile, ProgramHeader, SectionHeader, DT_STRSZ, DT_STRTAB, PT_DYNAMIC, PT_LOAD, PT_PHDR};
use super::rpath::{diff_patch, encode_dynamic, sorted_patches, with_rpath};
use super::source::Source;
use super::splice::EditStrategy;
use super::{ElfError, RpathEdit};

const PF_R: u32 = 4;
const PF_W: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_DYNAMIC: u32 = 6;
const SHF_ALLOC: u64 = 2;
/// Zero padding we are willing to append to reach an aligned offset above a large `.bss`.
const MAX_PADDING: u64 = 64 << 20;
const PAGE: u64 = 4096;

pub(crate) fn plan_grown(
    source: &dyn Source,
    elf: &ElfFile,
    dynamic: &Dynamic,
    sections: &[SectionHeader],
    rpath: &str,
) -> Result<RpathEdit, ElfError> {
    let unsupported = |reason: String| ElfError::Unsupported { path: source.path().to_path_buf(), reason };
    let Some((dynstr_offset, dynstr)) = &elf.dynstr else {
        return Err(unsupported("the dynamic section has no DT_STRTAB to extend".into()));
    };
    let loads: Vec<&ProgramHeader> = elf.phdrs.iter().filter(|phdr| phdr.p_type == PT_LOAD).collect();
    let Some(first) = loads.first() else { return Err(source.malformed("no PT_LOAD".into())) };
    let align = loads.iter().map(|phdr| phdr.align).max().unwrap_or(PAGE).max(PAGE);
    let Some(delta) = first.vaddr.checked_sub(first.offset).filter(|delta| delta % align == 0) else {
        return Err(unsupported(format!(
            "the first PT_LOAD maps offset {:#x} to {:#x}, not a multiple of the alignment {align:#x}",
            first.offset, first.vaddr
        )));
    };
    let memory_end = loads.iter().map(|phdr| phdr.vaddr + phdr.memsz).max().unwrap_or(0);
    let old_len = source.len();
    let checked = |value: Option<u64>| value.ok_or_else(|| source.malformed("addresses overflow".into()));
    let mut block_offset = checked(align_up(old_len, align))?;
    if checked(block_offset.checked_add(delta))? < memory_end {
        block_offset = checked(align_up(memory_end - delta, align))?;
    }
    let block_vaddr = checked(block_offset.checked_add(delta))?;
    // Far below any real address space; keeps every address computed below from overflowing.
    if block_vaddr > u64::MAX / 4 {
        return Err(unsupported(format!("the new segment would start at {block_vaddr:#x}")));
    }
    let padding = block_offset - old_len;
    if padding > MAX_PADDING {
        return Err(unsupported(format!("the new segment would need {padding} bytes of padding")));
    }

    // Block layout: PHT, then .dynamic (8-aligned), then .dynstr.
    let phnum = elf.phdrs.len() + 1;
    // 0xffff would mean "the count is elsewhere" (PN_XNUM).
    let Some(new_phnum) = u16::try_from(phnum).ok().filter(|phnum| *phnum < 0xffff) else {
        return Err(unsupported("too many program headers to add one".into()));
    };
    let pht_size = phnum as u64 * 56;
    let dynamic_at = align_up(pht_size, 16).unwrap_or(pht_size);
    let rpath_offset = dynstr.len() as u64;
    let mut entries = with_rpath(&dynamic.entries, rpath_offset);
    let slots = dynamic.slots.max(entries.len() as u64 + 1);
    let dynamic_size = slots * 16;
    let dynstr_at = dynamic_at + dynamic_size;
    let mut new_dynstr = dynstr.clone();
    new_dynstr.extend_from_slice(rpath.as_bytes());
    new_dynstr.push(0);
    for entry in &mut entries {
        match entry.tag {
            DT_STRTAB => entry.value = block_vaddr + dynstr_at,
            DT_STRSZ => entry.value = new_dynstr.len() as u64,
            _ => {}
        }
    }
    let block_len = dynstr_at + new_dynstr.len() as u64;

    let new_load = ProgramHeader {
        p_type: PT_LOAD,
        flags: PF_R | PF_W,
        offset: block_offset,
        vaddr: block_vaddr,
        paddr: block_vaddr,
        filesz: block_len,
        memsz: block_len,
        align,
    };
    let last_load = elf.phdrs.iter().rposition(|phdr| phdr.p_type == PT_LOAD).unwrap_or(0);
    let mut phdrs = Vec::with_capacity(phnum);
    for (index, phdr) in elf.phdrs.iter().enumerate() {
        let mut phdr = *phdr;
        match phdr.p_type {
            PT_PHDR => place(&mut phdr, block_offset, block_vaddr, pht_size),
            PT_DYNAMIC => place(&mut phdr, block_offset + dynamic_at, block_vaddr + dynamic_at, dynamic_size),
            _ => {}
        }
        phdrs.push(phdr);
        if index == last_load {
            phdrs.push(new_load);
        }
    }

    let mut appended = vec![0u8; padding as usize];
    appended.reserve(block_len as usize);
    for phdr in &phdrs {
        appended.extend_from_slice(&phdr.to_elf64_le());
    }
    appended.resize((padding + dynamic_at) as usize, 0);
    appended.extend_from_slice(&encode_dynamic(&entries, slots));
    appended.extend_from_slice(&new_dynstr);

    let mut patches = Vec::new();
    let old_header = source.read(0, 64, "ELF header")?;
    let mut new_header = old_header.clone();
    new_header[32..40].copy_from_slice(&block_offset.to_le_bytes());
    new_header[56..58].copy_from_slice(&new_phnum.to_le_bytes());
    patches.extend(diff_patch(0, &old_header, &new_header));
    let old_strtab = dynamic.value(DT_STRTAB);
    for section in sections {
        let moved = if section.sh_type == SHT_DYNAMIC && section.offset == dynamic.offset {
            Some((block_offset + dynamic_at, block_vaddr + dynamic_at, dynamic_size))
        } else if section.sh_type == SHT_STRTAB
            && section.flags & SHF_ALLOC != 0
            && Some(section.addr) == old_strtab
            && section.offset == *dynstr_offset
        {
            Some((block_offset + dynstr_at, block_vaddr + dynstr_at, new_dynstr.len() as u64))
        } else {
            None
        };
        if let Some((offset, address, size)) = moved {
            let old = source.read(section.header_offset, 64, "section header")?;
            let mut new = old.clone();
            new[16..24].copy_from_slice(&address.to_le_bytes());
            new[24..32].copy_from_slice(&offset.to_le_bytes());
            new[32..40].copy_from_slice(&size.to_le_bytes());
            patches.extend(diff_patch(section.header_offset, &old, &new));
        }
    }
    Ok(RpathEdit {
        original_len: old_len,
        patches: sorted_patches(source, patches)?,
        appended,
        strategy: EditStrategy::Grown,
    })
}

fn place(phdr: &mut ProgramHeader, offset: u64, vaddr: u64, size: u64) {
    phdr.offset = offset;
    phdr.vaddr = vaddr;
    phdr.paddr = vaddr;
    phdr.filesz = size;
    phdr.memsz = size;
}

fn align_up(value: u64, align: u64) -> Option<u64> {
    value.checked_add(align - 1).map(|value| value / align * align)
}
