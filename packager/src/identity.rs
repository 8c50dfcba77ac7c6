//! Package identity (SPEC §2, the package table): which package of a build a plan entry is
//! (its [`PackageRole`], with the family or device target it is for), the names that role
//! gives it in a build ([`PackageNames`]: distribution, pure Python package, platform
//! directory). Every name of a package is derived here, once: nothing else spells
//! `rocm-sdk-…` or joins a platform directory to a member path by hand. How a name is
//! spelled in a file name (the wheel file name, PEP 503 normalisation) is the archive
//! writer's `WheelFileName` and `normalize`, the one definition of each on the writer side.
//!
//! Owns: the naming rules. Does not own: what a package holds (`plan`), the Python files
//! that read the same names at run time (`python`, whose tests compare both), or how an
//! archive writer escapes a name in a file name (`archive-write`).

mod variants;

use std::collections::BTreeMap;
use std::fmt;

use crate::config::PackageGroup;
use crate::relpath::RelPath;
use crate::targets::Target;

pub use variants::{
    device_variants_distribution, gfx_arch_value, parse_variants_json_file_name, variants_json_file_name, VariantLabel,
    VARIANT_PROVIDER_DISTRIBUTION, VARIANT_PROVIDER_PACKAGE,
};

/// One package of a build (SPEC §2 package table), with what it is for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PackageRole {
    /// The `rocm` selector sdist.
    Meta,
    Core,
    /// `family` is set (and required) in legacy builds only: one wheel per GPU family.
    Libraries {
        family: Option<String>,
    },
    /// `family` is set when the build makes one devel wheel per family
    /// ([`NamingScheme::devel_target_specific`]).
    Devel {
        family: Option<String>,
    },
    Profiler,
    /// Kpack-split: one wheel per owner (`gfx90a`; a `:xnack±` suffix is dropped, and a
    /// target the owner table names is its owner: `gfx1250-strict` → `gfx1250`).
    Device {
        target: Target,
    },
}

impl PackageRole {
    /// The `--only` group the package belongs to.
    pub fn group(&self) -> PackageGroup {
        match self {
            PackageRole::Meta => PackageGroup::Meta,
            PackageRole::Core => PackageGroup::Core,
            PackageRole::Libraries { .. } => PackageGroup::Libraries,
            PackageRole::Devel { .. } => PackageGroup::Devel,
            PackageRole::Profiler => PackageGroup::Profiler,
            PackageRole::Device { .. } => PackageGroup::Device,
        }
    }

    /// The GPU family a libraries or devel package is for, or the target of a device
    /// package: what `_dist_info.THIS_TARGET_FAMILY` says and the plan lists as `family`.
    pub fn family_or_target(&self) -> Option<&str> {
        match self {
            PackageRole::Libraries { family } | PackageRole::Devel { family } => family.as_deref(),
            PackageRole::Device { target } => Some(target.as_str()),
            PackageRole::Meta | PackageRole::Core | PackageRole::Profiler => None,
        }
    }

    /// The logical name `_dist_info.ALL_PACKAGES` keys the role by.
    pub fn logical_name(&self) -> &'static str {
        self.group().as_str()
    }

    /// The distribution name without a family: `rocm-sdk-libraries`, `rocm-sdk-device`.
    pub fn distribution_stem(&self) -> &'static str {
        distribution_stem(self.group())
    }
}

/// Each wheel's platform tag (`linux_x86_64`, `manylinux_2_28_x86_64`), by its role.
pub type PlatformTags = BTreeMap<PackageRole, String>;

/// The distribution name of a group's packages before any family is appended.
pub fn distribution_stem(group: PackageGroup) -> &'static str {
    match group {
        PackageGroup::Meta => "rocm",
        PackageGroup::Core => "rocm-sdk-core",
        PackageGroup::Libraries => "rocm-sdk-libraries",
        PackageGroup::Devel => "rocm-sdk-devel",
        PackageGroup::Profiler => "rocm-profiler",
        PackageGroup::Device => "rocm-sdk-device",
    }
}

/// The pure Python package of a group before any family is appended; device wheels have none.
fn pure_package_stem(group: PackageGroup) -> Option<&'static str> {
    match group {
        PackageGroup::Meta => Some("rocm_sdk"),
        PackageGroup::Core => Some("rocm_sdk_core"),
        PackageGroup::Libraries => Some("rocm_sdk_libraries"),
        PackageGroup::Devel => Some("rocm_sdk_devel"),
        PackageGroup::Profiler => Some("rocm_profiler"),
        PackageGroup::Device => None,
    }
}

