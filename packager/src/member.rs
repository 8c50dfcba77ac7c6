//! Payload members: files read straight from the artifacts directory, and ELF files with
//! an RPATH edit spliced in while they stream, as the archive writer's
//! [`MemberSource`]s. Each notices when the artifacts changed under us (a file
//! that vanishes or changes between plan and write fails the run cleanly): a file is
//! re-checked when it is opened (type, length, inode, modification time against the
//! catalog's) and with `fstat` once it has been read.
//!
//! A file source also says what its bytes are without reading them (SPEC §8): the file's
//! identity and a recipe, empty for a copy and the planned edit's digest
//! ([`edit_digest`]) for an edited file, so a rerun whose file is as an earlier run read
//! it does not read it again.
//!
//! Owns: these sources, their checks and recipes. Does not own: archive formats
//! (`write`), ELF splicing itself (`elf`).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::FileStamp;
use sha2::{Digest, Sha256};

use crate::elf::{RpathEdit, SplicedReader};
use crate::write::{to_io, MemberData, MemberSource, SourceIdentity, WriteError};

/// A file copied as it is; `len` and `stamp` (when known) are what the plan saw, and a
/// change is an error.
pub fn file(path: Arc<Path>, len: u64, stamp: Option<FileStamp>) -> MemberData {
    MemberData::Source(Arc::new(PlainFile { path, len, stamp }))
}

/// An ELF file with an RPATH edit, planned already, spliced in while streaming.
pub fn patched(path: Arc<Path>, edit: Arc<RpathEdit>) -> MemberData {
    MemberData::Source(Arc::new(PatchedFile { path, edit }))
}

/// What an RPATH edit does to a file's bytes, as a digest: the length it starts from, each
/// patch's place and bytes, and what it appends. Two edits of one file with the same
/// digest make the same bytes, whatever planned them.
pub fn edit_digest(edit: &RpathEdit) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(edit.original_len.to_le_bytes());
    hasher.update((edit.patches.len() as u64).to_le_bytes());
    for patch in &edit.patches {
        hasher.update(patch.offset.to_le_bytes());
        hasher.update((patch.bytes.len() as u64).to_le_bytes());
        hasher.update(&patch.bytes);
    }
    hasher.update((edit.appended.len() as u64).to_le_bytes());
    hasher.update(&edit.appended);
    hasher.finalize().into()
}

/// The planned RPATH edit of a file: its search path, the member's length after it and
/// the edit's digest ([`edit_digest`]).
pub struct PlannedRpath {
    pub rpath: String,
    pub new_len: u64,
    pub edit_digest: [u8; 32],
}

/// An ELF file whose search path becomes `planned.rpath` (DT_RPATH). The edit is planned
/// again when the member is opened and dropped when it has streamed, so a wheel of
/// thousands of libraries never holds their grown tables all at once. `len` and the
/// planned edit are what the plan saw, as is `stamp` (when known); a difference at write
/// time is an error.
pub fn patch_rpath(path: Arc<Path>, len: u64, stamp: Option<FileStamp>, planned: PlannedRpath) -> MemberData {
    MemberData::Source(Arc::new(RpathFile { path, original_len: len, stamp, planned }))
}

/// The recipe of a file edited by `edit_digest`'s edit.
fn rpath_recipe(edit_digest: &[u8; 32]) -> Vec<u8> {
    [b"rpath edit ".as_slice(), edit_digest].concat()
}

#[derive(Debug)]
struct PlainFile {
    path: Arc<Path>,
    len: u64,
    stamp: Option<FileStamp>,
}

impl MemberSource for PlainFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn open(&self) -> Result<Box<dyn Read + Send + '_>, WriteError> {
        open_exact(&self.path, self.len, self.stamp, self.len, Ok)
    }

    // Copied as it is: the file's identity alone says what the bytes are.
    fn identity(&self) -> Option<SourceIdentity> {
        SourceIdentity::of_file(&self.path, b"")
    }
}

#[derive(Debug)]
struct PatchedFile {
    path: Arc<Path>,
    edit: Arc<RpathEdit>,
}

impl MemberSource for PatchedFile {
    fn len(&self) -> u64 {
        self.edit.new_len()
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn open(&self) -> Result<Box<dyn Read + Send + '_>, WriteError> {
        let (path, edit) = (&self.path, &self.edit);
        open_exact(path, edit.original_len, None, edit.new_len(), |file| {
            SplicedReader::new(file, edit).map_err(|source| WriteError::Read { path: path.to_path_buf(), source })
        })
    }
}

struct RpathFile {
    path: Arc<Path>,
    /// The size of the file on disk, before the edit; `len()` is the member's, after it.
    original_len: u64,
    stamp: Option<FileStamp>,
    planned: PlannedRpath,
}

impl std::fmt::Debug for RpathFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpathFile")
            .field("path", &self.path)
            .field("original_len", &self.original_len)
            .field("rpath", &self.planned.rpath)
            .field("new_len", &self.planned.new_len)
            .finish_non_exhaustive()
    }
}

