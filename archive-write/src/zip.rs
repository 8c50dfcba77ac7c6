//! The zip container of a wheel, written by hand: local headers, member data, central
//! directory, and ZIP64 records only where a size or offset needs them, so small wheels
//! stay plain zip that every tool reads.
//!
//! Owns: the byte layout (APPNOTE 6.3), DOS times, Unix modes in external attributes.
//! Does not own: compressing the data (`deflate`), member order or content (`wheel`).
//!
//! Headers are written with the final CRC and sizes when a member is complete before it
//! is written (almost always); a member still streaming gets a header that is patched in
//! place once its data is written (the output is a seekable temp file), never a data
//! descriptor, so streaming readers see correct sizes too.
//!
//! Each central header carries one extra field of ours ([`REUSE_EXTRA_ID`]): the codec
//! fingerprint the member was coded with and a CRC-32 of its compressed bytes, so a later
//! run can tell which members it may copy instead of compressing again (SPEC §8, `previous`).
//! It is the same for the same input and settings, so output stays reproducible.

use std::io::{self, Seek, SeekFrom, Write};

use super::BuildTime;

const LOCAL_HEADER_SIGNATURE: u32 = 0x0403_4b50;
const CENTRAL_HEADER_SIGNATURE: u32 = 0x0201_4b50;
const END_SIGNATURE: u32 = 0x0605_4b50;
const ZIP64_END_SIGNATURE: u32 = 0x0606_4b50;
const ZIP64_LOCATOR_SIGNATURE: u32 = 0x0706_4b50;
const ZIP64_EXTRA_ID: u16 = 0x0001;
/// `version made by` high byte: Unix, so readers take the mode from the external attributes.
const MADE_BY_UNIX: u16 = 3 << 8;
const VERSION_DEFLATE: u16 = 20;
const VERSION_ZIP64: u16 = 45;
/// General purpose flag bit 11: the name is UTF-8.
const FLAG_UTF8: u16 = 1 << 11;
pub const U32_MAX: u64 = 0xFFFF_FFFF;
/// Header id of our central-directory extra field ("rp" on disk). Readers skip ids they do
/// not know (APPNOTE 4.5.1), so pip, unzip and Python's zipfile are not concerned.
pub const REUSE_EXTRA_ID: u16 = 0x7072;
/// Layout version of that field's data: version (1), fingerprint (4), compressed CRC (4).
const REUSE_EXTRA_VERSION: u8 = 1;
const REUSE_EXTRA_LEN: u16 = 9;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Stored,
    Deflated,
}

impl Method {
    pub fn code(self) -> u16 {
        match self {
            Method::Stored => 0,
            Method::Deflated => 8,
        }
    }
}

/// What the local header of a member says.
#[derive(Clone, Debug)]
pub struct EntryHeader {
    pub name: String,
    pub method: Method,
    pub executable: bool,
    /// Identifies the codec and its settings (`codec::fingerprint`), recorded so a later
    /// run knows whether it would code this member to the same bytes.
    pub fingerprint: u32,
}

/// CRC and sizes of a member's data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntrySums {
    pub crc: u32,
    pub uncompressed: u64,
    pub compressed: u64,
    /// CRC-32 of the compressed bytes: what a later run checks before copying them.
    pub compressed_crc: u32,
}

/// Whether a member's local header gets ZIP64 room. Decided from the size bound the
/// member was started with (not from whether it happened to stream), so a member codes
/// to the same header however the writer met it, and a copied member to the same too.
pub fn needs_zip64(size_bound: u64, sums: EntrySums) -> bool {
    size_bound >= U32_MAX || sums.uncompressed >= U32_MAX || sums.compressed >= U32_MAX
}

struct CentralEntry {
    header: EntryHeader,
    sums: EntrySums,
    offset: u64,
    /// The local header carries a ZIP64 extra; the central one then does too.
    zip64: bool,
}

