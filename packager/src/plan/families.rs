//! Target families of a build (SPEC §1, §2 `_dist_info.py`): which legacy families or
//! kpack-split device targets exist, which were requested, the default, and completeness.

use std::collections::BTreeSet;

use super::DistInfo;
use super::PlanError;
use crate::config::{FamilyRequest, PackageConfig};
use crate::input::catalog::Catalog;
use crate::targets::{Target, TargetFamily, TargetId};

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FamilyPlan {
    /// Legacy: the build's families as spelled by the artifacts (`gfx110X-all`), sorted.
    pub legacy_families: Vec<String>,
    /// Kpack-split: the owners of the supplied targets (SPEC §2, grouped by owner), one
    /// device wheel each, sorted.
    pub device_targets: Vec<Target>,
    /// Kpack-split: base targets with device artifacts (`gfx1250`, `gfx1250-strict`), sorted.
    pub supplied_targets: Vec<Target>,
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
    let families = catalog.target_families();
    let mut plan = FamilyPlan::default();
    if catalog.kpack_split() {
        // `plan_packages` has refused kpack-split artifacts named after a family.
        let targets: BTreeSet<Target> = families.iter().filter_map(TargetFamily::target).collect();
        let owners: BTreeSet<Target> = targets.iter().map(Target::owner).collect();
        plan.device_targets = owners.into_iter().collect();
        plan.supplied_targets = targets.into_iter().collect();
        plan.available = plan.supplied_targets.iter().map(|target| target.to_string()).collect();
        let linux = requested_targets(&request.linux, request)?;
        let windows = requested_targets(&request.windows, request)?;
        let requested: BTreeSet<Target> = linux.iter().chain(&windows).flatten().cloned().collect();
        let missing: Vec<String> = requested
            .iter()
            .filter(|target| !plan.supplied_targets.contains(target))
            .map(ToString::to_string)
            .collect();
        if !missing.is_empty() {
            return Err(PlanError::MissingTargets { missing, available: plan.available.clone() });
        }
        if !requested.is_empty() {
            plan.unrequested_targets =
                plan.supplied_targets.iter().filter(|target| !requested.contains(target)).cloned().collect();
        }
        plan.requested_targets = requested.into_iter().collect();
        let names = |targets: Vec<Target>| targets.iter().map(ToString::to_string).collect::<Vec<String>>();
        plan.linux = linux.map(names).unwrap_or_else(|| plan.available.clone());
        plan.windows = windows.map(names).unwrap_or_default();
    } else {
        plan.legacy_families = families.iter().map(ToString::to_string).collect();
        plan.available = plan.legacy_families.clone();
        plan.linux = spelled(&request.linux).unwrap_or_else(|| plan.available.clone());
        plan.windows = spelled(&request.windows).unwrap_or_default();
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

/// Legacy: the requested families as given. `None` when nothing was requested.
fn spelled(names: &[String]) -> Option<Vec<String>> {
    (!names.is_empty()).then(|| names.to_vec())
}

/// Kpack-split: the base targets one flag's names stand for, in the order given. `None`
/// when nothing was requested.
fn requested_targets(names: &[String], request: &FamilyRequest) -> Result<Option<Vec<Target>>, PlanError> {
    if names.is_empty() {
        return Ok(None);
    }
    let mut targets = Vec::new();
    for name in names {
        // The checkout's table first: it lists each target under its own name too.
        if let Some(expanded) = request.expansion.get(name) {
            targets.extend(expanded.iter().map(TargetId::target));
            continue;
        }
        match TargetFamily::parse(name) {
            TargetFamily::TargetId(id) => targets.push(id.target()),
            TargetFamily::Generic | TargetFamily::Family(_) => {
                return Err(PlanError::UnknownFamily { family: name.clone() })
            }
        }
    }
    Ok(Some(targets))
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
        windows: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn request(linux: &[&str], windows: &[&str]) -> FamilyRequest {
        let owned = |list: &[&str]| list.iter().map(|name| (*name).to_owned()).collect::<Vec<String>>();
        let id = |name: &str| TargetId::parse(name).expect("a target id");
        let expansion = [("gfx110X-all", vec![id("gfx1100"), id("gfx1101")]), ("gfx1100", vec![id("gfx1100")])]
            .into_iter()
            .map(|(family, targets)| (family.to_owned(), targets))
            .collect();
        FamilyRequest { linux: owned(linux), windows: owned(windows), expansion }
    }

    /// The targets of each flag's list, or the error's text.
    fn check(linux: &[&str], windows: &[&str], expect: Result<[Option<&[&str]>; 2], &str>) {
        let request = request(linux, windows);
        let as_names = |targets: Option<Vec<Target>>| {
            targets.map(|targets| targets.iter().map(ToString::to_string).collect::<Vec<String>>())
        };
        let actual = requested_targets(&request.linux, &request)
            .and_then(|linux| Ok([as_names(linux), as_names(requested_targets(&request.windows, &request)?)]))
            .map_err(|error| error.to_string());
        let expect = expect
            .map(|lists| lists.map(|list| list.map(|names| names.iter().map(|name| (*name).to_owned()).collect())))
            .map_err(str::to_owned);
        assert_eq!(actual, expect, "{linux:?} {windows:?}");
    }

    #[test]
    fn flags_mix_families_and_target_ids() {
        check(&[], &[], Ok([None, None]));
        check(&["gfx110X-all", "gfx90a:xnack+"], &[], Ok([Some(&["gfx1100", "gfx1101", "gfx90a"]), None]));
        check(
            &["GFX1030"],
            &["gfx90a:sramecc+:xnack-", "gfx110X-all"],
            Ok([Some(&["gfx1030"]), Some(&["gfx90a", "gfx1100", "gfx1101"])]),
        );
        // A target the checkout lists goes through its table; one it does not is taken as is.
        check(&["gfx1100", "gfx942"], &[], Ok([Some(&["gfx1100", "gfx942"]), None]));
    }

    #[test]
    fn unknown_family_is_an_error() {
        let unknown = |name: &str| {
            format!("requested family {name:?} is not known (not in cmake/therock_amdgpu_targets.cmake and not a gfx target)")
        };
        check(&["gfx94X-dcgpu"], &[], Err(&unknown("gfx94X-dcgpu")));
        check(&["gfx1100"], &["generic"], Err(&unknown("generic")));
        check(&["gfx90a:xnack"], &[], Err(&unknown("gfx90a:xnack")));
    }
}
