//! The fat binaries of a wheel (SPEC §12 "Host binaries"): each ELF member that carries a
//! `.hip_fatbin` is read once, its offload bundles listed and each fat-binary wrapper tied
//! to the bundle it registers, and given the marker the runtime will read: the name its
//! code objects are filed under (its path inside its package directory, as rocm-kpack
//! names them) and where the archives are, relative to the binary's directory
//! (`../.kpack/torch_@GFXARCH@.kpack` for `torch/lib/libtorch_hip.so`).
//!
//! Owns: finding fat members, their package directory, kernel name and search path. Does
//! not own: the bundle and ELF formats (the device-code crate), which archive a code
//! object goes to (`archives`).

use std::fs::File;
use std::path::{Path, PathBuf};

use device_code::bundle::FatBinary;
use device_code::host::{self, FatState, HostBinary, KpackRef};

use super::error::SplitError;
use crate::repair::input::InputMember;

/// The directory, inside a package directory, that holds its archives.
pub const ARCHIVE_DIR: &str = ".kpack";

/// A fat ELF member, read.
#[derive(Debug)]
pub struct FatMember {
    /// Its name inside the wheel.
    pub member: String,
    pub extracted: PathBuf,
    /// The top directory it installs under (`torch`), empty for a file at the top.
    pub package_dir: String,
    pub marker: KpackRef,
    pub host: HostBinary,
    pub fat: FatBinary,
    /// Per wrapper, in segment order: the index of the bundle it registers.
    pub wrapper_bundles: Vec<usize>,
}

/// What an ELF member of the wheel is, as far as device code goes.
#[derive(Debug)]
pub enum Binary {
    Fat(Box<FatMember>),
    AlreadySplit,
    Plain,
}

/// Reads the ELF member `member` of the wheel at `wheel`; `group` names its archives.
pub fn read_binary(wheel: &Path, member: &InputMember, group: &str) -> Result<Binary, SplitError> {
    let Some(extracted) = member.extracted.as_ref() else { return Ok(Binary::Plain) };
    let failed = |source| SplitError::DeviceCode { path: wheel.to_path_buf(), member: member.name.clone(), source };
    let file = File::open(extracted)
        .map_err(|source| failed(device_code::DeviceCodeError::Io { path: PathBuf::from(&member.name), source }))?;
    let host = host::inspect(&file, Path::new(&member.name)).map_err(failed)?;
    match host.state() {
        FatState::NotFat => return Ok(Binary::Plain),
        FatState::AlreadySplit => return Ok(Binary::AlreadySplit),
        FatState::Fat => {}
    }
    let Some(installed) = member.installed() else {
        return Err(SplitError::Refused {
            path: wheel.to_path_buf(),
            reason: format!(
                "{} carries device code but installs outside site-packages, where no path relative to it reaches \
                 the device wheels' archives",
                member.name
            ),
        });
    };
    let fat = FatBinary::read(&file, Path::new(&member.name)).map_err(failed)?.ok_or_else(|| {
        failed(device_code::DeviceCodeError::Elf {
            path: PathBuf::from(&member.name),
            reason: "its fat-binary wrappers point at a .hip_fatbin that holds no bytes".to_owned(),
        })
    })?;
    let wrapper_bundles = tie_wrappers(&host, &fat)
        .map_err(|reason| failed(device_code::DeviceCodeError::Elf { path: PathBuf::from(&member.name), reason }))?;
    let (package_dir, kernel_name) = match installed.split_once('/') {
        Some((top, inside)) => (top.to_owned(), inside.to_owned()),
        None => (String::new(), installed.to_owned()),
    };
    let marker = KpackRef { search_paths: vec![search_path(&kernel_name, group)], kernel_name };
    Ok(Binary::Fat(Box::new(FatMember {
        member: member.name.clone(),
        extracted: extracted.clone(),
        package_dir,
        marker,
        host,
        fat,
        wrapper_bundles,
    })))
}

/// The bundle each wrapper registers: its pointer's offset into `.hip_fatbin` is where
/// the bundle starts. Keying code objects by wrapper (the index the runtime asks for)
/// rather than by counting bundles keeps them right when the two orders differ.
pub(super) fn tie_wrappers(host: &HostBinary, fat: &FatBinary) -> Result<Vec<usize>, String> {
    host.wrappers()
        .iter()
        .map(|wrapper| {
            let offset = wrapper
                .fatbin_offset
                .ok_or_else(|| format!("fat-binary wrapper {} does not point into .hip_fatbin", wrapper.index))?;
            fat.bundles().iter().position(|bundle| bundle.offset_in_section == offset).ok_or_else(|| {
                format!(
                    "fat-binary wrapper {} points at offset {offset} of .hip_fatbin, where no bundle starts",
                    wrapper.index
                )
            })
        })
        .collect()
}

/// The marker's search path of a binary at `kernel_name` inside its package directory:
/// up to the package directory, then its archive directory (`@GFXARCH@` is the runtime's).
pub fn search_path(kernel_name: &str, group: &str) -> String {
    let depth = kernel_name.matches('/').count();
    format!("{}{ARCHIVE_DIR}/{group}_{}.kpack", "../".repeat(depth), super::metadata::GFXARCH)
}

/// The member path of the archive of `target_id` for a package directory.
pub fn archive_member(package_dir: &str, group: &str, target_id: &str) -> String {
    match package_dir {
        "" => format!("{ARCHIVE_DIR}/{group}_{target_id}.kpack"),
        dir => format!("{dir}/{ARCHIVE_DIR}/{group}_{target_id}.kpack"),
    }
}

/// The archives' group name: the host's distribution name as rocm-kpack spells it
/// (lower case, `-` as `_`).
pub fn group_name(distribution: &str) -> String {
    archive_write::normalize(distribution).replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_paths_climb_to_the_package_directory() {
        assert_eq!(search_path("lib/libtorch_hip.so", "torch"), "../.kpack/torch_@GFXARCH@.kpack");
        assert_eq!(search_path("_C.so", "ext"), ".kpack/ext_@GFXARCH@.kpack");
        assert_eq!(search_path("a/b/c.so", "ext"), "../../.kpack/ext_@GFXARCH@.kpack");
        assert_eq!(archive_member("torch", "torch", "gfx942:xnack+"), "torch/.kpack/torch_gfx942:xnack+.kpack");
        assert_eq!(archive_member("", "ext", "gfx90a"), ".kpack/ext_gfx90a.kpack");
        assert_eq!(group_name("My.Ext-Pkg"), "my_ext_pkg");
    }
}
