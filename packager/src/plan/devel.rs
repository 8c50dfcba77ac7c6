//! The devel tree (SPEC §2 "Devel population"): everything, with files that runtime
//! packages already ship replaced by relative symlinks into those packages.

use std::collections::BTreeMap;

use super::resolve::resolve;
use super::rpath::decide_rpath;
use super::runtime::{plan_edits, Builder, SourceFile};
use super::{rules, DevelEntry, Finding, FindingKind, LinkReason, PackagePlan, PlannedFile, RpathPlan};
use crate::catalog::{ArtifactName, EntryKind, Selection};
use crate::config::PackageGroup;
use crate::python::{self, PackageRole};
use crate::relpath::RelPath;

/// The devel package of `family` (legacy multi-family) or the only one (`None`).
/// `runtime` are the runtime packages planned so far.
pub fn devel_package(
    builder: &mut Builder<'_>,
    runtime: &[PackagePlan],
    family: Option<&str>,
) -> Result<Option<PackagePlan>, crate::Error> {
    let kpack_split = builder.catalog.kpack_split();
    let own_family = if kpack_split { None } else { family };
    let predicate = |name: &ArtifactName| rules::is_devel_artifact(name, own_family, kpack_split);
    if !builder.catalog.artifacts.iter().any(|artifact| predicate(&artifact.name)) {
        return Ok(None);
    }
    let namespace = builder.select(&Selection { artifacts: &predicate, include: Vec::new(), exclude: Vec::new() })?;
    builder.inspect_namespace(&namespace)?;
    let role_family = if builder.dist_info.devel_target_specific { family } else { None };
    let role = PackageRole::Devel { family: role_family };
    let dist_name = python::dist_name(role, builder.dist_info);

    // Runtime packages this devel tree may link into: arch-neutral ones and its own family.
    let mut placed: BTreeMap<&RelPath, &str> = BTreeMap::new();
    let mut aliases: BTreeMap<RelPath, String> = BTreeMap::new();
    for package in runtime {
        let same_family = package.family.is_none() || package.family.as_deref() == family;
        let linkable = matches!(package.group, PackageGroup::Core | PackageGroup::Libraries) && same_family;
        let Some(platform_dir) = package.platform_dir.as_deref().filter(|_| linkable) else { continue };
        for (rel, file) in &package.files {
            // An executable symlink became a launcher in the runtime package; the devel tree
            // keeps the original symlink, which stays inside the devel tree (a link to the
            // runtime launcher would dangle once that package is uninstalled first).
            if !matches!(file, PlannedFile::Launcher { .. }) {
                placed.entry(rel).or_insert(platform_dir);
            }
        }
        if let Some(package_aliases) = builder.aliases.get(&package.dist_name) {
            aliases.extend(package_aliases.iter().map(|(rel, soname)| (rel.clone(), soname.clone())));
        }
    }

    let mut tree: BTreeMap<RelPath, DevelEntry> = BTreeMap::new();
    for (rel, entry) in namespace.entries() {
        let devel_entry = if matches!(entry.kind, EntryKind::Dir) {
            DevelEntry::Dir
        } else if let Some(soname) = aliases.get(rel) {
            DevelEntry::Symlink { target: soname.clone(), why: LinkReason::SonameAlias }
        } else if let Some(platform_dir) = placed.get(rel) {
            DevelEntry::Symlink { target: runtime_link(rel, platform_dir), why: LinkReason::RuntimePackage }
        } else if let EntryKind::Symlink { target } = &entry.kind {
            match resolve(&namespace.all, rel, target) {
                Ok(_) => DevelEntry::Symlink { target: target.clone(), why: LinkReason::Source },
                Err(unresolved) => {
                    builder.drop_unresolved(&dist_name, entry, &unresolved);
                    continue;
                }
            }
        } else if let Some(file) = SourceFile::of(&entry.kind) {
            DevelEntry::File { file: devel_file(builder, &dist_name, rel, &entry.source, file) }
        } else {
            continue;
        };
        tree.insert(rel.clone(), devel_entry);
    }
    // A SONAME alias must not dangle: if its SONAME was shipped under a new name by a runtime
    // package (the build had no file of that name), link that name too.
    let alias_targets: Vec<RelPath> = tree
        .iter()
        .filter_map(|(rel, entry)| match entry {
            DevelEntry::Symlink { target, why: LinkReason::SonameAlias } => rel.parent()?.join(target).ok(),
            _ => None,
        })
        .collect();
    for soname_rel in alias_targets {
        if let (false, Some(platform_dir)) = (tree.contains_key(&soname_rel), placed.get(&soname_rel)) {
            let target = runtime_link(&soname_rel, platform_dir);
            tree.insert(soname_rel, DevelEntry::Symlink { target, why: LinkReason::RuntimePackage });
        }
    }
    plan_edits(tree.values_mut().filter_map(|entry| match entry {
        DevelEntry::File { file } => Some(file),
        _ => None,
    }))?;
    Ok(Some(PackagePlan {
        group: PackageGroup::Devel,
        dist_name,
        family: role_family.map(str::to_owned),
        py_package: python::py_package_name(role, builder.dist_info),
        platform_dir: python::platform_dir_name(role, builder.dist_info),
        requires_dist: Vec::new(),
        files: BTreeMap::new(),
        devel_tree: std::sync::Arc::new(tree),
    }))
}

/// From `_rocm_sdk_devel/{rel}` to `{platform_dir}/{rel}`, both in site-packages.
fn runtime_link(rel: &RelPath, platform_dir: &str) -> String {
    format!("{}{platform_dir}/{rel}", "../".repeat(rel.depth() + 1))
}

/// Devel-only files are shipped as they are, except that an ELF search path is normalised
/// to DT_RPATH (absolute entries removed unless asked to keep them, and each removal
/// reported like a runtime package's: SPEC §2 "RPATH dependencies", §5).
fn devel_file(
    builder: &mut Builder<'_>,
    dist_name: &str,
    rel: &RelPath,
    source: &std::sync::Arc<std::path::Path>,
    file: SourceFile,
) -> PlannedFile {
    let SourceFile { len, mode, stamp } = file;
    let executable = mode & 0o111 != 0;
    let facts = builder.facts.get(source);
    let Some(elf) = facts.elf.as_ref().filter(|_| facts.is_patchable_elf()) else {
        return PlannedFile::Copy { source: source.clone(), len, executable, stamp };
    };
    let Some(existing) = elf.search_path() else {
        return PlannedFile::Copy { source: source.clone(), len, executable, stamp };
    };
    let decision = decide_rpath(rel, Some(existing), "", &[], builder.config.keep_absolute_rpath);
    if elf.runpath.is_none() && decision.rpath == existing {
        return PlannedFile::Copy { source: source.clone(), len, executable, stamp };
    }
    if !decision.removed.is_empty() {
        builder.record(Finding {
            package: dist_name.to_owned(),
            path: rel.clone(),
            what: FindingKind::RpathRemoved { entries: decision.removed.clone() },
        });
    }
    PlannedFile::PatchRpath {
        source: source.clone(),
        len,
        stamp,
        executable,
        edit: Box::new(RpathPlan {
            kind: elf.kind,
            rpath: decision.rpath,
            removed: decision.removed,
            strategy: crate::elf::EditStrategy::Unchanged,
            new_len: len,
        }),
    }
}
