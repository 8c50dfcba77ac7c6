//! Turns a [`Plan`] into archives: wheel and sdist specs for the writers, launchers from the
//! compiled template, RPATH edits planned just before their wheel is written (so at most one
//! wheel's edits are in memory), and the run's report.
//!
//! Owns: the order outputs are written in, `--only`, the two output modes (archives, or
//! `--no-build-packages` trees: `config::OutputMode`, one writer function each), the
//! completeness check, and committing: every output of a run is staged first, and only when
//! all of them were written and the set is complete are they renamed into place together
//! (SPEC §5). Does not own: decisions (`plan`), formats (`write`), the destination and its
//! lock (`config::Destination`, `dest_lock`), whose output directory is the one written to,
//! or the bill of materials each wheel spec gets (`sbom`, SPEC §10).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::catalog::third_party::{self, ThirdPartySources};
use crate::catalog::CatalogError;
use crate::config::{
    ArchiveSettings, DevelTarballCompression, OutputMode, PackageConfig, PackageGroup, PlatformTag, Sbom,
};
use crate::dest_lock::DestLock;
use crate::elf::EditStrategy;
use crate::identity::{self, PackageRole, PlatformTags};
use crate::identity_cache::{load_identities, save_identities};
use crate::launcher::LauncherTemplate;
use crate::manylinux;
use crate::plan::{DevelEntry, DevelTree, PackagePlan, Plan, PlanError, PlannedFile};
use crate::progress::Progress;
use crate::python;
use crate::relpath::RelPath;
use crate::sbom;
use crate::variants;
use crate::write::{
    self, ArchiveOptions, CoreMetadata, EntryPoint, Generator, Member, MemberData, SdistFile, SdistSpec, StagedFile,
    TarEntry, TarEntryKind, TarEntrySource, TarTotals, TarballSpec, Version, WheelFileName, WheelRoot, WheelSpec,
    WriteError,
};

/// One output file in the summary table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct OutputReport {
    pub package: String,
    pub file_name: String,
    pub path: PathBuf,
    pub files: usize,
    pub uncompressed_bytes: u64,
    pub compressed_bytes: u64,
    pub sha256: String,
    pub seconds: f64,
    /// Member bytes copied compressed from the previous wheel, and bytes compressed anew (SPEC §8).
    pub reuse: write::ReuseCounts,
}

impl OutputReport {
    fn new(package: &str, written: &write::WrittenFile, started: Instant) -> OutputReport {
        OutputReport {
            package: package.to_owned(),
            file_name: written.file_name.clone(),
            path: written.path.clone(),
            files: written.n_members,
            uncompressed_bytes: written.uncompressed_bytes,
            compressed_bytes: written.compressed_bytes,
            sha256: written.sha256.clone(),
            seconds: started.elapsed().as_secs_f64(),
            reuse: written.reuse,
        }
    }
}

/// Who writes our wheels: named in every `WHEEL` file and part of every member's codec
/// fingerprint (SPEC §8), so a rerun copies only what this tool coded.
pub const GENERATOR: Generator = Generator { name: "rocm-packager", version: env!("CARGO_PKG_VERSION") };

const SUMMARY: &str = "ROCm SDK for Python";
const REQUIRES_PYTHON: &str = ">=3.9";
const LICENSE: &str = "MIT";

/// The long description of every package: what it is and how it is meant to be installed.
fn description(dist_name: &str) -> String {
    format!(
        "# {dist_name}\n\nPart of the ROCm SDK for Python, built from a TheRock build by rocm-packager.\n\n\
         Install it through the `rocm` selector package, which picks the GPU family at install \
         time: `pip install \"rocm[libraries,devel]\"`. Then run `rocm-sdk test`.\n"
    )
}

/// An output written to its temp file, with its line of the summary.
type Staged = (OutputReport, StagedFile);

