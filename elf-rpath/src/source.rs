//! Positioned, size-capped reads from an ELF file, or from the file as an [`RpathEdit`]
//! would leave it, so a plan can be re-read and checked before any byte is written.
//!
//! Owns: the byte source abstraction and its bounds checks. Does not own: what the bytes
//! mean (`parse`).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{ElfError, RpathEdit};

/// The largest table (`.dynstr`, section headers, ...) read into memory. The largest real
/// libraries (GPU math libraries of several GiB) have `.dynstr` of a few MiB; anything past
/// this is corrupt, not big.
pub(crate) const MAX_TABLE_BYTES: u64 = 256 << 20;

/// Bytes addressed by file offset. `read` fails (as `Malformed`) on ranges past the end.
pub(crate) trait Source {
    fn path(&self) -> &Path;
    fn len(&self) -> u64;
    fn read_into(&self, buf: &mut [u8], offset: u64) -> Result<(), ElfError>;

    /// Reads `len` bytes at `offset`; `what` names the table in the error.
    fn read(&self, offset: u64, len: u64, what: &str) -> Result<Vec<u8>, ElfError> {
        if len > MAX_TABLE_BYTES {
            return Err(self.malformed(format!("{what} is {len} bytes, more than any real file has")));
        }
        let end = offset.checked_add(len).ok_or_else(|| self.malformed(format!("{what} offset overflows")))?;
        if end > self.len() {
            return Err(self.malformed(format!(
                "{what} (bytes {offset}..{end}) lies past the end of the file ({} bytes)",
                self.len()
            )));
        }
        let mut buf = vec![0u8; len as usize];
        self.read_into(&mut buf, offset)?;
        Ok(buf)
    }

    fn malformed(&self, reason: String) -> ElfError {
        ElfError::Malformed { path: self.path().to_path_buf(), reason }
    }
}

/// A file on disk, read with `pread` only.
pub(crate) struct FileSource {
    path: PathBuf,
    file: File,
    len: u64,
}

impl FileSource {
    pub(crate) fn open(path: &Path) -> Result<FileSource, ElfError> {
        let read_error = |source| ElfError::Read { path: path.to_path_buf(), source };
        let file = open_regular(path).map_err(read_error)?;
        let len = file.metadata().map_err(read_error)?.len();
        Ok(FileSource { path: path.to_path_buf(), file, len })
    }
}

/// Opens `path` (following a symlink) for reading only if it is a regular file, and never
/// waits on what it is: a FIFO opened for reading blocks until a writer comes, so the open
/// is non-blocking and the type is checked on the descriptor (an `InvalidData` error says
/// what the file is instead). This crate's own, as the crates at the bottom share nothing;
/// the packager opens its inputs through archive-write's `open_regular`.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC).open(path)?;
    let file_type = file.metadata()?.file_type();
    if file_type.is_file() {
        return Ok(file);
    }
    let what = if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else {
        "a socket"
    };
    Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("is {what}, not a regular file")))
}

impl Source for FileSource {
    fn path(&self) -> &Path {
        &self.path
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read_into(&self, buf: &mut [u8], offset: u64) -> Result<(), ElfError> {
        self.file.read_exact_at(buf, offset).map_err(|source| ElfError::Read { path: self.path.clone(), source })
    }
}

/// The file as it will be once `edit` is applied: original bytes, patches, appended block.
pub(crate) struct EditedSource<'a> {
    pub(crate) base: &'a FileSource,
    pub(crate) edit: &'a RpathEdit,
}

impl Source for EditedSource<'_> {
    fn path(&self) -> &Path {
        self.base.path()
    }

    fn len(&self) -> u64 {
        self.edit.new_len()
    }

    fn read_into(&self, buf: &mut [u8], offset: u64) -> Result<(), ElfError> {
        let original_len = self.edit.original_len;
        let end = offset + buf.len() as u64;
        if offset < original_len {
            let take = (end.min(original_len) - offset) as usize;
            self.base.read_into(&mut buf[..take], offset)?;
        }
        for patch in &self.edit.patches {
            copy_overlap(buf, offset, &patch.bytes, patch.offset);
        }
        copy_overlap(buf, offset, &self.edit.appended, original_len);
        Ok(())
    }
}

/// Copies the part of `bytes` (which live at `bytes_at`) that overlaps `buf` (at `buf_at`).
fn copy_overlap(buf: &mut [u8], buf_at: u64, bytes: &[u8], bytes_at: u64) {
    let start = buf_at.max(bytes_at);
    let end = (buf_at + buf.len() as u64).min(bytes_at + bytes.len() as u64);
    if start < end {
        let (into, from, n) = ((start - buf_at) as usize, (start - bytes_at) as usize, (end - start) as usize);
        buf[into..into + n].copy_from_slice(&bytes[from..from + n]);
    }
}
