//! Reads what verification needs from an ELF file that streams past once: headers,
//! program and section header tables, the dynamic section, `.gnu.version_r`.
//!
//! Owns: parsing an [`ElfWindow`] (the first and last few MiB of a member, so memory stays
//! bounded whatever the file size) into [`ElfFile`], for 32/64-bit, either endian.
//! Does not own: judging what it read (`elf_checks`, `glibc`, `closure`).
//!
//! Headers, `.dynamic`, `.dynstr` and `.gnu.version_r` sit at the start of a file as
//! linkers lay it out, and at its end after patchelf (or our own writer) grew the layout,
//! so the head and the tail hold them; anything in the middle of a huge file is reported as
//! not checked rather than read.

pub use crate::window::ElfWindow;

// The ELF numbers are goblin's, not the editor's (`elf-rpath`): what reads the editor's
// output shares no definition with it.
use goblin::elf::dynamic::{
    DT_NEEDED, DT_NULL, DT_RPATH, DT_RUNPATH, DT_SONAME, DT_STRSZ, DT_STRTAB, DT_SYMTAB, DT_VERNEED, DT_VERNEEDNUM,
};
pub use goblin::elf::header::{ELFMAG as ELF_MAGIC, ET_DYN, ET_EXEC};
pub use goblin::elf::program_header::{PF_W, PT_DYNAMIC, PT_INTERP, PT_LOAD, PT_NOTE, PT_PHDR};

/// Upper bound on loops driven by file contents, so a corrupt file cannot spin forever.
const MAX_ENTRIES: usize = 1 << 16;

#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub kind: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
}

impl Segment {
    pub fn file_end(&self) -> u64 {
        self.offset.saturating_add(self.filesz)
    }
}

/// What verification reads from one ELF file.
#[derive(Clone, Debug, Default)]
pub struct ElfFile {
    pub elf_type: u16,
    pub machine: u16,
    pub is_64: bool,
    pub little_endian: bool,
    pub len: u64,
    pub phoff: u64,
    pub phentsize: u64,
    pub phnum: u64,
    pub shoff: u64,
    pub shentsize: u64,
    pub shnum: u64,
    pub segments: Vec<Segment>,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Option<String>,
    pub runpath: Option<String>,
    /// `DT_STRTAB`, `DT_SYMTAB`, `DT_VERNEED` addresses, by tag name.
    pub dynamic_addresses: Vec<(&'static str, u64)>,
    /// `DT_STRTAB` and `DT_STRSZ`, when the dynamic section has both: the loader reads the
    /// whole range from memory, so all of it must be mapped.
    pub dynamic_strings: Option<(u64, u64)>,
    /// Version names from `.gnu.version_r` (`GLIBC_2.34`, `GLIBCXX_3.4.30`, ...).
    pub needed_versions: Vec<String>,
    /// Structural problems found while reading (tables out of bounds, truncated data).
    pub problems: Vec<String>,
    /// Parts that could not be read because they lie outside the in-memory window.
    pub unchecked: Vec<String>,
}

impl ElfFile {
    pub fn loads(&self) -> impl Iterator<Item = &Segment> {
        self.segments.iter().filter(|segment| segment.kind == PT_LOAD)
    }

    /// File offset of a virtual address inside a `PT_LOAD`'s file-backed range.
    pub fn offset_of(&self, vaddr: u64) -> Option<u64> {
        self.loads()
            .find(|load| vaddr >= load.vaddr && vaddr < load.vaddr.saturating_add(load.filesz))
            .map(|load| load.offset.saturating_add(vaddr - load.vaddr))
    }
}

/// Field reader for one class and byte order.
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    pub(crate) little_endian: bool,
    pub(crate) is_64: bool,
}

impl Fields {
    pub(crate) fn u16(self, bytes: &[u8], at: usize) -> u64 {
        let raw = [bytes[at], bytes[at + 1]];
        u64::from(if self.little_endian { u16::from_le_bytes(raw) } else { u16::from_be_bytes(raw) })
    }

    pub(crate) fn u32(self, bytes: &[u8], at: usize) -> u64 {
        let raw = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
        u64::from(if self.little_endian { u32::from_le_bytes(raw) } else { u32::from_be_bytes(raw) })
    }

