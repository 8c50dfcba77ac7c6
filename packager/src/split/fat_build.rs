//! `package --split-device`: a fat (legacy) build seen as the kpack-split build TheRock
//! would have made of the same sources (CONTRACT §12 "A fat build, split per target"), so
//! the packaging pipeline's kpack-split mode packages it and its packages are that mode's:
//! the arch-neutral `rocm-sdk-libraries` wheel, `rocm-sdk-device-<owner>` wheels, the
//! sdist's `device-<target>` choices. The view is a directory of artifacts beside the
//! destination: every unchanged file hard-linked (copied only across file systems), the
//! family's artifacts renamed `generic`, each fat library transformed (streamed through
//! `HostTransform`), one device artifact per group and target id holding its archive
//! (code objects streamed from the bundles, one at a time) and the kernel database files
//! of that target, the build manifest saying `KPACK_SPLIT_ARTIFACTS`. No source file is
//! ever written: the transformed and new files are fresh files.
//!
//! Owns: that view. Does not own: what the split is (`plan::device_code`), whether the
//! runtime loads archives (`plan::kpack_runtime`), packaging (the pipeline).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use device_code::bundle::FatBinary;
use device_code::host::{self, HostTransform, KpackRef};
use device_code::kpack::{ArchiveSpec, ArchiveWriter, Compression};

use super::binaries::tie_wrappers;
use super::error::SplitError;
use crate::input::catalog::Catalog;
use crate::plan::device_code::{plan_fat_split, FatLibrary, FatSplitPlan, SplitArchive};
use crate::plan::kpack_runtime::{check_kpack_runtime, KpackRuntime};
use crate::plan::PlanError;

/// The build manifest's place in the base artifact's tree.
const BUILD_MANIFEST: &str = "share/therock/therock_manifest.json";

/// The kpack-split view of a fat build.
#[derive(Debug)]
pub struct SplitBuild {
    /// The view's artifacts directory, to package as a kpack-split build.
    pub artifacts_dir: PathBuf,
    pub plan: FatSplitPlan,
    pub runtime: KpackRuntime,
    /// Removes the view when dropped.
    _dir: tempfile::TempDir,
}

/// Makes the kpack-split view of the fat build at `artifacts_dir` in a new directory
/// under `scratch_parent` (the destination, so hard links usually work).
pub fn split_build(
    artifacts_dir: &Path,
    scratch_parent: &Path,
    allow_runtime_without_kpack: bool,
    zstd_level: i32,
) -> Result<SplitBuild, SplitError> {
    let plan_error = |error: PlanError| SplitError::Plan(Box::new(error));
    let catalog = Catalog::read(artifacts_dir).map_err(|error| plan_error(error.into()))?;
    let runtime = check_kpack_runtime(&catalog, allow_runtime_without_kpack).map_err(plan_error)?;
    let plan = plan_fat_split(&catalog).map_err(plan_error)?;
    if plan.libraries.is_empty() {
        return Err(SplitError::Refused {
            path: artifacts_dir.to_path_buf(),
            reason: "no library of the build carries device code (.hip_fatbin): there is nothing to split".to_owned(),
        });
    }
    std::fs::create_dir_all(scratch_parent).map_err(|source| io(scratch_parent, source))?;
    let dir = tempfile::Builder::new()
        .prefix(".split-device-")
        .tempdir_in(scratch_parent)
        .map_err(|source| io(scratch_parent, source))?;
    let out = dir.path().to_path_buf();
    let family = plan.family.clone().unwrap_or_default();
    let fat: BTreeMap<PathBuf, &FatLibrary> =
        plan.libraries.iter().map(|library| (library.source.to_path_buf(), library)).collect();
    let moved = moved_databases(&catalog, &plan)?;
    let mut names = BTreeSet::new();
    for artifact in &catalog.artifacts {
        let mut name = artifact.name.clone();
        if name.target_family.as_str() == family {
            name.target_family = crate::targets::TargetFamily::parse("generic");
        }
        let dir_name = name.dir_name();
        if !names.insert(dir_name.clone()) {
            return Err(SplitError::Refused {
                path: artifact.dir.clone(),
                reason: format!("both a generic and a {family} artifact are named {dir_name}"),
            });
        }
        mirror(&artifact.dir, &out.join(&dir_name), &fat, &moved)?;
    }
    write_device_artifacts(&catalog, &plan, &moved, &out, zstd_level)?;
    Ok(SplitBuild { artifacts_dir: out, plan, runtime, _dir: dir })
}

