//! `cargo xtask package`: flags → `PackageConfig`, then the library's pipeline, a summary
//! table on stdout and `--json` for CI.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use packager::build_os::BuildOs;
use packager::catalog::{therock, CatalogError};
use packager::config::{
    AbsoluteRpath, ArchiveSettings, DevelTarballCompression, DeviceVariants, FamilyRequest, OutputMode, PackageGroup,
    PlatformTag, Reuse, Sbom, WheelCompression,
};
use packager::plan::PlanError;
use packager::report::StageTime;
use packager::{BuildTime, PackageConfig};

use crate::progress::CliProgress;
use crate::Output;

#[derive(clap::Args)]
pub struct PackageArgs {
    /// The artifacts directory of a TheRock build [default: build/artifacts of the checkout;
    /// outside a checkout, the bundled example generated in cargo's target directory]
    #[arg(long, value_name = "DIR")]
    pub artifact_dir: Option<PathBuf>,
    /// The TheRock checkout (found by walking up from the current directory if not given).
    #[arg(long, value_name = "DIR")]
    pub therock_dir: Option<PathBuf>,
    /// Archives go to DIR/dist/, --no-build-packages trees to DIR, as with TheRock's
    /// build_python_packages.py [default: build/python-packages of the checkout; outside a
    /// checkout, the current directory (so archives land in ./dist/)]
    #[arg(long, value_name = "DIR")]
    pub dest_dir: Option<PathBuf>,
    /// Package version [default: `{rocm-version}.dev0` from the checkout's version.json; an
    /// empty value means the default, as TheRock's CI passes it]
    #[arg(long)]
    pub version: Option<String>,
    /// Appended to the platform package directory names (`_rocm_sdk_core{suffix}`).
    #[arg(long, default_value = "")]
    pub version_suffix: String,
    /// Wheel platform tag, e.g. manylinux_2_28_x86_64; `auto` gives each wheel the most widely
    /// installable manylinux_2_X tag its files allow [default: linux_{arch}, or win_amd64 for
    /// a Windows build]
    #[arg(long, env = "ROCM_SDK_WHEEL_PLATFORM_TAG", value_name = "TAG")]
    pub platform_tag: Option<String>,
    /// The build's operating system, for the rare build whose binaries cannot tell (it is
    /// told from its ELF or PE files otherwise)
    #[arg(long, value_name = "OS", value_parser = ["linux", "windows"])]
    pub build_os: Option<String>,
    /// Build the wheels and the sdist (the default; undoes an earlier --no-build-packages).
    #[arg(long, overrides_with = "no_build_packages")]
    pub build_packages: bool,
    /// Lay the package trees out in --dest-dir instead of building archives.
    #[arg(long, overrides_with = "build_packages")]
    pub no_build_packages: bool,
    /// Deflate wheel members (the default; undoes an earlier --no-wheel-compression).
    #[arg(long, overrides_with = "no_wheel_compression")]
    pub wheel_compression: bool,
    /// Store wheel members uncompressed.
    #[arg(long, overrides_with = "wheel_compression")]
    pub no_wheel_compression: bool,
    /// Deflate level of wheel members (0-9, zlib's scale); members it cannot shrink by 1 % are stored.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub wheel_compression_level: u32,
    /// Compress the devel tarball with xz (`_devel.tar.xz`); alone, as the reference spells
    /// it, the flag means `true`.
    #[arg(
        long,
        default_value = "false",
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        value_name = "BOOL",
        overrides_with = "no_devel_tarball_compression"
    )]
    pub devel_tarball_compression: bool,
    /// Leave the devel tarball uncompressed (the default; undoes an earlier
    /// --devel-tarball-compression).
    #[arg(long, overrides_with = "devel_tarball_compression")]
    pub no_devel_tarball_compression: bool,
    /// xz preset of the devel tarball (0-9).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub devel_tarball_xz_preset: u32,
    /// GPU families or targets built for Linux (comma or semicolon list).
    #[arg(long, value_name = "LIST")]
    pub linux_amdgpu_families: Option<String>,
    /// GPU families or targets built for Windows (comma or semicolon list).
    #[arg(long, value_name = "LIST")]
    pub windows_amdgpu_families: Option<String>,
    /// Keep absolute RPATH entries instead of removing them.
    #[arg(long)]
    pub keep_absolute_rpath: bool,
    /// Also write the device payload as wheel variants (PEP 825/850 drafts, kpack-split
    /// builds): a `rocm-sdk-device` variant wheel per device wheel, its `-variants.json`
    /// and the `amd` provider plugin's wheel.
    #[arg(long)]
    pub variants: bool,
    /// Compress every member anew, instead of copying the compressed bytes of members that
    /// did not change from the wheels already in the destination (the output is the same).
    #[arg(long)]
    pub no_reuse: bool,
    /// Leave out the bill of materials (`.dist-info/sboms/rocm-packager.cdx.json`, CycloneDX
    /// 1.6) every wheel carries otherwise.
    #[arg(long)]
    pub no_sbom: bool,
    /// Build only these package groups (for a CI matrix; merge the dist/ folders after).
    #[arg(long, value_enum, value_delimiter = ',', num_args = 1..)]
    pub only: Vec<Group>,
    /// Worker threads [default: all cores].
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Print the plan (what goes where, and why) instead of writing packages.
    #[arg(long)]
    pub plan: bool,
    /// Write the report (or with --plan, the plan) as JSON to this file, or `-` for stdout.
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Group {
    Meta,
    Core,
    Libraries,
    Device,
    Devel,
    Profiler,
}

