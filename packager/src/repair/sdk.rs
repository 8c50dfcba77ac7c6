//! What an SDK set provides to the wheels built on it (SPEC §11): its packages and their
//! release, and for every library it ships, the SONAME, the package and the installed
//! directory that provide it, what it needs and the symbols (with version nodes) it
//! defines. Learned from the set itself (`sdk_source`), never from wheel file names: a
//! platform directory keeps TheRock's spelling of a family (`_rocm_sdk_libraries_gfx110X_all`)
//! that no file name shows.
//!
//! Owns: the model, which packages are the SDK's, and the requirement a linked library
//! brings. Does not own: reading the set (`sdk_source`), the ELF rules (`links`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use elf_audit::Exports;

use crate::plan::version::release_specifier;
use archive_write::normalize;

/// What an SDK package is, by its distribution name (SPEC §2).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SdkKind {
    /// `rocm`: the sdist that chooses the family at install time.
    Meta,
    Core,
    /// `rocm-sdk-libraries` (kpack-split) or `rocm-sdk-libraries-{family}` (legacy).
    Libraries {
        family: Option<String>,
    },
    Device,
    Devel,
    Profiler,
}

impl SdkKind {
    /// The kind of a distribution (any spelling), or `None` for a package not of the SDK.
    pub fn of(distribution: &str) -> Option<SdkKind> {
        let name = normalize(distribution);
        Some(match name.as_str() {
            "rocm" => SdkKind::Meta,
            "rocm-sdk-core" => SdkKind::Core,
            "rocm-sdk-libraries" => SdkKind::Libraries { family: None },
            "rocm-profiler" => SdkKind::Profiler,
            // The variant wheels and their provider carry no library.
            "rocm-sdk-device" | "rocm-sdk-variant-provider" => return None,
            _ if name.starts_with("rocm-sdk-libraries-") => {
                SdkKind::Libraries { family: Some(name["rocm-sdk-libraries-".len()..].to_owned()) }
            }
            _ if name.starts_with("rocm-sdk-device-") => SdkKind::Device,
            _ if name.starts_with("rocm-sdk-devel") => SdkKind::Devel,
            _ => return None,
        })
    }
}

/// One package of the set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SdkPackage {
    /// PEP 503 normal form (`rocm-sdk-core`), as requirements name it.
    pub name: String,
    pub version: String,
    pub kind: SdkKind,
}

/// One shared library the set ships, placed under its SONAME.
#[derive(Clone, Debug)]
pub struct SdkLibrary {
    pub soname: String,
    /// The providing package's normal name.
    pub package: String,
    /// Its installed directory, relative to site-packages (`_rocm_sdk_core/lib`).
    pub dir: String,
    /// Its DT_NEEDED, for the libraries it brings into a process.
    pub needed: Vec<String>,
    /// What it defines; `None` when its tables lie outside what was read (then nothing is
    /// concluded from a missing symbol).
    pub exports: Option<Exports>,
}

/// The SDK a repair links against.
#[derive(Clone, Debug)]
pub struct Sdk {
    /// `--against`, for messages.
    pub location: PathBuf,
    /// Sorted by name; one version of each (the newest, which an installer takes).
    pub packages: Vec<SdkPackage>,
    /// SONAME → its providers (one per family in a legacy set, else one).
    pub libraries: BTreeMap<String, Vec<SdkLibrary>>,
    /// The normal names of every package of the set (devel and device wheels too, and
    /// `rocm`): what a repair refuses to rewrite, by name and not by prefix, since a
    /// project of its own may well be called `rocm-sdk-something`.
    pub names: BTreeSet<String>,
}

impl Sdk {
    pub fn package(&self, name: &str) -> Option<&SdkPackage> {
        let name = normalize(name);
        self.packages.iter().find(|package| package.name == name)
    }

    /// Whether `distribution` (any spelling) is one of the set's own packages.
    pub fn is_own_package(&self, distribution: &str) -> bool {
        self.names.contains(&normalize(distribution))
    }

    /// A library the SDK ships under another version of `soname`'s name (`libamdhip64.so.5`
    /// for `libamdhip64.so.7`), with its package: a wheel built for another ROCm major.
    pub fn other_version_of(&self, soname: &str) -> Option<(&str, &SdkPackage)> {
        let (stem, _) = soname.split_once(".so")?;
        let prefix = format!("{stem}.so");
        self.libraries.iter().filter(|(name, _)| *name != soname).find_map(|(name, providers)| {
            let rest = name.strip_prefix(&prefix)?;
            if !(rest.is_empty() || rest.starts_with('.')) {
                return None;
            }
            let package = self.package(&providers.first()?.package)?;
            Some((name.as_str(), package))
        })
    }

    /// The providers of a library the SDK ships.
    pub fn providers(&self, soname: &str) -> &[SdkLibrary] {
        self.libraries.get(soname).map_or(&[], Vec::as_slice)
    }

    /// Every installed directory that holds an SDK library.
    pub fn library_dirs(&self) -> BTreeSet<&str> {
        self.libraries.values().flatten().map(|library| library.dir.as_str()).collect()
    }

