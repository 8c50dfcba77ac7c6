//! Packed relative relocations (`SHT_RELR`, `DT_RELR`: GNU ld's `-z pack-relative-relocs`,
//! lld's `--pack-dyn-relocs=relr`): a list of addresses whose word becomes load base + the
//! word stored there. A wrapper's pointer relocated this way needs only its stored word
//! rewritten; any other packed word that holds an address in `.hip_fatbin` is a relocation
//! into it.
//!
//! Owns: decoding the packed list and reading the words it names (through a bounded window).
//! Must not know: RELA relocations (`relocations`) or the new layout.

use std::fs::File;
use std::path::Path;

use crate::elf_headers::u64_at;
use crate::elf_headers::{read_range, ElfHeaders, PT_LOAD, SHF_ALLOC};
use crate::host::relocations::{relocation_error, Relocations};
use crate::DeviceCodeError;

/// `sh_type` of packed relative relocations.
pub(crate) const SHT_RELR: u32 = 19;
/// More packed relocations than any real file has: a bound on the words read.
const MAX_RELOCATIONS: u64 = 1 << 26;
/// Bytes of the file read at once while reading relocated words (they come in address order).
const WINDOW: u64 = 64 << 10;

/// Adds what the packed relocations say to `found` (see [`crate::host::relocations::read`]).
pub(crate) fn read(
    file: &File,
    path: &Path,
    headers: &ElfHeaders,
    segment: (u64, usize),
    fatbin: (u64, u64),
    found: &mut Relocations,
) -> Result<(), DeviceCodeError> {
    let (segment_address, count) = segment;
    let segment_end = segment_address.saturating_add(count as u64 * 24);
    let mut words = Words { file, path, headers, window: (0, Vec::new()) };
    let mut relocated = 0u64;
    for table in headers.sections.iter().filter(|table| table.kind == SHT_RELR && table.flags & SHF_ALLOC != 0) {
        if table.size % 8 != 0 {
            return Err(relocation_error(path, format!("`SHT_RELR` section of {} bytes", table.size)));
        }
        let entries = read_range(file, path, headers.file_size, table.offset, table.size)?;
        let mut next = 0u64;
        for entry in entries.chunks_exact(8).map(|entry| u64_at(entry, 0)) {
            // An even entry is an address; an odd one a bitmap of the 63 words after the last.
            let (start, bits) = if entry & 1 == 0 { (entry, 1) } else { (next, entry >> 1) };
            for bit in (0..64).filter(|bit| bits >> bit & 1 == 1) {
                let address = start.wrapping_add(bit * 8);
                relocated += 1;
                if relocated > MAX_RELOCATIONS {
                    return Err(relocation_error(path, "more packed relocations than any real file has".to_owned()));
                }
                if (segment_address..segment_end).contains(&address) {
                    let index = ((address - segment_address) / 24) as usize;
                    if (address - segment_address) % 24 != 8 || found.wrapper_pointers[index].is_some() {
                        return Err(relocation_error(
                            path,
                            format!("fat-binary wrapper {index} carries a packed relocation at {address:#x} besides or instead of its pointer's"),
                        ));
                    }
                    found.packed_pointers[index] = true;
                } else if (fatbin.0..fatbin.1).contains(&words.at(address)?) {
                    found.into_fatbin.push(address);
                }
            }
            next = if entry & 1 == 0 { entry.wrapping_add(8) } else { next.wrapping_add(63 * 8) };
        }
    }
    Ok(())
}

/// The words at relocated addresses, read through a window of the file.
struct Words<'a> {
    file: &'a File,
    path: &'a Path,
    headers: &'a ElfHeaders,
    /// File offset and bytes of the window.
    window: (u64, Vec<u8>),
}

impl Words<'_> {
    /// The stored word at `address`; an address outside every `PT_LOAD`'s file bytes is refused.
    fn at(&mut self, address: u64) -> Result<u64, DeviceCodeError> {
        let offset = self
            .headers
            .segments
            .iter()
            .filter(|segment| segment.kind == PT_LOAD)
            .find(|segment| {
                address >= segment.vaddr && address.saturating_add(8) <= segment.vaddr.saturating_add(segment.filesz)
            })
            .map(|segment| segment.offset.saturating_add(address - segment.vaddr))
            .ok_or_else(|| {
                relocation_error(
                    self.path,
                    format!("a packed relocation at {address:#x} outside the file's loaded bytes"),
                )
            })?;
        let (start, bytes) = &self.window;
        if offset < *start || offset.saturating_add(8) > start + bytes.len() as u64 {
            let len = WINDOW.min(self.headers.file_size.saturating_sub(offset));
            self.window = (offset, read_range(self.file, self.path, self.headers.file_size, offset, len)?);
        }
        let (start, bytes) = &self.window;
        let at = (offset - start) as usize;
        bytes.get(at..at + 8).map(|word| u64_at(word, 0)).ok_or_else(|| {
            relocation_error(self.path, format!("a packed relocation at {address:#x} past the end of the file"))
        })
    }
}
