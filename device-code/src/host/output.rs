//! The rewritten file as a list of pieces (ranges of the input, new bytes, zeros), built from
//! edits of the input and bytes appended after it, and streamed to a writer or a reader with
//! one bounded buffer: the input's device code is never read into memory.
//!
//! Owns: turning edits into pieces, and writing them. Must not know: ELF, or why an edit is
//! made (`layout` decides that).

use std::borrow::Borrow;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::host::HostTransform;
use crate::DeviceCodeError;

/// Bytes copied per read of the input.
const COPY_BUFFER: usize = 1 << 20;
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// One piece of the output, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// `len` bytes of the input from `offset`.
    Copy {
        offset: u64,
        len: u64,
    },
    Bytes(Vec<u8>),
    Zeros(u64),
}

impl Piece {
    fn len(&self) -> u64 {
        match self {
            Piece::Copy { len, .. } | Piece::Zeros(len) => *len,
            Piece::Bytes(bytes) => bytes.len() as u64,
        }
    }
}

/// One edit of the input: the `len` bytes at `offset` become `with` (`None`: are dropped).
#[derive(Clone, Debug)]
pub(crate) struct Edit {
    pub offset: u64,
    pub len: u64,
    pub with: Option<Piece>,
}

impl Edit {
    pub fn bytes(offset: u64, bytes: Vec<u8>) -> Edit {
        Edit { offset, len: bytes.len() as u64, with: Some(Piece::Bytes(bytes)) }
    }

    pub fn zeros(offset: u64, len: u64) -> Edit {
        Edit { offset, len, with: Some(Piece::Zeros(len)) }
    }

    pub fn drop(offset: u64, len: u64) -> Edit {
        Edit { offset, len, with: None }
    }
}

/// The pieces of an input of `input_len` bytes with `edits` applied (in any order; they must
/// not overlap and must lie inside the input), followed by `appended`. Returns `Err` with the
/// two overlapping edits' offsets: a bug in the plan, reported rather than written.
pub(crate) fn pieces(input_len: u64, mut edits: Vec<Edit>, appended: Vec<Piece>) -> Result<Vec<Piece>, String> {
    edits.retain(|edit| edit.len > 0);
    edits.sort_by_key(|edit| edit.offset);
    let mut pieces = Vec::new();
    let mut cursor = 0;
    for edit in edits {
        if edit.offset < cursor {
            return Err(format!("edits overlap at {:#x} (the previous one ends at {cursor:#x})", edit.offset));
        }
        if edit.offset.checked_add(edit.len).is_none_or(|end| end > input_len) {
            return Err(format!("an edit at {:#x} of {} bytes lies past the end of the input", edit.offset, edit.len));
        }
        if edit.offset > cursor {
            pieces.push(Piece::Copy { offset: cursor, len: edit.offset - cursor });
        }
        pieces.extend(edit.with);
        cursor = edit.offset + edit.len;
    }
    if cursor < input_len {
        pieces.push(Piece::Copy { offset: cursor, len: input_len - cursor });
    }
    pieces.extend(appended);
    pieces.retain(|piece| piece.len() > 0);
    Ok(pieces)
}

/// Total bytes of `pieces`.
pub(crate) fn total_len(pieces: &[Piece]) -> u64 {
    pieces.iter().map(Piece::len).sum()
}

impl HostTransform {
    /// Writes the rewritten file to `out`, reading `file` (the input as inspected, checked by
    /// its length) through one buffer.
    pub fn write_to(&self, file: &File, out: &mut dyn Write) -> Result<(), DeviceCodeError> {
        self.check_input(file)?;
        let largest = self.pieces.iter().map(|piece| if let Piece::Copy { len, .. } = piece { *len } else { 0 }).max();
        let mut buffer = vec![0u8; largest.unwrap_or(0).min(COPY_BUFFER as u64) as usize];
        for piece in &self.pieces {
            match piece {
                Piece::Copy { offset, len } => {
                    let mut done = 0;
                    while done < *len {
                        let take = (buffer.len() as u64).min(len - done) as usize;
                        file.read_exact_at(&mut buffer[..take], offset + done).map_err(|source| self.io(source))?;
                        out.write_all(&buffer[..take]).map_err(|source| self.io(source))?;
                        done += take as u64;
                    }
                }
                Piece::Bytes(bytes) => out.write_all(bytes).map_err(|source| self.io(source))?,
                Piece::Zeros(len) => {
                    let mut left = *len;
                    while left > 0 {
                        let take = (ZEROS.len() as u64).min(left) as usize;
                        out.write_all(&ZEROS[..take]).map_err(|source| self.io(source))?;
                        left -= take as u64;
                    }
                }
            }
        }
        Ok(())
    }

