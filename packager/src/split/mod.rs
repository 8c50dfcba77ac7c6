//! `cargo xtask split`: a fat HIP wheel becomes a host wheel and one device wheel per GPU
//! target, in rocm-kpack's format, so the runtime loads each GPU's code from an archive of
//! its own and a user downloads only the code of the GPUs they have (SPEC §12).
//!
//! The stages, one child each: the wheel is read once (`repair`'s reader: members checked
//! against RECORD, ELF members extracted to a scratch directory); `binaries` finds the fat
//! ones and ties each wrapper to its bundle; `plan::device_code`'s `databases` finds kernel
//! database files named by target and its `grouping` decides the device wheels and the
//! extras (rules `package --split-device` shares); `archives` writes one
//! archive per package directory and target; `metadata` the host's extras and the device
//! wheels' metadata; `output` stages every wheel; `report` is the text the CLI prints.
//! Everything is written, or nothing: the run's wheels are renamed into the output
//! directory together, under the destination's lock, when all are complete.
//!
//! Owns: the order of those stages and the report. Does not own: the formats (the
//! device-code crate), the writer (`archive-write`).

mod archives;
mod binaries;
mod error;
mod fat_build;
mod metadata;
mod output;
mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::SplitError;
pub use fat_build::{split_build, SplitBuild};

use crate::config::BuildTime;
use crate::output::destination::rewrite_run::{in_rewrite_run, RewriteRun};
use crate::plan::device_code::{databases, grouping};
use crate::repair::input::read_input;
use archive_write::{ArchiveOptions, DistName, Progress, StagedFile};
use binaries::{Binary, FatMember};
use device_code::host::HostTransform;
use grouping::WheelKey;

/// What `cargo xtask split` asks.
#[derive(Clone, Debug)]
pub struct SplitRequest {
    pub wheels: Vec<PathBuf>,
    /// The device wheels' names start with this (`torch-device` → `torch-device-gfx942`);
    /// `None`: the host's name and `-device`.
    pub device_prefix: Option<String>,
    /// Requirements every target's device wheel gets, `@GFXARCH@` its target.
    pub device_requires: Vec<String>,
    /// The wheels go to its `dist/`, as packaging's archives do (SPEC §2).
    pub dest_dir: PathBuf,
    pub build_time: BuildTime,
    /// Deflate level of the members coded again (0-9).
    pub compression_level: u32,
    /// zstd level of the code objects in the archives.
    pub zstd_level: i32,
}

/// One device wheel, for the summary and `--json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceWheelReport {
    pub path: PathBuf,
    pub key: String,
    /// The full target ids of its archives.
    pub targets: Vec<String>,
    pub code_objects: usize,
    /// Code object bytes before compression, and the archives' bytes.
    pub original_bytes: u64,
    pub archive_bytes: u64,
    pub database_files: usize,
}

/// One transformed binary.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BinaryReport {
    pub member: String,
    pub wrappers: usize,
    pub targets: Vec<String>,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// What happened to one input wheel.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SplitWheelReport {
    pub input: PathBuf,
    /// The host wheel; None when the wheel had no device code and was left as it is.
    pub host: Option<PathBuf>,
    pub binaries: Vec<BinaryReport>,
    pub devices: Vec<DeviceWheelReport>,
    /// Why nothing was written for it, when nothing was.
    pub left_as_is: Option<String>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct SplitReport {
    pub wheels: Vec<SplitWheelReport>,
}

/// Splits every wheel of `request`; all outputs are written, or none.
pub fn split(request: &SplitRequest, progress: &dyn Progress) -> Result<SplitReport, SplitError> {
    for wheel in &request.wheels {
        crate::repair::input::linux_wheel_name(wheel).map_err(|error| match error {
            crate::repair::RepairError::Windows { .. } => SplitError::Windows { path: wheel.clone() },
            other => SplitError::Read(Box::new(other)),
        })?;
    }
    in_rewrite_run(&request.dest_dir, ".rocm-packager-split-", request.build_time, request.compression_level, |run| {
        split_into_destination(request, run, progress)
    })
}

