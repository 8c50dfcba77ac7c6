//! Decides where every catalog entry goes (SPEC §2 "What goes where"), before any byte is
//! written.
//!
//! Owns: package assignment, SONAME aliasing, symlink resolution in the merged namespace,
//! RPATH lists, devel entries, family and target lists, validations.
//! Whether the build can have what `--variants` asks (`variants`), and what
//! `_dist_info.py` will say (`dist_info`). Every function of the stage returns its one
//! error, [`PlanError`].
//! Does not own: reading the disk (`input`), editing bytes (`elf-rpath`), what is written
//! and how (`output`, `archive-write`).

mod devel;
mod device;
pub mod device_code;
mod dist_info;
mod error;
mod families;
mod inspect;
pub mod kpack_runtime;
mod owner_merge;
mod resolve;
pub mod rpath;
pub mod rules;
mod runtime;
pub mod variants;
pub mod version;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use elf_rpath::{EditStrategy, ElfKind};

use crate::config::{PackageConfig, PackageGroup};
use crate::identity::{self, PackageRole, WheelNames};
use crate::input::catalog::{Artifact, Catalog, FileStamp, Override};
use crate::platform::BuildOs;
use crate::progress::Progress;
use crate::relpath::RelPath;

pub use crate::targets::{Target, TargetFamily, TargetId};
pub use devel::{DevelSummary, DevelTree};
pub use dist_info::DistInfo;
pub use error::PlanError;
pub use families::FamilyPlan;
use variants::VariantSet;

/// What happens to one file of a platform package.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum PlannedFile {
    /// Copied byte for byte. Sources are shared with the catalog entry they came from;
    /// `len` and `stamp` are what the catalog saw, re-checked when the file is written.
    Copy {
        source: Arc<Path>,
        len: u64,
        executable: bool,
        #[serde(skip)]
        stamp: FileStamp,
    },
    /// Copied with its search path set to `edit.rpath` as DT_RPATH.
    PatchRpath {
        source: Arc<Path>,
        len: u64,
        #[serde(skip)]
        stamp: FileStamp,
        executable: bool,
        /// Boxed: a plan holds one file per path of the build and most are headers and data,
        /// which then cost the size of a copy, not of an edit (SPEC §5: bounded memory).
        #[serde(flatten)]
        edit: Box<RpathPlan>,
    },
    /// A compiled launcher that execs `target` (relative to its own directory).
    Launcher { target: String, link: Arc<Path> },
    /// Generated text (device link manifests).
    Generated {
        #[serde(skip)]
        bytes: Vec<u8>,
    },
}

impl PlannedFile {
    pub fn is_executable(&self) -> bool {
        match self {
            PlannedFile::Copy { executable, .. } | PlannedFile::PatchRpath { executable, .. } => *executable,
            PlannedFile::Launcher { .. } => true,
            PlannedFile::Generated { .. } => false,
        }
    }

    pub fn input_len(&self) -> u64 {
        match self {
            PlannedFile::Copy { len, .. } | PlannedFile::PatchRpath { len, .. } => *len,
            PlannedFile::Launcher { .. } => 0,
            PlannedFile::Generated { bytes } => bytes.len() as u64,
        }
    }
}

/// The RPATH edit of one ELF file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RpathPlan {
    pub kind: ElfKind,
    pub rpath: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    pub strategy: EditStrategy,
    /// Length after the edit (filled in when the edit is planned).
    pub new_len: u64,
    /// What the edit does to the file's bytes (`member::edit_digest`, filled in when the
    /// edit is planned): with the file's identity, it tells a rerun the member's bytes
    /// without reading them (SPEC §8).
    #[serde(skip)]
    pub edit_digest: [u8; 32],
}

impl RpathPlan {
    /// The edit as the writer re-plans and checks it when the file is opened.
    pub fn planned(&self) -> rpath::PlannedRpath {
        rpath::PlannedRpath { rpath: self.rpath.clone(), new_len: self.new_len, edit_digest: self.edit_digest }
    }
}

/// One entry of the devel tree (`_rocm_sdk_devel/...` in the tarball).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DevelEntry {
    Dir,
    Symlink { target: String, why: LinkReason },
    File { file: PlannedFile },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkReason {
    /// A library whose name is not its SONAME points at the SONAME.
    SonameAlias,
    /// The file is shipped by a runtime package; the link reaches it across site-packages.
    RuntimePackage,
    /// The artifact had this symlink.
    Source,
}

/// Something a release engineer should know about: counted in the summary, listed in --json.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Finding {
    pub package: String,
    pub path: RelPath,
    #[serde(flatten)]
    pub what: FindingKind,
}

