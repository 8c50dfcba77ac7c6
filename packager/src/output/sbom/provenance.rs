//! Where each member of a wheel came from: a file of a TheRock artifact (which basedir,
//! which path, copied or edited), something rocm-packager made (from which artifacts), or a
//! member of another wheel (one a repair rewrote).
//!
//! Owns: [`Provenance`] and reading it off a package plan: a planned file's source lies in
//! `{artifacts dir}/{artifact}/{basedir}/{path}` (SPEC §1), which the plan's artifacts
//! split. Does not own: digests (the writer's) or how the document says it (`document`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::input::catalog::Artifact;
use crate::input::third_party::ThirdPartySources;
use crate::plan::{PackagePlan, PlannedFile};

/// Every member's origin, by member path, and what the checkout said of third-party code.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    origins: BTreeMap<String, Origin>,
    /// The third-party sources of the TheRock checkout the build came from; `None` when
    /// there was none to read, so bundled libraries are known by their file names alone.
    pub sources: Option<Arc<ThirdPartySources>>,
}

/// Where one member came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A file of a TheRock artifact: `{artifact}/{basedir}/{path}` in the artifacts directory.
    Artifact { artifact: Arc<str>, basedir: Arc<str>, path: String, edit: Edit },
    /// Made by rocm-packager (the Python package, device link manifests, the devel tarball),
    /// from the files of these artifacts (the devel tarball's; none for the others).
    Generated { artifacts: Vec<String> },
    /// A member of the wheel `file_name` (the wheel a repair rewrote).
    Wheel { file_name: String, edit: Edit },
}

/// What was done to a file's bytes on their way into the wheel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Byte for byte.
    None,
    /// Its ELF search path rewritten (SPEC §2 "RPATHs"), so its digest is not the input's.
    Rpath,
    /// An executable symlink made a compiled launcher of `target` (SPEC §2).
    Launcher { target: String },
    /// A host binary whose device code moved to archives of the device wheels (SPEC §12).
    DeviceCodeRemoved,
    /// A kpack archive made of the code objects of the wheel's binaries, each named
    /// `<kernel name>#<index> <target>` (SPEC §12).
    DeviceArchive { code_objects: Vec<String> },
}

impl Provenance {
    /// No member known yet; `sources` as for [`Provenance::sources`].
    pub fn new(sources: Option<Arc<ThirdPartySources>>) -> Provenance {
        Provenance { origins: BTreeMap::new(), sources }
    }

    /// Says where `member` came from (a later call for the same member wins).
    pub fn insert(&mut self, member: String, origin: Origin) {
        self.origins.insert(member, origin);
    }

    /// Where `member` came from; a member nobody described was made by rocm-packager.
    pub fn origin(&self, member: &str) -> Origin {
        self.origins.get(member).cloned().unwrap_or(Origin::Generated { artifacts: Vec::new() })
    }

    /// The origins of a package plan's files, each at its member path in the wheel. A file
    /// the plan generated (a device link manifest) has none of its own: it was made here.
    pub fn of_package(
        package: &PackagePlan,
        artifacts: &[Artifact],
        sources: Option<Arc<ThirdPartySources>>,
    ) -> Provenance {
        let locate = Locator::new(artifacts);
        let mut provenance = Provenance::new(sources);
        for (rel, file) in &package.files {
            let (source, edit): (&Path, Edit) = match file {
                PlannedFile::Copy { source, .. } => (source, Edit::None),
                PlannedFile::PatchRpath { source, edit, .. } if edit.strategy == elf_rpath::EditStrategy::Unchanged => {
                    (source, Edit::None)
                }
                PlannedFile::PatchRpath { source, .. } => (source, Edit::Rpath),
                PlannedFile::Launcher { target, link } => (link, Edit::Launcher { target: target.clone() }),
                PlannedFile::Generated { .. } => continue,
            };
            if let Some((artifact, basedir, path)) = locate.split(source) {
                let origin = Origin::Artifact { artifact, basedir, path, edit };
                provenance.insert(package.names.platform_dir.member(rel), origin);
            }
        }
        provenance
    }
}

/// Splits a source path into artifact, basedir and path, by the artifacts' directories.
struct Locator<'a> {
    artifacts: Vec<LocatedArtifact<'a>>,
}

