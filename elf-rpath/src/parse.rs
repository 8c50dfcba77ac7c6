//! Decodes the parts of an ELF file the RPATH work needs: the file header, program headers,
//! the dynamic array and `.dynstr`, read with positioned, size-capped reads (never the whole
//! file). Both classes and both byte orders are decoded; only 64-bit little-endian is ever
//! written (`rpath`).
//!
//! Owns: decoding and bounds checks. Does not own: classification policy (`mod.rs`) or
//! edits (`rpath`, `grow`).

use super::source::Source;
use super::ElfError;

pub(crate) use super::consts::*;

/// Dynamic tags whose value is an offset into `.dynstr`.
pub(crate) const STRING_TAGS: &[u64] = &[
    DT_NEEDED,
    DT_SONAME,
    DT_RPATH,
    DT_RUNPATH,
    0x6fff_fefa, // DT_CONFIG
    0x6fff_fefb, // DT_DEPAUDIT
    0x6fff_fefc, // DT_AUDIT
    0x7fff_fffd, // DT_AUXILIARY
    0x7fff_ffff, // DT_FILTER
];

/// The largest dynamic array we accept (entries); real files have well under 100.
const MAX_DYNAMIC_ENTRIES: u64 = 1 << 16;

/// Reads integers in the file's byte order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Endian {
    pub(crate) little: bool,
}

impl Endian {
    pub(crate) fn u16(self, bytes: &[u8], at: usize) -> u16 {
        let raw = [bytes[at], bytes[at + 1]];
        if self.little {
            u16::from_le_bytes(raw)
        } else {
            u16::from_be_bytes(raw)
        }
    }

    pub(crate) fn u32(self, bytes: &[u8], at: usize) -> u32 {
        let mut raw = [0u8; 4];
        raw.copy_from_slice(&bytes[at..at + 4]);
        if self.little {
            u32::from_le_bytes(raw)
        } else {
            u32::from_be_bytes(raw)
        }
    }

    pub(crate) fn u64(self, bytes: &[u8], at: usize) -> u64 {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(&bytes[at..at + 8]);
        if self.little {
            u64::from_le_bytes(raw)
        } else {
            u64::from_be_bytes(raw)
        }
    }

    /// An address-sized word: 8 bytes in 64-bit files, 4 in 32-bit ones.
    fn word(self, is_64: bool, bytes: &[u8], at: usize) -> u64 {
        if is_64 {
            self.u64(bytes, at)
        } else {
            u64::from(self.u32(bytes, at))
        }
    }
}