/// A decision in the words `--plan` lists it with, and `-v` explains it with while
/// planning, so a `-v` line can be found in the plan as it is.
impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (package, path) = (&self.package, &self.path);
        match &self.what {
            FindingKind::Dropped { reason } => write!(f, "{package}: dropped {path}: {reason}"),
            FindingKind::Alias { soname } => write!(f, "{package}: {path} is an alias of {soname} (a link in devel)"),
            FindingKind::Launcher { target } => write!(f, "{package}: {path} becomes a launcher of {target}"),
            FindingKind::RpathRemoved { entries } => {
                write!(f, "{package}: {path}: removed absolute RPATH entries {}", entries.join(":"))
            }
            FindingKind::UnrequestedTarget { target } => {
                write!(f, "{package}: {path}: device code for {target}, which no family flag requested")
            }
            FindingKind::BadSoname { soname } => write!(
                f,
                "{package}: {path}: SONAME {} is not a plain file name; packaged as a library without one",
                crate::escape::escape(soname)
            ),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(tag = "finding", rename_all = "kebab-case")]
pub enum FindingKind {
    Dropped {
        reason: String,
    },
    Alias {
        soname: String,
    },
    Launcher {
        target: String,
    },
    RpathRemoved {
        entries: Vec<String>,
    },
    /// A device artifact for a target nobody requested (still packaged).
    UnrequestedTarget {
        target: String,
    },
    /// A library whose SONAME is a path (`/etc/passwd`, `..`) or empty: packaged as if it
    /// had none, so it never becomes a link out of the tree.
    BadSoname {
        soname: String,
    },
}

/// One wheel of the build, fully decided.
#[derive(Clone, Debug)]
pub struct PackagePlan {
    /// Which package it is, and for which family or device target.
    pub role: PackageRole,
    /// Its names, derived from the role (`identity`).
    pub names: WheelNames,
    pub requires_dist: Vec<String>,
    /// Files inside the platform dir.
    pub files: BTreeMap<RelPath, PlannedFile>,
    /// The devel tree (devel packages only), paths inside the devel platform dir. Shared
    /// with the writer, which walks it again as it writes the tarball.
    pub devel_tree: Option<Arc<DevelTree>>,
}

impl PackagePlan {
    pub fn group(&self) -> PackageGroup {
        self.role.group()
    }
}

/// The plan's JSON keeps the shape it had when these were fields (`--plan --json` is a
/// boundary others read): group, dist_name, family, py_package, platform_dir, ...
impl serde::Serialize for PackagePlan {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("PackagePlan", 8)?;
        out.serialize_field("group", &self.group())?;
        out.serialize_field("dist_name", &self.names.distribution)?;
        out.serialize_field("family", &self.role.family_or_target())?;
        out.serialize_field("py_package", &self.names.pure_package)?;
        out.serialize_field("platform_dir", self.names.platform_dir.as_str())?;
        out.serialize_field("requires_dist", &self.requires_dist)?;
        out.serialize_field("files", &self.files)?;
        match &self.devel_tree {
            Some(tree) => out.serialize_field("devel_tree", tree)?,
            None => out.skip_field("devel_tree")?,
        }
        out.end()
    }
}

/// Every decision of a run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Plan {
    /// `--version`, parsed once (in normal form, SPEC §3).
    pub version: archive_write::Version,
    /// Told from the build's binaries, or given (`--build-os`); SPEC §7.
    pub build_os: BuildOs,
    /// Why a build was told to be for Windows: its first PE file (no ELF file was found).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_os_evidence: Option<PathBuf>,
    pub kpack_split: bool,
    pub families: FamilyPlan,
    #[serde(skip)]
    pub dist_info: DistInfo,
    pub packages: Vec<PackagePlan>,
    pub overrides: Vec<Override>,
    pub findings: Vec<Finding>,
    /// The artifacts read, with their basedirs: where each planned file came from (the
    /// bill of materials names them, SPEC §10).
    #[serde(skip)]
    pub artifacts: Vec<Artifact>,
    /// The device wheels' variants (`--variants`, SPEC §9), or `None` without the flag.
    #[serde(skip)]
    pub variants: Option<VariantSet>,
}

impl Plan {
    /// Counts per finding kind, for the summary line.
    pub fn finding_counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for finding in &self.findings {
            let key = match finding.what {
                FindingKind::Dropped { .. } => "dropped",
                FindingKind::Alias { .. } => "aliased",
                FindingKind::Launcher { .. } => "launchers",
                FindingKind::RpathRemoved { .. } => "rpath entries removed",
                FindingKind::UnrequestedTarget { .. } => "unrequested targets",
                FindingKind::BadSoname { .. } => "bad sonames",
            };
            *counts.entry(key).or_insert(0) += 1;
        }
        counts
    }
}

