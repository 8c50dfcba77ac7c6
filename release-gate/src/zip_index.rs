//! The size of a wheel's index, read from its end records before the zip reader sees it:
//! the zip reader holds the whole central directory and an entry for each member in
//! memory, so a wheel whose end record announces more than any wheel of ours can hold is
//! a violation and is not read further (memory stays bounded whatever `dist/` holds).
//!
//! Owns: the end records (classic and ZIP64) and the bounds. Does not own: reading the
//! members (`archive`).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// More members than any wheel of ours holds (the largest ROCm wheels hold some
/// thousands): beyond it, reading the index would cost memory in proportion to a count
/// the file itself chose.
pub(crate) const MAX_ENTRIES: u64 = 200_000;
/// A central directory larger than this is refused for the same reason (ours take about
/// 100 bytes a member plus its name).
pub(crate) const MAX_CENTRAL_BYTES: u64 = 64 << 20;

const END_SIGNATURE: u32 = 0x0605_4b50;
const ZIP64_END_SIGNATURE: u32 = 0x0606_4b50;
const ZIP64_LOCATOR_SIGNATURE: u32 = 0x0706_4b50;

/// What the end records announce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IndexSize {
    pub entries: u64,
    pub central_bytes: u64,
    /// Where the central directory starts in the file, as Python's `zipfile` finds it: just
    /// before the end record (or the ZIP64 one).
    pub central_start: u64,
    /// How far that is past where the end record says it starts: bytes before the archive
    /// (`zipfile`'s `concat`), which move every offset the records hold.
    pub prefix: u64,
}

impl IndexSize {
    /// Why the index is too large to read, if it is.
    pub fn too_large(&self) -> Option<String> {
        if self.entries > MAX_ENTRIES {
            return Some(format!(
                "its central directory lists {} members, more than a wheel may hold ({MAX_ENTRIES}); not read further",
                self.entries
            ));
        }
        (self.central_bytes > MAX_CENTRAL_BYTES).then(|| {
            format!(
                "its central directory is {} bytes, more than a wheel may have ({MAX_CENTRAL_BYTES}); not read further",
                self.central_bytes
            )
        })
    }
}

/// The index size of the zip `file`, or `None` when no end record is found (the zip
/// reader then says what is wrong in its own words).
pub(crate) fn index_size(file: &File) -> io::Result<Option<IndexSize>> {
    let len = file.metadata()?.len();
    let tail_len = len.min(22 + u64::from(u16::MAX));
    let mut tail = vec![0u8; tail_len as usize];
    file.read_exact_at(&mut tail, len - tail_len)?;
    let u32_at = |bytes: &[u8], at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let Some(end_at) = (0..tail.len().saturating_sub(21)).rev().find(|&at| u32_at(&tail, at) == END_SIGNATURE) else {
        return Ok(None);
    };
    let end = &tail[end_at..];
    let entries = u64::from(u16::from_le_bytes([end[10], end[11]]));
    let central_bytes = u64::from(u32_at(end, 12));
    let end_offset = len - tail_len + end_at as u64;
    let central_start = end_offset.saturating_sub(central_bytes);
    let prefix = central_start.saturating_sub(u64::from(u32_at(end, 16)));
    let mut size = IndexSize { entries, central_bytes, central_start, prefix };
    if let Some(wide) = zip64_size(file, end_offset)? {
        size = IndexSize {
            entries: size.entries.max(wide.entries),
            central_bytes: size.central_bytes.max(wide.central_bytes),
            ..wide
        };
    }
    Ok(Some(size))
}

/// The ZIP64 end record's counts, if a locator precedes the end record.
fn zip64_size(file: &File, end_offset: u64) -> io::Result<Option<IndexSize>> {
    let Some(locator_at) = end_offset.checked_sub(20) else {
        return Ok(None);
    };
    let mut locator = [0u8; 20];
    file.read_exact_at(&mut locator, locator_at)?;
    let word = |bytes: &[u8], at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    if u32::from_le_bytes([locator[0], locator[1], locator[2], locator[3]]) != ZIP64_LOCATOR_SIGNATURE {
        return Ok(None);
    }
    let mut zip64_end = [0u8; 56];
    if file.read_exact_at(&mut zip64_end, word(&locator, 8)).is_err()
        || u32::from_le_bytes([zip64_end[0], zip64_end[1], zip64_end[2], zip64_end[3]]) != ZIP64_END_SIGNATURE
    {
        return Ok(None);
    }
    let central_bytes = word(&zip64_end, 40);
    // Python's `zipfile` takes the ZIP64 end record to sit just before its locator.
    let central_start = locator_at.saturating_sub(56).saturating_sub(central_bytes);
    let prefix = central_start.saturating_sub(word(&zip64_end, 48));
    Ok(Some(IndexSize { entries: word(&zip64_end, 32), central_bytes, central_start, prefix }))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn zip_of(n_members: usize) -> tempfile::NamedTempFile {
        let mut temp = tempfile::NamedTempFile::new().expect("temp");
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for index in 0..n_members {
            zip.start_file(format!("pkg/file{index}.txt"), zip::write::SimpleFileOptions::default()).expect("start");
            zip.write_all(b"x").expect("write");
        }
        let bytes = zip.finish().expect("finish").into_inner();
        temp.write_all(&bytes).expect("write");
        temp
    }

    #[test]
    fn the_index_size_is_read_from_the_end_record() {
        let temp = zip_of(3);
        let size = index_size(temp.as_file()).expect("reads").expect("an end record");
        assert_eq!(size.entries, 3);
        assert!(size.central_bytes > 3 * 46, "{size:?}");
        assert_eq!(size.too_large(), None);
        let huge = IndexSize { entries: MAX_ENTRIES + 1, central_bytes: 0, central_start: 0, prefix: 0 };
        assert!(huge.too_large().expect("too large").contains("lists 200001 members"));
        let wide = IndexSize { entries: 1, central_bytes: MAX_CENTRAL_BYTES + 1, central_start: 0, prefix: 0 };
        assert!(wide.too_large().expect("too large").contains("central directory is"));
    }
}
