//! GPU targets vs target ids (SPEC §6): `gfx90a:xnack+` is a target id, `gfx90a` its target.
//! Names come in from artifact directory names, family flags and the checkout's cmake
//! table; each is parsed here, once, into a [`TargetFamily`] or a [`TargetId`].

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A base GPU ISA, lower-case, without feature suffixes: `gfx90a`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Target(String);

impl Target {
    /// `gfx90a:xnack+`, `GFX90A` and `gfx90a:sramecc+:xnack-` all become `gfx90a`. For names
    /// read back from generated files; names that come in are parsed with [`TargetId::parse`].
    pub fn from_target_id(target_id: &str) -> Target {
        let base = target_id.split(':').next().unwrap_or(target_id);
        Target(base.trim().to_ascii_lowercase())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The target whose device package carries this target's payload (SPEC §2, grouped
    /// by owner): itself, unless the owner table says otherwise (`gfx1250-strict` →
    /// `gfx1250`).
    pub fn owner(&self) -> Target {
        Target(crate::owners::owner_name(&self.0))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A target id as the build spells it (`gfx90a`, `GFX90A`, `gfx90a:sramecc+:xnack-`): the
/// spelling is kept, because it is part of artifact directory and file names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct TargetId(String);

impl TargetId {
    /// `gfx` (any case) and hex digits, or a target the owner table names
    /// (`gfx1250-strict`), then any number of `:feature+` or `:feature-`. None for anything
    /// else, families such as `gfx110X-all` and `gfx950-dcgpu` included.
    pub fn parse(name: &str) -> Option<TargetId> {
        let mut parts = name.split(':');
        let processor = parts.next()?;
        let is_processor = (processor.get(..3).is_some_and(|prefix| prefix.eq_ignore_ascii_case("gfx"))
            && processor.len() > 3
            && processor.bytes().skip(3).all(|byte| byte.is_ascii_hexdigit()))
            || crate::owners::is_listed_target(processor);
        let is_feature = |feature: &str| match feature.as_bytes().split_last() {
            Some((sign, name)) => {
                matches!(sign, b'+' | b'-') && !name.is_empty() && name.iter().all(u8::is_ascii_alphanumeric)
            }
            None => false,
        };
        let ok = is_processor && parts.all(is_feature) && is_valid_family_name(name);
        ok.then(|| TargetId(name.to_owned()))
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

/// The third part of an artifact directory name, or one name of a family flag, sorted,
/// compared and serialised by its spelling (so sets of them keep the build's order).
#[derive(Clone, Debug)]
pub enum TargetFamily {
    /// `generic`: arch-neutral artifacts.
    Generic,
    /// One GPU target: `gfx1030`, `gfx90a:xnack+`.
    TargetId(TargetId),
    /// Anything else, as spelled: a family such as `gfx110X-all`. Not checked here: the
    /// plan refuses names that [`TargetFamily::is_valid_in_names`] rejects.
    Family(String),
}

impl TargetFamily {
    pub fn parse(name: &str) -> TargetFamily {
        if name == "generic" {
            return TargetFamily::Generic;
        }
        match TargetId::parse(name) {
            Some(id) => TargetFamily::TargetId(id),
            None => TargetFamily::Family(name.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            TargetFamily::Generic => "generic",
            TargetFamily::TargetId(id) => id.as_str(),
            TargetFamily::Family(name) => name,
        }
    }

    pub fn is_generic(&self) -> bool {
        matches!(self, TargetFamily::Generic)
    }

    pub fn target_id(&self) -> Option<&TargetId> {
        match self {
            TargetFamily::TargetId(id) => Some(id),
            TargetFamily::Generic | TargetFamily::Family(_) => None,
        }
    }

    /// The base ISA of a target id; None for `generic` and families.
    pub fn target(&self) -> Option<Target> {
        self.target_id().map(TargetId::target)
    }

    /// Whether the name may be carried into file, module and package names.
    pub fn is_valid_in_names(&self) -> bool {
        is_valid_family_name(self.as_str())
    }
}

impl PartialEq for TargetFamily {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for TargetFamily {}

impl PartialOrd for TargetFamily {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TargetFamily {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for TargetFamily {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Display for TargetFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for TargetFamily {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
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
        for (name, target) in [
            ("gfx90a", "gfx90a"),
            ("gfx90a:xnack+", "gfx90a"),
            ("GFX90A", "gfx90a"),
            ("gfx90a:sramecc+:xnack-", "gfx90a"),
            ("gfx1100", "gfx1100"),
            ("gfx1250-strict", "gfx1250-strict"),
            ("GFX1250-STRICT:xnack-", "gfx1250-strict"),
        ] {
            let id = TargetId::parse(name).expect("valid target id");
            assert_eq!((id.as_str(), id.to_string()), (name, name.to_owned()));
            assert_eq!(id.target().as_str(), target, "{name}");
        }
        assert_eq!(serde_json::to_string(&TargetId::parse("gfx90a:xnack+")).expect("serialises"), "\"gfx90a:xnack+\"");
    }

    #[test]
    fn not_target_ids() {
        let long = format!("gfx{}", "1".repeat(100));
        for bad in [
            "",
            "generic",
            "gfx",
            "gfx110X-all",
            "gfx94X-dcgpu",
            "gfx950-dcgpu",
            "gfx1250-other",
            "dgpu-all",
            "gfx90a:",
            "gfx90a:xnack",
            "gfx90a:+",
            "gfx90a::xnack+",
            "gfx90a:xn ack+",
            "gfx90a xnack+",
            "gfx90a/..",
            "gfx90a\n",
            "x\"; import os",
            "gfx\u{e9}",
            &long,
        ] {
            assert_eq!(TargetId::parse(bad), None, "{bad:?}");
        }
    }

    /// The variant `name` parses into, and its target.
    fn check(name: &str, expect_kind: &str, expect_target: Option<&str>) {
        let family = TargetFamily::parse(name);
        let kind = match &family {
            TargetFamily::Generic => "generic",
            TargetFamily::TargetId(_) => "target id",
            TargetFamily::Family(_) => "family",
        };
        assert_eq!((kind, family.target().as_ref().map(Target::as_str)), (expect_kind, expect_target), "{name:?}");
        assert_eq!(family.as_str(), name, "the spelling is kept");
        assert_eq!(family.is_generic(), name == "generic");
    }

    #[test]
    fn target_families() {
        check("generic", "generic", None);
        check("gfx110X-all", "family", None);
        check("gfx90a", "target id", Some("gfx90a"));
        check("GFX90A", "target id", Some("gfx90a"));
        check("gfx90a:xnack+", "target id", Some("gfx90a"));
        check("gfx90a:sramecc+:xnack-", "target id", Some("gfx90a"));
        check("Generic", "family", None);
        check("x\"; import os", "family", None);
        check("", "family", None);
    }

    #[test]
    fn targets_know_their_owner() {
        let owner = |id: &str| TargetId::parse(id).expect("a target id").target().owner().to_string();
        assert_eq!(owner("gfx1250-strict"), "gfx1250");
        assert_eq!(owner("gfx1250"), "gfx1250");
        assert_eq!(owner("gfx90a:xnack+"), "gfx90a");
        check("gfx1250-strict", "target id", Some("gfx1250-strict"));
    }

    #[test]
    fn target_families_sort_and_serialise_by_spelling() {
        let mut families: Vec<TargetFamily> =
            ["gfx94X-dcgpu", "gfx1151", "generic", "gfx110X-all"].into_iter().map(TargetFamily::parse).collect();
        families.sort();
        let names: Vec<&str> = families.iter().map(TargetFamily::as_str).collect();
        assert_eq!(names, ["generic", "gfx110X-all", "gfx1151", "gfx94X-dcgpu"]);
        assert_eq!(serde_json::to_string(&families[2]).expect("serialises"), "\"gfx1151\"");
        assert_eq!(TargetFamily::parse("gfx90a"), TargetFamily::TargetId(TargetId::parse("gfx90a").expect("id")));
    }

    #[test]
    fn family_names() {
        assert!(is_valid_family_name("gfx110X-all"));
        assert!(is_valid_family_name("gfx950:xnack+"));
        assert!(!is_valid_family_name("x\"; import os"));
        assert!(!is_valid_family_name("a\nb"));
        assert!(!is_valid_family_name(""));
        assert!(TargetFamily::parse("generic").is_valid_in_names());
        assert!(TargetFamily::parse("gfx110X-all").is_valid_in_names());
        assert!(!TargetFamily::parse("gfx1100 ").is_valid_in_names());
        assert!(!TargetFamily::parse(&format!("gfx{}", "1".repeat(100))).is_valid_in_names());
    }
}
