//! One uncompressed clang offload bundle (KPACK.md §3): the 24-byte magic
//! `__CLANG_OFFLOAD_BUNDLE__`, a u64 entry count, then per entry a u64 offset (from the
//! bundle's start), a u64 size, a u64 id length and the id's bytes; the entries' bytes
//! follow, aligned by the bundler.
//!
//! Owns: reading one bundle's table and checking its entries against each other and the
//! bytes around them. Must not know: where the bytes come from (a [`Region`]) or what an
//! entry id means.

use super::spool::Region;

pub(super) const MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";
/// The magic and the entry count.
const HEADER: u64 = 32;
/// Offset, size and id length of one entry.
const ENTRY_HEADER: u64 = 24;
/// Longer than any entry id clang writes (`hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`).
const MAX_ID: u64 = 1024;

/// One entry as the table gives it, its offset made relative to the region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawEntry {
    pub id: String,
    pub offset: u64,
    pub size: u64,
}

/// A bundle's entries, and where in the region its last byte (table or entry) ends.
#[derive(Debug)]
pub(super) struct PlainBundle {
    pub entries: Vec<RawEntry>,
    pub end: u64,
}

/// Reads the bundle starting at `start` of `region`; an `Err` says what is wrong in words
/// (the caller names the file and the bundle).
pub(super) fn read_plain(region: &dyn Region, start: u64) -> Result<PlainBundle, String> {
    let available = region.len() - start;
    if available < HEADER {
        return Err(format!("truncated: {available} bytes left, a bundle header takes {HEADER}"));
    }
    let count = u64_at(region, start + 24)?;
    if count == 0 {
        return Err("the bundle has no entries".to_owned());
    }
    if count > (available - HEADER) / ENTRY_HEADER {
        return Err(format!(
            "truncated: the bundle claims {count} entries, more than its {available} bytes can describe"
        ));
    }
    let mut entries = Vec::new();
    let mut at = start + HEADER;
    for index in 0..count {
        if region.len() - at < ENTRY_HEADER {
            return Err(format!("truncated: the table ends inside entry {index}"));
        }
        let offset = u64_at(region, at)?;
        let size = u64_at(region, at + 8)?;
        let id_len = u64_at(region, at + 16)?;
        at += ENTRY_HEADER;
        if id_len > MAX_ID || id_len > region.len() - at {
            return Err(format!("entry {index} claims an id of {id_len} bytes"));
        }
        let mut id = vec![0u8; id_len as usize];
        region.read_exact_at(&mut id, at).map_err(|error| format!("reading entry {index}'s id: {error}"))?;
        at += id_len;
        let id = String::from_utf8(id).map_err(|_| format!("entry {index}'s id is not UTF-8"))?;
        let inside =
            start.checked_add(offset).filter(|begin| begin.checked_add(size).is_some_and(|end| end <= region.len()));
        let Some(begin) = inside else {
            return Err(format!(
                "entry {id:?} (offset {offset}, {size} bytes) runs past the end ({} bytes from the bundle's start)",
                available
            ));
        };
        entries.push(RawEntry { id, offset: begin, size });
    }
    let table_end = at;
    check_layout(&entries, table_end)?;
    let end = entries.iter().map(|entry| entry.offset + entry.size).fold(table_end, u64::max);
    Ok(PlainBundle { entries, end })
}

/// Entries with bytes lie after the table and do not overlap (empty ones, such as the
/// host's, may sit anywhere).
fn check_layout(entries: &[RawEntry], table_end: u64) -> Result<(), String> {
    let mut placed: Vec<&RawEntry> = entries.iter().filter(|entry| entry.size > 0).collect();
    placed.sort_by_key(|entry| entry.offset);
    let mut previous: Option<&RawEntry> = None;
    for entry in placed {
        if entry.offset < table_end {
            return Err(format!("entry {:?} starts inside the bundle's table", entry.id));
        }
        if let Some(previous) = previous.filter(|previous| previous.offset + previous.size > entry.offset) {
            return Err(format!("entries {:?} and {:?} overlap", previous.id, entry.id));
        }
        previous = Some(entry);
    }
    Ok(())
}

fn u64_at(region: &dyn Region, at: u64) -> Result<u64, String> {
    let mut bytes = [0u8; 8];
    region.read_exact_at(&mut bytes, at).map_err(|error| format!("reading at {at}: {error}"))?;
    Ok(u64::from_le_bytes(bytes))
}

/// The bytes of a bundle with `entries` (id, payload), laid out as clang's bundler does
/// (payloads aligned to `align`), for tests of this reader.
#[cfg(test)]
pub(crate) fn build(entries: &[(&str, &[u8])], align: usize) -> Vec<u8> {
    let table: usize = 32 + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
    let mut offsets = Vec::new();
    let mut next = table;
    for (_, payload) in entries {
        next = next.next_multiple_of(align);
        offsets.push(next);
        next += payload.len();
    }
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for ((id, payload), offset) in entries.iter().zip(&offsets) {
        for field in [*offset as u64, payload.len() as u64, id.len() as u64] {
            bytes.extend_from_slice(&field.to_le_bytes());
        }
        bytes.extend_from_slice(id.as_bytes());
    }
    for ((_, payload), offset) in entries.iter().zip(&offsets) {
        bytes.resize(*offset, 0);
        bytes.extend_from_slice(payload);
    }
    bytes
}