/// The splits: every wheel staged, then committed together.
fn split_into_destination(
    request: &SplitRequest,
    run: &RewriteRun,
    progress: &dyn Progress,
) -> Result<SplitReport, SplitError> {
    let RewriteRun { lock, scratch, options } = run;
    let mut staged: Vec<StagedFile> = Vec::new();
    let mut reports = Vec::new();
    for (index, path) in request.wheels.iter().enumerate() {
        progress.stage(&format!("split {}", path.display()), 0);
        let work = scratch.path().join(format!("wheel-{index}"));
        std::fs::create_dir(&work)
            .map_err(|source| archive_write::WriteError::io(archive_write::WriteAction::CreateDir, &work, source))?;
        let (files, report) = split_one(path, request, &work, lock.output_dir(), options, progress)?;
        for file in &files {
            if let Some(first) = staged.iter().find(|earlier| earlier.written.file_name == file.written.file_name) {
                return Err(SplitError::SameOutput {
                    first: first.written.path.clone(),
                    second: path.clone(),
                    file_name: file.written.file_name.clone(),
                });
            }
        }
        staged.extend(files);
        reports.push(report);
    }
    lock.commit(staged)?;
    Ok(SplitReport { wheels: reports })
}

fn split_one(
    path: &Path,
    request: &SplitRequest,
    work: &Path,
    output_dir: &Path,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<(Vec<StagedFile>, SplitWheelReport), SplitError> {
    let mut wheel = read_input(path, work).map_err(Box::new)?;
    let group = binaries::group_name(wheel.name.name.as_str());
    let mut fat = Vec::new();
    let mut already_split = Vec::new();
    for member in &wheel.members {
        match binaries::read_binary(path, member, &group)? {
            Binary::Fat(binary) => fat.push(*binary),
            Binary::AlreadySplit => already_split.push(member.name.clone()),
            Binary::Plain => {}
        }
    }
    if !already_split.is_empty() || metadata::offers_device_extras(&wheel.metadata) {
        let why = match already_split.first() {
            Some(member) => format!("{member} carries kpack (HIPK) wrappers"),
            None => "its METADATA already offers device-<target> extras".to_owned(),
        };
        return Err(SplitError::AlreadySplit { path: path.to_path_buf(), why });
    }
    let databases: BTreeMap<String, WheelKey> = wheel
        .members
        .iter()
        .filter_map(|member| Some((member.name.clone(), databases::database_key(member.installed()?)?)))
        .collect();
    if fat.is_empty() && databases.is_empty() {
        let report = SplitWheelReport {
            input: path.to_path_buf(),
            host: None,
            binaries: Vec::new(),
            devices: Vec::new(),
            left_as_is: Some("it carries no device code".to_owned()),
        };
        return Ok((Vec::new(), report));
    }
    let output_path = output_dir.join(wheel.name.to_string());
    if same_file(&output_path, path) {
        return Err(SplitError::ReplacesInput { path: path.to_path_buf() });
    }
    let plans = archives::plan_archives(&fat, &group);
    // Every refusal comes before an archive is written: targets named, names valid,
    // transforms planned.
    let mut keys: BTreeSet<WheelKey> = databases.values().cloned().collect();
    let mut key_of_target: BTreeMap<String, WheelKey> = BTreeMap::new();
    for plan in plans.values() {
        let key = WheelKey::of_target_id(&plan.target_id).ok_or_else(|| SplitError::Refused {
            path: path.to_path_buf(),
            reason: format!("its device code is built for `{}`, which is no GPU target known here", plan.target_id),
        })?;
        keys.insert(key.clone());
        key_of_target.insert(plan.target_id.clone(), key);
    }
    let prefix = request.device_prefix.clone().unwrap_or_else(|| format!("{}-device", wheel.name.name.as_str()));
    let names = device_names(path, &prefix, &keys)?;
    let transforms = transforms(path, &fat)?;
    progress.stage(&format!("archives of {}", wheel.name), plans.len() as u64);
    let written = archives::write_archives(path, &fat, &plans, &group, work, request.zstd_level)?;
    let mut archives_by_key: BTreeMap<WheelKey, Vec<archives::WrittenArchive>> = BTreeMap::new();
    for archive in written {
        let key = key_of_target.get(&archive.target_id).expect("every archive written was planned, its key with it");
        archives_by_key.entry(key.clone()).or_default().push(archive);
    }
    let version = wheel.name.version.as_str().to_owned();
    let extras = grouping::extras(&keys);
    let host_name = crate::repair::name_and_version(&wheel.metadata)
        .map(|(name, _)| name)
        .unwrap_or_else(|| wheel.name.name.to_string());
    let host_metadata = metadata::host_metadata(&wheel.metadata, &version, &names, &extras);
    let binary_reports = binary_reports(&fat, &transforms);
    let moved: BTreeSet<String> = databases.keys().cloned().collect();
    let mut moved_members = output::take_moved(&mut wheel, &moved);
    let mut staged = Vec::new();
    let mut devices = Vec::new();
    for (key, name) in &names {
        let archives = archives_by_key.remove(key).unwrap_or_default();
        let files: Vec<_> = databases
            .iter()
            .filter(|(_, file_key)| *file_key == key)
            .filter_map(|(member, _)| moved_members.remove(member))
            .collect();
        let targets: BTreeSet<String> = archives.iter().map(|archive| archive.target_id.clone()).collect();
        let file_name = metadata::device_file_name(&wheel.name, name.clone());
        let device = output::DeviceWheel {
            file_name: file_name.to_string(),
            dist_info: file_name.dist_info_dir(),
            name: name.to_string(),
            metadata: metadata::device_metadata(name, &version, &host_name, key, &request.device_requires, &targets),
            wheel_file: metadata::device_wheel_file(&wheel.wheel_file, &generator_name()),
            archives,
            files,
        };
        let report = device_report(output_dir, &device, key);
        staged.push(output::stage_device(path, device, output_dir, options, progress)?);
        devices.push(report);
    }
    let changes = output::HostChanges { metadata: host_metadata, transforms };
    staged.push(output::stage_host(wheel, changes, output_dir, options, progress)?);
    let report = SplitWheelReport {
        input: path.to_path_buf(),
        host: Some(output_path),
        binaries: binary_reports,
        devices,
        left_as_is: None,
    };
    Ok((staged, report))
}

/// The `Generator:` of the device wheels' WHEEL files, as the writer spells its own.
fn generator_name() -> String {
    let generator = crate::output::GENERATOR;
    format!("{} {}", generator.name, generator.version)
}

/// Whether two paths name one file (the output would replace the input).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn device_names(
    path: &Path,
    prefix: &str,
    keys: &BTreeSet<WheelKey>,
) -> Result<BTreeMap<WheelKey, DistName>, SplitError> {
    keys.iter()
        .map(|key| {
            let name = metadata::device_name(prefix, key).map_err(|error| SplitError::Refused {
                path: path.to_path_buf(),
                reason: format!("the device wheel of {key} cannot be named `{prefix}-{key}`: {error}"),
            })?;
            Ok((key.clone(), name))
        })
        .collect()
}