/// Decides every package of the build from the catalog.
pub fn plan_packages(catalog: &Catalog, config: &PackageConfig, progress: &dyn Progress) -> Result<Plan, PlanError> {
    let version = version::parse_version(&config.version)
        .map_err(|reason| PlanError::BadVersion { version: config.version.clone(), reason })?;
    // The suffix ends every platform directory name, which Python imports as a module.
    if !config.version_suffix.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_') {
        return Err(PlanError::BadVersionSuffix { suffix: config.version_suffix.clone() });
    }
    let detected = crate::input::build_os::detect(catalog, config.build_os)
        .map_err(|mixed| PlanError::MixedBuildOs { elf: mixed.elf, pe: mixed.pe })?;
    let build_os = detected.os;
    let families = families::plan_families(catalog, &config.families)?;
    let mut dist_info = families::dist_info(&families, config, catalog.kpack_split());
    dist_info.windows = build_os == BuildOs::Windows;
    let mut builder = runtime::Builder::new(catalog, config, &dist_info, progress);
    builder.build_os = build_os;
    let mut packages = Vec::new();
    let mut findings = Vec::new();
    let mut overrides = Vec::new();

    let core = builder.runtime_package(PackageRole::Core)?;
    packages.push(core);
    if catalog.kpack_split() {
        packages.push(builder.runtime_package(PackageRole::Libraries { family: None })?);
        for target in &families.device_targets {
            packages.push(device::device_package(&mut builder, target)?);
        }
    } else {
        for family in &families.legacy_families {
            packages.push(builder.runtime_package(PackageRole::Libraries { family: Some(family.clone()) })?);
        }
    }
    if let Some(profiler) = builder.profiler_package()? {
        packages.push(profiler);
    }
    let devel_families: Vec<Option<&str>> = if families.devel_target_specific() {
        families.legacy_families.iter().map(|family| Some(family.as_str())).collect()
    } else {
        vec![families.legacy_families.first().map(String::as_str).filter(|_| !catalog.kpack_split())]
    };
    for family in devel_families {
        if let Some(devel) = devel::devel_package(&mut builder, &packages, family)? {
            packages.push(devel);
        }
    }
    findings.append(&mut builder.findings);
    overrides.append(&mut builder.overrides);
    for target in &families.unrequested_targets {
        findings.push(Finding {
            package: identity::distribution_stem(PackageGroup::Device).to_owned(),
            path: RelPath::root(),
            what: FindingKind::UnrequestedTarget { target: target.to_string() },
        });
    }
    check_no_shared_members(&packages)?;
    check_name_lengths(&packages, &version)?;
    findings.sort();
    findings.dedup();
    overrides.sort_by(|a, b| a.rel.cmp(&b.rel));
    overrides.dedup();
    let mut plan = Plan {
        version,
        build_os,
        build_os_evidence: detected.pe_file,
        kpack_split: catalog.kpack_split(),
        families,
        dist_info,
        packages,
        overrides,
        findings,
        artifacts: catalog.artifacts.clone(),
        variants: None,
    };
    // Last: `--variants` on a build that cannot have them fails before anything is written.
    plan.variants = variants::plan_variants(&plan, config)?;
    Ok(plan)
}

/// The longest file or directory name Linux file systems (and NTFS, in UTF-16 units) take.
pub const NAME_MAX: usize = 255;

/// Every name the run writes into a wheel, its `.dist-info` directory and every component of
/// every member path, fits a file system (SPEC §2, names): refused before anything is
/// written, naming the name and the bound.
fn check_name_lengths(packages: &[PackagePlan], version: &archive_write::Version) -> Result<(), PlanError> {
    // The `rocm` sdist's file name, as written (its temporary name must fit too).
    let sdist = format!("{}-{}.tar.gz", identity::distribution_stem(PackageGroup::Meta), version.as_str());
    if sdist.len() > archive_write::atomic::MAX_NAME_BYTES {
        let bound = archive_write::atomic::MAX_NAME_BYTES;
        return Err(PlanError::NameTooLong {
            what: "the sdist file name",
            name: sdist,
            package: "rocm".to_owned(),
            bound,
        });
    }
    for package in packages {
        let too_long = |what: &'static str, name: &str| PlanError::NameTooLong {
            what,
            name: name.to_owned(),
            package: package.names.distribution.clone(),
            bound: NAME_MAX,
        };
        let dist_info = format!("{}-{}.dist-info", package.names.file_name_form(), version.as_str());
        if dist_info.len() > NAME_MAX {
            return Err(too_long("the .dist-info directory", &dist_info));
        }
        if package.names.platform_dir.as_str().len() > NAME_MAX {
            return Err(too_long("the platform directory", package.names.platform_dir.as_str()));
        }
        for rel in package.files.keys() {
            if let Some(component) = rel.as_str().split('/').find(|component| component.len() > NAME_MAX) {
                return Err(too_long("the file name", component));
            }
        }
    }
    Ok(())
}

/// No two wheels may ship the same member path (SPEC §6): uninstalling one would delete
/// the other's file.
fn check_no_shared_members(packages: &[PackagePlan]) -> Result<(), PlanError> {
    let mut owners: BTreeMap<String, &str> = BTreeMap::new();
    for package in packages {
        let dist_name = &package.names.distribution;
        for rel in package.files.keys() {
            let member = package.names.platform_dir.member(rel);
            if let Some(first) = owners.insert(member.clone(), dist_name) {
                if first != dist_name {
                    return Err(PlanError::DuplicateMember {
                        path: member,
                        first: first.to_owned(),
                        second: dist_name.clone(),
                    });
                }
            }
        }
    }
    Ok(())
}
