//! Atomic placement in the destination (SPEC §5, issue 10), in two phases. Each output is
//! written to a hidden temp file beside its final name and synced ([`AtomicFile::stage`]);
//! once every output of the run is staged, [`commit`] renames them all into place and
//! syncs the directory once. Until then nothing under a package's name has changed, and
//! a staged file dropped uncommitted is removed (tempfile's drop), so a failed run leaves
//! `dist/` as it found it: no partial archive, no partial set, and no complete package of
//! an earlier run lost.
//!
//! Owns: temp naming, fsync, the renames and their rollback, the final hash of the file.
//! Does not own: content, or who may commit (the destination lock, `dest_lock`).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tempfile::TempPath;

use super::record::hex;
use super::WriteError;

/// Every temp name this crate makes in a destination carries this after the output's
/// name (`.{name}.tmp-archive-write-XXXXXX`), so whoever cleans up after a killed run
/// removes only what a writer of this crate made, never another tool's `.x.tmp-y`.
pub const TEMP_MARKER: &str = ".tmp-archive-write-";

/// Inside a temp directory (a `--no-build-packages` tree being written, or an older tree
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
/// without the marker file, whoever made them (issue 24).
pub fn remove_temp_entries(dir: &Path) -> Result<usize, WriteError> {
    let read_error = |source| WriteError::Write { path: dir.to_path_buf(), source };
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
        } else if file_type.is_dir() && path.join(TEMP_TREE_MARKER_FILE).is_file() {
            std::fs::remove_dir_all(&path)
        } else {
            continue;
        };
        match result {
            Ok(()) => removed += 1,
            // Renamed into place or removed by its writer meanwhile.
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(WriteError::Write { path, source }),
        }
    }
    Ok(removed)
}

/// A temp file in the destination directory that becomes `file_name` once staged and
/// committed.
pub struct AtomicFile {
    temp: tempfile::NamedTempFile,
    dest: PathBuf,
}

/// A complete, synced output under its temp name, waiting for [`commit`]; removed when
/// dropped uncommitted.
pub struct Staged {
    temp: TempPath,
    dest: PathBuf,
    pub len: u64,
    pub sha256: String,
}

impl AtomicFile {
    pub fn create(dest_dir: &Path, file_name: &str) -> Result<AtomicFile, WriteError> {
        std::fs::create_dir_all(dest_dir).map_err(|source| WriteError::Write { path: dest_dir.into(), source })?;
        let temp = tempfile::Builder::new()
            .prefix(&temp_prefix(file_name))
            .tempfile_in(dest_dir)
            .map_err(|source| WriteError::Write { path: dest_dir.into(), source })?;
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
    pub fn stage(mut self) -> Result<Staged, WriteError> {
        let dest = self.dest.clone();
        let write_error = |source| WriteError::Write { path: dest.clone(), source };
        let file = self.temp.as_file_mut();
        file.sync_all().map_err(write_error)?;
        // Read back what reached the disk: cheap next to compressing it, and the hash is
        // then that of the real file.
        file.seek(SeekFrom::Start(0)).map_err(write_error)?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 1 << 20];
        let mut len = 0u64;
        loop {
            let n = file.read(&mut buffer).map_err(write_error)?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            len += n as u64;
        }
        // tempfile creates 0600, whoever's umask ran the build; a package is readable by all.
        file.set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(write_error)?;
        // Closed now: a run stages dozens of outputs before committing any.
        let temp = self.temp.into_temp_path();
        Ok(Staged { temp, dest: self.dest, len, sha256: hex(&hasher.finalize()) })
    }
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
    let previous = staged.iter().map(|file| save_previous(&file.dest)).collect::<Result<Vec<_>, _>>()?;
    let mut placed: Vec<(PathBuf, Previous)> = Vec::new();
    let mut outcome = Ok(());
    // After a failure the files not yet renamed are dropped with the iterator: removed.
    for (file, previous) in staged.into_iter().zip(previous) {
        let dest = file.dest;
        match file.temp.persist(&dest) {
            Ok(()) => placed.push((dest, previous)),
            Err(error) => {
                outcome = Err(WriteError::Write { path: dest, source: error.error });
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
        Err(source) => return Err(WriteError::Write { path: dest.to_path_buf(), source }),
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
            .map_err(|source| WriteError::Write { path: dir.into(), source })?;
    }
    Ok(())
}
