//! Reads a TheRock artifacts directory (SPEC §1) into a [`Catalog`].
//!
//! Owns: artifact directory names, `artifact_manifest.txt` basedirs, the merged relative-path
//! namespace (artifacts in sorted name order, last one wins), selection predicates and the
//! include/exclude glob language, the build manifest and its kpack-split flag,
//! `dist_info.json`, the set of target families, finding a TheRock checkout, and what it
//! says of the third-party sources a build bundles (`third_party`).
//! Does not own: deciding where entries go (`plan`), ELF contents (`elf`).

pub mod glob;
mod manifest;
mod merged;
pub mod names;
mod namespace;
pub mod therock;
pub mod third_party;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use diagnostic::Diagnostic;

pub use glob::Glob;
pub use manifest::{check_artifacts_dir, ARTIFACT_MANIFEST, DIST_INFO};
pub use merged::MergedTree;
pub use names::ArtifactName;
pub use namespace::Walks;

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

/// A path that is a directory in one artifact and a file or symlink in another
/// ([`CatalogError::KindClash`]). `first` is the artifact read first.
#[derive(Debug)]
pub struct KindClash {
    pub rel: RelPath,
    pub first: String,
    pub first_kind: &'static str,
    pub first_path: PathBuf,
    pub second: String,
    pub second_kind: &'static str,
    pub second_path: PathBuf,
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

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("artifacts directory not found: {}", crate::escape::escape_path(path))]
    MissingArtifactsDir { path: PathBuf },
    #[error("the artifacts directory is a file, not a directory: {}", crate::escape::escape_path(path))]
    ArtifactsDirIsAFile { path: PathBuf },
    /// An existing directory without a single `{name}_{component}_{family}/` in it: said
    /// before anything else (a missing `--version`, a missing build manifest) is.
    #[error(
        "not an artifacts directory (no `{{name}}_{{component}}_{{family}}` directories in it): {}",
        crate::escape::escape_path(path)
    )]
    NotAnArtifactsDir { path: PathBuf },
    /// `artifact` is quoted and escaped: it is untrusted and may hold newlines.
    #[error(
        "artifact {artifact:?} in {} has a target family name that cannot be used in package names",
        crate::escape::escape_path(path.parent().unwrap_or(path))
    )]
    BadFamilyName { artifact: String, path: PathBuf },
    /// A name TheRock does not write (SPEC §1): reported, never promoted to a family.
    #[error(
        "artifact directory {artifact:?} in {} is not a name TheRock writes: {reason}",
        crate::escape::escape_path(path.parent().unwrap_or(path))
    )]
    UnexpectedArtifact { artifact: String, path: PathBuf, reason: String },
    /// Kpack-split per-ISA artifacts carry one GPU target (SPEC §1); a family there would
    /// become a device wheel that no GPU selects.
    #[error(
        "artifact {artifact:?} in {} is in a kpack-split build, but its target family is not a GPU target id",
        crate::escape::escape_path(path.parent().unwrap_or(path))
    )]
    NotATargetId { artifact: String, path: PathBuf },
    #[error("build manifest not found: {}", crate::escape::escape_path(path))]
    MissingBuildManifest { path: PathBuf },
    #[error("build manifest is not valid JSON: {}: {message}", crate::escape::escape_path(path))]
    BadBuildManifest { path: PathBuf, message: String },
    #[error("{} is not valid JSON: {message}", crate::escape::escape_path(path))]
    BadDistInfo { path: PathBuf, message: String },
    #[error("manifest line {line} points outside the artifact: {prefix:?} in {}", crate::escape::escape_path(path))]
    PrefixEscapes { path: PathBuf, line: usize, prefix: String },
    #[error("file name is not valid UTF-8: {}", escape_non_utf8(path))]
    NonUtf8Name { path: PathBuf },
    #[error("unusable path {}: {reason}", crate::escape::escape_path(path))]
    BadPath { path: PathBuf, reason: String },
    /// One path is a directory in one artifact and a file or symlink in another (SPEC §1):
    /// no merged tree holds both. Boxed: it names two artifacts and two paths.
    #[error(
        "{} is a {} in {} and a {} in {}: {} and {}",
        .0.rel,
        .0.first_kind,
        .0.first,
        .0.second_kind,
        .0.second,
        crate::escape::escape_path(&.0.first_path),
        crate::escape::escape_path(&.0.second_path)
    )]
    KindClash(Box<KindClash>),
    #[error("invalid glob {pattern:?}: {reason}")]
    BadGlob { pattern: String, reason: String },
    /// A checkout was found (or named), no --artifact-dir given, and the checkout has not
    /// been built: packaging something else under its version would mislead.
    #[error("the TheRock checkout has no build artifacts: {} is not a directory", crate::escape::escape_path(path))]
    MissingCheckoutArtifacts { path: PathBuf },
    #[error(
        "not a TheRock checkout (no version.json and cmake/therock_amdgpu_targets.cmake): {}",
        crate::escape::escape_path(path)
    )]
    NotACheckout { path: PathBuf },
    /// `--therock-dir` names something that is not a checkout's root.
    #[error(
        "--therock-dir is not a TheRock checkout (no version.json and cmake/therock_amdgpu_targets.cmake): {}",
        crate::escape::escape_path(path)
    )]
    TherockDirNotACheckout { path: PathBuf },
    #[error("cannot parse {}: {message}", crate::escape::escape_path(path))]
    BadCheckoutFile { path: PathBuf, message: String },
    #[error("cannot read {}", crate::escape::escape_path(path))]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Diagnostic for CatalogError {
    /// The file or directory the error is about, if it names one.
    fn path(&self) -> Option<&Path> {
        match self {
            CatalogError::MissingArtifactsDir { path }
            | CatalogError::ArtifactsDirIsAFile { path }
            | CatalogError::NotAnArtifactsDir { path }
            | CatalogError::TherockDirNotACheckout { path }
            | CatalogError::MissingBuildManifest { path }
            | CatalogError::BadBuildManifest { path, .. }
            | CatalogError::BadDistInfo { path, .. }
            | CatalogError::PrefixEscapes { path, .. }
            | CatalogError::NonUtf8Name { path }
            | CatalogError::BadPath { path, .. }
            | CatalogError::NotACheckout { path }
            | CatalogError::MissingCheckoutArtifacts { path }
            | CatalogError::BadCheckoutFile { path, .. }
            | CatalogError::Read { path, .. }
            | CatalogError::BadFamilyName { path, .. }
            | CatalogError::UnexpectedArtifact { path, .. }
            | CatalogError::NotATargetId { path, .. } => Some(path),
            CatalogError::KindClash(clash) => Some(&clash.second_path),
            CatalogError::BadGlob { .. } => None,
        }
    }

    /// What the user can do next. The CLI prints it as `hint: ...`.
    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::MissingArtifactsDir { .. } | Self::ArtifactsDirIsAFile { .. } => {
                Some("pass --artifact-dir pointing at a TheRock build's `artifacts` directory")
            }
            Self::NotAnArtifactsDir { .. } => {
                Some("point --artifact-dir at `build/artifacts` of a TheRock build (or run `cargo xtask example --out DIR` for one)")
            }
            Self::TherockDirNotACheckout { .. } => {
                Some("point --therock-dir at the root of a TheRock source checkout, the directory holding version.json")
            }
            Self::BadFamilyName { .. } => Some(
                "a target family may hold only ASCII letters, digits and `-:+.`: rename or remove the artifact directory",
            ),
            Self::UnexpectedArtifact { .. } => Some(
                "TheRock names artifacts `{name}_{component}_{family}`: the name in lower case, a component of \
                 lib, run, dev, doc, dbg, test, and the family `generic`, a family as cmake/therock_amdgpu_targets.cmake \
                 spells it (`gfx110X-all`, `gfx94X-dcgpu`, `gfx950-dcgpu`: an upper-case X ends a series, the \
                 suffix -all, -dgpu, -igpu or -dcgpu is lower case) or a target (`gfx90a`, `gfx942:xnack+`, \
                 `gfx1250-strict`): rename or remove this directory (a backup or a copy does not belong in the \
                 artifacts directory)",
            ),
            Self::NotATargetId { .. } => Some(
                "in a kpack-split build, name each per-ISA artifact after one target id such as gfx942 or gfx90a:xnack+: rename or remove the artifact directory",
            ),
            Self::MissingBuildManifest { .. } => {
                Some("point --artifact-dir at a finished TheRock build (the `base` artifact writes this file)")
            }
            Self::PrefixEscapes { .. } => {
                Some("manifest prefixes must be relative paths inside the artifact directory")
            }
            Self::NonUtf8Name { .. } => Some("wheels require UTF-8 member names: rename the file in the build"),
            Self::BadPath { .. } => {
                Some("packages hold only regular files, directories and symlinks with UTF-8 names: fix or remove this path in the build")
            }
            Self::KindClash { .. } => Some(
                "a path must be a directory in every artifact that provides it, or in none: make it the same \
                 kind in both artifacts or remove it from one (unlike two files, where the later artifact wins, \
                 a directory and a file or symlink cannot be merged); nothing was written",
            ),
            Self::NotACheckout { .. } => Some("pass --therock-dir, or run from inside a TheRock checkout"),
            Self::MissingCheckoutArtifacts { .. } => {
                Some("pass --artifact-dir, or build TheRock first (its build writes build/artifacts)")
            }
            Self::Read { .. } => Some(
                "this path of the build must be readable, and a metadata file a regular file under 16 MiB \
                 (not a FIFO, device or link to one): replace it with what the build wrote",
            ),
            _ => None,
        }
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

/// A path for an error message: valid UTF-8 as is, each invalid byte as `\xNN`, so the
/// user can find the file (lossy display would show only U+FFFD).
fn escape_non_utf8(path: &Path) -> String {
    crate::escape::escape_path(path)
}
