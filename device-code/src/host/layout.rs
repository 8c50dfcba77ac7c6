//! The new layout of a split host binary, planned from its headers alone.
//!
//! Let F be `.hip_fatbin`, inside a read-only `PT_LOAD` L. The new program header table (one
//! entry more than before) goes at the start of F (8-aligned), the marker right after it, then
//! zeros up to the next page boundary K. The whole pages [K, R) of F leave the file (R is F's
//! last page boundary, brought down so that the D = R − K bytes removed are a multiple of
//! every `PT_LOAD`'s alignment, keeping offset ≡ address for every segment after them); what
//! follows moves down by D. L becomes L1 (its bytes up to K, with memory up to R's address as
//! zero fill: nothing reads those pages any more) and L3 (the rest of L from R, now at file
//! offset K). Because K is a page boundary, L1's file part ends on a page and L1 and L3
//! share no file page, so neither the kernel nor ld.so has to clear part of a read-only page.
//! When F ends L's file bytes there is no L3: L1's zero fill runs to L's end (F's last
//! partial page included, its bytes zeroed and left unmapped in the file), the count of
//! program headers stays, and the table is rewritten where it was. Without a whole page of F
//! past K nothing is removed, and F only gets the marker and zeros.
//!
//! `.hip_fatbin` becomes `SHT_NOBITS` at file offset K (L1's end, where ELF puts a segment's
//! zero fill), covering [K, R) in memory, or [K, F's end) without L3: the zero-fill pages that
//! once held its bytes. Its addresses are kept in that every page it occupied stays reserved
//! and mapped at the same address, but its first page (now the table and the marker) and,
//! with L3, its last partial page (zeroed bytes in L3's file part) are no longer named by it;
//! symbols defined in it are moved inside what it still names (`symbols`).
//! `.rocm_kpack_ref` is added as the last section header, its name appended to a copy of
//! `.shstrtab` written after the file's last bytes, followed by the section header table (the
//! old table is dropped when it ended the file).
//!
//! GNU objcopy and strip (BFD) lay program headers out right after the ELF header, so they
//! cannot rewrite a file with more program headers than fit there (this layout with L3, as
//! rocm-kpack's): strip before the split, or with llvm-strip, which keeps the segments.
//!
//! The kernel gives an executable AT_PHDR = its first `PT_LOAD`'s (address − offset) +
//! `e_phoff` before Linux 5.18, and the address inside the `PT_LOAD` holding `e_phoff` since:
//! the two agree only when L's address − offset equals the first `PT_LOAD`'s, so an
//! executable (`PT_INTERP`) whose table would move is refused otherwise. ld.so finds a
//! shared object's table through `PT_PHDR`, or the `PT_LOAD` holding `e_phoff`: L1 holds it.
//!
//! Owns: those decisions and the checks that make them safe. Must not know: how the pieces
//! are written (`output`) or what the marker says (`marker`).

use crate::elf_headers::{
    ProgramHeader, SectionHeader, ET_DYN, PHDR_SIZE, PT_LOAD, PT_PHDR, SHDR_SIZE, SHF_ALLOC, SHT_NOBITS, SHT_PROGBITS,
};
use crate::host::inspect::layout_error;
use crate::host::output::{self, Edit, Piece};
use crate::host::relocations::{relocation_error, R_X86_64_RELATIVE};
use crate::host::{marker, FatState, HostBinary, HostTransform, KpackRef, MAGIC_KPACK};
use crate::DeviceCodeError;

/// x86-64's page size: the granule of what leaves the file.
const PAGE: u64 = 4096;
const PF_W: u32 = 2;
const PT_INTERP: u32 = 3;
/// The largest marker the kpack runtime parses (its metadata bound, 64 KiB).
const MAX_MARKER: usize = 64 << 10;
/// The name of the marker's section.
pub(crate) const MARKER_SECTION: &[u8] = b".rocm_kpack_ref";

/// Where the table, the marker and the removed range fall in the input's file offsets.
#[derive(Clone, Copy, Debug)]
struct Placement {
    /// The new program header table's offset, when it moves into F.
    table: Option<u64>,
    /// The marker's offset.
    marker: u64,
    /// End of the bytes kept at the head of F (a page boundary when pages are removed).
    keep: u64,
    /// Start of what follows the removed range (`keep` when nothing is removed).
    resume: u64,
    /// Whether L keeps bytes after the removed range, in a `PT_LOAD` of their own (L3).
    split: bool,
}

