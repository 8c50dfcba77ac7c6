//! Where a destination keeps its identity cache (SPEC §8): the digests of the wheel
//! members each input file gave, by the file's identity, so a rerun proves an unchanged
//! file unchanged without reading it. The file is ours and lives beside the lock file in
//! `--dest-dir`, never in the `dist/` users upload; it is read like an old wheel (only as
//! a regular file, within a bound set by the plan's size) and saved after the commit.
//!
//! Owns: the file's name and place, its bound, and the words when it is not used. Does
//! not own: identities, the format or the racy rule (`write`'s identity cache), when the
//! bytes of a member may be copied (`write`'s reuse).

use std::path::Path;
use std::time::SystemTime;

use crate::config::Reuse;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::write::{IdentityCache, Ignored};

/// The cache's name in `--dest-dir`.
pub const IDENTITY_CACHE_NAME: &str = ".rocm-packager.identities";

/// An entry per payload file of the plan, twice over (files renamed or removed since the
/// last run), and some slack.
fn max_entries(plan: &Plan) -> u64 {
    let files: usize = plan.packages.iter().map(|package| package.files.len()).sum();
    2 * files as u64 + 256
}

/// The cache of `dest_dir` for a run of `plan` that started at `started`; empty when
/// there is none, and empty with a line saying why when it cannot be trusted. None
/// with `--no-reuse`: a destination that is not ours is neither read nor remembered.
pub fn load_identities(
    reuse: Reuse,
    dest_dir: &Path,
    plan: &Plan,
    started: SystemTime,
    progress: &dyn Progress,
) -> Option<IdentityCache> {
    if reuse == Reuse::Never {
        return None;
    }
    let path = dest_dir.join(IDENTITY_CACHE_NAME);
    let (cache, ignored) = IdentityCache::load(&path, started, max_entries(plan));
    match ignored {
        None => {}
        Some(Ignored::Untrusted(reason)) => {
            progress.explain(&format!("not using {}: {reason}; every input is read", path.display()))
        }
        Some(Ignored::TooLarge(reason)) => progress.warn(&format!(
            "not using {}: {reason}; it is not read, and every input is read and hashed",
            path.display()
        )),
    }
    Some(cache)
}

/// Saves what the run knows into `dest_dir`'s cache, once its packages are in place. A
/// failure is a warning: the packages are complete, and the next run reads its inputs.
/// A run of some packages (`--only`) keeps what the cache knew of the others.
pub fn save_identities(cache: &IdentityCache, dest_dir: &Path, whole_run: bool, progress: &dyn Progress) {
    if let Err(error) = cache.save(dest_dir, IDENTITY_CACHE_NAME, !whole_run) {
        let cause = std::error::Error::source(&error).map(|cause| format!(": {cause}")).unwrap_or_default();
        progress.warn(&format!(
            "cannot save the identity cache for the next run ({error}{cause}); the packages are complete, \
             and the next run reads every input"
        ));
    }
}
