//! Archives of our own earlier runs that this run no longer produces: a family dropped
//! between two runs left its old wheel of the same version beside the new set, and an index
//! built from the destination offered it (SPEC §2, "Refusing a partial set"). A full run
//! removes them once its own set is committed.
//!
//! Only what we wrote is touched, known by name and version: a wheel of one of our
//! distributions (`rocm_sdk_*`, `rocm_profiler`; variant wheels and the provider's
//! included) or its `-variants.json` index file, of this run's version, for the same
//! operating system as this run's wheels (a Linux run never removes Windows wheels
//! packaged into the same destination), that this run did not write. Anything else in the
//! destination stays, whoever made it.
//!
//! `--no-build-packages` trees are cleared the same way ([`stale_trees`]).
//!
//! Owns: recognising those archives and trees and removing them. Does not own: where the
//! destination is (the caller passes the directory the archives were written to).

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use archive_write::WheelFileName;

use crate::identity::{is_our_distribution, parse_variants_json_file_name};
use archive_write::{WriteAction, WriteError};

/// Our wheels in `dest` of `version` for the operating system of `produced`, that are not
/// among `produced` (file names this run committed), sorted.
pub fn stale_archives(dest: &Path, version: &str, produced: &BTreeSet<String>) -> Result<Vec<PathBuf>, WriteError> {
    let list_error = |source| WriteError::io(WriteAction::List, dest, source);
    let windows: BTreeSet<bool> = produced
        .iter()
        .filter_map(|name| name.parse::<WheelFileName>().ok())
        .map(|wheel| wheel.platform.is_windows())
        .collect();
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(dest).map_err(list_error)? {
        let entry = entry.map_err(list_error)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if produced.contains(name) {
            continue;
        }
        // A variant index file of ours goes with the variant wheels it describes (SPEC §9),
        // which only Linux runs write.
        if let Some((distribution, json_version)) = parse_variants_json_file_name(name) {
            if !(is_our_distribution(&distribution) && json_version == version && windows.contains(&false)) {
                continue;
            }
        } else {
            // A build tag is never ours: such a wheel was made by another tool.
            let Some(wheel) = name.parse::<WheelFileName>().ok().filter(|wheel| wheel.build.is_none()) else {
                continue;
            };
            let ours = is_our_distribution(wheel.name.as_str()) && wheel.version.as_str() == version;
            if !ours || !windows.contains(&wheel.platform.is_windows()) {
                continue;
            }
        }
        // Only regular files: a directory or link under such a name is not an archive we wrote.
        if entry.file_type().map_err(list_error)?.is_file() {
            stale.push(entry.path());
        }
    }
    stale.sort();
    Ok(stale)
}

/// Removes [`stale_archives`]; returns what was removed.
pub fn remove_stale_archives(
    dest: &Path,
    version: &str,
    produced: &BTreeSet<String>,
) -> Result<Vec<PathBuf>, WriteError> {
    remove_each(stale_archives(dest, version, produced)?, |path| std::fs::remove_file(path))
}

/// Removes every one of `stale` with `remove` (one already gone is no error); returns them.
fn remove_each(stale: Vec<PathBuf>, remove: impl Fn(&Path) -> io::Result<()>) -> Result<Vec<PathBuf>, WriteError> {
    for path in &stale {
        match remove(path) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => {
                return Err(WriteError::io(WriteAction::Remove, path, error));
            }
            _ => {}
        }
    }
    Ok(stale)
}

/// Our `--no-build-packages` wheel trees in `dest` of `version` that are not among
/// `produced` (directory names this run committed), sorted: a real directory named
/// `{distribution}-{version}` of one of our distributions that holds its
/// `{name}.dist-info/RECORD`, as a tree we wrote does. A tree has no platform in its name:
/// a tree of the same name from a run for the other system is this run's to replace anyway.
pub fn stale_trees(dest: &Path, version: &str, produced: &BTreeSet<String>) -> Result<Vec<PathBuf>, WriteError> {
    let list_error = |source| WriteError::io(WriteAction::List, dest, source);
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(dest).map_err(list_error)? {
        let entry = entry.map_err(list_error)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((distribution, tree_version)) = name.split_once('-') else { continue };
        if produced.contains(name) || !is_our_distribution(distribution) || tree_version != version {
            continue;
        }
        let record = entry.path().join(format!("{name}.dist-info")).join("RECORD");
        let is_file = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_file());
        if entry.file_type().map_err(list_error)?.is_dir() && is_file(&record) {
            stale.push(entry.path());
        }
    }
    stale.sort();
    Ok(stale)
}

