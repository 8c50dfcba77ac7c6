//! `Progress`: how a library reports work to whoever drives it: stages, outputs started
//! and finished, bytes consumed, decisions and warnings.
//!
//! A CLI implements it with bars or log lines; tests pass [`Silent`].
//! It must be `Sync` because members are hashed and compressed on many threads.

/// Receives progress events. Every method has a do-nothing default.
pub trait Progress: Sync {
    /// A pipeline stage starts ("catalog", "plan", "write"); `total_bytes` may be 0 if unknown.
    fn stage(&self, _name: &str, _total_bytes: u64) {}
    /// An output file starts being written.
    fn output_started(&self, _file_name: &str, _total_bytes: u64) {}
    /// `bytes` more input bytes of `file_name` were consumed.
    fn advance(&self, _file_name: &str, _bytes: u64) {}
    /// An output file is complete (renamed into place).
    fn output_finished(&self, _file_name: &str) {}
    /// A decision worth explaining to a user who asked for detail.
    fn explain(&self, _message: &str) {}
    /// Something the user should see even when not asking for detail.
    fn warn(&self, _message: &str) {}
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {}
