//! Target families of a build (SPEC §1, §2 `_dist_info.py`): which legacy families or
//! kpack-split device targets exist, which were requested, the default, and completeness.

use std::collections::BTreeSet;

use super::targets::Target;
use super::PlanError;
use crate::catalog::Catalog;
use crate::config::{FamilyRequest, PackageConfig};
use crate::python::DistInfo;

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FamilyPlan {
    /// Legacy: the build's families as spelled by the artifacts (`gfx110X-all`), sorted.
    pub legacy_families: Vec<String>,
    /// Kpack-split: base targets with device artifacts, sorted.
    pub device_targets: Vec<Target>,
    /// `AVAILABLE_TARGET_FAMILIES`.
    pub available: Vec<String>,
    pub default: Option<String>,
    pub linux: Vec<String>,
    pub windows: Vec<String>,
    /// Kpack-split: targets requested through the family flags.
    pub requested_targets: Vec<Target>,
    /// Kpack-split: targets with artifacts that nobody requested (reported, still packaged).
    pub unrequested_targets: Vec<Target>,
}

impl FamilyPlan {
    /// Legacy multi-family builds get one devel wheel per family (SPEC §2).
    pub fn devel_target_specific(&self) -> bool {
        self.legacy_families.len() > 1
    }
}

pub fn plan_families(catalog: &Catalog, request: &FamilyRequest) -> Result<FamilyPlan, PlanError> {
    let families: Vec<String> = catalog.target_families().into_iter().collect();
    let mut plan = FamilyPlan::default();
    if catalog.kpack_split() {
        let targets: BTreeSet<Target> = families.iter().map(|family| Target::from_target_id(family)).collect();
        plan.device_targets = targets.into_iter().collect();
        plan.available = plan.device_targets.iter().map(|target| target.to_string()).collect();
        let requested = requested_targets(request)?;
        let missing: Vec<String> =
            requested.iter().filter(|target| !plan.device_targets.contains(target)).map(ToString::to_string).collect();
        if !missing.is_empty() {
            return Err(PlanError::MissingTargets { missing, available: plan.available.clone() });
        }
        if !requested.is_empty() {
            plan.unrequested_targets =
                plan.device_targets.iter().filter(|target| !requested.contains(target)).cloned().collect();
        }
        plan.requested_targets = requested.into_iter().collect();
        plan.linux = expand_names(&request.linux, request, true).unwrap_or_else(|| plan.available.clone());
        plan.windows = expand_names(&request.windows, request, true).unwrap_or_default();
    } else {
        plan.legacy_families = families.clone();
        plan.available = families;
        plan.linux = expand_names(&request.linux, request, false).unwrap_or_else(|| plan.available.clone());
        plan.windows = expand_names(&request.windows, request, false).unwrap_or_default();
    }
    plan.linux.sort();
    plan.linux.dedup();
    plan.windows.sort();
    plan.windows.dedup();
    // `plan.linux` stands for every family when its flag is absent; the default looks only
    // at the lists that were given.
    let linux = (!request.linux.is_empty()).then_some(plan.linux.as_slice());
    let windows = (!request.windows.is_empty()).then_some(plan.windows.as_slice());
    plan.default = default_family(&plan.available, linux, windows);
    Ok(plan)
}

/// SPEC §2: the default is the first of the build's `available` families (sorted) that
/// both the Linux and the Windows lists name when both flags were given, so one default
/// serves both platforms; failing that, the first that a given list names; failing that,
/// the first. `None` for a list means its flag was not given.
fn default_family(available: &[String], linux: Option<&[String]>, windows: Option<&[String]>) -> Option<String> {
    let named = |family: &&String, list: Option<&[String]>| list.is_some_and(|list| list.contains(family));
    let in_both = match (linux, windows) {
        (Some(_), Some(_)) => available.iter().find(|family| named(family, linux) && named(family, windows)),
        _ => None,
    };
    in_both
        .or_else(|| available.iter().find(|family| named(family, linux) || named(family, windows)))
        .or(available.first())
        .cloned()
}

/// The requested names as the build spells them: targets for kpack-split, families otherwise.
/// `None` when nothing was requested.
fn expand_names(names: &[String], request: &FamilyRequest, as_targets: bool) -> Option<Vec<String>> {
    if names.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for name in names {
        if as_targets {
            let targets = request.expansion.get(name).cloned().unwrap_or_else(|| vec![name.clone()]);
            out.extend(targets.iter().map(|target| Target::from_target_id(target).to_string()));
        } else {
            out.push(name.clone());
        }
    }
    Some(out)
}