/// Whether a distribution, as wheel file names spell it (`rocm_sdk_core`), is one of ours:
/// only those may a run remove as an earlier run's leftovers.
pub fn is_our_distribution(file_name_form: &str) -> bool {
    file_name_form.starts_with("rocm_sdk_") || file_name_form == "rocm_profiler"
}

/// What of a build decides its packages' names (SPEC §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamingScheme<'a> {
    /// Kpack-split: libraries are arch-neutral, so their names carry no family.
    pub kpack_split: bool,
    /// Multi-family legacy builds: one `rocm-sdk-devel-{family}` per family.
    pub devel_target_specific: bool,
    /// `--version-suffix`, appended to every platform directory name (usually empty).
    pub nonce: &'a str,
}

/// The names one package has in one build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageNames {
    /// The distribution name, as METADATA's `Name:` spells it: `rocm-sdk-libraries-gfx110X-all`,
    /// `rocm-sdk-device-gfx90a`.
    pub distribution: String,
    /// The pure Python package: `rocm_sdk_libraries_gfx110x_all`; device wheels have none.
    pub pure_package: Option<String>,
    /// Where the native files go in site-packages; the meta package (an sdist) has none.
    pub platform_dir: Option<PlatformDir>,
}

impl PackageNames {
    pub fn new(role: &PackageRole, scheme: NamingScheme<'_>) -> PackageNames {
        let family = naming_family(role, scheme);
        let family = family.as_deref();
        let distribution = match family {
            Some(family) => format!("{}-{}", role.distribution_stem(), target_dist_segment(family)),
            None => role.distribution_stem().to_owned(),
        };
        let pure_package = pure_package_stem(role.group()).map(|stem| match family {
            Some(family) => format!("{stem}_{}", target_identifier(family)),
            None => stem.to_owned(),
        });
        let platform_dir = match role {
            PackageRole::Meta => None,
            // Device wheels overlay the arch-neutral libraries' directory.
            PackageRole::Device { .. } => {
                PackageNames::new(&PackageRole::Libraries { family: None }, scheme).platform_dir
            }
            _ => Some(platform_dir_of(&distribution, scheme)),
        };
        PackageNames { distribution, pure_package, platform_dir }
    }

    /// The names of a wheel, which every package but the meta sdist is.
    pub fn into_wheel(self) -> Option<WheelNames> {
        let PackageNames { distribution, pure_package, platform_dir } = self;
        Some(WheelNames { distribution, pure_package, platform_dir: platform_dir? })
    }

    /// The distribution as wheel and sdist file names spell it: `rocm_sdk_core`.
    pub fn file_name_form(&self) -> String {
        archive_write::file_name_form(&self.distribution)
    }
}

/// The names of a wheel: [`PackageNames`] with its platform directory, which every wheel has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelNames {
    pub distribution: String,
    /// Device wheels have none.
    pub pure_package: Option<String>,
    pub platform_dir: PlatformDir,
}

impl WheelNames {
    /// The distribution as wheel file names spell it: `rocm_sdk_core`.
    pub fn file_name_form(&self) -> String {
        archive_write::file_name_form(&self.distribution)
    }
}

impl NamingScheme<'_> {
    /// Core's platform directory, which every RPATH dependency points into (SPEC §2).
    pub fn core_platform_dir(self) -> PlatformDir {
        platform_dir_of(distribution_stem(PackageGroup::Core), self)
    }
}

/// `_` + the distribution name with `-` and `.` as `_` + the nonce.
fn platform_dir_of(distribution: &str, scheme: NamingScheme<'_>) -> PlatformDir {
    PlatformDir(format!("_{}{}", distribution.replace(['-', '.'], "_"), scheme.nonce))
}

/// The family a role's names carry, if its kind of package is target specific in this build.
/// A device wheel is named after its target's owner (SPEC §2, grouped by owner).
fn naming_family(role: &PackageRole, scheme: NamingScheme<'_>) -> Option<String> {
    match role {
        PackageRole::Libraries { family } if !scheme.kpack_split => family.clone(),
        PackageRole::Devel { family } if scheme.devel_target_specific => family.clone(),
        PackageRole::Device { target } => Some(target.owner().to_string()),
        _ => None,
    }
}

/// A platform directory in site-packages (`_rocm_sdk_core`), the root every member path
/// of a package's native files starts with.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlatformDir(String);

impl PlatformDir {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The member path of `rel`, a file inside this directory: `_rocm_sdk_core/lib/x.so`.
    pub fn member(&self, rel: &RelPath) -> String {
        if rel.is_root() {
            self.0.clone()
        } else {
            format!("{}/{rel}", self.0)
        }
    }
}