impl MemberSource for RpathFile {
    // The member is the edited file: its length is the one after the edit.
    fn len(&self) -> u64 {
        self.planned.new_len
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn open(&self) -> Result<Box<dyn Read + Send + '_>, WriteError> {
        let (path, new_len) = (&self.path, self.planned.new_len);
        // The edit is planned once the file is open and checked, so it is this file's.
        open_exact(path, self.original_len, self.stamp, new_len, |file| {
            let edit = crate::elf::plan_set_rpath(path, &self.planned.rpath)
                .map_err(|error| WriteError::Changed { path: path.to_path_buf(), reason: error.to_string() })?;
            if edit.new_len() != new_len {
                let reason = format!("its RPATH edit now yields {} bytes, planned {new_len}", edit.new_len());
                return Err(WriteError::Changed { path: path.to_path_buf(), reason });
            }
            // The identity cache knows the member by this digest (SPEC §8).
            if edit_digest(&edit) != self.planned.edit_digest {
                let reason = "its RPATH edit now differs from the planned one".to_owned();
                return Err(WriteError::Changed { path: path.to_path_buf(), reason });
            }
            SplicedReader::new_owned(file, edit).map_err(|source| WriteError::Read { path: path.to_path_buf(), source })
        })
    }

    // The file's identity and the edit planned from its bytes say what the member is.
    fn identity(&self) -> Option<SourceIdentity> {
        SourceIdentity::of_file(&self.path, &rpath_recipe(&self.planned.edit_digest))
    }
}

/// Opens `path` as the plan saw it (`on_disk` bytes, `stamp`), turns it into a reader with
/// `wrap`, and yields exactly `expected` bytes of that, failing if the file changes.
fn open_exact<'a, R: Read + Send + 'a>(
    path: &Path,
    on_disk: u64,
    stamp: Option<FileStamp>,
    expected: u64,
    wrap: impl FnOnce(File) -> Result<R, WriteError>,
) -> Result<Box<dyn Read + Send + 'a>, WriteError> {
    let file = open_planned(path, on_disk, stamp)?;
    let watch = Watch::of(&file, path, on_disk, stamp)?;
    let inner = wrap(file)?;
    Ok(Box::new(ExactReader { inner, path: path.to_path_buf(), expected, seen: 0, watch }))
}

/// Opens a file that the plan saw as a regular file of `planned` bytes (and, when known,
/// with `stamp`), and checks that it still is that file. Not followed if it became a
/// symlink (it could now lead outside the artifacts), and opened without blocking, so a
/// FIFO put in its place cannot hang the run.
pub fn open_planned(path: &Path, planned: u64, stamp: Option<FileStamp>) -> Result<File, WriteError> {
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
    if let Some(reason) = stamp.and_then(|stamp| stamp_change(stamp, FileStamp::of(&metadata))) {
        return Err(WriteError::Changed { path: path.to_path_buf(), reason: format!("{reason} since it was planned") });
    }
    Ok(file)
}

fn changed(path: &Path, planned: u64, found: u64) -> WriteError {
    WriteError::Changed { path: path.to_path_buf(), reason: format!("planned {planned} bytes, found {found}") }
}

/// What differs between the planned and the found stamp, in words; `None` if nothing.
fn stamp_change(planned: FileStamp, found: FileStamp) -> Option<String> {
    if found.inode != planned.inode {
        Some(format!("it was replaced by another file (inode {}, planned {})", found.inode, planned.inode))
    } else if found.mtime_ns != planned.mtime_ns {
        Some(format!(
            "it was modified: same size, modification time {} ns, planned {} ns",
            found.mtime_ns, planned.mtime_ns
        ))
    } else {
        None
    }
}

/// A second handle on the opened file, examined with `fstat` once all of it has been read:
/// a file rewritten while it streamed (in place, so the same inode) shows a new length or
/// modification time there, even when the part already read looked right.
struct Watch {
    file: File,
    len: u64,
    stamp: FileStamp,
}

impl Watch {
    /// Watches `file` against what was checked at open: `len`, and `planned` if known, else
    /// the stamp found at open.
    fn of(file: &File, path: &Path, len: u64, planned: Option<FileStamp>) -> Result<Watch, WriteError> {
        let read_error = |source| WriteError::Read { path: path.to_path_buf(), source };
        let file = file.try_clone().map_err(read_error)?;
        let stamp = match planned {
            Some(stamp) => stamp,
            None => FileStamp::of(&file.metadata().map_err(read_error)?),
        };
        Ok(Watch { file, len, stamp })
    }

    /// Why the file is not what was planned any more, if it is not.
    fn change(&self) -> io::Result<Option<String>> {
        let metadata = self.file.metadata()?;
        if metadata.len() > self.len {
            return Ok(Some("it grew while it was read".to_owned()));
        }
        if metadata.len() < self.len {
            return Ok(Some("it shrank while it was read".to_owned()));
        }
        Ok(stamp_change(self.stamp, FileStamp::of(&metadata)).map(|reason| format!("{reason}, while it was read")))
    }
}

/// Yields exactly `expected` bytes of `inner`, and fails with `Changed` when the file
/// turns out shorter or longer than planned, or modified once it has been read.
struct ExactReader<R> {
    inner: R,
    path: PathBuf,
    expected: u64,
    seen: u64,
    watch: Watch,
}

impl<R: Read> ExactReader<R> {
    /// At the end of the planned bytes: the file must still be the planned one, with no
    /// byte more (the splicer never reads past the original length, so `fstat` decides).
    fn check_end(&mut self) -> io::Result<()> {
        let change =
            self.watch.change().map_err(|source| to_io(WriteError::Read { path: self.path.clone(), source }))?;
        match change {
            Some(reason) => {
                let reason = format!("planned {} bytes: {reason}", self.watch.len);
                Err(to_io(WriteError::Changed { path: self.path.clone(), reason }))
            }
            None => Ok(()),
        }
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
