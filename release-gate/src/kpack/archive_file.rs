//! One `.kpack` archive judged as rocm-kpack's readers read it (SPEC §12, KPACK.md §1): a
//! 16-byte header (`KPAK`, version 1, the table of contents' offset inside the file), the
//! table of contents as one MessagePack map running to the end of the file, every entry's
//! ordinal resolving to a blob or zstd frame inside the file, every frame inflating to
//! exactly its `original_size`, and every code object an AMDGPU ELF file built for the
//! target it is filed under.
//!
//! Owns: reading an archive with bounded memory (the table is capped, frames are streamed
//! and only each code object's ELF header is kept) and the problems found, in words.
//! Does not own: where archives are (`kpack`), what a set needs of them (`split_set`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufReader, Read};

use super::amdgpu;
use super::msgpack::{read_value, Value};
use super::source::{read_exact_at, Positioned};
use crate::escape::escape;

const MAGIC: &[u8; 4] = b"KPAK";
const HEADER_BYTES: u64 = 16;
/// A table of contents lists a few dozen bytes per code object: 64 MiB is a million of
/// them, more than the reference reader's frame count allows.
const MAX_TOC_BYTES: u64 = 64 << 20;
/// The reference reader's bounds on a zstd blob (KPACK.md §1).
const MAX_ZSTD_BYTES: u64 = 4 << 30;
const MAX_FRAMES: u64 = 1 << 20;
/// The ELF header: all the code object check reads.
const HEAD_BYTES: usize = 64;
/// The longest zstd frame header (magic, descriptor, window, dictionary id, content size).
const FRAME_HEADER_BYTES: u64 = 18;

/// What an archive offers the runtime: its `gfx_arches` and the code objects that read
/// back whole and right, by (binary key, target).
#[derive(Debug, Default)]
pub(crate) struct KpackArchive {
    /// Where it installs in site-packages.
    pub path: String,
    pub gfx_arches: Vec<String>,
    pub entries: BTreeSet<(String, String)>,
    /// Entries its table of contents lists, read back or not.
    pub n_listed: usize,
}

/// One table-of-contents entry.
struct Entry {
    key: String,
    arch: String,
    ordinal: u64,
    original_size: u64,
}

impl Entry {
    fn describe(&self) -> String {
        format!("the code object of `{}` for {}", escape(&self.key), escape(&self.arch))
    }
}

/// Reads the archive at `path` from `source`; the problems are violations of that file.
pub(crate) fn read_kpack(source: &mut dyn Positioned, path: &str) -> (KpackArchive, Vec<String>) {
    let mut archive = KpackArchive { path: path.to_owned(), ..KpackArchive::default() };
    let mut problems = Vec::new();
    if let Err(problem) = read_into(source, &mut archive, &mut problems) {
        problems.push(problem);
    }
    (archive, problems)
}

