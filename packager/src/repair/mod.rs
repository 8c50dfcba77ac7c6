//! `cargo xtask repair`: links a wheel built on the SDK (a HIP extension, a framework) to
//! the SDK's wheels, as the SDK's own packages are linked to each other (SPEC §11).
//!
//! The stages, one child each: `sdk_source` reads the set `--against` points at into an
//! `sdk` model; `input` reads and checks the wheel; `links` decides the ELF rules (bundled
//! SDK copies removed, DT_NEEDED renamed, search paths); `symbols` checks that every
//! symbol bound to the SDK is defined there; `metadata` writes the requirements and tags;
//! `output` stages the wheel; `report` is the text printed of the result. Everything a
//! wheel is refused for is found before anything is written, and listed at once (`error`);
//! a refusal leaves no directory it made. The run's wheels are renamed into the output
//! directory together, under the destination's lock, when all are complete.
//!
//! Owns: the order of those stages and the report. Does not own: the ELF editor, the
//! writer, the manylinux tag choice (`manylinux`), the release rule (`plan::version`).

mod error;
// The wheel reader is `split`'s too: both rewrite a wheel they read once.
pub(crate) mod input;
mod links;
mod metadata;
mod output;
mod report;
mod sdk;
mod sdk_source;
mod symbols;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use error::{Problem, ProblemKind, RepairError};
pub(crate) use metadata::requirements_of;
pub use sdk::without_graft_hash;
pub(crate) use sdk_source::name_and_version;

use crate::config::BuildTime;
use crate::output::destination::rewrite_run::{in_rewrite_run, RewriteRun};
use crate::platform::{host_machine, machine_of_tag};
use archive_write::{ArchiveOptions, PlatformTag, Progress};
use elf_rpath::EditStrategy;

/// What `cargo xtask repair` asks.
#[derive(Clone, Debug)]
pub struct RepairRequest {
    pub wheels: Vec<PathBuf>,
    /// `--against`: a `dist/` of the SDK's wheels, or a site-packages they are installed in.
    pub sdk: PathBuf,
    /// `--dest-dir`: repaired wheels go to its `dist/`, as packaging's archives do (SPEC §2).
    pub dest_dir: PathBuf,
    /// DT_NEEDED names that may resolve nowhere (another package provides them at run time).
    pub allow_missing: BTreeSet<String>,
    pub build_time: BuildTime,
    /// Deflate level of the members coded again (0-9).
    pub compression_level: u32,
}

/// One repaired wheel, for the summary and `--json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RepairedWheel {
    pub input: PathBuf,
    pub output: PathBuf,
    pub platform_tag: String,
    pub requirements_added: Vec<String>,
    /// Bundled copies of SDK libraries removed: member → the SDK SONAME.
    pub removed: BTreeMap<String, String>,
    pub edited: Vec<EditedFile>,
    /// Members left out: directory entries, the old RECORD's signatures.
    pub dropped: Vec<String>,
    /// Bytes copied as coded bytes, and bytes coded again.
    pub copied_bytes: u64,
    pub coded_bytes: u64,
}

/// One edited ELF member.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EditedFile {
    pub member: String,
    pub strategy: EditStrategy,
    pub rpath: Option<String>,
    pub renamed: Vec<(String, String)>,
    /// Search path entries taken out, with why.
    pub removed_entries: Vec<(String, String)>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct RepairReport {
    pub sdk: PathBuf,
    /// `name version` of each SDK package read.
    pub sdk_packages: Vec<String>,
    pub wheels: Vec<RepairedWheel>,
}

/// Repairs every wheel of `request` against its SDK; all of them are written, or none.
pub fn repair(request: &RepairRequest, progress: &dyn Progress) -> Result<RepairReport, RepairError> {
    let mut machine = None;
    for wheel in &request.wheels {
        let name = input::linux_wheel_name(wheel)?;
        machine.get_or_insert(machine_of_tag(name.platform.as_str()));
    }
    let machine = machine.unwrap_or_else(host_machine);
    progress.stage("sdk", 0);
    let sdk = sdk_source::read_sdk(&request.sdk, machine)?;
    for wheel in &request.wheels {
        // The set's own packages are linked when packaged: a repair would take their
        // libraries for bundled copies and write a package requiring itself (SPEC §11).
        let name = input::linux_wheel_name(wheel)?.name.normalized();
        if sdk.is_own_package(&name) {
            return Err(RepairError::OwnPackage { path: wheel.clone(), name });
        }
    }
    // A refused repair leaves the destination as it found it: no empty `dist/` either.
    in_rewrite_run(&request.dest_dir, ".rocm-packager-repair-", request.build_time, request.compression_level, |run| {
        repair_into_destination(request, &sdk, run, progress)
    })
}

/// The repairs once the SDK is read: every wheel staged, then committed together.
fn repair_into_destination(
    request: &RepairRequest,
    sdk: &sdk::Sdk,
    run: &RewriteRun,
    progress: &dyn Progress,
) -> Result<RepairReport, RepairError> {
    let RewriteRun { lock, scratch, options } = run;
    let mut staged = Vec::new();
    let mut reports = Vec::new();
    for (index, path) in request.wheels.iter().enumerate() {
        progress.stage(&format!("repair {}", path.display()), 0);
        let work = scratch.path().join(format!("wheel-{index}"));
        std::fs::create_dir(&work)
            .map_err(|source| archive_write::WriteError::io(archive_write::WriteAction::CreateDir, &work, source))?;
        let (file, report) = repair_one(path, sdk, request, &work, lock.output_dir(), options, progress)?;
        if let Some(first) = reports.iter().find(|earlier: &&RepairedWheel| earlier.output == report.output) {
            let file_name = file.written.file_name.clone();
            return Err(RepairError::SameOutput { first: first.input.clone(), second: path.clone(), file_name });
        }
        staged.push(file);
        reports.push(report);
    }
    let written = lock.commit(staged)?;
    for (report, file) in reports.iter_mut().zip(&written) {
        report.output = file.path.clone();
        report.copied_bytes = file.reuse.reused_bytes;
        report.coded_bytes = file.reuse.compressed_bytes;
    }
    let sdk_packages = sdk.packages.iter().map(|package| format!("{} {}", package.name, package.version)).collect();
    Ok(RepairReport { sdk: sdk.location.clone(), sdk_packages, wheels: reports })
}