/// Each fat binary's transform, planned now so every refusal comes before anything is
/// written.
fn transforms(path: &Path, fat: &[FatMember]) -> Result<output::Transforms, SplitError> {
    fat.iter()
        .map(|binary| {
            let plan = HostTransform::plan(&binary.host, &binary.marker).map_err(|source| SplitError::DeviceCode {
                path: path.to_path_buf(),
                member: binary.member.clone(),
                source,
            })?;
            Ok((binary.member.clone(), (Arc::from(binary.extracted.as_path()), Arc::new(plan))))
        })
        .collect()
}

fn binary_reports(fat: &[FatMember], transforms: &output::Transforms) -> Vec<BinaryReport> {
    fat.iter()
        .map(|binary| {
            let targets: BTreeSet<String> = binary
                .fat
                .bundles()
                .iter()
                .flat_map(|bundle| bundle.entries.iter().map(|entry| entry.target.to_string()))
                .collect();
            let bytes_before = binary.host.headers().file_size;
            BinaryReport {
                member: binary.member.clone(),
                wrappers: binary.wrapper_bundles.len(),
                targets: targets.into_iter().collect(),
                bytes_before,
                bytes_after: transforms.get(&binary.member).map(|(_, plan)| plan.output_len()).unwrap_or(bytes_before),
            }
        })
        .collect()
}

fn device_report(output_dir: &Path, device: &output::DeviceWheel, key: &WheelKey) -> DeviceWheelReport {
    DeviceWheelReport {
        path: output_dir.join(&device.file_name),
        key: key.to_string(),
        targets: device.archives.iter().map(|archive| archive.target_id.clone()).collect(),
        code_objects: device.archives.iter().map(|archive| archive.code_objects.len()).sum(),
        original_bytes: device.archives.iter().map(|archive| archive.original_bytes).sum(),
        archive_bytes: device.archives.iter().map(|archive| archive.len).sum(),
        database_files: device.files.len(),
    }
}
