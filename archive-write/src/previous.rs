//! The previous wheel at an output's own path (SPEC §8): read once, its central directory
//! and RECORD, so members whose bytes did not change are copied in coded form instead of
//! being coded again. The old wheel is only read; it stays in place until the new one is
//! committed over it (`atomic`).
//!
//! Owns: deciding what in an old wheel is trustworthy, and the copies. Nothing is taken on
//! the old wheel's word alone. A member is copied only when: the archive's end records and
//! central directory are whole and name each member once; its RECORD inflates to its CRC
//! and parses; the member's central entry carries our extra field with the fingerprint of
//! the coding this run would use (`codec`), and the method that goes with it; its size
//! agrees between the central entry and RECORD; the new bytes, hashed in full, have
//! RECORD's sha256, that size and the entry's CRC-32; the local header at the entry's
//! offset repeats the name, method, CRC and sizes, and the data lies before the central
//! directory; and the coded bytes have the CRC-32 our field recorded when they were
//! written, checked before they are chosen and again while they are copied. A wheel of
//! another tool has no such field, so none of its members is copied; a damaged one fails
//! a check and its members are coded again. What this does not catch is a forger who
//! rewrites our field to match altered bytes: only inflating every member would, at about
//! five times the cost of hashing it (measured: 390 MB/s against 2 GB/s).
//!
//! What is read of an old wheel is bounded by what the new one can use ([`Needs`]): an
//! old wheel whose end record announces more entries, a larger central directory or a
//! larger RECORD than that is not read at all (one warning says so), so a tampered or
//! foreign wheel in the destination costs no more memory than the new wheel itself. The
//! file is opened without blocking and only if it is a regular file (not through a
//! symlink: the caller refuses one at an output's name before it gets here).
//!
//! Does not own: hashing new bytes (`wheel`), the codec fingerprint (`codec`), writing.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::deflate::{CodedSource, MemberDigest};
use super::input::{open_regular, Links};
use super::record::{parse_record, RecordLine};
use super::zip::{parse_reuse_extra, EntrySums, Method, U32_MAX};

const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
const CENTRAL_SIGNATURE: u32 = 0x0201_4b50;
const END_SIGNATURE: u32 = 0x0605_4b50;
const ZIP64_END_SIGNATURE: u32 = 0x0606_4b50;
const ZIP64_LOCATOR_SIGNATURE: u32 = 0x0706_4b50;
const COPY_BUFFER: usize = 1 << 20;
/// An old wheel may hold this many times what the new one needs (and a little more:
/// [`ENTRIES_SLACK`], [`BYTES_SLACK`]): members removed since the last run still leave it
/// worth reading, while memory stays within a small multiple of what the new wheel's own
/// member list costs.
const NEEDS_FACTOR: u64 = 2;
const ENTRIES_SLACK: u64 = 256;
const BYTES_SLACK: u64 = 64 << 10;
/// A central directory entry of ours beyond its name: the fixed part, a ZIP64 field with
/// all three values, and our reuse field.
const CENTRAL_ENTRY_BYTES: u64 = 46 + (4 + 24) + (4 + 9);
/// A RECORD line beyond its (possibly quoted) name: `,sha256=` and 43 characters of
/// digest, a comma, up to 20 digits of size and the newline.
const RECORD_LINE_BYTES: u64 = 8 + 43 + 1 + 20 + 1;

/// The most an old wheel's index may take for the new wheel to read it: what the new
/// wheel's own members would take, times [`NEEDS_FACTOR`], plus a little.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    pub entries: u64,
    pub central_bytes: u64,
    pub record_bytes: u64,
}

impl Needs {
    /// The bounds for a wheel whose members (RECORD included) have these names.
    pub fn of<'a>(names: impl Iterator<Item = &'a str>) -> Needs {
        let (mut entries, mut central, mut record) = (0u64, 0u64, 0u64);
        for name in names {
            let len = name.len() as u64;
            entries += 1;
            central += CENTRAL_ENTRY_BYTES + len;
            // Quoting at worst doubles a name and adds two quotes.
            record += RECORD_LINE_BYTES + 2 * len + 2;
        }
        let bound = |need: u64, slack: u64| need.saturating_mul(NEEDS_FACTOR).saturating_add(slack);
        Needs {
            entries: bound(entries, ENTRIES_SLACK),
            central_bytes: bound(central, BYTES_SLACK),
            record_bytes: bound(record, BYTES_SLACK),
        }
    }
}