impl From<Group> for PackageGroup {
    fn from(group: Group) -> PackageGroup {
        match group {
            Group::Meta => PackageGroup::Meta,
            Group::Core => PackageGroup::Core,
            Group::Libraries => PackageGroup::Libraries,
            Group::Device => PackageGroup::Device,
            Group::Devel => PackageGroup::Devel,
            Group::Profiler => PackageGroup::Profiler,
        }
    }
}

pub fn run(args: PackageArgs, output: Output) -> anyhow::Result<ExitCode> {
    // First: no other thread may exist yet (see `signals`).
    let interrupts = crate::signals::install()?;
    if let Some(jobs) = args.jobs {
        rayon::ThreadPoolBuilder::new().num_threads(jobs).build_global().context("setting up worker threads")?;
    }
    let config = to_config(&args, output)?;
    let progress = CliProgress::new(output);
    if args.plan {
        let plan = packager::plan(&config, &progress)
            .with_context(|| format!("planning packages from {}", config.artifacts_dir.display()))?;
        progress.finish();
        match &args.json {
            Some(path) => write_json(path, &plan)?,
            None => print!("{}", crate::summary::render_plan(&plan).context("listing the plan")?),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let started = Instant::now();
    let plan =
        packager::plan(&config, &progress).with_context(|| format!("packaging {}", config.artifacts_dir.display()))?;
    let plan_seconds = started.elapsed().as_secs_f64();
    if let (Some(pe_file), false) = (&plan.build_os_evidence, output.quiet) {
        eprintln!("note: {}", crate::summary::windows_build_line(pe_file, &config.artifacts_dir));
    }
    // From here on an interrupt may clean the destination's temp files: only while this
    // run holds its lock, since those of another run are not ours.
    let lock = Arc::new(packager::DestLock::acquire(&config.destination())?);
    if lock.removed_stale > 0 && !output.quiet {
        eprintln!(
            "note: removed {} temporary file(s) an interrupted run left in {}",
            lock.removed_stale,
            lock.output_dir().display()
        );
    }
    let armed = interrupts.clean_on_interrupt(&lock);
    let report = packager::write_locked(&plan, &config, &progress, &lock)
        .with_context(|| format!("packaging {}", config.artifacts_dir.display()));
    drop(armed);
    drop(lock);
    let mut report = report?;
    report.stages.insert(0, StageTime { stage: "catalog+plan".to_owned(), seconds: plan_seconds });
    progress.finish();
    crate::summary::publish(&report, output, args.json.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value).context("serialising JSON")?;
    if path == Path::new("-") {
        println!("{text}");
    } else {
        fs_err::write(path, text + "\n")?;
    }
    Ok(())
}

/// Turns flags (and the checkout they point at) into the library's plain config.
fn to_config(args: &PackageArgs, output: Output) -> anyhow::Result<PackageConfig> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    // Each flag that names a path is checked before anything is derived from it, so a
    // wrong path is the first thing reported, not a later symptom of it.
    let checkout = match &args.therock_dir {
        Some(dir) if therock::is_checkout(dir) => Some(dir.clone()),
        Some(dir) => return Err(CatalogError::TherockDirNotACheckout { path: dir.clone() }.into()),
        None => therock::find_checkout(&cwd),
    };
    if let Some(dir) = &args.dest_dir {
        check_dest_dir(dir)?;
    }
    // The reference treats an empty --version as none given; TheRock's CI passes
    // `--version="${{ inputs.package_version }}"`, empty unless a version was asked for.
    let given_version = args.version.as_ref().filter(|version| !version.is_empty());
    // Checked before the example or the artifacts are read, so the error names the version
    // alone and not a directory that has nothing to do with it.
    if let Some(version) = given_version {
        packager::plan::version::check_pep440(version)
            .map_err(|reason| packager::Error::from(PlanError::BadVersion { version: version.clone(), reason }))?;
    }
    let (artifacts_dir, example_version) = match (&args.artifact_dir, &checkout) {
        (Some(dir), _) => (check_artifacts_dir(dir)?, None),
        (None, Some(root)) => (checkout_artifacts(root)?, None),
        (None, None) => (generate_example(output)?, Some("7.12.0.dev0".to_owned())),
    };
    let version = match (given_version, &checkout, example_version) {
        (Some(version), _, _) => version.clone(),
        (None, Some(root), _) => therock::read_version(root)?,
        (None, None, Some(version)) => version,
        (None, None, None) => {
            return Err(crate::CliError {
                message: format!(
                    "no --version given, and {} is not inside a TheRock checkout to read the version from",
                    cwd.display()
                ),
                hint: "pass --version (such as --version 7.12.0.dev0), or --therock-dir naming the TheRock \
                       checkout the artifacts were built from",
            }
            .into())
        }
    };
    let dest_dir = match (&args.dest_dir, &checkout) {
        (Some(dir), _) => dir.clone(),
        // Where TheRock's CMake and CI put Python packages, so `pip install
        // --find-links=build/python-packages/dist` works from the checkout's root.
        (None, Some(root)) => root.join(CHECKOUT_DEST_DIR),
        (None, None) => PathBuf::from("."),
    };
    let targets = match &checkout {
        Some(root) => therock::read_amdgpu_targets(root)?,
        None => Default::default(),
    };
    let families = FamilyRequest {
        linux: split_list(args.linux_amdgpu_families.as_deref()),
        windows: split_list(args.windows_amdgpu_families.as_deref()),
        expansion: targets,
    };
    Ok(PackageConfig {
        artifacts_dir,
        dest_dir,
        version,
        version_suffix: args.version_suffix.clone(),
        build_os: args.build_os.as_deref().and_then(BuildOs::parse),
        platform_tag: match &args.platform_tag {
            Some(tag) => PlatformTag::parse(tag),
            None => PlatformTag::Default(packager::platform::host_platform_tag()),
        },
        build_time: build_time()?,
        started: std::time::SystemTime::now(),
        output: output_mode(args),
        absolute_rpath: if args.keep_absolute_rpath { AbsoluteRpath::Keep } else { AbsoluteRpath::Remove },
        variants: if args.variants { DeviceVariants::Wheels } else { DeviceVariants::Off },
        // The checkout names the sources of the third-party libraries the wheels bundle.
        sbom: if args.no_sbom { Sbom::Omit } else { Sbom::Write { checkout: checkout.clone() } },
        only: args.only.iter().map(|group| PackageGroup::from(*group)).collect(),
        families,
        scratch_dir: None,
    })
}

/// What the run writes: the last of --build-packages / --no-build-packages wins (clap resets
/// the other), and the compression and reuse flags mean something only for archives.
fn output_mode(args: &PackageArgs) -> OutputMode {
    if args.no_build_packages {
        return OutputMode::Trees;
    }
    let wheel_compression = if args.no_wheel_compression {
        WheelCompression::Stored
    } else {
        WheelCompression::Deflate { level: args.wheel_compression_level }
    };
    let devel_tarball_compression = if args.devel_tarball_compression && !args.no_devel_tarball_compression {
        DevelTarballCompression::Xz { preset: args.devel_tarball_xz_preset }
    } else {
        DevelTarballCompression::None
    };
    let reuse = if args.no_reuse { Reuse::Never } else { Reuse::FromPrevious };
    OutputMode::Archives(ArchiveSettings { wheel_compression, devel_tarball_compression, reuse })
}

/// The default `--dest-dir` inside a TheRock checkout, relative to its root.
const CHECKOUT_DEST_DIR: &str = "build/python-packages";

/// `dir`, if it is an artifacts directory: a missing, wrong or non-directory one is the
/// first thing to report, before the version or the checkout are looked for (the catalog
/// would say the same, later).
fn check_artifacts_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    packager::catalog::check_artifacts_dir(dir)?;
    Ok(dir.to_path_buf())
}