fn requested_targets(request: &FamilyRequest) -> Result<BTreeSet<Target>, PlanError> {
    let mut targets = BTreeSet::new();
    for name in request.linux.iter().chain(&request.windows) {
        match request.expansion.get(name) {
            Some(expanded) => targets.extend(expanded.iter().map(|target| Target::from_target_id(target))),
            None if looks_like_target(name) => {
                targets.insert(Target::from_target_id(name));
            }
            None => return Err(PlanError::UnknownFamily { family: name.clone() }),
        }
    }
    Ok(targets)
}

/// `gfx90a`, `gfx1100`, `gfx950:xnack+`: a target id rather than a family like `gfx110X-all`.
fn looks_like_target(name: &str) -> bool {
    let base = name.split(':').next().unwrap_or(name);
    base.len() > 3
        && base[..3].eq_ignore_ascii_case("gfx")
        && base[3..].bytes().all(|byte| byte.is_ascii_digit() || matches!(byte, b'a'..=b'f' | b'A'..=b'F'))
}

pub fn dist_info(families: &FamilyPlan, config: &PackageConfig, kpack_split: bool) -> DistInfo {
    DistInfo {
        version: config.version.clone(),
        nonce: config.version_suffix.clone(),
        kpack_split,
        default_target_family: families.default.clone(),
        available_target_families: families.available.clone(),
        linux_target_families: families.linux.clone(),
        windows_target_families: families.windows.clone(),
        device_targets: families.device_targets.iter().map(ToString::to_string).collect(),
        devel_target_specific: families.devel_target_specific(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_vs_families() {
        assert!(looks_like_target("gfx90a"));
        assert!(looks_like_target("gfx1100"));
        assert!(looks_like_target("gfx950:xnack+"));
        assert!(!looks_like_target("gfx110X-all"));
        assert!(!looks_like_target("gfx94X-dcgpu"));
    }

    /// The default for a build of three families, given the lists of the flags given.
    fn default_of(linux: Option<&[&str]>, windows: Option<&[&str]>) -> Option<String> {
        let owned = |list: &[&str]| list.iter().map(|name| (*name).to_owned()).collect::<Vec<String>>();
        let build = owned(&["gfx110X-all", "gfx1151", "gfx94X-dcgpu"]);
        let (linux, windows) = (linux.map(owned), windows.map(owned));
        default_family(&build, linux.as_deref(), windows.as_deref())
    }

    #[test]
    fn default_without_flags_is_the_first_family() {
        assert_eq!(default_of(None, None).as_deref(), Some("gfx110X-all"));
        assert_eq!(default_family(&[], None, None), None);
    }

    #[test]
    fn default_prefers_the_intersection_when_both_flags_are_given() {
        // The union's first family (gfx110X-all) is Linux-only; gfx94X-dcgpu is named by both.
        let default = default_of(Some(&["gfx110X-all", "gfx94X-dcgpu"]), Some(&["gfx94X-dcgpu", "gfx1151"]));
        assert_eq!(default.as_deref(), Some("gfx94X-dcgpu"));
        // Of several in both, the first in sorted order, whatever the lists' order.
        let default = default_of(Some(&["gfx94X-dcgpu", "gfx1151"]), Some(&["gfx94X-dcgpu", "gfx1151"]));
        assert_eq!(default.as_deref(), Some("gfx1151"));
    }

    #[test]
    fn default_falls_back_to_a_named_family_when_no_built_family_is_in_both() {
        // gfx1201 is in both lists, but the build has no artifacts for it.
        let default = default_of(Some(&["gfx1201", "gfx94X-dcgpu"]), Some(&["gfx1201", "gfx1151"]));
        assert_eq!(default.as_deref(), Some("gfx1151"));
        // Nothing named was built: the first family.
        assert_eq!(default_of(Some(&["gfx1201"]), Some(&["gfx1201"])).as_deref(), Some("gfx110X-all"));
    }

    #[test]
    fn default_with_one_flag_is_the_first_family_it_names() {
        let given: &[&str] = &["gfx94X-dcgpu", "gfx1201"];
        assert_eq!(default_of(Some(given), None).as_deref(), Some("gfx94X-dcgpu"));
        assert_eq!(default_of(None, Some(given)).as_deref(), Some("gfx94X-dcgpu"));
        assert_eq!(default_of(Some(&["gfx1201"]), None).as_deref(), Some("gfx110X-all"));
    }

    #[test]
    fn unknown_family_is_an_error() {
        let request = FamilyRequest { linux: vec!["gfx110X-all".to_owned()], ..FamilyRequest::default() };
        assert!(matches!(requested_targets(&request), Err(PlanError::UnknownFamily { .. })));
        let request =
            FamilyRequest { linux: vec!["gfx90a:xnack+".to_owned(), "GFX1030".to_owned()], ..FamilyRequest::default() };
        let targets: Vec<String> =
            requested_targets(&request).expect("targets").iter().map(ToString::to_string).collect();
        assert_eq!(targets, ["gfx1030", "gfx90a"]);
    }
}
