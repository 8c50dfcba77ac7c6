//! Atomic placement in the destination (SPEC §5 "Output hygiene"), in two phases. Each output is
//! written to a hidden temp file beside its final name and synced ([`AtomicFile::stage`]);
//! once every output of the run is staged, [`commit`] renames them all into place and
//! syncs the directory once. Until then nothing under a package's name has changed, and
//! a staged file dropped uncommitted is removed (tempfile's drop), so a failed run leaves
//! its destination as it found it: no partial archive, no partial set, and no complete package of
//! an earlier run lost.
//!
//! Owns: temp naming, fsync, the renames and their rollback, the final hash of the file.
//! Does not own: content, or who may commit (the caller's destination lock).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tempfile::TempPath;

use super::input::kind_of;
use super::output_hash::{copy_start, FileSums, HashedSoFar};
use super::record::hex;
use super::{WriteAction, WriteError};

/// Every temp name this crate makes in a destination carries this after the output's
/// name (`.{name}.tmp-archive-write-XXXXXX`), so whoever cleans up after a killed run
/// removes only what a writer of this crate made, never another tool's `.x.tmp-y`.
pub const TEMP_MARKER: &str = ".tmp-archive-write-";

/// The longest name a writer here can write: while written it is `.{name}{TEMP_MARKER}`
/// and six random characters, which must fit the file system's 255 bytes (NAME_MAX) too.
pub const MAX_NAME_BYTES: usize = 255 - 1 - TEMP_MARKER.len() - 6;

/// Inside a temp directory (a tree being written, or an older tree
/// moved aside), this file says the directory is ours: [`remove_temp_entries`] removes a
/// directory only when it carries both this file and the marked name.
pub const TEMP_TREE_MARKER_FILE: &str = ".archive-write-temp-tree";

/// A name made by [`temp_prefix`].
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(TEMP_MARKER)
}

/// `.{name}{TEMP_MARKER}`: what a temp file or tree for `name` is called before its random part.
pub fn temp_prefix(name: &str) -> String {
    format!(".{name}{TEMP_MARKER}")
}

/// Removes the temp files (and marked temp trees) our writers left in `dir`; returns how
/// many. Anything else is left alone: a name without our marker, a symlink, a directory
/// without the marker file, whoever made them: a destination may be shared with other
/// tools, and what is not ours is not ours to remove.
pub fn remove_temp_entries(dir: &Path) -> Result<usize, WriteError> {
    let read_error = |source| WriteError::io(WriteAction::List, dir, source);
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        if !is_temp_name(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let path = entry.path();
        // `file_type` does not follow symlinks: a link named like ours is not ours.
        let Ok(file_type) = entry.file_type() else { continue };
        let result = if file_type.is_file() {
            std::fs::remove_file(&path)
        } else if file_type.is_dir() && is_marked(&path) {
            remove_marked_tree(&path)
        } else {
            continue;
        };
        match result {
            Ok(()) => removed += 1,
            // Renamed into place or removed by its writer meanwhile.
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(WriteError::io(WriteAction::Remove, path, source)),
        }
    }
    Ok(removed)
}

/// Whether the directory `dir` carries our marker file: the file itself, not a link named
/// like it (which could make another tool's directory look like ours).
fn is_marked(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(TEMP_TREE_MARKER_FILE)).is_ok_and(|metadata| metadata.is_file())
}

/// Removes a marked temp tree with its marker file last, so a kill midway leaves a
/// smaller tree still marked, which the next [`remove_temp_entries`] removes; plain
/// `remove_dir_all` may take the marker first and leave the rest unmarked for good.
pub(crate) fn remove_marked_tree(root: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        if entry.file_name() == TEMP_TREE_MARKER_FILE {
            continue;
        }
        // `file_type` does not follow symlinks: a link is removed, never its target.
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    unmark(root)?;
    std::fs::remove_dir(root)
}

