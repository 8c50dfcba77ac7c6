//! Artifact directory names: `{name}_{component}_{target_family}`, each part free of `_`.

use std::path::PathBuf;

use super::CatalogError;
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

    /// Why this name is not one TheRock writes, if it is not: TheRock writes names in
    /// lower case, one of a few components, and `generic`, a family or a target spelled as
    /// its `cmake/therock_amdgpu_targets.cmake` spells them (SPEC §1). Anything else (a
    /// stray copy `blas_lib_gfx1100.bak`, a name in other case `CORE-HIP_LIB_GENERIC` or
    /// `blas_lib_gfx1030-ALL`) would otherwise become a family of its own, even the
    /// default one, or a second spelling of a family that lower-cases onto the same
    /// package names. Matched case-sensitively, so no two names it accepts differ only
    /// in case.
    pub fn unexpected(&self) -> Option<String> {
        let name_ok = !self.name.is_empty()
            && self.name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-');
        if !name_ok {
            return Some(format!("its name {:?} is not lower-case letters, digits and `-`", self.name));
        }
        if !COMPONENTS.contains(&self.component.as_str()) {
            return Some(format!("its component {:?} is none of {}", self.component, COMPONENTS.join(", ")));
        }
        let family = self.target_family.as_str();
        if is_therock_family(family) {
            return None;
        }
        let suggestion = match therock_spelling(family) {
            Some(respelled) => format!(" (TheRock spells it {respelled:?})"),
            None => String::new(),
        };
        Some(format!("its target family {family:?} is not spelled as TheRock spells families and targets{suggestion}"))
    }

    /// This name as TheRock would spell it, when it differs from it only in case.
    pub fn therock_spelling(&self) -> Option<String> {
        let family = self.target_family.as_str();
        let family = if is_therock_family(family) { family.to_owned() } else { therock_spelling(family)? };
        let respelled = format!("{}_{}_{family}", self.name.to_ascii_lowercase(), self.component.to_ascii_lowercase());
        let accepted = ArtifactName::parse(&respelled).is_some_and(|name| name.unexpected().is_none());
        (accepted && respelled != self.dir_name()).then_some(respelled)
    }
}

/// Refuses, when the catalog is read, every artifact directory whose name TheRock does not
/// write (SPEC §1), naming it and how TheRock spells it; `found` is sorted by name.
pub(super) fn check_names(found: &[(ArtifactName, PathBuf)], kpack_split: bool) -> Result<(), CatalogError> {
    for (name, path) in found {
        let artifact = || name.dir_name();
        if !name.target_family.is_valid_in_names() {
            return Err(CatalogError::BadFamilyName { artifact: artifact(), path: path.clone() });
        }
        if let Some(mut reason) = name.unexpected() {
            // The same artifact under TheRock's spelling beside it: two names of one package.
            if let Some(respelled) = name.therock_spelling() {
                if found.iter().any(|(other, _)| other.dir_name() == respelled) {
                    reason.push_str(&format!(
                        "; it differs only in case from {respelled:?}, also in the artifacts directory"
                    ));
                }
            }
            return Err(CatalogError::UnexpectedArtifact { artifact: artifact(), path: path.clone(), reason });
        }
        if kpack_split && matches!(name.target_family, TargetFamily::Family(_)) {
            return Err(CatalogError::NotATargetId { artifact: artifact(), path: path.clone() });
        }
    }
    Ok(())
}

/// The families TheRock's `cmake/therock_amdgpu_targets.cmake` defines end in one of these,
/// always lower case (`gfx110X-all`, `gfx94X-dcgpu`, `gfx90c-igpu`, `gfx101X-dgpu`).
const FAMILY_SUFFIXES: [&str; 4] = ["all", "dgpu", "igpu", "dcgpu"];

/// Whether `family` is `generic`, a family or a GPU target id spelled as TheRock spells
/// them:
/// - a target: `gfx`, a digit, lower-case hex digits (`gfx90a`, `gfx942`, `gfx1201`), or a
///   target the owner table names (`gfx1250-strict`); then any `:feature+` / `:feature-`
///   in lower case (`gfx942:xnack+`);
/// - a family: such a target, or a series ending in an upper-case `X` (`gfx94X`,
///   `gfx110X`), then `-` and a suffix of [`FAMILY_SUFFIXES`] (`gfx110X-all`,
///   `gfx950-dcgpu`); or a kind across series: `dgpu-all`, `igpu-all`, `dcgpu-all`.
pub fn is_therock_family(family: &str) -> bool {
    family == "generic" || is_therock_target_id(family) || is_family_of_targets(family)
}

fn is_therock_target_id(name: &str) -> bool {
    let mut parts = name.split(':');
    let processor = parts.next().unwrap_or_default();
    let is_feature = |feature: &str| match feature.as_bytes().split_last() {
        Some((sign, name)) => {
            matches!(sign, b'+' | b'-')
                && !name.is_empty()
                && name.iter().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit())
        }
        None => false,
    };
    let listed = crate::owners::owner_overrides().contains_key(processor);
    (is_gfx_processor(processor) || listed) && parts.all(is_feature)
}