/// Why an old wheel is not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// Damaged, foreign or not a regular file: its members are coded anew, which is
    /// worth a line only to who asks for detail.
    Untrusted(String),
    /// Larger than the new wheel can use ([`Needs`]): not read at all, and worth one
    /// warning, since such a wheel was not written by a run of the same packages.
    TooLarge(String),
}

/// Opens a file an earlier run left in the destination, as input (an old wheel, the
/// identity cache): only a regular file of that name, never through a symlink, never
/// blocking. `Ok(None)` when there is none; `Err` says why it is not read.
pub(crate) fn open_input(path: &Path) -> Result<Option<File>, Ignored> {
    match open_regular(path, Links::Refuse) {
        Ok(file) => Ok(Some(file)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) if error.kind() == io::ErrorKind::InvalidData => Err(Ignored::Untrusted(format!("it {error}"))),
        Err(error) => Err(Ignored::Untrusted(format!("cannot open it: {error}"))),
    }
}

/// One member as the central directory describes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OldEntry {
    pub(crate) method: u16,
    /// General purpose flags: bit 0 encrypted, bit 3 sizes in a data descriptor.
    pub(crate) flags: u16,
    pub(crate) crc: u32,
    pub(crate) compressed: u64,
    pub(crate) uncompressed: u64,
    pub(crate) offset: u64,
    /// The Unix mode in the high half of the external attributes (0 when none).
    pub(crate) mode: u32,
    /// Our extra field: (codec fingerprint, CRC-32 of the coded bytes).
    pub(crate) reuse: Option<(u32, u32)>,
}

/// An old wheel whose end records, central directory and RECORD passed their checks.
pub struct Previous {
    path: PathBuf,
    file: Arc<File>,
    central_start: u64,
    entries: BTreeMap<String, OldEntry>,
    record: BTreeMap<String, RecordLine>,
}

/// A member of the old wheel that may be copied if the new bytes turn out the same.
pub struct Candidate {
    name: String,
    entry: OldEntry,
    line: RecordLine,
}

impl Candidate {
    /// The method the old member was coded with, which its copy keeps.
    pub fn method(&self) -> Method {
        match self.entry.method {
            0 => Method::Stored,
            _ => Method::Deflated,
        }
    }

    /// The size the new bytes must have.
    pub fn size(&self) -> u64 {
        self.line.size
    }

    /// Whether new bytes with this digest and CRC-32 are the old member's bytes.
    pub fn matches(&self, digest: &MemberDigest, crc: u32) -> bool {
        digest.len == self.line.size && digest.sha256 == self.line.sha256 && crc == self.entry.crc
    }
}

impl Previous {
    /// Reads the wheel at `path`, if there is one worth reading within `needs`. `Err`
    /// says why it is ignored; a missing file is `Ok(None)`.
    pub fn open(path: &Path, record_name: &str, needs: &Needs) -> Result<Option<Previous>, Ignored> {
        let untrusted = |reason: String| Ignored::Untrusted(reason);
        let Some(file) = open_input(path)? else { return Ok(None) };
        let metadata = file.metadata().map_err(|error| untrusted(format!("cannot read it: {error}")))?;
        let (central_start, central_len, n_entries) = read_end(&file, metadata.len()).map_err(untrusted)?;
        check_needs("its central directory lists", n_entries, "entries", needs.entries)?;
        check_needs("its central directory is", central_len, "bytes", needs.central_bytes)?;
        let mut central = vec![0u8; central_len as usize];
        file.read_exact_at(&mut central, central_start)
            .map_err(|error| untrusted(format!("cannot read it: {error}")))?;
        let entries = parse_central(&central, n_entries, central_start).map_err(untrusted)?;
        drop(central);
        let record_entry = *entries.get(record_name).ok_or_else(|| untrusted("it has no RECORD".into()))?;
        check_needs("its RECORD inflates to", record_entry.uncompressed, "bytes", needs.record_bytes)?;
        check_needs("its RECORD is", record_entry.compressed, "compressed bytes", needs.record_bytes)?;
        let mut previous = Previous {
            path: path.to_path_buf(),
            file: Arc::new(file),
            central_start,
            entries,
            record: BTreeMap::new(),
        };
        let record = previous.read_small_member(record_name, &record_entry).map_err(untrusted)?;
        let text = String::from_utf8(record).map_err(|_| untrusted("its RECORD is not UTF-8".into()))?;
        previous.record = parse_record(&text).ok_or_else(|| untrusted("its RECORD does not parse".into()))?;
        Ok(Some(previous))
    }