/// An artifact's directory, its name, and its basedirs with their names relative to it,
/// longest first (one basedir may lie inside another).
struct LocatedArtifact<'a> {
    dir: &'a Path,
    name: Arc<str>,
    basedirs: Vec<(&'a Path, Arc<str>)>,
}

impl<'a> Locator<'a> {
    fn new(artifacts: &'a [Artifact]) -> Locator<'a> {
        let artifacts = artifacts
            .iter()
            .map(|artifact| {
                let mut basedirs: Vec<(&Path, Arc<str>)> = artifact
                    .basedirs
                    .iter()
                    .map(|dir| {
                        let relative = dir.strip_prefix(&artifact.dir).unwrap_or(dir);
                        (dir.as_path(), Arc::from(relative.to_string_lossy().as_ref()))
                    })
                    .collect();
                basedirs.sort_by_key(|(dir, _)| std::cmp::Reverse(dir.as_os_str().len()));
                LocatedArtifact { dir: &artifact.dir, name: Arc::from(artifact.name.dir_name().as_str()), basedirs }
            })
            .collect();
        Locator { artifacts }
    }

    fn split(&self, source: &Path) -> Option<(Arc<str>, Arc<str>, String)> {
        let artifact = self.artifacts.iter().find(|artifact| source.starts_with(artifact.dir))?;
        let (dir, basedir) = artifact.basedirs.iter().find(|(dir, _)| source.starts_with(dir))?;
        let path = source.strip_prefix(dir).ok()?.to_string_lossy().into_owned();
        Some((Arc::clone(&artifact.name), Arc::clone(basedir), path))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::input::catalog::ArtifactName;

    fn artifact(dir: &str, basedirs: &[&str]) -> Artifact {
        let root = PathBuf::from("/build/artifacts").join(dir);
        Artifact {
            name: ArtifactName::parse(dir).expect("an artifact name"),
            basedirs: basedirs.iter().map(|basedir| root.join(basedir)).collect(),
            dir: root,
        }
    }

    #[test]
    fn a_source_splits_into_artifact_basedir_and_path() {
        let artifacts = [
            artifact("blas_lib_gfx110X-all", &["math-libs/BLAS/rocBLAS/stage", "math-libs/BLAS/rocBLAS/stage/lib/x"]),
            artifact("blas_lib_generic", &["math-libs/BLAS/hipBLAS/stage"]),
        ];
        let locate = Locator::new(&artifacts);
        let split = |path: &str| {
            locate
                .split(Path::new(path))
                .map(|(artifact, basedir, path)| (artifact.to_string(), basedir.to_string(), path))
        };
        let source = "/build/artifacts/blas_lib_gfx110X-all/math-libs/BLAS/rocBLAS/stage/lib/librocblas.so.4";
        let expect = (
            "blas_lib_gfx110X-all".to_owned(),
            "math-libs/BLAS/rocBLAS/stage".to_owned(),
            "lib/librocblas.so.4".to_owned(),
        );
        assert_eq!(split(source), Some(expect));
        // The longer basedir wins where one lies inside another.
        let nested = "/build/artifacts/blas_lib_gfx110X-all/math-libs/BLAS/rocBLAS/stage/lib/x/y.so";
        assert_eq!(
            split(nested).map(|(_, basedir, path)| (basedir, path)),
            Some(("math-libs/BLAS/rocBLAS/stage/lib/x".to_owned(), "y.so".to_owned()))
        );
        assert_eq!(split("/elsewhere/lib/librocblas.so.4"), None);
        assert_eq!(split("/build/artifacts/blas_lib_generic/other/x"), None);
    }

    #[test]
    fn a_member_nobody_described_was_generated() {
        let mut provenance = Provenance::new(None);
        let origin = Origin::Wheel { file_name: "torch-2.9-cp312-cp312-linux_x86_64.whl".into(), edit: Edit::Rpath };
        provenance.insert("torch/lib/libtorch.so".into(), origin.clone());
        assert_eq!(provenance.origin("torch/lib/libtorch.so"), origin);
        assert_eq!(provenance.origin("torch/__init__.py"), Origin::Generated { artifacts: Vec::new() });
    }
}
