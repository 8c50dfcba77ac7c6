//! Reading a `.kpack` archive under the bounds of rocm-kpack's readers (KPACK.md §1 "What
//! the reference readers accept"): magic and version 1 exact, the table of contents inside
//! the file and running to its end, a zstd blob of at most 4 GiB and 1,048,576 frames, every
//! frame inside the blob, and every code object decompressing to exactly its
//! `original_size` (a frame that inflates past it is stopped there).
//!
//! Owns: the reader and [`KpackArchive::check_all`]. Must not know: what the keys name.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{
    Toc, TocEntries, TocEntry, BLOB_START, FORMAT_VERSION, MAGIC, MAX_CODE_OBJECTS, MAX_ZSTD_BLOB, SCHEME_NONE,
    SCHEME_ZSTD,
};
use crate::msgpack::{self, Value};
use crate::DeviceCodeError;

/// Header bytes: magic, version, TOC offset.
const HEADER: u64 = 16;
/// A larger table of contents than any archive needs (torch's 20,181 kernels take about a
/// megabyte): a bound on what is read into memory.
const MAX_TOC: u64 = 256 << 20;
/// Bytes decompressed per step.
const CHUNK: usize = 1 << 16;

/// Where each code object's stored bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Layout {
    /// `none`: (absolute offset, size) per ordinal.
    Plain(Vec<(u64, u64)>),
    /// `zstd-per-kernel`: (absolute offset, length) of each frame.
    Zstd(Vec<(u64, u64)>),
}

/// An open archive: its table of contents, read and checked, and the file to read code
/// objects from.
#[derive(Debug)]
pub struct KpackArchive {
    path: PathBuf,
    file: File,
    toc: Toc,
    layout: Layout,
}

/// What [`KpackArchive::check_all`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchiveCheck {
    pub code_objects: usize,
    pub entries: usize,
    pub original_bytes: u64,
}

impl KpackArchive {
    /// Opens the archive `file` (at `path`, named in errors) and reads its table of contents.
    pub fn open(file: File, path: &Path) -> Result<KpackArchive, DeviceCodeError> {
        let invalid = |reason: String| DeviceCodeError::Kpack { path: path.to_path_buf(), reason };
        let io_error = |source| DeviceCodeError::Io { path: path.to_path_buf(), source };
        let file_size = file.metadata().map_err(io_error)?.len();
        if file_size < HEADER {
            return Err(invalid(format!("{file_size} bytes is too short for the 16-byte header")));
        }
        let mut header = [0u8; HEADER as usize];
        file.read_exact_at(&mut header, 0).map_err(io_error)?;
        if header[..4] != *MAGIC {
            return Err(invalid(format!("no KPAK magic (the file starts with {:02x?})", &header[..4])));
        }
        let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if version != FORMAT_VERSION {
            return Err(invalid(format!("format version {version}; only version {FORMAT_VERSION} is read")));
        }
        let toc_offset = u64::from_le_bytes(header[8..16].try_into().expect("eight bytes"));
        if toc_offset < HEADER || toc_offset >= file_size {
            return Err(invalid(format!(
                "the table of contents' offset {toc_offset} is outside the file ({file_size} bytes)"
            )));
        }
        let toc_len = file_size - toc_offset;
        if toc_len > MAX_TOC {
            return Err(invalid(format!("a table of contents of {toc_len} bytes, more than the {MAX_TOC} read")));
        }
        let mut raw = vec![0u8; toc_len as usize];
        file.read_exact_at(&mut raw, toc_offset).map_err(io_error)?;
        let value =
            msgpack::decode(&raw).map_err(|error| invalid(format!("table of contents at {toc_offset}: {error}")))?;
        let toc = parse_toc(&value).map_err(|reason| invalid(format!("table of contents: {reason}")))?;
        let layout = match toc.compression_scheme.as_str() {
            SCHEME_NONE => Layout::Plain(parse_blobs(&value, toc_offset).map_err(invalid)?),
            _ => Layout::Zstd(read_frames(&file, &value, toc_offset).map_err(|error| match error {
                FrameError::Format(reason) => invalid(reason),
                FrameError::Io(source) => io_error(source),
            })?),
        };
        Ok(KpackArchive { path: path.to_path_buf(), file, toc, layout })
    }

