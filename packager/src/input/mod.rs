//! The input stage: what a run reads before it decides anything. The artifacts directory
//! as a [`catalog::Catalog`] (SPEC §1), the TheRock checkout it came from (`therock`: its
//! version, GPU target table and root), what that checkout says of bundled third-party
//! sources (`third_party`, for the bills of materials), the build's operating system told
//! from its binaries (`build_os`), and bounded reads of the small metadata files all of
//! them open (`metadata_file`).
//!
//! Owns: reading, and [`CatalogError`], the one error of the stage. Does not own: what
//! goes where (`plan`), what is written (`output`).

pub mod build_os;
pub mod catalog;
mod error;
pub mod metadata_file;
pub mod therock;
pub mod third_party;

pub use error::{CatalogError, KindClash};
