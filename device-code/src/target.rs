//! Offload target ids as clang writes them into bundle entry ids
//! (`hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`) and as the kpack runtime matches
//! them: a processor (`gfx942`, `gfx11-generic`, `gfx1250-strict`) and ordered features,
//! each on (`+`) or off (`-`).
//!
//! Owns: parsing and printing target ids and bundle entry ids, and the runtime's order of
//! compatible feature subsets (`feature_subsets`). Must not know: which targets exist or
//! how they are grouped into products; a processor is text of a known shape, nothing more.

use std::fmt;
use std::str::FromStr;

use crate::DeviceCodeError;

/// More features than any target has (real ones carry at most `sramecc` and `xnack`): a
/// bound, so the subsets of a hostile id cannot grow without limit.
const MAX_FEATURES: usize = 8;
/// The longest processor or feature name accepted.
const MAX_NAME: usize = 64;

/// One target feature and whether it is on (`xnack+`) or off (`xnack-`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Feature {
    pub name: String,
    pub enabled: bool,
}

/// An offload target id: a processor and its features, in the order written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TargetId {
    processor: String,
    features: Vec<Feature>,
}

impl TargetId {
    /// Parses `gfx942`, `gfx90a:xnack+`, `gfx942:sramecc+:xnack-` (the text after the last
    /// `--` of an entry id).
    pub fn parse(text: &str) -> Result<TargetId, DeviceCodeError> {
        let invalid = |reason| DeviceCodeError::InvalidTarget { text: text.to_owned(), reason };
        let mut parts = text.split(':');
        let processor = parts.next().unwrap_or_default();
        if processor.is_empty() {
            return Err(invalid("no processor"));
        }
        if processor.len() > MAX_NAME
            || !processor.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
            || processor.starts_with('-')
            || processor.ends_with('-')
        {
            return Err(invalid("the processor is not letters, digits and inner dashes"));
        }
        let mut features: Vec<Feature> = Vec::new();
        for part in parts {
            let (name, enabled) = match part.as_bytes().last() {
                Some(b'+') => (&part[..part.len() - 1], true),
                Some(b'-') => (&part[..part.len() - 1], false),
                _ => return Err(invalid("a feature must end in + or -")),
            };
            if name.is_empty()
                || name.len() > MAX_NAME
                || !name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
            {
                return Err(invalid("a feature name is not lower-case letters and digits"));
            }
            if features.iter().any(|feature| feature.name == name) {
                return Err(invalid("a feature is named twice"));
            }
            if features.len() == MAX_FEATURES {
                return Err(invalid("more features than any target has"));
            }
            features.push(Feature { name: name.to_owned(), enabled });
        }
        Ok(TargetId { processor: processor.to_owned(), features })
    }

    /// The processor alone: `gfx942` for `gfx942:xnack+`.
    pub fn processor(&self) -> &str {
        &self.processor
    }

    /// The features, in the order written.
    pub fn features(&self) -> &[Feature] {
        &self.features
    }

    /// Whether the id names no feature (`gfx942`).
    pub fn is_bare(&self) -> bool {
        self.features.is_empty()
    }

    /// Whether the processor is a generic one (`gfx11-generic`), code that runs on every
    /// member of a family.
    pub fn is_generic(&self) -> bool {
        self.processor.ends_with("-generic")
    }

    /// The processor without features.
    pub fn bare(&self) -> TargetId {
        TargetId { processor: self.processor.clone(), features: Vec::new() }
    }

    /// The ids compatible with this one in the kpack runtime's order of search (KPACK.md §2
    /// "Matching"): every subset of the features by descending bitmask, where feature `i`
    /// of `n` is bit `n - 1 - i`, so the full set comes first, features are dropped from the
    /// right first, and the bare processor comes last.
    pub fn feature_subsets(&self) -> Vec<TargetId> {
        let count = self.features.len();
        let full: u32 = (1u32 << count) - 1;
        (0..=full)
            .rev()
            .map(|mask| TargetId {
                processor: self.processor.clone(),
                features: (0..count)
                    .filter(|index| mask & (1 << (count - 1 - index)) != 0)
                    .map(|index| self.features[index].clone())
                    .collect(),
            })
            .collect()
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.processor)?;
        for feature in &self.features {
            write!(formatter, ":{}{}", feature.name, if feature.enabled { '+' } else { '-' })?;
        }
        Ok(())
    }
}

impl FromStr for TargetId {
    type Err = DeviceCodeError;

    fn from_str(text: &str) -> Result<TargetId, DeviceCodeError> {
        TargetId::parse(text)
    }
}

/// A bundle entry id: the offload kind (`hipv4`, `hip`, `openmp`, `host`), the triple, and
/// the target when the entry is device code (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryId {
    pub kind: String,
    pub triple: String,
    pub target: Option<TargetId>,
}

