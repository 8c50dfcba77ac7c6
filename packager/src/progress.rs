//! `Progress`: how the library reports work to whoever drives it. The trait is the archive
//! writer's, which reports the bytes it compresses through the same calls.

pub use archive_write::{Progress, Silent};