/// `--dest-dir` must be a directory or creatable as one: a file there (or in its path)
/// would otherwise surface as `File exists (os error 17)` after the whole plan is made.
fn check_dest_dir(dir: &Path) -> anyhow::Result<()> {
    let Some(existing) = dir.ancestors().find(|ancestor| ancestor.exists()) else { return Ok(()) };
    if existing.is_dir() {
        return Ok(());
    }
    let message = if existing == dir {
        format!("--dest-dir is a file, not a directory: {}", dir.display())
    } else {
        format!("--dest-dir cannot be created: {} is a file, not a directory", existing.display())
    };
    Err(crate::CliError { message, hint: "pass a directory for --dest-dir (a missing one is created)" }.into())
}

/// The checkout's `build/artifacts`. A checkout not built yet is an error: packaging the
/// bundled example under the checkout's version would look like a real build.
fn checkout_artifacts(root: &Path) -> anyhow::Result<PathBuf> {
    let dir = root.join("build/artifacts");
    match std::fs::metadata(&dir) {
        Ok(metadata) if metadata.is_dir() => Ok(dir),
        Ok(_) => Err(CatalogError::MissingCheckoutArtifacts { path: dir }.into()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Err(CatalogError::MissingCheckoutArtifacts { path: dir }.into())
        }
        Err(source) => Err(CatalogError::Read { path: dir, source }.into()),
    }
}

