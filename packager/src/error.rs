//! `packager::Error`: one enum over the stages' errors, forwarding their messages, hints and
//! paths. Each stage words its own errors (the crates below speak of files; a stage says
//! it in a packaging run's words: its flags, its artifacts); this enum only gathers them
//! for a caller that runs the whole pipeline.

use std::path::Path;

use diagnostic::Diagnostic;

use crate::input::CatalogError;
use crate::output::destination::overlap::OverlapError;
use crate::output::OutputError;
use crate::plan::PlanError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input stage: reading the artifacts directory.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The plan stage.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The output stage: writing, and the destination.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The destination overlaps the artifacts directory: refused before the catalog is
    /// read (`output::destination::overlap`).
    #[error(transparent)]
    Overlap(#[from] OverlapError),
}

impl Diagnostic for Error {
    /// What the user can do next, printed by the CLI as `hint: ...`.
    fn hint(&self) -> Option<&'static str> {
        match self {
            Error::Catalog(error) => error.hint(),
            Error::Plan(error) => error.hint(),
            Error::Output(error) => error.hint(),
            Error::Overlap(error) => error.hint(),
        }
    }

    /// The file or directory the error is about, if it names one (CI annotations point at it).
    fn path(&self) -> Option<&Path> {
        match self {
            Error::Catalog(error) => error.path(),
            Error::Plan(error) => error.path(),
            Error::Output(error) => error.path(),
            Error::Overlap(error) => error.path(),
        }
    }
}
