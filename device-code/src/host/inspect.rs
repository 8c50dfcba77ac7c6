//! Reading a host binary's fat-binary wrappers: `.hipFatBinSegment`'s 24-byte
//! `__CudaFatBinaryWrapper`s (u32 magic, u32 version, u64 pointer, u64 reserved), the
//! relocation of each pointer, and whether the file is fat, already split, or neither.
//!
//! Owns: that reading and its checks (whole wrappers, known magics, no partial split).
//! Must not know: the new layout (`layout`) or how the result is written (`output`).

use std::fs::File;
use std::path::Path;

use crate::elf_headers::u64_at;
use crate::elf_headers::{read_range, ElfHeaders, EM_X86_64, ET_DYN, ET_EXEC, SHT_NOBITS};
use crate::host::relocations;
use crate::host::symbols;
use crate::host::{FatState, HostBinary, Wrapper, WrapperSite, MAGIC_FAT, MAGIC_KPACK};
use crate::DeviceCodeError;

/// Size of one wrapper.
pub(crate) const WRAPPER_SIZE: u64 = 24;
/// More wrappers than any real binary has (Debian's rocSPARSE has 111): a bound, so a
/// corrupt section size cannot make the reader allocate without limit.
const MAX_WRAPPERS: u64 = 1 << 20;

/// Reads the wrappers of `file` (named `path` in errors). Reads the header tables, the
/// wrappers, the mapped relocation tables and the symbol tables (for symbols defined in
/// `.hip_fatbin`), in bounded chunks; never `.hip_fatbin` itself.
pub fn inspect(file: &File, path: &Path) -> Result<HostBinary, DeviceCodeError> {
    let headers = ElfHeaders::read(file, path)?;
    let fatbin = headers.sections.iter().position(|section| section.name == b".hip_fatbin");
    let segment = headers.sections.iter().find(|section| section.name == b".hipFatBinSegment");
    let mut binary = HostBinary {
        path: path.to_path_buf(),
        headers: headers.clone(),
        state: FatState::NotFat,
        fatbin,
        wrappers: Vec::new(),
        sites: Vec::new(),
        stray_relocations: Vec::new(),
        fatbin_symbols: Vec::new(),
        section_names: Vec::new(),
    };
    let Some(segment) = segment.filter(|segment| segment.size > 0) else {
        return Ok(binary);
    };
    if segment.size % WRAPPER_SIZE != 0 {
        return Err(DeviceCodeError::WrapperSegment { path: path.to_path_buf(), size: segment.size });
    }
    if segment.kind == SHT_NOBITS || segment.size / WRAPPER_SIZE > MAX_WRAPPERS {
        return Err(layout_error(
            path,
            format!("`.hipFatBinSegment` of {} bytes has no wrappers in the file", segment.size),
        ));
    }
    if headers.header.machine != EM_X86_64 || !matches!(headers.header.kind, ET_DYN | ET_EXEC) {
        return Err(layout_error(
            path,
            format!(
                "only x86-64 shared objects and executables are split (e_machine {}, e_type {})",
                headers.header.machine, headers.header.kind
            ),
        ));
    }
    let raw = read_range(file, path, headers.file_size, segment.offset, segment.size)?;
    let count = raw.len() / WRAPPER_SIZE as usize;
    let fatbin_range = fatbin.map_or((0, 0), |index| {
        let section = &headers.sections[index];
        (section.addr, section.addr.saturating_add(section.size))
    });
    if let Some(index) = fatbin {
        binary.fatbin_symbols = symbols::read(file, path, &headers, index)?;
    }
    let found = relocations::read(file, path, &headers, (segment.addr, count), fatbin_range, &binary.fatbin_symbols)?;
    let position_independent = headers.header.kind == ET_DYN;
    for (index, bytes) in raw.chunks_exact(WRAPPER_SIZE as usize).enumerate() {
        let index = u32::try_from(index).expect("the wrapper count is bounded far below 2^32");
        let mut magic = [0u8; 4];
        magic.copy_from_slice(&bytes[..4]);
        if magic != MAGIC_FAT && magic != MAGIC_KPACK {
            return Err(DeviceCodeError::WrapperMagic { path: path.to_path_buf(), index, magic });
        }
        let relocation = found.wrapper_pointers[index as usize];
        let packed = found.packed_pointers[index as usize];
        if (relocation.is_some() || packed) && !position_independent {
            return Err(relocations::relocation_error(
                path,
                format!("fat-binary wrapper {index}'s pointer is relocated in a fixed-address executable"),
            ));
        }
        // A RELA relocation's addend is the value the runtime reads; the stored word is only
        // what the linker happened to write there (it is the addend of a packed relocation).
        let pointer = relocation.map_or(u64_at(bytes, 8), |(_, addend)| addend as u64);
        let inside = (fatbin_range.0..fatbin_range.1).contains(&pointer);
        binary.wrappers.push(Wrapper {
            index,
            magic,
            version: u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            pointer,
            reserved: u64_at(bytes, 16),
            fatbin_offset: (magic == MAGIC_FAT && inside).then(|| pointer - fatbin_range.0),
        });
        binary.sites.push(WrapperSite {
            file_offset: segment.offset + u64::from(index) * WRAPPER_SIZE,
            pointer_address: segment.addr.wrapping_add(u64::from(index) * WRAPPER_SIZE + 8),
            relocation: relocation.map(|(offset, _)| offset),
            packed,
        });
    }
    binary.stray_relocations = found.into_fatbin;
    let names = headers.sections.get(usize::from(headers.header.shstrndx)).filter(|_| headers.header.shstrndx != 0);
    if let Some(names) = names.filter(|names| names.has_file_bytes()) {
        binary.section_names = read_range(file, path, headers.file_size, names.offset, names.size)?;
    }
    let split = binary.wrappers.iter().filter(|wrapper| wrapper.magic == MAGIC_KPACK).count();
    binary.state = match split {
        0 => FatState::Fat,
        split if split == count => FatState::AlreadySplit,
        split => return Err(DeviceCodeError::PartlySplit { path: path.to_path_buf(), split, total: count }),
    };
    Ok(binary)
}

pub(crate) fn layout_error(path: &Path, reason: String) -> DeviceCodeError {
    DeviceCodeError::HostLayout { path: path.to_path_buf(), reason }
}
