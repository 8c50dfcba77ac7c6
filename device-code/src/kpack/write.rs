//! Writing a `.kpack` archive with bounded memory: each code object is compressed (or
//! copied) into an unlinked temporary spool as it is added, and [`ArchiveWriter::finish`]
//! writes header, blob and table of contents in one pass (the table's offset is known
//! before anything is written, so the output needs no seeking). The same inputs give the
//! same bytes: one zstd frame per code object at a fixed level, no checksum or dictionary
//! id, the table's keys sorted.
//!
//! Owns: the writer. Must not know: where the code objects come from.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use super::{
    TocEntry, BLOB_START, CODE_OBJECT_TYPE, FORMAT_VERSION, MAGIC, MAX_CODE_OBJECTS, MAX_ZSTD_BLOB, SCHEME_NONE,
    SCHEME_ZSTD,
};
use crate::msgpack::{self, Value};
use crate::DeviceCodeError;

/// How code objects are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// `none`: stored as they are, located by `blobs`.
    None,
    /// `zstd-per-kernel`: one zstd frame each at this level.
    Zstd { level: i32 },
}

/// What the archive's table of contents says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveSpec {
    pub group_name: String,
    pub gfx_arch_family: String,
    /// Every target the archive may hold: the runtime picks archives by this list, so each
    /// target used in the table must be here (the writer refuses any other).
    pub gfx_arches: Vec<String>,
    pub compression: Compression,
}

/// What [`ArchiveWriter::finish`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchiveSummary {
    /// Bytes of the whole archive.
    pub len: u64,
    pub toc_offset: u64,
    /// Code objects stored (ordinals).
    pub code_objects: u32,
    /// (key, target) entries of the table, aliases included.
    pub entries: usize,
    /// Bytes of the code objects uncompressed.
    pub original_bytes: u64,
}

/// A code object in the spool.
#[derive(Clone, Copy, Debug)]
struct Stored {
    /// Bytes in the spool (the zstd frame, or the code object itself).
    len: u64,
    original_size: u64,
}

/// An archive being written; see the module doc.
pub struct ArchiveWriter {
    spec: ArchiveSpec,
    spool: BufWriter<File>,
    spool_len: u64,
    stored: Vec<Stored>,
    /// Keys in the order first added, each with its targets in the order added: the order
    /// rocm-kpack's writer (a Python dict) puts them in, so the same additions give its bytes.
    entries: Vec<(String, Vec<(String, TocEntry)>)>,
    /// Where each key is in `entries`.
    key_index: BTreeMap<String, usize>,
}

impl ArchiveWriter {
    /// A writer for the archive `spec` describes.
    pub fn new(spec: ArchiveSpec) -> Result<ArchiveWriter, DeviceCodeError> {
        let refuse = |reason: String| DeviceCodeError::KpackWrite { reason };
        if spec.gfx_arches.is_empty() {
            return Err(refuse("gfx_arches lists no target".to_owned()));
        }
        if let Compression::Zstd { level } = spec.compression {
            let levels = zstd::compression_level_range();
            if !levels.contains(&level) {
                return Err(refuse(format!("zstd level {level} is outside {}..={}", levels.start(), levels.end())));
            }
        }
        let spool = tempfile::tempfile().map_err(|source| DeviceCodeError::KpackIo { source })?;
        Ok(ArchiveWriter {
            spec,
            spool: BufWriter::new(spool),
            spool_len: 0,
            stored: Vec::new(),
            entries: Vec::new(),
            key_index: BTreeMap::new(),
        })
    }

    fn refuse(&self, reason: String) -> DeviceCodeError {
        DeviceCodeError::KpackWrite { reason }
    }

    fn io_error(&self, source: io::Error) -> DeviceCodeError {
        DeviceCodeError::KpackIo { source }
    }

    /// Checks that `key` may name a code object for `arch`.
    fn check_new_entry(&self, key: &str, arch: &str) -> Result<(), DeviceCodeError> {
        if !self.spec.gfx_arches.iter().any(|listed| listed == arch) {
            return Err(self.refuse(format!("target {arch} is not in gfx_arches {:?}", self.spec.gfx_arches)));
        }
        let archs = self.key_index.get(key).map(|&index| &self.entries[index].1);
        if archs.is_some_and(|archs| archs.iter().any(|(name, _)| name == arch)) {
            return Err(self.refuse(format!("{key} already has a code object for {arch}")));
        }
        Ok(())
    }