    pub fn toc(&self) -> &Toc {
        &self.toc
    }

    fn invalid(&self, reason: String) -> DeviceCodeError {
        DeviceCodeError::Kpack { path: self.path.clone(), reason }
    }

    /// The code object `key` holds for `arch`, decompressed; `None` when the table has none.
    pub fn code_object(&self, key: &str, arch: &str) -> Result<Option<Vec<u8>>, DeviceCodeError> {
        let Some(entry) = self.toc.entries.get(key).and_then(|archs| archs.get(arch)) else {
            return Ok(None);
        };
        let mut bytes = Vec::with_capacity(entry.original_size.min(CHUNK as u64 * 64) as usize);
        self.copy_ordinal(*entry, &mut bytes)?;
        Ok(Some(bytes))
    }

    /// Streams the code object `key` holds for `arch` to `out`; `None` when the table has none.
    pub fn copy_code_object(&self, key: &str, arch: &str, out: &mut dyn Write) -> Result<Option<u64>, DeviceCodeError> {
        let Some(entry) = self.toc.entries.get(key).and_then(|archs| archs.get(arch)) else {
            return Ok(None);
        };
        self.copy_ordinal(*entry, out).map(Some)
    }

    /// Writes the code object `entry` names to `out`, checking it is exactly
    /// `original_size` bytes (`none` blobs too, which rocm-kpack's reader does not check).
    fn copy_ordinal(&self, entry: TocEntry, out: &mut dyn Write) -> Result<u64, DeviceCodeError> {
        let (ranges, compressed) = match &self.layout {
            Layout::Plain(ranges) => (ranges, false),
            Layout::Zstd(ranges) => (ranges, true),
        };
        let Some(&(offset, len)) = ranges.get(entry.ordinal as usize) else {
            return Err(self.invalid(format!(
                "ordinal {} names no code object ({} stored)",
                entry.ordinal,
                ranges.len()
            )));
        };
        let claim = entry.original_size;
        let what = |reason: String| self.invalid(format!("code object {}: {reason}", entry.ordinal));
        let mut input =
            BufReader::with_capacity(CHUNK, RangeReader { file: &self.file, at: offset, end: offset + len });
        let written = if compressed {
            let decoder = zstd::stream::read::Decoder::with_buffer(&mut input)
                .map_err(|error| what(format!("zstd: {error}")))?
                .single_frame();
            let written = copy_bounded(decoder, out, claim).map_err(|error| match error {
                CopyError::Input(error) => what(format!("the zstd frame does not decode: {error}")),
                CopyError::Past => what(format!("the frame inflates past its original_size of {claim} bytes")),
                CopyError::Output(source) => DeviceCodeError::Io { path: self.path.clone(), source },
            })?;
            let left = input.fill_buf().map_err(|source| DeviceCodeError::Io { path: self.path.clone(), source })?;
            if !left.is_empty() {
                return Err(what("bytes follow the zstd frame inside its length".to_owned()));
            }
            written
        } else {
            copy_bounded(&mut input, out, claim).map_err(|error| match error {
                CopyError::Input(source) | CopyError::Output(source) => {
                    DeviceCodeError::Io { path: self.path.clone(), source }
                }
                CopyError::Past => what(format!("the blob holds {len} bytes, its original_size is {claim}")),
            })?
        };
        if written != claim {
            return Err(what(format!("it holds {written} bytes, its original_size is {claim}")));
        }
        Ok(written)
    }

