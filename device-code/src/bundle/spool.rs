//! Where a bundle's bytes are read from: a range of the host file, or the spool that holds
//! the decompressed payloads of compressed bundles (memory while small, then an unlinked
//! temporary file), both read with positioned reads so nothing is held whole.
//!
//! Owns: the [`Region`] view both are read through and the [`Spool`]. Must not know: the
//! bundle formats.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;

/// Decompressed payloads stay in memory up to this many bytes in all; past it the spool
/// moves to a temporary file, so memory stays bounded however large the device code is.
const SPOOL_MEMORY: usize = 16 << 20;

/// Bytes readable at offsets `0..len()`.
pub(super) trait Region {
    fn len(&self) -> u64;
    /// Fills `buf` from `offset`; the caller keeps the range inside `len()`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

/// `len` bytes of a file from `base` (the `.hip_fatbin` section).
pub(super) struct FileRange<'a> {
    pub file: &'a File,
    pub base: u64,
    pub len: u64,
}

impl Region for FileRange<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, self.base + offset)
    }
}

/// `len` bytes of another region from `base` (one decompressed payload in the spool).
pub(super) struct SubRegion<'a> {
    pub inner: &'a dyn Region,
    pub base: u64,
    pub len: u64,
}

impl Region for SubRegion<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, self.base + offset)
    }
}

/// A sequential reader over `start..end` of a region.
pub(super) struct RegionReader<'a> {
    pub region: &'a dyn Region,
    pub at: u64,
    pub end: u64,
}

impl Read for RegionReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let len = usize::try_from(self.end - self.at).unwrap_or(usize::MAX).min(buf.len());
        self.region.read_exact_at(&mut buf[..len], self.at)?;
        self.at += len as u64;
        Ok(len)
    }
}

/// The decompressed payloads of one file's compressed bundles, appended one after another.
#[derive(Debug, Default)]
pub(super) struct Spool {
    memory: Vec<u8>,
    file: Option<File>,
    len: u64,
}

impl Spool {
    pub fn len(&self) -> u64 {
        self.len
    }

    fn move_to_file(&mut self) -> io::Result<()> {
        let mut file = tempfile::tempfile()?;
        file.write_all(&self.memory)?;
        self.memory = Vec::new();
        self.file = Some(file);
        Ok(())
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.file.is_none() && self.memory.len() + buf.len() > SPOOL_MEMORY {
            self.move_to_file()?;
        }
        match &mut self.file {
            Some(file) => file.write_all(buf)?,
            None => self.memory.extend_from_slice(buf),
        }
        self.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Region for Spool {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match &self.file {
            Some(file) => file.read_exact_at(buf, offset),
            None => {
                let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
                let bytes = start
                    .checked_add(buf.len())
                    .and_then(|end| self.memory.get(start..end))
                    .ok_or(io::ErrorKind::UnexpectedEof)?;
                buf.copy_from_slice(bytes);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spool_reads_back_what_was_written_across_the_move_to_a_file() {
        let mut spool = Spool::default();
        let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        for _ in 0..20 {
            spool.write_all(&chunk).expect("write");
        }
        assert!(spool.file.is_some() && spool.memory.is_empty());
        assert_eq!(spool.len(), 20 << 20);
        let mut buf = [0u8; 300];
        spool.read_exact_at(&mut buf, (17 << 20) + 5).expect("read");
        assert_eq!(buf[..], chunk[5..305]);
        assert!(spool.read_exact_at(&mut buf, (20 << 20) - 10).is_err());
    }
}