fn read_into(
    source: &mut dyn Positioned,
    archive: &mut KpackArchive,
    problems: &mut Vec<String>,
) -> Result<(), String> {
    let len = source.len();
    if len < HEADER_BYTES {
        return Err(format!("is {len} bytes, shorter than the {HEADER_BYTES}-byte kpack header"));
    }
    let header = read_exact_at(source, 0, HEADER_BYTES as usize).map_err(cannot_read)?;
    if &header[..4] != MAGIC {
        return Err(format!("does not start with `KPAK` (it starts with {:02x?}): not a kpack archive", &header[..4]));
    }
    let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if version != 1 {
        return Err(format!("has format version {version}; rocm-kpack's readers read only version 1"));
    }
    let mut offset_bytes = [0u8; 8];
    offset_bytes.copy_from_slice(&header[8..16]);
    let toc_offset = u64::from_le_bytes(offset_bytes);
    if toc_offset < HEADER_BYTES || toc_offset >= len {
        return Err(format!("puts its table of contents at offset {toc_offset}, outside the file's {len} bytes"));
    }
    let toc_len = len - toc_offset;
    if toc_len > MAX_TOC_BYTES {
        return Err(format!(
            "has a table of contents of {toc_len} bytes, more than the {MAX_TOC_BYTES} the gate reads"
        ));
    }
    let toc_bytes = read_exact_at(source, toc_offset, toc_len as usize).map_err(cannot_read)?;
    let (toc, used) =
        read_value(&toc_bytes).map_err(|why| format!("table of contents at offset {toc_offset} {why}"))?;
    if used as u64 != toc_len {
        problems.push(format!(
            "has {} bytes after its table of contents, which the C++ reader parses as part of it",
            toc_len - used as u64
        ));
    }
    if toc.as_map().is_none() {
        return Err(format!("has {} as its table of contents, not a map", toc.kind()));
    }
    for key in ["group_name", "gfx_arch_family"] {
        if toc.get(key).and_then(Value::as_str).is_none() {
            problems.push(format!(
                "has no string `{key}` in its table of contents, which rocm-kpack's Python reader requires"
            ));
        }
    }
    archive.gfx_arches = read_arches(&toc)?;
    let entries = read_entries(&toc, &archive.gfx_arches, problems)?;
    archive.n_listed = entries.len();
    let scheme = match toc.get("compression_scheme") {
        None => {
            return Err("names no `compression_scheme`, so the C++ reader reads none of its code objects".to_owned())
        }
        Some(scheme) => scheme.as_str().ok_or_else(|| format!("has {} as `compression_scheme`", scheme.kind()))?,
    };
    let blob_end = toc_offset;
    let heads = match scheme {
        "zstd-per-kernel" => read_zstd(source, &toc, blob_end, &entries, problems)?,
        "none" => read_plain(source, &toc, blob_end, &entries, problems)?,
        other => {
            return Err(format!(
                "uses compression scheme `{}`, which the readers do not know (`none`, `zstd-per-kernel`)",
                escape(other)
            ))
        }
    };
    for entry in entries {
        let Some(head) = heads.get(&entry.ordinal) else { continue };
        match amdgpu::mismatch(head, &entry.arch) {
            Some(why) => problems.push(format!("{} (ordinal {}) {why}", entry.describe(), entry.ordinal)),
            None => {
                archive.entries.insert((entry.key, entry.arch));
            }
        }
    }
    Ok(())
}

fn cannot_read(error: io::Error) -> String {
    format!("cannot be read: {error}")
}

fn read_arches(toc: &Value) -> Result<Vec<String>, String> {
    let arches =
        toc.get("gfx_arches").and_then(Value::as_array).ok_or("has no `gfx_arches` array in its table of contents")?;
    arches
        .iter()
        .map(|arch| {
            arch.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("lists {} in `gfx_arches`, not a string", arch.kind()))
        })
        .collect()
}

/// `toc`: binary key → target → `{type, ordinal, original_size}`; every target must be one
/// the archive's `gfx_arches` lists, since the loader picks archives by that list.
fn read_entries(toc: &Value, gfx_arches: &[String], problems: &mut Vec<String>) -> Result<Vec<Entry>, String> {
    let keys = toc.get("toc").and_then(Value::as_map).ok_or("has no `toc` map in its table of contents")?;
    let mut entries = Vec::new();
    let mut unlisted: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (key, by_arch) in keys {
        let Some(key) = key.as_str() else {
            problems.push(format!("has {} as a binary key in `toc`, not a string", key.kind()));
            continue;
        };
        let Some(by_arch) = by_arch.as_map() else {
            problems.push(format!("has {} under `toc` key `{}`, not a map of targets", by_arch.kind(), escape(key)));
            continue;
        };
        for (arch, entry) in by_arch {
            let Some(arch) = arch.as_str() else {
                problems.push(format!("has {} as a target of `{}`, not a string", arch.kind(), escape(key)));
                continue;
            };
            let field = |name: &str| entry.get(name).and_then(Value::as_u64);
            let (Some(ordinal), Some(original_size)) = (field("ordinal"), field("original_size")) else {
                problems.push(format!(
                    "has an entry for `{}` under {} without a non-negative `ordinal` and `original_size`",
                    escape(key),
                    escape(arch)
                ));
                continue;
            };
            if !gfx_arches.iter().any(|listed| listed == arch) {
                unlisted.entry(arch).or_default().push(key);
                continue;
            }
            entries.push(Entry { key: key.to_owned(), arch: arch.to_owned(), ordinal, original_size });
        }
    }
    for (arch, keys) in unlisted {
        problems.push(format!(
            "files {} code objects under {} (`{}` first), which its `gfx_arches` ({}) does not list: the loader \
             never looks there",
            keys.len(),
            escape(arch),
            escape(keys[0]),
            escape(&gfx_arches.join(", "))
        ));
    }
    Ok(entries)
}

