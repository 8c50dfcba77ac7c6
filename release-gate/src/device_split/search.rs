//! The kpack runtime's search, simulated in the set's installed view (KPACK.md §2
//! "Matching"): for every `HIPK` wrapper of every host binary and every device the set
//! offers code for, each marker path is resolved against the binary's directory with `@GFXARCH@`
//! expanded for the target's feature subsets (all features first, the bare processor
//! last, then its generic target), the archives found are opened, and some archive whose
//! `gfx_arches` lists an id tried must hold `<kernel_name>#<index>` for it. A miss is what a
//! user with that GPU meets as `hipErrorInvalidImage`.
//!
//! Owns: that simulation and its violations. Does not own: the installed view (`closure`),
//! reading archives and markers (`kpack`).

use std::collections::{BTreeMap, BTreeSet};

use crate::archive::Archive;
use crate::closure::{join, lexical, parent_dir, Install};
use crate::escape::escape;
use crate::kpack::{feature_subsets, generic_of, is_generic, is_known, split_target, KpackArchive, Marker, Wrapper};
use crate::report::{Check, Findings};

const PLACEHOLDER: &str = "@GFXARCH@";

/// The ids the runtime tries for a device of `target`: its feature subsets, then those of
/// its generic target with the same features.
fn tried_ids(target: &str) -> Vec<String> {
    let mut ids = feature_subsets(target);
    let (processor, features) = split_target(target);
    if let Some(generic) = generic_of(processor) {
        let generic_target = std::iter::once(generic).chain(features.iter().copied()).collect::<Vec<_>>().join(":");
        ids.extend(feature_subsets(&generic_target));
    }
    ids
}

/// The devices the set offers code for, as the runtime names them: every processor its
/// archives list, in whichever wheel (a device wheel carrying target-specific host code
/// offers its targets too), with
/// each feature any of its archives names set on and off (a gfx90a is always
/// `xnack+` or `xnack-`, so `gfx90a` and `gfx90a:xnack+` archives make two devices, one
/// served by the overlay, one by the bare archive). Generic targets are only fallbacks,
/// unless nothing else is offered.
fn offered_devices(archives: &[Archive]) -> Vec<String> {
    let mut features: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for arch in archives.iter().flat_map(|archive| archive.kpacks.iter()).flat_map(|kpack| kpack.gfx_arches.iter()) {
        let (processor, settings) = split_target(arch);
        // Only a processor LLVM knows is a device; this also bounds the work a hostile
        // `gfx_arches` of thousands of names could ask for.
        if !is_known(processor) {
            continue;
        }
        let named = features.entry(processor).or_default();
        let names = settings.iter().map(|setting| setting.trim_end_matches(['+', '-']));
        named.extend(names.filter(|name| matches!(*name, "sramecc" | "xnack")));
    }
    if features.keys().any(|processor| !is_generic(processor)) {
        features.retain(|processor, _| !is_generic(processor));
    }
    let mut offered = Vec::new();
    for (processor, named) in features {
        // Feature lists are one or two long; a hostile archive naming more is cut short.
        let named: Vec<&str> = named.into_iter().take(4).collect();
        for mask in 0..1u32 << named.len() {
            let mut id = processor.to_owned();
            for (bit, feature) in named.iter().enumerate() {
                let sign = if mask & (1 << (named.len() - 1 - bit)) == 0 { '+' } else { '-' };
                id.push_str(&format!(":{feature}{sign}"));
            }
            offered.push(id);
        }
    }
    offered
}

