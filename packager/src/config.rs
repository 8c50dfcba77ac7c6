//! `PackageConfig`: everything a packaging run needs, as plain data filled in by the CLI.
//!
//! The library never reads the environment or the clock: the caller decides
//! (`SOURCE_DATE_EPOCH`, `ROCM_SDK_WHEEL_PLATFORM_TAG` are read by xtask).

use std::path::PathBuf;

/// Archive settings are the archive writer's own types.
pub use archive_write::{BuildTime, Reuse, TarballCompression as DevelTarballCompression, WheelCompression};

/// Which packages a run builds (`--only`), so a CI matrix can split the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PackageGroup {
    Meta,
    Core,
    Libraries,
    Device,
    Devel,
    Profiler,
}

impl PackageGroup {
    pub const ALL: [PackageGroup; 6] = [
        PackageGroup::Meta,
        PackageGroup::Core,
        PackageGroup::Libraries,
        PackageGroup::Device,
        PackageGroup::Devel,
        PackageGroup::Profiler,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PackageGroup::Meta => "meta",
            PackageGroup::Core => "core",
            PackageGroup::Libraries => "libraries",
            PackageGroup::Device => "device",
            PackageGroup::Devel => "devel",
            PackageGroup::Profiler => "profiler",
        }
    }
}

/// GPU family lists given on the command line, already expanded to targets where the
/// checkout's `therock_amdgpu_targets.cmake` says how.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FamilyRequest {
    /// `--linux-amdgpu-families` as given (families or targets).
    pub linux: Vec<String>,
    /// `--windows-amdgpu-families` as given.
    pub windows: Vec<String>,
    /// The target ids each requested name expands to (family → targets; a target maps to
    /// itself), from the checkout's cmake table.
    pub expansion: std::collections::BTreeMap<String, Vec<crate::targets::TargetId>>,
}

/// The wheels' platform tag (`--platform-tag`, `ROCM_SDK_WHEEL_PLATFORM_TAG`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlatformTag {
    /// None given: this tag (the host's) for a Linux build, `win_amd64` for a Windows one
    /// (SPEC §7).
    Default(String),
    /// One tag for every wheel, as given: `linux_x86_64`, `manylinux_2_28_x86_64`.
    Fixed(String),
    /// `auto`: each wheel gets the most widely installable `manylinux_2_X_{arch}` its
    /// files allow, or the run fails naming what stands in the way (`manylinux`).
    Manylinux,
}

impl PlatformTag {
    /// What `--platform-tag` takes for [`PlatformTag::Manylinux`].
    pub const AUTO: &'static str = "auto";

    /// `auto`, or a tag given by hand.
    pub fn parse(text: &str) -> PlatformTag {
        if text == Self::AUTO {
            PlatformTag::Manylinux
        } else {
            PlatformTag::Fixed(text.to_owned())
        }
    }

    /// The machine whose ELF files get the RPATH treatment: the tag's, or under `auto`
    /// the host's (whose files a build made here are).
    pub fn machine(&self) -> elf_audit::Architecture {
        match self {
            PlatformTag::Fixed(tag) | PlatformTag::Default(tag) => crate::platform::machine_of_tag(tag),
            PlatformTag::Manylinux => crate::platform::host_machine(),
        }
    }
}

/// What a run writes, with the settings that only mean something for that kind of output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// Wheels and the `rocm` sdist, into `--dest-dir`'s `dist/` (the default).
    Archives(ArchiveSettings),
    /// `--no-build-packages`: each package laid out as the tree its archive would hold, in
    /// `--dest-dir` itself, for inspection (the devel tarball expanded).
    Trees,
}

/// How archives are written (`--wheel-compression*`, `--devel-tarball-*`, `--no-reuse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchiveSettings {
    pub wheel_compression: WheelCompression,
    pub devel_tarball_compression: DevelTarballCompression,
    /// Copy unchanged members' compressed bytes from the wheels already in the output
    /// directory (SPEC §8), or never (`--no-reuse`). The same output either way.
    pub reuse: Reuse,
}

