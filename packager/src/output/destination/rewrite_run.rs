//! A run that writes wheels anew from existing ones (`repair`, `split`; SPEC §11, §12) into
//! `DIR/dist/`: the destination locked for it, a scratch directory beside the output for
//! the members it unpacks, the archive options such a run writes with (no earlier run's
//! bytes stand for its members), and the destination as it was found when the run failed
//! or wrote nothing: the directories it created for it (`DIR`, `DIR/dist`) removed again
//! when still empty.
//!
//! Owns: that frame. Does not own: what the run writes (its caller), the lock (`lock`).

use std::path::{Path, PathBuf};

use super::lock::DestLock;
use crate::config::{BuildTime, Destination, DIST_DIR};
use crate::output::OutputError;
use archive_write::{ArchiveOptions, Reuse, WheelCompression, WriteAction, WriteError};

/// What a rewriting run holds while it writes.
pub struct RewriteRun {
    pub lock: DestLock,
    /// Removed with everything in it when the run ends.
    pub scratch: tempfile::TempDir,
    pub options: ArchiveOptions<'static>,
}

/// Runs `body` in a [`RewriteRun`] on `dest_dir` whose scratch directory is named after
/// `prefix`; members coded again are deflated at `level`.
pub fn in_rewrite_run<T, E>(
    dest_dir: &Path,
    prefix: &str,
    build_time: BuildTime,
    level: u32,
    body: impl FnOnce(&RewriteRun) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<Box<OutputError>> + From<WriteError>,
{
    let created: Vec<PathBuf> = [dest_dir.to_path_buf(), dest_dir.join(DIST_DIR)]
        .into_iter()
        .filter(|dir| std::fs::symlink_metadata(dir).is_err())
        .collect();
    let result = open(dest_dir, prefix, build_time, level).and_then(|run| body(&run));
    for dir in created.iter().rev() {
        // Only an empty directory goes: anything in it is the run's output, or not ours.
        let _ = std::fs::remove_dir(dir);
    }
    result
}

fn open<E>(dest_dir: &Path, prefix: &str, build_time: BuildTime, level: u32) -> Result<RewriteRun, E>
where
    E: From<Box<OutputError>> + From<WriteError>,
{
    let destination = Destination { dest_dir: dest_dir.to_path_buf(), output_dir: dest_dir.join(DIST_DIR) };
    let lock = DestLock::acquire(&destination).map_err(Box::new)?;
    let scratch = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(dest_dir)
        .map_err(|source| WriteError::io(WriteAction::CreateTemp, dest_dir, source))?;
    let options = ArchiveOptions {
        compression: WheelCompression::Deflate { level: level.min(9) },
        build_time,
        reuse: Reuse::Never,
        // A rewritten wheel is written anew from its input each time: no earlier run's
        // identities stand for its members.
        identities: None,
    };
    Ok(RewriteRun { lock, scratch, options })
}
