//! GPU target ids as the gate reads them back from a `rocm` sdist (SPEC §6): `gfx90a:xnack+`
//! is a target id, `gfx90a` its target, and device wheels are named after the target's
//! owner (SPEC §2, grouped by owner: `gfx1250-strict` ships in `gfx1250`'s wheel).
//!
//! Owns: the gate's own reading of those names and of the owner table, apart from the
//! packager's. Does not own: which wheels a set must have (`set`).

use std::collections::BTreeMap;

/// The contract's owner table (SPEC §2): data, the one copy the packager ships too. The gate
/// reads it with its own code.
const OWNER_TABLE: &str = include_str!("../../packager/python/common/target_owners.json");

#[derive(serde::Deserialize)]
struct OwnerTable {
    owners: BTreeMap<String, String>,
}

/// Target → owner, for the targets that do not own their own package. A table that does
/// not parse (a broken build of the gate) lists nothing, and the gate's own test fails.
pub(crate) fn owner_overrides() -> BTreeMap<String, String> {
    serde_json::from_str::<OwnerTable>(OWNER_TABLE).map(|table| table.owners).unwrap_or_default()
}

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

    /// The target whose device wheel carries this one's payload.
    pub fn owner(&self) -> Target {
        match owner_overrides().remove(&self.0) {
            Some(owner) => Target(owner),
            None => self.clone(),
        }
    }
}
