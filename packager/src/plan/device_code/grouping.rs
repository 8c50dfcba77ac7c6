//! Which device wheel carries which device code (SPEC §12 "Device wheels"): one wheel per
//! GPU target, named by its owner's bare target (`gfx942` holds `gfx942`, `gfx942:xnack+`
//! and `gfx942:sramecc+`; `gfx1250-strict` rides with `gfx1250`, SPEC §2 "owners"), and one
//! wheel per family for code and files that serve several targets at once: a generic code
//! object (`gfx11-generic`, loaded by the runtime for any GPU it covers) or a kernel database
//! directory named by a pattern (AOTriton's `amd-gfx11xx`). Each target's `device-<target>`
//! extra requires its own wheel and every family wheel that covers it, so a user asks for
//! one GPU and gets all the code that GPU can run.
//!
//! Owns: the wheel keys, the families' members, the extras. Does not own: the names of the
//! distributions (`split::metadata`), what a file is (`databases`, the device-code crate).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::targets::{Target, TargetId};

/// The processors a family pattern or a generic target can cover: LLVM's AMDGPU processors
/// from GFX9 on (LLVM's AMDGPUUsage, "Processors"), the ones ROCm builds for.
const KNOWN_PROCESSORS: &[&str] = &[
    "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx940", "gfx941", "gfx942",
    "gfx950", "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034",
    "gfx1035", "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
    "gfx1200", "gfx1201", "gfx1250", "gfx1251",
];

/// LLVM's generic processors and the processors each one's code runs on (AMDGPUUsage,
/// "Generic Processor Versioning"); the runtime falls back to them (`TargetToGeneric`).
const GENERIC_PROCESSORS: &[(&str, &[&str])] = &[
    ("gfx9-generic", &["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"]),
    ("gfx9-4-generic", &["gfx940", "gfx941", "gfx942", "gfx950"]),
    ("gfx10-1-generic", &["gfx1010", "gfx1011", "gfx1012", "gfx1013"]),
    ("gfx10-3-generic", &["gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"]),
    ("gfx11-generic", &["gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"]),
    ("gfx12-generic", &["gfx1200", "gfx1201"]),
    ("gfx12-5-generic", &["gfx1250", "gfx1251"]),
];

/// The device wheel a piece of device code goes to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WheelKey {
    /// One GPU target's wheel, by its owner's bare target: `gfx942`.
    Target(Target),
    /// A family's wheel: a generic processor (`gfx11-generic`) or a pattern in which `x`
    /// stands for any digit (`gfx11xx`, `gfx110x`), lower-case.
    Family(String),
}

impl WheelKey {
    /// The key of a code object's target id as its bundle entry spells it
    /// (`gfx942:xnack+`, `gfx11-generic`); None for a name that is neither.
    pub fn of_target_id(target_id: &str) -> Option<WheelKey> {
        let processor = target_id.split(':').next().unwrap_or(target_id).to_ascii_lowercase();
        if generic_members(&processor).is_some() {
            return Some(WheelKey::Family(processor));
        }
        TargetId::parse(target_id).map(|id| WheelKey::Target(id.target().owner()))
    }

    /// The key of a family pattern (`gfx11xx`); None unless it has an `x` and covers a
    /// known processor.
    pub fn of_pattern(pattern: &str) -> Option<WheelKey> {
        let pattern = pattern.to_ascii_lowercase();
        let covers = pattern.strip_prefix("gfx").is_some_and(|rest| rest.contains('x'))
            && KNOWN_PROCESSORS.iter().any(|processor| pattern_matches(&pattern, processor));
        covers.then_some(WheelKey::Family(pattern))
    }

    /// The bare targets this wheel's code serves.
    pub fn members(&self) -> BTreeSet<Target> {
        match self {
            WheelKey::Target(target) => BTreeSet::from([target.clone()]),
            WheelKey::Family(name) => match generic_members(name) {
                Some(members) => members.iter().map(|member| Target::from_target_id(member)).collect(),
                None => KNOWN_PROCESSORS
                    .iter()
                    .filter(|processor| pattern_matches(name, processor))
                    .map(|processor| Target::from_target_id(processor))
                    .collect(),
            },
        }
    }