/// Writes every package of `plan` selected by `config.only` into the output directory of
/// `lock`, the run's destination lock, which the caller took for `config.destination()`:
/// archives (`dest_dir/dist/`) or trees (`dest_dir`), as `config.output` says. Outputs
/// appear there all at once, and only when every one was written and (for a full run) the
/// set is complete; a failure leaves the directory as it was, earlier runs' packages
/// included (SPEC §5, §2 validations).
pub fn write_outputs(
    plan: &Plan,
    config: &PackageConfig,
    progress: &dyn Progress,
    lock: &DestLock,
) -> Result<Vec<OutputReport>, crate::Error> {
    if lock.destination() != &config.destination() {
        let reason = format!(
            "the lock held is for {}, not {}",
            lock.output_dir().display(),
            config.destination().output_dir.display()
        );
        return Err(WriteError::Invalid { reason }.into());
    }
    let launcher = crate::launcher::compile_if_needed(plan, config)?;
    let packages = selected_packages(plan, config, progress);
    let tags = platform_tags(plan, &packages, config, launcher.as_ref())?;
    let third_party = read_third_party(config)?;
    let run = Run { plan, config, progress, lock, launcher: launcher.as_ref(), tags: &tags, third_party };
    match config.output {
        OutputMode::Archives(settings) => write_archives(&run, &packages, settings),
        OutputMode::Trees => write_trees(&run, &packages),
    }
}

/// What every output of one run is written with.
struct Run<'a> {
    plan: &'a Plan,
    config: &'a PackageConfig,
    progress: &'a dyn Progress,
    lock: &'a DestLock,
    launcher: Option<&'a LauncherTemplate>,
    tags: &'a PlatformTags,
    /// What the checkout says of bundled third-party code, for the bills of materials.
    third_party: Option<Arc<ThirdPartySources>>,
}

impl Run<'_> {
    fn wants(&self, group: PackageGroup) -> bool {
        self.config.only.is_empty() || self.config.only.contains(&group)
    }

    /// The bill of materials of `package`'s wheel (SPEC §10), unless `--no-sbom`.
    fn sbom(&self, package: &PackagePlan, devel_tarball: Option<&str>) -> Option<write::Inventory> {
        let sources = self.third_party.clone();
        matches!(self.config.sbom, Sbom::Write { .. })
            .then(|| sbom::package_inventory(self.plan, package, sources, devel_tarball))
    }

    /// The bill of materials of a wheel made of generated files alone (`--variants`).
    fn generated_sbom(&self, distribution: &str, requires_dist: &[String]) -> Option<write::Inventory> {
        let provenance = sbom::Provenance::new(self.third_party.clone());
        matches!(self.config.sbom, Sbom::Write { .. })
            .then(|| sbom::inventory(distribution, self.plan.version.as_str(), provenance, requires_dist.to_vec()))
    }
}

/// The checkout's third-party sources, read once per run when bills of materials are
/// written from a checkout.
fn read_third_party(config: &PackageConfig) -> Result<Option<Arc<ThirdPartySources>>, crate::Error> {
    match &config.sbom {
        Sbom::Write { checkout: Some(root) } => Ok(Some(Arc::new(third_party::read_third_party(root)?))),
        Sbom::Write { checkout: None } | Sbom::Omit => Ok(None),
    }
}

/// The packages `--only` selects, in plan order.
fn selected_packages<'a>(plan: &'a Plan, config: &PackageConfig, progress: &dyn Progress) -> Vec<&'a PackagePlan> {
    // `--only` a group this build has no package of (device in legacy mode, devel without
    // `dev` artifacts) writes nothing for it, and no error: a CI matrix may run every group
    // whatever the build's mode. Said, so an empty job is no surprise.
    for group in &config.only {
        if *group != PackageGroup::Meta && !plan.packages.iter().any(|package| package.group() == *group) {
            let group = group.as_str();
            progress.warn(&format!("--only {group}: this build has no {group} package, nothing was written for it"));
        }
    }
    let wanted = |group: PackageGroup| config.only.is_empty() || config.only.contains(&group);
    plan.packages.iter().filter(|package| wanted(package.group())).collect()
}

/// `--no-build-packages`: all trees or none, like the archives (SPEC §5): each is written
/// whole under a temp name, and only then are all swapped in; a failure drops the staged
/// ones. Trees have no compression: the devel tarball's entries are laid out as files.
fn write_trees(run: &Run<'_>, packages: &[&PackagePlan]) -> Result<Vec<OutputReport>, crate::Error> {
    let output_dir = run.lock.output_dir();
    let mut trees = Vec::new();
    for package in packages {
        let spec = wheel_spec(run, package, DevelTarballCompression::None)?;
        trees.push(write::stage_tree(output_dir, &spec)?);
    }
    if run.wants(PackageGroup::Meta) {
        trees.push(write::stage_sdist_tree(output_dir, &sdist_spec(run.plan))?);
    }
    for root in run.lock.commit_trees(trees)? {
        run.progress.output_finished(&root.display().to_string());
    }
    Ok(Vec::new())
}

