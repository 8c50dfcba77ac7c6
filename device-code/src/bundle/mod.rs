//! The offload bundles of a host file's `.hip_fatbin` section and the code objects in them
//! (KPACK.md §3): plain bundles and compressed (`CCOB`) ones, back to back with padding
//! between them, found by their magic as LLVM's `extractOffloadBundle` and rocm-kpack do.
//!
//! Code objects are streamed, never held whole: a plain bundle's entries are ranges of the
//! file read with positioned reads; a compressed bundle is decompressed once into a spool
//! (memory while small, else an unlinked temporary file) bounded by its header's claim and
//! a hard cap. Host entries are dropped.
//!
//! Owns: finding the section, walking its bundles, naming each code object by its entry id,
//! target and repeat number. Must not know: which archive a code object goes to, or what
//! the host's wrappers do with a bundle (the host transform maps them by
//! [`Bundle::offset_in_section`]).

mod compressed;
mod plain;
mod spool;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::elf_headers::{ElfHeaders, SHT_NOBITS};
use crate::target::{EntryId, TargetId};
use crate::DeviceCodeError;

use spool::{FileRange, Region, Spool, SubRegion};

/// The section clang's HIP toolchain puts offload bundles in.
pub const FATBIN_SECTION: &str = ".hip_fatbin";
/// Bytes searched per read when looking for the next bundle's magic.
const SEARCH_CHUNK: usize = 1 << 16;
/// Bytes copied per positioned read when streaming a code object.
const COPY_CHUNK: usize = 1 << 18;

/// Where `.hip_fatbin`'s bytes are in the file and where it is mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FatbinSection {
    pub offset: u64,
    pub size: u64,
    pub addr: u64,
}

/// Whether a file has device code to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fatbin {
    /// No `.hip_fatbin` section.
    Absent,
    /// `.hip_fatbin` is `SHT_NOBITS`: its bytes were taken out of the file, as a kpack
    /// split leaves it (KPACK.md §2 step 6).
    Split { addr: u64, size: u64 },
    /// `.hip_fatbin` with its bytes in the file.
    Present(FatbinSection),
}

/// Finds `.hip_fatbin` in `headers` (of the file at `path`), checking that its bytes lie
/// inside the file.
pub fn fatbin_section(headers: &ElfHeaders, path: &Path) -> Result<Fatbin, DeviceCodeError> {
    let Some(section) = headers.section(FATBIN_SECTION) else {
        return Ok(Fatbin::Absent);
    };
    if section.kind == SHT_NOBITS {
        return Ok(Fatbin::Split { addr: section.addr, size: section.size });
    }
    if !headers.contains(section.offset, section.size) {
        return Err(DeviceCodeError::Elf {
            path: path.to_path_buf(),
            reason: format!(
                "{FATBIN_SECTION} (bytes {}..+{}) runs past the end of the file ({} bytes)",
                section.offset, section.size, headers.file_size
            ),
        });
    }
    Ok(Fatbin::Present(FatbinSection { offset: section.offset, size: section.size, addr: section.addr }))
}

/// One bundle of the section: a wrapper in `.hipFatBinSegment` points at its first byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    /// Where the bundle starts inside the section.
    pub offset_in_section: u64,
    /// Its bytes in the section: a plain bundle's table and entries, or a compressed
    /// bundle's total size.
    pub len: u64,
    pub compressed: bool,
    /// Its device code objects in table order (the entries of every plain bundle inside a
    /// compressed one, in order); host entries are left out.
    pub entries: Vec<CodeObject>,
}

/// One device code object of a bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeObject {
    /// The entry id as written (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`).
    pub entry_id: String,
    pub target: TargetId,
    /// 0 the first time an entry id appears in its bundle, then 1, 2, … for repeats (the
    /// `-fgpu-rdc` case), in table order.
    pub repeat: u32,
    pub size: u64,
    location: Location,
}