/// A member whose header, with its final sums, is written and whose data is being copied.
pub struct KnownEntry {
    entry: CentralEntry,
    data_end: u64,
}

/// A member whose header was written before its sizes were known.
pub struct OpenEntry {
    header: EntryHeader,
    offset: u64,
    zip64: bool,
}

/// Writes one zip archive to `out`, tracking the offset itself.
pub struct ZipWriter<W: Write + Seek> {
    out: W,
    position: u64,
    dos_time: u16,
    dos_date: u16,
    entries: Vec<CentralEntry>,
}

impl<W: Write + Seek> ZipWriter<W> {
    pub fn new(out: W, build_time: BuildTime) -> ZipWriter<W> {
        let (dos_date, dos_time) = dos_date_time(build_time);
        ZipWriter { out, position: 0, dos_time, dos_date, entries: Vec::new() }
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.position += bytes.len() as u64;
        Ok(())
    }

    /// Writes a complete member whose CRC and sizes are known.
    pub fn write_entry(
        &mut self,
        header: EntryHeader,
        sums: EntrySums,
        size_bound: u64,
        data: &[Vec<u8>],
    ) -> io::Result<()> {
        let entry = self.begin_known_entry(header, sums, size_bound)?;
        for part in data {
            self.put(part)?;
        }
        self.end_known_entry(entry);
        Ok(())
    }

    /// Starts a member whose CRC and sizes are known but whose data follows in pieces
    /// ([`ZipWriter::write_data`]): a member copied from an earlier archive.
    pub fn begin_known_entry(
        &mut self,
        header: EntryHeader,
        sums: EntrySums,
        size_bound: u64,
    ) -> io::Result<KnownEntry> {
        let zip64 = needs_zip64(size_bound, sums);
        let offset = self.position;
        let bytes = self.local_header(&header, sums, zip64);
        self.put(&bytes)?;
        Ok(KnownEntry {
            entry: CentralEntry { header, sums, offset, zip64 },
            data_end: self.position + sums.compressed,
        })
    }

    /// Ends a member begun with [`ZipWriter::begin_known_entry`] once its data is written.
    pub fn end_known_entry(&mut self, known: KnownEntry) {
        debug_assert_eq!(
            self.position, known.data_end,
            "{}: data length differs from its header",
            known.entry.header.name
        );
        self.entries.push(known.entry);
    }

    /// Starts a member whose sizes are not known yet; `size_bound` is an upper bound of
    /// both sizes, which decides whether the header needs ZIP64 room.
    pub fn begin_entry(&mut self, header: EntryHeader, size_bound: u64) -> io::Result<OpenEntry> {
        let zip64 = size_bound >= U32_MAX;
        let offset = self.position;
        // A seek before the header that will be patched: a hashing writer below
        // (`atomic::HashingWriter`) keeps the hash of what came before, which is final,
        // and the file is read back only from here.
        self.out.stream_position()?;
        let bytes = self.local_header(&header, EntrySums::default(), zip64);
        self.put(&bytes)?;
        Ok(OpenEntry { header, offset, zip64 })
    }

    /// Appends member data after [`ZipWriter::begin_entry`].
    pub fn write_data(&mut self, data: &[u8]) -> io::Result<()> {
        self.put(data)
    }

    /// Patches the header of `entry` with its final CRC and sizes.
    pub fn end_entry(&mut self, entry: OpenEntry, sums: EntrySums) -> io::Result<()> {
        if !entry.zip64 && (sums.uncompressed >= U32_MAX || sums.compressed >= U32_MAX) {
            return Err(io::Error::other(format!(
                "{} grew past 4 GiB after its header was written without ZIP64",
                entry.header.name
            )));
        }
        let bytes = self.local_header(&entry.header, sums, entry.zip64);
        self.out.seek(SeekFrom::Start(entry.offset))?;
        self.out.write_all(&bytes)?;
        self.out.seek(SeekFrom::Start(self.position))?;
        self.entries.push(CentralEntry { header: entry.header, sums, offset: entry.offset, zip64: entry.zip64 });
        Ok(())
    }

