//! The header tables of a 64-bit little-endian ELF file (file header, program headers,
//! section headers and section names), read with positioned reads inside the file's size,
//! never the whole file: a host library can carry more than a gigabyte of device code.
//!
//! Owns: decoding and encoding those tables. Must not know: what any section holds.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::DeviceCodeError;

/// `e_type` of a fixed-address executable.
pub const ET_EXEC: u16 = 2;
/// `e_type` of a shared object or position-independent executable.
pub const ET_DYN: u16 = 3;
/// `e_machine` of x86-64.
pub const EM_X86_64: u16 = 62;
/// `p_type` of a loadable segment.
pub const PT_LOAD: u32 = 1;
/// `p_type` of the segment holding the program header table itself.
pub const PT_PHDR: u32 = 6;
/// `sh_type` of a section with bytes in the file.
pub const SHT_PROGBITS: u32 = 1;
/// `sh_type` of a section with relocations with addends.
pub const SHT_RELA: u32 = 4;
/// `sh_type` of a section that occupies memory but no file bytes.
pub const SHT_NOBITS: u32 = 8;
/// `sh_flags` bit of a section mapped into memory.
pub const SHF_ALLOC: u64 = 0x2;

/// Size of the ELF64 file header.
pub const EHDR_SIZE: usize = 64;
/// Size of one ELF64 program header.
pub const PHDR_SIZE: usize = 56;
/// Size of one ELF64 section header.
pub const SHDR_SIZE: usize = 64;

/// More section headers than any real file has: a bound, so a corrupt count cannot make the
/// reader allocate without limit.
const MAX_SECTIONS: u64 = 1 << 20;
/// More program headers than any real file has.
const MAX_SEGMENTS: u64 = 1 << 12;
/// The longest section-name table read.
const MAX_NAMES: u64 = 16 << 20;

/// The ELF64 file header fields this crate reads or rewrites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The 64 bytes as read, so fields this crate does not decode are written back as they were.
    pub raw: [u8; EHDR_SIZE],
    pub kind: u16,
    pub machine: u16,
    pub phoff: u64,
    pub shoff: u64,
    pub phnum: u16,
    pub shnum: u16,
    pub shstrndx: u16,
}

/// One program header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramHeader {
    pub kind: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub paddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub align: u64,
}

/// One section header, with its name decoded from the section-name table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionHeader {
    pub name: Vec<u8>,
    pub name_offset: u32,
    pub kind: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub addralign: u64,
    pub entsize: u64,
}

/// The header tables of one ELF file.
#[derive(Clone, Debug)]
pub struct ElfHeaders {
    pub header: FileHeader,
    pub segments: Vec<ProgramHeader>,
    pub sections: Vec<SectionHeader>,
    pub file_size: u64,
}

impl ElfHeaders {
    /// Reads the header tables of `file`; `path` names it in errors.
    pub fn read(file: &File, path: &Path) -> Result<ElfHeaders, DeviceCodeError> {
        let file_size = file.metadata().map_err(|source| io_error(path, source))?.len();
        let mut raw = [0u8; EHDR_SIZE];
        if file_size < EHDR_SIZE as u64 {
            return Err(elf_error(path, format!("{file_size} bytes is too short for an ELF header")));
        }
        file.read_exact_at(&mut raw, 0).map_err(|source| io_error(path, source))?;
        let header = decode_file_header(raw).map_err(|reason| elf_error(path, reason))?;
        let segments = read_segments(file, path, &header, file_size)?;
        let sections = read_sections(file, path, &header, file_size)?;
        Ok(ElfHeaders { header, segments, sections, file_size })
    }

    /// The first section named `name`.
    pub fn section(&self, name: &str) -> Option<&SectionHeader> {
        self.sections.iter().find(|section| section.name == name.as_bytes())
    }

    /// Whether `[offset, offset + len)` lies inside the file.
    pub fn contains(&self, offset: u64, len: u64) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.file_size)
    }
}

