//! Device code by GPU target, the rules both ways of splitting it share (SPEC §12): which
//! device wheel carries which code or kernel database file (`grouping`), which files are
//! kernel databases named by a target (`databases`), and what splitting a fat (legacy)
//! build's libraries per target would be (`fat_build`): `cargo xtask split` (third-party
//! wheels) and the packaging pipeline's split of a fat build both ask them.
//!
//! Owns: those rules. Does not own: the formats (the device-code crate), writing wheels
//! (`output`, `split`).

pub mod databases;
mod fat_build;
pub mod grouping;

pub use fat_build::{plan_fat_split, FatLibrary, FatSplitPlan, KernelDatabase, SplitArchive, ARCHIVE_DIR};