/// `gfx`, a digit, then lower-case hex digits.
fn is_gfx_processor(name: &str) -> bool {
    name.strip_prefix("gfx").is_some_and(|rest| {
        rest.bytes().next().is_some_and(|byte| byte.is_ascii_digit())
            && rest.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    })
}

fn is_family_of_targets(name: &str) -> bool {
    if matches!(name, "dgpu-all" | "igpu-all" | "dcgpu-all") {
        return true;
    }
    let Some((series, suffix)) = name.rsplit_once('-') else { return false };
    let series = series.strip_suffix('X').unwrap_or(series);
    FAMILY_SUFFIXES.contains(&suffix) && is_gfx_processor(series)
}

/// `family` spelled as TheRock would, when that differs from it only in case: lower case
/// but for the `X` that ends a series (`GFX110x-ALL` → `gfx110X-all`).
fn therock_spelling(family: &str) -> Option<String> {
    let lower = family.to_ascii_lowercase();
    let candidates = [
        lower.clone(),
        match lower.rsplit_once('-') {
            Some((series, suffix)) if series.ends_with('x') => format!("{}X-{suffix}", &series[..series.len() - 1]),
            _ => lower.clone(),
        },
    ];
    candidates.into_iter().find(|candidate| candidate != family && is_therock_family(candidate))
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
        for good in [
            "core-hip_lib_generic",
            "blas_lib_gfx110X-all",
            "blas_lib_gfx90a:xnack+",
            "prim_dev_generic",
            "blas_lib_gfx1250-strict",
            "blas_lib_gfx942:sramecc+:xnack-",
            "blas_lib_gfx90c-igpu",
            "blas_lib_gfx950-dcgpu",
            "blas_lib_gfx101X-dgpu",
            "blas_lib_dcgpu-all",
        ] {
            assert_eq!(unexpected(good), None, "{good}");
        }
        for bad in [
            "CORE-HIP_LIB_GENERIC",
            "core-hip_lib_GENERIC",
            "core-hip_LIB_generic",
            "blas_lib_gfx1100.bak",
            "blas_lib_GFX90A",
            "blas_lib_gfx90A",
            "blas_lib_Generic",
            "blas_libs_generic",
            "blas_lib_gfx1030-ALL",
            "blas_lib_gfx110x-all",
            "blas_lib_gfx110X-All",
            "blas_lib_gfx110X-DGPU",
            "blas_lib_gfx942:XNACK+",
            "blas_lib_gfx1250-STRICT",
            "blas_lib_gfx1250-other",
            "blas_lib_gfx110X",
            "blas_lib_gfx-all",
            "blas_lib_gfxx-all",
            "blas_lib_dgpu-igpu",
            "blas_lib_gfx110X-all-extra",
        ] {
            assert!(unexpected(bad).is_some(), "{bad}");
        }
    }

    /// Names that differ from TheRock's spelling only in case are told how TheRock spells
    /// them; others are not given a guess.
    #[test]
    fn names_differing_in_case_get_therock_s_spelling() {
        let respelled = |dir_name: &str| ArtifactName::parse(dir_name).expect("artifact shape").therock_spelling();
        for (odd, therock) in [
            ("blas_lib_gfx1030-ALL", Some("blas_lib_gfx1030-all")),
            ("blas_lib_gfx110x-all", Some("blas_lib_gfx110X-all")),
            ("BLAS_LIB_GFX110X-ALL", Some("blas_lib_gfx110X-all")),
            ("blas_lib_GFX90A:XNACK+", Some("blas_lib_gfx90a:xnack+")),
            ("blas_lib_gfx1250-STRICT", Some("blas_lib_gfx1250-strict")),
            ("CORE-HIP_LIB_generic", Some("core-hip_lib_generic")),
            ("blas_lib_gfx110X-all", None),
            ("blas_lib_gfx1100.bak", None),
        ] {
            assert_eq!(respelled(odd).as_deref(), therock, "{odd}");
        }
        let reason = ArtifactName::parse("blas_lib_gfx110x-ALL").expect("shape").unexpected().expect("unexpected");
        assert!(reason.contains("\"gfx110x-ALL\"") && reason.contains("TheRock spells it \"gfx110X-all\""), "{reason}");
    }

    /// Every name accepted is TheRock's only spelling of itself: none case-folds onto
    /// another accepted name, so two artifacts can never become one package name.
    #[test]
    fn accepted_names_never_differ_only_in_case() {
        for name in ["generic", "gfx110X-all", "gfx90a", "gfx942:xnack+", "gfx1250-strict", "dgpu-all", "gfx950-dcgpu"]
        {
            assert!(is_therock_family(name), "{name}");
            for variant in [name.to_ascii_lowercase(), name.to_ascii_uppercase(), name.replace('X', "x")] {
                assert!(variant == name || !is_therock_family(&variant), "{name} and {variant}");
            }
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