impl Placement {
    fn removed(&self) -> u64 {
        self.resume - self.keep
    }
}

pub(crate) fn plan(binary: &HostBinary, reference: &KpackRef) -> Result<HostTransform, DeviceCodeError> {
    let path = binary.path();
    match binary.state {
        FatState::NotFat => return Err(DeviceCodeError::NotFat { path: path.to_path_buf() }),
        FatState::AlreadySplit => return Err(DeviceCodeError::AlreadySplit { path: path.to_path_buf() }),
        FatState::Fat => {}
    }
    let headers = &binary.headers;
    let fatbin_index = binary.fatbin.ok_or_else(|| layout_error(path, "no `.hip_fatbin` section".to_owned()))?;
    let fatbin = &headers.sections[fatbin_index];
    // Bounded first, so that no sum below can overflow on a hostile header.
    if !fatbin.has_file_bytes()
        || !headers.contains(fatbin.offset, fatbin.size)
        || fatbin.addr.checked_add(fatbin.size).is_none_or(|end| end > 1 << 62)
    {
        return Err(layout_error(path, "`.hip_fatbin` has no bytes inside the file".to_owned()));
    }
    check_wrappers(binary, fatbin)?;
    let fatbin_end = fatbin.offset + fatbin.size;
    let load_index = headers
        .segments
        .iter()
        .position(|segment| {
            segment.kind == PT_LOAD
                && segment.offset <= fatbin.offset
                && fatbin_end <= segment.offset.saturating_add(segment.filesz)
        })
        .ok_or_else(|| layout_error(path, "`.hip_fatbin` is not inside one loaded segment's file bytes".to_owned()))?;
    let load = headers.segments[load_index];
    if load.vaddr.wrapping_sub(load.offset) != fatbin.addr.wrapping_sub(fatbin.offset)
        || load.flags & PF_W != 0
        || load.vaddr.checked_add(load.memsz).is_none_or(|end| end > 1 << 62)
        || load.memsz < load.filesz
    {
        return Err(layout_error(path, "`.hip_fatbin` is not mapped read-only at its file offset".to_owned()));
    }
    check_neighbours(binary, fatbin_index, load_index)?;
    if headers.section(".rocm_kpack_ref").is_some() {
        return Err(layout_error(path, "it already has a `.rocm_kpack_ref` section".to_owned()));
    }

    let marker_bytes = marker::encode(reference)
        .map_err(|error| layout_error(path, format!("the marker cannot be encoded: {error}")))?;
    if marker_bytes.len() > MAX_MARKER {
        return Err(layout_error(
            path,
            format!("a marker of {} bytes; the kpack runtime reads at most {MAX_MARKER}", marker_bytes.len()),
        ));
    }
    let placement = place(binary, &load, fatbin, marker_bytes.len() as u64)?;
    let removed = placement.removed();
    // Offsets past the removed pages move down with their bytes; none but a zero-length
    // segment's can fall inside them (`check_neighbours`), and it goes to their start.
    let map = |offset: u64| {
        if offset >= placement.resume {
            offset - removed
        } else {
            offset.min(placement.keep)
        }
    };
    let to_address = |offset: u64| load.vaddr + (offset - load.offset);
    let marker_address = to_address(placement.marker);

    let segments = new_segments(headers.segments.as_slice(), load_index, &placement, map);
    let table_bytes: Vec<u8> = segments.iter().flat_map(ProgramHeader::encode).collect();

    let (names, mut sections) = new_sections(binary, fatbin_index, &placement, marker_address, marker_bytes.len())?;
    let old = &headers.header;
    let table_end = old.shoff + headers.sections.len() as u64 * SHDR_SIZE as u64;
    // The old section header table is dropped when it ends the file; else it stays, unused.
    let kept_end = if table_end == headers.file_size { old.shoff } else { headers.file_size };
    if kept_end < fatbin_end {
        return Err(layout_error(path, "the section header table lies inside `.hip_fatbin`".to_owned()));
    }
    let names_offset = map(kept_end);
    let section_table_offset = (names_offset + names.len() as u64).next_multiple_of(8);
    let names_index = usize::from(old.shstrndx);
    sections[names_index].offset = names_offset;
    sections[names_index].size = names.len() as u64;

    let mut header = old.clone();
    header.phoff = placement.table.unwrap_or(old.phoff);
    header.phnum = u16::try_from(segments.len()).expect("one program header more than a u16 count fits: checked");
    header.shoff = section_table_offset;
    header.shnum = u16::try_from(sections.len()).expect("one section more than a u16 count fits: checked");

    let mut edits = vec![Edit::bytes(0, header.encode().to_vec())];
    let marker_end = placement.marker + marker_bytes.len() as u64;
    match placement.table {
        Some(table) => {
            edits.push(Edit::zeros(fatbin.offset, table - fatbin.offset));
            edits.push(Edit::bytes(table, table_bytes));
        }
        None => {
            edits.push(Edit::zeros(fatbin.offset, placement.marker - fatbin.offset));
            edits.push(Edit::bytes(old.phoff, table_bytes));
        }
    }
    edits.push(Edit::bytes(placement.marker, marker_bytes));
    if removed > 0 {
        edits.push(Edit::zeros(marker_end, placement.keep - marker_end));
        edits.push(Edit::drop(placement.keep, removed));
        edits.push(Edit::zeros(placement.resume, fatbin_end - placement.resume));
    } else {
        edits.push(Edit::zeros(marker_end, fatbin_end - marker_end));
    }
    for (wrapper, site) in binary.wrappers.iter().zip(&binary.sites) {
        let mut bytes = Vec::with_capacity(24);
        bytes.extend(MAGIC_KPACK);
        bytes.extend(wrapper.version.to_le_bytes());
        bytes.extend(marker_address.to_le_bytes());
        bytes.extend(((wrapper.reserved & !0xffff_ffff) | u64::from(wrapper.index)).to_le_bytes());
        edits.push(Edit::bytes(site.file_offset, bytes));
        if let Some(entry) = site.relocation {
            let mut bytes = Vec::with_capacity(24);
            bytes.extend(site.pointer_address.to_le_bytes());
            bytes.extend(u64::from(R_X86_64_RELATIVE).to_le_bytes());
            bytes.extend(marker_address.to_le_bytes());
            edits.push(Edit::bytes(entry, bytes));
        }
    }
    let split = &sections[fatbin_index];
    for symbol in &binary.fatbin_symbols {
        if let Some((offset, bytes)) = symbol.clamped(split.addr, split.addr + split.size) {
            edits.push(Edit::bytes(offset, bytes.to_vec()));
        }
    }
    edits.push(Edit::drop(kept_end, headers.file_size - kept_end));
    let padding = section_table_offset - (names_offset + names.len() as u64);
    let section_table: Vec<u8> = sections.iter().flat_map(SectionHeader::encode).collect();
    let appended = vec![Piece::Bytes(names), Piece::Zeros(padding), Piece::Bytes(section_table)];
    let pieces = output::pieces(headers.file_size, edits, appended)
        .map_err(|reason| layout_error(path, format!("the planned edits conflict: {reason}")))?;
    Ok(HostTransform {
        path: path.to_path_buf(),
        input_len: headers.file_size,
        output_len: output::total_len(&pieces),
        pieces,
        removed,
        marker_address,
    })
}

