//! Where a grown layout's appended block goes, and the facts about a layout that an edit
//! must keep (where the loader and the kernel find the program header table).
//!
//! The block always starts at the end of the file, rounded up to the machine's page size,
//! so a file grows by the block plus less than one page whatever holes its address space
//! has (a kpack-split library keeps the addresses of a 1.3 GB `.hip_fatbin` it no longer
//! carries). Its address is congruent to its offset modulo the page size, as the ELF spec
//! and the loaders require, and chosen in this order:
//!
//! 1. offset + the first `PT_LOAD`'s `p_vaddr - p_offset`, when nothing is mapped there:
//!    above the memory image, or inside a hole of the address space. Kernels before 5.18
//!    (RHEL 8's 4.18) pass `AT_PHDR` = load bias + that delta + `e_phoff`, so this keeps a
//!    moved program header table where they look for it.
//! 2. For a file no kernel starts (a shared library), the first page above the memory
//!    image: nothing computes its table's address from the first `PT_LOAD`.
//! 3. For a program, the lowest free address that keeps rule 1, reached by zero padding,
//!    refused past [`MAX_PADDING`].
//!
//! Owns: placement and layout facts. Does not own: the block's contents (`grow`).

use super::consts::{EM_AARCH64, EM_IA_64, EM_LOONGARCH, EM_MIPS, EM_PPC, EM_PPC64};
use super::parse::{ElfFile, ProgramHeader, DF_1_PIE, DT_FLAGS_1, ET_EXEC, PT_LOAD, PT_PHDR};
use super::source::Source;
use super::{ElfError, Refusal};

/// Zero padding we append at most so that a program's moved table stays where old kernels
/// look for it (rule 3). Shared libraries never need padding.
const MAX_PADDING: u64 = 64 << 20;

/// The largest page size a kernel for `machine` may use, as patchelf assumes: a segment
/// congruent modulo it maps on every kernel of that machine.
pub(crate) fn page_size(machine: u16) -> u64 {
    match machine {
        EM_MIPS | EM_PPC | EM_PPC64 | EM_IA_64 | EM_AARCH64 | EM_LOONGARCH => 0x10000,
        _ => 0x1000,
    }
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

/// Chooses the block's offset and address (see the module doc for the rules).
pub(crate) fn place_block(source: &dyn Source, elf: &ElfFile, len: u64) -> Result<Placement, ElfError> {
    let refuse =
        |reason: String| ElfError::Unsupported { path: source.path().to_path_buf(), reason, refusal: Refusal::Layout };
    let overflow = || source.malformed("addresses overflow".into());
    let page = page_size(elf.header.machine);
    let loads: Vec<&ProgramHeader> = elf.phdrs.iter().filter(|phdr| phdr.p_type == PT_LOAD).collect();
    let Some(first) = loads.first() else { return Err(source.malformed("no PT_LOAD".into())) };
    let mut occupied = Vec::with_capacity(loads.len());
    for load in &loads {
        let end = load.vaddr.checked_add(load.memsz).and_then(|end| align_up(end, page)).ok_or_else(overflow)?;
        occupied.push((align_down(load.vaddr, page), end));
    }
    let free = |vaddr: u64| -> bool {
        let (Some(start), Some(end)) = (Some(align_down(vaddr, page)), vaddr.checked_add(len)) else { return false };
        let Some(end) = align_up(end, page) else { return false };
        occupied.iter().all(|(taken_start, taken_end)| end <= *taken_start || start >= *taken_end)
    };
    let offset = align_up(source.len(), page).ok_or_else(overflow)?;
    let delta = first.vaddr.checked_sub(first.offset).filter(|delta| delta % page == 0);
    let placement = match delta {
        Some(delta) if offset.checked_add(delta).is_some_and(free) => Placement { offset, vaddr: offset + delta },
        _ if !runs_as_program(elf) => {
            let above = occupied.iter().map(|(_, end)| *end).max().unwrap_or(0);
            Placement { offset, vaddr: above }
        }
        Some(delta) => padded_for_program(&occupied, delta, offset, &free).ok_or_else(overflow)?,
        None => {
            return Err(refuse(format!(
                "the first PT_LOAD maps offset {:#x} to {:#x}, not a multiple of the page size {page:#x}, so a \
                 program's moved program header table cannot be placed where kernels look for it",
                first.offset, first.vaddr
            )))
        }
    };
    // Far below any real address space; keeps every address computed from it from overflowing.
    if placement.vaddr > u64::MAX / 4 {
        return Err(refuse(format!("the new segment would start at {:#x}", placement.vaddr)));
    }
    let padding = placement.offset - source.len();
    if padding > MAX_PADDING {
        return Err(refuse(format!(
            "a program's moved program header table must stay at the first PT_LOAD's address + e_phoff \
             (kernels before 5.18 look for it there), which would take {padding} bytes of padding"
        )));
    }
    Ok(placement)
}

/// Rule 3: the lowest page boundary at the end of an occupied range, at or above
/// `offset + delta`, where the block fits.
fn padded_for_program(
    occupied: &[(u64, u64)],
    delta: u64,
    offset: u64,
    free: &dyn Fn(u64) -> bool,
) -> Option<Placement> {
    let lowest = offset.checked_add(delta)?;
    let mut ends: Vec<u64> = occupied.iter().map(|(_, end)| *end).filter(|end| *end >= lowest).collect();
    ends.sort_unstable();
    let vaddr = ends.into_iter().find(|end| free(*end))?;
    Some(Placement { offset: vaddr - delta, vaddr })
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
        // end, where the block then goes (rule 3 is asked only when rule 1 failed).
        let placement = padded_for_program(&occupied, 0, 0x3000, &free);
        assert_eq!(placement, Some(Placement { offset: 0x4000_2000, vaddr: 0x4000_2000 }));
        assert_eq!(padded_for_program(&occupied, 0, 0x5000_0000, &free), None);
    }

    #[test]
    fn page_sizes_follow_the_machine() {
        assert_eq!(page_size(62), 0x1000);
        assert_eq!(page_size(EM_AARCH64), 0x10000);
    }
}
