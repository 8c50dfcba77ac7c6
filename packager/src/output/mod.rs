//! The output stage: turns a [`Plan`] into the run's outputs in its destination. Wheel and
//! sdist specs (`spec`) with payload members read from the artifacts (`payload`),
//! launchers (`launcher`), the Python we ship (`python`), bills of materials (`sbom`),
//! the `--variants` wheels (`variants`) and each wheel's platform tag (`manylinux` under
//! `--platform-tag auto`); written through the `archive-write` crate into the destination
//! (`destination`: lock, overlap, stale removal) and summed up in the run's report
//! (`report`), the same way for archives and trees (`writer`). Every function of the
//! stage returns its one error, [`OutputError`].
//!
//! Owns: the order outputs are written in, `--only`, the one flow of both output modes
//! (archives, or `--no-build-packages` trees: `config::OutputMode`, each an
//! `writer::OutputWriter`), the completeness check, and committing: every output of a
//! run is staged first, and only when all of them were written and the set is complete
//! are they renamed into place together (SPEC §5). Does not own: decisions (`plan`),
//! formats (`archive-write`), which directory the destination is (`config::Destination`).

pub mod destination;
mod error;
pub mod launcher;
pub mod manylinux;
pub mod payload;
pub mod python;
pub mod report;
pub mod sbom;
mod spec;
pub mod variants;
mod writer;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use archive_write::{ArchiveOptions, Inventory};

use crate::config::{OutputMode, PackageConfig, PackageGroup, PlatformTag, Sbom};
use crate::identity::{PackageRole, PlatformTags};
use crate::input::third_party::{self, ThirdPartySources};
use crate::plan::{PackagePlan, Plan};
use crate::platform::BuildOs;
use crate::progress::Progress;