/// The wheels and the sdist, staged and then committed together.
fn write_archives(
    run: &Run<'_>,
    packages: &[&PackagePlan],
    settings: ArchiveSettings,
) -> Result<Vec<OutputReport>, crate::Error> {
    let output_dir = run.lock.output_dir();
    let dest_dir = &run.lock.destination().dest_dir;
    let identities = load_identities(settings.reuse, dest_dir, run.plan, run.config.started, run.progress);
    let options = ArchiveOptions {
        compression: settings.wheel_compression,
        build_time: run.config.build_time,
        reuse: settings.reuse,
        identities: identities.as_ref(),
    };
    // Until the commit below, each output lives under a temp name and is removed if
    // anything fails (dropping it): renaming as each one finished would replace an earlier
    // run's package before the run is known to succeed.
    let mut staged = stage_wheels(run, packages, &options, settings.devel_tarball_compression)?;
    if run.wants(PackageGroup::Meta) {
        let started = Instant::now();
        let spec = sdist_spec(run.plan);
        let file = write::stage_sdist(output_dir, &spec, &options)?;
        run.progress.output_finished(&file.written.file_name);
        staged.push((OutputReport::new(&spec.metadata.name, &file.written, started), file));
    }
    if run.wants(PackageGroup::Device) {
        staged.extend(stage_variants(run, &options)?);
    }
    let (outputs, files): (Vec<OutputReport>, Vec<StagedFile>) = staged.into_iter().unzip();
    let full_run = run.config.only.is_empty();
    if full_run {
        check_complete(run.plan, output_dir, &outputs)?;
    }
    run.lock.commit(files)?;
    if full_run {
        remove_stale(run.plan, output_dir, &outputs, run.progress)?;
    }
    if let Some(identities) = &identities {
        save_identities(identities, dest_dir, full_run, run.progress);
    }
    Ok(outputs)
}

/// `--variants` (SPEC §9): the variant wheels, the provider's wheel and the index file,
/// staged with the rest of the run.
fn stage_variants(run: &Run<'_>, options: &ArchiveOptions) -> Result<Vec<Staged>, crate::Error> {
    let Some(set) = variants::plan_variants(run.plan, run.config)? else { return Ok(Vec::new()) };
    let outputs =
        variants::variant_outputs(&set, run.plan, run.tags).map_err(|message| PlanError::Invalid { message })?;
    let output_dir = run.lock.output_dir();
    let mut staged = Vec::new();
    for wheel in outputs.wheels {
        let started = Instant::now();
        let members = wheel.python.files.into_iter().map(|file| Member {
            name: file.path,
            data: MemberData::Bytes(Arc::new(file.bytes)),
            executable: file.executable,
        });
        let label = wheel.variant.as_ref().map(|(label, _)| label.as_str());
        let inventory = run.generated_sbom(&wheel.distribution, &wheel.requires_dist);
        let spec = WheelSpec {
            file_name: identity::wheel_file_name(&wheel.distribution, &run.plan.version, &wheel.platform_tag, label)
                .map_err(WriteError::from)?,
            metadata: core_metadata(&wheel.distribution, &run.plan.version, wheel.requires_dist),
            generator: GENERATOR,
            root: wheel.root,
            variant_json: wheel.variant.map(|(_, json)| json),
            entry_points: wheel.python.entry_points,
            members: members.collect(),
            inventory,
        };
        let file = write::stage_wheel(output_dir, &spec, options, run.progress)?;
        staged.push((OutputReport::new(&wheel.distribution, &file.written, started), file));
    }
    let started = Instant::now();
    let (name, bytes) = outputs.index_file;
    let file = write::stage_file(output_dir, &name, &bytes)?;
    run.progress.output_finished(&name);
    staged.push((OutputReport::new(identity::device_variants_distribution(), &file.written, started), file));
    Ok(staged)
}

