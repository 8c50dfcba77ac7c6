//! `packager::Error`: one enum over the stages' errors, forwarding their hints.

use std::path::Path;

use crate::catalog::CatalogError;
use crate::elf::ElfError;
use crate::launcher::LauncherError;
use crate::manylinux::TagError;
use crate::plan::PlanError;
use crate::write::WriteError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Launcher(#[from] LauncherError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Tag(#[from] TagError),
}

impl Error {
    /// What the user can do next, printed by the CLI as `hint: ...`.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::Catalog(error) => error.hint(),
            Error::Plan(error) => error.hint(),
            Error::Elf(error) => error.hint(),
            Error::Launcher(error) => error.hint(),
            Error::Write(error) => error.hint(),
            Error::Tag(error) => error.hint(),
        }
    }
}

impl Error {
    /// The file or directory the error is about, if it names one (CI annotations point at it).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Error::Catalog(error) => error.path(),
            Error::Plan(error) => error.path(),
            Error::Elf(error) => Some(error.path()),
            Error::Launcher(error) => error.path(),
            Error::Write(error) => error.path(),
            Error::Tag(error) => error.path(),
        }
    }
}

impl CatalogError {
    /// The file or directory the error is about, if it names one.
    pub fn path(&self) -> Option<&Path> {
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
            | CatalogError::Read { path, .. } => Some(path),
            CatalogError::BadGlob { .. } => None,
        }
    }
}

impl PlanError {
    /// The file or directory the error is about, if it names one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            PlanError::NoProfiler { dir } => Some(dir),
            PlanError::IncompleteOutput { dest, .. } => Some(dest),
            _ => None,
        }
    }
}

impl LauncherError {
    /// The file the error is about, if it names one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            LauncherError::Read { path, .. } => Some(path),
            _ => None,
        }
    }
}
