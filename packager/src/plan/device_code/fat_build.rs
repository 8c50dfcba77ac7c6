//! What splitting a fat (legacy) build per GPU target would be (CONTRACT §12 "A fat build,
//! split per target"): the libraries whose ELF files carry `.hip_fatbin` offload bundles,
//! the archives their code objects go to at the names TheRock's kpack-split build gives
//! them (`.kpack/<artifact>_<component>_<target id>.kpack` under the libraries platform
//! directory, `blas_lib_gfx90a:xnack+.kpack`), each library's marker search path relative
//! to its own directory (`../.kpack/blas_lib_@GFXARCH@.kpack` for `lib/librocblas.so.5`),
//! the kernel database files that move to their target's device wheel, the device wheels
//! by owner, and how the targets the bundles hold compare with those `dist_info.json`
//! declares. Only headers and bundle tables are read: no code object is opened here.
//!
//! A build of several families is refused: each family's libraries are compiled apart, so
//! their host code differs and no one arch-neutral libraries package can serve them.
//!
//! Owns: that plan. Does not own: reading bundles (the device-code crate), which wheel a
//! target or file goes to (`grouping`, `databases`), writing anything.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use device_code::bundle::FatBinary;
use device_code::host::{self, FatState};

use super::databases::database_key;
use super::grouping::WheelKey;
use crate::input::catalog::{Catalog, EntryKind, Selection};
use crate::plan::PlanError;
use crate::relpath::RelPath;
use crate::targets::Target;

/// The directory, at the top of the libraries platform directory, that holds the archives
/// (as TheRock's kpack-split artifacts ship them).
pub const ARCHIVE_DIR: &str = ".kpack";

/// A library (or program) of the build with device code in it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FatLibrary {
    /// Its path in the install tree (`lib/librocblas.so.5`).
    pub rel: String,
    #[serde(skip)]
    pub source: Arc<Path>,
    /// The artifact that ships it (`blas_lib_gfx90X-dcgpu`).
    pub artifact: String,
    /// The archives' group: the artifact's name and component (`blas_lib`).
    pub group: String,
    /// The marker's search path, relative to the file's directory.
    pub search_path: String,
    /// Its fat-binary wrappers (the keys `<rel>#<index>`).
    pub wrappers: usize,
    /// The target ids its bundles hold, sorted.
    pub targets: Vec<String>,
}

/// An archive the split would write.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SplitArchive {
    /// Its path under the libraries platform directory (`.kpack/blas_lib_gfx908.kpack`).
    pub rel: String,
    pub group: String,
    pub target_id: String,
    /// The device wheel it goes to (the owner's bare target, or a generic family).
    pub wheel: String,
    /// Indexes into [`FatSplitPlan::libraries`] whose code objects it holds.
    pub libraries: Vec<usize>,
}

/// A kernel database file named by a target, moving to that target's device wheel.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KernelDatabase {
    pub rel: String,
    pub wheel: String,
}

/// What a split of the fat build would be.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FatSplitPlan {
    /// The build's one family (`gfx90X-dcgpu`), if it names one.
    pub family: Option<String>,
    pub libraries: Vec<FatLibrary>,
    pub archives: Vec<SplitArchive>,
    pub databases: Vec<KernelDatabase>,
    /// The device wheels, by key (`gfx908`, `gfx90a`, `gfx11-generic`), sorted.
    pub device_wheels: Vec<String>,
    /// Every target id with code objects, sorted.
    pub targets: Vec<String>,
    /// Processors `dist_info.json` declares that no code object is for.
    pub declared_without_code: Vec<String>,
    /// Target ids with code objects whose processor `dist_info.json` does not declare.
    pub undeclared: Vec<String>,
}

