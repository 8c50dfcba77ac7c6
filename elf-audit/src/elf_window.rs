//! [`ElfWindow`]: the first and last few MiB of an ELF file, which hold what verification
//! and the platform tag choice read (headers, `.dynamic`, `.dynstr`, `.gnu.version_r`; see
//! `elf_parse`), so memory stays bounded whatever the file size.
//!
//! Owns: keeping the window, from a stream or from a file on disk. Does not own: parsing it
//! (`elf_parse`).

use goblin::elf::header::ELFMAG as ELF_MAGIC;

/// How much of each end of an ELF member is kept in memory.
pub const WINDOW_BYTES: usize = 8 << 20;

/// The first and last [`WINDOW_BYTES`] of a streamed file, and its length.
#[derive(Debug, Default)]
pub struct ElfWindow {
    head: Vec<u8>,
    /// Bytes after `head`, trimmed from the front to the last `WINDOW_BYTES`.
    tail: Vec<u8>,
    len: u64,
}

impl ElfWindow {
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.head.len() < WINDOW_BYTES {
            let take = bytes.len().min(WINDOW_BYTES - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.is_empty() {
            return;
        }
        self.tail.extend_from_slice(bytes);
        // Trim only when twice the window has piled up, so trimming stays amortised O(1).
        if self.tail.len() > 2 * WINDOW_BYTES {
            let excess = self.tail.len() - WINDOW_BYTES;
            self.tail.drain(..excess);
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The window of a file on disk, read with two positioned reads instead of streaming
    /// the whole file; `None` when it does not start with the ELF magic.
    pub fn read_file(path: &std::path::Path) -> std::io::Result<Option<ElfWindow>> {
        use std::io::{Read, Seek, SeekFrom};

        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking, and only a regular file: a FIFO opened for reading would wait for
        // a writer for ever, a device might never end.
        let mut file =
            std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC).open(path)?;
        let metadata = file.metadata()?;
        if !metadata.is_file() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not a regular file"));
        }
        let len = metadata.len();
        let head_len = len.min(WINDOW_BYTES as u64);
        let mut head = Vec::with_capacity(head_len as usize);
        file.by_ref().take(head_len).read_to_end(&mut head)?;
        if !head.starts_with(ELF_MAGIC) {
            return Ok(None);
        }
        let tail_start = (head.len() as u64).max(len.saturating_sub(WINDOW_BYTES as u64));
        let mut tail = Vec::new();
        if tail_start < len {
            file.seek(SeekFrom::Start(tail_start))?;
            file.take(len - tail_start).read_to_end(&mut tail)?;
        }
        // A file that changed length meanwhile reads short; the window then covers what was read.
        let len = tail_start.max(head.len() as u64) + tail.len() as u64;
        Ok(Some(ElfWindow { head, tail, len }))
    }

    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// `len` bytes at `offset`, when they are all in memory.
    pub fn read_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let end = offset.checked_add(len)?;
        if end <= self.head.len() as u64 {
            return self.head.get(offset as usize..end as usize);
        }
        let tail_start = self.len - self.tail.len() as u64;
        if offset >= tail_start && end <= self.len {
            return self.tail.get((offset - tail_start) as usize..(end - tail_start) as usize);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_keeps_both_ends_of_a_large_stream() {
        let mut window = ElfWindow::default();
        let total = 3 * WINDOW_BYTES + 12345;
        let byte_at = |offset: usize| (offset % 251) as u8;
        let data: Vec<u8> = (0..total).map(byte_at).collect();
        for chunk in data.chunks(100_003) {
            window.push(chunk);
        }
        assert_eq!(window.len(), total as u64);
        assert_eq!(window.read_at(10, 4), Some(&data[10..14]));
        let near_end = (total - 100) as u64;
        assert_eq!(window.read_at(near_end, 100), Some(&data[total - 100..]));
        assert_eq!(window.read_at((total / 2) as u64, 16), None);
        assert_eq!(window.read_at(near_end, 101), None);
        assert!(window.head.len() + window.tail.len() <= 3 * WINDOW_BYTES);
    }

    /// Read from disk, the window holds the same bytes as streamed, and a file that is not
    /// ELF gives none.
    #[test]
    fn window_of_a_file_on_disk_equals_the_streamed_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let total = 2 * WINDOW_BYTES + 777;
        let mut data: Vec<u8> = (0..total).map(|offset| (offset % 253) as u8).collect();
        data[..4].copy_from_slice(ELF_MAGIC);
        let path = dir.path().join("big");
        fs_err::write(&path, &data).expect("write");
        let read = ElfWindow::read_file(&path).expect("read").expect("ELF");
        assert_eq!(read.len(), total as u64);
        assert_eq!(read.read_at(0, 64), Some(&data[..64]));
        assert_eq!(read.read_at((total - 300) as u64, 300), Some(&data[total - 300..]));
        assert_eq!(read.read_at(WINDOW_BYTES as u64 + 10, 8), None);
        fs_err::write(&path, b"#!/bin/sh\n").expect("write");
        assert!(ElfWindow::read_file(&path).expect("read").is_none());
    }
}
