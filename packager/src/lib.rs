//! Turns a TheRock ROCm artifacts directory into installable Python packages.
//!
//! The pipeline, one folder per stage, each taking the previous stage's output and
//! returning its own error: `input` (read the artifacts directory, the TheRock checkout,
//! the build's operating system: [`input::CatalogError`]) → `plan` (decide every member of
//! every package, RPATH edits through the `elf-rpath` crate, `--variants`:
//! [`plan::PlanError`]) → `output` (archive specs, payload members, launchers, the Python we
//! ship, bills of materials, the manylinux tag choice, written through the `archive-write`
//! crate into the destination it locks, with stale removal: [`output::OutputError`]).
//! After a run, `index` writes the PEP 503 simple index of a `dist/`. `repair` is a
//! pipeline of its own, after `output` whose parts it reuses: it links a wheel built on the
//! SDK to the SDK's wheels ([`repair::RepairError`]). Checking a built
//! `dist/` is not ours: the `release-gate` crate does it, apart from everything here.
//!
//! Beside the stages, the words every stage shares: `config` (the run's settings),
//! `identity` (package roles and their names), `targets` (GPU targets and families),
//! `owners` (which device package a target's payload ships in), `platform` (the wheel
//! platform's machine, the build's operating system), `relpath` (paths inside packages),
//! `escape` (input text in messages), `progress`; and `error`, the crate's [`Error`] over
//! the stages' errors.
//!
//! Owns: every ROCm packaging rule. Must not know: how ELF tables are encoded or archives
//! laid out (the crates below it, which callers name themselves), the command line
//! (`xtask`, above it), the release gate or the example generator (crates beside it).
//! A caller asks for a run as a [`request::PackageRequest`] (flags as given), which
//! [`request::resolve`] turns into a [`PackageConfig`]. Inside, a stage imports only from
//! the shared modules and from stages before it
//! (`xtask/tests/layers.rs`).

pub mod config;
pub mod escape;
pub mod identity;
pub mod owners;
pub mod platform;
pub mod progress;
pub mod relpath;
pub mod repair;
pub mod request;
pub mod split;
pub mod targets;

pub mod index;
pub mod input;
pub mod output;
pub mod plan;

mod error;

use std::sync::Arc;
use std::time::Instant;

pub use config::{BuildTime, PackageConfig};
pub use error::Error;
pub use output::destination::lock::DestLock;
pub use output::report::Report;
pub use plan::Plan;
pub use progress::{Progress, Silent};
pub use relpath::RelPath;

/// Reads the catalog and decides every package, writing nothing (`--plan`). A destination
/// overlapping the artifacts is refused here, before any run writes a byte.
pub fn plan(config: &PackageConfig, progress: &dyn Progress) -> Result<Plan, Error> {
    progress.stage("catalog", 0);
    // First: packages an earlier run laid among the artifacts would read as stray artifacts.
    let trees = matches!(config.output, config::OutputMode::Trees);
    output::destination::overlap::check_apart(&config.artifacts_dir, &config.destination(), trees)?;
    let catalog = input::catalog::Catalog::read(&config.artifacts_dir)?;
    warn_symlinked_artifacts(&catalog, progress);
    progress.stage("plan", 0);
    Ok(plan::plan_packages(&catalog, config, progress)?)
}

/// A symlink named like an artifact is not read (it could bring in files from anywhere):
/// said at default verbosity, since the build then lacks what that artifact holds.
fn warn_symlinked_artifacts(catalog: &input::catalog::Catalog, progress: &dyn Progress) {
    for link in &catalog.symlinked {
        let target = std::fs::read_link(link).map(|target| escape::escape_path(&target)).unwrap_or_default();
        progress.warn(&format!(
            "ignored {} (a symlink to {target}): only real directories are read as artifacts, so nothing of it \
             is packaged; copy the artifact in (`cp -a`) or point --artifact-dir at the directory that holds it",
            escape::escape_path(link)
        ));
    }
}

/// What a caller learns of a run as it goes, beside its progress: the CLI notes a Windows
/// build once the plan is made, and arms its interrupt cleanup while the destination's lock
/// is held (on SIGINT it may then remove the run's temp files there, and only then).
pub trait RunHooks {
    /// The plan, made; nothing is written yet.
    fn planned(&self, _plan: &Plan) {}

    /// The destination's lock, just taken: what this returns is dropped when the write
    /// stage ends, before the lock is released.
    fn locked(&self, _lock: &Arc<DestLock>) -> Option<Box<dyn std::any::Any>> {
        None
    }
}

/// No hooks: [`package`]'s.
struct NoHooks;

impl RunHooks for NoHooks {}

/// Runs the whole pipeline: catalog → plan → write. Outputs appear in the output directory
/// of `config.destination()` all at once, only when every one of them was written; a
/// failed run leaves it as it was. One run at a time may write there.
pub fn package(config: &PackageConfig, progress: &dyn Progress) -> Result<Report, Error> {
    package_with(config, progress, &NoHooks)
}

/// [`package`], telling `hooks` of the plan and of the destination's lock.
pub fn package_with(config: &PackageConfig, progress: &dyn Progress, hooks: &dyn RunHooks) -> Result<Report, Error> {
    let started = Instant::now();
    let plan = plan(config, progress)?;
    hooks.planned(&plan);
    let mut stages =
        vec![output::report::StageTime { stage: "catalog+plan".to_owned(), seconds: started.elapsed().as_secs_f64() }];
    let lock = Arc::new(DestLock::acquire(&config.destination())?);
    let armed = hooks.locked(&lock);
    let written = write_stage(&plan, config, progress, &lock);
    drop(armed);
    drop(lock);
    let (outputs, time) = written?;
    stages.push(time);
    Ok(Report::new(&plan, outputs, stages))
}

/// Writes every output of `plan` under `lock`, and times it.
fn write_stage(
    plan: &Plan,
    config: &PackageConfig,
    progress: &dyn Progress,
    lock: &DestLock,
) -> Result<(Vec<output::report::OutputReport>, output::report::StageTime), Error> {
    let started = Instant::now();
    progress.stage("write", 0);
    let outputs = output::write_outputs(plan, config, progress, lock)?;
    Ok((outputs, output::report::StageTime { stage: "write".to_owned(), seconds: started.elapsed().as_secs_f64() }))
}

/// The write stage alone, for a caller that planned with [`plan`] and then took the
/// destination's lock itself (tests that change the artifacts between the two). The
/// report's stages hold only the write stage.
pub fn write_locked(
    plan: &Plan,
    config: &PackageConfig,
    progress: &dyn Progress,
    lock: &DestLock,
) -> Result<Report, Error> {
    let (outputs, time) = write_stage(plan, config, progress, lock)?;
    Ok(Report::new(plan, outputs, vec![time]))
}