    /// The old wheel, open for reading.
    pub fn file(&self) -> Arc<File> {
        Arc::clone(&self.file)
    }

    /// The old member `name` if it was coded with `fingerprint`, in one of the `methods`
    /// that coding gives (deflate stores what it cannot shrink), and RECORD agrees with its
    /// entry; the caller then hashes the new bytes and asks [`Candidate::matches`].
    pub fn candidate(&self, name: &str, fingerprint: u32, methods: &[Method]) -> Option<Candidate> {
        let entry = *self.entries.get(name)?;
        let line = *self.record.get(name)?;
        let same_coding = entry.reuse.is_some_and(|(old, _)| old == fingerprint)
            && methods.iter().any(|method| method.code() == entry.method);
        (same_coding && line.size == entry.uncompressed).then(|| Candidate { name: name.to_owned(), entry, line })
    }

    /// Checks the candidate's local header and coded bytes; on success, its sums and a
    /// source that copies those bytes (and checks them again as it does).
    pub fn verified_copy(&self, candidate: &Candidate) -> Option<(EntrySums, Box<dyn CodedSource>)> {
        let entry = candidate.entry;
        let data_start = self.check_local_header(&candidate.name, &entry).ok()?;
        let (_, compressed_crc) = entry.reuse?;
        let copy = OldBytes {
            path: self.path.clone(),
            file: Arc::clone(&self.file),
            start: data_start,
            len: entry.compressed,
        };
        if copy.crc().ok()? != compressed_crc {
            return None;
        }
        let sums = EntrySums {
            crc: entry.crc,
            uncompressed: entry.uncompressed,
            compressed: entry.compressed,
            compressed_crc,
        };
        Some((sums, Box::new(CheckedCopy { bytes: copy, crc: compressed_crc })))
    }

