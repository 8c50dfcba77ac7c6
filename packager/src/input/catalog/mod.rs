//! Reads a TheRock artifacts directory (SPEC §1) into a [`Catalog`].
//!
//! Owns: artifact directory names, `artifact_manifest.txt` basedirs, the merged relative-path
//! namespace (artifacts in sorted name order, last one wins), selection predicates and the
//! include/exclude glob language, the build manifest and its kpack-split flag,
//! `dist_info.json`, the set of target families.
//! Does not own: the TheRock checkout (`input::therock`) and its third-party sources
//! (`input::third_party`), the stage's error (`input::CatalogError`), deciding where
//! entries go (`plan`), ELF contents (`elf-rpath`).

pub mod glob;
mod manifest;
mod merged;
pub mod names;
mod namespace;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use glob::Glob;
pub use manifest::{check_artifacts_dir, ARTIFACT_MANIFEST, DIST_INFO};
pub use merged::MergedTree;
pub use names::ArtifactName;
pub use namespace::Walks;

use crate::input::{CatalogError, KindClash};
use crate::relpath::RelPath;
use crate::targets::TargetFamily;

/// Relative to the artifacts dir: the build manifest whose absence means "not a TheRock build".
pub const BUILD_MANIFEST: &str = "base_lib_generic/base/aux-overlay/stage/share/therock/therock_manifest.json";

/// One artifact directory, e.g. `blas_lib_gfx110X-all`.
#[derive(Clone, Debug)]
pub struct Artifact {
    pub name: ArtifactName,
    /// The artifact directory itself.
    pub dir: PathBuf,
    /// Every existing prefix of `artifact_manifest.txt`, in manifest order.
    pub basedirs: Vec<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct BuildManifest {
    pub path: PathBuf,
    /// `flags.KPACK_SPLIT_ARTIFACTS == true`.
    pub kpack_split: bool,
}

/// The artifacts directory, read but not yet walked.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub artifacts_dir: PathBuf,
    /// Sorted by directory name, so "last one wins" is reproducible (SPEC §6).
    pub artifacts: Vec<Artifact>,
    pub build_manifest: BuildManifest,
    /// `share/therock/dist_info.json` → `dist_amdgpu_targets`, if the base artifact has it.
    pub dist_amdgpu_targets: Option<String>,
    /// Directory entries that are not artifacts (bad names), for the report.
    pub ignored: Vec<String>,
    /// Symlinks named like artifacts, which are not read (a link could bring in files
    /// from anywhere): the run warns about each.
    pub symlinked: Vec<PathBuf>,
}

/// What a path in the merged namespace is on disk (never followed: links stay links).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File {
        len: u64,
        /// Permission bits only (`st_mode & 0o7777`), file type bits stripped.
        mode: u32,
        /// Which file it was and when it last changed, for the writer's re-check.
        stamp: FileStamp,
    },
    /// The link text as read by `readlink`, which must be UTF-8.
    Symlink {
        target: String,
    },
}

impl EntryKind {
    /// What it is, in words: `directory`, `file` or `symlink`.
    pub fn name(&self) -> &'static str {
        match self {
            EntryKind::Dir => "directory",
            EntryKind::File { .. } => "file",
            EntryKind::Symlink { .. } => "symlink",
        }
    }
}

/// Which file a regular file was when the catalog walked it, beyond its length (SPEC §5:
/// a file that changes between plan and write fails the run). A file rewritten in place
/// with the same size has a new modification time; one renamed over it is a new inode. The
/// writer compares both when it opens the file and again when it has read all of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileStamp {
    pub inode: u64,
    /// `st_mtime` in nanoseconds since the epoch: an `i64` reaches 2262, and a stamp is
    /// only compared, so a later date wrapping around stays exact. (An `i128` aligns to 16
    /// bytes and grows every planned file by 16.)
    pub mtime_ns: i64,
}