/// Kernel database files by their path on disk: (device artifact, path inside it).
type Moved = BTreeMap<PathBuf, (String, PathBuf)>;

fn moved_databases(catalog: &Catalog, plan: &FatSplitPlan) -> Result<Moved, SplitError> {
    let mut moved = Moved::new();
    let selection = crate::input::catalog::Selection {
        artifacts: &|name| name.component == "lib",
        include: Vec::new(),
        exclude: Vec::new(),
    };
    let namespace = catalog.select(&selection).map_err(|error| SplitError::Plan(Box::new(error.into())))?;
    for database in &plan.databases {
        let Some(entry) = namespace.all.iter().find(|(rel, _)| rel.as_str() == database.rel).map(|(_, entry)| entry)
        else {
            continue;
        };
        let artifact = &catalog.artifacts[entry.artifact];
        let inside = entry.source.strip_prefix(&artifact.dir).unwrap_or(&entry.source).to_path_buf();
        let group = format!("{}_{}", artifact.name.name, artifact.name.component);
        moved.insert(entry.source.to_path_buf(), (format!("{group}_{}", database.wheel), inside));
    }
    Ok(moved)
}

/// Mirrors the artifact at `from` into `to`: links, directories, files hard-linked, fat
/// libraries transformed, kernel databases left out (they move), the build manifest
/// rewritten.
fn mirror(from: &Path, to: &Path, fat: &BTreeMap<PathBuf, &FatLibrary>, moved: &Moved) -> Result<(), SplitError> {
    std::fs::create_dir_all(to).map_err(|source| io(to, source))?;
    let entries = std::fs::read_dir(from).map_err(|source| io(from, source))?;
    for entry in entries {
        let entry = entry.map_err(|source| io(from, source))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(|source_error| io(&source, source_error))?;
        if kind.is_symlink() {
            let link = std::fs::read_link(&source).map_err(|source_error| io(&source, source_error))?;
            std::os::unix::fs::symlink(link, &target).map_err(|source_error| io(&target, source_error))?;
        } else if kind.is_dir() {
            mirror(&source, &target, fat, moved)?;
        } else if moved.contains_key(&source) {
            continue;
        } else if let Some(library) = fat.get(&source) {
            transform(library, &target)?;
        } else if source.ends_with(BUILD_MANIFEST) {
            rewrite_manifest(&source, &target)?;
        } else {
            link_or_copy(&source, &target)?;
        }
    }
    Ok(())
}

/// `target` as a hard link to `source`, or a copy where links cannot be made (another file
/// system). Never onto an existing file: copying onto a link would write into the build.
fn link_or_copy(source: &Path, target: &Path) -> Result<(), SplitError> {
    match std::fs::hard_link(source, target) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Err(io(target, error)),
        Err(_) => {
            let mut from = File::open(source).map_err(|error| io(source, error))?;
            let mut to = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(target)
                .map_err(|error| io(target, error))?;
            std::io::copy(&mut from, &mut to).map_err(|error| io(target, error))?;
            let mode = from.metadata().map_err(|error| io(source, error))?.permissions();
            std::fs::set_permissions(target, mode).map_err(|error| io(target, error))
        }
    }
}

/// A failed write (or read) of `path`, as the writer reports its own.
fn io(path: &Path, source: std::io::Error) -> SplitError {
    SplitError::Write(archive_write::WriteError::io(archive_write::WriteAction::Write, path, source))
}

fn device_error(library: &FatLibrary, source: device_code::DeviceCodeError) -> SplitError {
    SplitError::DeviceCode { path: library.source.to_path_buf(), member: library.rel.clone(), source }
}

fn marker(library: &FatLibrary) -> KpackRef {
    KpackRef { search_paths: vec![library.search_path.clone()], kernel_name: library.rel.clone() }
}

