//! Bytes of one file at any offset, without holding the file: a wheel member that is
//! stored (the writer stores `.kpack` archives) is read in place by seeking; a deflated one
//! is inflated again from its start and the bytes before the offset skipped. The kpack and
//! host readers ask for few ranges (a header, a table, one sequential pass), so either way
//! stays bounded in memory.
//!
//! Owns: [`Positioned`] and its wheel-member and in-memory forms. Does not own: what the
//! bytes mean (`archive_file`, `host`).

use std::io::{self, BufReader, Read, Seek, SeekFrom};

/// A file that can be read from any offset.
pub(crate) trait Positioned {
    fn len(&self) -> u64;

    /// A reader of the bytes from `offset` to the end.
    fn read_from(&mut self, offset: u64) -> io::Result<Box<dyn Read + '_>>;
}

/// Reads exactly `len` bytes at `offset`; the caller has bounded `len`.
pub(crate) fn read_exact_at(source: &mut dyn Positioned, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    source.read_from(offset)?.take(len as u64).read_to_end(&mut bytes)?;
    if bytes.len() < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("{len} bytes at offset {offset} run past the end ({} bytes)", source.len()),
        ));
    }
    Ok(bytes)
}

/// Member `index` of an open wheel.
pub(crate) struct ZipMember<'a> {
    pub zip: &'a mut zip::ZipArchive<BufReader<std::fs::File>>,
    pub index: usize,
    pub len: u64,
    /// Stored without compression, so it can seek.
    pub stored: bool,
}

impl Positioned for ZipMember<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_from(&mut self, offset: u64) -> io::Result<Box<dyn Read + '_>> {
        if self.stored {
            let mut member = self.zip.by_index_seek(self.index).map_err(io::Error::other)?;
            member.seek(SeekFrom::Start(offset))?;
            return Ok(Box::new(member));
        }
        let mut member = self.zip.by_index(self.index).map_err(io::Error::other)?;
        let skipped = io::copy(&mut (&mut member).take(offset), &mut io::sink())?;
        if skipped < offset {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("offset {offset} is past the end")));
        }
        Ok(Box::new(member))
    }
}

/// Bytes in memory, for the tests.
#[cfg(test)]
pub(crate) struct InMemory<'a>(pub &'a [u8]);

#[cfg(test)]
impl Positioned for InMemory<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_from(&mut self, offset: u64) -> io::Result<Box<dyn Read + '_>> {
        let start = usize::try_from(offset).map_or(self.0.len(), |offset| offset.min(self.0.len()));
        Ok(Box::new(&self.0[start..]))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A stored member is read by seeking, a deflated one by inflating again: both give
    /// the same bytes from any offset, and an offset past the end is an error.
    #[test]
    fn stored_and_deflated_members_read_alike() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("x.whl");
        let bytes: Vec<u8> = (0..200_000u32).map(|n| (n % 251) as u8).collect();
        let mut writer = zip::ZipWriter::new(std::fs::File::create(&path).expect("create"));
        for (name, method) in
            [("a.kpack", zip::CompressionMethod::Stored), ("b.kpack", zip::CompressionMethod::Deflated)]
        {
            writer
                .start_file(name, zip::write::SimpleFileOptions::default().compression_method(method))
                .expect("start");
            writer.write_all(&bytes).expect("write");
        }
        writer.finish().expect("finish");
        let mut zip = zip::ZipArchive::new(BufReader::new(std::fs::File::open(&path).expect("open"))).expect("zip");
        for (index, stored) in [(0, true), (1, false)] {
            let mut member = ZipMember { zip: &mut zip, index, len: bytes.len() as u64, stored };
            for offset in [0u64, 1, 65_537, 199_990] {
                let read = read_exact_at(&mut member, offset, 10).expect("read");
                assert_eq!(read, bytes[offset as usize..offset as usize + 10], "member {index} at {offset}");
            }
            assert!(read_exact_at(&mut member, 199_995, 10).is_err());
            assert!(member.read_from(300_000).is_err() || read_exact_at(&mut member, 300_000, 1).is_err());
        }
    }
}