impl FileStamp {
    /// The stamp of a file as `stat`/`fstat` describe it.
    pub fn of(metadata: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            inode: metadata.ino(),
            mtime_ns: metadata.mtime().wrapping_mul(1_000_000_000).wrapping_add(metadata.mtime_nsec()),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub rel: RelPath,
    /// The path on disk, shared with the plan's files made from this entry.
    pub source: Arc<Path>,
    /// Index into [`Catalog::artifacts`].
    pub artifact: usize,
    pub kind: EntryKind,
}

/// Which artifacts, and which of their paths, a package takes.
pub struct Selection<'a> {
    pub artifacts: &'a (dyn Fn(&ArtifactName) -> bool + Sync),
    /// A path is kept if it matches some include (or there are none) and no exclude.
    pub include: Vec<Glob>,
    pub exclude: Vec<Glob>,
}

impl Selection<'_> {
    /// Whether the include/exclude globs keep `path` (SPEC §1).
    pub fn keeps_path(&self, path: &str) -> bool {
        namespace::is_selected(self, path)
    }
}

/// A path that two selected artifacts both provide; the later artifact (in name order) wins.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Override {
    pub rel: RelPath,
    pub winner: String,
    pub loser: String,
}

/// The merged namespace of one selection.
#[derive(Clone, Debug, Default)]
pub struct Namespace {
    /// Every entry of the selected artifacts, globs ignored: symlinks resolve here (SPEC §2).
    pub all: BTreeMap<RelPath, Entry>,
    /// Paths of `all` the include/exclude globs drop. Kept as the exceptions rather than a
    /// second map of the entries: most selections (devel: all of the build) have none.
    excluded: BTreeSet<RelPath>,
    pub overridden: Vec<Override>,
}

impl Namespace {
    /// Entries passing the include/exclude globs, in path order.
    pub fn entries(&self) -> impl Iterator<Item = (&RelPath, &Entry)> {
        self.all.iter().filter(|(rel, _)| !self.excluded.contains(*rel))
    }

    /// Whether `rel` is one of [`Namespace::entries`].
    pub fn selects(&self, rel: &RelPath) -> bool {
        self.all.contains_key(rel) && !self.excluded.contains(rel)
    }
}

impl Catalog {
    /// Reads artifact names, manifests, the build manifest and `dist_info.json`.
    ///
    /// Errors: the dir is missing, the build manifest is missing or not JSON, an artifact has
    /// no `artifact_manifest.txt`, or a manifest prefix leaves its artifact directory.
    pub fn read(artifacts_dir: &Path) -> Result<Catalog, CatalogError> {
        manifest::read_catalog(artifacts_dir)
    }

    /// Walks the selected artifacts (in name order) and merges them into one namespace.
    ///
    /// Every directory, file and symlink below each basedir becomes one [`Entry`]; links are
    /// never followed. A non-directory path provided twice is an [`Override`].
    pub fn select(&self, selection: &Selection<'_>) -> Result<Namespace, CatalogError> {
        namespace::select(self, &mut Walks::default(), selection)
    }

    /// [`Catalog::select`], walking only the artifacts `walks` has not seen yet and sharing
    /// the entries of those it has with every namespace selected through it.
    pub fn select_walked(&self, walks: &mut Walks, selection: &Selection<'_>) -> Result<Namespace, CatalogError> {
        namespace::select(self, walks, selection)
    }

    /// The directory name of artifact `index` (as in [`Entry::artifact`]).
    pub fn artifact_dir_name(&self, index: usize) -> String {
        self.artifacts[index].name.dir_name()
    }

    /// `target_family` values other than `generic`, sorted by spelling.
    pub fn target_families(&self) -> BTreeSet<TargetFamily> {
        self.artifacts
            .iter()
            .map(|artifact| &artifact.name.target_family)
            .filter(|family| !family.is_generic())
            .cloned()
            .collect()
    }

    pub fn kpack_split(&self) -> bool {
        self.build_manifest.kpack_split
    }
}