    /// Adds a code object of `original_size` bytes under `key` for `arch`, written by
    /// `fill`, and returns its ordinal. Exactly `original_size` bytes must be written.
    pub fn add(
        &mut self,
        key: &str,
        arch: &str,
        original_size: u64,
        fill: impl FnOnce(&mut dyn Write) -> Result<(), DeviceCodeError>,
    ) -> Result<u32, DeviceCodeError> {
        self.check_new_entry(key, arch)?;
        if self.stored.len() as u64 >= MAX_CODE_OBJECTS {
            return Err(self.refuse(format!("more than {MAX_CODE_OBJECTS} code objects, the readers' limit")));
        }
        let start = self.spool_len;
        let written = match self.store(original_size, fill) {
            Ok(written) => written,
            Err(error) => {
                // Take the partial object back out, so the writer stays usable and the
                // spool holds whole objects only.
                self.rewind(start)?;
                return Err(error);
            }
        };
        let len = self.spool_len - start;
        if written != original_size {
            self.rewind(start)?;
            return Err(self.refuse(format!("{key} for {arch}: {written} bytes written, {original_size} declared")));
        }
        if matches!(self.spec.compression, Compression::Zstd { .. }) {
            let blob = self.zstd_blob_size() + 4 + len;
            if len > u64::from(u32::MAX) || blob > MAX_ZSTD_BLOB {
                self.rewind(start)?;
                return Err(self.refuse(format!(
                    "{key} for {arch}: the zstd blob would reach {blob} bytes, more than the readers' {MAX_ZSTD_BLOB}"
                )));
            }
        }
        let ordinal = self.stored.len() as u32;
        self.stored.push(Stored { len, original_size });
        self.insert(key, arch, TocEntry { ordinal, original_size });
        Ok(ordinal)
    }

    /// Writes one code object to the spool; returns the bytes `fill` wrote.
    fn store(
        &mut self,
        original_size: u64,
        fill: impl FnOnce(&mut dyn Write) -> Result<(), DeviceCodeError>,
    ) -> Result<u64, DeviceCodeError> {
        let io_error = |source| DeviceCodeError::KpackIo { source };
        let mut spool = Counting::new(&mut self.spool, None);
        let written = match self.spec.compression {
            Compression::None => {
                let mut counted = Counting::new(&mut spool, Some(original_size));
                let filled = fill(&mut counted);
                counted.check(filled, original_size)?
            }
            Compression::Zstd { level } => {
                let mut encoder = zstd::stream::write::Encoder::new(&mut spool, level).map_err(io_error)?;
                // The frame records its content size, which Python's reader needs, and
                // nothing that varies between runs.
                encoder.set_pledged_src_size(Some(original_size)).map_err(io_error)?;
                encoder.include_contentsize(true).map_err(io_error)?;
                encoder.include_checksum(false).map_err(io_error)?;
                encoder.include_dictid(false).map_err(io_error)?;
                let mut counted = Counting::new(&mut encoder, Some(original_size));
                let filled = fill(&mut counted);
                let written = counted.check(filled, original_size)?;
                if written != original_size {
                    return Ok(written);
                }
                encoder.finish().map_err(io_error)?;
                written
            }
        };
        self.spool_len += spool.count;
        Ok(written)
    }

    /// Cuts the spool back to `len` bytes.
    fn rewind(&mut self, len: u64) -> Result<(), DeviceCodeError> {
        let result = (|| {
            self.spool.flush()?;
            let file = self.spool.get_mut();
            file.set_len(len)?;
            file.seek(SeekFrom::Start(len))?;
            Ok(())
        })();
        self.spool_len = len;
        result.map_err(|source| self.io_error(source))
    }

    /// Names the code object `ordinal` again under `key` for `arch` (a second binary key,
    /// or a second target that runs the same code).
    pub fn alias(&mut self, key: &str, arch: &str, ordinal: u32) -> Result<(), DeviceCodeError> {
        self.check_new_entry(key, arch)?;
        let Some(stored) = self.stored.get(ordinal as usize) else {
            return Err(self.refuse(format!("no code object has ordinal {ordinal}")));
        };
        let entry = TocEntry { ordinal, original_size: stored.original_size };
        self.insert(key, arch, entry);
        Ok(())
    }

    fn insert(&mut self, key: &str, arch: &str, entry: TocEntry) {
        let index = *self.key_index.entry(key.to_owned()).or_insert_with(|| {
            self.entries.push((key.to_owned(), Vec::new()));
            self.entries.len() - 1
        });
        self.entries[index].1.push((arch.to_owned(), entry));
    }

    fn zstd_blob_size(&self) -> u64 {
        4 + self.stored.iter().map(|stored| 4 + stored.len).sum::<u64>()
    }

