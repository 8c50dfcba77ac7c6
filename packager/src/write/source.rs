//! Reading a member's bytes from where the plan says they are, and noticing when the
//! artifacts changed under us (issue 10: a file that changes size between plan and write
//! fails the run cleanly).
//!
//! Owns: `MemberData::File`, `Patched` and `Bytes` as byte streams with length checks.
//! Does not own: `DevelTar` (produced by `tar`), ELF splicing itself (`elf`).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{MemberData, WriteError};
use crate::elf::SplicedReader;

/// The exact size of the bytes `data` yields, when known before reading it.
pub fn known_len(data: &MemberData) -> Option<u64> {
    match data {
        MemberData::File { len, .. } => Some(*len),
        MemberData::Patched { edit, .. } => Some(edit.new_len()),
        MemberData::PatchRpath { new_len, .. } => Some(*new_len),
        MemberData::Bytes(bytes) => Some(bytes.len() as u64),
        MemberData::DevelTar(_) => None,
    }
}

/// Wraps a [`WriteError`] so it can travel through `io::Read`/`io::Write` plumbing.
pub fn to_io(error: WriteError) -> io::Error {
    io::Error::other(error)
}

/// Recovers a [`WriteError`] carried by [`to_io`], or names `path` as the one that failed.
pub fn from_io(error: io::Error, path: &Path, reading: bool) -> WriteError {
    match error.downcast::<WriteError>() {
        Ok(write_error) => write_error,
        Err(source) if reading => WriteError::Read { path: path.to_path_buf(), source },
        Err(source) => WriteError::Write { path: path.to_path_buf(), source },
    }
}

/// Opens a member's bytes; every error the reader yields is a [`WriteError`] in an
/// `io::Error` (see [`from_io`]).
pub fn open_member(data: &MemberData) -> Result<Box<dyn Read + Send + '_>, WriteError> {
    match data {
        MemberData::File { path, len } => {
            let file = open_planned(path, *len)?;
            Ok(Box::new(ExactReader { inner: file, path: path.clone(), expected: *len, seen: 0, original_len: None }))
        }
        MemberData::Patched { path, edit } => {
            let file = open_planned(path, edit.original_len)?;
            let reader =
                SplicedReader::new(file, edit).map_err(|source| WriteError::Read { path: path.clone(), source })?;
            Ok(Box::new(ExactReader {
                inner: reader,
                path: path.clone(),
                expected: edit.new_len(),
                seen: 0,
                original_len: Some(edit.original_len),
            }))
        }
        MemberData::PatchRpath { path, len, rpath, new_len } => {
            let file = open_planned(path, *len)?;
            let edit = crate::elf::plan_set_rpath(path, rpath)
                .map_err(|error| WriteError::Changed { path: path.clone(), reason: error.to_string() })?;
            if edit.new_len() != *new_len {
                let reason = format!("its RPATH edit now yields {} bytes, planned {new_len}", edit.new_len());
                return Err(WriteError::Changed { path: path.clone(), reason });
            }
            let reader = SplicedReader::new_owned(file, edit)
                .map_err(|source| WriteError::Read { path: path.clone(), source })?;
            Ok(Box::new(ExactReader {
                inner: reader,
                path: path.clone(),
                expected: *new_len,
                seen: 0,
                original_len: Some(*len),
            }))
        }
        MemberData::Bytes(bytes) => Ok(Box::new(bytes.as_slice())),
        MemberData::DevelTar(_) => {
            Err(WriteError::Invalid { reason: "a devel tarball cannot be opened as a plain member".into() })
        }
    }
}

/// Opens a file that the plan saw as a regular file of `planned` bytes, and checks that it
/// still is one. Not followed if it became a symlink (it could now lead outside the
/// artifacts), and opened without blocking, so a FIFO put in its place cannot hang the run.
pub fn open_planned(path: &Path, planned: u64) -> Result<File, WriteError> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(WriteError::Changed { path: path.to_path_buf(), reason: "it was removed".to_owned() });
        }
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            let reason = "it was replaced by a symlink".to_owned();
            return Err(WriteError::Changed { path: path.to_path_buf(), reason });
        }
        Err(source) => return Err(WriteError::Read { path: path.to_path_buf(), source }),
    };
    let metadata = file.metadata().map_err(|source| WriteError::Read { path: path.to_path_buf(), source })?;
    if !metadata.is_file() {
        let reason = "it is no longer a regular file".to_owned();
        return Err(WriteError::Changed { path: path.to_path_buf(), reason });
    }
    if metadata.len() != planned {
        return Err(changed(path, planned, metadata.len()));
    }
    Ok(file)
}

fn changed(path: &Path, planned: u64, found: u64) -> WriteError {
    WriteError::Changed { path: path.to_path_buf(), reason: format!("planned {planned} bytes, found {found}") }
}

/// Yields exactly `expected` bytes of `inner`, and fails with `Changed` when the file
/// turns out shorter or longer than planned.
struct ExactReader<R> {
    inner: R,
    path: PathBuf,
    expected: u64,
    seen: u64,
    /// For a spliced file, the original's planned length, re-checked at the end because
    /// the splicer never reads past it.
    original_len: Option<u64>,
}

impl<R: Read> ExactReader<R> {
    fn check_end(&mut self) -> io::Result<()> {
        let longer = match self.original_len {
            Some(original_len) => {
                let now = std::fs::metadata(&self.path)
                    .map_err(|source| to_io(WriteError::Read { path: self.path.clone(), source }))?
                    .len();
                now != original_len
            }
            None => {
                let mut probe = [0u8; 1];
                self.read_inner(&mut probe)? > 0
            }
        };
        if longer {
            let reason = format!("planned {} bytes, but it grew while it was read", self.expected);
            return Err(to_io(WriteError::Changed { path: self.path.clone(), reason }));
        }
        Ok(())
    }

    fn read_inner(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.inner.read(buf) {
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => {
                    let reason = format!("planned {} bytes, but it shrank while it was read", self.expected);
                    return Err(to_io(WriteError::Changed { path: self.path.clone(), reason }));
                }
                Err(source) => return Err(to_io(WriteError::Read { path: self.path.clone(), source })),
                Ok(n) => return Ok(n),
            }
        }
    }
}

impl<R: Read> Read for ExactReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.expected - self.seen;
        if left == 0 || buf.is_empty() {
            if left == 0 {
                self.check_end()?;
            }
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.read_inner(&mut buf[..want])?;
        if n == 0 {
            let reason = format!("planned {} bytes, but only {} could be read", self.expected, self.seen);
            return Err(to_io(WriteError::Changed { path: self.path.clone(), reason }));
        }
        self.seen += n as u64;
        Ok(n)
    }
}
