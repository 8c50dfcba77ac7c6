//! Rules about the set of packages as a whole (SPEC §2 "Validations", SPEC §6): one version,
//! consistent `==` pins, no member path in two wheels, one file per file name, and a
//! complete kpack-split set.
//!
//! Owns: cross-package checks over read archives. Does not own: reading them (`archive`).

use std::collections::BTreeMap;

use super::archive::Archive;
use super::metadata::{available_target_families, file_name_form, normalize_name};
use super::report::{ArchiveKind, Check, Findings};
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
        let Some(families) = sdist.dist_info_py.as_deref().and_then(available_target_families) else { continue };
        let mut offered: Vec<String> = families.iter().map(|family| file_name_form(family)).collect();
        offered.extend(families.iter().map(|family| file_name_form(Target::from_target_id(family).as_str())));
        for wheel in
            archives.iter().filter(|archive| archive.kind == ArchiveKind::Wheel && archive.version == sdist.version)
        {
            let Some(name) = wheel.name.as_deref() else { continue };
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

fn check_one_version(archives: &[Archive], findings: &mut Findings) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for version in archives.iter().filter_map(|archive| archive.version.as_deref()) {
        *counts.entry(version).or_default() += 1;
    }
    // The most common version is taken as the set's; ties go to the first in sort order.
    let Some((&majority, _)) = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else { return };
    for archive in archives {
        if let Some(version) = archive.version.as_deref().filter(|version| *version != majority) {
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
    for archive in archives {
        for (name, pinned, requirement) in super::metadata::exact_pins(&archive.headers) {
            let Some(available) = versions.get(&name) else { continue };
            if !available.contains(&pinned.as_str()) {
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
    let mut owners: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for archive in archives.iter().filter(|archive| archive.kind == ArchiveKind::Wheel) {
        for path in &archive.installed {
            owners.entry(path.as_str()).or_default().push(archive.file.as_str());
        }
    }
    for (path, files) in owners.into_iter().filter(|(_, files)| files.len() > 1) {
        for file in &files {
            let others: Vec<&str> = files.iter().copied().filter(|other| other != file).collect();
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
                && archive.version.as_deref() == Some(version)
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
                && archive.version.as_deref() == Some(version)
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
        let Some(targets) = sdist.dist_info_py.as_deref().and_then(available_target_families) else {
            findings.violation(
                &sdist.file,
                None,
                Check::Completeness,
                "cannot read AVAILABLE_TARGET_FAMILIES from rocm_sdk/_dist_info.py",
            );
            continue;
        };
        let mut bases: Vec<String> =
            targets.iter().map(|target| file_name_form(Target::from_target_id(target).as_str())).collect();
        bases.sort();
        bases.dedup();
        for base in bases {
            let device = format!("rocm_sdk_device_{base}");
            if !wheel_named(&device, version) {
                findings.violation(
                    file,
                    None,
                    Check::Completeness,
                    format!("the sdist offers target {base}, but there is no {device}-{version} wheel"),
                );
            }
        }
    }
}