/// Removes the marker file from a temp tree, if it has one.
pub(crate) fn unmark(dir: &Path) -> io::Result<()> {
    match std::fs::remove_file(dir.join(TEMP_TREE_MARKER_FILE)) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// A temp file in the destination directory that becomes `file_name` once staged and
/// committed.
pub struct AtomicFile {
    temp: tempfile::NamedTempFile,
    dest: PathBuf,
}

/// A complete, synced output under its temp name, waiting for [`commit`]; removed when
/// dropped uncommitted. Or, with no temp file, the output's final name already holds
/// exactly its bytes (a rerun that changed nothing in it), and the commit leaves it be.
pub struct Staged {
    temp: Option<TempPath>,
    dest: PathBuf,
    pub len: u64,
    pub sha256: String,
    /// Its length, sha256 and CRC-32, which the identity cache keeps for the next run.
    pub sums: FileSums,
}

impl AtomicFile {
    /// A temp file for `file_name` in `dest_dir`, once whatever holds that name is a regular
    /// file the commit may replace (or nothing): a symlink there is never written through
    /// nor replaced, nor a FIFO, a device or a directory.
    pub fn create(dest_dir: &Path, file_name: &str) -> Result<AtomicFile, WriteError> {
        let dest = dest_dir.join(file_name);
        match std::fs::symlink_metadata(&dest) {
            Ok(metadata) if !metadata.is_file() => {
                return Err(WriteError::NotOurs { path: dest, what: kind_of(&metadata.file_type()) });
            }
            _ => {}
        }
        std::fs::create_dir_all(dest_dir).map_err(|source| WriteError::io(WriteAction::CreateDir, dest_dir, source))?;
        let temp = tempfile::Builder::new()
            .prefix(&temp_prefix(file_name))
            .tempfile_in(dest_dir)
            .map_err(|source| WriteError::io(WriteAction::CreateTemp, dest_dir, source))?;
        Ok(AtomicFile { temp, dest: dest_dir.join(file_name) })
    }

    /// The path errors should name: the temp file is an implementation detail.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    pub fn file(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// Syncs and hashes the file and closes it, keeping it under its temp name.
    pub fn stage(self) -> Result<Staged, WriteError> {
        self.stage_hashed(HashedSoFar::Nothing)
    }

    /// [`AtomicFile::stage`], with what the writer hashed as it wrote: the whole file (a
    /// `HashingWriter` that never seeked) or its final first bytes, the rest read back.
    pub fn stage_hashed(mut self, hashed: HashedSoFar) -> Result<Staged, WriteError> {
        let dest = self.dest.clone();
        let write_error = |source| WriteError::io(WriteAction::Write, dest.clone(), source);
        let file = self.temp.as_file_mut();
        let sums = match hashed {
            HashedSoFar::Whole(sums) => {
                file.sync_all().map_err(|source| WriteError::io(WriteAction::Sync, dest.clone(), source))?;
                sums
            }
            HashedSoFar::Prefix(hasher, crc, len) => sync_and_read_back(file, hasher, crc, len, &dest)?,
            HashedSoFar::Nothing => sync_and_read_back(file, Sha256::new(), crc32fast::Hasher::new(), 0, &dest)?,
        };
        // tempfile creates 0600, whoever's umask ran the build; a package is readable by all.
        file.set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(write_error)?;
        // Closed now: a run stages dozens of outputs before committing any.
        let temp = self.temp.into_temp_path();
        Ok(Staged { temp: Some(temp), dest: self.dest, len: sums.len, sha256: hex(&sums.sha256), sums })
    }

    /// Writes the first `len` bytes of `old` into the temp file, which holds nothing yet: a
    /// `HashingWriter` deferred them because they were `old`'s.
    pub fn fill_from(&mut self, old: &File, len: u64) -> Result<(), WriteError> {
        let dest = self.dest.clone();
        copy_start(old, len, self.temp.as_file_mut(), None)
            .map_err(|source| WriteError::io(WriteAction::Write, dest, source))
    }

    /// Gives up the temp file because the file under the final name already holds these
    /// bytes (`sums`): committing leaves that file as it is, so a rerun that changed
    /// nothing neither syncs nor renames. Only for a regular file (not a symlink) of mode
    /// 0644, as a cold run would leave it; the temp file back otherwise.
    pub fn keep_previous(self, sums: FileSums) -> Result<Staged, AtomicFile> {
        let as_written = std::fs::symlink_metadata(&self.dest).is_ok_and(|metadata| {
            metadata.is_file() && metadata.len() == sums.len && metadata.permissions().mode() & 0o7777 == 0o644
        });
        if !as_written {
            return Err(self);
        }
        // Dropping the temp file removes it.
        Ok(Staged { temp: None, dest: self.dest, len: sums.len, sha256: hex(&sums.sha256), sums })
    }
}

/// Syncs the file of `dest` while reading it back from `from` on, `hasher` and `crc`
/// holding the sums of the bytes before: a wheel's last work, which would otherwise wait
/// on the disk with the cores idle before hashing hundreds of MiB on one.
fn sync_and_read_back(
    file: &mut File,
    hasher: Sha256,
    crc: crc32fast::Hasher,
    from: u64,
    dest: &Path,
) -> Result<FileSums, WriteError> {
    let sync_error = |source| WriteError::io(WriteAction::Sync, dest, source);
    let syncing = file.try_clone().map_err(sync_error)?;
    std::thread::scope(|scope| {
        let synced = scope.spawn(move || syncing.sync_all());
        let read =
            read_back(file, hasher, crc, from).map_err(|source| WriteError::io(WriteAction::Write, dest, source));
        let synced = synced.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        synced.map_err(sync_error)?;
        read
    })
}

/// Reads the file back from `from` on, continuing `hasher` and `crc`: its sums. For a
/// writer that patched bytes it had written (a header completed after its member), only
/// the file knows them.
fn read_back(file: &mut File, mut hasher: Sha256, mut crc: crc32fast::Hasher, from: u64) -> io::Result<FileSums> {
    file.seek(SeekFrom::Start(from))?;
    let mut buffer = vec![0u8; 1 << 20];
    let mut len = from;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        crc.update(&buffer[..n]);
        len += n as u64;
    }
    Ok(FileSums { len, sha256: hasher.finalize().into(), crc: crc.finalize() })
}