/// `SOURCE_DATE_EPOCH`, read once; a malformed value is an error, not silently ignored.
pub fn build_time() -> anyhow::Result<BuildTime> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(text) => {
            let seconds: u64 = text
                .trim()
                .parse()
                .with_context(|| format!("SOURCE_DATE_EPOCH={text:?} is not a number of seconds"))?;
            Ok(BuildTime(seconds))
        }
        Err(std::env::VarError::NotPresent) => Ok(BuildTime::DEFAULT),
        Err(error) => Err(error).context("reading SOURCE_DATE_EPOCH"),
    }
}

fn split_list(text: Option<&str>) -> Vec<String> {
    text.unwrap_or("").split([',', ';']).map(str::trim).filter(|part| !part.is_empty()).map(str::to_owned).collect()
}

/// Outside a TheRock checkout, the first command still does the real job: on the bundled
/// example, generated in cargo's target directory (`cargo metadata` says where).
///
/// Every run generates it anew (so an edited example takes effect), into a temp dir beside
/// its final place, then renames it there. A tree in place is never changed: another run
/// may be packaging it right now (into another --dest-dir), and a tree changing under its
/// catalog walk would give it a wrong plan. So the final place is named by a digest of the
/// tree, and a run that finds its tree already placed (another run got there first, with
/// the same content) keeps that one and drops its own. No lock is needed.
fn generate_example(output: Output) -> anyhow::Result<PathBuf> {
    let target = crate::target_dir::target_dir()?;
    fs_err::create_dir_all(&target)?;
    if !output.quiet {
        eprintln!(
            "note: no --artifact-dir and no TheRock checkout here: packaging the bundled example (generated under {})",
            target.display()
        );
    }
    let temp = tempfile::Builder::new()
        .prefix(".example-artifacts.tmp-")
        .tempdir_in(&target)
        .with_context(|| format!("creating a temporary directory in {}", target.display()))?;
    example_artifacts::write_example(temp.path(), &example_artifacts::ExampleOptions { kpack_split: false })
        .with_context(|| format!("generating the bundled example into {}", temp.path().display()))?;
    let mut hasher = DefaultHasher::new();
    hash_tree(temp.path(), &mut hasher)?;
    let out = target.join(format!("example-artifacts-{:016x}", hasher.finish()));
    match std::fs::rename(temp.path(), &out) {
        Ok(()) => {
            // Renamed: nothing is left at the temp path for the guard to remove.
            let _ = temp.keep();
        }
        // Another run placed the same tree: ours is removed with `temp`.
        Err(_) if out.is_dir() => {}
        Err(source) => {
            return Err(source).with_context(|| format!("placing the bundled example at {}", out.display()));
        }
    }
    Ok(out)
}

/// Feeds every entry under `dir` to `hasher`, sorted: names, modes, contents and link
/// targets (links are not followed). Only a name for a cache in target/, so std's hasher
/// does: a new toolchain gives new names, which only costs a regeneration.
fn hash_tree(dir: &Path, hasher: &mut DefaultHasher) -> anyhow::Result<()> {
    let mut paths: Vec<PathBuf> =
        fs_err::read_dir(dir)?.map(|entry| entry.map(|entry| entry.path())).collect::<Result<_, _>>()?;
    paths.sort();
    paths.len().hash(hasher);
    for path in paths {
        let metadata = fs_err::symlink_metadata(&path)?;
        path.file_name().hash(hasher);
        metadata.mode().hash(hasher);
        if metadata.is_dir() {
            hash_tree(&path, hasher)?;
        } else if metadata.is_symlink() {
            fs_err::read_link(&path)?.hash(hasher);
        } else {
            // Only a regular file is read, without blocking: the tree is ours, but a FIFO
            // in it must not hang the run.
            let mut bytes = Vec::new();
            packager::write::open_regular(&path, packager::write::Links::Refuse)
                .and_then(|mut file| std::io::Read::read_to_end(&mut file, &mut bytes))
                .with_context(|| format!("reading {}", path.display()))?;
            bytes.hash(hasher);
        }
    }
    Ok(())
}