/// Every wrapper registers a bundle inside `.hip_fatbin`, has version 1, and (in a shared
/// object or PIE) a relocation to rewrite; nothing else resolves into `.hip_fatbin`.
fn check_wrappers(binary: &HostBinary, fatbin: &SectionHeader) -> Result<(), DeviceCodeError> {
    let path = binary.path();
    for (wrapper, site) in binary.wrappers.iter().zip(&binary.sites) {
        if wrapper.fatbin_offset.is_none() {
            return Err(DeviceCodeError::WrapperPointer {
                path: path.to_path_buf(),
                index: wrapper.index,
                pointer: wrapper.pointer,
                start: fatbin.addr,
                end: fatbin.addr + fatbin.size,
            });
        }
        if wrapper.version != 1 {
            return Err(DeviceCodeError::WrapperVersion {
                path: path.to_path_buf(),
                index: wrapper.index,
                version: wrapper.version,
            });
        }
        if binary.headers.header.kind == ET_DYN && site.relocation.is_none() && !site.packed {
            return Err(relocation_error(
                path,
                format!(
                    "fat-binary wrapper {}'s pointer at {:#x} has no relative relocation (RELA or packed)",
                    wrapper.index, site.pointer_address
                ),
            ));
        }
    }
    if let Some(target) = binary.stray_relocations.first() {
        return Err(relocation_error(
            path,
            format!(
                "the relocation of {target:#x} resolves into `.hip_fatbin` ({} such relocations), so the runtime would read device code that the split removes",
                binary.stray_relocations.len()
            ),
        ));
    }
    Ok(())
}

