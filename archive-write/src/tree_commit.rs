//! Trees placed all or none, like archives (SPEC §5): each tree is written whole
//! under a marked temp name first; [`commit_trees`] then moves every older tree aside and
//! renames every new one in, putting the older ones back if a rename fails, and removes
//! the older ones only once all new ones are in place. A full disk fails while staging,
//! before any tree changed; a kill leaves each tree whole (old or new) and the moved-aside
//! or half-removed older ones under marked temp names, which the next lock holder removes.
//!
//! Nothing in the destination is followed: a symlink (or anything but a directory) at a
//! tree's name is refused before a byte is written, and again at the swap, so an earlier
//! tree is always a real directory of the destination, never what a link points at; the
//! marker file is created without following a link in its place.
//!
//! Owns: temp trees, the swap and its rollback. Does not own: what a tree holds (`tree`),
//! or who may commit (the caller's destination lock).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::atomic::{remove_marked_tree, temp_prefix, unmark, TEMP_TREE_MARKER_FILE};
use super::input::kind_of;
use super::{WriteAction, WriteError};

/// The regular files a tree holds and their bytes, for a run's report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeTotals {
    pub files: usize,
    pub bytes: u64,
}

impl TreeTotals {
    pub(crate) fn add(&mut self, len: u64) {
        self.files += 1;
        self.bytes += len;
    }

    pub(crate) fn plus(self, other: TreeTotals) -> TreeTotals {
        TreeTotals { files: self.files + other.files, bytes: self.bytes + other.bytes }
    }
}

/// A tree complete under its temp name; removed when dropped uncommitted.
pub struct StagedTree {
    temp: PathBuf,
    root: PathBuf,
    totals: TreeTotals,
    /// Renamed to `root` by the commit: nothing is left for the drop to remove.
    placed: bool,
}

impl StagedTree {
    pub(crate) fn new(temp: tempfile::TempDir, root: PathBuf, totals: TreeTotals) -> StagedTree {
        // Kept: the drop below removes it, marker last.
        StagedTree { temp: temp.keep(), root, totals, placed: false }
    }

    /// Where [`commit_trees`] puts it.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The regular files written into it and their bytes.
    pub fn totals(&self) -> TreeTotals {
        self.totals
    }
}

impl Drop for StagedTree {
    fn drop(&mut self) {
        if !self.placed {
            // Marker last, so a kill while dropping leaves a tree the next run removes.
            let _ = remove_marked_tree(&self.temp);
        }
    }
}

/// An empty directory beside the tree's final place, marked as ours (name and marker
/// file), so a later run's lock holder removes it if this run is killed.
pub(crate) fn temp_tree(dest_dir: &Path, stem: &str) -> Result<tempfile::TempDir, WriteError> {
    std::fs::create_dir_all(dest_dir).map_err(|source| WriteError::io(WriteAction::CreateDir, dest_dir, source))?;
    earlier_tree(&dest_dir.join(stem))?;
    let temp = tempfile::Builder::new()
        .prefix(&temp_prefix(stem))
        .tempdir_in(dest_dir)
        .map_err(|source| WriteError::io(WriteAction::CreateTemp, dest_dir, source))?;
    create_marker(temp.path())?;
    Ok(temp)
}

/// Whether an earlier tree is at `root`: a real directory is one (the swap moves it
/// aside), nothing there is none, and anything else (a symlink, wherever it points; a
/// file) is not ours to replace.
fn earlier_tree(root: &Path) -> Result<bool, WriteError> {
    match std::fs::symlink_metadata(root) {
        Ok(metadata) if metadata.is_dir() => Ok(true),
        Ok(metadata) => Err(WriteError::NotOurs { path: root.to_path_buf(), what: kind_of(&metadata.file_type()) }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(WriteError::io(WriteAction::MoveAside, root, source)),
    }
}

/// Creates the empty marker file in `dir`, never through a symlink or into a FIFO put
/// in its place (both fail instead).
fn create_marker(dir: &Path) -> Result<(), WriteError> {
    use std::os::unix::fs::OpenOptionsExt;
    let marker = dir.join(TEMP_TREE_MARKER_FILE);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&marker)
        .map_err(|source| WriteError::io(WriteAction::Write, &marker, source))?;
    let metadata = file.metadata().map_err(|source| WriteError::io(WriteAction::Write, &marker, source))?;
    match metadata.is_file() {
        true => Ok(()),
        false => Err(WriteError::NotOurs { path: marker, what: kind_of(&metadata.file_type()) }),
    }
}

