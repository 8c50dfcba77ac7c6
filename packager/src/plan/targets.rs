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

/// A target id as the build spells it (`gfx90a:xnack+`, `gfx90a:sramecc+:xnack-`), checked
/// once where the name comes in so that it is safe in file and package names (SPEC §6).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct TargetId(String);

impl TargetId {
    /// None when `name` has characters [`is_valid_family_name`] refuses.
    pub fn parse(name: &str) -> Option<TargetId> {
        is_valid_family_name(name).then(|| TargetId(name.to_owned()))
    }

    /// The base ISA this id is built for: `gfx90a:xnack+` → `gfx90a`.
    pub fn target(&self) -> Target {
        Target::from_target_id(&self.0)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TargetId {
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
    fn target_ids_keep_their_spelling_and_know_their_target() {
        for (name, target) in [("gfx90a:xnack+", "gfx90a"), ("GFX90A", "gfx90a"), ("gfx90a:sramecc+:xnack-", "gfx90a")]
        {
            let id = TargetId::parse(name).expect("valid target id");
            assert_eq!((id.as_str(), id.to_string()), (name, name.to_owned()));
            assert_eq!(id.target().as_str(), target, "{name}");
        }
        assert_eq!(serde_json::to_string(&TargetId::parse("gfx90a:xnack+")).expect("serialises"), "\"gfx90a:xnack+\"");
        for bad in ["", "gfx90a xnack+", "gfx90a/..", "x\"; import os", "gfx90a\n"] {
            assert_eq!(TargetId::parse(bad), None, "{bad:?}");
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