    /// Where the member's data starts, once its local header agrees with `entry` and
    /// the data ends before the central directory.
    fn check_local_header(&self, name: &str, entry: &OldEntry) -> Result<u64, String> {
        let mut fixed = [0u8; 30];
        self.file
            .read_exact_at(&mut fixed, entry.offset)
            .map_err(|_| format!("{name}: its local header is cut off"))?;
        let u16_at = |at: usize| u16::from_le_bytes([fixed[at], fixed[at + 1]]);
        let u32_at = |at: usize| u32::from_le_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]]);
        let (name_len, extra_len) = (u64::from(u16_at(26)), u64::from(u16_at(28)));
        let mut variable = vec![0u8; (name_len + extra_len) as usize];
        self.file
            .read_exact_at(&mut variable, entry.offset + 30)
            .map_err(|_| format!("{name}: its local header is cut off"))?;
        let (local_name, extra) = variable.split_at(name_len as usize);
        let (mut compressed, mut uncompressed) = (u64::from(u32_at(18)), u64::from(u32_at(22)));
        if compressed == U32_MAX && uncompressed == U32_MAX {
            let sizes =
                zip64_extra(extra).filter(|sizes| sizes.len() >= 2).ok_or(format!("{name}: bad ZIP64 field"))?;
            (uncompressed, compressed) = (sizes[0], sizes[1]);
        }
        let agrees = u32_at(0) == LOCAL_SIGNATURE
            && local_name == name.as_bytes()
            && u16_at(6) & 0x0009 == 0 // neither encrypted nor followed by a data descriptor
            && u16_at(8) == entry.method
            && u32_at(14) == entry.crc
            && compressed == entry.compressed
            && uncompressed == entry.uncompressed;
        let data_start = entry.offset + 30 + name_len + extra_len;
        let fits = data_start.checked_add(entry.compressed).is_some_and(|end| end <= self.central_start);
        if agrees && fits {
            Ok(data_start)
        } else {
            Err(format!("{name}: its local header disagrees with the central directory"))
        }
    }

    /// A small member's bytes (RECORD, its sizes bounded by the caller), inflated and
    /// checked against its CRC and size.
    fn read_small_member(&self, name: &str, entry: &OldEntry) -> Result<Vec<u8>, String> {
        let start = self.check_local_header(name, entry)?;
        let mut coded = vec![0u8; entry.compressed as usize];
        self.file.read_exact_at(&mut coded, start).map_err(|_| format!("{name} is cut off"))?;
        let mut bytes = Vec::with_capacity(entry.uncompressed as usize);
        let limit = entry.uncompressed + 1;
        let read = match entry.method {
            0 => Ok(coded),
            8 => flate2::read::DeflateDecoder::new(coded.as_slice()).take(limit).read_to_end(&mut bytes).map(|_| bytes),
            other => return Err(format!("{name} uses compression method {other}")),
        };
        let bytes = read.map_err(|_| format!("{name} does not inflate"))?;
        if bytes.len() as u64 != entry.uncompressed || crc32fast::hash(&bytes) != entry.crc {
            return Err(format!("{name} does not match its CRC or size"));
        }
        Ok(bytes)
    }
}

/// `found` within `bound`, or why the old wheel is too large to read.
fn check_needs(what: &str, found: u64, unit: &str, bound: u64) -> Result<(), Ignored> {
    match found <= bound {
        true => Ok(()),
        false => Err(Ignored::TooLarge(format!(
            "{what} {found} {unit}, more than the {bound} a wheel of these members can use"
        ))),
    }
}

/// Finds the end records: (central directory start, its length, number of entries).
/// The archive must end exactly where they say (no trailing bytes, no comment of ours).
pub(crate) fn read_end(file: &File, file_len: u64) -> Result<(u64, u64, u64), String> {
    let tail_len = file_len.min(22 + u64::from(u16::MAX));
    let mut tail = vec![0u8; tail_len as usize];
    file.read_exact_at(&mut tail, file_len - tail_len).map_err(|error| format!("cannot read it: {error}"))?;
    let end_at = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&at| {
            u32::from_le_bytes([tail[at], tail[at + 1], tail[at + 2], tail[at + 3]]) == END_SIGNATURE
                && at + 22 + usize::from(u16::from_le_bytes([tail[at + 20], tail[at + 21]])) == tail.len()
        })
        .ok_or("it has no end of central directory record (truncated?)")?;
    let end = &tail[end_at..];
    let u16_at = |at: usize| u64::from(u16::from_le_bytes([end[at], end[at + 1]]));
    let u32_at = |at: usize| u64::from(u32::from_le_bytes([end[at], end[at + 1], end[at + 2], end[at + 3]]));
    let end_offset = file_len - tail_len + end_at as u64;
    let (mut n_entries, mut central_len, mut central_start) = (u16_at(10), u32_at(12), u32_at(16));
    let mut directory_end = end_offset;
    if n_entries == 0xFFFF || central_len == U32_MAX || central_start == U32_MAX {
        let locator_at = end_offset.checked_sub(20).ok_or("its ZIP64 locator is missing")?;
        let mut locator = [0u8; 20];
        file.read_exact_at(&mut locator, locator_at).map_err(|_| "its ZIP64 locator is cut off")?;
        let word = |bytes: &[u8], at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        if u32::from_le_bytes([locator[0], locator[1], locator[2], locator[3]]) != ZIP64_LOCATOR_SIGNATURE {
            return Err("its ZIP64 locator is missing".into());
        }
        let zip64_end_at = word(&locator, 8);
        let mut zip64_end = [0u8; 56];
        file.read_exact_at(&mut zip64_end, zip64_end_at).map_err(|_| "its ZIP64 end record is cut off")?;
        if u32::from_le_bytes([zip64_end[0], zip64_end[1], zip64_end[2], zip64_end[3]]) != ZIP64_END_SIGNATURE
            || zip64_end_at + 56 != locator_at
        {
            return Err("its ZIP64 end record is missing".into());
        }
        (n_entries, central_len, central_start) = (word(&zip64_end, 32), word(&zip64_end, 40), word(&zip64_end, 48));
        directory_end = zip64_end_at;
    }
    if central_start.checked_add(central_len) != Some(directory_end) {
        return Err("its central directory is not where its end record says".into());
    }
    Ok((central_start, central_len, n_entries))
}