/// What happens to absolute RPATH entries (`/build/...`) of the files the plan edits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbsoluteRpath {
    /// Removed (the default): a path of the build machine means nothing where the wheel is
    /// installed, and whoever creates it could inject a library (SPEC §2, RPATHs).
    Remove,
    /// `--keep-absolute-rpath`: kept as they are.
    Keep,
}

/// Whether a run also writes the device payload as wheel variants (`--variants`, SPEC §9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceVariants {
    /// Only the `rocm-sdk-device-*` wheels (the default).
    Off,
    /// Those, and beside them one `rocm-sdk-device` variant wheel per device wheel, the
    /// `-variants.json` index file and the `amd` provider plugin's wheel (kpack-split
    /// builds, archives only).
    Wheels,
}

/// Whether every wheel carries a bill of materials (SPEC §10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sbom {
    /// `--no-sbom`: none.
    Omit,
    /// `.dist-info/sboms/rocm-packager.cdx.json` in every wheel. `checkout` is the TheRock
    /// checkout the build came from, whose `third-party/` names the sources of the bundled
    /// third-party libraries; without one, they are known by their file names only.
    Write { checkout: Option<PathBuf> },
}

/// Where a run writes: the destination (`--dest-dir`, which holds the run's lock) and the
/// directory in it the outputs go to, decided by the output mode (SPEC §2): `dist/` for
/// archives, the destination itself for trees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    pub dest_dir: PathBuf,
    pub output_dir: PathBuf,
}

/// Everything `packager::package` needs. No `Default`: the caller decides each field.
#[derive(Clone, Debug)]
pub struct PackageConfig {
    pub artifacts_dir: PathBuf,
    /// `--dest-dir`, as the reference means it: archives go to its `dist/`, trees
    /// (`--no-build-packages`) into it ([`PackageConfig::destination`]).
    pub dest_dir: PathBuf,
    pub version: String,
    /// `--version-suffix`: the nonce appended to platform package directory names.
    pub version_suffix: String,
    pub platform_tag: PlatformTag,
    /// `--build-os`: the build's operating system when its binaries cannot tell (SPEC §7).
    pub build_os: Option<crate::build_os::BuildOs>,
    pub build_time: BuildTime,
    /// When the run started, by the caller's clock: a file whose status changed after
    /// (or just before) is read again by the next run, whatever its identity says (SPEC §8).
    pub started: std::time::SystemTime,
    /// Archives (with their settings) or trees.
    pub output: OutputMode,
    pub absolute_rpath: AbsoluteRpath,
    pub variants: DeviceVariants,
    pub sbom: Sbom,
    /// Empty means every group.
    pub only: Vec<PackageGroup>,
    pub families: FamilyRequest,
    /// Where a C compiler can be found is `cc`'s business; this is the scratch dir for
    /// the one launcher compilation of a run (a temp dir when `None`).
    pub scratch_dir: Option<PathBuf>,
}

/// The directory under `--dest-dir` that receives the archives.
pub const DIST_DIR: &str = "dist";

impl PackageConfig {
    /// Where this run writes, and so what it locks: `dest_dir/dist/` for archives, where
    /// the seeds' `pip install --find-links=${PACKAGES_DIR}/dist` and TheRock's upload
    /// scripts look; `dest_dir` itself for `--no-build-packages` trees (SPEC §2, as the
    /// reference lays them out). The only place that decides it.
    pub fn destination(&self) -> Destination {
        let output_dir = match self.output {
            OutputMode::Archives(_) => self.dest_dir.join(DIST_DIR),
            OutputMode::Trees => self.dest_dir.clone(),
        };
        Destination { dest_dir: self.dest_dir.clone(), output_dir }
    }

    /// The directory the outputs go to ([`PackageConfig::destination`]).
    pub fn output_dir(&self) -> PathBuf {
        self.destination().output_dir
    }
}
