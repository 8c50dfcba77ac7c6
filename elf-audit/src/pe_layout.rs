//! What a Windows loader requires of a PE file's layout before it maps it, checked
//! without mapping: every section's raw bytes lie within the file and its pages within
//! `SizeOfImage`; the export, import and exception directories lie within the image and in
//! one section's bytes; each import descriptor names a DLL and a thunk array that ends
//! within its section, whose entries point at hint/name entries outside the array itself;
//! each export and exception entry points into the image. `goblin` parses files that
//! break these (it reads what it can), and a loader refuses them.
//!
//! Owns: these rules, over any byte source ([`PeBytes`]: a slice, or an open file read at
//! offsets, so a large DLL is never held whole). Does not own: what a finding means (the
//! caller's words and severity), imports across a set.

use std::os::unix::fs::FileExt;

/// Bytes of a PE file, read at offsets.
pub trait PeBytes {
    fn byte_len(&self) -> u64;
    /// `buf.len()` bytes at `offset`, or `false` when the file has not that many.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> bool;
}

impl PeBytes for &[u8] {
    fn byte_len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> bool {
        let Ok(start) = usize::try_from(offset) else {
            return false;
        };
        match self.get(start..start.saturating_add(buf.len())) {
            Some(bytes) if bytes.len() == buf.len() => {
                buf.copy_from_slice(bytes);
                true
            }
            _ => false,
        }
    }
}

impl PeBytes for std::fs::File {
    fn byte_len(&self) -> u64 {
        self.metadata().map(|metadata| metadata.len()).unwrap_or(0)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> bool {
        self.read_exact_at(buf, offset).is_ok()
    }
}

const DIRECTORY_NAMES: [&str; 4] = ["export", "import", "resource", "exception"];
const EXPORT: usize = 0;
const IMPORT: usize = 1;
const EXCEPTION: usize = 3;
/// More import descriptors, thunks or exports than any real file has: a walk stops there.
const MAX_WALK: u64 = 1 << 20;
/// The longest DLL or function name read.
const MAX_NAME: u64 = 4096;
const IMAGE_FILE_MACHINE_AMD64: u16 = 0x8664;

#[derive(Clone, Copy, Debug)]
struct Section {
    name: [u8; 8],
    virtual_address: u64,
    virtual_size: u64,
    raw_size: u64,
    raw_offset: u64,
}

impl Section {
    fn name(&self) -> String {
        let end = self.name.iter().position(|&byte| byte == 0).unwrap_or(8);
        String::from_utf8_lossy(&self.name[..end]).into_owned()
    }
}

/// The headers the rules need.
struct Layout<'a> {
    bytes: &'a dyn PeBytes,
    pe32_plus: bool,
    machine: u16,
    size_of_image: u64,
    size_of_headers: u64,
    directories: Vec<(u64, u64)>,
    sections: Vec<Section>,
}

/// Checks the layout of the PE file in `bytes`: `Ok` when it is not a PE file (no `MZ` and
/// `PE\0\0`: another check's business) or when it keeps every rule; `Err` says which rule
/// it breaks, in words.
pub fn check_pe_layout(bytes: &dyn PeBytes) -> Result<(), String> {
    let Some(layout) = read_layout(bytes)? else {
        return Ok(());
    };
    layout.check_sections()?;
    for index in [EXPORT, IMPORT, EXCEPTION] {
        layout.check_directory(index)?;
    }
    layout.check_imports()?;
    layout.check_exports()?;
    layout.check_exceptions()
}

fn u16_at(bytes: &[u8], at: usize) -> u64 {
    u64::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

fn u32_at(bytes: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]))
}

fn read_vec(bytes: &dyn PeBytes, offset: u64, len: u64) -> Option<Vec<u8>> {
    // Checked before allocating: a length read from the file never reserves more than it holds.
    if offset.checked_add(len)? > bytes.byte_len() {
        return None;
    }
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    bytes.read_at(offset, &mut buf).then_some(buf)
}

