//! A member source's identity (SPEC §8): the regular file its bytes come from, as `lstat`
//! describes it (device, inode, size, modification and status-change times), and a
//! digest of the recipe the caller applies to them, with the rule for when an identity
//! can be trusted at all ([`SourceIdentity::settled`]). Why these fields, and the racy
//! case, are the identity cache's to explain (`identity`).
//!
//! Owns: the identity and the racy rule. Does not own: what is remembered for it
//! (`identity`), what a recipe means (the caller's sources).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// How long before the run a file's status must have changed, when its ctime has a
/// fraction of a second, for no later write to share that ctime: one tick of the
/// kernel's coarse clock (10 ms at the lowest rate) and a margin.
const FINE_MARGIN: Duration = Duration::from_millis(100);
/// The same for a ctime in whole seconds: a file system that keeps whole (or, as FAT,
/// even) seconds gives every write of those two seconds one ctime.
const COARSE_MARGIN: Duration = Duration::from_secs(2);

/// A file's time stamp as `stat` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Stamp {
    pub(crate) seconds: i64,
    pub(crate) nanoseconds: u32,
}

impl Stamp {
    pub(crate) fn new(seconds: i64, nanoseconds: i64) -> Option<Stamp> {
        let nanoseconds = u32::try_from(nanoseconds).ok().filter(|ns| *ns < 1_000_000_000)?;
        Some(Stamp { seconds, nanoseconds })
    }

    fn as_time(self) -> Option<SystemTime> {
        let seconds = u64::try_from(self.seconds).ok()?;
        UNIX_EPOCH.checked_add(Duration::new(seconds, self.nanoseconds))
    }

    pub(crate) fn parse(text: &str) -> Option<Stamp> {
        let (seconds, nanoseconds) = text.split_once('.')?;
        (nanoseconds.len() == 9).then_some(())?;
        Stamp::new(seconds.parse().ok()?, nanoseconds.parse().ok()?)
    }
}

impl std::fmt::Display for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:09}", self.seconds, self.nanoseconds)
    }
}

/// What a member's bytes are, without reading them: the regular file they are read from,
/// as `lstat` describes it, and a digest of the caller's recipe (what it does to them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceIdentity {
    pub(crate) device: u64,
    pub(crate) inode: u64,
    pub(crate) size: u64,
    pub(crate) modified: Stamp,
    pub(crate) changed: Stamp,
    pub(crate) recipe: [u8; 32],
}

impl SourceIdentity {
    /// The identity of the regular file at `path` (a symlink is not followed) whose bytes
    /// reach the archive through `recipe`: any bytes that tell apart every way the caller
    /// may change them (empty when it changes nothing). `None` when `path` is not a
    /// regular file or cannot be examined: such a source is read and hashed.
    pub fn of_file(path: &Path, recipe: &[u8]) -> Option<SourceIdentity> {
        SourceIdentity::of_metadata(&std::fs::symlink_metadata(path).ok()?, recipe)
    }

    fn of_metadata(metadata: &std::fs::Metadata, recipe: &[u8]) -> Option<SourceIdentity> {
        if !metadata.is_file() {
            return None;
        }
        Some(SourceIdentity {
            device: metadata.dev(),
            inode: metadata.ino(),
            size: metadata.size(),
            modified: Stamp::new(metadata.mtime(), metadata.mtime_nsec())?,
            changed: Stamp::new(metadata.ctime(), metadata.ctime_nsec())?,
            recipe: Sha256::digest(recipe).into(),
        })
    }

    /// Whether the file's status last changed long enough before `started` that any write
    /// since (which comes after the run started) has another ctime. A whole-second ctime
    /// gets the coarse margin: the file system may keep no finer time.
    pub(crate) fn settled(&self, started: SystemTime) -> bool {
        let margin = if self.changed.nanoseconds == 0 { COARSE_MARGIN } else { FINE_MARGIN };
        self.changed.as_time().and_then(|changed| changed.checked_add(margin)).is_some_and(|time| time < started)
    }
}