use destination::identity_cache::{load_identities, save_identities};
use destination::lock::DestLock;
pub use error::OutputError;
use launcher::LauncherTemplate;
use report::OutputReport;
pub use spec::GENERATOR;
use spec::{sdist_spec, wheel_spec};
use writer::{Archives, OutputWriter, Staged, Trees};

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
) -> Result<Vec<OutputReport>, OutputError> {
    if lock.destination() != &config.destination() {
        let reason = format!(
            "the lock held is for {}, not {}",
            lock.output_dir().display(),
            config.destination().output_dir.display()
        );
        return Err(OutputError::Invalid { message: reason });
    }
    let launcher = launcher::compile_if_needed(plan, config)?;
    let packages = selected_packages(plan, config, progress);
    let tags = platform_tags(plan, &packages, config, launcher.as_ref())?;
    let third_party = read_third_party(config, plan)?;
    let run = Run { plan, config, progress, lock, launcher: launcher.as_ref(), tags: &tags, third_party };
    match config.output {
        OutputMode::Archives(settings) => {
            let dest_dir = &lock.destination().dest_dir;
            let identities = load_identities(settings.reuse, dest_dir, plan, config.started, progress);
            let options = ArchiveOptions {
                compression: settings.wheel_compression,
                build_time: config.build_time,
                reuse: settings.reuse,
                identities: identities.as_ref(),
            };
            let devel_tarball = settings.devel_tarball_compression;
            let outputs = write_with(&run, &packages, &Archives { lock, options, devel_tarball, progress })?;
            if let Some(identities) = &identities {
                save_identities(identities, dest_dir, config.only.is_empty(), progress);
            }
            Ok(outputs)
        }
        OutputMode::Trees => write_with(&run, &packages, &Trees { lock, progress }),
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
    fn sbom(&self, package: &PackagePlan, devel_tarball: Option<&str>) -> Option<Inventory> {
        let sources = self.third_party.clone();
        matches!(self.config.sbom, Sbom::Write { .. })
            .then(|| sbom::package_inventory(self.plan, package, sources, devel_tarball))
    }

    /// The bill of materials of a wheel made of generated files alone (`--variants`).
    fn generated_sbom(&self, distribution: &str, requires_dist: &[String]) -> Option<Inventory> {
        let provenance = sbom::Provenance::new(self.third_party.clone());
        matches!(self.config.sbom, Sbom::Write { .. })
            .then(|| sbom::inventory(distribution, self.plan.version.as_str(), provenance, requires_dist.to_vec()))
    }
}

/// The checkout's third-party sources, read once per run when bills of materials are
/// written from a checkout. A checkout without the LLVM source leaves LLVM's version to
/// the build's own files (SPEC §10).
fn read_third_party(config: &PackageConfig, plan: &Plan) -> Result<Option<Arc<ThirdPartySources>>, OutputError> {
    match &config.sbom {
        Sbom::Write { checkout: Some(root) } => {
            let mut sources = third_party::read_third_party(root)?;
            if sources.llvm_version.is_none() {
                let paths = plan.packages.iter().flat_map(|package| package.files.keys()).map(|rel| rel.as_str());
                if let Some((version, source)) = third_party::llvm_version_of_build(paths) {
                    (sources.llvm_version, sources.llvm_version_source) = (Some(version), Some(source));
                }
            }
            Ok(Some(Arc::new(sources)))
        }
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

/// The one flow of both forms: the wheels, the sdist and `--variants`' outputs staged,
/// then (for a full run) the set checked complete before anything is committed, committed
/// together, and our earlier outputs of this version that the run no longer produces
/// removed (`stale`), so the destination holds one coherent set.
fn write_with<W: OutputWriter>(
    run: &Run<'_>,
    packages: &[&PackagePlan],
    writer: &W,
) -> Result<Vec<OutputReport>, OutputError> {
    // Until the commit below, each output lives under a temp name and is removed if
    // anything fails (dropping it): renaming as each one finished would replace an earlier
    // run's package before the run is known to succeed.
    let mut staged = stage_wheels(run, packages, writer)?;
    if run.wants(PackageGroup::Meta) {
        staged.push(writer.add_sdist(&sdist_spec(run.plan))?);
    }
    if run.wants(PackageGroup::Device) {
        staged.extend(writer.add_variants(run)?);
    }
    let (outputs, files): (Vec<OutputReport>, Vec<W::Staged>) = staged.into_iter().unzip();
    let full_run = run.config.only.is_empty();
    if full_run {
        check_complete(run.plan, run.lock.output_dir(), &outputs, writer)?;
    }
    writer.finish(files)?;
    if full_run {
        let produced = outputs.iter().map(|output| output.file_name.clone()).collect();
        for path in writer.remove_stale(run.plan.version.as_str(), &produced)? {
            let path = path.display();
            run.progress.warn(&format!("removed {path}: an earlier run's package this run no longer produces"));
        }
    }
    Ok(outputs)
}

/// Wheels written at once. Each wheel already compresses on every core; a second writer
/// keeps the cores busy while the other reads, hashes, plans RPATH edits, drains its
/// pipeline or syncs its file, which one writer does alone with the cores idle.
const WHEEL_WRITERS: usize = 2;

/// Stages the wheels of `packages`, [`WHEEL_WRITERS`] at a time, and returns them in plan
/// order. Each wheel's bytes do not depend on what else is being written.
fn stage_wheels<W: OutputWriter>(
    run: &Run<'_>,
    packages: &[&PackagePlan],
    writer: &W,
) -> Result<Vec<Staged<W>>, OutputError> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let stage_one = |package: &PackagePlan| {
        let spec = wheel_spec(run, package, writer.devel_tarball())?;
        writer.add_wheel(&package.names.distribution, &spec)
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
    let mut results: Vec<(usize, Result<Staged<W>, OutputError>)> = std::thread::scope(|scope| {
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
) -> Result<PlatformTags, OutputError> {
    match &config.platform_tag {
        PlatformTag::Default(_) if plan.build_os == BuildOs::Windows => {
            Ok(packages.iter().map(|package| (package.role.clone(), WINDOWS_TAG.to_owned())).collect())
        }
        PlatformTag::Fixed(tag) | PlatformTag::Default(tag) => {
            Ok(packages.iter().map(|package| (package.role.clone(), tag.clone())).collect())
        }
        PlatformTag::Manylinux => manylinux::choose_tags(plan, packages, launcher),
    }
}

/// SPEC §2 validations: a kpack-split build must publish the whole set. Checked on the
/// run's staged outputs, before any is committed, so an incomplete set never reaches
/// `dest` (which is only named in the error).
fn check_complete(
    plan: &Plan,
    output_dir: &Path,
    outputs: &[OutputReport],
    writer: &impl OutputWriter,
) -> Result<(), OutputError> {
    if !plan.kpack_split {
        return Ok(());
    }
    let version = plan.version.as_str();
    let written: BTreeSet<String> =
        outputs.iter().map(|output| archive_write::file_name_form(&output.package)).collect();
    let mut required = vec![PackageRole::Core, PackageRole::Libraries { family: None }];
    required.extend(plan.families.device_targets.iter().map(|target| PackageRole::Device { target: target.clone() }));
    if plan.packages.iter().any(|package| package.group() == PackageGroup::Devel) {
        required.push(PackageRole::Devel { family: None });
    }
    let mut missing: BTreeSet<String> = required
        .iter()
        .map(|role| plan.dist_info.names(role).file_name_form())
        .filter(|distribution| !written.contains(distribution))
        .map(|distribution| writer.wheel_name(&distribution, version))
        .collect();
    let sdist = plan.dist_info.names(&PackageRole::Meta).file_name_form();
    if !written.contains(&sdist) {
        missing.insert(writer.sdist_name(&sdist, version));
    }
    let missing: Vec<String> = missing.into_iter().collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(OutputError::IncompleteOutput { output_dir: output_dir.to_path_buf(), missing })
    }
}