/// Removes [`stale_trees`]; returns what was removed.
pub fn remove_stale_trees(dest: &Path, version: &str, produced: &BTreeSet<String>) -> Result<Vec<PathBuf>, WriteError> {
    remove_each(stale_trees(dest, version, produced)?, |path| std::fs::remove_dir_all(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_wheel_trees_of_this_version_not_produced_are_stale() {
        let dest = tempfile::tempdir().expect("tempdir");
        let trees = [
            "rocm_sdk_core-7.0",
            "rocm_sdk_libraries_gfx90a-7.0",
            "rocm_sdk_libraries_gfx90a-6.9",
            "rocm_profiler-7.0",
            "torch-7.0",
        ];
        for name in trees {
            let dist_info = dest.path().join(name).join(format!("{name}.dist-info"));
            fs_err::create_dir_all(&dist_info).expect("mkdir");
            fs_err::write(dist_info.join("RECORD"), "").expect("write");
        }
        // Named like a tree of ours, but not one: no RECORD, or a plain file.
        fs_err::create_dir_all(dest.path().join("rocm_sdk_devel-7.0")).expect("mkdir");
        fs_err::write(dest.path().join("rocm_sdk_test-7.0"), "x").expect("write");
        let produced: BTreeSet<String> = ["rocm_sdk_core-7.0".to_owned()].into_iter().collect();
        let removed = remove_stale_trees(dest.path(), "7.0", &produced).expect("remove");
        let removed: Vec<String> =
            removed.iter().map(|path| path.file_name().expect("name").to_string_lossy().into_owned()).collect();
        assert_eq!(removed, ["rocm_profiler-7.0", "rocm_sdk_libraries_gfx90a-7.0"]);
        for kept in ["rocm_sdk_core-7.0", "rocm_sdk_libraries_gfx90a-6.9", "torch-7.0", "rocm_sdk_devel-7.0"] {
            assert!(dest.path().join(kept).is_dir(), "{kept} was removed");
        }
        assert!(!dest.path().join("rocm_profiler-7.0").exists());
    }

    #[test]
    fn only_our_wheels_of_this_version_and_system_not_produced_are_stale() {
        let dest = tempfile::tempdir().expect("tempdir");
        let names = [
            "rocm_sdk_core-7.0-py3-none-linux_x86_64.whl",
            "rocm_sdk_libraries_gfx1100-7.0-py3-none-linux_x86_64.whl",
            "rocm_sdk_libraries_gfx90a-7.0-py3-none-linux_x86_64.whl",
            "rocm_sdk_libraries_gfx90a-6.9-py3-none-linux_x86_64.whl",
            "rocm_sdk_libraries_gfx90a-7.0-py3-none-win_amd64.whl",
            "rocm_profiler-7.0-py3-none-linux_x86_64.whl",
            "rocm_sdk_device-7.0-py3-none-linux_x86_64-gfx90a.whl",
            "rocm_sdk_device-7.0-variants.json",
            "rocm_sdk_device-6.9-variants.json",
            "rocm_sdk_variant_provider-7.0-py3-none-any.whl",
            "torch-7.0-variants.json",
            "torch-7.0-py3-none-linux_x86_64.whl",
            "rocm-7.0.tar.gz",
        ];
        for name in names {
            fs_err::write(dest.path().join(name), "x").expect("write");
        }
        let produced: BTreeSet<String> = ["rocm_sdk_core-7.0-py3-none-linux_x86_64.whl", "rocm-7.0.tar.gz"]
            .iter()
            .map(|name| (*name).to_owned())
            .collect();
        let stale = stale_archives(dest.path(), "7.0", &produced).expect("scan");
        let stale: Vec<String> =
            stale.iter().map(|path| path.file_name().expect("name").to_string_lossy().into_owned()).collect();
        assert_eq!(
            stale,
            [
                "rocm_profiler-7.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_device-7.0-py3-none-linux_x86_64-gfx90a.whl",
                "rocm_sdk_device-7.0-variants.json",
                "rocm_sdk_libraries_gfx1100-7.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_libraries_gfx90a-7.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_variant_provider-7.0-py3-none-any.whl",
            ]
        );
    }
}