impl fmt::Display for PlatformDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A family or target inside Python identifiers: `gfx110X-all` → `gfx110x_all`.
pub fn target_identifier(name: &str) -> String {
    Target::from_target_id(name)
        .as_str()
        .chars()
        .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '_' })
        .collect()
}

/// A family or target inside distribution names, and so inside platform directories:
/// TheRock's spelling without feature suffixes (`gfx110X-all` stays `gfx110X-all`,
/// `gfx90a:xnack+` → `gfx90a`). The reference keeps the case, and downstream code hard-codes
/// `_rocm_sdk_libraries_gfx110X_all/lib` (SPEC §2 "Names"); wheel file names are
/// normalised apart from this ([`PackageNames::file_name_form`]).
pub fn target_dist_segment(name: &str) -> String {
    let base = name.split(':').next().unwrap_or(name).trim();
    archive_write::fold_separators(base)
}

/// The file name of one of our wheels: the distribution, the run's version, the platform
/// tag chosen for it and a variant wheel's label, through the writer's one constructor.
pub fn wheel_file_name(
    distribution: &str,
    version: &archive_write::Version,
    platform_tag: &str,
    label: Option<&str>,
) -> Result<archive_write::WheelFileName, archive_write::NameError> {
    let name = archive_write::DistName::new(distribution)?;
    let platform = archive_write::PlatformTag::new(platform_tag)?;
    archive_write::WheelFileName::new(name, version.clone(), platform, label)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEGACY: NamingScheme<'static> = NamingScheme { kpack_split: false, devel_target_specific: true, nonce: "" };
    const KPACK: NamingScheme<'static> = NamingScheme { kpack_split: true, devel_target_specific: false, nonce: "_v2" };

    fn check(role: PackageRole, scheme: NamingScheme<'_>, expect: (&str, Option<&str>, Option<&str>)) {
        let names = PackageNames::new(&role, scheme);
        let platform_dir = names.platform_dir.as_ref().map(PlatformDir::as_str);
        assert_eq!((names.distribution.as_str(), names.pure_package.as_deref(), platform_dir), expect, "{role:?}");
    }

    #[test]
    fn names_follow_the_package_table() {
        let family = |name: &str| Some(name.to_owned());
        check(
            PackageRole::Libraries { family: family("gfx110X-all") },
            LEGACY,
            (
                "rocm-sdk-libraries-gfx110X-all",
                Some("rocm_sdk_libraries_gfx110x_all"),
                Some("_rocm_sdk_libraries_gfx110X_all"),
            ),
        );
        check(
            PackageRole::Devel { family: family("gfx94X-dcgpu") },
            LEGACY,
            ("rocm-sdk-devel-gfx94X-dcgpu", Some("rocm_sdk_devel_gfx94x_dcgpu"), Some("_rocm_sdk_devel_gfx94X_dcgpu")),
        );
        let device = PackageRole::Device { target: Target::from_target_id("gfx90a:xnack+") };
        check(device, KPACK, ("rocm-sdk-device-gfx90a", None, Some("_rocm_sdk_libraries_v2")));
        check(
            PackageRole::Devel { family: family("gfx90a") },
            KPACK,
            ("rocm-sdk-devel", Some("rocm_sdk_devel"), Some("_rocm_sdk_devel_v2")),
        );
        check(PackageRole::Profiler, KPACK, ("rocm-profiler", Some("rocm_profiler"), Some("_rocm_profiler_v2")));
        check(PackageRole::Meta, KPACK, ("rocm", Some("rocm_sdk"), None));
    }

    /// Target ids name things after their target: identifiers and dist segments drop the
    /// feature suffixes (SPEC §6); identifiers lower-case the base, dist segments keep
    /// TheRock's spelling as the reference does (SPEC §2 "Names").
    #[test]
    fn target_ids_name_like_their_target() {
        assert_eq!(target_identifier("GFX90A:xnack+"), "gfx90a");
        assert_eq!(target_identifier("gfx110X-all"), "gfx110x_all");
        assert_eq!(target_dist_segment("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(target_dist_segment("gfx110X-all"), "gfx110X-all");
        assert_eq!(target_dist_segment("gfx94X-dcgpu"), "gfx94X-dcgpu");
    }

    #[test]
    fn member_paths_start_at_the_platform_dir() {
        let dir = PlatformDir("_rocm_sdk_core".to_owned());
        assert_eq!(dir.member(&RelPath::new("lib/libx.so").expect("rel")), "_rocm_sdk_core/lib/libx.so");
        assert_eq!(dir.member(&RelPath::root()), "_rocm_sdk_core");
    }
}