/// No other segment or section shares `.hip_fatbin`'s bytes: they would lose them.
fn check_neighbours(binary: &HostBinary, fatbin_index: usize, load_index: usize) -> Result<(), DeviceCodeError> {
    let headers = &binary.headers;
    let fatbin = &headers.sections[fatbin_index];
    let range = fatbin.offset..fatbin.offset + fatbin.size;
    let overlaps = |offset: u64, len: u64| len > 0 && offset < range.end && range.start < offset.saturating_add(len);
    for (index, segment) in headers.segments.iter().enumerate() {
        if index != load_index && overlaps(segment.offset, segment.filesz) {
            return Err(layout_error(
                binary.path(),
                format!("program header {index} (type {:#x}) shares file bytes with `.hip_fatbin`", segment.kind),
            ));
        }
    }
    for (index, section) in headers.sections.iter().enumerate() {
        if index != fatbin_index && section.has_file_bytes() && overlaps(section.offset, section.size) {
            return Err(layout_error(
                binary.path(),
                format!("section `{}` shares file bytes with `.hip_fatbin`", String::from_utf8_lossy(&section.name)),
            ));
        }
    }
    let names = headers.header.shstrndx;
    if headers.header.shnum == 0
        || names == 0
        || usize::from(names) >= headers.sections.len()
        || usize::from(names) == fatbin_index
    {
        return Err(layout_error(binary.path(), "no section-name table by a plain index".to_owned()));
    }
    if headers.sections.len() + 1 >= 0xff00 || headers.segments.len() + 1 > usize::from(u16::MAX) {
        return Err(layout_error(binary.path(), "too many headers to add one".to_owned()));
    }
    Ok(())
}

/// Chooses where the table and the marker go and what leaves the file (see the module doc).
fn place(
    binary: &HostBinary,
    load: &ProgramHeader,
    fatbin: &SectionHeader,
    marker_len: u64,
) -> Result<Placement, DeviceCodeError> {
    let headers = &binary.headers;
    let fatbin_end = fatbin.offset + fatbin.size;
    let alignment = headers
        .segments
        .iter()
        .filter(|segment| segment.kind == PT_LOAD)
        .map(|segment| segment.align)
        .fold(PAGE, u64::max);
    if !alignment.is_power_of_two() {
        return Err(layout_error(binary.path(), format!("a segment alignment of {alignment:#x}")));
    }
    let with_table = |table_len: u64| {
        let table = fatbin.offset.next_multiple_of(8);
        let marker = table + table_len;
        let keep = (marker + marker_len).next_multiple_of(PAGE);
        let last_page = fatbin_end - fatbin_end % PAGE;
        let resume = if last_page > keep { keep + (last_page - keep) / alignment * alignment } else { keep };
        let fits = marker + marker_len <= fatbin_end;
        (Placement { table: (table_len > 0).then_some(table), marker, keep, resume, split: false }, fits)
    };
    // L3 is needed when L has bytes of its own after F; otherwise L1's zero fill covers F's
    // last partial page as well, the count of program headers stays and so does the table.
    if load.offset + load.filesz > fatbin_end {
        let (moved, fits) = with_table((headers.segments.len() as u64 + 1) * PHDR_SIZE as u64);
        if fits && moved.removed() > 0 {
            let interpreted = headers.segments.iter().any(|segment| segment.kind == PT_INTERP);
            let first = headers.segments.iter().find(|segment| segment.kind == PT_LOAD).expect("L is a PT_LOAD");
            if interpreted && first.vaddr.wrapping_sub(first.offset) != load.vaddr.wrapping_sub(load.offset) {
                return Err(layout_error(
                    binary.path(),
                    "the program header table would move into a segment whose address − offset differs from the first PT_LOAD's, where Linux before 5.18 would not find it".to_owned(),
                ));
            }
            return Ok(Placement { split: true, ..moved });
        }
    }
    let (in_place, fits) = with_table(0);
    if !fits {
        return Err(layout_error(
            binary.path(),
            format!("`.hip_fatbin` of {} bytes has no room for the {marker_len}-byte marker", fatbin.size),
        ));
    }
    if in_place.removed() > 0 && load.offset + load.filesz <= fatbin_end {
        return Ok(in_place);
    }
    // Nothing leaves the file: the marker goes at the start of F and the rest is zeroed.
    let marker_end = in_place.marker + marker_len;
    Ok(Placement { keep: marker_end, resume: marker_end, ..in_place })
}

