//! Each member's local header against its central directory entry, and each name in the
//! central directory once. Installers read a wheel
//! through Python's `zipfile`, which finds a member by its central entry and then refuses
//! it when the local header names another file (`BadZipFile: File name in directory … and
//! header … differ`); other readers (`unzip`, streaming ones) trust the local header's
//! sizes and method. A wheel whose two records disagree installs differently, or not at
//! all, depending on the reader, so any disagreement is a violation (SPEC §5).
//!
//! Owns: walking the central directory (bounded by `zip_index`'s limits) and reading each
//! local header. Does not own: reading the members (`archive`, through the `zip` crate).

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use crate::zip_index::IndexSize;

const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
const ZIP64_EXTRA: u16 = 0x0001;
/// General purpose flag bit 3: CRC-32 and sizes follow the data, zero in the local header.
const DATA_DESCRIPTOR: u16 = 0x0008;

/// The fields both records carry.
#[derive(Debug, PartialEq, Eq)]
struct Record {
    name: Vec<u8>,
    flags: u16,
    method: u16,
    crc32: u32,
    compressed: u64,
    uncompressed: u64,
}

/// What a second central entry of one name is told.
pub(crate) const DUPLICATE: &str =
    "is in the zip twice (its central directory lists this name more than once): which copy installs is the reader's choice";

/// One disagreement: the member's name in the central directory and what differs.
pub(crate) type Mismatch = (String, String);

/// Every member whose local header disagrees with its central entry, or that has none
/// where the central entry points. A central directory the walk cannot follow ends the
/// walk quietly: the zip reader reports it in its own words.
pub(crate) fn mismatches(file: &File, index: &IndexSize) -> io::Result<Vec<Mismatch>> {
    let mut reader = BufReader::new(file.try_clone()?);
    reader.seek(SeekFrom::Start(index.central_start))?;
    let mut reader = reader.take(index.central_bytes);
    let mut found = Vec::new();
    // Bounded as the walk is: `zip_index` refused an index of more entries than a wheel has.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..index.entries {
        let Some((central, stated_offset)) = read_central(&mut reader)? else { break };
        let local_at = stated_offset.saturating_add(index.prefix);
        let name = String::from_utf8_lossy(&central.name).into_owned();
        if !seen.insert(central.name.clone()) {
            // Which of the two a reader takes is the reader's choice: pip's zipfile the last.
            found.push((name.clone(), DUPLICATE.to_owned()));
        }
        if let Some(what) = compare(file, local_at, &central, index.central_start)? {
            found.push((name, what));
        }
    }
    Ok(found)
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The next central entry and its local header's offset as stored.
fn read_central(reader: &mut impl Read) -> io::Result<Option<(Record, u64)>> {
    let mut fixed = [0u8; 46];
    if reader.read_exact(&mut fixed).is_err() || u32_at(&fixed, 0) != CENTRAL_SIGNATURE {
        return Ok(None);
    }
    let lengths = [u16_at(&fixed, 28), u16_at(&fixed, 30), u16_at(&fixed, 32)].map(usize::from);
    let mut variable = vec![0u8; lengths.iter().sum()];
    if reader.read_exact(&mut variable).is_err() {
        return Ok(None);
    }
    let (name, rest) = variable.split_at(lengths[0]);
    let extra = &rest[..lengths[1]];
    let mut record = Record {
        name: name.to_vec(),
        flags: u16_at(&fixed, 8),
        method: u16_at(&fixed, 10),
        crc32: u32_at(&fixed, 16),
        compressed: u64::from(u32_at(&fixed, 20)),
        uncompressed: u64::from(u32_at(&fixed, 24)),
    };
    let mut offset = u64::from(u32_at(&fixed, 42));
    // ZIP64: each field that is all ones is in the extra field, in this order.
    let mut wide = zip64_values(extra).into_iter();
    for field in [&mut record.uncompressed, &mut record.compressed, &mut offset] {
        if *field == u64::from(u32::MAX) {
            *field = wide.next().unwrap_or(*field);
        }
    }
    Ok(Some((record, offset)))
}

/// The 8-byte values of a ZIP64 extended information field.
fn zip64_values(extra: &[u8]) -> Vec<u64> {
    let mut at = 0;
    while at + 4 <= extra.len() {
        let (id, size) = (u16_at(extra, at), usize::from(u16_at(extra, at + 2)));
        let body = &extra[(at + 4).min(extra.len())..(at + 4 + size).min(extra.len())];
        if id == ZIP64_EXTRA {
            return body.chunks_exact(8).map(|chunk| u64::from_le_bytes(chunk.try_into().expect("8 bytes"))).collect();
        }
        at += 4 + size;
    }
    Vec::new()
}

/// What differs between the local header at `at` and `central`, if anything.
fn compare(file: &File, at: u64, central: &Record, central_start: u64) -> io::Result<Option<String>> {
    let mut fixed = [0u8; 30];
    if file.read_exact_at(&mut fixed, at).is_err() || u32_at(&fixed, 0) != LOCAL_SIGNATURE {
        return Ok(Some(format!("has no local header at offset {at}, where its central directory entry points")));
    }
    let (name_len, extra_len) = (usize::from(u16_at(&fixed, 26)), usize::from(u16_at(&fixed, 28)));
    let mut variable = vec![0u8; name_len + extra_len];
    if file.read_exact_at(&mut variable, at + 30).is_err() {
        return Ok(Some("its local header is cut short".to_owned()));
    }
    let (name, extra) = variable.split_at(name_len);
    let mut local = Record {
        name: name.to_vec(),
        flags: u16_at(&fixed, 6),
        method: u16_at(&fixed, 8),
        crc32: u32_at(&fixed, 14),
        compressed: u64::from(u32_at(&fixed, 18)),
        uncompressed: u64::from(u32_at(&fixed, 22)),
    };
    if local.uncompressed == u64::from(u32::MAX) || local.compressed == u64::from(u32::MAX) {
        // A local ZIP64 field holds both sizes, uncompressed first.
        if let [uncompressed, compressed, ..] = zip64_values(extra)[..] {
            (local.uncompressed, local.compressed) = (uncompressed, compressed);
        }
    }
    let escape = |bytes: &[u8]| crate::escape::escape(&String::from_utf8_lossy(bytes));
    if local.name != central.name {
        return Ok(Some(format!(
            "its local header names `{}`, its central directory entry `{}` (Python's zipfile, so pip, refuses it)",
            escape(&local.name),
            escape(&central.name)
        )));
    }
    if local.flags != central.flags || local.method != central.method {
        return Ok(Some(format!(
            "its local header says flags {:#06x} and method {}, its central directory entry flags {:#06x} and method {}",
            local.flags, local.method, central.flags, central.method
        )));
    }
    let described_later = local.flags & DATA_DESCRIPTOR != 0;
    let sizes = |record: &Record| (record.crc32, record.compressed, record.uncompressed);
    if !(described_later && sizes(&local) == (0, 0, 0)) && sizes(&local) != sizes(central) {
        let (crc, compressed, uncompressed) = sizes(&local);
        let (central_crc, central_compressed, central_uncompressed) = sizes(central);
        return Ok(Some(format!(
            "its local header announces {compressed} bytes compressed, {uncompressed} uncompressed, CRC-32 \
             {crc:08x}; its central directory entry {central_compressed}, {central_uncompressed}, {central_crc:08x}"
        )));
    }
    let data_end = at + 30 + (name_len + extra_len) as u64 + central.compressed;
    if data_end > central_start {
        return Ok(Some(format!("its data runs to offset {data_end}, into the central directory at {central_start}")));
    }
    Ok(None)
}