    fn local_header(&self, header: &EntryHeader, sums: EntrySums, zip64: bool) -> Vec<u8> {
        let name = header.name.as_bytes();
        let mut out = Vec::with_capacity(30 + name.len() + 20);
        put_u32(&mut out, LOCAL_HEADER_SIGNATURE);
        put_u16(&mut out, if zip64 { VERSION_ZIP64 } else { VERSION_DEFLATE });
        put_u16(&mut out, flags(header));
        put_u16(&mut out, header.method.code());
        put_u16(&mut out, self.dos_time);
        put_u16(&mut out, self.dos_date);
        put_u32(&mut out, sums.crc);
        if zip64 {
            put_u32(&mut out, U32_MAX as u32);
            put_u32(&mut out, U32_MAX as u32);
        } else {
            put_u32(&mut out, sums.compressed as u32);
            put_u32(&mut out, sums.uncompressed as u32);
        }
        put_u16(&mut out, name.len() as u16);
        put_u16(&mut out, if zip64 { 20 } else { 0 });
        out.extend_from_slice(name);
        if zip64 {
            put_u16(&mut out, ZIP64_EXTRA_ID);
            put_u16(&mut out, 16);
            put_u64(&mut out, sums.uncompressed);
            put_u64(&mut out, sums.compressed);
        }
        out
    }

    /// Writes the central directory and end records; returns the output and its length.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        let central_offset = self.position;
        let entries = std::mem::take(&mut self.entries);
        for entry in &entries {
            let bytes = central_header(entry, self.dos_time, self.dos_date);
            self.put(&bytes)?;
        }
        let central_size = self.position - central_offset;
        let n_entries = entries.len() as u64;
        let needs_zip64_end = n_entries >= 0xFFFF || central_offset >= U32_MAX || central_size >= U32_MAX;
        let mut out = Vec::new();
        if needs_zip64_end {
            let zip64_end_offset = self.position;
            put_u32(&mut out, ZIP64_END_SIGNATURE);
            put_u64(&mut out, 44);
            put_u16(&mut out, MADE_BY_UNIX | VERSION_ZIP64);
            put_u16(&mut out, VERSION_ZIP64);
            put_u32(&mut out, 0);
            put_u32(&mut out, 0);
            put_u64(&mut out, n_entries);
            put_u64(&mut out, n_entries);
            put_u64(&mut out, central_size);
            put_u64(&mut out, central_offset);
            put_u32(&mut out, ZIP64_LOCATOR_SIGNATURE);
            put_u32(&mut out, 0);
            put_u64(&mut out, zip64_end_offset);
            put_u32(&mut out, 1);
        }
        put_u32(&mut out, END_SIGNATURE);
        put_u16(&mut out, 0);
        put_u16(&mut out, 0);
        put_u16(&mut out, n_entries.min(0xFFFF) as u16);
        put_u16(&mut out, n_entries.min(0xFFFF) as u16);
        put_u32(&mut out, central_size.min(U32_MAX) as u32);
        put_u32(&mut out, central_offset.min(U32_MAX) as u32);
        put_u16(&mut out, 0);
        self.put(&out)?;
        self.out.flush()?;
        Ok((self.out, self.position))
    }
}

fn flags(header: &EntryHeader) -> u16 {
    if header.name.is_ascii() {
        0
    } else {
        FLAG_UTF8
    }
}

