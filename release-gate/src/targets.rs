//! GPU target ids as the gate reads them back from a `rocm` sdist (SPEC §6): `gfx90a:xnack+`
//! is a target id, `gfx90a` its target, and device wheels are named after the target.
//!
//! Owns: the gate's own reading of those names, apart from the packager's. Does not own:
//! which wheels a set must have (`set`).

/// A base GPU ISA, lower-case, without feature suffixes: `gfx90a`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target(String);

impl Target {
    /// `gfx90a:xnack+`, `GFX90A` and `gfx90a:sramecc+:xnack-` all become `gfx90a`.
    pub fn from_target_id(target_id: &str) -> Target {
        let base = target_id.split(':').next().unwrap_or(target_id);
        Target(base.trim().to_ascii_lowercase())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}
