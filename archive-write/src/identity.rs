//! Knowing a member's bytes without reading them (SPEC §8): a source file's *identity*
//! (device, inode, size, modification and status-change times, as `lstat` gives them, and
//! a digest of what the caller does to its bytes on the way, its *recipe*), and the cache
//! that remembers, from one run to the next, the length, sha256 and CRC-32 of the member
//! bytes each identity gave.
//!
//! Why these fields: every write to a file, and every change of its size, times, mode or
//! links, sets its status-change time (ctime) to the clock, and nothing sets it back (`touch
//! -d` sets the modification time, and that sets ctime to now). So a file whose identity is
//! the one remembered has not been written since, unless it was written in the same tick of
//! the file system's clock as the moment it was looked at: the "racy" case git knows. An
//! identity is therefore remembered only when its ctime lies before the run's start by more
//! than any file system's timestamp granularity could hide ([`SourceIdentity::settled`]),
//! and only when it is the same after the bytes were read as before.
//!
//! The cache file is input like an old wheel (`previous`): opened only as a regular file
//! of the name (never through a symlink, never blocking), not read at all when larger
//! than the run can use, and ignored whole when a line does not parse or its closing
//! sha256 does not match. What it says is never taken alone: a remembered digest stands
//! for the new bytes only where it equals the old wheel's RECORD line and central entry
//! of that member, so a wrong entry makes the member coded anew, not a wrong copy.
//!
//! The cache also keeps the sums (length, sha256, CRC-32) of each output a run left in
//! place, by file name: a rerun reads the old output anyway while it compares its new
//! bytes with it, and when they agree and have the recorded length and CRC-32, the
//! recorded sha256 is theirs (`output_hash`), so an unchanged wheel is not hashed again.
//!
//! Owns: identities, the racy rule, what the cache knows. Does not own: the file's format
//! and bounds (`identity/file.rs`), where it lives and when it is saved (the caller's), the
//! decision to copy (`reuse`), what a recipe means (the caller's sources).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::atomic::{self, AtomicFile};
use super::output_hash::FileSums;
use super::previous::Ignored;
use super::{MemberData, WriteAction, WriteError};

mod file;
mod tarball;

pub(crate) use tarball::tarball_identity;

/// The longest output name a cache line holds.
const MAX_NAME: usize = 255;
/// How long before the run a file's status must have changed, when its ctime has a
/// fraction of a second, for no later write to share that ctime: one tick of the
/// kernel's coarse clock (10 ms at the lowest rate) and a margin.
const FINE_MARGIN: Duration = Duration::from_millis(100);
/// The same for a ctime in whole seconds: a file system that keeps whole (or, as FAT,
/// even) seconds gives every write of those two seconds one ctime.
const COARSE_MARGIN: Duration = Duration::from_secs(2);

/// A file's time stamp as `stat` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Stamp {
    seconds: i64,
    nanoseconds: u32,
}

impl Stamp {
    fn new(seconds: i64, nanoseconds: i64) -> Option<Stamp> {
        let nanoseconds = u32::try_from(nanoseconds).ok().filter(|ns| *ns < 1_000_000_000)?;
        Some(Stamp { seconds, nanoseconds })
    }

    fn as_time(self) -> Option<SystemTime> {
        let seconds = u64::try_from(self.seconds).ok()?;
        UNIX_EPOCH.checked_add(Duration::new(seconds, self.nanoseconds))
    }

    fn parse(text: &str) -> Option<Stamp> {
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
    device: u64,
    inode: u64,
    size: u64,
    modified: Stamp,
    changed: Stamp,
    recipe: [u8; 32],
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
    fn settled(&self, started: SystemTime) -> bool {
        let margin = if self.changed.nanoseconds == 0 { COARSE_MARGIN } else { FINE_MARGIN };
        self.changed.as_time().and_then(|changed| changed.checked_add(margin)).is_some_and(|time| time < started)
    }
}

/// The identity of a member's source, if it has one (generated bytes and tarballs do not).
pub(crate) fn identity_of(data: &MemberData) -> Option<SourceIdentity> {
    match data {
        MemberData::Source(source) => source.identity(),
        MemberData::Bytes(_) | MemberData::Tarball(_) => None,
    }
}

/// What the cache knows: member sums by their sources' identities and by tarballs'
/// (`identity/tarball.rs`), and the sums of outputs left in place by file name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Known {
    pub sources: BTreeMap<SourceIdentity, FileSums>,
    pub tarballs: BTreeMap<[u8; 32], FileSums>,
    pub outputs: BTreeMap<String, FileSums>,
}

impl Known {
    fn len(&self) -> usize {
        self.sources.len() + self.tarballs.len() + self.outputs.len()
    }
}

/// What a member's bytes were read from, as the cache knows it: a source file, or a
/// tarball of sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadFrom {
    Source(SourceIdentity),
    Tarball([u8; 32]),
}

/// What a member's bytes are read from, if the cache can know it (generated bytes it
/// cannot: they are in memory, and hashed as they are).
pub(crate) fn read_from(cache: &IdentityCache, data: &MemberData) -> Option<ReadFrom> {
    match data {
        MemberData::Source(source) => source.identity().map(ReadFrom::Source),
        MemberData::Tarball(spec) => tarball::tarball_identity(cache, spec).map(ReadFrom::Tarball),
        MemberData::Bytes(_) => None,
    }
}

