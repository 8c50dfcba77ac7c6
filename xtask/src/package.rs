//! `cargo xtask package`: flags → the library's plain `PackageRequest`, which
//! `packager::request::resolve` turns into a `PackageConfig`; then the library's pipeline
//! once (`packager::package_with`), a summary table on stdout and `--json` for CI.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use packager::config::{
    AbsoluteRpath, ArchiveSettings, DevelTarballCompression, DeviceVariants, OutputMode, PackageGroup, Reuse,
    WheelCompression,
};
use packager::platform::BuildOs;
use packager::request::PackageRequest;
use packager::BuildTime;

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
    /// Split a fat (legacy) build's device code per GPU target: package it as TheRock's
    /// kpack-split build of it would be (`rocm-sdk-libraries` with every fat library
    /// transformed, `rocm-sdk-device-<owner>` wheels holding the `.kpack` archives and
    /// kernel databases, the sdist's `device-<target>` choices).
    #[arg(long)]
    pub split_device: bool,
    /// With --split-device: split even though the build's HIP runtime (`libamdhip64`)
    /// carries no kpack loader (it is replaced by a kpack-enabled one before use).
    #[arg(long, requires = "split_device")]
    pub allow_runtime_without_kpack: bool,
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
    let request = to_request(&args)?;
    let mut config = packager::request::resolve(&request, &|| generate_example(output).map_err(Into::into))?;
    // What the user named, also when the pipeline packages the split view of it.
    let artifacts_dir = config.artifacts_dir.clone();
    let split = match args.split_device {
        true => Some(
            packager::split::split_build(&config.artifacts_dir, &config.dest_dir, args.allow_runtime_without_kpack, 3)
                .with_context(|| format!("splitting the device code of {}", config.artifacts_dir.display()))?,
        ),
        false => None,
    };
    if let Some(split) = &split {
        // With `--json -` stdout is the JSON, which carries the same under `split_device`.
        if !output.quiet && args.json.as_deref() != Some(Path::new("-")) {
            print!("{}", split_lines(split));
        }
        config.artifacts_dir = split.artifacts_dir.clone();
    }
    let progress = CliProgress::new(output);
    if args.plan {
        let plan = packager::plan(&config, &progress)
            .with_context(|| format!("planning packages from {}", artifacts_dir.display()))?;
        progress.finish();
        match &args.json {
            Some(path) => write_json(path, &plan)?,
            None => print!("{}", crate::summary::render_plan(&plan).context("listing the plan")?),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let hooks = CliHooks { output, interrupts, artifacts_dir: &artifacts_dir };
    let report = packager::package_with(&config, &progress, &hooks).with_context(|| match &split {
        Some(split) => format!(
            "packaging {} split per target (its view {}, removed when the run ends)",
            artifacts_dir.display(),
            split.artifacts_dir.display()
        ),
        None => format!("packaging {}", artifacts_dir.display()),
    })?;
    progress.finish();
    match (&split, args.json.as_deref()) {
        (Some(split), Some(path)) => {
            // The report, and what the split found, under `split_device`.
            let mut value = serde_json::to_value(&report).context("serialising the report")?;
            if let Some(object) = value.as_object_mut() {
                let found = serde_json::json!({ "plan": &split.plan, "runtime": &split.runtime });
                object.insert("split_device".to_owned(), found);
            }
            write_json(path, &value)?;
            if path != Path::new("-") {
                crate::summary::publish(&report, output, None)?;
            }
        }
        _ => crate::summary::publish(&report, output, args.json.as_deref())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// What `--split-device` found, for the summary: targets, device wheels, how the targets
/// compare with `dist_info.json`, and the runtime's verdict.
fn split_lines(split: &packager::split::SplitBuild) -> String {
    let plan = &split.plan;
    let list = |items: &[String]| if items.is_empty() { "none".to_owned() } else { items.join(", ") };
    let runtime = match &split.runtime {
        packager::plan::kpack_runtime::KpackRuntime::Loads { path, evidence } => {
            format!("{} loads kpack archives ({evidence})", path.display())
        }
        packager::plan::kpack_runtime::KpackRuntime::Allowed { path } => {
            format!("{} cannot load kpack archives (allowed by --allow-runtime-without-kpack)", path.display())
        }
        packager::plan::kpack_runtime::KpackRuntime::NoRuntime => "no HIP runtime in the build".to_owned(),
    };
    format!(
        "split-device: {} fat files, {} archives for {}; device wheels {}; kernel databases moved: {}\n\
         split-device: declared in dist_info.json without code objects: {}; code objects not declared: {}\n\
         split-device: runtime {runtime}\n",
        plan.libraries.len(),
        plan.archives.len(),
        list(&plan.targets),
        list(&plan.device_wheels),
        plan.databases.len(),
        list(&plan.declared_without_code),
        list(&plan.undeclared),
    )
}

/// What the command line says and does as a run goes: a note on a Windows build, a note on
/// the temp files an interrupted run left, and the interrupt cleanup armed while the
/// destination's lock is held (only then: another run's temp files are not ours).
struct CliHooks<'a> {
    output: Output,
    interrupts: crate::signals::Interrupts,
    artifacts_dir: &'a Path,
}

impl packager::RunHooks for CliHooks<'_> {
    fn planned(&self, plan: &packager::Plan) {
        if let (Some(pe_file), false) = (&plan.build_os_evidence, self.output.quiet) {
            eprintln!("note: {}", crate::summary::windows_build_line(pe_file, self.artifacts_dir));
        }
    }

    fn locked(&self, lock: &Arc<packager::DestLock>) -> Option<Box<dyn std::any::Any>> {
        if lock.removed_stale > 0 && !self.output.quiet {
            eprintln!(
                "note: removed {} temporary file(s) an interrupted run left in {}",
                lock.removed_stale,
                lock.output_dir().display()
            );
        }
        Some(Box::new(self.interrupts.clean_on_interrupt(lock)))
    }
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

/// Flags as the library's plain request; [`packager::request::resolve`] does the rest.
fn to_request(args: &PackageArgs) -> anyhow::Result<PackageRequest> {
    Ok(PackageRequest {
        cwd: std::env::current_dir().context("reading the current directory")?,
        artifact_dir: args.artifact_dir.clone(),
        therock_dir: args.therock_dir.clone(),
        dest_dir: args.dest_dir.clone(),
        version: args.version.clone(),
        version_suffix: args.version_suffix.clone(),
        platform_tag: args.platform_tag.clone(),
        build_os: args.build_os.as_deref().and_then(BuildOs::parse),
        build_time: build_time()?,
        started: std::time::SystemTime::now(),
        output: output_mode(args),
        absolute_rpath: if args.keep_absolute_rpath { AbsoluteRpath::Keep } else { AbsoluteRpath::Remove },
        variants: if args.variants { DeviceVariants::Wheels } else { DeviceVariants::Off },
        sbom: !args.no_sbom,
        only: args.only.iter().map(|group| PackageGroup::from(*group)).collect(),
        linux_amdgpu_families: args.linux_amdgpu_families.clone(),
        windows_amdgpu_families: args.windows_amdgpu_families.clone(),
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
    example_artifacts::write_example(temp.path(), &example_artifacts::ExampleOptions::default())
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
            archive_write::open_regular(&path, archive_write::Links::Refuse)
                .and_then(|mut file| std::io::Read::read_to_end(&mut file, &mut bytes))
                .with_context(|| format!("reading {}", path.display()))?;
            bytes.hash(hasher);
        }
    }
    Ok(())
}