/// Reads exactly `len` bytes at `offset`, refusing a range outside the file first, so a
/// corrupt size cannot make the caller allocate more than the file holds.
pub fn read_range(file: &File, path: &Path, file_size: u64, offset: u64, len: u64) -> Result<Vec<u8>, DeviceCodeError> {
    if offset.checked_add(len).is_none_or(|end| end > file_size) {
        return Err(elf_error(
            path,
            format!("bytes {offset}..+{len} lie past the end of the file ({file_size} bytes)"),
        ));
    }
    let len = usize::try_from(len).map_err(|_| elf_error(path, format!("a range of {len} bytes")))?;
    let mut bytes = vec![0u8; len];
    file.read_exact_at(&mut bytes, offset).map_err(|source| io_error(path, source))?;
    Ok(bytes)
}

/// Entries read from a table at a time: a symbol or relocation table can be megabytes.
const ENTRIES_PER_READ: u64 = 4096;

/// Calls `visit` with the index, file offset and bytes of each whole `entry_size`-byte
/// entry of `table`, reading a bounded chunk of entries at a time.
pub fn for_each_entry(
    file: &File,
    path: &Path,
    headers: &ElfHeaders,
    table: &SectionHeader,
    entry_size: u64,
    mut visit: impl FnMut(u64, u64, &[u8]) -> Result<(), DeviceCodeError>,
) -> Result<(), DeviceCodeError> {
    let count = table.size / entry_size;
    let mut first = 0;
    while first < count {
        let take = ENTRIES_PER_READ.min(count - first);
        let offset = table.offset + first * entry_size;
        let raw = read_range(file, path, headers.file_size, offset, take * entry_size)?;
        for (number, entry) in (0u64..).zip(raw.chunks_exact(entry_size as usize)) {
            visit(first + number, offset + number * entry_size, entry)?;
        }
        first += take;
    }
    Ok(())
}

fn decode_file_header(raw: [u8; EHDR_SIZE]) -> Result<FileHeader, String> {
    if raw[..4] != *b"\x7fELF" {
        return Err("no ELF magic".to_owned());
    }
    if raw[4] != 2 || raw[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".to_owned());
    }
    let ehsize = u16_at(&raw, 52);
    let phentsize = u16_at(&raw, 54);
    let shentsize = u16_at(&raw, 58);
    let phnum = u16_at(&raw, 56);
    let shnum = u16_at(&raw, 60);
    if usize::from(ehsize) != EHDR_SIZE {
        return Err(format!("e_ehsize {ehsize}, not {EHDR_SIZE}"));
    }
    if phnum > 0 && usize::from(phentsize) != PHDR_SIZE {
        return Err(format!("e_phentsize {phentsize}, not {PHDR_SIZE}"));
    }
    if u64_at(&raw, 40) != 0 && shnum > 0 && usize::from(shentsize) != SHDR_SIZE {
        return Err(format!("e_shentsize {shentsize}, not {SHDR_SIZE}"));
    }
    Ok(FileHeader {
        raw,
        kind: u16_at(&raw, 16),
        machine: u16_at(&raw, 18),
        phoff: u64_at(&raw, 32),
        shoff: u64_at(&raw, 40),
        phnum,
        shnum,
        shstrndx: u16_at(&raw, 62),
    })
}

impl FileHeader {
    /// The 64 bytes with the table fields set to this header's values.
    pub fn encode(&self) -> [u8; EHDR_SIZE] {
        let mut raw = self.raw;
        raw[32..40].copy_from_slice(&self.phoff.to_le_bytes());
        raw[40..48].copy_from_slice(&self.shoff.to_le_bytes());
        raw[56..58].copy_from_slice(&self.phnum.to_le_bytes());
        raw[60..62].copy_from_slice(&self.shnum.to_le_bytes());
        raw[62..64].copy_from_slice(&self.shstrndx.to_le_bytes());
        raw
    }
}