/// Whether an output's name can stand in a cache line as it is: a wheel's or sdist's
/// name always can (letters, digits, `.`, `_`, `+`, `-`).
fn is_plain_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"._+-".contains(&byte))
}

/// What earlier runs knew of the bytes of sources and outputs, and what this run
/// confirmed or learnt, which is what it saves in turn.
#[derive(Debug)]
pub struct IdentityCache {
    started: SystemTime,
    max_entries: u64,
    loaded: Known,
    /// The sha256 of the file as loaded, so a run that would save the same bytes does not
    /// write it again.
    loaded_digest: Option<[u8; 32]>,
    seen: Mutex<Known>,
}

impl IdentityCache {
    /// The cache saved at `path`, for a run that started at `started` (the caller's
    /// clock, never later than the run's real start) and needs at most `max_entries`
    /// entries. A missing file is an empty cache; one that is not a regular file, is
    /// damaged or larger than `max_entries` can take is not trusted, and the reason comes
    /// with an empty cache.
    pub fn load(path: &Path, started: SystemTime, max_entries: u64) -> (IdentityCache, Option<Ignored>) {
        let mut cache = IdentityCache {
            started,
            max_entries,
            loaded: Known::default(),
            loaded_digest: None,
            seen: Mutex::default(),
        };
        match file::read(path, max_entries) {
            Ok(Some((known, digest))) => {
                cache.loaded = known;
                cache.loaded_digest = Some(digest);
                (cache, None)
            }
            Ok(None) => (cache, None),
            Err(ignored) => (cache, Some(ignored)),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Known> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the previous run knew of the bytes of the source `identity`, if the file is
    /// still as it was then (and settled, so it cannot be a racy write's twin).
    pub(crate) fn lookup(&self, identity: &SourceIdentity) -> Option<FileSums> {
        if !identity.settled(self.started) {
            return None;
        }
        let known = *self.loaded.sources.get(identity)?;
        self.seen().sources.insert(*identity, known);
        Some(known)
    }

    /// Remembers `known` for the source that was `before` when it was opened and `after`
    /// once its bytes were read: only when the two agree and the file had settled.
    pub(crate) fn learn(&self, before: SourceIdentity, after: Option<SourceIdentity>, known: FileSums) {
        self.learn_read(ReadFrom::Source(before), after.map(ReadFrom::Source), known);
    }

    /// What the previous run knew of the tarball `identity` (whose files all settled).
    pub(crate) fn lookup_tarball(&self, identity: &[u8; 32]) -> Option<FileSums> {
        let known = *self.loaded.tarballs.get(identity)?;
        self.seen().tarballs.insert(*identity, known);
        Some(known)
    }

    /// [`IdentityCache::learn`] for a source or a tarball.
    pub(crate) fn learn_read(&self, before: ReadFrom, after: Option<ReadFrom>, known: FileSums) {
        if after != Some(before) {
            return;
        }
        match before {
            ReadFrom::Source(identity) if identity.settled(self.started) => {
                self.seen().sources.insert(identity, known);
            }
            // Every file of it had settled, or it would have no identity.
            ReadFrom::Tarball(identity) => {
                self.seen().tarballs.insert(identity, known);
            }
            ReadFrom::Source(_) => {}
        }
    }

    /// The sums recorded for the output `name` an earlier run left in place: only a
    /// claim, which the new bytes' CRC-32 must confirm (`output_hash`).
    pub(crate) fn output_sums(&self, name: &str) -> Option<FileSums> {
        self.loaded.outputs.get(name).copied()
    }

    /// Remembers the sums of the output `name` this run staged, for the run after.
    pub(crate) fn learn_output(&self, name: &str, sums: FileSums) {
        if is_plain_name(name) {
            self.seen().outputs.insert(name.to_owned(), sums);
        }
    }

    /// Saves what this run confirmed or learnt as `dir/file_name`, atomically; with
    /// `keep_loaded` (a run that wrote only some of the packages) also what it loaded and
    /// did not see, as long as all fits in the bound it was loaded with. A file that
    /// would come out as the one loaded is left as it is. Returns the number of entries.
    pub fn save(&self, dir: &Path, file_name: &str, keep_loaded: bool) -> Result<usize, WriteError> {
        let mut known = self.seen().clone();
        if keep_loaded && (known.len() + self.loaded.len()) as u64 <= self.max_entries {
            for (identity, sums) in &self.loaded.sources {
                known.sources.entry(*identity).or_insert(*sums);
            }
            for (identity, sums) in &self.loaded.tarballs {
                known.tarballs.entry(*identity).or_insert(*sums);
            }
            for (name, sums) in &self.loaded.outputs {
                known.outputs.entry(name.clone()).or_insert(*sums);
            }
        }
        let text = file::render(&known);
        if self.loaded_digest == Some(Sha256::digest(text.as_bytes()).into()) {
            return Ok(known.len());
        }
        let mut atomic = AtomicFile::create(dir, file_name)?;
        let dest = atomic.dest().to_path_buf();
        atomic.file().write_all(text.as_bytes()).map_err(|source| WriteError::io(WriteAction::Write, dest, source))?;
        atomic::commit(vec![atomic.stage()?])?;
        Ok(known.len())
    }
}

#[cfg(test)]
mod tests;