impl Staged {
    /// Where [`commit`] puts the file.
    pub fn dest(&self) -> &Path {
        &self.dest
    }
}

/// What a final name held before the commit, so a failed commit can put it back.
enum Previous {
    Absent,
    /// A hard link to the earlier file under a temp name (removed when dropped).
    Saved(TempPath),
    /// Something that cannot be linked: a directory (the rename then fails, so nothing is
    /// lost), or a file on a file system without hard links (a failed commit then keeps
    /// the new, complete file under that name).
    Unsaved,
}

/// Renames every staged file into place, all or none, then syncs their directory once.
/// What each name held before is kept as a hard link until the end, so when a rename or
/// the sync fails, the files already renamed are put back as they were and the rest
/// removed. The caller holds the destination lock (no one else renames there meanwhile).
pub fn commit(staged: Vec<Staged>) -> Result<(), WriteError> {
    let mut names = BTreeSet::new();
    for file in &staged {
        if !names.insert(file.dest.clone()) {
            return Err(WriteError::Invalid { reason: format!("{} is written twice in one run", file.dest.display()) });
        }
    }
    // A kept file is already in place, with its bytes.
    let staged: Vec<(TempPath, PathBuf)> =
        staged.into_iter().filter_map(|file| file.temp.map(|temp| (temp, file.dest))).collect();
    let previous = staged.iter().map(|(_, dest)| save_previous(dest)).collect::<Result<Vec<_>, _>>()?;
    let mut placed: Vec<(PathBuf, Previous)> = Vec::new();
    let mut outcome = Ok(());
    // After a failure the files not yet renamed are dropped with the iterator: removed.
    for ((temp, dest), previous) in staged.into_iter().zip(previous) {
        match temp.persist(&dest) {
            Ok(()) => placed.push((dest, previous)),
            Err(error) => {
                outcome = Err(WriteError::io(WriteAction::PutInPlace, dest, error.error));
                break;
            }
        }
    }
    if outcome.is_ok() {
        outcome = sync_dirs(placed.iter().map(|(dest, _)| dest.as_path()));
    }
    if outcome.is_err() {
        roll_back(placed);
    }
    // On success the links to the replaced files are dropped here, freeing their space.
    outcome
}