impl ProgramHeader {
    fn decode(raw: &[u8]) -> ProgramHeader {
        ProgramHeader {
            kind: u32_at(raw, 0),
            flags: u32_at(raw, 4),
            offset: u64_at(raw, 8),
            vaddr: u64_at(raw, 16),
            paddr: u64_at(raw, 24),
            filesz: u64_at(raw, 32),
            memsz: u64_at(raw, 40),
            align: u64_at(raw, 48),
        }
    }

    /// The 56 bytes of this header.
    pub fn encode(&self) -> [u8; PHDR_SIZE] {
        let mut raw = [0u8; PHDR_SIZE];
        raw[0..4].copy_from_slice(&self.kind.to_le_bytes());
        raw[4..8].copy_from_slice(&self.flags.to_le_bytes());
        raw[8..16].copy_from_slice(&self.offset.to_le_bytes());
        raw[16..24].copy_from_slice(&self.vaddr.to_le_bytes());
        raw[24..32].copy_from_slice(&self.paddr.to_le_bytes());
        raw[32..40].copy_from_slice(&self.filesz.to_le_bytes());
        raw[40..48].copy_from_slice(&self.memsz.to_le_bytes());
        raw[48..56].copy_from_slice(&self.align.to_le_bytes());
        raw
    }
}

impl SectionHeader {
    fn decode(raw: &[u8]) -> SectionHeader {
        SectionHeader {
            name: Vec::new(),
            name_offset: u32_at(raw, 0),
            kind: u32_at(raw, 4),
            flags: u64_at(raw, 8),
            addr: u64_at(raw, 16),
            offset: u64_at(raw, 24),
            size: u64_at(raw, 32),
            link: u32_at(raw, 40),
            info: u32_at(raw, 44),
            addralign: u64_at(raw, 48),
            entsize: u64_at(raw, 56),
        }
    }

    /// The 64 bytes of this header (the name is written through `name_offset`).
    pub fn encode(&self) -> [u8; SHDR_SIZE] {
        let mut raw = [0u8; SHDR_SIZE];
        raw[0..4].copy_from_slice(&self.name_offset.to_le_bytes());
        raw[4..8].copy_from_slice(&self.kind.to_le_bytes());
        raw[8..16].copy_from_slice(&self.flags.to_le_bytes());
        raw[16..24].copy_from_slice(&self.addr.to_le_bytes());
        raw[24..32].copy_from_slice(&self.offset.to_le_bytes());
        raw[32..40].copy_from_slice(&self.size.to_le_bytes());
        raw[40..44].copy_from_slice(&self.link.to_le_bytes());
        raw[44..48].copy_from_slice(&self.info.to_le_bytes());
        raw[48..56].copy_from_slice(&self.addralign.to_le_bytes());
        raw[56..64].copy_from_slice(&self.entsize.to_le_bytes());
        raw
    }

    /// Whether this section's bytes are in the file.
    pub fn has_file_bytes(&self) -> bool {
        self.kind != SHT_NOBITS && self.kind != 0
    }
}

fn read_segments(
    file: &File,
    path: &Path,
    header: &FileHeader,
    file_size: u64,
) -> Result<Vec<ProgramHeader>, DeviceCodeError> {
    let count = u64::from(header.phnum);
    if count > MAX_SEGMENTS {
        return Err(elf_error(path, format!("{count} program headers")));
    }
    let raw = read_range(file, path, file_size, header.phoff, count * PHDR_SIZE as u64)?;
    Ok(raw.chunks_exact(PHDR_SIZE).map(ProgramHeader::decode).collect())
}