    /// Writes the archive to `out`: header, padding, blob, table of contents.
    pub fn finish(mut self, out: &mut dyn Write) -> Result<ArchiveSummary, DeviceCodeError> {
        let blob_size = match self.spec.compression {
            Compression::None => self.spool_len,
            Compression::Zstd { .. } => self.zstd_blob_size(),
        };
        let toc_offset = BLOB_START + blob_size;
        let mut toc = Vec::new();
        msgpack::encode(&self.toc_value(), &mut toc).map_err(|error| self.refuse(error.to_string()))?;
        let result = (|| {
            self.spool.flush()?;
            let mut spool = BufReader::new(self.spool.get_mut());
            spool.seek(SeekFrom::Start(0))?;
            let mut header = [0u8; BLOB_START as usize];
            header[..4].copy_from_slice(MAGIC);
            header[4..8].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
            header[8..16].copy_from_slice(&toc_offset.to_le_bytes());
            out.write_all(&header)?;
            match self.spec.compression {
                Compression::None => copy_exact(&mut spool, out, self.spool_len)?,
                Compression::Zstd { .. } => {
                    out.write_all(&(self.stored.len() as u32).to_le_bytes())?;
                    for stored in &self.stored {
                        out.write_all(&(stored.len as u32).to_le_bytes())?;
                        copy_exact(&mut spool, out, stored.len)?;
                    }
                }
            }
            out.write_all(&toc)?;
            out.flush()
        })();
        result.map_err(|source| self.io_error(source))?;
        Ok(ArchiveSummary {
            len: toc_offset + toc.len() as u64,
            toc_offset,
            code_objects: self.stored.len() as u32,
            entries: self.entries.iter().map(|(_, archs)| archs.len()).sum(),
            original_bytes: self.stored.iter().map(|stored| stored.original_size).sum(),
        })
    }

    /// The table of contents, keys in the order rocm-kpack's writer puts them.
    fn toc_value(&self) -> Value {
        let arches = self.spec.gfx_arches.iter().map(|arch| Value::str(arch)).collect();
        let toc = self
            .entries
            .iter()
            .map(|(key, archs)| {
                let archs = archs
                    .iter()
                    .map(|(arch, entry)| {
                        let entry = Value::map([
                            ("type", Value::str(CODE_OBJECT_TYPE)),
                            ("ordinal", Value::UInt(u64::from(entry.ordinal))),
                            ("original_size", Value::UInt(entry.original_size)),
                        ]);
                        (arch.clone(), entry)
                    })
                    .collect();
                (key.clone(), Value::Map(archs))
            })
            .collect();
        let mut map = vec![
            ("format_version", Value::UInt(u64::from(FORMAT_VERSION))),
            ("group_name", Value::str(&self.spec.group_name)),
            ("gfx_arch_family", Value::str(&self.spec.gfx_arch_family)),
            ("gfx_arches", Value::Array(arches)),
            ("toc", Value::Map(toc)),
        ];
        match self.spec.compression {
            Compression::None => {
                let mut offset = BLOB_START;
                let blobs = self
                    .stored
                    .iter()
                    .map(|stored| {
                        let blob = Value::map([("offset", Value::UInt(offset)), ("size", Value::UInt(stored.len))]);
                        offset += stored.len;
                        blob
                    })
                    .collect();
                map.push(("compression_scheme", Value::str(SCHEME_NONE)));
                map.push(("blobs", Value::Array(blobs)));
            }
            Compression::Zstd { .. } => {
                map.push(("compression_scheme", Value::str(SCHEME_ZSTD)));
                map.push(("zstd_offset", Value::UInt(BLOB_START)));
                map.push(("zstd_size", Value::UInt(self.zstd_blob_size())));
            }
        }
        Value::map(map)
    }
}

/// Copies exactly `len` bytes.
fn copy_exact(from: &mut impl Read, to: &mut dyn Write, len: u64) -> io::Result<()> {
    let copied = io::copy(&mut from.take(len), to)?;
    if copied != len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the spool is shorter than what was written to it"));
    }
    Ok(())
}

/// A writer that counts what passes through and refuses more than `limit` bytes (a code
/// object's declared size, which the zstd frame's header already records).
struct Counting<W> {
    inner: W,
    count: u64,
    limit: Option<u64>,
    overflowed: bool,
}

impl<W: Write> Counting<W> {
    fn new(inner: W, limit: Option<u64>) -> Counting<W> {
        Counting { inner, count: 0, limit, overflowed: false }
    }

    /// The bytes written by a `fill` that returned `filled`, or the error to report: ours
    /// when it wrote more than declared (its own error is then only our refusal echoed).
    fn check(&self, filled: Result<(), DeviceCodeError>, declared: u64) -> Result<u64, DeviceCodeError> {
        if self.overflowed {
            return Err(DeviceCodeError::KpackWrite {
                reason: format!("a code object of more than the {declared} bytes declared"),
            });
        }
        filled.map(|()| self.count)
    }
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.limit.is_some_and(|limit| self.count + buf.len() as u64 > limit) {
            self.overflowed = true;
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "more bytes than the code object's declared size"));
        }
        let written = self.inner.write(buf)?;
        self.count += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