/// The ELF file header, decoded.
#[derive(Clone, Debug)]
pub(crate) struct Header {
    pub(crate) is_64: bool,
    pub(crate) endian: Endian,
    pub(crate) e_type: u16,
    pub(crate) machine: u16,
    pub(crate) phoff: u64,
    pub(crate) shoff: u64,
    pub(crate) phentsize: u16,
    pub(crate) phnum: u16,
    pub(crate) shentsize: u16,
    pub(crate) shnum: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProgramHeader {
    pub(crate) p_type: u32,
    pub(crate) flags: u32,
    pub(crate) offset: u64,
    pub(crate) vaddr: u64,
    pub(crate) paddr: u64,
    pub(crate) filesz: u64,
    pub(crate) memsz: u64,
    pub(crate) align: u64,
}

impl ProgramHeader {
    /// The 56-byte Elf64_Phdr in little-endian order.
    pub(crate) fn to_elf64_le(self) -> [u8; 56] {
        let mut out = [0u8; 56];
        out[0..4].copy_from_slice(&self.p_type.to_le_bytes());
        out[4..8].copy_from_slice(&self.flags.to_le_bytes());
        for (at, value) in [
            (8, self.offset),
            (16, self.vaddr),
            (24, self.paddr),
            (32, self.filesz),
            (40, self.memsz),
            (48, self.align),
        ] {
            out[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        out
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DynEntry {
    pub(crate) tag: u64,
    pub(crate) value: u64,
}

/// The dynamic array as found: entries before the first `DT_NULL`, and how many entry
/// slots `PT_DYNAMIC` holds in all (spare `DT_NULL`s included).
#[derive(Clone, Debug)]
pub(crate) struct Dynamic {
    pub(crate) offset: u64,
    pub(crate) entries: Vec<DynEntry>,
    pub(crate) slots: u64,
}

impl Dynamic {
    pub(crate) fn value(&self, tag: u64) -> Option<u64> {
        self.entries.iter().find(|entry| entry.tag == tag).map(|entry| entry.value)
    }
}

/// Everything read from one ELF file.
pub(crate) struct ElfFile {
    pub(crate) header: Header,
    pub(crate) phdrs: Vec<ProgramHeader>,
    pub(crate) dynamic: Option<Dynamic>,
    /// `.dynstr` as `DT_STRTAB`/`DT_STRSZ` describe it, with its file offset.
    pub(crate) dynstr: Option<(u64, Vec<u8>)>,
    pub(crate) interpreter: Option<String>,
}

/// `Ok(None)` when the file does not start with the ELF magic.
pub(crate) fn parse(source: &dyn Source) -> Result<Option<ElfFile>, ElfError> {
    if source.len() < 4 {
        return Ok(None);
    }
    let mut magic = [0u8; 4];
    source.read_into(&mut magic, 0)?;
    if magic != *b"\x7fELF" {
        return Ok(None);
    }
    let header = parse_header(source)?;
    let phdrs = parse_program_headers(source, &header)?;
    let interpreter = match phdrs.iter().find(|phdr| phdr.p_type == PT_INTERP) {
        Some(phdr) => {
            let bytes = source.read(phdr.offset, phdr.filesz.min(4096), "PT_INTERP")?;
            Some(c_string(source, &bytes, 0, "PT_INTERP")?)
        }
        None => None,
    };
    let dynamic = parse_dynamic(source, &header, &phdrs)?;
    let dynstr = match &dynamic {
        Some(dynamic) => match (dynamic.value(DT_STRTAB), dynamic.value(DT_STRSZ)) {
            (Some(address), Some(size)) => {
                let offset = vaddr_to_offset(&phdrs, address, size)
                    .ok_or_else(|| source.malformed(format!("DT_STRTAB {address:#x} is not inside a PT_LOAD")))?;
                Some((offset, source.read(offset, size, ".dynstr")?))
            }
            _ if dynamic.entries.iter().any(|entry| STRING_TAGS.contains(&entry.tag)) => {
                return Err(source.malformed("dynamic strings without DT_STRTAB and DT_STRSZ".into()));
            }
            _ => None,
        },
        None => None,
    };
    Ok(Some(ElfFile { header, phdrs, dynamic, dynstr, interpreter }))
}

fn parse_header(source: &dyn Source) -> Result<Header, ElfError> {
    let ident = source.read(0, 16, "ELF identification")?;
    let is_64 = match ident[4] {
        1 => false,
        2 => true,
        other => return Err(source.malformed(format!("unknown ELF class byte {other}"))),
    };
    let endian = match ident[5] {
        1 => Endian { little: true },
        2 => Endian { little: false },
        other => return Err(source.malformed(format!("unknown ELF data encoding byte {other}"))),
    };
    let bytes = source.read(0, if is_64 { 64 } else { 52 }, "ELF header")?;
    // Offsets of e_phoff.. differ by class: 64-bit words push the later fields back.
    let (phoff_at, rest_at) = if is_64 { (32, 52) } else { (28, 40) };
    let word = |at| endian.word(is_64, &bytes, at);
    let header = Header {
        is_64,
        endian,
        e_type: endian.u16(&bytes, 16),
        machine: endian.u16(&bytes, 18),
        phoff: word(phoff_at),
        shoff: word(phoff_at + if is_64 { 8 } else { 4 }),
        phentsize: endian.u16(&bytes, rest_at + 2),
        phnum: endian.u16(&bytes, rest_at + 4),
        shentsize: endian.u16(&bytes, rest_at + 6),
        shnum: endian.u16(&bytes, rest_at + 8),
    };
    Ok(header)
}

fn parse_program_headers(source: &dyn Source, header: &Header) -> Result<Vec<ProgramHeader>, ElfError> {
    if header.phnum == 0 {
        return Ok(Vec::new());
    }
    if header.phnum == 0xffff {
        return Err(ElfError::Unsupported {
            path: source.path().to_path_buf(),
            reason: "more than 65534 program headers (PN_XNUM)".into(),
            refusal: super::Refusal::Layout,
        });
    }
    let entry_size: u16 = if header.is_64 { 56 } else { 32 };
    if header.phentsize != entry_size {
        return Err(source.malformed(format!("e_phentsize is {}, expected {entry_size}", header.phentsize)));
    }
    let table = source.read(header.phoff, u64::from(header.phnum) * u64::from(entry_size), "program header table")?;
    let endian = header.endian;
    let phdrs = table
        .chunks_exact(usize::from(entry_size))
        .map(|raw| {
            if header.is_64 {
                ProgramHeader {
                    p_type: endian.u32(raw, 0),
                    flags: endian.u32(raw, 4),
                    offset: endian.u64(raw, 8),
                    vaddr: endian.u64(raw, 16),
                    paddr: endian.u64(raw, 24),
                    filesz: endian.u64(raw, 32),
                    memsz: endian.u64(raw, 40),
                    align: endian.u64(raw, 48),
                }
            } else {
                ProgramHeader {
                    p_type: endian.u32(raw, 0),
                    offset: endian.u32(raw, 4).into(),
                    vaddr: endian.u32(raw, 8).into(),
                    paddr: endian.u32(raw, 12).into(),
                    filesz: endian.u32(raw, 16).into(),
                    memsz: endian.u32(raw, 20).into(),
                    flags: endian.u32(raw, 24),
                    align: endian.u32(raw, 28).into(),
                }
            }
        })
        .collect();
    Ok(phdrs)
}

fn parse_dynamic(source: &dyn Source, header: &Header, phdrs: &[ProgramHeader]) -> Result<Option<Dynamic>, ElfError> {
    let mut dynamics = phdrs.iter().filter(|phdr| phdr.p_type == PT_DYNAMIC);
    let Some(phdr) = dynamics.next() else { return Ok(None) };
    if dynamics.next().is_some() {
        return Err(source.malformed("more than one PT_DYNAMIC".into()));
    }
    let entry_size: u64 = if header.is_64 { 16 } else { 8 };
    let slots = phdr.filesz / entry_size;
    if slots > MAX_DYNAMIC_ENTRIES {
        return Err(source.malformed(format!("PT_DYNAMIC holds {slots} entries")));
    }
    let bytes = source.read(phdr.offset, slots * entry_size, "dynamic section")?;
    let mut entries = Vec::new();
    for raw in bytes.chunks_exact(entry_size as usize) {
        let (tag, value) = if header.is_64 {
            (header.endian.u64(raw, 0), header.endian.u64(raw, 8))
        } else {
            (u64::from(header.endian.u32(raw, 0)), u64::from(header.endian.u32(raw, 4)))
        };
        if tag == DT_NULL {
            return Ok(Some(Dynamic { offset: phdr.offset, entries, slots }));
        }
        entries.push(DynEntry { tag, value });
    }
    Err(source.malformed("the dynamic section has no DT_NULL terminator".into()))
}

/// The file offset of `size` bytes at virtual address `address`, if one `PT_LOAD` maps them
/// from the file.
pub(crate) fn vaddr_to_offset(phdrs: &[ProgramHeader], address: u64, size: u64) -> Option<u64> {
    phdrs.iter().filter(|phdr| phdr.p_type == PT_LOAD).find_map(|phdr| {
        let start = address.checked_sub(phdr.vaddr)?;
        let end = start.checked_add(size)?;
        (end <= phdr.filesz).then(|| phdr.offset.checked_add(start)).flatten()
    })
}

/// The NUL-terminated string at `at` in `table`, as UTF-8.
pub(crate) fn c_string(source: &dyn Source, table: &[u8], at: u64, what: &str) -> Result<String, ElfError> {
    let start = usize::try_from(at).ok().filter(|start| *start < table.len());
    let Some(start) = start else {
        return Err(source.malformed(format!("{what} string offset {at} is past the end of its table")));
    };
    let Some(len) = table[start..].iter().position(|byte| *byte == 0) else {
        return Err(source.malformed(format!("{what} string at offset {at} has no NUL terminator")));
    };
    String::from_utf8(table[start..start + len].to_vec())
        .map_err(|_| source.malformed(format!("{what} string at offset {at} is not UTF-8")))
}

impl ElfFile {
    /// The `.dynstr` string a dynamic entry points at.
    pub(crate) fn dynamic_string(&self, source: &dyn Source, entry: &DynEntry) -> Result<String, ElfError> {
        let table = self.dynstr.as_ref().map(|(_, bytes)| bytes.as_slice()).unwrap_or(&[]);
        c_string(source, table, entry.value, "dynamic")
    }

    /// Values of every dynamic entry with `tag`, as strings, in file order.
    pub(crate) fn dynamic_strings(&self, source: &dyn Source, tag: u64) -> Result<Vec<String>, ElfError> {
        let Some(dynamic) = &self.dynamic else { return Ok(Vec::new()) };
        dynamic
            .entries
            .iter()
            .filter(|entry| entry.tag == tag)
            .map(|entry| self.dynamic_string(source, entry))
            .collect()
    }
}

/// One section header, with where it sits in the file (to patch it in place).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SectionHeader {
    pub(crate) header_offset: u64,
    pub(crate) sh_type: u32,
    pub(crate) flags: u64,
    pub(crate) addr: u64,
    pub(crate) offset: u64,
    pub(crate) size: u64,
    /// `sh_link`: for a symbol table, the index of its string table.
    pub(crate) link: u32,
}

/// The section headers of a 64-bit file (empty when it has none).
pub(crate) fn section_headers(source: &dyn Source, header: &Header) -> Result<Vec<SectionHeader>, ElfError> {
    if header.shoff == 0 {
        return Ok(Vec::new());
    }
    if header.shentsize != 64 {
        return Err(source.malformed(format!("e_shentsize is {}, expected 64", header.shentsize)));
    }
    let endian = header.endian;
    let mut count = u64::from(header.shnum);
    if count == 0 {
        // More than 65279 sections: the real count is section 0's sh_size.
        count = endian.u64(&source.read(header.shoff, 64, "section header 0")?, 32);
    }
    let table = source.read(header.shoff, count.saturating_mul(64), "section header table")?;
    let sections = table
        .chunks_exact(64)
        .enumerate()
        .map(|(index, raw)| SectionHeader {
            header_offset: header.shoff + index as u64 * 64,
            sh_type: endian.u32(raw, 4),
            flags: endian.u64(raw, 8),
            addr: endian.u64(raw, 16),
            offset: endian.u64(raw, 24),
            size: endian.u64(raw, 32),
            link: endian.u32(raw, 40),
        })
        .collect();
    Ok(sections)
}