/// One central directory header.
fn central_header(entry: &CentralEntry, dos_time: u16, dos_date: u16) -> Vec<u8> {
    let name = entry.header.name.as_bytes();
    // The ZIP64 extra holds, in this order, only the fields whose 32-bit slot says 0xFFFFFFFF.
    let sizes_in_extra = entry.zip64 || entry.sums.uncompressed >= U32_MAX || entry.sums.compressed >= U32_MAX;
    let offset_in_extra = entry.offset >= U32_MAX;
    let mut extra = Vec::new();
    if sizes_in_extra || offset_in_extra {
        let mut data = Vec::new();
        if sizes_in_extra {
            put_u64(&mut data, entry.sums.uncompressed);
            put_u64(&mut data, entry.sums.compressed);
        }
        if offset_in_extra {
            put_u64(&mut data, entry.offset);
        }
        put_u16(&mut extra, ZIP64_EXTRA_ID);
        put_u16(&mut extra, data.len() as u16);
        extra.extend_from_slice(&data);
    }
    let zip64 = !extra.is_empty();
    put_u16(&mut extra, REUSE_EXTRA_ID);
    put_u16(&mut extra, REUSE_EXTRA_LEN);
    extra.push(REUSE_EXTRA_VERSION);
    put_u32(&mut extra, entry.header.fingerprint);
    put_u32(&mut extra, entry.sums.compressed_crc);
    let version = if zip64 { VERSION_ZIP64 } else { VERSION_DEFLATE };
    let mode: u32 = if entry.header.executable { 0o100755 } else { 0o100644 };
    let mut out = Vec::with_capacity(46 + name.len() + extra.len());
    put_u32(&mut out, CENTRAL_HEADER_SIGNATURE);
    put_u16(&mut out, MADE_BY_UNIX | version);
    put_u16(&mut out, version);
    put_u16(&mut out, flags(&entry.header));
    put_u16(&mut out, entry.header.method.code());
    put_u16(&mut out, dos_time);
    put_u16(&mut out, dos_date);
    put_u32(&mut out, entry.sums.crc);
    if sizes_in_extra {
        put_u32(&mut out, U32_MAX as u32);
        put_u32(&mut out, U32_MAX as u32);
    } else {
        put_u32(&mut out, entry.sums.compressed as u32);
        put_u32(&mut out, entry.sums.uncompressed as u32);
    }
    put_u16(&mut out, name.len() as u16);
    put_u16(&mut out, extra.len() as u16);
    put_u16(&mut out, 0);
    put_u16(&mut out, 0);
    put_u16(&mut out, 0);
    put_u32(&mut out, mode << 16);
    put_u32(&mut out, if offset_in_extra { U32_MAX as u32 } else { entry.offset as u32 });
    out.extend_from_slice(name);
    out.extend_from_slice(&extra);
    out
}

/// Our extra field's (fingerprint, compressed CRC) in a central header's extra data, if it
/// is there and well formed.
pub fn parse_reuse_extra(mut extra: &[u8]) -> Option<(u32, u32)> {
    while extra.len() >= 4 {
        let id = u16::from_le_bytes([extra[0], extra[1]]);
        let len = usize::from(u16::from_le_bytes([extra[2], extra[3]]));
        let data = extra.get(4..4 + len)?;
        if id == REUSE_EXTRA_ID {
            if len != usize::from(REUSE_EXTRA_LEN) || data[0] != REUSE_EXTRA_VERSION {
                return None;
            }
            let word = |at: usize| u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            return Some((word(1), word(5)));
        }
        extra = &extra[4 + len..];
    }
    None
}