/// The size each referenced ordinal must have; entries that disagree about one are
/// reported and left out.
fn wanted_sizes(entries: &[Entry], problems: &mut Vec<String>) -> BTreeMap<u64, u64> {
    let mut wanted: BTreeMap<u64, u64> = BTreeMap::new();
    let mut conflicting = BTreeSet::new();
    for entry in entries {
        match wanted.insert(entry.ordinal, entry.original_size) {
            Some(other) if other != entry.original_size && conflicting.insert(entry.ordinal) => {
                problems.push(format!(
                    "gives ordinal {} two original sizes ({other} and {})",
                    entry.ordinal, entry.original_size
                ));
            }
            _ => {}
        }
    }
    for ordinal in conflicting {
        wanted.remove(&ordinal);
    }
    wanted
}

fn read_u32(reader: &mut dyn Read) -> io::Result<u32> {
    let mut bytes = [0u8; 4];
    reader.read_exact(&mut bytes)?;
    Ok(u32::from_le_bytes(bytes))
}

/// `zstd-per-kernel`: a u32 count, then per ordinal a u32 length and one zstd frame, in
/// `[zstd_offset, zstd_offset + zstd_size)`. Returns the ELF header of every referenced
/// code object that inflated to exactly its size.
fn read_zstd(
    source: &mut dyn Positioned,
    toc: &Value,
    blob_end: u64,
    entries: &[Entry],
    problems: &mut Vec<String>,
) -> Result<BTreeMap<u64, Vec<u8>>, String> {
    let field = |name: &str| toc.get(name).and_then(Value::as_u64);
    let (Some(start), Some(size)) = (field("zstd_offset"), field("zstd_size")) else {
        return Err("uses `zstd-per-kernel` without non-negative `zstd_offset` and `zstd_size`".to_owned());
    };
    if start < HEADER_BYTES || start.checked_add(size).is_none_or(|end| end > blob_end) {
        return Err(format!(
            "puts its zstd blob at offset {start} ({size} bytes), outside the bytes between the header and the \
             table of contents ({HEADER_BYTES}..{blob_end})"
        ));
    }
    if size > MAX_ZSTD_BYTES {
        return Err(format!("has a zstd blob of {size} bytes; the C++ reader refuses more than {MAX_ZSTD_BYTES}"));
    }
    let wanted = wanted_sizes(entries, problems);
    let mut heads = BTreeMap::new();
    let mut blob = BufReader::with_capacity(1 << 16, source.read_from(start).map_err(cannot_read)?.take(size));
    let count = u64::from(
        read_u32(&mut blob).map_err(|_| format!("has a zstd blob of {size} bytes, too short for its frame count"))?,
    );
    if count > MAX_FRAMES || count.saturating_mul(4) > size - 4 {
        return Err(format!("claims {count} zstd frames in a blob of {size} bytes"));
    }
    let mut at = 4u64;
    let mut complete = true;
    for ordinal in 0..count {
        if size - at < 4 {
            problems.push(format!("has a zstd blob that ends before frame {ordinal} of {count}"));
            complete = false;
            break;
        }
        let len = u64::from(read_u32(&mut blob).map_err(cannot_read)?);
        at += 4;
        if len > size - at {
            problems.push(format!("has frame {ordinal} of {len} bytes, past the end of its zstd blob ({size} bytes)"));
            complete = false;
            break;
        }
        let mut frame = (&mut blob).take(len);
        if let Some(&expected) = wanted.get(&ordinal) {
            match inflate(&mut frame, expected) {
                Ok(head) => {
                    heads.insert(ordinal, head);
                }
                Err(why) => problems.push(format!("has frame {ordinal} that {why}")),
            }
        }
        io::copy(&mut frame, &mut io::sink()).map_err(cannot_read)?;
        at += len;
    }
    if complete && at < size {
        problems.push(format!("has {} bytes after its last zstd frame, inside `zstd_size`", size - at));
    }
    for (ordinal, _) in wanted.iter().filter(|(ordinal, _)| **ordinal >= count) {
        problems.push(format!("refers to ordinal {ordinal}, but its zstd blob holds {count} frames"));
    }
    Ok(heads)
}

