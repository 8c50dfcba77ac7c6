//! Artifact directory names: `{name}_{component}_{target_family}`, each part free of `_`.

use crate::targets::TargetFamily;

/// A parsed artifact directory name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct ArtifactName {
    pub name: String,
    pub component: String,
    /// `generic`, a family (`gfx110X-all`) or a target id (`gfx90a:xnack+`), spelled as the
    /// build spells it.
    pub target_family: TargetFamily,
}

impl ArtifactName {
    /// `None` when `dir_name` is not of the artifact shape (those entries are ignored).
    pub fn parse(dir_name: &str) -> Option<ArtifactName> {
        let mut parts = dir_name.split('_');
        let (name, component, target_family) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || [name, component, target_family].iter().any(|part| part.is_empty()) {
            return None;
        }
        Some(ArtifactName {
            name: name.to_owned(),
            component: component.to_owned(),
            target_family: TargetFamily::parse(target_family),
        })
    }

    /// The directory name this was parsed from.
    pub fn dir_name(&self) -> String {
        format!("{}_{}_{}", self.name, self.component, self.target_family)
    }

    pub fn is_generic(&self) -> bool {
        self.target_family.is_generic()
    }

    /// Why this name is not one TheRock writes, if it is not: TheRock writes
    /// names in lower case, one of a few components, and `generic` or a `gfx…` family or
    /// target. A stray copy (`blas_lib_gfx1100.bak`) or a name in other case
    /// (`CORE-HIP_LIB_GENERIC`) would otherwise become a family of its own, even the
    /// default one. Matched case-sensitively, as the build spells them.
    pub fn unexpected(&self) -> Option<String> {
        let name_ok = self.name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-');
        if !name_ok {
            return Some(format!("its name {:?} is not lower-case letters, digits and `-`", self.name));
        }
        if !COMPONENTS.contains(&self.component.as_str()) {
            return Some(format!("its component {:?} is none of {}", self.component, COMPONENTS.join(", ")));
        }
        let family = self.target_family.as_str();
        let family_ok = family == "generic"
            || family.strip_prefix("gfx").is_some_and(|rest| {
                !rest.is_empty() && rest.bytes().all(|byte| byte.is_ascii_alphanumeric() || b":+-".contains(&byte))
            });
        if !family_ok {
            return Some(format!("its target family {family:?} is neither `generic` nor a `gfx…` family or target"));
        }
        None
    }
}

/// The components TheRock splits an artifact into.
pub const COMPONENTS: [&str; 6] = ["lib", "run", "dev", "doc", "dbg", "test"];

#[cfg(test)]
mod tests {
    use super::*;

    fn check(dir_name: &str, expect: Option<(&str, &str, &str)>) {
        let parsed = ArtifactName::parse(dir_name);
        let actual = parsed.as_ref().map(|n| (n.name.as_str(), n.component.as_str(), n.target_family.as_str()));
        assert_eq!(actual, expect, "{dir_name}");
        if let Some(parsed) = parsed {
            assert_eq!(parsed.dir_name(), dir_name);
        }
    }

    #[test]
    fn three_parts() {
        check("core-hip_lib_generic", Some(("core-hip", "lib", "generic")));
        check("blas_lib_gfx110X-all", Some(("blas", "lib", "gfx110X-all")));
        check("blas_lib_gfx90a:xnack+", Some(("blas", "lib", "gfx90a:xnack+")));
        check("blas_lib_GFX90A:sramecc+:xnack-", Some(("blas", "lib", "GFX90A:sramecc+:xnack-")));
    }

    #[test]
    fn the_third_part_is_typed_once() {
        let parse = |dir_name: &str| ArtifactName::parse(dir_name).expect("artifact shape");
        assert!(parse("core-hip_lib_generic").is_generic());
        assert!(matches!(parse("blas_lib_gfx110X-all").target_family, TargetFamily::Family(_)));
        let target = parse("blas_lib_gfx90a:xnack+").target_family.target();
        assert_eq!(target.as_ref().map(|target| target.as_str()), Some("gfx90a"));
        // Not valid in package names, but still an artifact: the plan refuses it by name.
        let hostile = parse("blas_lib_gfx1100\"");
        assert!(!hostile.target_family.is_valid_in_names());
        assert_eq!(hostile.dir_name(), "blas_lib_gfx1100\"");
    }

    #[test]
    fn names_therock_does_not_write_are_unexpected() {
        let unexpected = |dir_name: &str| ArtifactName::parse(dir_name).expect("artifact shape").unexpected();
        for good in ["core-hip_lib_generic", "blas_lib_gfx110X-all", "blas_lib_gfx90a:xnack+", "prim_dev_generic"] {
            assert_eq!(unexpected(good), None, "{good}");
        }
        for bad in [
            "CORE-HIP_LIB_GENERIC",
            "core-hip_lib_GENERIC",
            "core-hip_LIB_generic",
            "blas_lib_gfx1100.bak",
            "blas_lib_GFX90A",
            "blas_lib_Generic",
            "blas_libs_generic",
        ] {
            assert!(unexpected(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn too_many_or_too_few_parts() {
        check("rocm_smi_lib_generic", None);
        check("base_lib", None);
        check("base", None);
        check("", None);
    }

    #[test]
    fn empty_parts() {
        check("_lib_generic", None);
        check("base__generic", None);
        check("base_lib_", None);
        check("__", None);
    }
}