    /// Checks the whole archive as the gate does: every target used in the table is in
    /// `gfx_arches`, every ordinal names a stored code object and every stored one is
    /// named, entries naming one code object agree on its size, and every code object
    /// decompresses to exactly its `original_size`.
    pub fn check_all(&self) -> Result<ArchiveCheck, DeviceCodeError> {
        let stored = match &self.layout {
            Layout::Plain(ranges) | Layout::Zstd(ranges) => ranges.len(),
        };
        let mut sizes: BTreeMap<u32, u64> = BTreeMap::new();
        let mut entries = 0;
        for (key, archs) in &self.toc.entries {
            for (arch, entry) in archs {
                entries += 1;
                if !self.toc.gfx_arches.contains(arch) {
                    return Err(self.invalid(format!("{key} has code for {arch}, which gfx_arches does not list")));
                }
                if entry.ordinal as usize >= stored {
                    return Err(
                        self.invalid(format!("{key} for {arch}: ordinal {} of {stored} code objects", entry.ordinal))
                    );
                }
                if let Some(size) =
                    sizes.insert(entry.ordinal, entry.original_size).filter(|size| *size != entry.original_size)
                {
                    return Err(self.invalid(format!(
                        "code object {} is {size} bytes in one entry, {} in another",
                        entry.ordinal, entry.original_size
                    )));
                }
            }
        }
        if sizes.len() != stored {
            return Err(self.invalid(format!(
                "{} code objects are stored but the table names {}",
                stored,
                sizes.len()
            )));
        }
        let mut original_bytes = 0;
        for (&ordinal, &original_size) in &sizes {
            original_bytes += self.copy_ordinal(TocEntry { ordinal, original_size }, &mut io::sink())?;
        }
        Ok(ArchiveCheck { code_objects: stored, entries, original_bytes })
    }
}

fn parse_toc(value: &Value) -> Result<Toc, String> {
    if value.as_map().is_none() {
        return Err("not a map".to_owned());
    }
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned).ok_or(format!("no string {key}"));
    if let Some(version) = value.get("format_version") {
        if version.as_u64() != Some(u64::from(FORMAT_VERSION)) {
            return Err(format!("format_version {version:?}, not {FORMAT_VERSION}"));
        }
    }
    let gfx_arches = value
        .get("gfx_arches")
        .and_then(Value::as_array)
        .and_then(|arches| arches.iter().map(|arch| arch.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>())
        .ok_or("no gfx_arches array of strings")?;
    // Python's reader takes a missing scheme for `none`.
    let compression_scheme = match value.get("compression_scheme") {
        None => SCHEME_NONE.to_owned(),
        Some(scheme) => match scheme.as_str() {
            Some(scheme @ (SCHEME_NONE | SCHEME_ZSTD)) => scheme.to_owned(),
            _ => return Err(format!("compression_scheme {scheme:?} is neither {SCHEME_NONE:?} nor {SCHEME_ZSTD:?}")),
        },
    };
    let mut entries: TocEntries = BTreeMap::new();
    for (key, archs) in value.get("toc").and_then(Value::as_map).ok_or("no toc map")? {
        let archs = archs.as_map().ok_or(format!("toc[{key:?}] is not a map"))?;
        let slot = entries.entry(key.clone()).or_default();
        for (arch, entry) in archs {
            let number = |field: &str| {
                entry.get(field).and_then(Value::as_u64).ok_or(format!("toc[{key:?}][{arch:?}] has no integer {field}"))
            };
            let ordinal =
                u32::try_from(number("ordinal")?).map_err(|_| format!("toc[{key:?}][{arch:?}]: ordinal too large"))?;
            let original_size = number("original_size")?;
            if slot.insert(arch.clone(), TocEntry { ordinal, original_size }).is_some() {
                return Err(format!("toc[{key:?}] names {arch:?} twice"));
            }
        }
    }
    Ok(Toc {
        group_name: text("group_name")?,
        gfx_arch_family: text("gfx_arch_family")?,
        gfx_arches,
        entries,
        compression_scheme,
    })
}

