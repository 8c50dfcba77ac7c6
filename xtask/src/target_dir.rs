//! Where the workspace's target directory is: the venv of the Python checks and verify's
//! round trip keep their files there, beside what cargo builds.
//!
//! Owns: finding it. Does not own: what goes in the directory (each command's).

use std::path::PathBuf;

/// The target directory cargo uses for this workspace: `CARGO_TARGET_DIR` when set, else
/// `target/` of the workspace.
pub fn target_dir() -> anyhow::Result<PathBuf> {
    Ok(std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target")))
}
