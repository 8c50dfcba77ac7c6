//! The input stage's error: why the artifacts directory, a TheRock checkout or a metadata
//! file in them cannot be read as the contract says (SPEC §1), each with what to do.
//!
//! Owns: `CatalogError` and its hints. Does not own: the reads themselves (`catalog`,
//! `therock`, `third_party`, `metadata_file`).

use std::io;
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

use crate::relpath::RelPath;

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

/// A path for an error message: valid UTF-8 as is, each invalid byte as `\xNN`, so the
/// user can find the file (lossy display would show only U+FFFD).
fn escape_non_utf8(path: &Path) -> String {
    crate::escape::escape_path(path)
}
