//! Several targets, one device wheel (SPEC §2, grouped by owner; TheRock #8327): before an
//! owner's wheel merges the payloads of its member targets (`gfx1250`, `gfx1250-strict`),
//! a path that two members provide differently is refused, naming both artifacts and the
//! path. Identical entries (same bytes, same link text, or two directories) are kept once.
//!
//! Owns: comparing the members' entries. Does not own: which artifacts feed the wheel
//! (`rules`), building it (`device`). The target ids of one target (`gfx90a:xnack±`) are
//! one member: they keep the catalog's "last one wins" (SPEC §1), as upstream does.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::error::OwnerClash;
use super::runtime::Builder;
use super::{rules, PlanError};
use crate::input::catalog::{ArtifactName, Entry, EntryKind, Selection};
use crate::input::CatalogError;
use crate::relpath::RelPath;
use crate::targets::Target;

/// Refuses, before anything is written, an owner's wheel whose members clash.
pub fn check_members(builder: &mut Builder<'_>, owner: &Target) -> Result<(), PlanError> {
    let members: BTreeSet<Target> = builder
        .catalog
        .target_families()
        .iter()
        .filter_map(|family| family.target())
        .filter(|target| &target.owner() == owner)
        .collect();
    if members.len() < 2 {
        return Ok(());
    }
    let mut seen: BTreeMap<RelPath, Entry> = BTreeMap::new();
    for member in &members {
        let predicate = |name: &ArtifactName| {
            rules::is_device_artifact(name, owner) && name.target_family.target().as_ref() == Some(member)
        };
        let namespace =
            builder.select(&Selection { artifacts: &predicate, include: Vec::new(), exclude: Vec::new() })?;
        for (rel, entry) in namespace.all {
            match seen.get(&rel) {
                None => {
                    seen.insert(rel, entry);
                }
                Some(first) => {
                    if let Some(what) = difference(first, &entry, builder).map_err(PlanError::from)? {
                        return Err(PlanError::OwnerClash(Box::new(OwnerClash {
                            owner: owner.to_string(),
                            path: rel.to_string(),
                            first: builder.catalog.artifact_dir_name(first.artifact),
                            second: builder.catalog.artifact_dir_name(entry.artifact),
                            what,
                        })));
                    }
                }
            }
        }
    }
    Ok(())
}

/// How two members' entries at one path differ, or `None` when one of them can stand for
/// both.
fn difference(first: &Entry, second: &Entry, builder: &Builder<'_>) -> Result<Option<String>, CatalogError> {
    let artifact = |entry: &Entry| builder.catalog.artifact_dir_name(entry.artifact);
    Ok(match (&first.kind, &second.kind) {
        (EntryKind::Dir, EntryKind::Dir) => None,
        (EntryKind::File { len: first_len, .. }, EntryKind::File { len: second_len, .. }) => {
            let same = first_len == second_len && same_bytes(&first.source, &second.source)?;
            (!same).then(|| "with different bytes".to_owned())
        }
        (EntryKind::Symlink { target: first_target }, EntryKind::Symlink { target: second_target }) => (first_target
            != second_target)
            .then(|| format!("as symlinks to different targets ({first_target} and {second_target})")),
        (first_kind, second_kind) => Some(format!(
            "as a {} in {} and a {} in {}",
            first_kind.name(),
            artifact(first),
            second_kind.name(),
            artifact(second)
        )),
    })
}

/// Whether two files of equal length hold the same bytes, read side by side in blocks.
fn same_bytes(first: &Path, second: &Path) -> Result<bool, CatalogError> {
    // The catalog saw regular files; whatever took their place since is refused, not waited on.
    let open = |path: &Path| {
        archive_write::open_regular(path, archive_write::Links::Refuse)
            .map_err(|source| CatalogError::Read { path: path.to_owned(), source })
    };
    let (mut first_file, mut second_file) = (open(first)?, open(second)?);
    let mut first_block = vec![0u8; 64 * 1024];
    let mut second_block = vec![0u8; 64 * 1024];
    loop {
        let read = fill(&mut first_file, &mut first_block)
            .map_err(|source| CatalogError::Read { path: first.to_owned(), source })?;
        let other = fill(&mut second_file, &mut second_block[..read.max(1)])
            .map_err(|source| CatalogError::Read { path: second.to_owned(), source })?;
        if read != other || first_block[..read] != second_block[..read] {
            return Ok(false);
        }
        if read == 0 {
            return Ok(true);
        }
    }
}

/// Reads until `block` is full or the file ends; returns how many bytes were read.
fn fill(file: &mut File, block: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < block.len() {
        match file.read(&mut block[filled..])? {
            0 => break,
            read => filled += read,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(first: &[u8], second: &[u8], expect: bool) {
        let dir = tempfile::tempdir().expect("temp dir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs_err::write(&a, first).expect("write");
        fs_err::write(&b, second).expect("write");
        assert_eq!(same_bytes(&a, &b).expect("readable"), expect, "{} and {} bytes", first.len(), second.len());
    }

    #[test]
    fn files_compare_by_their_bytes() {
        check(b"", b"", true);
        check(b"kpack", b"kpack", true);
        check(b"kpack", b"kpacK", false);
        check(b"kpack", b"kpack!", false);
        let big = vec![7u8; 200 * 1024];
        let mut changed = big.clone();
        changed[150 * 1024] = 8;
        check(&big, &big, true);
        check(&big, &changed, false);
    }
}