/// A tree that was put in place, and the older tree it replaced (moved aside), if any.
struct Placed {
    root: PathBuf,
    aside: Option<PathBuf>,
}

/// Puts every staged tree in place, all or none; returns their roots in order.
pub fn commit_trees(trees: Vec<StagedTree>) -> Result<Vec<PathBuf>, WriteError> {
    let mut placed: Vec<Placed> = Vec::new();
    let mut trees = trees.into_iter();
    // The trees not yet placed stay in the iterator and are removed with it on failure.
    for tree in trees.by_ref() {
        match place(tree) {
            Ok(done) => placed.push(done),
            Err(error) => {
                roll_back(placed);
                return Err(error);
            }
        }
    }
    let roots = placed.iter().map(|done| done.root.clone()).collect();
    for done in placed {
        if let Some(aside) = done.aside {
            // Best effort, marker last: a tree left behind (a kill, a failure) still
            // carries the marker, so the next run removes it.
            let _ = remove_marked_tree(&aside);
        }
    }
    Ok(roots)
}

fn place(mut tree: StagedTree) -> Result<Placed, WriteError> {
    let root = tree.root.clone();
    let temp_path = tree.temp.as_path();
    std::fs::set_permissions(temp_path, std::fs::Permissions::from_mode(0o755))
        .map_err(|source| WriteError::io(WriteAction::Write, temp_path, source))?;
    let aside = match earlier_tree(&root)? {
        true => Some(move_aside(&root)?),
        false => None,
    };
    // The marker goes just before the rename: a kill between the two leaves a hidden
    // directory, never a tree of ours the cleanup would remove.
    let marker = temp_path.join(TEMP_TREE_MARKER_FILE);
    let renamed = std::fs::remove_file(&marker).and_then(|()| std::fs::rename(temp_path, &root));
    match renamed {
        Ok(()) => {
            tree.placed = true;
            Ok(Placed { root, aside })
        }
        Err(source) => {
            if let Some(aside) = &aside {
                let _ = unmark(aside).and_then(|()| std::fs::rename(aside, &root));
            }
            Err(WriteError::io(WriteAction::PutInPlace, root, source))
        }
    }
}

/// Marks an older tree and renames it to a marked temp name beside it.
fn move_aside(root: &Path) -> Result<PathBuf, WriteError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (Some(dir), Some(name)) = (root.parent(), root.file_name()) else {
        let reason = format!("{} has no parent directory", root.display());
        return Err(WriteError::Invalid { reason });
    };
    let prefix = temp_prefix(&format!("{}.old", name.to_string_lossy()));
    loop {
        let unique = format!("{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let aside = dir.join(format!("{prefix}{unique}"));
        if std::fs::symlink_metadata(&aside).is_ok() {
            continue;
        }
        // Marked before the move, so no tree is ever under an aside name unmarked (which
        // the next lock holder could not tell from another tool's and would leave behind).
        // A kill before the rename leaves the marker in a tree still under its own name,
        // which the cleanup never touches.
        create_marker(root)?;
        if let Err(source) = std::fs::rename(root, &aside) {
            let _ = unmark(root);
            return Err(WriteError::io(WriteAction::MoveAside, root, source));
        }
        return Ok(aside);
    }
}

/// Undoes placed trees, last first: each new tree removed, its older one put back.
fn roll_back(placed: Vec<Placed>) {
    for done in placed.into_iter().rev() {
        let _ = std::fs::remove_dir_all(&done.root);
        if let Some(aside) = done.aside {
            let _ = unmark(&aside).and_then(|()| std::fs::rename(&aside, &done.root));
        }
    }
}