pub(super) fn check_search(archives: &[Archive], install: &Install, findings: &mut Findings) {
    let targets = offered_devices(archives);
    let by_path: BTreeMap<&str, &KpackArchive> =
        archives.iter().flat_map(|archive| archive.kpacks.iter()).map(|kpack| (kpack.path.as_str(), kpack)).collect();
    for archive in archives {
        for binary in &archive.fat_binaries {
            let split = binary.wrappers.iter().filter_map(|wrapper| match wrapper {
                Wrapper::Split { position, index, marker: Some(marker) } => Some((*position, *index, marker)),
                _ => None,
            });
            let mut reported_no_targets = false;
            for (position, index, marker) in split {
                if targets.is_empty() && !reported_no_targets {
                    reported_no_targets = true;
                    findings.violation(
                        &archive.file,
                        Some(&binary.path),
                        Check::DeviceCode,
                        "has HIPK wrappers, but the set has no kpack archive for any target: its device code is nowhere",
                    );
                }
                for target in &targets {
                    let search = Search { install, by_path: &by_path, directory: parent_dir(&binary.path) };
                    if let Some(tried) = search.miss(marker, index, target) {
                        let key = format!("{}#{index}", marker.kernel_name);
                        findings.violation(
                            &archive.file,
                            Some(&binary.path),
                            Check::DeviceCode,
                            format!(
                                "wrapper {position} (`{}`) finds no code object for {}: tried {}",
                                escape(&key),
                                escape(target),
                                tried
                            ),
                        );
                    }
                }
            }
        }
    }
}

struct Search<'a> {
    install: &'a Install,
    by_path: &'a BTreeMap<&'a str, &'a KpackArchive>,
    /// The binary's directory in site-packages, which marker paths are relative to.
    directory: &'a str,
}

impl Search<'_> {
    /// `None` when some archive the marker's paths reach holds `{kernel_name}#{index}` for
    /// an id tried for `target`; else the paths tried, for the message.
    fn miss(&self, marker: &Marker, index: u32, target: &str) -> Option<String> {
        let ids = tried_ids(target);
        let mut opened: Vec<&KpackArchive> = Vec::new();
        let mut tried: Vec<String> = Vec::new();
        for path in &marker.search_paths {
            let expanded: Vec<String> = if path.contains(PLACEHOLDER) {
                ids.iter().map(|id| path.replace(PLACEHOLDER, id)).collect()
            } else {
                vec![path.clone()]
            };
            for candidate in expanded {
                if candidate.starts_with('/') {
                    // An absolute path names the user's machine, not the set.
                    tried.push(format!("`{}` (absolute)", escape(&candidate)));
                    continue;
                }
                let joined = join(self.directory, &candidate);
                tried.push(format!("`{}`", escape(&lexical(&joined))));
                let found = self.install.real_file(&joined).and_then(|real| self.by_path.get(real.as_str()).copied());
                if let Some(kpack) = found.filter(|kpack| !opened.iter().any(|seen| seen.path == kpack.path)) {
                    opened.push(kpack);
                }
            }
        }
        let key = format!("{}#{index}", marker.kernel_name);
        let hit = ids.iter().any(|id| {
            opened
                .iter()
                .any(|kpack| kpack.gfx_arches.contains(id) && kpack.entries.contains(&(key.clone(), id.clone())))
        });
        (!hit).then(|| tried.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_offered() {
        let kpack = |arches: &[&str]| KpackArchive {
            gfx_arches: arches.iter().map(|arch| (*arch).to_owned()).collect(),
            ..KpackArchive::default()
        };
        let offered = |arches: Vec<&[&str]>| {
            let mut archive = crate::archive::not_a_file("x".into(), "x.whl", "a test");
            archive.kpacks = arches.into_iter().map(kpack).collect();
            offered_devices(&[archive])
        };
        assert_eq!(
            offered(vec![&["gfx90a"], &["gfx90a:xnack+"], &["gfx1030"]]),
            ["gfx1030", "gfx90a:xnack+", "gfx90a:xnack-"]
        );
        assert_eq!(
            offered(vec![&["gfx942:sramecc+:xnack-"]]),
            ["gfx942:sramecc+:xnack+", "gfx942:sramecc+:xnack-", "gfx942:sramecc-:xnack+", "gfx942:sramecc-:xnack-"]
        );
        assert_eq!(offered(vec![&["gfx11-generic"], &["gfx1100"]]), ["gfx1100"]);
        assert_eq!(offered(vec![&["gfx11-generic"]]), ["gfx11-generic"]);
    }

    #[test]
    fn ids_tried_for_a_device() {
        assert_eq!(tried_ids("gfx90a:xnack+"), ["gfx90a:xnack+", "gfx90a"]);
        assert_eq!(tried_ids("gfx1100"), ["gfx1100", "gfx11-generic"]);
        assert_eq!(tried_ids("gfx942:xnack-"), ["gfx942:xnack-", "gfx942", "gfx9-4-generic:xnack-", "gfx9-4-generic"]);
    }
}