    /// Whether this is a family's wheel.
    pub fn is_family(&self) -> bool {
        matches!(self, WheelKey::Family(_))
    }

    pub fn as_str(&self) -> &str {
        match self {
            WheelKey::Target(target) => target.as_str(),
            WheelKey::Family(name) => name,
        }
    }
}

impl fmt::Display for WheelKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `processor` is one of the processors a family can cover.
pub fn is_known_processor(processor: &str) -> bool {
    KNOWN_PROCESSORS.contains(&processor)
}

fn generic_members(processor: &str) -> Option<&'static [&'static str]> {
    GENERIC_PROCESSORS.iter().find(|(name, _)| *name == processor).map(|(_, members)| *members)
}

/// `gfx11xx` matches `gfx1100` and `gfx1151`: same length, `x` for any character.
fn pattern_matches(pattern: &str, processor: &str) -> bool {
    pattern.len() == processor.len()
        && pattern.bytes().zip(processor.bytes()).all(|(want, have)| want == b'x' || want == have)
}

/// The `device-<target>` extras of a split and the wheels each requires: a target's own
/// wheel, if there is one, and every family wheel that covers it; a family wheel alone
/// makes an extra for each target it covers.
pub fn extras(keys: &BTreeSet<WheelKey>) -> BTreeMap<Target, Vec<WheelKey>> {
    let mut extras: BTreeMap<Target, Vec<WheelKey>> = BTreeMap::new();
    for key in keys {
        for member in key.members() {
            extras.entry(member).or_default().push(key.clone());
        }
    }
    for wheels in extras.values_mut() {
        // The target's own wheel first, then its families, each once.
        wheels.sort_by_key(|key| (key.is_family(), key.clone()));
        wheels.dedup();
    }
    extras
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Option<String> {
        WheelKey::of_target_id(name).map(|key| format!("{key:?}"))
    }

    #[test]
    fn code_objects_go_to_their_owners_bare_target_or_their_generic_family() {
        assert_eq!(key("gfx942:xnack+"), key("gfx942"));
        assert_eq!(key("gfx942:sramecc+:xnack-").as_deref(), Some("Target(Target(\"gfx942\"))"));
        assert_eq!(key("gfx1250-strict"), key("gfx1250"));
        assert_eq!(key("gfx11-generic").as_deref(), Some("Family(\"gfx11-generic\")"));
        assert_eq!(key("gfx9-4-generic:xnack+").as_deref(), Some("Family(\"gfx9-4-generic\")"));
        assert_eq!(key("sm_90"), None);
        assert_eq!(key("gfx99-generic"), None);
    }

    #[test]
    fn family_patterns_cover_known_processors() {
        let names = |pattern: &str| -> Vec<String> {
            WheelKey::of_pattern(pattern)
                .map(|key| key.members().iter().map(|target| target.as_str().to_owned()).collect())
                .unwrap_or_default()
        };
        assert_eq!(
            names("gfx11xx"),
            ["gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"]
        );
        assert_eq!(names("gfx120x"), ["gfx1200", "gfx1201"]);
        assert_eq!(names("GFX94x"), ["gfx940", "gfx941", "gfx942"]);
        assert!(names("gfx942").is_empty(), "a plain target is no pattern");
        assert!(names("gfx77xx").is_empty());
    }

    #[test]
    fn each_target_extra_requires_its_wheel_and_the_families_covering_it() {
        let keys: BTreeSet<WheelKey> = ["gfx1100", "gfx90a", "gfx11-generic"]
            .iter()
            .filter_map(|name| WheelKey::of_target_id(name))
            .chain(WheelKey::of_pattern("gfx110x"))
            .collect();
        let extras = extras(&keys);
        let of = |target: &str| -> Vec<String> {
            extras[&Target::from_target_id(target)].iter().map(|key| key.as_str().to_owned()).collect()
        };
        assert_eq!(of("gfx1100"), ["gfx1100", "gfx11-generic", "gfx110x"]);
        assert_eq!(of("gfx1151"), ["gfx11-generic"]);
        assert_eq!(of("gfx1102"), ["gfx11-generic", "gfx110x"]);
        assert_eq!(of("gfx90a"), ["gfx90a"]);
        assert!(!extras.contains_key(&Target::from_target_id("gfx942")));
    }
}
