//! Device packages grouped by owner (SPEC §2, TheRock #8280, rocm-systems #11801): a GPU
//! target's device payload ships in its *owner's* device package. A target owns its own
//! package unless the override table says otherwise (`gfx1250-strict` → `gfx1250`).
//!
//! The table is data in one place, `packager/python/common/target_owners.json`: compiled in
//! here, and rendered into every `_dist_info_data.py` (`TARGET_OWNERS`) for the runtime, the
//! `rocm` sdist's backend and `rocm-sdk doctor`. Each entry has a test of its own below and
//! in `packager/python/tests/test_owners.py`.
//!
//! Owns: the table and the owner of a target name. Does not own: what a target is
//! (`targets`), package names (`python`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

/// The override table as shipped (also rendered into `_dist_info_data.py`).
pub const TABLE_JSON: &str = include_str!("../python/common/target_owners.json");

#[derive(serde::Deserialize)]
struct Table {
    owners: BTreeMap<String, String>,
}

/// The table, parsed on first use. It is compiled in, so it parses in every build or in
/// none, and this module's tests parse it: a table that does not parse fails them, never a
/// packaging run.
static OWNERS: LazyLock<BTreeMap<String, String>> = LazyLock::new(|| {
    serde_json::from_str::<Table>(TABLE_JSON)
        .map(|table| table.owners)
        .expect("target_owners.json is compiled in and parsed by this module's tests, so it is valid")
});

/// Target → owner, for the targets that do not own their own package. Names are lower-case
/// base targets (no `:feature±`).
pub fn owner_overrides() -> &'static BTreeMap<String, String> {
    &OWNERS
}

/// The owner of a base target: the table's entry, else the target itself. `target` is
/// compared lower-case, as every target name is (SPEC §6).
pub fn owner_name(target: &str) -> String {
    let target = target.to_ascii_lowercase();
    owner_overrides().get(&target).cloned().unwrap_or(target)
}

/// Whether `processor` (a target id's part before any `:`) is named in the table. Such a
/// name is a GPU target although it is not `gfx` and hex digits (`gfx1250-strict`).
pub fn is_listed_target(processor: &str) -> bool {
    owner_overrides().contains_key(&processor.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry of the table, each with the test of its own that the module doc promises:
    /// a new entry fails here until it is named (and tested) below.
    #[test]
    fn every_entry_has_its_own_test() {
        let listed: Vec<&String> = owner_overrides().keys().collect();
        assert_eq!(listed, ["gfx1250-strict"], "add a test for each new entry of target_owners.json");
    }

    #[test]
    fn gfx1250_strict_ships_in_the_gfx1250_package() {
        assert_eq!(owner_name("gfx1250-strict"), "gfx1250");
        assert_eq!(owner_name("GFX1250-STRICT"), "gfx1250");
        assert!(is_listed_target("gfx1250-strict"));
        // The owner owns its own package, and is no override itself.
        assert_eq!(owner_name("gfx1250"), "gfx1250");
        assert!(!is_listed_target("gfx1250"));
    }

    #[test]
    fn other_targets_own_their_own_package() {
        for target in ["gfx90a", "gfx1030", "gfx1151", "gfx942"] {
            assert_eq!(owner_name(target), target);
            assert!(!is_listed_target(target));
        }
    }

    #[test]
    fn the_table_is_well_formed() {
        let parsed: Table = serde_json::from_str(TABLE_JSON).expect("target_owners.json parses");
        assert_eq!(&parsed.owners, owner_overrides());
        assert!(!parsed.owners.is_empty(), "the table lists at least the entry tested above");
        for (target, owner) in owner_overrides() {
            let lower = |name: &str| name.bytes().all(|byte| !byte.is_ascii_uppercase());
            assert!(lower(target) && lower(owner), "{target} -> {owner}: lower-case names only");
            assert!(!target.contains(':') && !owner.contains(':'), "{target} -> {owner}: base targets only");
            // An owner owns itself, so no chain needs following.
            assert_eq!(&owner_name(owner), owner, "{target} -> {owner}: the owner must own its own package");
            assert_ne!(target, owner);
        }
    }
}