/// Plans the split of the fat build in `catalog`.
pub fn plan_fat_split(catalog: &Catalog) -> Result<FatSplitPlan, PlanError> {
    if catalog.kpack_split() {
        return Err(PlanError::FatSplit {
            reason: "the build is kpack-split already (KPACK_SPLIT_ARTIFACTS): its device artifacts are packaged \
                     as they are"
                .to_owned(),
        });
    }
    let families: BTreeSet<String> =
        catalog.target_families().iter().filter(|family| !family.is_generic()).map(ToString::to_string).collect();
    if families.len() > 1 {
        return Err(PlanError::FatSplit {
            reason: format!(
                "the build has libraries for several families ({}), compiled apart, so their host code differs and \
                 no one arch-neutral libraries package serves them",
                families.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let mut plan = FatSplitPlan { family: families.into_iter().next(), ..FatSplitPlan::default() };
    let is_library = |name: &crate::input::catalog::ArtifactName| name.component == "lib";
    let namespace = catalog.select(&Selection { artifacts: &is_library, include: Vec::new(), exclude: Vec::new() })?;
    for (rel, entry) in &namespace.all {
        if !matches!(entry.kind, EntryKind::File { .. }) {
            continue;
        }
        // A file named by a family pattern (`amd-gfx11xx`) serves several targets, and a
        // kpack-split build has no artifact for a pattern: it stays with the libraries.
        if let Some(key) = database_key(rel.as_str()).filter(|key| !key.is_family()) {
            plan.databases.push(KernelDatabase { rel: rel.as_str().to_owned(), wheel: key.to_string() });
            continue;
        }
        let artifact = catalog.artifact_dir_name(entry.artifact);
        if let Some(library) = read_fat(rel, &entry.source, &artifact)? {
            plan.libraries.push(library);
        }
    }
    plan_archives(&mut plan);
    compare_declared(&mut plan, catalog.dist_amdgpu_targets.as_deref().unwrap_or_default());
    Ok(plan)
}

/// The fat library at `source`, or `None` for a file with no device code.
fn read_fat(rel: &RelPath, source: &Arc<Path>, artifact: &str) -> Result<Option<FatLibrary>, PlanError> {
    let failed = |source| PlanError::DeviceCode { path: rel_path(rel), source };
    let io = |error| failed(device_code::DeviceCodeError::Io { path: rel_path(rel), source: error });
    let file = File::open(source).map_err(io)?;
    let mut magic = [0u8; 4];
    if (&file).read_exact(&mut magic).is_err() || magic != *b"\x7fELF" {
        return Ok(None);
    }
    let host = host::inspect(&file, source).map_err(failed)?;
    if host.state() != FatState::Fat {
        return Ok(None);
    }
    let Some(fat) = FatBinary::read(&file, source).map_err(failed)? else { return Ok(None) };
    let targets: BTreeSet<String> = fat
        .bundles()
        .iter()
        .flat_map(|bundle| &bundle.entries)
        .map(|code_object| code_object.target.to_string())
        .collect();
    let group = artifact.rsplit_once('_').map_or(artifact, |(group, _)| group).to_owned();
    Ok(Some(FatLibrary {
        rel: rel.as_str().to_owned(),
        source: source.clone(),
        artifact: artifact.to_owned(),
        search_path: search_path(rel.as_str(), &group),
        group,
        wrappers: host.wrappers().len(),
        targets: targets.into_iter().collect(),
    }))
}

fn rel_path(rel: &RelPath) -> std::path::PathBuf {
    std::path::PathBuf::from(rel.as_str())
}

/// The marker's search path of a file at `rel`: up to the platform directory, then the
/// archive directory (`@GFXARCH@` is the runtime's).
pub fn search_path(rel: &str, group: &str) -> String {
    let depth = rel.matches('/').count();
    format!("{}{ARCHIVE_DIR}/{group}_@GFXARCH@.kpack", "../".repeat(depth))
}

/// One archive per (group, target id), holding every library of the group with code for it.
fn plan_archives(plan: &mut FatSplitPlan) {
    let mut archives: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (index, library) in plan.libraries.iter().enumerate() {
        for target_id in &library.targets {
            archives.entry((library.group.clone(), target_id.clone())).or_default().push(index);
        }
    }
    let mut wheels: BTreeSet<String> = plan.databases.iter().map(|database| database.wheel.clone()).collect();
    let mut targets = BTreeSet::new();
    for ((group, target_id), libraries) in archives {
        let wheel = WheelKey::of_target_id(&target_id).map_or_else(|| target_id.clone(), |key| key.to_string());
        wheels.insert(wheel.clone());
        targets.insert(target_id.clone());
        plan.archives.push(SplitArchive {
            rel: format!("{ARCHIVE_DIR}/{group}_{target_id}.kpack"),
            group,
            target_id,
            wheel,
            libraries,
        });
    }
    plan.device_wheels = wheels.into_iter().collect();
    plan.targets = targets.into_iter().collect();
}

/// What `dist_info.json` declares (`gfx908;gfx90a`) against what the bundles hold.
fn compare_declared(plan: &mut FatSplitPlan, declared: &str) {
    let declared: BTreeSet<String> =
        declared.split(';').map(str::trim).filter(|name| !name.is_empty()).map(str::to_owned).collect();
    let processor = |target_id: &str| target_id.split(':').next().unwrap_or(target_id).to_owned();
    let with_code: BTreeSet<String> = plan.targets.iter().map(|target_id| processor(target_id)).collect();
    plan.declared_without_code = declared.iter().filter(|name| !with_code.contains(*name)).cloned().collect();
    plan.undeclared = plan
        .targets
        .iter()
        .filter(|target_id| {
            let bare = processor(target_id);
            !declared.contains(&bare) && !Target::from_target_id(&bare).as_str().ends_with("-generic")
        })
        .cloned()
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_paths_climb_to_the_platform_directory() {
        assert_eq!(search_path("lib/librocblas.so.5", "blas_lib"), "../.kpack/blas_lib_@GFXARCH@.kpack");
        assert_eq!(search_path("lib/llvm/lib/libx.so", "x_lib"), "../../../.kpack/x_lib_@GFXARCH@.kpack");
        assert_eq!(search_path("bin/tool", "t_run"), "../.kpack/t_run_@GFXARCH@.kpack");
    }

    #[test]
    fn declared_targets_against_code_objects() {
        let mut plan = FatSplitPlan {
            targets: vec!["gfx90a:xnack+".to_owned(), "gfx90a:xnack-".to_owned(), "gfx942".to_owned()],
            ..FatSplitPlan::default()
        };
        compare_declared(&mut plan, "gfx908;gfx90a; ");
        assert_eq!(plan.declared_without_code, ["gfx908"]);
        assert_eq!(plan.undeclared, ["gfx942"]);
    }
}