/// After a full run's commit: our wheels of this version it no longer produces go
/// (`stale`), so the destination holds one coherent set.
fn remove_stale(
    plan: &Plan,
    output_dir: &Path,
    outputs: &[OutputReport],
    progress: &dyn Progress,
) -> Result<(), WriteError> {
    let produced = outputs.iter().map(|output| output.file_name.clone()).collect();
    let removed = crate::stale::remove_stale_archives(output_dir, plan.version.as_str(), &produced)?;
    for path in removed {
        progress.warn(&format!("removed {}: an earlier run's package this run no longer produces", path.display()));
    }
    Ok(())
}

/// Wheels written at once. Each wheel already compresses on every core; a second writer
/// keeps the cores busy while the other reads, hashes, plans RPATH edits, drains its
/// pipeline or syncs its file, which one writer does alone with the cores idle.
const WHEEL_WRITERS: usize = 2;

/// Stages the wheels of `packages`, [`WHEEL_WRITERS`] at a time, and returns them in plan
/// order. Each wheel's bytes do not depend on what else is being written.
fn stage_wheels(
    run: &Run<'_>,
    packages: &[&PackagePlan],
    options: &ArchiveOptions,
    devel_tarball: DevelTarballCompression,
) -> Result<Vec<Staged>, crate::Error> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let stage_one = |package: &PackagePlan| -> Result<Staged, crate::Error> {
        let started = Instant::now();
        let spec = wheel_spec(run, package, devel_tarball)?;
        let file = write::stage_wheel(run.lock.output_dir(), &spec, options, run.progress)?;
        Ok((OutputReport::new(&package.names.distribution, &file.written, started), file))
    };
    let worker = || {
        let mut done = Vec::new();
        // Stop taking packages once one failed: the run fails anyway.
        while !failed.load(Ordering::Relaxed) {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(package) = packages.get(index) else { break };
            let result = stage_one(package);
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            done.push((index, result));
        }
        done
    };
    let mut results: Vec<(usize, Result<Staged, crate::Error>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WHEEL_WRITERS.min(packages.len())).map(|_| scope.spawn(worker)).collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    // The first failure in plan order is the one reported, as when writing one by one;
    // the wheels staged meanwhile are dropped with the rest, which removes them.
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}

/// The tag of every wheel of a Windows build (SPEC §7), unless one is given.
const WINDOWS_TAG: &str = "win_amd64";

/// Each package's platform tag: the one given, or under `auto` the one its files allow,
/// decided for every package before any is written, so a refused wheel writes nothing.
fn platform_tags(
    plan: &Plan,
    packages: &[&PackagePlan],
    config: &PackageConfig,
    launcher: Option<&LauncherTemplate>,
) -> Result<PlatformTags, crate::Error> {
    match &config.platform_tag {
        PlatformTag::Default(_) if plan.build_os == crate::build_os::BuildOs::Windows => {
            Ok(packages.iter().map(|package| (package.role.clone(), WINDOWS_TAG.to_owned())).collect())
        }
        PlatformTag::Fixed(tag) | PlatformTag::Default(tag) => {
            Ok(packages.iter().map(|package| (package.role.clone(), tag.clone())).collect())
        }
        PlatformTag::Manylinux => manylinux::choose_tags(plan, packages, launcher),
    }
}

/// A Windows build declares a console script only for a tool it has (`{tool}.exe` in the
/// package): some tools of the table exist on Linux alone, and a Windows build may leave
/// out others (rocminfo), so `rocm-sdk test` expects only what was built (SPEC §7).
fn retain_built_tools(entry_points: &mut Vec<EntryPoint>, package: &PackagePlan, info: &python::DistInfo) {
    let built: BTreeSet<&str> = python::console_scripts_of(&package.role, info)
        .into_iter()
        .filter(|script| {
            RelPath::new(&format!("{}.exe", script.tool)).is_ok_and(|exe| package.files.contains_key(&exe))
        })
        .map(|script| script.name)
        .collect();
    entry_points.retain(|entry| built.contains(entry.name.as_str()));
}

