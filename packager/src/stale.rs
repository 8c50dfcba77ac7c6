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
//! Owns: recognising those archives and removing them. Does not own: where the
//! destination is (the caller passes the directory the archives were written to).

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use archive_write::WheelFileName;

use crate::identity::{is_our_distribution, parse_variants_json_file_name};
use crate::write::{WriteAction, WriteError};

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
    let stale = stale_archives(dest, version, produced)?;
    for path in &stale {
        match std::fs::remove_file(path) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => {
                return Err(WriteError::io(WriteAction::Remove, path, error));
            }
            _ => {}
        }
    }
    Ok(stale)
}

#[cfg(test)]
mod tests {
    use super::*;

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