/// The central directory's entries by name. Any malformed or repeated entry makes the
/// whole wheel untrusted: it was not written by us, or not completely.
pub(crate) fn parse_central(
    central: &[u8],
    n_entries: u64,
    central_start: u64,
) -> Result<BTreeMap<String, OldEntry>, String> {
    let mut entries = BTreeMap::new();
    let mut at = 0usize;
    let malformed = || "its central directory is malformed".to_owned();
    for _ in 0..n_entries {
        let fixed = central.get(at..at + 46).ok_or_else(malformed)?;
        let u16_at = |i: usize| u16::from_le_bytes([fixed[i], fixed[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes([fixed[i], fixed[i + 1], fixed[i + 2], fixed[i + 3]]);
        if u32_at(0) != CENTRAL_SIGNATURE {
            return Err(malformed());
        }
        let (name_len, extra_len, comment_len) =
            (usize::from(u16_at(28)), usize::from(u16_at(30)), usize::from(u16_at(32)));
        let variable = central.get(at + 46..at + 46 + name_len + extra_len + comment_len).ok_or_else(malformed)?;
        let name = std::str::from_utf8(&variable[..name_len]).map_err(|_| malformed())?.to_owned();
        let extra = &variable[name_len..name_len + extra_len];
        let mut entry = OldEntry {
            method: u16_at(10),
            flags: u16_at(8),
            crc: u32_at(16),
            compressed: u64::from(u32_at(20)),
            uncompressed: u64::from(u32_at(24)),
            offset: u64::from(u32_at(42)),
            mode: u32_at(38) >> 16,
            reuse: parse_reuse_extra(extra),
        };
        // The ZIP64 field holds only the values whose 32-bit slot is full, in this order.
        let mut wide = zip64_extra(extra).unwrap_or_default().into_iter();
        for value in [&mut entry.uncompressed, &mut entry.compressed, &mut entry.offset] {
            if *value == U32_MAX {
                *value = wide.next().ok_or_else(malformed)?;
            }
        }
        if entry.offset >= central_start {
            return Err(malformed());
        }
        if entries.contains_key(&name) {
            // Which of the two a reader takes is the reader's choice: say which name it is.
            return Err(format!("its central directory lists {name:?} twice"));
        }
        entries.insert(name, entry);
        at += 46 + name_len + extra_len + comment_len;
    }
    if at != central.len() {
        return Err(malformed());
    }
    Ok(entries)
}

/// The 64-bit values of a ZIP64 extra field, if `extra` has one.
fn zip64_extra(mut extra: &[u8]) -> Option<Vec<u64>> {
    while extra.len() >= 4 {
        let id = u16::from_le_bytes([extra[0], extra[1]]);
        let len = usize::from(u16::from_le_bytes([extra[2], extra[3]]));
        let data = extra.get(4..4 + len)?;
        if id == 0x0001 {
            return Some(
                data.chunks_exact(8).map(|word| u64::from_le_bytes(word.try_into().expect("8 bytes"))).collect(),
            );
        }
        extra = &extra[4 + len..];
    }
    None
}

/// A range of the old file.
pub(crate) struct OldBytes {
    pub(crate) path: PathBuf,
    pub(crate) file: Arc<File>,
    pub(crate) start: u64,
    pub(crate) len: u64,
}

impl OldBytes {
    /// Passes the range to `each` in pieces; returns their CRC-32.
    pub(crate) fn read(&self, each: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<u32> {
        let mut crc = crc32fast::Hasher::new();
        let mut buffer = vec![0u8; COPY_BUFFER.min(self.len as usize)];
        let mut done = 0u64;
        while done < self.len {
            let n = (self.len - done).min(buffer.len() as u64) as usize;
            self.file.read_exact_at(&mut buffer[..n], self.start + done)?;
            crc.update(&buffer[..n]);
            each(&buffer[..n])?;
            done += n as u64;
        }
        Ok(crc.finalize())
    }

    pub(crate) fn crc(&self) -> io::Result<u32> {
        self.read(&mut |_| Ok(()))
    }
}

/// Copies checked bytes, checking them again: they were read once to choose them, and the
/// old wheel must not have changed since (the destination lock keeps our own runs out).
pub(crate) struct CheckedCopy {
    pub(crate) bytes: OldBytes,
    pub(crate) crc: u32,
}

impl CodedSource for CheckedCopy {
    fn copy_to(self: Box<Self>, put: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        let crc = self.bytes.read(put)?;
        if crc != self.crc {
            return Err(io::Error::other(format!(
                "{} changed while this run copied from it: rerun",
                self.bytes.path.display()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{write_wheel, ArchiveOptions, BuildTime, Member, MemberData, Reuse, Silent};

    fn wheel_of(dir: &Path, n_members: usize) -> PathBuf {
        let members = (0..n_members)
            .map(|index| Member {
                name: format!("demo/a/rather/long/directory/name/file{index:06}.txt"),
                data: MemberData::Bytes(Arc::new(vec![b'x'; 10])),
                executable: false,
            })
            .collect();
        let spec = crate::demo_wheel_spec(members);
        let options = ArchiveOptions {
            compression: crate::WheelCompression::Deflate { level: 1 },
            build_time: BuildTime::DEFAULT,
            reuse: Reuse::Never,
            identities: None,
        };
        write_wheel(dir, &spec, &options, &Silent).expect("writes").path
    }

    const RECORD: &str = "demo-1.0.dist-info/RECORD";

    #[test]
    fn an_old_wheel_larger_than_the_new_one_can_use_is_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let wheel = wheel_of(dir.path(), 4000);
        let small = Needs::of(["demo/x.txt", RECORD].into_iter());
        match Previous::open(&wheel, RECORD, &small) {
            Err(Ignored::TooLarge(reason)) => {
                assert!(reason.starts_with("its central directory lists 4003 entries"), "{reason}")
            }
            other => panic!("read: {:?}", other.map(|found| found.is_some())),
        }
        // The same wheel, for members like its own, is read.
        let names: Vec<String> =
            (0..4000).map(|index| format!("demo/a/rather/long/directory/name/file{index:06}.txt")).collect();
        let same = Needs::of(names.iter().map(String::as_str).chain([RECORD]));
        assert!(Previous::open(&wheel, RECORD, &same).expect("read").is_some());
    }

    #[test]
    fn a_fifo_or_a_symlink_is_never_opened_as_an_old_wheel() {
        let dir = tempfile::tempdir().expect("tempdir");
        let wheel = wheel_of(dir.path(), 1);
        let fifo = dir.path().join("fifo.whl");
        let c_path = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("no NUL");
        // SAFETY: a valid NUL-terminated path; mkfifo touches no memory of ours.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
        let link = dir.path().join("link.whl");
        std::os::unix::fs::symlink(&wheel, &link).expect("symlink");
        let needs = Needs::of(["demo/x.txt", RECORD].into_iter());
        for (path, reason) in
            [(&fifo, "it is a FIFO, not a regular file"), (&link, "it is a symlink, not a regular file")]
        {
            assert_eq!(Previous::open(path, RECORD, &needs).err(), Some(Ignored::Untrusted(reason.into())));
        }
    }
}
