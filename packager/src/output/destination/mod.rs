//! The destination of a run (`--dest-dir`, SPEC §2, §5): kept apart from the artifacts
//! (`overlap`), locked for one run at a time with the temp files of killed runs removed
//! and the run's outputs committed through the lock (`lock`), and cleared of our earlier
//! runs' archives a full run no longer produces (`stale`). `error` holds the words of
//! why a destination cannot be used; `identity_cache` where the destination keeps what
//! reruns know of their inputs by identity (SPEC §8); `rewrite_run` the frame of a run
//! that rewrites existing wheels into it (repair, split).
//!
//! Owns: everything about the directory written to but the writing itself. Does not own:
//! which directory it is (`config::Destination`), the outputs (the rest of `output`).

pub mod error;
pub mod identity_cache;
pub mod lock;
pub mod overlap;
pub mod rewrite_run;
pub mod stale;