    pub(crate) fn u64(self, bytes: &[u8], at: usize) -> u64 {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(&bytes[at..at + 8]);
        if self.little_endian {
            u64::from_le_bytes(raw)
        } else {
            u64::from_be_bytes(raw)
        }
    }

    /// An address-sized field.
    pub(crate) fn word(self, bytes: &[u8], at: usize) -> u64 {
        if self.is_64 {
            self.u64(bytes, at)
        } else {
            self.u32(bytes, at)
        }
    }
}

/// The machine, class and byte order an ELF header names: all that is needed to know
/// whether a file is for the wheel's platform before judging anything else about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfIdentity {
    pub machine: u16,
    pub is_64: bool,
    pub little_endian: bool,
}

/// Reads [`ElfIdentity`] from the first 20 bytes; `None` when they are not a valid start
/// of an ELF header (then [`parse_elf`] says why).
pub fn elf_identity(head: &[u8]) -> Option<ElfIdentity> {
    if head.len() < 20 || &head[..4] != ELF_MAGIC {
        return None;
    }
    let is_64 = match head[4] {
        1 => false,
        2 => true,
        _ => return None,
    };
    let little_endian = match head[5] {
        1 => true,
        2 => false,
        _ => return None,
    };
    let machine = Fields { little_endian, is_64 }.u16(head, 18) as u16;
    Some(ElfIdentity { machine, is_64, little_endian })
}

/// Parses the window. `Err` when even the ELF header is unusable (the caller reports it).
pub fn parse_elf(window: &ElfWindow) -> Result<ElfFile, String> {
    let head = window.head();
    if head.len() < 52 || &head[..4] != ELF_MAGIC {
        return Err("shorter than an ELF header".to_owned());
    }
    let is_64 = match head[4] {
        1 => false,
        2 => true,
        class => return Err(format!("unknown ELF class {class}")),
    };
    let little_endian = match head[5] {
        1 => true,
        2 => false,
        data => return Err(format!("unknown ELF byte order {data}")),
    };
    if is_64 && head.len() < 64 {
        return Err("shorter than an ELF64 header".to_owned());
    }
    let fields = Fields { little_endian, is_64 };
    let mut elf = ElfFile {
        elf_type: fields.u16(head, 16) as u16,
        machine: fields.u16(head, 18) as u16,
        is_64,
        little_endian,
        len: window.len(),
        ..ElfFile::default()
    };
    if is_64 {
        elf.phoff = fields.u64(head, 32);
        elf.shoff = fields.u64(head, 40);
        elf.phentsize = fields.u16(head, 54);
        elf.phnum = fields.u16(head, 56);
        elf.shentsize = fields.u16(head, 58);
        elf.shnum = fields.u16(head, 60);
    } else {
        elf.phoff = fields.u32(head, 28);
        elf.shoff = fields.u32(head, 32);
        elf.phentsize = fields.u16(head, 42);
        elf.phnum = fields.u16(head, 44);
        elf.shentsize = fields.u16(head, 46);
        elf.shnum = fields.u16(head, 48);
    }
    read_extended_counts(window, fields, &mut elf);
    if check_table_bounds(&mut elf) {
        read_segments(window, fields, &mut elf);
    }
    read_dynamic(window, fields, &mut elf);
    Ok(elf)
}

/// `e_shnum == 0` and `e_phnum == 0xffff` move the real counts into section header 0.
fn read_extended_counts(window: &ElfWindow, fields: Fields, elf: &mut ElfFile) {
    let needs_shnum = elf.shnum == 0 && elf.shoff != 0;
    let needs_phnum = elf.phnum == 0xffff;
    if !(needs_shnum || needs_phnum) {
        return;
    }
    let size = if elf.is_64 { 64 } else { 40 };
    let Some(section0) = window.read_at(elf.shoff, size) else {
        elf.unchecked.push("extended header counts in section header 0 (outside the window)".to_owned());
        return;
    };
    if needs_shnum {
        elf.shnum = if elf.is_64 { fields.u64(section0, 32) } else { fields.u32(section0, 20) };
    }
    if needs_phnum {
        elf.phnum = fields.u32(section0, if elf.is_64 { 44 } else { 28 });
    }
}

