//! Which distributions are the SDK's own (SPEC §11), from the set's own names: a project
//! merely named `rocm_sdk_h5ext` is no package of the SDK, and is judged as a wheel built
//! on it. The names are the fixed ones (`rocm`, `rocm-sdk-core`, `rocm-sdk-libraries`,
//! `rocm-sdk-devel`, `rocm-profiler`, `rocm-sdk-device`, `rocm-sdk-variant-provider`) and
//! those of the families and device targets the set's own packages list in their
//! `_dist_info_data.py` (`rocm-sdk-libraries-gfx110x-all`, `rocm-sdk-device-gfx90a`): only
//! a package of a fixed name is asked, so no wheel makes itself the SDK's by its own word.
//!
//! Owns: that set of names. Does not own: the rules judged with it (`set`, `third_party`).

use std::collections::BTreeSet;

use super::archive::Archive;
use super::metadata::{normalize_name, string_list};
use super::targets::Target;

/// The SDK's distributions whose names carry no family or target.
const FIXED: &[&str] = &[
    "rocm",
    "rocm-sdk-core",
    "rocm-sdk-libraries",
    "rocm-sdk-devel",
    "rocm-profiler",
    "rocm-sdk-device",
    "rocm-sdk-variant-provider",
];

/// The normal names of the SDK's own distributions in a set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SdkNames(BTreeSet<String>);

impl SdkNames {
    /// The names of the set `archives`, from its fixed-name packages' `_dist_info_data.py`.
    pub(crate) fn of(archives: &[Archive]) -> SdkNames {
        let mut names: BTreeSet<String> = FIXED.iter().map(|name| (*name).to_owned()).collect();
        let listing = archives
            .iter()
            .filter(|archive| {
                archive.name.as_deref().is_some_and(|name| FIXED.contains(&normalize_name(name).as_str()))
            })
            .filter_map(|archive| archive.dist_info_data.as_deref());
        for source in listing {
            let families = string_list(source, "AVAILABLE_TARGET_FAMILIES").unwrap_or_default();
            let targets = string_list(source, "DEVICE_TARGETS").unwrap_or_default();
            for family in &families {
                let family = family.split(':').next().unwrap_or(family);
                names.insert(normalize_name(&format!("rocm-sdk-libraries-{family}")));
                names.insert(normalize_name(&format!("rocm-sdk-devel-{family}")));
            }
            for target in families.iter().chain(&targets) {
                let owner = Target::from_target_id(target).owner();
                names.insert(normalize_name(&format!("rocm-sdk-device-{}", owner.as_str())));
                let base = target.split(':').next().unwrap_or(target);
                names.insert(normalize_name(&format!("rocm-sdk-device-{base}")));
            }
        }
        SdkNames(names)
    }

    /// Whether `distribution` (any spelling) is one of the set's own packages.
    pub(crate) fn contains(&self, distribution: &str) -> bool {
        self.0.contains(&normalize_name(distribution))
    }
}
