//! Trees: a wheel laid out as a directory tree, the way it would be unpacked, with a
//! tarball member's entries expanded as real directories, files and symlinks instead of
//! the tarball; an sdist as the directory its archive holds.
//!
//! Owns: the tree layout. Does not own: member content, or placing the trees
//! (`tree_commit`, all of a run's trees or none).

use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::deflate::MemberDigest;
use super::member::write_file;
use super::record::Record;
use super::sdist::sdist_layout;
use super::tar::expand_tarball_entries;
use super::tree_commit::{temp_tree, StagedTree};
use super::wheel::{ordered_members, render_inventory, WheelNames};
use super::{MemberData, SdistSpec, WheelSpec, WriteError};

/// Writes a wheel's tree under a temp name in `dest_dir`; [`commit_trees`] puts it in place.
pub fn stage_tree(dest_dir: &Path, spec: &WheelSpec) -> Result<StagedTree, WriteError> {
    let names = WheelNames::new(spec)?;
    let members = ordered_members(spec, &names)?;
    let temp = temp_tree(dest_dir, &names.stem)?;

    let digests: Vec<Option<(String, MemberDigest)>> = members
        .par_iter()
        .map(|member| match &member.data {
            MemberData::Tarball(tar_spec) => {
                expand_tarball_entries(tar_spec, temp.path())?;
                Ok(None)
            }
            data => {
                let path = temp.path().join(&member.name);
                let digest = write_file(data, member.executable, &path)?;
                Ok(Some((member.name.clone(), digest)))
            }
        })
        .collect::<Result<_, WriteError>>()?;
    let mut digests: Vec<(String, MemberDigest)> = digests.into_iter().flatten().collect();
    let listed = digests.iter().map(|(name, digest)| (name.as_str(), digest));
    if let Some((name, bytes)) = render_inventory(spec, &names, listed) {
        let digest = write_file(&MemberData::Bytes(Arc::new(bytes)), false, &temp.path().join(&name))?;
        digests.push((name, digest));
    }
    let mut record = Record::default();
    for (name, digest) in digests {
        record.add(&name, &digest.sha256, digest.len);
    }
    let record_bytes = record.finish(&names.record());
    write_file(&MemberData::Bytes(Arc::new(record_bytes)), false, &temp.path().join(names.record()))?;
    Ok(StagedTree::new(temp, dest_dir.join(&names.stem)))
}

/// An sdist as `{name}-{version}/` in `dest_dir`: exactly the files its archive
/// holds under that directory (PKG-INFO, `pyproject.toml`, the in-tree backend and the
/// sources), with the archive's modes, staged like [`stage_tree`].
pub fn stage_sdist_tree(dest_dir: &Path, spec: &SdistSpec) -> Result<StagedTree, WriteError> {
    let (stem, files) = sdist_layout(spec)?;
    let temp = temp_tree(dest_dir, &stem)?;
    for file in files {
        write_file(&MemberData::Bytes(Arc::new(file.bytes)), file.executable, &temp.path().join(&file.name))?;
    }
    Ok(StagedTree::new(temp, dest_dir.join(&stem)))
}
