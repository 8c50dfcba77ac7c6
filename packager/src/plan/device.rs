//! Device packages (kpack-split, SPEC §2 "Device population"): one wheel per owner (a base
//! target and the targets the owner table groups with it), overlaying the libraries
//! platform dir, plus the `.devel_links/{target}.json` manifest that links its files into
//! an expanded devel tree.

use std::collections::BTreeSet;

use super::runtime::Builder;
use super::{owner_merge, rules, PackagePlan, PlanError, PlannedFile};
use crate::identity;
use crate::identity::PackageRole;
use crate::input::catalog::{ArtifactName, Selection};
use crate::relpath::{RelPath, RelPathError};
use crate::targets::Target;

/// The device wheel of `target`, an owner: its members' payloads merged, once they are
/// known not to clash.
pub fn device_package(builder: &mut Builder<'_>, target: &Target) -> Result<PackagePlan, PlanError> {
    owner_merge::check_members(builder, target)?;
    let predicate = |name: &ArtifactName| rules::is_device_artifact(name, target);
    let namespace = builder.select(&Selection { artifacts: &predicate, include: Vec::new(), exclude: Vec::new() })?;
    let mut plan = builder.package_from(PackageRole::Device { target: target.clone() }, &namespace)?;
    let libraries = builder.dist_info.names(&PackageRole::Libraries { family: None });
    // The whole release, so a libraries wheel republished as a post release still serves
    // this device wheel (SPEC §2).
    plan.requires_dist =
        vec![format!("{}{}", libraries.distribution, super::version::release_specifier(&builder.dist_info.version))];
    let platform_dir = plan.names.platform_dir.clone();
    // The devel tree mirrors everything this wheel adds to the libraries platform dir
    // (SPEC §2, §4): its payload, its metadata module (which `python` adds to the wheel)
    // and this manifest itself, so code comparing the two trees finds no file missing.
    let manifest_rel = RelPath::new(&format!(".devel_links/{target}.json")).map_err(invalid_name)?;
    let module_rel =
        RelPath::new(&format!("{}.py", identity::device_module_name(target.as_str()))).map_err(invalid_name)?;
    let mut added: BTreeSet<&RelPath> = plan.files.keys().collect();
    added.extend([&manifest_rel, &module_rel]);
    let manifest = devel_links_manifest(&builder.dist_info.version, platform_dir.as_str(), added.into_iter());
    plan.files.insert(manifest_rel, PlannedFile::Generated { bytes: manifest });
    Ok(plan)
}

/// A target was validated when the catalog read it (SPEC §1), so a name made from it that
/// is no relpath is a bug worth a clear error rather than a panic.
fn invalid_name(error: RelPathError) -> PlanError {
    PlanError::Invalid { message: format!("device wheel file name: {error}") }
}

/// `{"version": V, "links": [{"relpath": R, "target": "../"*depth + platform/R}]}`: where
/// each file of this wheel appears in the devel tree, relative to that place.
fn devel_links_manifest<'a>(version: &str, platform_dir: &str, rels: impl Iterator<Item = &'a RelPath>) -> Vec<u8> {
    let links: Vec<serde_json::Value> = rels
        .map(|rel| {
            let target = format!("{}{platform_dir}/{rel}", "../".repeat(rel.depth() + 1));
            serde_json::json!({ "relpath": rel.as_str(), "target": target })
        })
        .collect();
    let manifest = serde_json::json!({ "version": version, "links": links });
    let mut bytes = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_links_reach_the_libraries_dir() {
        let rels = [RelPath::new("lib/rocblas/library/TensileLibrary_gfx90a.co").expect("rel")];
        let bytes = devel_links_manifest("7.0.0", "_rocm_sdk_libraries", rels.iter());
        let value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(
            value["links"][0]["target"],
            "../../../../_rocm_sdk_libraries/lib/rocblas/library/TensileLibrary_gfx90a.co"
        );
        assert_eq!(value["version"], "7.0.0");
    }
}
