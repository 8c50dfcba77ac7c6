//! What `verify --dist` found: violations and warnings grouped by package, plus facts per
//! wheel (glibc floor, the manylinux tag it can honestly carry).
//!
//! Owns: the serialized shape of the report (a boundary: `--json` consumers read it).
//! Does not own: the checks themselves (the sibling modules) or printing (xtask).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Which rule a finding breaks. Kebab-case in JSON, stable across releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// The file is not a readable zip or tar archive, or a member cannot be read.
    Archive,
    /// The archive's file name (distribution name, version, tag).
    FileName,
    /// METADATA / PKG-INFO / WHEEL contents.
    Metadata,
    /// RECORD: every member listed, hashes and sizes right.
    Record,
    /// A member path that is absolute, climbs with `..`, or is not portable.
    MemberPath,
    /// A symlink inside a wheel.
    Symlink,
    /// A member name Windows cannot extract (`:`, reserved names, trailing dot).
    WindowsName,
    /// All packages of a set share one version.
    Version,
    /// `Requires-Dist` version pins inside the set (SPEC §2: what they admit).
    Pin,
    /// One member path shipped by two wheels.
    DuplicatePath,
    /// Two different files with one file name in the dist tree.
    DuplicateFileName,
    /// A kpack-split set missing one of its packages.
    Completeness,
    /// ELF headers and tables out of bounds or outside every `PT_LOAD`.
    ElfStructure,
    /// DT_RUNPATH, absolute or non-`$ORIGIN` RPATH entries.
    Rpath,
    /// A DT_NEEDED that resolves nowhere in the simulated install.
    Closure,
    /// An undefined dynamic symbol (or version node) the libraries a file loads do not
    /// define.
    Symbol,
    /// A wheel built on the SDK that bundles a copy of a library the SDK ships.
    SdkCopy,
    /// Symbol versions newer than the platform tag the wheel claims.
    Portability,
    /// The devel tarball's members and symlinks.
    Devel,
    /// A launcher whose target does not exist.
    Launcher,
    /// A binary for another platform than the wheel's tag: an ELF file in a Windows
    /// wheel, a PE file in a Linux one, a DLL for another machine.
    Platform,
    /// PE headers and tables that do not parse.
    PeStructure,
    /// A wheel variant's `variant.json` or a `-variants.json` index file (PEP 825/850
    /// drafts): the schema's rules, the label, the index agreeing with its wheels.
    Variant,
    /// A wheel's bill of materials (`.dist-info/sboms/rocm-packager.cdx.json`): CycloneDX
    /// 1.6, this wheel, exactly RECORD's files with RECORD's SHA-256.
    Sbom,
    /// A `.kpack` archive of device code that rocm-kpack's readers refuse or read wrong:
    /// header, table of contents, frames, code objects for another target (SPEC §12).
    Kpack,
    /// Device code split from host binaries (SPEC §12): `HIPK` wrappers and their markers,
    /// the runtime's search from every host binary for every target the set offers, fat
    /// code left in host wheels, device wheels' pins and the host's `device-*` extras.
    DeviceCode,
    /// A split set whose HIP runtime (`libamdhip64`) carries no kpack loader, so it cannot
    /// load the device code its split binaries ask for (SPEC §12).
    KpackRuntime,
}

/// One finding. `path` is the member inside the archive (for devel tarball members, the
/// path it installs to in site-packages); `None` when the finding is about the whole file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Finding {
    /// The archive's file name (e.g. `rocm_sdk_core-7.0.0-py3-none-linux_x86_64.whl`).
    pub file: String,
    pub path: Option<String>,
    pub check: Check,
    pub message: String,
}

/// A finding that fails verification.
pub type Violation = Finding;
/// A finding worth knowing that does not fail verification.
pub type Warning = Finding;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveKind {
    Wheel,
    Sdist,
    /// A `{name}-{version}-variants.json` index file of wheel variants (PEP 825 draft).
    VariantsIndex,
}