/// Reports tables past the end of the file; returns whether the program header table
/// can be read (right entry size, inside the file).
fn check_table_bounds(elf: &mut ElfFile) -> bool {
    let mut pht_ok = true;
    let expected_phentsize = if elf.is_64 { 56 } else { 32 };
    if elf.phnum > 0 && elf.phentsize != expected_phentsize {
        elf.problems.push(format!("e_phentsize is {} (expected {expected_phentsize})", elf.phentsize));
        pht_ok = false;
    }
    let pht_end = elf.phoff.checked_add(elf.phnum.saturating_mul(elf.phentsize));
    if elf.phnum > 0 && pht_end.is_none_or(|end| end > elf.len) {
        pht_ok = false;
        elf.problems.push(format!(
            "program header table (offset {:#x}, {} entries) extends past the end of the file ({} bytes)",
            elf.phoff, elf.phnum, elf.len
        ));
    }
    if elf.shoff != 0 {
        let sht_end = elf.shoff.checked_add(elf.shnum.saturating_mul(elf.shentsize));
        if sht_end.is_none_or(|end| end > elf.len) {
            elf.problems.push(format!(
                "section header table (offset {:#x}, {} entries) extends past the end of the file ({} bytes)",
                elf.shoff, elf.shnum, elf.len
            ));
        }
    }
    pht_ok
}

fn read_segments(window: &ElfWindow, fields: Fields, elf: &mut ElfFile) {
    if elf.phnum == 0 {
        return;
    }
    let entry = elf.phentsize;
    let Some(table) = window.read_at(elf.phoff, elf.phnum * entry) else {
        elf.unchecked.push("program header table (outside the window)".to_owned());
        return;
    };
    for index in 0..elf.phnum as usize {
        let at = index * entry as usize;
        let segment = if elf.is_64 {
            Segment {
                kind: fields.u32(table, at) as u32,
                flags: fields.u32(table, at + 4) as u32,
                offset: fields.u64(table, at + 8),
                vaddr: fields.u64(table, at + 16),
                filesz: fields.u64(table, at + 32),
                memsz: fields.u64(table, at + 40),
            }
        } else {
            Segment {
                kind: fields.u32(table, at) as u32,
                offset: fields.u32(table, at + 4),
                vaddr: fields.u32(table, at + 8),
                filesz: fields.u32(table, at + 16),
                memsz: fields.u32(table, at + 20),
                flags: fields.u32(table, at + 24) as u32,
            }
        };
        elf.segments.push(segment);
    }
}

struct DynamicEntries {
    strtab: Option<u64>,
    strsz: Option<u64>,
    verneed: Option<u64>,
    verneednum: u64,
    needed: Vec<u64>,
    soname: Option<u64>,
    rpath: Option<u64>,
    runpath: Option<u64>,
}