impl EntryId {
    /// Parses an entry id. Since LLVM 12 a device id is `<kind>-<triple>--<target>` (the
    /// triple's environment left empty); older ones read `hip-amdgcn-amd-amdhsa-gfx906`.
    pub fn parse(text: &str) -> Result<EntryId, DeviceCodeError> {
        let invalid = |reason| DeviceCodeError::InvalidTarget { text: text.to_owned(), reason };
        let Some((kind, rest)) = text.split_once('-') else {
            return Err(invalid("an entry id is <kind>-<triple>[--<target>]"));
        };
        if kind.is_empty() || rest.is_empty() {
            return Err(invalid("an entry id is <kind>-<triple>[--<target>]"));
        }
        if kind == "host" {
            return Ok(EntryId { kind: kind.to_owned(), triple: rest.to_owned(), target: None });
        }
        let (triple, target) = if let Some(at) = rest.rfind("--") {
            (&rest[..at], Some(&rest[at + 2..]))
        } else {
            let components: Vec<&str> = rest.splitn(4, '-').collect();
            match components.as_slice() {
                [arch, vendor, os, target] if *arch == "amdgcn" => {
                    (&rest[..arch.len() + vendor.len() + os.len() + 2], Some(*target))
                }
                _ => (rest, None),
            }
        };
        let target = target.map(TargetId::parse).transpose()?;
        Ok(EntryId { kind: kind.to_owned(), triple: triple.to_owned(), target })
    }

    /// Whether the entry is the host's (empty in a fat binary; dropped when reading).
    pub fn is_host(&self) -> bool {
        self.kind == "host"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subsets(text: &str) -> Vec<String> {
        TargetId::parse(text).expect("parses").feature_subsets().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn target_ids_print_as_written() {
        for text in [
            "gfx942",
            "gfx90a:xnack+",
            "gfx942:sramecc+:xnack-",
            "gfx11-generic",
            "gfx1250-strict",
            "gfx9-4-generic:xnack-",
        ] {
            assert_eq!(TargetId::parse(text).expect(text).to_string(), text);
        }
        let target = TargetId::parse("gfx942:sramecc+:xnack-").expect("parses");
        assert_eq!(target.processor(), "gfx942");
        assert!(!target.is_bare() && !target.is_generic());
        assert_eq!(target.features()[1], Feature { name: "xnack".to_owned(), enabled: false });
        assert!(TargetId::parse("gfx11-generic").expect("parses").is_generic());
        assert!(TargetId::parse("gfx1030").expect("parses").is_bare());
        assert_eq!(TargetId::parse("gfx90a:xnack+").expect("parses").bare().to_string(), "gfx90a");
    }

    #[test]
    fn malformed_target_ids_are_refused_with_the_text() {
        for (text, reason) in [
            ("", "no processor"),
            (":xnack+", "no processor"),
            ("gfx942:xnack", "must end in + or -"),
            ("gfx942:+", "feature name"),
            ("gfx942:xnack+:xnack-", "named twice"),
            ("gfx 942", "processor"),
            ("-gfx942", "processor"),
            ("gfx942:a+:b+:c+:d+:e+:f+:g+:h+:i+", "more features"),
        ] {
            let error = TargetId::parse(text).expect_err(text).to_string();
            assert!(error.contains(reason) && error.contains(&format!("{text:?}")), "{text}: {error}");
        }
    }

    #[test]
    fn subsets_follow_the_runtime_order() {
        assert_eq!(subsets("gfx1201"), ["gfx1201"]);
        assert_eq!(subsets("gfx90a:xnack+"), ["gfx90a:xnack+", "gfx90a"]);
        assert_eq!(
            subsets("gfx942:sramecc+:xnack-"),
            ["gfx942:sramecc+:xnack-", "gfx942:sramecc+", "gfx942:xnack-", "gfx942"]
        );
        // Descending bitmask, not descending size: with three features the first one alone
        // (mask 100) comes after the last two together (mask 011).
        assert_eq!(
            subsets("gfx1:a+:b+:c+"),
            ["gfx1:a+:b+:c+", "gfx1:a+:b+", "gfx1:a+:c+", "gfx1:a+", "gfx1:b+:c+", "gfx1:b+", "gfx1:c+", "gfx1"]
        );
    }

    #[test]
    fn entry_ids_split_into_kind_triple_and_target() {
        let check = |text: &str, kind: &str, triple: &str, target: Option<&str>| {
            let id = EntryId::parse(text).expect(text);
            assert_eq!((id.kind.as_str(), id.triple.as_str()), (kind, triple), "{text}");
            assert_eq!(id.target.map(|target| target.to_string()).as_deref(), target, "{text}");
        };
        check(
            "hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
            "hipv4",
            "amdgcn-amd-amdhsa",
            Some("gfx942:sramecc+:xnack-"),
        );
        check("hipv4-amdgcn-amd-amdhsa--gfx11-generic", "hipv4", "amdgcn-amd-amdhsa", Some("gfx11-generic"));
        check("hip-amdgcn-amd-amdhsa-gfx906", "hip", "amdgcn-amd-amdhsa", Some("gfx906"));
        check("openmp-amdgcn-amd-amdhsa--gfx90a", "openmp", "amdgcn-amd-amdhsa", Some("gfx90a"));
        check("host-x86_64-unknown-linux", "host", "x86_64-unknown-linux", None);
        check("host-x86_64-unknown-linux-gnu-", "host", "x86_64-unknown-linux-gnu-", None);
        check("openmp-x86_64-pc-linux-gnu", "openmp", "x86_64-pc-linux-gnu", None);
        assert!(EntryId::parse("host-x86_64-unknown-linux").expect("parses").is_host());
        for text in ["", "hipv4", "-amdgcn", "hipv4-amdgcn-amd-amdhsa--gfx942:xnack"] {
            assert!(EntryId::parse(text).is_err(), "{text}");
        }
    }
}