fn read_layout(bytes: &dyn PeBytes) -> Result<Option<Layout<'_>>, String> {
    let Some(dos) = read_vec(bytes, 0, 64).filter(|dos| dos.starts_with(b"MZ")) else {
        return Ok(None);
    };
    let lfanew = u32_at(&dos, 0x3c);
    let Some(coff) = read_vec(bytes, lfanew, 24).filter(|coff| coff.starts_with(b"PE\0\0")) else {
        return Ok(None);
    };
    let (machine, n_sections, optional_len) = (u16_at(&coff, 4) as u16, u16_at(&coff, 6), u16_at(&coff, 20));
    let optional_at = lfanew + 24;
    let optional =
        read_vec(bytes, optional_at, optional_len).ok_or("its optional header runs past the end of the file")?;
    let pe32_plus = match optional.get(..2) {
        Some([0x0b, 0x02]) => true,
        Some([0x0b, 0x01]) => false,
        _ => return Err("its optional header has no PE32 or PE32+ magic".into()),
    };
    let (count_at, directories_at) = if pe32_plus { (108, 112) } else { (92, 96) };
    if optional.len() < directories_at {
        return Err("its optional header is too short".into());
    }
    let n_directories = u32_at(&optional, count_at).min(16) as usize;
    let directories = (0..n_directories)
        .map(|index| directories_at + 8 * index)
        .take_while(|at| at + 8 <= optional.len())
        .map(|at| (u32_at(&optional, at), u32_at(&optional, at + 4)))
        .collect();
    let table = read_vec(bytes, optional_at + optional_len, 40 * n_sections)
        .ok_or("its section table runs past the end of the file")?;
    let sections = table
        .chunks_exact(40)
        .map(|entry| Section {
            name: entry[..8].try_into().expect("8 bytes"),
            virtual_size: u32_at(entry, 8),
            virtual_address: u32_at(entry, 12),
            raw_size: u32_at(entry, 16),
            raw_offset: u32_at(entry, 20),
        })
        .collect();
    Ok(Some(Layout {
        bytes,
        pe32_plus,
        machine,
        size_of_image: u32_at(&optional, 56),
        size_of_headers: u32_at(&optional, 60),
        directories,
        sections,
    }))
}