/// Writes `library` transformed to `target`, with its mode.
fn transform(library: &FatLibrary, target: &Path) -> Result<(), SplitError> {
    let file = File::open(&library.source).map_err(|source| io(&library.source, source))?;
    let binary = host::inspect(&file, &library.source).map_err(|source| device_error(library, source))?;
    let plan = HostTransform::plan(&binary, &marker(library)).map_err(|source| device_error(library, source))?;
    let mut out = BufWriter::with_capacity(1 << 20, File::create(target).map_err(|source| io(target, source))?);
    plan.write_to(&file, &mut out).map_err(|source| device_error(library, source))?;
    out.flush().map_err(|source| io(target, source))?;
    let mode = std::fs::metadata(&library.source).map_err(|source| io(&library.source, source))?.permissions();
    std::fs::set_permissions(target, mode).map_err(|source| io(target, source))
}

/// The build manifest with `flags.KPACK_SPLIT_ARTIFACTS` true.
fn rewrite_manifest(source: &Path, target: &Path) -> Result<(), SplitError> {
    let text = std::fs::read_to_string(source).map_err(|error| io(source, error))?;
    let mut manifest: serde_json::Value = serde_json::from_str(&text).map_err(|error| SplitError::Refused {
        path: source.to_path_buf(),
        reason: format!("the build manifest is not JSON: {error}"),
    })?;
    let Some(object) = manifest.as_object_mut() else {
        return Err(SplitError::Refused {
            path: source.to_path_buf(),
            reason: "the build manifest is not a JSON object".to_owned(),
        });
    };
    let flags = object.entry("flags").or_insert_with(|| serde_json::json!({}));
    if let Some(flags) = flags.as_object_mut() {
        flags.insert("KPACK_SPLIT_ARTIFACTS".to_owned(), serde_json::Value::Bool(true));
    }
    let text = serde_json::to_string_pretty(&manifest).expect("a JSON value serialises");
    std::fs::write(target, format!("{text}\n")).map_err(|error| io(target, error))
}

/// One device artifact per group and target id: its archive and its kernel databases.
fn write_device_artifacts(
    catalog: &Catalog,
    plan: &FatSplitPlan,
    moved: &Moved,
    out: &Path,
    zstd_level: i32,
) -> Result<(), SplitError> {
    // Manifest prefixes per device artifact.
    let mut prefixes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for archive in &plan.archives {
        let library = &plan.libraries[archive.libraries[0]];
        let prefix = prefix_of(catalog, library);
        let dir_name = format!("{}_{}", archive.group, archive.target_id);
        let path = out.join(&dir_name).join(&prefix).join(&archive.rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| io(parent, source))?;
        }
        write_archive(plan, archive, &path, zstd_level)?;
        prefixes.entry(dir_name).or_default().insert(prefix);
    }
    for (source, (dir_name, inside)) in moved {
        let path = out.join(dir_name).join(inside);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|error| io(parent, error))?;
        }
        link_or_copy(source, &path)?;
        let rel =
            plan.databases.iter().find(|database| inside.ends_with(&database.rel)).map(|database| database.rel.clone());
        let prefix = match rel {
            Some(rel) => {
                inside.to_string_lossy().strip_suffix(&rel).unwrap_or_default().trim_end_matches('/').to_owned()
            }
            None => String::new(),
        };
        prefixes.entry(dir_name.clone()).or_default().insert(prefix);
    }
    for (dir_name, prefixes) in prefixes {
        let manifest: String = prefixes.iter().map(|prefix| format!("{prefix}\n")).collect();
        let path = out.join(&dir_name).join("artifact_manifest.txt");
        std::fs::write(&path, manifest).map_err(|source| io(&path, source))?;
    }
    Ok(())
}