/// The newest symbol versions a wheel's ELF files need, and what that allows.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Portability {
    /// Highest `GLIBC_x.y` needed, e.g. `2.34`.
    pub glibc: Option<String>,
    /// Highest `GLIBCXX_x.y.z` needed.
    pub glibcxx: Option<String>,
    /// Highest `CXXABI_x.y.z` needed.
    pub cxxabi: Option<String>,
    /// The most widely installable manylinux tag the files allow, e.g.
    /// `manylinux_2_34_x86_64`; `None` when no host ELF file is in the wheel.
    pub manylinux_tag: Option<String>,
    /// A Windows wheel's deepest installed path under the stated site-packages prefix, and
    /// its length in UTF-16 units (SPEC §7, MAX_PATH).
    pub windows_deepest_path: Option<String>,
    pub windows_path_length: Option<usize>,
}

/// What a wheel holds of device code split from host binaries (SPEC §12).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceCodeCounts {
    /// `.kpack` archives.
    pub kpack_archives: usize,
    /// Code objects their tables of contents list.
    pub kpack_code_objects: usize,
    /// `HIPK` wrappers of its host binaries, each asking the archives for its code.
    pub hipk_wrappers: usize,
}

/// Everything known about one archive file (or several byte-identical copies of it).
#[derive(Clone, Debug, serde::Serialize)]
pub struct PackageReport {
    pub file: String,
    /// Where the file was found, relative to the dist dir (several for identical copies).
    pub locations: Vec<PathBuf>,
    pub kind: ArchiveKind,
    /// Distribution name and version from the file name, when it parses.
    pub name: Option<String>,
    pub version: Option<String>,
    pub sha256: String,
    pub n_members: usize,
    pub n_elf_files: usize,
    /// AMDGPU code objects (`e_machine` 224): counted, never checked.
    pub n_gpu_code_objects: usize,
    /// Device code split into kpack archives (SPEC §12).
    pub device_code: DeviceCodeCounts,
    /// ELF files built for another CPU than the wheel's platform tag names (an aarch64
    /// library in an x86_64 wheel), by installed path, sorted: data, never checked (SPEC §6).
    pub foreign_elf_files: Vec<String>,
    /// Wheels only.
    pub portability: Option<Portability>,
    pub violations: Vec<Violation>,
    pub warnings: Vec<Warning>,
}

/// The result of [`super::verify_dist`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct VerifyReport {
    pub dist: PathBuf,
    /// Sorted by file name.
    pub packages: Vec<PackageReport>,
}

impl VerifyReport {
    pub fn n_violations(&self) -> usize {
        self.packages.iter().map(|package| package.violations.len()).sum()
    }

    pub fn n_warnings(&self) -> usize {
        self.packages.iter().map(|package| package.warnings.len()).sum()
    }

    /// Every violation, in report order.
    pub fn violations(&self) -> impl Iterator<Item = &Violation> {
        self.packages.iter().flat_map(|package| package.violations.iter())
    }

    /// Every warning, in report order.
    pub fn warnings(&self) -> impl Iterator<Item = &Warning> {
        self.packages.iter().flat_map(|package| package.warnings.iter())
    }
}

/// Collects findings while the checks run, then files them under their packages.
#[derive(Default, Debug)]
pub(crate) struct Findings {
    pub violations: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

impl Findings {
    pub fn violation(&mut self, file: &str, path: Option<&str>, check: Check, message: impl Into<String>) {
        self.violations.push(finding(file, path, check, message.into()));
    }

    pub fn warning(&mut self, file: &str, path: Option<&str>, check: Check, message: impl Into<String>) {
        self.warnings.push(finding(file, path, check, message.into()));
    }

    pub fn extend(&mut self, other: Findings) {
        self.violations.extend(other.violations);
        self.warnings.extend(other.warnings);
    }

    /// Sorted and de-duplicated findings keyed by file name.
    pub fn into_by_file(self) -> BTreeMap<String, (Vec<Finding>, Vec<Finding>)> {
        let mut by_file: BTreeMap<String, (Vec<Finding>, Vec<Finding>)> = BTreeMap::new();
        for finding in self.violations {
            by_file.entry(finding.file.clone()).or_default().0.push(finding);
        }
        for finding in self.warnings {
            by_file.entry(finding.file.clone()).or_default().1.push(finding);
        }
        for (violations, warnings) in by_file.values_mut() {
            violations.sort();
            violations.dedup();
            warnings.sort();
            warnings.dedup();
        }
        by_file
    }
}

fn finding(file: &str, path: Option<&str>, check: Check, message: String) -> Finding {
    Finding { file: file.to_owned(), path: path.map(str::to_owned), check, message }
}
