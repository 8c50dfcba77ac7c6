//! What `_dist_info_data.py` says about the whole build (SPEC §2, §3): decided once per run by
//! the plan from the build's families and flags, and rendered into every package by the
//! output stage's `python`, so that all of them agree.
//!
//! Owns: that value and the naming scheme it implies. Does not own: the rendering
//! (`output::python`), the names themselves (`identity`).

use crate::identity::{NamingScheme, PackageNames, PackageRole};

/// What `_dist_info_data.py` says about the whole build; one value per run, shared by every
/// package so that they all agree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistInfo {
    pub version: String,
    /// `--version-suffix`, appended to every platform directory name (usually empty).
    pub nonce: String,
    pub kpack_split: bool,
    pub default_target_family: Option<String>,
    /// Legacy: families (`gfx110X-all`); kpack-split: base targets (`gfx90a`).
    pub available_target_families: Vec<String>,
    pub linux_target_families: Vec<String>,
    pub windows_target_families: Vec<String>,
    /// Kpack-split: the base targets that have a device wheel.
    pub device_targets: Vec<String>,
    /// Multi-family legacy builds: one `rocm-sdk-devel-{family}` per family (SPEC §2).
    pub devel_target_specific: bool,
    /// A Windows build (SPEC §7): the Linux-only console scripts are left out.
    pub windows: bool,
}

impl DistInfo {
    /// What of the build decides package names.
    pub fn naming(&self) -> NamingScheme<'_> {
        NamingScheme {
            kpack_split: self.kpack_split,
            devel_target_specific: self.devel_target_specific,
            nonce: &self.nonce,
        }
    }

    /// The names `role` has in this build.
    pub fn names(&self, role: &PackageRole) -> PackageNames {
        PackageNames::new(role, self.naming())
    }
}
