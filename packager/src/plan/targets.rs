//! GPU targets vs target ids (SPEC §6): `gfx90a:xnack+` is a target id, `gfx90a` its target.
//! Names come in from artifact directory names and flags; they are converted here, once.

use std::fmt;

/// A base GPU ISA, lower-case, without feature suffixes: `gfx90a`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Target(String);

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

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether a family or target name is safe to carry into file and package names. Names
/// come from directory names, so anything outside this set is refused rather than quoted.
pub fn is_valid_family_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b':' | b'+' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_ids_become_targets() {
        for id in ["gfx90a", "GFX90A", "gfx90a:xnack+", "gfx90a:xnack-", "gfx90a:sramecc+:xnack-"] {
            assert_eq!(Target::from_target_id(id).as_str(), "gfx90a", "{id}");
        }
    }

    #[test]
    fn family_names() {
        assert!(is_valid_family_name("gfx110X-all"));
        assert!(is_valid_family_name("gfx950:xnack+"));
        assert!(!is_valid_family_name("x\"; import os"));
        assert!(!is_valid_family_name("a\nb"));
        assert!(!is_valid_family_name(""));
    }
}
