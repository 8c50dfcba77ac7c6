//! Turns a TheRock ROCm artifacts directory into installable Python packages.
//!
//! The pipeline, one module per stage:
//! `catalog` (read the artifacts dir) → `plan` (decide every member of every package,
//! RPATH edits through the `elf-rpath` crate) → `assemble` (+ `member`, the payload's
//! sources) → `write` (the `archive-write` crate: wheels, sdist, devel tarball, or trees,
//! atomically). Checking a built `dist/` is not ours: the `release-gate` crate does it,
//! apart from everything here. `python` holds the Python code we ship, `launcher` the
//! compiled executable-symlink replacement, `manylinux` the `--platform-tag auto` choice
//! (reading ELF files through `elf-audit`), `variants` the device payload as wheel variants
//! (`--variants`), `sbom` the bill of materials every wheel carries, `repair` the linking
//! of a wheel built on the SDK to the SDK's wheels. `identity` (package roles and their
//! names),
//! `targets` (GPU targets and families), `owners` (which device package a target's
//! payload ships in) and `platform` (the wheel platform's machine) are the vocabulary
//! every stage shares.
//!
//! Owns: every ROCm packaging rule. Must not know: how ELF tables are encoded or archives
//! laid out (the crates below it), the command line (`xtask`, above it), the release gate
//! or the example generator (crates beside it). Inside, no two modules import each other
//! (`xtask/tests/layers.rs`).

pub mod assemble;
pub mod build_os;
pub mod catalog;
pub mod config;
pub mod escape;
pub mod identity;
pub mod identity_cache;
pub mod index;
pub mod launcher;
pub mod manylinux;
pub mod member;
pub mod owners;
pub mod plan;
pub mod platform;
pub mod progress;
pub mod python;
pub mod relpath;
pub mod repair;
pub mod report;
pub mod sbom;
pub mod small_file;
pub mod stale;
pub mod targets;
pub mod variants;

mod dest_error;
mod dest_lock;
pub mod dest_overlap;
mod error;

use std::time::Instant;

/// Archive writing is a crate of its own (`archive-write`), which knows nothing of ROCm or ELF.
pub use archive_write as write;
/// ELF surgery is a crate of its own (`elf-rpath`), which knows nothing of packages.
pub use elf_rpath as elf;

pub use assemble::GENERATOR;
pub use config::{BuildTime, PackageConfig};
pub use dest_error::DestinationError;
pub use dest_lock::DestLock;
pub use error::Error;
pub use plan::Plan;
pub use progress::{Progress, Silent};
pub use relpath::RelPath;
pub use report::Report;

/// Reads the catalog and decides every package, writing nothing (`--plan`). A destination
/// overlapping the artifacts is refused here, before any run writes a byte.
pub fn plan(config: &PackageConfig, progress: &dyn Progress) -> Result<Plan, Error> {
    progress.stage("catalog", 0);
    // First: packages an earlier run laid among the artifacts would read as stray artifacts.
    let trees = matches!(config.output, config::OutputMode::Trees);
    dest_overlap::check_apart(&config.artifacts_dir, &config.destination(), trees)?;
    let catalog = catalog::Catalog::read(&config.artifacts_dir)?;
    warn_symlinked_artifacts(&catalog, progress);
    progress.stage("plan", 0);
    let plan = plan::plan_packages(&catalog, config, progress)?;
    // `--variants` on a build that cannot have them fails before anything is written.
    variants::plan_variants(&plan, config)?;
    Ok(plan)
}

/// A symlink named like an artifact is not read (it could bring in files from anywhere):
/// said at default verbosity, since the build then lacks what that artifact holds.
fn warn_symlinked_artifacts(catalog: &catalog::Catalog, progress: &dyn Progress) {
    for link in &catalog.symlinked {
        let target = std::fs::read_link(link).map(|target| escape::escape_path(&target)).unwrap_or_default();
        progress.warn(&format!(
            "ignored {} (a symlink to {target}): only real directories are read as artifacts, so nothing of it \
             is packaged; copy the artifact in (`cp -a`) or point --artifact-dir at the directory that holds it",
            escape::escape_path(link)
        ));
    }
}

/// Runs the whole pipeline: catalog → plan → write. Outputs appear in the output directory
/// of `config.destination()` all at once, only when every one of them was written; a
/// failed run leaves it as it was. One run at a time may write there.
pub fn package(config: &PackageConfig, progress: &dyn Progress) -> Result<Report, Error> {
    let started = Instant::now();
    let plan = plan(config, progress)?;
    let stages = vec![report::StageTime { stage: "catalog+plan".to_owned(), seconds: started.elapsed().as_secs_f64() }];
    let lock = DestLock::acquire(&config.destination())?;
    write_planned(&plan, config, progress, &lock, stages)
}

/// The write stage alone, for a caller that planned with [`plan`] and then took the
/// destination's lock itself (the CLI, so that on SIGINT it may remove the temp files
/// there). The report's stages hold only the write stage.
pub fn write_locked(
    plan: &Plan,
    config: &PackageConfig,
    progress: &dyn Progress,
    lock: &DestLock,
) -> Result<Report, Error> {
    write_planned(plan, config, progress, lock, Vec::new())
}

fn write_planned(
    plan: &Plan,
    config: &PackageConfig,
    progress: &dyn Progress,
    lock: &DestLock,
    mut stages: Vec<report::StageTime>,
) -> Result<Report, Error> {
    let written = Instant::now();
    progress.stage("write", 0);
    let outputs = assemble::write_outputs(plan, config, progress, lock)?;
    stages.push(report::StageTime { stage: "write".to_owned(), seconds: written.elapsed().as_secs_f64() });
    Ok(Report::new(plan, outputs, stages))
}
