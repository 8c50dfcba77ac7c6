//! Rules about the set of packages as a whole (SPEC §2 "Validations", SPEC §6): one release
//! (what the set's pins admit, a post release too, SPEC §2), consistent pins, no member path in two wheels,
//! one file per file name, and a complete kpack-split set with one device wheel per owner.
//!
//! Owns: cross-package checks over read archives. Does not own: reading them (`archive`).

use std::collections::BTreeMap;

use super::archive::Archive;
use super::metadata::{available_target_families, file_name_form, normalize_name};
use super::report::{ArchiveKind, Check, Findings};
use crate::same_release::{release_admits, same_release, specifier_admits};
use crate::sdk_names::SdkNames;
use crate::targets::owner_overrides;
use crate::targets::Target;

/// Files found under one name: keeps the first of each name, merging byte-identical copies
/// and reporting different ones.
pub(crate) fn dedupe_file_names(archives: Vec<Archive>, findings: &mut Findings) -> Vec<Archive> {
    let mut by_name: BTreeMap<String, Archive> = BTreeMap::new();
    for archive in archives {
        match by_name.get_mut(&archive.file) {
            None => {
                by_name.insert(archive.file.clone(), archive);
            }
            Some(kept) if kept.sha256 == archive.sha256 => kept.locations.extend(archive.locations),
            Some(kept) => {
                let first = kept.locations.first().map(|path| path.display().to_string()).unwrap_or_default();
                let other = archive.locations.first().map(|path| path.display().to_string()).unwrap_or_default();
                findings.violation(
                    &kept.file,
                    None,
                    Check::DuplicateFileName,
                    format!(
                        "two different files share this name: `{first}` (sha256 {}) and `{other}` (sha256 {}); one index cannot hold both",
                        kept.sha256, archive.sha256
                    ),
                );
                kept.locations.extend(archive.locations);
            }
        }
    }
    by_name.into_values().collect()
}

pub(crate) fn check_set(archives: &[Archive], findings: &mut Findings) {
    check_one_version(archives, findings);
    check_pins(archives, findings);
    check_duplicate_paths(archives, findings);
    check_kpack_completeness(archives, findings);
    check_offered(archives, findings);
    check_case_clashes(archives, findings);
}

/// Two paths of one site-packages that differ only in case (`lib/Foo.h`, `lib/foo.h`) are
/// one file on Windows and default macOS file systems: reported like the names Windows
/// cannot extract, across every wheel and devel tarball of the set, since all
/// of them land in one site-packages.
fn check_case_clashes(archives: &[Archive], findings: &mut Findings) {
    let mut seen: BTreeMap<String, (&str, &str)> = BTreeMap::new();
    for archive in archives.iter().filter(|archive| archive.kind == ArchiveKind::Wheel) {
        let devel = archive.devel.iter().flat_map(|tree| tree.entries.iter().map(|entry| entry.path.as_str()));
        for path in archive.installed.iter().map(String::as_str).chain(devel) {
            let folded = path.to_lowercase();
            match seen.get(&folded) {
                None => {
                    seen.insert(folded, (path, archive.file.as_str()));
                }
                Some((first, first_file)) if *first != path => {
                    let message = if *first_file == archive.file {
                        format!("differs only in case from `{first}`; Windows and macOS cannot hold both")
                    } else {
                        format!(
                            "differs only in case from `{first}` of {first_file}; Windows and macOS cannot hold both"
                        )
                    };
                    findings.warning(&archive.file, Some(path), Check::WindowsName, message);
                }
                Some(_) => {}
            }
        }
    }
}

