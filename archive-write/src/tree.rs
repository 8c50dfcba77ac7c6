//! `--no-build-packages`: a wheel laid out as a directory tree, the way it would be
//! unpacked, with the devel tarball's entries expanded as real directories, files and
//! symlinks instead of the tarball; the `rocm` sdist as the directory its archive holds.
//!
//! Owns: the tree layout and its atomic replacement. Does not own: member content.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use super::deflate::MemberDigest;
use super::member::write_file;
use super::record::Record;
use super::sdist::sdist_layout;
use super::tar::expand_devel_entries;
use super::wheel::{ordered_members, WheelNames};
use super::{MemberData, SdistSpec, WheelSpec, WriteError};

pub fn write_tree(dest_dir: &Path, spec: &WheelSpec) -> Result<PathBuf, WriteError> {
    let names = WheelNames::new(spec)?;
    let members = ordered_members(spec, &names)?;
    let temp = temp_tree(dest_dir, &names.stem)?;

    let digests: Vec<Option<(String, MemberDigest)>> = members
        .par_iter()
        .map(|member| match &member.data {
            MemberData::DevelTar(tar_spec) => {
                expand_devel_entries(tar_spec, temp.path())?;
                Ok(None)
            }
            data => {
                let path = temp.path().join(&member.name);
                let digest = write_file(data, member.executable, &path)?;
                Ok(Some((member.name.clone(), digest)))
            }
        })
        .collect::<Result<_, WriteError>>()?;
    let mut record = Record::default();
    for (name, digest) in digests.into_iter().flatten() {
        record.add(&name, &digest.sha256, digest.len);
    }
    let record_bytes = record.finish(&names.record());
    write_file(&MemberData::Bytes(Arc::new(record_bytes)), false, &temp.path().join(names.record()))?;
    put_in_place(temp, &dest_dir.join(&names.stem))
}

/// The `rocm` sdist as `{name}-{version}/` in `dest_dir`: exactly the files its archive
/// holds under that directory (PKG-INFO, `pyproject.toml`, the in-tree backend and the
/// sources), with the archive's modes. Replaces an older tree when whole.
pub fn write_sdist_tree(dest_dir: &Path, spec: &SdistSpec) -> Result<PathBuf, WriteError> {
    let (stem, files) = sdist_layout(spec)?;
    let temp = temp_tree(dest_dir, &stem)?;
    for file in files {
        write_file(&MemberData::Bytes(Arc::new(file.bytes)), file.executable, &temp.path().join(&file.name))?;
    }
    put_in_place(temp, &dest_dir.join(&stem))
}

/// An empty directory beside the tree's final place, named like the writers' temp files
/// (`.{stem}.tmp-*`) so a later run's lock holder removes it if this run is killed.
fn temp_tree(dest_dir: &Path, stem: &str) -> Result<tempfile::TempDir, WriteError> {
    std::fs::create_dir_all(dest_dir).map_err(|source| WriteError::Write { path: dest_dir.into(), source })?;
    tempfile::Builder::new()
        .prefix(&format!(".{stem}.tmp-"))
        .tempdir_in(dest_dir)
        .map_err(|source| WriteError::Write { path: dest_dir.into(), source })
}

/// Renames a complete tree to `root`, replacing an older one, so a failed run leaves no
/// half tree; returns `root`.
fn put_in_place(temp: tempfile::TempDir, root: &Path) -> Result<PathBuf, WriteError> {
    std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o755))
        .map_err(|source| WriteError::Write { path: temp.path().into(), source })?;
    if root.exists() {
        std::fs::remove_dir_all(root).map_err(|source| WriteError::Write { path: root.to_path_buf(), source })?;
    }
    let temp_path = temp.keep();
    std::fs::rename(&temp_path, root).map_err(|source| {
        let _ = std::fs::remove_dir_all(&temp_path);
        WriteError::Write { path: root.to_path_buf(), source }
    })?;
    Ok(root.to_path_buf())
}