/// The `blobs` of a `none` archive, each inside the file before the table of contents.
fn parse_blobs(value: &Value, toc_offset: u64) -> Result<Vec<(u64, u64)>, String> {
    let blobs = value.get("blobs").and_then(Value::as_array).ok_or("table of contents: no blobs array")?;
    blobs
        .iter()
        .enumerate()
        .map(|(ordinal, blob)| {
            let offset = blob.get("offset").and_then(Value::as_u64);
            let size = blob.get("size").and_then(Value::as_u64);
            match (offset, size) {
                (Some(offset), Some(size))
                    if offset >= BLOB_START && offset.checked_add(size).is_some_and(|end| end <= toc_offset) =>
                {
                    Ok((offset, size))
                }
                _ => Err(format!("blob {ordinal} ({blob:?}) is not inside the blob region {BLOB_START}..{toc_offset}")),
            }
        })
        .collect()
}

enum FrameError {
    Format(String),
    Io(io::Error),
}

/// The frames of a `zstd-per-kernel` blob, found by walking its length prefixes.
fn read_frames(file: &File, value: &Value, toc_offset: u64) -> Result<Vec<(u64, u64)>, FrameError> {
    let field = |key: &str| {
        value.get(key).and_then(Value::as_u64).ok_or(FrameError::Format(format!("table of contents: no integer {key}")))
    };
    let (offset, size) = (field("zstd_offset")?, field("zstd_size")?);
    let end = offset.checked_add(size).filter(|end| offset >= BLOB_START && *end <= toc_offset && size >= 4);
    let Some(end) = end else {
        return Err(FrameError::Format(format!(
            "the zstd blob {offset}..+{size} is not inside {BLOB_START}..{toc_offset}"
        )));
    };
    if size > MAX_ZSTD_BLOB {
        return Err(FrameError::Format(format!("a zstd blob of {size} bytes, more than the readers' {MAX_ZSTD_BLOB}")));
    }
    let mut reader = BufReader::new(file);
    reader.seek(SeekFrom::Start(offset)).map_err(FrameError::Io)?;
    let mut word = [0u8; 4];
    reader.read_exact(&mut word).map_err(FrameError::Io)?;
    let count = u64::from(u32::from_le_bytes(word));
    if count > MAX_CODE_OBJECTS || count > (size - 4) / 4 {
        return Err(FrameError::Format(format!(
            "the zstd blob claims {count} frames, more than the readers' {MAX_CODE_OBJECTS} or its bytes hold"
        )));
    }
    let mut frames = Vec::with_capacity(count as usize);
    let mut at = offset + 4;
    for index in 0..count {
        if end - at < 4 {
            return Err(FrameError::Format(format!("frame {index}'s length lies past the end of the zstd blob")));
        }
        reader.read_exact(&mut word).map_err(FrameError::Io)?;
        let len = u64::from(u32::from_le_bytes(word));
        at += 4;
        if len > end - at {
            return Err(FrameError::Format(format!(
                "frame {index} ({len} bytes at {at}) runs past the end of the zstd blob"
            )));
        }
        frames.push((at, len));
        reader.seek_relative(len as i64).map_err(FrameError::Io)?;
        at += len;
    }
    Ok(frames)
}

enum CopyError {
    Input(io::Error),
    Output(io::Error),
    Past,
}

/// Copies `input` to `out`, failing as soon as it gives more than `claim` bytes.
fn copy_bounded(mut input: impl Read, out: &mut dyn Write, claim: u64) -> Result<u64, CopyError> {
    let mut buf = vec![0u8; CHUNK];
    let mut written = 0u64;
    loop {
        let len = match input.read(&mut buf) {
            Ok(0) => return Ok(written),
            Ok(len) => len,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(CopyError::Input(error)),
        };
        if written + len as u64 > claim {
            return Err(CopyError::Past);
        }
        out.write_all(&buf[..len]).map_err(CopyError::Output)?;
        written += len as u64;
    }
}

/// A sequential reader over `at..end` of a file, by positioned reads.
struct RangeReader<'a> {
    file: &'a File,
    at: u64,
    end: u64,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let len = usize::try_from(self.end - self.at).unwrap_or(usize::MAX).min(buf.len());
        self.file.read_exact_at(&mut buf[..len], self.at)?;
        self.at += len as u64;
        Ok(len)
    }
}