fn save_previous(dest: &Path) -> Result<Previous, WriteError> {
    let metadata = match std::fs::symlink_metadata(dest) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Previous::Absent),
        Err(source) => return Err(WriteError::io(WriteAction::PutInPlace, dest, source)),
    };
    let (Some(dir), Some(name)) = (dest.parent(), dest.file_name()) else { return Ok(Previous::Unsaved) };
    if metadata.is_dir() {
        return Ok(Previous::Unsaved);
    }
    // Named like a writer temp file, so a run killed mid-commit leaves nothing the next
    // lock holder does not remove (`dest_lock`).
    let link = tempfile::Builder::new()
        .prefix(&temp_prefix(&format!("{}.old", name.to_string_lossy())))
        .make_in(dir, |path| std::fs::hard_link(dest, path));
    Ok(link.map_or(Previous::Unsaved, |link| Previous::Saved(link.into_temp_path())))
}

/// Undoes the renames of a failed commit, last first. Best effort: the error that made
/// the commit fail is the one reported.
fn roll_back(placed: Vec<(PathBuf, Previous)>) {
    for (dest, previous) in placed.into_iter().rev() {
        match previous {
            Previous::Absent => {
                let _ = std::fs::remove_file(&dest);
            }
            Previous::Saved(link) => {
                let _ = link.persist(&dest);
            }
            Previous::Unsaved => {}
        }
    }
}

/// Syncs each directory the renames touched, so the new names survive a crash.
fn sync_dirs<'a>(dests: impl Iterator<Item = &'a Path>) -> Result<(), WriteError> {
    let dirs: BTreeSet<&Path> = dests.filter_map(Path::parent).collect();
    for dir in dirs {
        File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|source| WriteError::io(WriteAction::Sync, dir, source))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output_hash::HashingWriter;
    use std::io::Write;

    /// Writes `steps` through a [`HashingWriter`] into a staged file: its reported sums
    /// are the file's, however it was written, and what kind of hash the writer kept.
    fn staged_digest(steps: &[(Option<SeekFrom>, &[u8])]) -> (bool, bool) {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut atomic = AtomicFile::create(dir.path(), "out.whl").expect("create");
        let mut writer = HashingWriter::new(atomic.file(), None, None);
        for (seek, bytes) in steps {
            if let Some(seek) = seek {
                writer.seek(*seek).expect("seek");
            }
            writer.write_all(bytes).expect("write");
        }
        let (_, hashed) = writer.into_parts().expect("parts");
        let kind = (matches!(hashed.digest, HashedSoFar::Whole(..)), matches!(hashed.digest, HashedSoFar::Prefix(..)));
        let staged = atomic.stage_hashed(hashed.digest).expect("stage");
        let bytes = std::fs::read(staged.temp.as_ref().expect("a temp file")).expect("read");
        assert_eq!(staged.sha256, hex(&Sha256::digest(&bytes)));
        assert_eq!((staged.sums.len, staged.sums.crc), (bytes.len() as u64, crc32fast::hash(&bytes)));
        kind
    }

    #[test]
    fn a_staged_file_has_its_own_digest_however_it_was_written() {
        let in_order: &[(Option<SeekFrom>, &[u8])] = &[(None, b"local header"), (None, b"data")];
        assert_eq!(staged_digest(in_order), (true, false), "hashed whole as written");
        // As `zip` patches an open member's header: a seek before it, the patch after.
        let patched_after: &[(Option<SeekFrom>, &[u8])] = &[
            (None, b"first member"),
            (Some(SeekFrom::Current(0)), b"header ??"),
            (None, &[7; 3000]),
            (Some(SeekFrom::Start(20)), b"ok"),
            (Some(SeekFrom::End(0)), b"central directory"),
        ];
        assert_eq!(staged_digest(patched_after), (false, true), "the prefix kept, the rest read back");
        let patched_before: &[(Option<SeekFrom>, &[u8])] =
            &[(None, b"first member"), (Some(SeekFrom::Current(0)), b"more"), (Some(SeekFrom::Start(2)), b"XX")];
        assert_eq!(staged_digest(patched_before), (false, false), "a patch into the prefix drops it");
    }
}
