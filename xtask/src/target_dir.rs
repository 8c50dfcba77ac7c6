//! Where cargo puts the workspace's target directory, as `cargo metadata` says: the
//! bundled example, `verify`'s round trip and the bench keep their files there, beside what
//! cargo builds. Guessing `target/` under the workspace would miss `build.target-dir` in a
//! cargo config (a TheRock developer's shared target directory) and `CARGO_TARGET_DIR`.
//!
//! Owns: asking cargo. Does not own: what goes in the directory (each command's).

use std::path::PathBuf;

use anyhow::Context;

/// The target directory cargo uses for this workspace. Cargo reads its configuration from
/// the directory it runs in, so it is asked from the workspace root, whatever the current
/// directory of this process: the answer is the one `cargo build` there gives.
pub fn target_dir() -> anyhow::Result<PathBuf> {
    let root = crate::workspace_root();
    let mut command = cargo_metadata::MetadataCommand::new();
    command.manifest_path(root.join("Cargo.toml")).current_dir(&root).no_deps();
    let metadata = command.exec().with_context(|| format!("asking `cargo metadata` in {}", root.display()))?;
    Ok(metadata.target_directory.into_std_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer is the directory this very test binary was built in (cargo builds tests
    /// under `{target}/debug/deps`), whatever configuration chose it.
    #[test]
    fn the_target_dir_is_where_cargo_builds() {
        let target = target_dir().expect("cargo metadata");
        let exe = std::env::current_exe().expect("test binary");
        assert!(exe.starts_with(&target), "{} is not under {}", exe.display(), target.display());
    }
}