/// Family and target wheels of the set must be on offer in its `rocm` sdist: a
/// wheel of a family dropped since an earlier run would otherwise pass, although no install
/// selects it. Only family-suffixed names are judged: `rocm_sdk_libraries_{family}`,
/// `rocm_sdk_devel_{family}` and `rocm_sdk_device_{target}`.
fn check_offered(archives: &[Archive], findings: &mut Findings) {
    for sdist in
        archives.iter().filter(|archive| archive.kind == ArchiveKind::Sdist && archive.name.as_deref() == Some("rocm"))
    {
        let Some(families) = sdist.dist_info_data.as_deref().and_then(available_target_families) else { continue };
        let mut offered: Vec<String> = families.iter().map(|family| file_name_form(family)).collect();
        offered.extend(families.iter().map(|family| file_name_form(Target::from_target_id(family).as_str())));
        offered.extend(families.iter().map(|family| device_wheel_target(family)));
        let same_set = |archive: &Archive| match (&archive.version, &sdist.version) {
            (Some(version), Some(sdist_version)) => same_release(version, sdist_version),
            (version, sdist_version) => version == sdist_version,
        };
        for wheel in archives.iter().filter(|archive| archive.kind == ArchiveKind::Wheel && same_set(archive)) {
            let Some(name) = wheel.name.as_deref() else { continue };
            check_device_owner(wheel, name, findings);
            let family = ["rocm_sdk_libraries_", "rocm_sdk_devel_", "rocm_sdk_device_"]
                .iter()
                .find_map(|prefix| name.strip_prefix(prefix));
            if let Some(family) = family.filter(|family| !offered.iter().any(|offered| offered == family)) {
                findings.violation(
                    &wheel.file,
                    None,
                    Check::Completeness,
                    format!(
                        "{} does not offer {family} (AVAILABLE_TARGET_FAMILIES), so no install selects this wheel: \
                         a wheel of an earlier run?",
                        sdist.file
                    ),
                );
            }
        }
    }
}

/// The device wheel name part of a target: its owner's (SPEC §2, grouped by owner),
/// `gfx1250-strict` → `gfx1250`.
fn device_wheel_target(target: &str) -> String {
    file_name_form(Target::from_target_id(target).owner().as_str())
}

/// A device wheel named after a target that the owner table puts in another target's
/// wheel: no install selects it (SPEC §2).
fn check_device_owner(wheel: &Archive, name: &str, findings: &mut Findings) {
    let Some(target) = name.strip_prefix("rocm_sdk_device_") else { return };
    let owned: Vec<(&String, &String)> =
        owner_overrides().iter().filter(|(listed, _)| file_name_form(listed) == target).collect();
    for (listed, owner) in owned {
        findings.violation(
            &wheel.file,
            None,
            Check::Completeness,
            format!(
                "the payload of {listed} ships in its owner's wheel, rocm_sdk_device_{} (target_owners.json), \
                 never in a wheel of its own",
                file_name_form(owner)
            ),
        );
    }
}

/// Packages of the SDK: wheels built on it have releases of their own (`third_party`
/// judges their requirements instead).
fn sdk_archives(archives: &[Archive]) -> impl Iterator<Item = &Archive> {
    let names = SdkNames::of(archives);
    archives.iter().filter(move |archive| archive.name.as_deref().is_none_or(|name| names.contains(name)))
}

fn check_one_version(archives: &[Archive], findings: &mut Findings) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for version in sdk_archives(archives).filter_map(|archive| archive.version.as_deref()) {
        *counts.entry(version).or_default() += 1;
    }
    // The most common version is taken as the set's; ties go to the first in sort order.
    let Some((&majority, _)) = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else { return };
    // What the set's pins admit belongs to it (SPEC §2): one package republished as a post
    // release, and nothing pip would not take for one.
    for archive in sdk_archives(archives) {
        if let Some(version) = archive.version.as_deref().filter(|version| !release_admits(majority, version)) {
            findings.violation(
                &archive.file,
                None,
                Check::Version,
                format!("version {version} differs from the rest of the set ({majority})"),
            );
        }
    }
}

fn check_pins(archives: &[Archive], findings: &mut Findings) {
    let versions: BTreeMap<String, Vec<&str>> = archives.iter().fold(BTreeMap::new(), |mut map, archive| {
        if let (Some(name), Some(version)) = (&archive.name, &archive.version) {
            map.entry(normalize_name(name)).or_default().push(version.as_str());
        }
        map
    });
    for archive in sdk_archives(archives) {
        for (name, pinned, requirement) in super::metadata::version_pins(&archive.headers) {
            let Some(available) = versions.get(&name) else { continue };
            if !available.iter().any(|version| specifier_admits(&pinned, version)) {
                findings.violation(
                    &archive.file,
                    None,
                    Check::Pin,
                    format!(
                        "`Requires-Dist: {requirement}` pins {pinned}, but the set has {name} {}",
                        available.join(", ")
                    ),
                );
            }
        }
    }
}