impl Layout<'_> {
    fn check_sections(&self) -> Result<(), String> {
        let file_len = self.bytes.byte_len();
        for section in &self.sections {
            if section.raw_size > 0 && section.raw_offset + section.raw_size > file_len {
                return Err(format!(
                    "section `{}` claims {} raw bytes at offset {}, past the end of the file ({file_len} bytes)",
                    section.name(),
                    section.raw_size,
                    section.raw_offset
                ));
            }
            if section.virtual_address + section.virtual_size.max(1) > self.size_of_image {
                return Err(format!(
                    "section `{}` (RVA {:#x}, {} bytes) lies beyond the image's {} bytes (SizeOfImage)",
                    section.name(),
                    section.virtual_address,
                    section.virtual_size,
                    self.size_of_image
                ));
            }
        }
        Ok(())
    }

    fn directory(&self, index: usize) -> Option<(u64, u64)> {
        self.directories.get(index).copied().filter(|&(rva, size)| rva != 0 || size != 0)
    }

    /// The section whose raw bytes hold `[rva, rva + len)`, with the file offset of `rva`.
    fn map(&self, rva: u64, len: u64) -> Option<(Section, u64)> {
        self.sections.iter().copied().find_map(|section| {
            let within = rva >= section.virtual_address && rva + len <= section.virtual_address + section.raw_size;
            within.then(|| (section, section.raw_offset + (rva - section.virtual_address)))
        })
    }

    fn check_directory(&self, index: usize) -> Result<(), String> {
        let Some((rva, size)) = self.directory(index) else {
            return Ok(());
        };
        let name = DIRECTORY_NAMES[index];
        if rva + size > self.size_of_image {
            return Err(format!(
                "its {name} directory (RVA {rva:#x}, {size} bytes) runs past the image's {} bytes (SizeOfImage)",
                self.size_of_image
            ));
        }
        if self.map(rva, size).is_none() && rva + size > self.size_of_headers {
            return Err(format!("its {name} directory (RVA {rva:#x}, {size} bytes) lies in no section's bytes"));
        }
        Ok(())
    }

    /// The NUL-terminated name at `rva`, which must lie in a section.
    fn name_at(&self, rva: u64, what: &str) -> Result<String, String> {
        let (section, offset) = self.map(rva, 1).ok_or_else(|| format!("{what} (RVA {rva:#x}) lies in no section"))?;
        let room = (section.virtual_address + section.raw_size - rva).min(MAX_NAME);
        let bytes = read_vec(self.bytes, offset, room).ok_or_else(|| format!("{what} (RVA {rva:#x}) is cut off"))?;
        let end =
            bytes.iter().position(|&byte| byte == 0).ok_or_else(|| format!("{what} (RVA {rva:#x}) never ends"))?;
        Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }

    fn check_imports(&self) -> Result<(), String> {
        let Some((table_rva, _)) = self.directory(IMPORT) else {
            return Ok(());
        };
        // The descriptors first, to their all-zero end: the directory's size may cover the
        // names and thunks too (GNU ld's does), so only the descriptors themselves count as
        // the table a thunk must not point into.
        let mut imports = Vec::new();
        for index in 0..=MAX_WALK {
            if index == MAX_WALK {
                return Err("its import descriptors never end".into());
            }
            let rva = table_rva + 20 * index;
            let (_, offset) =
                self.map(rva, 20).ok_or("its import descriptors run out of their section unterminated")?;
            let descriptor = read_vec(self.bytes, offset, 20).ok_or("its import descriptors are cut off")?;
            if descriptor.iter().all(|&byte| byte == 0) {
                break;
            }
            let (lookup, name, first) = (u32_at(&descriptor, 0), u32_at(&descriptor, 12), u32_at(&descriptor, 16));
            imports.push((name, if lookup != 0 { lookup } else { first }));
        }
        let descriptors = (table_rva, table_rva + 20 * (imports.len() as u64 + 1));
        for (name, thunks) in imports {
            let dll = self.name_at(name, "an imported DLL's name")?;
            self.check_thunks(&dll, thunks, descriptors)?;
        }
        Ok(())
    }

    /// The thunk array at `start` ends within its section, and each entry by name points
    /// at a hint/name entry outside the array and the descriptor table (`descriptors`).
    fn check_thunks(&self, dll: &str, start: u64, descriptors: (u64, u64)) -> Result<(), String> {
        let width = if self.pe32_plus { 8 } else { 4 };
        let (section, offset) = self
            .map(start, width)
            .ok_or_else(|| format!("the thunks of `{dll}` (RVA {start:#x}) lie in no section"))?;
        let room = (section.virtual_address + section.raw_size - start).min(MAX_WALK * width);
        let array = read_vec(self.bytes, offset, room).ok_or_else(|| format!("the thunks of `{dll}` are cut off"))?;
        for (index, entry) in array.chunks_exact(width as usize).enumerate() {
            let value = match width {
                8 => u64::from_le_bytes(entry.try_into().expect("8 bytes")),
                _ => u32_at(entry, 0),
            };
            if value == 0 {
                let end = start + width * index as u64;
                return self.check_named_thunks(
                    dll,
                    &array[..width as usize * index],
                    (start, end + width),
                    descriptors,
                );
            }
        }
        Err(format!("the thunks of `{dll}` run out of section `{}` unterminated", section.name()))
    }

    fn check_named_thunks(
        &self,
        dll: &str,
        array: &[u8],
        own: (u64, u64),
        descriptors: (u64, u64),
    ) -> Result<(), String> {
        let width = if self.pe32_plus { 8 } else { 4 };
        let ordinal_flag = 1u64 << (width * 8 - 1);
        for entry in array.chunks_exact(width) {
            let value = match width {
                8 => u64::from_le_bytes(entry.try_into().expect("8 bytes")),
                _ => u32_at(entry, 0),
            };
            if value & ordinal_flag != 0 {
                continue;
            }
            let inside = |(low, high): (u64, u64)| value >= low && value < high;
            if inside(own) || inside(descriptors) {
                return Err(format!(
                    "an import thunk of `{dll}` points at {value:#x}, into the import tables themselves, not at a name"
                ));
            }
            self.name_at(value + 2, &format!("a function name imported from `{dll}`"))?;
        }
        Ok(())
    }

    fn check_exports(&self) -> Result<(), String> {
        let Some((rva, _)) = self.directory(EXPORT) else {
            return Ok(());
        };
        let (_, offset) = self.map(rva, 40).ok_or("its export directory is cut off")?;
        let directory = read_vec(self.bytes, offset, 40).ok_or("its export directory is cut off")?;
        let (n_functions, n_names) = (u32_at(&directory, 20), u32_at(&directory, 24));
        let (functions, names, ordinals) = (u32_at(&directory, 28), u32_at(&directory, 32), u32_at(&directory, 36));
        if n_functions > MAX_WALK || n_names > MAX_WALK {
            return Err(format!("its export directory lists {n_functions} functions and {n_names} names"));
        }
        let table = |at: u64, len: u64, what: &str| {
            self.map(at, len).ok_or_else(|| format!("its export {what} (RVA {at:#x}, {len} bytes) lie in no section"))
        };
        let (_, functions_at) = table(functions, 4 * n_functions, "addresses")?;
        table(names, 4 * n_names, "names")?;
        table(ordinals, 2 * n_names, "ordinals")?;
        let addresses =
            read_vec(self.bytes, functions_at, 4 * n_functions).ok_or("its export addresses are cut off")?;
        for address in addresses.chunks_exact(4).map(|entry| u32_at(entry, 0)) {
            if address >= self.size_of_image {
                return Err(format!(
                    "it exports an address {address:#x} beyond the image's {} bytes (SizeOfImage)",
                    self.size_of_image
                ));
            }
        }
        Ok(())
    }

    fn check_exceptions(&self) -> Result<(), String> {
        let Some((rva, size)) = self.directory(EXCEPTION).filter(|_| self.machine == IMAGE_FILE_MACHINE_AMD64) else {
            return Ok(());
        };
        if size % 12 != 0 {
            return Err(format!("its exception directory is {size} bytes, not a whole number of 12-byte entries"));
        }
        let (_, offset) = self.map(rva, size).ok_or("its exception directory lies in no section")?;
        let entries = read_vec(self.bytes, offset, size).ok_or("its exception directory is cut off")?;
        for entry in entries.chunks_exact(12) {
            let (begin, end, unwind) = (u32_at(entry, 0), u32_at(entry, 4), u32_at(entry, 8));
            if begin >= end || end > self.size_of_image || unwind >= self.size_of_image {
                return Err(format!(
                    "its exception directory has a function {begin:#x}..{end:#x} (unwind data at {unwind:#x}) \
                     outside the image's {} bytes",
                    self.size_of_image
                ));
            }
        }
        Ok(())
    }
}