fn read_sections(
    file: &File,
    path: &Path,
    header: &FileHeader,
    file_size: u64,
) -> Result<Vec<SectionHeader>, DeviceCodeError> {
    if header.shoff == 0 {
        return Ok(Vec::new());
    }
    let first = read_range(file, path, file_size, header.shoff, SHDR_SIZE as u64)?;
    let first = SectionHeader::decode(&first);
    // ELF's extended numbering: with 0xff00 or more sections, e_shnum is 0 and the count
    // is in the first section header's size (and e_shstrndx 0xffff means its link).
    let count = if header.shnum == 0 { first.size } else { u64::from(header.shnum) };
    if count > MAX_SECTIONS {
        return Err(elf_error(path, format!("{count} section headers")));
    }
    let raw = read_range(file, path, file_size, header.shoff, count * SHDR_SIZE as u64)?;
    let mut sections: Vec<SectionHeader> = raw.chunks_exact(SHDR_SIZE).map(SectionHeader::decode).collect();
    let names_index = if header.shstrndx == 0xffff { u64::from(first.link) } else { u64::from(header.shstrndx) };
    let Some(names) =
        usize::try_from(names_index).ok().and_then(|index| sections.get(index)).filter(|_| names_index != 0)
    else {
        return Ok(sections);
    };
    if names.size > MAX_NAMES || names.kind == SHT_NOBITS {
        return Err(elf_error(path, format!("a section-name table of {} bytes", names.size)));
    }
    let table = read_range(file, path, file_size, names.offset, names.size)?;
    for section in &mut sections {
        let start = section.name_offset as usize;
        let name = table.get(start..).unwrap_or_default();
        let end = name.iter().position(|&byte| byte == 0).unwrap_or(name.len());
        section.name = name[..end].to_vec();
    }
    Ok(sections)
}

fn io_error(path: &Path, source: std::io::Error) -> DeviceCodeError {
    DeviceCodeError::Io { path: path.to_path_buf(), source }
}

fn elf_error(path: &Path, reason: String) -> DeviceCodeError {
    DeviceCodeError::Elf { path: path.to_path_buf(), reason }
}

/// Little-endian readers over a slice whose length the caller has checked.
fn u16_at(raw: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([raw[at], raw[at + 1]])
}

fn u32_at(raw: &[u8], at: usize) -> u32 {
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(&raw[at..at + 4]);
    u32::from_le_bytes(bytes)
}

pub(crate) fn u64_at(raw: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&raw[at..at + 8]);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_compiled_library_reads_back_as_readelf_shows_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = dir.path().join("lib.c");
        std::fs::write(&source, "int answer(void) { return 42; }\n").expect("write source");
        let library = dir.path().join("libanswer.so");
        let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_owned()))
            .args(["-shared", "-fPIC", "-o"])
            .arg(&library)
            .arg(&source)
            .status()
            .expect("run cc (Debian package gcc)");
        assert!(status.success());
        let file = File::open(&library).expect("open");
        let headers = ElfHeaders::read(&file, &library).expect("read headers");
        assert_eq!(headers.header.kind, ET_DYN);
        assert_eq!(headers.header.machine, EM_X86_64);
        assert!(headers.segments.iter().any(|segment| segment.kind == PT_LOAD));
        let text = headers.section(".text").expect(".text");
        assert!(text.size > 0 && text.flags & SHF_ALLOC != 0);
        for segment in &headers.segments {
            let offset = segment.offset;
            let raw = read_range(
                &file,
                &library,
                headers.file_size,
                headers.header.phoff,
                headers.segments.len() as u64 * 56,
            )
            .expect("phdrs");
            assert!(raw
                .chunks_exact(PHDR_SIZE)
                .any(|chunk| ProgramHeader::decode(chunk).encode() == chunk
                    && ProgramHeader::decode(chunk).offset == offset));
        }
    }

    #[test]
    fn truncated_and_foreign_files_are_refused_by_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("short");
        std::fs::write(&path, b"\x7fELF\x02\x01").expect("write");
        let error = ElfHeaders::read(&File::open(&path).expect("open"), &path).expect_err("refused");
        assert!(error.to_string().contains("short") && error.to_string().contains("too short"), "{error}");
        let mut header = [0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = 1;
        std::fs::write(&path, header).expect("write");
        let error = ElfHeaders::read(&File::open(&path).expect("open"), &path).expect_err("refused");
        assert!(error.to_string().contains("64-bit little-endian"), "{error}");
    }
}