/// Where a code object's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Location {
    /// At this offset of the host file.
    File(u64),
    /// At this offset of the spool.
    Spool(u64),
}

/// The device code of one host file: its bundles, read once, and the means to stream any
/// code object out again.
#[derive(Debug)]
pub struct FatBinary {
    path: PathBuf,
    file: File,
    section: FatbinSection,
    bundles: Vec<Bundle>,
    spool: Spool,
}

impl FatBinary {
    /// Reads the bundles of `file` (at `path`, named in errors); `None` when the file has
    /// no `.hip_fatbin` bytes (no section, or one already split: see [`fatbin_section`]).
    pub fn read(file: &File, path: &Path) -> Result<Option<FatBinary>, DeviceCodeError> {
        let headers = ElfHeaders::read(file, path)?;
        FatBinary::read_with_headers(file, path, &headers)
    }

    /// [`FatBinary::read`] with the header tables the caller has already read.
    pub fn read_with_headers(
        file: &File,
        path: &Path,
        headers: &ElfHeaders,
    ) -> Result<Option<FatBinary>, DeviceCodeError> {
        let Fatbin::Present(section) = fatbin_section(headers, path)? else {
            return Ok(None);
        };
        let file = file.try_clone().map_err(|source| DeviceCodeError::Io { path: path.to_path_buf(), source })?;
        let mut spool = Spool::default();
        let bundles = read_bundles(&file, path, section, &mut spool)?;
        Ok(Some(FatBinary { path: path.to_path_buf(), file, section, bundles, spool }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn section(&self) -> FatbinSection {
        self.section
    }

    pub fn bundles(&self) -> &[Bundle] {
        &self.bundles
    }

    /// Writes the bytes of `code_object` (one of this file's) to `out`, a chunk at a time,
    /// and returns how many were written.
    pub fn copy_code_object(&self, code_object: &CodeObject, out: &mut dyn Write) -> Result<u64, DeviceCodeError> {
        let io_error = |source| DeviceCodeError::Io { path: self.path.clone(), source };
        let mut buf = vec![0u8; COPY_CHUNK.min(code_object.size as usize)];
        let mut done = 0u64;
        while done < code_object.size {
            let len = (code_object.size - done).min(buf.len() as u64) as usize;
            let chunk = &mut buf[..len];
            match code_object.location {
                Location::File(offset) => self.file.read_exact_at(chunk, offset + done),
                Location::Spool(offset) => self.spool.read_exact_at(chunk, offset + done),
            }
            .map_err(io_error)?;
            out.write_all(chunk).map_err(|error| {
                io_error(io::Error::new(error.kind(), format!("writing code object {}: {error}", code_object.entry_id)))
            })?;
            done += len as u64;
        }
        Ok(done)
    }
}

/// Which magic starts a bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Magic {
    Plain,
    Compressed,
}

fn read_bundles(
    file: &File,
    path: &Path,
    section: FatbinSection,
    spool: &mut Spool,
) -> Result<Vec<Bundle>, DeviceCodeError> {
    let region = FileRange { file, base: section.offset, len: section.size };
    let bundle_error = |offset, reason| DeviceCodeError::Bundle { path: path.to_path_buf(), offset, reason };
    let mut bundles = Vec::new();
    let mut at = 0u64;
    while let Some((start, magic)) = find_magic(&region, at).map_err(|source| io_error(path, source))? {
        let bundle = match magic {
            Magic::Plain => {
                let plain = plain::read_plain(&region, start).map_err(|reason| bundle_error(start, reason))?;
                let entries = code_objects(plain.entries, |offset| Location::File(section.offset + offset))
                    .map_err(|reason| bundle_error(start, reason))?;
                Bundle { offset_in_section: start, len: plain.end - start, compressed: false, entries }
            }
            Magic::Compressed => {
                let header = compressed::read_header(&region, start).map_err(|reason| bundle_error(start, reason))?;
                let base = compressed::decompress(&region, start, &header, spool).map_err(|error| match error {
                    compressed::DecompressError::Format(reason) => bundle_error(start, reason),
                    compressed::DecompressError::Spool(source) => io_error(path, source),
                })?;
                let raw = payload_entries(spool, base, header.uncompressed)
                    .map_err(|reason| bundle_error(start, format!("in the decompressed payload: {reason}")))?;
                let entries = code_objects(raw, |offset| Location::Spool(base + offset))
                    .map_err(|reason| bundle_error(start, reason))?;
                Bundle { offset_in_section: start, len: header.total, compressed: true, entries }
            }
        };
        at = start + bundle.len;
        bundles.push(bundle);
    }
    if bundles.is_empty() {
        return Err(bundle_error(0, format!("no offload bundle in the section's {} bytes", section.size)));
    }
    Ok(bundles)
}

/// The entries of the plain bundles a compressed bundle's payload holds, their offsets
/// relative to the payload's start.
fn payload_entries(spool: &Spool, base: u64, len: u64) -> Result<Vec<plain::RawEntry>, String> {
    let payload = SubRegion { inner: spool, base, len };
    let mut entries = Vec::new();
    let mut at = 0;
    while let Some((start, magic)) = find_magic(&payload, at).map_err(|error| format!("reading the spool: {error}"))? {
        if magic == Magic::Compressed {
            return Err(format!("a compressed bundle inside a compressed bundle, at offset {start}"));
        }
        let plain =
            plain::read_plain(&payload, start).map_err(|reason| format!("bundle at offset {start}: {reason}"))?;
        entries.extend(plain.entries);
        at = plain.end;
    }
    if entries.is_empty() {
        return Err("no offload bundle".to_owned());
    }
    Ok(entries)
}

/// The device entries of a bundle as code objects, repeats numbered; `locate` turns an
/// offset of the region the entries were read from into a [`Location`].
fn code_objects(entries: Vec<plain::RawEntry>, locate: impl Fn(u64) -> Location) -> Result<Vec<CodeObject>, String> {
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    let mut code_objects = Vec::new();
    for entry in entries {
        let id = EntryId::parse(&entry.id).map_err(|error| error.to_string())?;
        if id.is_host() {
            continue;
        }
        let Some(target) = id.target else {
            return Err(format!("entry {:?} is device code for no target", entry.id));
        };
        let count = seen.entry(entry.id.clone()).or_default();
        let repeat = *count;
        *count += 1;
        code_objects.push(CodeObject {
            entry_id: entry.id,
            target,
            repeat,
            size: entry.size,
            location: locate(entry.offset),
        });
    }
    if code_objects.is_empty() {
        return Err("the bundle holds no device code (only host entries)".to_owned());
    }
    Ok(code_objects)
}

/// The first bundle magic at or after `from`, and which one.
fn find_magic(region: &dyn Region, from: u64) -> io::Result<Option<(u64, Magic)>> {
    let keep = plain::MAGIC.len() - 1;
    let mut buf = vec![0u8; SEARCH_CHUNK + keep];
    let mut at = from;
    while at < region.len() {
        let len = (region.len() - at).min(buf.len() as u64) as usize;
        let window = &mut buf[..len];
        region.read_exact_at(window, at)?;
        let found = (0..len).find_map(|index| {
            let rest = &window[index..];
            if rest.starts_with(plain::MAGIC) {
                Some((index, Magic::Plain))
            } else if rest.starts_with(compressed::MAGIC) {
                Some((index, Magic::Compressed))
            } else {
                None
            }
        });
        if let Some((index, magic)) = found {
            return Ok(Some((at + index as u64, magic)));
        }
        if len < buf.len() {
            break;
        }
        // The last `keep` bytes may start a magic cut by the window's end.
        at += (len - keep) as u64;
    }
    Ok(None)
}

fn io_error(path: &Path, source: io::Error) -> DeviceCodeError {
    DeviceCodeError::Io { path: path.to_path_buf(), source }
}

#[cfg(test)]
mod tests;
