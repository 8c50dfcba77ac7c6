//! Streams a file with an [`RpathEdit`] spliced in, so a patched multi-gigabyte library is
//! never copied or held in memory: original bytes, overwritten ranges, then an appended block.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes that replace the original bytes at `offset` (same length; never past the end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BytePatch {
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// How an edit was made, for reports and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EditStrategy {
    /// The file already says what was asked.
    Unchanged,
    /// The existing string slot and dynamic entries were reused.
    InPlace,
    /// A new `PT_LOAD` was appended to hold the grown tables.
    Grown,
}

/// The whole change to one ELF file: a few patched ranges plus an optional appended block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpathEdit {
    pub original_len: u64,
    /// Sorted by offset, non-overlapping, each inside `0..original_len`.
    pub patches: Vec<BytePatch>,
    /// Written after the original bytes (padding included).
    pub appended: Vec<u8>,
    pub strategy: EditStrategy,
}

impl RpathEdit {
    /// An edit that changes nothing.
    pub fn unchanged(original_len: u64) -> RpathEdit {
        RpathEdit { original_len, patches: Vec::new(), appended: Vec::new(), strategy: EditStrategy::Unchanged }
    }

    pub fn is_unchanged(&self) -> bool {
        self.patches.is_empty() && self.appended.is_empty()
    }

    pub fn new_len(&self) -> u64 {
        self.original_len + self.appended.len() as u64
    }
}

/// A `Read` over `original` with `edit` applied.
pub struct SplicedReader<'a> {
    file: File,
    edit: Cow<'a, RpathEdit>,
    position: u64,
    next_patch: usize,
}

impl<'a> SplicedReader<'a> {
    /// Opens `path` and checks that its length is the one the edit was planned for.
    pub fn open(path: &Path, edit: &'a RpathEdit) -> io::Result<SplicedReader<'a>> {
        SplicedReader::new(crate::source::open_regular(path)?, edit)
            .map_err(|error| io::Error::new(error.kind(), format!("{}: {error}", path.display())))
    }

    /// Reads from `file`, already opened by the caller (who may have checked more than its
    /// length, e.g. that it is still a regular file); checks the length.
    pub fn new(file: File, edit: &'a RpathEdit) -> io::Result<SplicedReader<'a>> {
        SplicedReader::from_parts(file, Cow::Borrowed(edit))
    }

    /// Like [`SplicedReader::new`], owning the edit (planned just before streaming, so it
    /// lives only while its file is read).
    pub fn new_owned(file: File, edit: RpathEdit) -> io::Result<SplicedReader<'static>> {
        SplicedReader::from_parts(file, Cow::Owned(edit))
    }

    fn from_parts(file: File, edit: Cow<'a, RpathEdit>) -> io::Result<SplicedReader<'a>> {
        let len = file.metadata()?.len();
        if len != edit.original_len {
            return Err(io::Error::other(format!(
                "changed size since it was planned ({} bytes, now {len})",
                edit.original_len
            )));
        }
        Ok(SplicedReader { file, edit, position: 0, next_patch: 0 })
    }
}

impl Read for SplicedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let original_len = self.edit.original_len;
        if self.position >= original_len {
            let start = (self.position - original_len) as usize;
            let rest = self.edit.appended.get(start..).unwrap_or(&[]);
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            self.position += n as u64;
            return Ok(n);
        }
        while let Some(patch) = self.edit.patches.get(self.next_patch) {
            if patch.offset + patch.bytes.len() as u64 <= self.position {
                self.next_patch += 1;
            } else {
                break;
            }
        }
        if let Some(patch) = self.edit.patches.get(self.next_patch) {
            if patch.offset <= self.position {
                let start = (self.position - patch.offset) as usize;
                let rest = &patch.bytes[start..];
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                self.position += n as u64;
                self.file.seek(SeekFrom::Start(self.position))?;
                return Ok(n);
            }
        }
        let until = match self.edit.patches.get(self.next_patch) {
            Some(patch) => patch.offset,
            None => original_len,
        };
        let want = ((until - self.position) as usize).min(buf.len());
        let n = self.file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank while it was being read"));
        }
        self.position += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn splices_patches_and_appends() {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(b"0123456789").expect("write");
        let edit = RpathEdit {
            original_len: 10,
            patches: vec![
                BytePatch { offset: 2, bytes: b"ab".to_vec() },
                BytePatch { offset: 8, bytes: b"Z".to_vec() },
            ],
            appended: b"tail".to_vec(),
            strategy: EditStrategy::Grown,
        };
        let mut out = Vec::new();
        let mut reader = SplicedReader::open(file.path(), &edit).expect("open");
        // Small reads cross every boundary.
        let mut buf = [0u8; 3];
        loop {
            let n = reader.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out, b"01ab4567Z9tail");
    }

    #[test]
    fn refuses_a_file_that_changed_size() {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(b"0123").expect("write");
        let edit = RpathEdit::unchanged(10);
        assert!(SplicedReader::open(file.path(), &edit).is_err());
    }
}