fn read_dynamic(window: &ElfWindow, fields: Fields, elf: &mut ElfFile) {
    let Some(dynamic) = elf.segments.iter().find(|segment| segment.kind == PT_DYNAMIC).copied() else {
        return;
    };
    if dynamic.file_end() > elf.len {
        return; // Reported by the structure checks.
    }
    let Some(bytes) = window.read_at(dynamic.offset, dynamic.filesz) else {
        elf.unchecked.push("dynamic section (outside the window)".to_owned());
        return;
    };
    let entry_size = if elf.is_64 { 16 } else { 8 };
    let mut entries = DynamicEntries {
        strtab: None,
        strsz: None,
        verneed: None,
        verneednum: 0,
        needed: Vec::new(),
        soname: None,
        rpath: None,
        runpath: None,
    };
    for entry in bytes.chunks_exact(entry_size).take(MAX_ENTRIES) {
        let tag = fields.word(entry, 0);
        let value = fields.word(entry, entry_size / 2);
        match tag {
            DT_NULL => break,
            DT_NEEDED => entries.needed.push(value),
            DT_STRTAB => {
                entries.strtab = Some(value);
                elf.dynamic_addresses.push(("DT_STRTAB", value));
            }
            DT_SYMTAB => elf.dynamic_addresses.push(("DT_SYMTAB", value)),
            DT_STRSZ => entries.strsz = Some(value),
            DT_SONAME => entries.soname = Some(value),
            DT_RPATH => entries.rpath = Some(value),
            DT_RUNPATH => entries.runpath = Some(value),
            DT_VERNEED => {
                entries.verneed = Some(value);
                elf.dynamic_addresses.push(("DT_VERNEED", value));
            }
            DT_VERNEEDNUM => entries.verneednum = value,
            _ => {}
        }
    }
    elf.dynamic_strings = entries.strtab.zip(entries.strsz);
    let Some(strtab_vaddr) = entries.strtab else {
        if !entries.needed.is_empty() {
            elf.problems.push("dynamic section has DT_NEEDED but no DT_STRTAB".to_owned());
        }
        return;
    };
    let Some(strtab_offset) = elf.offset_of(strtab_vaddr) else {
        return; // Reported by the structure checks (DT_STRTAB outside every PT_LOAD).
    };
    let strsz = entries.strsz.unwrap_or(0);
    let Some(strtab) = window.read_at(strtab_offset, strsz) else {
        elf.unchecked.push("dynamic string table (outside the window or past the end of the file)".to_owned());
        return;
    };
    let string = |offset: u64, what: &str, elf: &mut ElfFile| -> Option<String> {
        let found = strtab.get(offset as usize..).and_then(|rest| {
            let end = rest.iter().position(|&byte| byte == 0)?;
            Some(String::from_utf8_lossy(&rest[..end]).into_owned())
        });
        if found.is_none() {
            elf.problems.push(format!("{what} string at {offset:#x} is outside the dynamic string table"));
        }
        found
    };
    for offset in std::mem::take(&mut entries.needed) {
        if let Some(name) = string(offset, "DT_NEEDED", elf) {
            elf.needed.push(name);
        }
    }
    elf.soname = entries.soname.and_then(|offset| string(offset, "DT_SONAME", elf));
    elf.rpath = entries.rpath.and_then(|offset| string(offset, "DT_RPATH", elf));
    elf.runpath = entries.runpath.and_then(|offset| string(offset, "DT_RUNPATH", elf));
    if let Some(verneed) = entries.verneed {
        read_verneed(window, fields, elf, verneed, entries.verneednum, strtab);
    }
}

/// Walks `Elf_Verneed` / `Elf_Vernaux` (same layout for 32 and 64 bit).
fn read_verneed(window: &ElfWindow, fields: Fields, elf: &mut ElfFile, vaddr: u64, count: u64, strtab: &[u8]) {
    let Some(mut offset) = elf.offset_of(vaddr) else {
        return; // Reported by the structure checks.
    };
    let mut budget = MAX_ENTRIES;
    for _ in 0..count.min(MAX_ENTRIES as u64) {
        let Some(verneed) = window.read_at(offset, 16) else {
            elf.unchecked.push("symbol version requirements (outside the window)".to_owned());
            return;
        };
        let n_aux = fields.u16(verneed, 2);
        let mut aux_offset = offset.saturating_add(fields.u32(verneed, 8));
        for _ in 0..n_aux {
            budget = budget.saturating_sub(1);
            let Some(aux) = window.read_at(aux_offset, 16).filter(|_| budget > 0) else {
                elf.unchecked.push("symbol version requirements (outside the window)".to_owned());
                return;
            };
            let name_offset = fields.u32(aux, 8) as usize;
            if let Some(rest) = strtab.get(name_offset..) {
                let end = rest.iter().position(|&byte| byte == 0).unwrap_or(rest.len());
                elf.needed_versions.push(String::from_utf8_lossy(&rest[..end]).into_owned());
            }
            let next = fields.u32(aux, 12);
            if next == 0 {
                break;
            }
            aux_offset = aux_offset.saturating_add(next);
        }
        let next = fields.u32(verneed, 12);
        if next == 0 {
            break;
        }
        offset = offset.saturating_add(next);
    }
}

/// The wheel platform architecture name for an `e_machine` ([`Architecture`]'s).
pub fn arch_name(machine: u16, little_endian: bool) -> Option<&'static str> {
    crate::Architecture::from_elf(machine, little_endian).map(crate::Architecture::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Corrupt input is reported, never a panic or an endless loop.
        #[test]
        fn arbitrary_headers_never_panic(
            class in 1u8..=2,
            data in 1u8..=2,
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..4096),
        ) {
            let mut bytes = vec![0x7f, b'E', b'L', b'F', class, data];
            bytes.extend(body);
            let mut window = ElfWindow::default();
            window.push(&bytes);
            let _ = parse_elf(&window);
        }
    }
}