fn put_u16(out: &mut Vec<u8>, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// MS-DOS (date, time) of `build_time` in UTC, clamped to what zip can say (1980–2107).
pub fn dos_date_time(build_time: BuildTime) -> (u16, u16) {
    const MIN: u64 = 315_532_800; // 1980-01-01T00:00:00Z
    const MAX: u64 = 4_354_819_198; // 2107-12-31T23:59:58Z
    let seconds = build_time.0.clamp(MIN, MAX);
    let (year, month, day) = civil_from_days((seconds / 86_400) as i64);
    let in_day = seconds % 86_400;
    let (hour, minute, second) = (in_day / 3600, in_day % 3600 / 60, in_day % 60);
    let date = ((year - 1980) as u16) << 9 | (month as u16) << 5 | day as u16;
    let time = (hour as u16) << 11 | (minute as u16) << 5 | (second / 2) as u16;
    (date, time)
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(epoch: u64, expect: (u32, u32, u32, u32, u32, u32)) {
        let (date, time) = dos_date_time(BuildTime(epoch));
        let got = (
            (date >> 9) as u32 + 1980,
            (date >> 5 & 0xF) as u32,
            (date & 0x1F) as u32,
            (time >> 11) as u32,
            (time >> 5 & 0x3F) as u32,
            (time & 0x1F) as u32 * 2,
        );
        assert_eq!(got, expect, "{epoch}");
    }

    #[test]
    fn dos_times() {
        check(BuildTime::DEFAULT.0, (2020, 1, 1, 0, 0, 0));
        check(0, (1980, 1, 1, 0, 0, 0));
        check(1_709_210_096, (2024, 2, 29, 12, 34, 56));
        check(u64::MAX, (2107, 12, 31, 23, 59, 58));
    }

    /// Seeks over all-zero writes, so a test archive passes 4 GiB without 4 GiB of disk.
    struct SparseFile(std::fs::File);

    impl Write for SparseFile {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.iter().all(|&byte| byte == 0) {
                self.0.seek(SeekFrom::Current(buf.len() as i64))?;
                Ok(buf.len())
            } else {
                self.0.write(buf)
            }
        }

        fn flush(&mut self) -> io::Result<()> {
            self.0.flush()
        }
    }

    impl Seek for SparseFile {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.0.seek(pos)
        }
    }

    #[test]
    fn a_member_past_4_gib_gets_a_zip64_offset_that_python_reads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.zip");
        let file = std::fs::File::create(&path).expect("create");
        let mut zip = ZipWriter::new(SparseFile(file), BuildTime::DEFAULT);
        let big_len: u64 = (4 << 30) + (300 << 20);
        let header = |name: &str| EntryHeader {
            name: name.to_owned(),
            method: Method::Stored,
            executable: false,
            fingerprint: 0,
        };
        let entry = zip.begin_entry(header("big"), big_len).expect("begin");
        let zeros = vec![0u8; 1 << 20];
        let mut crc = crc32fast::Hasher::new();
        for _ in 0..big_len / zeros.len() as u64 {
            zip.write_data(&zeros).expect("data");
            crc.update(&zeros);
        }
        let crc = crc.finalize();
        let sums = EntrySums { crc, uncompressed: big_len, compressed: big_len, compressed_crc: crc };
        zip.end_entry(entry, sums).expect("end");
        let after = b"written after 4 GiB\n".to_vec();
        let after_sums = EntrySums {
            crc: crc32fast::hash(&after),
            uncompressed: after.len() as u64,
            compressed: after.len() as u64,
            compressed_crc: crc32fast::hash(&after),
        };
        zip.write_entry(header("after"), after_sums, after.len() as u64, &[after]).expect("after");
        zip.finish().expect("finish");

        // Python's zipfile follows the ZIP64 end record and the offset in the extra field.
        let script = "import sys, zipfile\n\
                      z = zipfile.ZipFile(sys.argv[1])\n\
                      big, after = z.getinfo('big'), z.getinfo('after')\n\
                      assert big.file_size == int(sys.argv[2]), big.file_size\n\
                      assert after.header_offset > 2**32, after.header_offset\n\
                      assert z.read('after') == b'written after 4 GiB\\n'\n\
                      assert z.open('big').read(1 << 20) == bytes(1 << 20)\n\
                      print('ok')\n";
        let output = std::process::Command::new("python3")
            .args(["-c", script])
            .arg(&path)
            .arg(big_len.to_string())
            .output()
            .expect("python3 is needed for this test");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "ok\n", "{}", String::from_utf8_lossy(&output.stderr));
    }
}