    /// The rewritten file as a reader over `file` (checked by its length now), for a writer
    /// that pulls its input.
    pub fn reader<'a>(&'a self, file: &'a File) -> Result<HostReader<'a, &'a File>, DeviceCodeError> {
        self.check_input(file)?;
        Ok(HostReader { pieces: &self.pieces, file, piece: 0, within: 0 })
    }

    /// As [`HostTransform::reader`], owning the file: for a writer that opens its members
    /// when it streams them and keeps only the reader.
    pub fn into_reader(&self, file: File) -> Result<HostReader<'_, File>, DeviceCodeError> {
        self.check_input(&file)?;
        Ok(HostReader { pieces: &self.pieces, file, piece: 0, within: 0 })
    }

    fn check_input(&self, file: &File) -> Result<(), DeviceCodeError> {
        let found = file.metadata().map_err(|source| self.io(source))?.len();
        if found != self.input_len {
            return Err(DeviceCodeError::InputChanged { path: self.path.clone(), planned: self.input_len, found });
        }
        Ok(())
    }

    fn io(&self, source: std::io::Error) -> DeviceCodeError {
        io_error(&self.path, source)
    }
}

fn io_error(path: &Path, source: std::io::Error) -> DeviceCodeError {
    DeviceCodeError::Io { path: path.to_path_buf(), source }
}

/// The rewritten file, read piece by piece (see [`HostTransform::reader`]).
#[derive(Debug)]
pub struct HostReader<'a, F: Borrow<File>> {
    pieces: &'a [Piece],
    file: F,
    piece: usize,
    /// Bytes of the current piece already read.
    within: u64,
}

impl<F: Borrow<File>> Read for HostReader<'_, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(piece) = self.pieces.get(self.piece) else {
            return Ok(0);
        };
        let left = piece.len() - self.within;
        let take = (buf.len() as u64).min(left) as usize;
        match piece {
            Piece::Copy { offset, .. } => self.file.borrow().read_exact_at(&mut buf[..take], offset + self.within)?,
            Piece::Bytes(bytes) => {
                let start = self.within as usize;
                buf[..take].copy_from_slice(&bytes[start..start + take]);
            }
            Piece::Zeros(_) => buf[..take].fill(0),
        }
        self.within += take as u64;
        if self.within == piece.len() {
            self.piece += 1;
            self.within = 0;
        }
        Ok(take)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_become_pieces_in_order() {
        let edits = vec![
            Edit::bytes(10, b"abc".to_vec()),
            Edit::drop(20, 5),
            Edit::zeros(0, 2),
            Edit::drop(95, 5),
            Edit::zeros(40, 0),
        ];
        let pieces = pieces(100, edits, vec![Piece::Bytes(b"tail".to_vec())]).expect("pieces");
        assert_eq!(
            pieces,
            vec![
                Piece::Zeros(2),
                Piece::Copy { offset: 2, len: 8 },
                Piece::Bytes(b"abc".to_vec()),
                Piece::Copy { offset: 13, len: 7 },
                Piece::Copy { offset: 25, len: 70 },
                Piece::Bytes(b"tail".to_vec()),
            ]
        );
        assert_eq!(total_len(&pieces), 2 + 8 + 3 + 7 + 70 + 4);
    }

    #[test]
    fn overlapping_or_outside_edits_are_refused() {
        let overlap = pieces(100, vec![Edit::zeros(0, 10), Edit::bytes(5, vec![1])], Vec::new());
        assert!(overlap.expect_err("overlap").contains("overlap at 0x5"));
        let outside = pieces(100, vec![Edit::zeros(98, 10)], Vec::new());
        assert!(outside.expect_err("outside").contains("past the end"));
    }
}