/// The manifest prefix `library` lives under in its artifact (`math-libs/BLAS/rocBLAS/stage`).
fn prefix_of(catalog: &Catalog, library: &FatLibrary) -> String {
    let artifact = catalog.artifacts.iter().find(|artifact| artifact.name.dir_name() == library.artifact);
    let inside = artifact.and_then(|artifact| library.source.strip_prefix(&artifact.dir).ok()).map(Path::to_path_buf);
    let inside = inside.unwrap_or_default().to_string_lossy().into_owned();
    inside.strip_suffix(&library.rel).unwrap_or_default().trim_end_matches('/').to_owned()
}

/// Writes the archive of `archive.target_id` for its group: each library's wrappers'
/// code objects for that target, keyed `<rel>#<wrapper index>`.
fn write_archive(plan: &FatSplitPlan, archive: &SplitArchive, path: &Path, zstd_level: i32) -> Result<(), SplitError> {
    let spec = ArchiveSpec {
        group_name: archive.group.clone(),
        gfx_arch_family: archive.target_id.clone(),
        gfx_arches: vec![archive.target_id.clone()],
        compression: Compression::Zstd { level: zstd_level },
    };
    let first = &plan.libraries[archive.libraries[0]];
    let mut writer = ArchiveWriter::new(spec).map_err(|source| device_error(first, source))?;
    for &index in &archive.libraries {
        let library = &plan.libraries[index];
        let failed = |source| device_error(library, source);
        let file = File::open(&library.source).map_err(|source| io(&library.source, source))?;
        let binary = host::inspect(&file, &library.source).map_err(failed)?;
        let Some(fat) = FatBinary::read(&file, &library.source).map_err(failed)? else { continue };
        let ties = tie_wrappers(&binary, &fat).map_err(|reason| {
            failed(device_code::DeviceCodeError::Elf { path: library.source.to_path_buf(), reason })
        })?;
        let mut ordinals: BTreeMap<(usize, usize), u32> = BTreeMap::new();
        for (wrapper, &bundle) in ties.iter().enumerate() {
            let key = format!("{}#{wrapper}", library.rel);
            let Some(entries) = fat.bundles().get(bundle).map(|bundle| &bundle.entries) else { continue };
            let found = entries.iter().enumerate().find(|(_, code_object)| {
                code_object.repeat == 0 && code_object.target.to_string() == archive.target_id
            });
            let Some((entry, code_object)) = found else { continue };
            match ordinals.get(&(bundle, entry)) {
                Some(&ordinal) => writer.alias(&key, &archive.target_id, ordinal).map_err(failed)?,
                None => {
                    let ordinal = writer
                        .add(&key, &archive.target_id, code_object.size, |out| {
                            fat.copy_code_object(code_object, out).map(|_| ())
                        })
                        .map_err(failed)?;
                    ordinals.insert((bundle, entry), ordinal);
                }
            }
        }
    }
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).map_err(|source| io(path, source))?);
    writer.finish(&mut out).map_err(|source| device_error(first, source))?;
    out.flush().map_err(|source| io(path, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_never_lands_on_an_existing_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (source, target) = (dir.path().join("source"), dir.path().join("target"));
        std::fs::write(&source, b"build").expect("write the source");
        link_or_copy(&source, &target).expect("linked");
        assert_eq!(std::fs::read(&target).expect("read"), b"build");
        let other = dir.path().join("other");
        std::fs::write(&other, b"other").expect("write another file");
        let error = link_or_copy(&other, &target).expect_err("refused");
        assert!(error.to_string().contains("target"), "{error}");
        assert_eq!(std::fs::read(&source).expect("read"), b"build", "the build is untouched");
    }

    #[test]
    fn the_build_manifest_says_kpack_split() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (source, target) = (dir.path().join("in.json"), dir.path().join("out.json"));
        std::fs::write(&source, "{\"the_rock_commit\": \"x\", \"flags\": {\"KPACK_SPLIT_ARTIFACTS\": false}}")
            .expect("write");
        rewrite_manifest(&source, &target).expect("rewritten");
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&target).expect("read")).expect("JSON");
        assert_eq!(value["flags"]["KPACK_SPLIT_ARTIFACTS"], true);
        assert_eq!(value["the_rock_commit"], "x");
        std::fs::write(&source, "[1]").expect("write");
        assert!(rewrite_manifest(&source, &dir.path().join("again.json")).is_err());
    }
}