/// SPEC §6: no two wheels ship one member path, device overlays included.
fn check_duplicate_paths(archives: &[Archive], findings: &mut Findings) {
    // Two versions of one distribution (a release and its post release) replace each other
    // when installed: only wheels of different distributions can clash.
    let wheels: Vec<&Archive> = archives.iter().filter(|archive| archive.kind == ArchiveKind::Wheel).collect();
    let distributions: Vec<String> = wheels
        .iter()
        .map(|wheel| wheel.name.as_deref().map(normalize_name).unwrap_or_else(|| wheel.file.clone()))
        .collect();
    let mut owners: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (wheel, distribution) in wheels.iter().zip(&distributions) {
        for path in &wheel.installed {
            owners.entry(path.as_str()).or_default().push((wheel.file.as_str(), distribution.as_str()));
        }
    }
    for (path, files) in owners {
        for (file, distribution) in &files {
            let others: Vec<&str> = files
                .iter()
                .filter(|(_, other_distribution)| other_distribution != distribution)
                .map(|(other_file, _)| *other_file)
                .collect();
            if others.is_empty() {
                continue;
            }
            findings.violation(
                file,
                Some(path),
                Check::DuplicatePath,
                format!("also installed by {}; uninstalling one removes the other's file", others.join(", ")),
            );
        }
    }
}

/// SPEC §2 "Validations": a kpack-split set (a `rocm_sdk_libraries` wheel without a family)
/// needs the core wheel, the `rocm` sdist and one device wheel per advertised target.
fn check_kpack_completeness(archives: &[Archive], findings: &mut Findings) {
    let wheel_named = |name: &str, version: &str| {
        archives.iter().any(|archive| {
            archive.kind == ArchiveKind::Wheel
                && archive.name.as_deref() == Some(name)
                && archive.version.as_deref().is_some_and(|found| same_release(found, version))
        })
    };
    for libraries in archives
        .iter()
        .filter(|archive| archive.kind == ArchiveKind::Wheel && archive.name.as_deref() == Some("rocm_sdk_libraries"))
    {
        let Some(version) = libraries.version.as_deref() else { continue };
        let file = libraries.file.as_str();
        if !wheel_named("rocm_sdk_core", version) {
            findings.violation(
                file,
                None,
                Check::Completeness,
                format!("kpack-split set has no rocm_sdk_core {version} wheel"),
            );
        }
        let sdist = archives.iter().find(|archive| {
            archive.kind == ArchiveKind::Sdist
                && archive.name.as_deref() == Some("rocm")
                && archive.version.as_deref().is_some_and(|found| same_release(found, version))
        });
        let Some(sdist) = sdist else {
            findings.violation(
                file,
                None,
                Check::Completeness,
                format!("kpack-split set has no rocm-{version}.tar.gz"),
            );
            continue;
        };
        let Some(targets) = sdist.dist_info_data.as_deref().and_then(available_target_families) else {
            findings.violation(
                &sdist.file,
                None,
                Check::Completeness,
                "cannot read AVAILABLE_TARGET_FAMILIES from rocm_sdk/_dist_info_data.py",
            );
            continue;
        };
        // One device wheel per owner: its members' targets are all in it (SPEC §2).
        let mut owners: Vec<String> = targets.iter().map(|target| device_wheel_target(target)).collect();
        owners.sort();
        owners.dedup();
        for owner in owners {
            let device = format!("rocm_sdk_device_{owner}");
            if !wheel_named(&device, version) {
                findings.violation(
                    file,
                    None,
                    Check::Completeness,
                    format!("the sdist offers target {owner}, but there is no {device}-{version} wheel"),
                );
            }
        }
    }
}