/// The program headers after the split: L becomes L1 (and L3 after it), `PT_PHDR` follows
/// the table, every other offset moves with its bytes.
fn new_segments(
    segments: &[ProgramHeader],
    load_index: usize,
    placement: &Placement,
    map: impl Fn(u64) -> u64,
) -> Vec<ProgramHeader> {
    let mut out = Vec::with_capacity(segments.len() + 1);
    let load = segments[load_index];
    let removed = placement.removed();
    for (index, segment) in segments.iter().enumerate() {
        if index == load_index && removed > 0 {
            let tail = placement.resume - load.offset;
            let memsz = if placement.split { tail } else { load.memsz };
            out.push(ProgramHeader { filesz: placement.keep - load.offset, memsz, ..load });
            if placement.split {
                out.push(ProgramHeader {
                    offset: placement.keep,
                    vaddr: load.vaddr + tail,
                    paddr: load.paddr + tail,
                    filesz: load.filesz.saturating_sub(tail),
                    memsz: load.memsz - tail,
                    ..load
                });
            }
        } else if segment.kind == PT_PHDR && placement.table.is_some() {
            let table = placement.table.expect("checked just above");
            let size = (segments.len() as u64 + 1) * PHDR_SIZE as u64;
            let address = load.vaddr + (table - load.offset);
            out.push(ProgramHeader {
                offset: table,
                vaddr: address,
                paddr: load.paddr + (table - load.offset),
                filesz: size,
                memsz: size,
                ..*segment
            });
        } else {
            out.push(ProgramHeader { offset: map(segment.offset), ..*segment });
        }
    }
    out
}

/// The section names with the marker's appended, and the section headers after the split.
fn new_sections(
    binary: &HostBinary,
    fatbin_index: usize,
    placement: &Placement,
    marker_address: u64,
    marker_len: usize,
) -> Result<(Vec<u8>, Vec<SectionHeader>), DeviceCodeError> {
    let headers = &binary.headers;
    let mut names = binary.section_names.clone();
    let name_offset = u32::try_from(names.len())
        .map_err(|_| layout_error(binary.path(), "a section-name table of 4 GiB".to_owned()))?;
    names.extend(MARKER_SECTION);
    names.push(0);
    let removed = placement.removed();
    let mut sections: Vec<SectionHeader> = headers
        .sections
        .iter()
        .map(|section| SectionHeader {
            offset: if section.offset >= placement.resume && removed > 0 {
                section.offset - removed
            } else {
                section.offset
            },
            ..section.clone()
        })
        .collect();
    let fatbin = &mut sections[fatbin_index];
    let start = placement.keep;
    let end = if placement.split { placement.resume } else { fatbin.offset + fatbin.size };
    let original = headers.sections[fatbin_index].clone();
    let address = original.addr + (start - original.offset);
    fatbin.kind = if removed > 0 { SHT_NOBITS } else { SHT_PROGBITS };
    fatbin.addr = address;
    fatbin.offset = start;
    fatbin.size = end - start;
    if fatbin.addralign > 1 && address % fatbin.addralign != 0 {
        fatbin.addralign = 1;
    }
    sections.push(SectionHeader {
        name: MARKER_SECTION.to_vec(),
        name_offset,
        kind: SHT_PROGBITS,
        flags: SHF_ALLOC,
        addr: marker_address,
        offset: placement.marker,
        size: marker_len as u64,
        link: 0,
        info: 0,
        addralign: 1,
        entsize: 0,
    });
    Ok((names, sections))
}