    /// `rocm-sdk-core 7.12.0`, for messages.
    pub fn describe(&self, package: &str) -> String {
        match self.package(package) {
            Some(found) => format!("{} {}", found.name, found.version),
            None => package.to_owned(),
        }
    }

    /// The `Requires-Dist` lines that the libraries provided by `packages` bring, each with
    /// the release rule (SPEC §2): `>=R,<R.0.1` for a final release (post releases of it
    /// accepted), `==V` otherwise. A library several families' packages provide (a legacy
    /// set) is required through the `rocm` sdist's `libraries` extra, which chooses the
    /// family at install time; sorted.
    pub fn requirements(&self, linked: &[BTreeSet<String>]) -> Vec<String> {
        let mut lines = BTreeSet::new();
        for providers in linked {
            match providers.iter().collect::<Vec<_>>().as_slice() {
                [] => {}
                [one] => {
                    if let Some(package) = self.package(one) {
                        lines.insert(format!("{}{}", package.name, release_specifier(&package.version)));
                    }
                }
                several => {
                    let version = self
                        .package("rocm")
                        .or_else(|| several.iter().find_map(|name| self.package(name)))
                        .map(|package| package.version.clone())
                        .unwrap_or_default();
                    lines.insert(format!("rocm[libraries]{}", release_specifier(&version)));
                }
            }
        }
        lines.into_iter().collect()
    }
}

/// A SONAME with an auditwheel hash taken out (`libamdhip64-1a2b3c4d.so.7` →
/// `libamdhip64.so.7`): auditwheel renames each library it grafts into a wheel as
/// `{name}-{first 8 hex digits of its sha256}.{rest}`. `None` when there is no such hash.
pub fn without_graft_hash(soname: &str) -> Option<String> {
    let (base, rest) = soname.split_once('.')?;
    let (name, hash) = base.rsplit_once('-')?;
    let is_hash = hash.len() == 8 && hash.bytes().all(|byte| byte.is_ascii_hexdigit());
    (is_hash && !name.is_empty()).then(|| format!("{name}.{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdk_packages_are_known_by_name() {
        assert_eq!(SdkKind::of("rocm_sdk_core"), Some(SdkKind::Core));
        assert_eq!(
            SdkKind::of("rocm-sdk-libraries-gfx110X-all"),
            Some(SdkKind::Libraries { family: Some("gfx110x-all".into()) })
        );
        assert_eq!(SdkKind::of("rocm_sdk_libraries"), Some(SdkKind::Libraries { family: None }));
        assert_eq!(SdkKind::of("rocm-sdk-device-gfx90a"), Some(SdkKind::Device));
        assert_eq!(SdkKind::of("rocm-sdk-devel-gfx94x-dcgpu"), Some(SdkKind::Devel));
        assert_eq!(SdkKind::of("rocm-sdk-device"), None);
        assert_eq!(SdkKind::of("cupy-rocm-7-0"), None);
    }

    #[test]
    fn graft_hashes_come_off() {
        assert_eq!(without_graft_hash("libamdhip64-1a2b3c4d.so.7").as_deref(), Some("libamdhip64.so.7"));
        assert_eq!(without_graft_hash("librocm-core-0123abcd.so.1").as_deref(), Some("librocm-core.so.1"));
        assert_eq!(without_graft_hash("librocm-core.so.1"), None);
        assert_eq!(without_graft_hash("libx-1a2b3c4g.so"), None);
    }

    fn sdk(packages: &[(&str, &str)]) -> Sdk {
        let packages = packages
            .iter()
            .map(|(name, version)| SdkPackage {
                name: normalize(name),
                version: (*version).to_owned(),
                kind: SdkKind::of(name).expect("an SDK name"),
            })
            .collect();
        Sdk { location: PathBuf::from("dist"), packages, libraries: BTreeMap::new(), names: BTreeSet::new() }
    }

    #[test]
    fn requirements_follow_the_release_rule() {
        let set = sdk(&[("rocm-sdk-core", "7.12.0.post1"), ("rocm-sdk-libraries", "7.12.0"), ("rocm", "7.12.0")]);
        let one = |name: &str| BTreeSet::from([name.to_owned()]);
        assert_eq!(
            set.requirements(&[one("rocm-sdk-core"), one("rocm-sdk-libraries"), one("rocm-sdk-core")]),
            ["rocm-sdk-core>=7.12.0,<7.12.0.0.1", "rocm-sdk-libraries>=7.12.0,<7.12.0.0.1"]
        );
        let legacy = sdk(&[
            ("rocm-sdk-libraries-gfx110x-all", "7.12.0.dev0"),
            ("rocm-sdk-libraries-gfx94x-dcgpu", "7.12.0.dev0"),
            ("rocm", "7.12.0.dev0"),
        ]);
        let families =
            BTreeSet::from(["rocm-sdk-libraries-gfx110x-all".to_owned(), "rocm-sdk-libraries-gfx94x-dcgpu".to_owned()]);
        assert_eq!(legacy.requirements(&[families]), ["rocm[libraries]==7.12.0.dev0"]);
    }
}
