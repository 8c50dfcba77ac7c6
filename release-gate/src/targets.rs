//! GPU target ids as the gate reads them back from a `rocm` sdist (SPEC §6): `gfx90a:xnack+`
//! is a target id, `gfx90a` its target, and device wheels are named after the target's
//! owner (SPEC §2, grouped by owner: `gfx1250-strict` ships in `gfx1250`'s wheel).
//!
//! Owns: the gate's own reading of those names and of the owner table, apart from the
//! packager's. Does not own: which wheels a set must have (`set`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

/// The contract's owner table (SPEC §2): data, the one copy the packager ships too. The gate
/// reads it with its own code (a deliberate second reader: the gate must not trust the
/// packager's), once per process.
const OWNER_TABLE: &str = include_str!("../../packager/python/common/target_owners.json");

#[derive(serde::Deserialize)]
struct OwnerTable {
    owners: BTreeMap<String, String>,
}

/// The table, parsed on first use. It is compiled in, so it parses in every build or in
/// none: `the_owner_table_parses` below fails the gate's tests on a table that does not,
/// and no build that passed them can meet a parse error at run time (an empty table here
/// would quietly judge every merged target's wheel missing).
static OWNERS: LazyLock<BTreeMap<String, String>> = LazyLock::new(|| {
    serde_json::from_str::<OwnerTable>(OWNER_TABLE)
        .map(|table| table.owners)
        .expect("target_owners.json is compiled in and parsed by this module's tests, so it is valid")
});

/// Target → owner, for the targets that do not own their own package.
pub(crate) fn owner_overrides() -> &'static BTreeMap<String, String> {
    &OWNERS
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
        match owner_overrides().get(&self.0) {
            Some(owner) => Target(owner.clone()),
            None => self.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table compiled in parses, and is not empty: a broken or emptied table fails here,
    /// not in a release pipeline.
    #[test]
    fn the_owner_table_parses() {
        let owners = serde_json::from_str::<OwnerTable>(OWNER_TABLE).expect("target_owners.json parses").owners;
        assert_eq!(owner_overrides(), &owners);
        assert_eq!(Target::from_target_id("gfx1250-strict").owner().as_str(), "gfx1250");
        assert_eq!(Target::from_target_id("gfx90a:xnack+").owner().as_str(), "gfx90a");
    }
}