fn wheel_spec(
    run: &Run<'_>,
    package: &PackagePlan,
    devel_tarball: DevelTarballCompression,
) -> Result<WheelSpec, crate::Error> {
    let (plan, launcher) = (run.plan, run.launcher);
    let names = &package.names;
    let platform_tag = run
        .tags
        .get(&package.role)
        .ok_or_else(|| PlanError::Invalid { message: format!("no platform tag chosen for {}", names.distribution) })?;
    let mut python_part = python::python_part(&package.role, &plan.dist_info);
    if plan.build_os == crate::build_os::BuildOs::Windows {
        retain_built_tools(&mut python_part.entry_points, package, &plan.dist_info);
    }
    let devel_tree_files = python_part.devel_tree_files;
    let mut tarball_member = None;
    let mut members: Vec<Member> = python_part
        .files
        .into_iter()
        .map(|file| Member {
            name: file.path,
            data: MemberData::Bytes(Arc::new(file.bytes)),
            executable: file.executable,
        })
        .collect();
    for (rel, file) in &package.files {
        let data = member_data(file, launcher)?;
        members.push(Member { name: names.platform_dir.member(rel), data, executable: file.is_executable() });
    }
    if let Some(devel_tree) = &package.devel_tree {
        let Some(pure_package) = &names.pure_package else {
            let message = format!("{} has a devel tree but no pure package to carry it", names.distribution);
            return Err(PlanError::Invalid { message }.into());
        };
        let platform_dir = names.platform_dir.as_str().to_owned();
        let file_name = match devel_tarball {
            DevelTarballCompression::None => "_devel.tar",
            DevelTarballCompression::Xz { .. } => "_devel.tar.xz",
        };
        let mut entries = vec![TarEntry { name: platform_dir.clone(), kind: TarEntryKind::Dir }];
        for file in devel_tree_files {
            let data = MemberData::Bytes(Arc::new(file.bytes));
            entries.push(TarEntry { name: file.path, kind: TarEntryKind::File { data, executable: file.executable } });
        }
        let tree = DevelTreeEntries { root: platform_dir.clone(), tree: Arc::clone(devel_tree) };
        let spec = TarballSpec {
            entries,
            streamed: Some(Arc::new(tree)),
            compression: devel_tarball,
            build_time: run.config.build_time,
        };
        let name = format!("{pure_package}/{file_name}");
        tarball_member = Some(name.clone());
        members.push(Member { name, data: MemberData::Tarball(Arc::new(spec)), executable: false });
    }
    Ok(WheelSpec {
        file_name: identity::wheel_file_name(&names.distribution, &plan.version, platform_tag, None)
            .map_err(WriteError::from)?,
        metadata: core_metadata(&names.distribution, &plan.version, package.requires_dist.clone()),
        generator: GENERATOR,
        root: WheelRoot::Platlib,
        variant_json: None,
        entry_points: python_part.entry_points,
        members,
        inventory: run.sbom(package, tarball_member.as_deref()),
    })
}

/// The METADATA of one of our wheels.
fn core_metadata(distribution: &str, version: &Version, requires_dist: Vec<String>) -> CoreMetadata {
    CoreMetadata {
        name: distribution.to_owned(),
        version: version.to_string(),
        summary: format!("{SUMMARY}: {distribution}"),
        requires_dist,
        requires_python: Some(REQUIRES_PYTHON.to_owned()),
        license: Some(LICENSE.to_owned()),
        provides_extra: Vec::new(),
        description: Some(description(distribution)),
    }
}

/// Where a planned file's bytes come from. RPATH edits are re-planned by the writer as each
/// member streams, so at most a few edits are in memory at once.
fn member_data(file: &PlannedFile, launcher: Option<&LauncherTemplate>) -> Result<MemberData, crate::Error> {
    Ok(match file {
        PlannedFile::Copy { source, len, stamp, .. } => crate::member::file(Arc::clone(source), *len, Some(*stamp)),
        PlannedFile::PatchRpath { source, len, stamp, edit, .. } if edit.strategy == EditStrategy::Unchanged => {
            crate::member::file(Arc::clone(source), *len, Some(*stamp))
        }
        PlannedFile::PatchRpath { source, len, stamp, edit, .. } => {
            crate::member::patch_rpath(Arc::clone(source), *len, Some(*stamp), edit.planned())
        }
        PlannedFile::Launcher { target, .. } => {
            let template =
                launcher.ok_or_else(|| PlanError::Invalid { message: "launcher was not compiled".to_owned() })?;
            MemberData::Bytes(Arc::new(template.instantiate(target)?))
        }
        PlannedFile::Generated { bytes } => MemberData::Bytes(Arc::new(bytes.clone())),
    })
}

/// A plan's devel tree as tarball entries under `root`, decided again one at a time from
/// the artifacts as the tarball is written: the tree is in path order, which is name order
/// below one root.
#[derive(Debug)]
struct DevelTreeEntries {
    root: String,
    tree: Arc<DevelTree>,
}