/// Inflates one frame, streamed, to at most `expected + 1` bytes: exactly `expected`, a
/// recorded content size (rocm-kpack's Python reader needs it) and nothing after the frame.
fn inflate<R: Read>(frame: &mut io::Take<R>, expected: u64) -> Result<Vec<u8>, String> {
    let mut header = Vec::new();
    frame
        .by_ref()
        .take(FRAME_HEADER_BYTES)
        .read_to_end(&mut header)
        .map_err(|error| format!("cannot be read: {error}"))?;
    match zstd::zstd_safe::get_frame_content_size(&header) {
        Ok(Some(recorded)) if recorded == expected => {}
        Ok(Some(recorded)) => {
            return Err(format!("records a content size of {recorded}, not its original_size {expected}"))
        }
        Ok(None) => return Err("records no content size, which rocm-kpack's Python reader needs".to_owned()),
        Err(_) => return Err("does not start with a zstd frame header".to_owned()),
    }
    let chained = io::Cursor::new(header).chain(frame);
    let decoder = zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(1 << 16, chained));
    let mut decoder = decoder.map_err(|error| format!("cannot be decompressed: {error}"))?.single_frame();
    let mut head = Vec::with_capacity(HEAD_BYTES);
    let mut total = 0u64;
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = match decoder.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(format!("does not decompress: {error}")),
        };
        let room = HEAD_BYTES.saturating_sub(head.len()).min(n);
        head.extend_from_slice(&buffer[..room]);
        total += n as u64;
        if total > expected {
            return Err(format!("inflates past its original_size {expected}"));
        }
    }
    if total < expected {
        return Err(format!("inflates to {total} bytes, not its original_size {expected}"));
    }
    let rest = decoder.finish();
    let buffered = rest.buffer().len() as u64;
    let (cursor, tail) = rest.into_inner().into_inner();
    let unread = buffered + (cursor.get_ref().len() as u64).saturating_sub(cursor.position()) + tail.limit();
    if unread > 0 {
        return Err(format!("has {unread} bytes after the end of its zstd frame"));
    }
    Ok(head)
}

/// `none`: `blobs[ordinal] = {offset, size}`, absolute, between the header and the table
/// of contents. Read in one pass in file order; overlapping blobs are reported, not reread.
fn read_plain(
    source: &mut dyn Positioned,
    toc: &Value,
    blob_end: u64,
    entries: &[Entry],
    problems: &mut Vec<String>,
) -> Result<BTreeMap<u64, Vec<u8>>, String> {
    let blobs = toc.get("blobs").and_then(Value::as_array).ok_or("uses `none` without a `blobs` array")?;
    let wanted = wanted_sizes(entries, problems);
    let mut ranges: Vec<(u64, u64, u64)> = Vec::new();
    for (&ordinal, &expected) in &wanted {
        let blob = usize::try_from(ordinal).ok().and_then(|index| blobs.get(index));
        let Some(blob) = blob else {
            problems.push(format!("refers to ordinal {ordinal}, but `blobs` has {} entries", blobs.len()));
            continue;
        };
        let field = |name: &str| blob.get(name).and_then(Value::as_u64);
        let (Some(offset), Some(size)) = (field("offset"), field("size")) else {
            problems.push(format!("has blob {ordinal} without a non-negative `offset` and `size`"));
            continue;
        };
        if offset < HEADER_BYTES || offset.checked_add(size).is_none_or(|end| end > blob_end) {
            problems.push(format!(
                "has blob {ordinal} at offset {offset} ({size} bytes), outside the bytes between the header and the \
                 table of contents ({HEADER_BYTES}..{blob_end})"
            ));
            continue;
        }
        if size != expected {
            problems.push(format!("has blob {ordinal} of {size} bytes, not its original_size {expected}"));
            continue;
        }
        ranges.push((offset, size, ordinal));
    }
    ranges.sort();
    let mut heads = BTreeMap::new();
    let Some(&(first, _, _)) = ranges.first() else { return Ok(heads) };
    let mut reader = BufReader::with_capacity(1 << 16, source.read_from(first).map_err(cannot_read)?);
    let mut at = first;
    let mut previous: Option<(u64, u64)> = None;
    for (offset, size, ordinal) in ranges {
        if let Some((other, end)) = previous.filter(|(_, end)| offset < *end) {
            problems.push(format!("has blob {ordinal} overlapping blob {other} (which ends at {end})"));
            continue;
        }
        io::copy(&mut (&mut reader).take(offset - at), &mut io::sink()).map_err(cannot_read)?;
        let mut head = Vec::new();
        (&mut reader).take(size.min(HEAD_BYTES as u64)).read_to_end(&mut head).map_err(cannot_read)?;
        at = offset + head.len() as u64;
        heads.insert(ordinal, head);
        previous = Some((ordinal, offset + size));
    }
    Ok(heads)
}

#[cfg(test)]
#[path = "archive_file_tests.rs"]
mod tests;
