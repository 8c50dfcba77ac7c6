//! Walking the basedirs of selected artifacts and merging them into one namespace of
//! [`RelPath`]s (SPEC §1: "on a clash the last one seen wins").
//!
//! Links are never followed and paths never canonicalized: a symlink is an entry holding
//! its link text, and the plan resolves it in the merged namespace.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use rayon::prelude::*;

use super::{Catalog, CatalogError, Entry, EntryKind, FileStamp, Namespace, Override, Selection};
use crate::relpath::{RelPath, RelPathError};

/// Artifacts walked so far, kept while a run plans its packages. Several packages select the
/// same artifact (core and devel, a generic library in every family's wheel); walking it
/// once makes their entries, paths and sources one shared copy instead of one per package,
/// and spares the disk the repeated `stat` of every file.
#[derive(Debug, Default)]
pub struct Walks {
    /// Indexed like [`Catalog::artifacts`]; `None` until the artifact is first selected.
    by_artifact: Vec<Option<Arc<[Entry]>>>,
}

pub(super) fn select(
    catalog: &Catalog,
    walks: &mut Walks,
    selection: &Selection<'_>,
) -> Result<Namespace, CatalogError> {
    let selected: Vec<usize> =
        (0..catalog.artifacts.len()).filter(|&index| (selection.artifacts)(&catalog.artifacts[index].name)).collect();
    walks.by_artifact.resize(catalog.artifacts.len(), None);
    let unwalked: Vec<usize> = selected.iter().copied().filter(|&index| walks.by_artifact[index].is_none()).collect();
    let walked: Vec<(usize, Arc<[Entry]>)> = unwalked
        .par_iter()
        .map(|&index| {
            let mut entries = Vec::new();
            for basedir in &catalog.artifacts[index].basedirs {
                walk_dir(basedir, basedir, index, &mut entries)?;
            }
            Ok((index, Arc::from(entries)))
        })
        .collect::<Result<_, CatalogError>>()?;
    for (index, entries) in walked {
        walks.by_artifact[index] = Some(entries);
    }

    let mut namespace = Namespace::default();
    // Artifact order (sorted names) decides who wins a clash.
    for entry in selected.iter().filter_map(|&index| walks.by_artifact[index].as_deref()).flatten() {
        if let Some(previous) = namespace.all.get(&entry.rel) {
            check_same_kind(catalog, previous, entry)?;
            // Two directories at one path simply merge; anything else is a real clash.
            if !(previous.kind == EntryKind::Dir && entry.kind == EntryKind::Dir) {
                namespace.overridden.push(Override {
                    rel: entry.rel.clone(),
                    winner: catalog.artifacts[entry.artifact].name.dir_name(),
                    loser: catalog.artifacts[previous.artifact].name.dir_name(),
                });
            }
        }
        namespace.all.insert(entry.rel.clone(), entry.clone());
    }
    namespace.excluded = namespace.all.keys().filter(|rel| !is_selected(selection, rel.as_str())).cloned().collect();
    Ok(namespace)
}

/// SPEC §1: a path that is a directory in one artifact must be one in every artifact that
/// provides it. A file or symlink winning over a directory would leave the directory's
/// children under a non-directory (a devel tree the runtime refuses, a wheel pip cannot
/// unpack), and a directory winning would drop the other's link or file without a word:
/// so unlike two files ("last one wins"), this clash is refused, naming both.
pub(super) fn check_same_kind(catalog: &Catalog, first: &Entry, second: &Entry) -> Result<(), CatalogError> {
    kind_clash(first, second, &|artifact| catalog.artifacts[artifact].name.dir_name()).map_or(Ok(()), Err)
}

/// The clash of `first` and `second` at one path, when exactly one of them is a directory.
pub(super) fn kind_clash(
    first: &Entry,
    second: &Entry,
    artifact_name: &dyn Fn(usize) -> String,
) -> Option<CatalogError> {
    let is_dir = |entry: &Entry| entry.kind == EntryKind::Dir;
    if is_dir(first) == is_dir(second) {
        return None;
    }
    Some(CatalogError::KindClash(Box::new(super::KindClash {
        rel: first.rel.clone(),
        first: artifact_name(first.artifact),
        first_kind: first.kind.name(),
        first_path: first.source.to_path_buf(),
        second: artifact_name(second.artifact),
        second_kind: second.kind.name(),
        second_path: second.source.to_path_buf(),
    })))
}

/// SPEC §1: kept if it matches some include (or there are none) and no exclude.
pub(super) fn is_selected(selection: &Selection<'_>, path: &str) -> bool {
    (selection.include.is_empty() || selection.include.iter().any(|glob| glob.matches(path)))
        && !selection.exclude.iter().any(|glob| glob.matches(path))
}

/// Appends the entries below `dir` (not `dir` itself) in sorted name order, depth first.
fn walk_dir(basedir: &Path, dir: &Path, artifact: usize, out: &mut Vec<Entry>) -> Result<(), CatalogError> {
    let read_error = |source| CatalogError::Read { path: dir.to_owned(), source };
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_error)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()
        .map_err(read_error)?;
    // Byte order of the names, independent of readdir order.
    children.sort_by(|a, b| a.file_name().map(OsStrExt::as_bytes).cmp(&b.file_name().map(OsStrExt::as_bytes)));
    for path in children {
        let entry = entry_at(basedir, path, artifact)?;
        let dir = (entry.kind == EntryKind::Dir).then(|| Arc::clone(&entry.source));
        out.push(entry);
        if let Some(dir) = dir {
            walk_dir(basedir, &dir, artifact, out)?;
        }
    }
    Ok(())
}

/// The entry for `path` below `basedir`, as `lstat` and `readlink` see it.
pub(super) fn entry_at(basedir: &Path, path: PathBuf, artifact: usize) -> Result<Entry, CatalogError> {
    let metadata =
        std::fs::symlink_metadata(&path).map_err(|source| CatalogError::Read { path: path.clone(), source })?;
    let rel = rel_path(basedir, &path)?;
    let file_type = metadata.file_type();
    let kind = if file_type.is_symlink() {
        let target = std::fs::read_link(&path).map_err(|source| CatalogError::Read { path: path.clone(), source })?;
        let target = target.to_str().ok_or_else(|| CatalogError::BadPath {
            path: path.clone(),
            reason: format!("symlink target is not valid UTF-8: {}", crate::escape::escape_path(&target)),
        })?;
        EntryKind::Symlink { target: target.to_owned() }
    } else if file_type.is_dir() {
        EntryKind::Dir
    } else if file_type.is_file() {
        EntryKind::File { len: metadata.len(), mode: metadata.mode() & 0o7777, stamp: FileStamp::of(&metadata) }
    } else {
        let reason = "not a regular file, directory or symlink (a device, socket or FIFO)".to_owned();
        return Err(CatalogError::BadPath { path, reason });
    };
    Ok(Entry { rel, source: Arc::from(path.as_path()), artifact, kind })
}

fn rel_path(basedir: &Path, path: &Path) -> Result<RelPath, CatalogError> {
    RelPath::from_fs(basedir, path).map_err(|error| match error {
        RelPathError::NonUtf8 => CatalogError::NonUtf8Name { path: path.to_owned() },
        other => CatalogError::BadPath { path: path.to_owned(), reason: other.to_string() },
    })
}