impl TarEntrySource for DevelTreeEntries {
    fn for_each_entry(&self, each: &mut dyn FnMut(TarEntry) -> Result<(), WriteError>) -> Result<(), WriteError> {
        // `each`'s own error, kept as it is (the walk carries the run's error type).
        let mut stopped: Option<WriteError> = None;
        let walked = self.tree.walk_planned(&mut |rel, entry| {
            let kind = match entry {
                DevelEntry::Dir => TarEntryKind::Dir,
                DevelEntry::Symlink { target, .. } => TarEntryKind::Symlink { target: target.clone() },
                // The devel tree keeps executable symlinks as links: it has no launchers.
                DevelEntry::File { file } => TarEntryKind::File {
                    data: member_data(file, None)
                        .map_err(|error| PlanError::Invalid { message: format!("devel tree {rel}: {error}") })?,
                    executable: file.is_executable(),
                },
            };
            each(TarEntry { name: format!("{}/{rel}", self.root), kind }).map_err(|error| {
                stopped = Some(error);
                PlanError::Invalid { message: "stopped".to_owned() }.into()
            })
        });
        if let Some(error) = stopped {
            return Err(error);
        }
        walked.map_err(|error| match error {
            crate::Error::Write(error) => error,
            crate::Error::Catalog(CatalogError::Read { path, source }) => WriteError::Read { path, source },
            other => WriteError::Invalid { reason: format!("devel tree under {}: {other}", self.root) },
        })
    }

    fn totals(&self) -> TarTotals {
        let planned = &self.tree.planned;
        TarTotals {
            entries: planned.entries,
            // Every name is `{root}/{rel}`.
            name_bytes: planned.name_bytes + planned.entries * (self.root.len() as u64 + 1),
            file_bytes: planned.file_bytes,
        }
    }
}

fn sdist_spec(plan: &Plan) -> SdistSpec {
    let files = python::sdist_files(&plan.dist_info)
        .into_iter()
        .map(|file| SdistFile { name: file.path, bytes: file.bytes, executable: file.executable })
        .collect();
    SdistSpec {
        metadata: CoreMetadata {
            name: plan.dist_info.names(&PackageRole::Meta).distribution,
            version: plan.version.to_string(),
            summary: SUMMARY.to_owned(),
            requires_python: Some(REQUIRES_PYTHON.to_owned()),
            license: Some(LICENSE.to_owned()),
            description: Some(description(&plan.dist_info.names(&PackageRole::Meta).distribution)),
            ..CoreMetadata::default()
        },
        files,
    }
}

/// SPEC §2 validations: a kpack-split build must publish the whole set. Checked on the
/// run's staged outputs, before any is committed, so an incomplete set never reaches
/// `dest` (which is only named in the error).
fn check_complete(plan: &Plan, output_dir: &Path, outputs: &[OutputReport]) -> Result<(), PlanError> {
    if !plan.kpack_split {
        return Ok(());
    }
    let version = &plan.version;
    let written: Vec<WheelFileName> = outputs
        .iter()
        .filter_map(|output| output.file_name.parse::<WheelFileName>().ok())
        .filter(|wheel| wheel.version == *version)
        .collect();
    let mut required = vec![PackageRole::Core, PackageRole::Libraries { family: None }];
    required.extend(plan.families.device_targets.iter().map(|target| PackageRole::Device { target: target.clone() }));
    if plan.packages.iter().any(|package| package.group() == PackageGroup::Devel) {
        required.push(PackageRole::Devel { family: None });
    }
    let mut missing: BTreeSet<String> = required
        .iter()
        .map(|role| plan.dist_info.names(role).file_name_form())
        .filter(|distribution| !written.iter().any(|wheel| wheel.name.as_str() == distribution))
        .map(|distribution| format!("{distribution}-{version}-*.whl"))
        .collect();
    let sdist = format!("{}-{version}.tar.gz", plan.dist_info.names(&PackageRole::Meta).file_name_form());
    if !outputs.iter().any(|output| output.file_name == sdist) {
        missing.insert(sdist);
    }
    let missing: Vec<String> = missing.into_iter().collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PlanError::IncompleteOutput { output_dir: output_dir.to_path_buf(), missing })
    }
}