fn repair_one(
    path: &Path,
    sdk: &sdk::Sdk,
    request: &RepairRequest,
    work: &Path,
    output_dir: &Path,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<(archive_write::StagedFile, RepairedWheel), RepairError> {
    let wheel = input::read_input(path, work)?;
    let has_elf_files = wheel.members.iter().any(|member| member.extracted.is_some());
    let refused = metadata::refusals(&wheel.name, &wheel.dist_info, &wheel.metadata, &wheel.wheel_file, has_elf_files);
    if !refused.is_empty() {
        return Err(RepairError::BadWheel { path: path.to_path_buf(), reason: refused.join("; ") });
    }
    let linking = links::link(&wheel, sdk, &request.allow_missing);
    let mut problems = linking.problems.clone();
    problems.extend(symbols::check_symbols(&wheel, sdk, &linking));
    let requirements = sdk.requirements(&linking.linked);
    let metadata_member = format!("{}/METADATA", wheel.dist_info);
    let metadata = match metadata::rewrite_metadata(&wheel.metadata, sdk, &requirements, &metadata_member) {
        Ok(rewritten) => Some(rewritten),
        Err(found) => {
            problems.extend(found);
            None
        }
    };
    let unlinkable = |problems: Vec<Problem>| RepairError::Unlinkable {
        path: path.to_path_buf(),
        sdk: sdk.location.clone(),
        problems,
    };
    let Some((metadata, requirements_added)) = metadata.filter(|_| problems.is_empty()) else {
        problems.sort();
        problems.dedup();
        return Err(unlinkable(problems));
    };
    let mut edits = BTreeMap::new();
    let mut edited = Vec::new();
    for (member, edit) in &linking.edits {
        let Some(elf) =
            wheel.members.iter().find(|candidate| &candidate.name == member).and_then(|found| found.elf.as_ref())
        else {
            continue;
        };
        let planned = elf_rpath::plan_edit(&elf.extracted, &edit.request).map_err(|source| RepairError::BadWheel {
            path: path.to_path_buf(),
            reason: format!("cannot edit {}: {}", crate::escape::escape(member), input::elf_reason(&source)),
        })?;
        edited.push(EditedFile {
            member: member.clone(),
            strategy: planned.strategy,
            rpath: edit.request.rpath.clone(),
            renamed: edit.request.replace_needed.clone(),
            removed_entries: edit
                .removed_entries
                .iter()
                .map(|(entry, why)| (entry.clone(), (*why).to_owned()))
                .collect(),
        });
        if !planned.is_unchanged() {
            edits.insert(member.clone(), planned);
        }
    }
    let platform_tag = choose_tag(&wheel, sdk, &linking, &request.allow_missing)?;
    let tag = PlatformTag::new(&platform_tag).map_err(|error| RepairError::BadWheel {
        path: path.to_path_buf(),
        reason: format!("the platform tag chosen for it cannot name a wheel: {error}"),
    })?;
    let file_name = metadata::output_file_name(&wheel.name, &tag);
    let wheel_file = metadata::rewrite_wheel_file(&wheel.wheel_file, &wheel.name, &platform_tag);
    let dropped = wheel.dropped.clone();
    let report = RepairedWheel {
        input: path.to_path_buf(),
        output: output_dir.join(&file_name),
        platform_tag,
        requirements_added,
        removed: linking.removed.clone(),
        edited,
        dropped,
        copied_bytes: 0,
        coded_bytes: 0,
    };
    let changes = output::Changes { file_name, metadata, wheel_file, removed: &linking.removed, edits };
    let staged = output::stage(wheel, changes, output_dir, options, progress)?;
    Ok((staged, report))
}

/// The manylinux tag the repaired wheel's host ELF files allow: libraries of the wheel, of
/// the SDK and allowed to be missing travel with it or its requirements; any other must
/// be one the policy leaves to the system.
fn choose_tag(
    wheel: &input::InputWheel,
    sdk: &sdk::Sdk,
    linking: &links::Linking,
    allowed: &BTreeSet<String>,
) -> Result<String, RepairError> {
    let mut shipped: BTreeSet<String> = sdk.libraries.keys().cloned().collect();
    shipped.extend(allowed.iter().cloned());
    let mut files = Vec::new();
    for member in wheel.members.iter().filter(|member| !linking.removed.contains_key(&member.name)) {
        if let Some(installed) = member.installed() {
            shipped.insert(installed.rsplit('/').next().unwrap_or(installed).to_owned());
        }
        let Some(elf) = &member.elf else { continue };
        let mut audit = elf.audit.clone();
        if let Some(edit) = linking.edits.get(&member.name) {
            for name in &mut audit.needed {
                if let Some((_, new)) = edit.request.replace_needed.iter().find(|(old, _)| old == name) {
                    *name = new.clone();
                }
            }
        }
        files.push((member.name.clone(), audit));
    }
    let arch = machine_of_tag(wheel.name.platform.as_str()).as_str();
    crate::output::manylinux::tag_for_files(wheel.name.name.as_str(), &files, &shipped, arch)
        .map_err(|source| RepairError::Tag { path: wheel.path.clone(), source })
}
