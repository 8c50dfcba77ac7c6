//! What each output is made of, as the archive writer's specs: a wheel's members (the
//! Python we ship, the planned payload read from the artifacts, launchers, the devel
//! tarball whose entries the plan's devel tree yields as it is walked again), its core
//! metadata and bill of materials, and the `rocm` sdist.
//!
//! Owns: those specs and the words every package's metadata says. Does not own: what goes
//! where (`plan`), how payload files are read (`payload`), writing (the output stage and
//! `archive-write`).

use std::collections::BTreeSet;
use std::sync::Arc;

use archive_write::{
    CoreMetadata, EntryPoint, Generator, Member, MemberData, SdistFile, SdistSpec, TarEntry, TarEntryKind,
    TarEntrySource, TarTotals, TarballSpec, Version, WheelRoot, WheelSpec, WriteError,
};
use elf_rpath::EditStrategy;

use crate::config::DevelTarballCompression;
use crate::identity::{self, PackageRole};
use crate::input::CatalogError;
use crate::plan::{DevelEntry, DevelTree, DistInfo, PackagePlan, Plan, PlanError, PlannedFile};
use crate::platform::BuildOs;
use crate::relpath::RelPath;

use super::launcher::LauncherTemplate;
use super::{payload, python, OutputError, Run};

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

/// A Windows build declares a console script only for a tool it has (`{tool}.exe` in the
/// package): some tools of the table exist on Linux alone, and a Windows build may leave
/// out others (rocminfo), so `rocm-sdk test` expects only what was built (SPEC §7).
fn retain_built_tools(entry_points: &mut Vec<EntryPoint>, package: &PackagePlan, info: &DistInfo) {
    let built: BTreeSet<&str> = python::console_scripts_of(&package.role, info)
        .into_iter()
        .filter(|script| {
            RelPath::new(&format!("{}.exe", script.tool)).is_ok_and(|exe| package.files.contains_key(&exe))
        })
        .map(|script| script.name)
        .collect();
    entry_points.retain(|entry| built.contains(entry.name.as_str()));
}

pub(super) fn wheel_spec(
    run: &Run<'_>,
    package: &PackagePlan,
    devel_tarball: DevelTarballCompression,
) -> Result<WheelSpec, OutputError> {
    let (plan, launcher) = (run.plan, run.launcher);
    let names = &package.names;
    let platform_tag = run.tags.get(&package.role).ok_or_else(|| OutputError::Invalid {
        message: format!("no platform tag chosen for {}", names.distribution),
    })?;
    let mut python_part = python::python_part(&package.role, &plan.dist_info);
    if plan.build_os == BuildOs::Windows {
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
            return Err(OutputError::Invalid { message });
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
pub(super) fn core_metadata(distribution: &str, version: &Version, requires_dist: Vec<String>) -> CoreMetadata {
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
fn member_data(file: &PlannedFile, launcher: Option<&LauncherTemplate>) -> Result<MemberData, OutputError> {
    Ok(match file {
        PlannedFile::Copy { source, len, stamp, .. } => payload::file(Arc::clone(source), *len, Some(*stamp)),
        PlannedFile::PatchRpath { source, len, stamp, edit, .. } if edit.strategy == EditStrategy::Unchanged => {
            payload::file(Arc::clone(source), *len, Some(*stamp))
        }
        PlannedFile::PatchRpath { source, len, stamp, edit, .. } => {
            payload::patch_rpath(Arc::clone(source), *len, Some(*stamp), edit.planned())
        }
        PlannedFile::Launcher { target, .. } => {
            let template =
                launcher.ok_or_else(|| OutputError::Invalid { message: "launcher was not compiled".to_owned() })?;
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
        self.tree
            .walk_planned(&mut |rel, entry| {
                let kind = match entry {
                    DevelEntry::Dir => TarEntryKind::Dir,
                    DevelEntry::Symlink { target, .. } => TarEntryKind::Symlink { target: target.clone() },
                    // The devel tree keeps executable symlinks as links: it has no launchers.
                    DevelEntry::File { file } => TarEntryKind::File {
                        data: member_data(file, None).map_err(|error| {
                            TreeStop::Write(WriteError::Invalid { reason: format!("devel tree {rel}: {error}") })
                        })?,
                        executable: file.is_executable(),
                    },
                };
                each(TarEntry { name: format!("{}/{rel}", self.root), kind }).map_err(TreeStop::Write)
            })
            .map_err(|stop| match stop {
                TreeStop::Write(error) => error,
                TreeStop::Tree(error) => self.write_error(error),
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

/// Why the tarball's walk of a devel tree stopped: the writer's own error, passed back as
/// it was, or the tree's (its artifacts changed or cannot be read since the plan).
enum TreeStop {
    Write(WriteError),
    Tree(PlanError),
}

impl From<PlanError> for TreeStop {
    fn from(error: PlanError) -> TreeStop {
        TreeStop::Tree(error)
    }
}

impl DevelTreeEntries {
    /// The tree's error in the writer's terms: a change or a failed read of an artifact
    /// file is the writer's own kind of error (SPEC §5), anything else is named.
    fn write_error(&self, error: PlanError) -> WriteError {
        match error {
            PlanError::Changed { path, reason } => WriteError::Changed { path, reason },
            PlanError::Catalog(CatalogError::Read { path, source }) => WriteError::Read { path, source },
            other => WriteError::Invalid { reason: format!("devel tree under {}: {other}", self.root) },
        }
    }
}

pub(super) fn sdist_spec(plan: &Plan) -> SdistSpec {
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
