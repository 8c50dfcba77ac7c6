//! The devel tree (SPEC §2 "Devel population"): everything, with files that runtime
//! packages already ship replaced by relative symlinks into those packages.
//!
//! The tree holds every path of the build, once per family, so it is never held: a
//! [`DevelTree`] keeps the rules' inputs (which runtime package placed which path, the
//! SONAME aliases) and decides each entry as [`DevelTree::walk`] reads it from the
//! artifacts, once when the plan is made (findings, sizes) and again when the tarball is
//! written (SPEC §5: memory bounded whatever the build's size).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use super::resolve::{resolve, Unresolved};
use super::rpath::decide_rpath;
use super::runtime::{rpath_edit, Builder, SourceFile};
use super::{elf_error, rules, DevelEntry, Finding, FindingKind, LinkReason, PackagePlan, PlannedFile};
use crate::catalog::{ArtifactName, CatalogError, Entry, EntryKind, MergedTree, Override};
use crate::config::{AbsoluteRpath, PackageGroup};
use crate::elf::{self, EditStrategy};
use crate::identity::PackageRole;
use crate::relpath::RelPath;
use crate::write::WriteError;
use elf_audit::Architecture;

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
    let merged = MergedTree::new(builder.catalog, &predicate);
    if merged.is_empty() {
        return Ok(None);
    }
    let role_family = if builder.dist_info.devel_target_specific { family } else { None };
    let role = PackageRole::Devel { family: role_family.map(str::to_owned) };
    let names = builder.wheel_names(&role)?;

    // Runtime packages this devel tree may link into: arch-neutral ones and its own family.
    let mut placed: BTreeMap<RelPath, Arc<str>> = BTreeMap::new();
    let mut aliases: BTreeMap<RelPath, String> = BTreeMap::new();
    for package in runtime {
        let package_family = package.role.family_or_target();
        let same_family = package_family.is_none() || package_family == family;
        let linkable = matches!(package.group(), PackageGroup::Core | PackageGroup::Libraries) && same_family;
        if !linkable {
            continue;
        }
        let platform_dir: Arc<str> = Arc::from(package.names.platform_dir.as_str());
        for (rel, file) in &package.files {
            // An executable symlink became a launcher in the runtime package; the devel tree
            // keeps the original symlink, which stays inside the devel tree (a link to the
            // runtime launcher would dangle once that package is uninstalled first).
            if !matches!(file, PlannedFile::Launcher { .. }) {
                placed.entry(rel.clone()).or_insert_with(|| Arc::clone(&platform_dir));
            }
        }
        if let Some(package_aliases) = builder.aliases.get(&package.names.distribution) {
            aliases.extend(package_aliases.iter().map(|(rel, soname)| (rel.clone(), soname.clone())));
        }
    }

    let mut tree = DevelTree {
        merged,
        artifacts_dir: builder.catalog.artifacts_dir.clone(),
        placed,
        aliases,
        soname_links: BTreeMap::new(),
        absolute_rpath: builder.config.absolute_rpath,
        target: builder.config.platform_tag.machine(),
        planned: DevelSummary::default(),
    };
    tree.planned = plan_walk(builder, &mut tree, &names.distribution)?;
    Ok(Some(PackagePlan {
        role,
        names,
        requires_dist: Vec::new(),
        files: BTreeMap::new(),
        devel_tree: Some(Arc::new(tree)),
    }))
}

/// The planning walk: records what the user should hear about, links the SONAMEs the
/// build lacks, and sums up what the writer's walks must find again.
fn plan_walk(builder: &mut Builder<'_>, tree: &mut DevelTree, dist_name: &str) -> Result<DevelSummary, crate::Error> {
    let mut alias_targets: Vec<RelPath> = Vec::new();
    let mut summary = tree.walk(
        &mut |rel, entry| {
            if let DevelEntry::Symlink { target, why: LinkReason::SonameAlias } = entry {
                alias_targets.extend(rel.parent().and_then(|dir| dir.join(target).ok()));
            }
            Ok(())
        },
        &mut |note| match note {
            Noted::Unresolved { link, unresolved } => builder.drop_unresolved(dist_name, &link, &unresolved),
            Noted::RpathRemoved { rel, entries } => builder.record(Finding {
                package: dist_name.to_owned(),
                path: rel,
                what: FindingKind::RpathRemoved { entries },
            }),
            Noted::Override(override_) => builder.note_override(override_),
        },
    )?;
    // A SONAME alias must not dangle: if its SONAME was shipped under a new name by a runtime
    // package (the build had no file of that name), link that name too.
    for soname_rel in alias_targets {
        let Some(platform_dir) = tree.placed.get(&soname_rel) else { continue };
        if tree.soname_links.contains_key(&soname_rel) {
            continue;
        }
        if tree.merged.lookup(&soname_rel).map_err(crate::Error::Catalog)?.is_none() {
            let target = runtime_link(&soname_rel, platform_dir);
            let entry = DevelEntry::Symlink { target, why: LinkReason::RuntimePackage };
            summary.add(&soname_rel, &entry);
            tree.soname_links.insert(soname_rel, entry);
        }
    }
    Ok(summary)
}

/// A devel tree, decided entry by entry as it is read (see the module docs).
#[derive(Debug)]
pub struct DevelTree {
    merged: MergedTree,
    artifacts_dir: PathBuf,
    /// Paths a linkable runtime package ships, and its platform dir.
    placed: BTreeMap<RelPath, Arc<str>>,
    /// Paths of libraries not named after their SONAME → the SONAME.
    aliases: BTreeMap<RelPath, String>,
    /// Links to runtime files for SONAMEs the artifacts lack (decided by the planning walk).
    soname_links: BTreeMap<RelPath, DevelEntry>,
    absolute_rpath: AbsoluteRpath,
    target: Architecture,
    /// What the planning walk found.
    pub planned: DevelSummary,
}

/// What a walk of the tree found: sizes for the tarball, and a digest of every artifact
/// entry it read, in order, so a later walk can name the first path that changed.
#[derive(Clone, Debug, Default)]
pub struct DevelSummary {
    /// Entries of the tree, and of them regular files.
    pub entries: u64,
    pub files: u64,
    /// Bytes of the files as they go into the tarball (edited files at their new length).
    pub file_bytes: u64,
    /// Bytes of the entries' paths and link targets.
    pub name_bytes: u64,
    /// RPATH edits per strategy.
    pub rpath_edits: BTreeMap<EditStrategy, usize>,
    /// One hash per artifact entry read (8 bytes a path, not the path itself).
    digests: Vec<u64>,
}

impl DevelSummary {
    fn add(&mut self, rel: &RelPath, entry: &DevelEntry) {
        self.entries += 1;
        self.name_bytes += rel.as_str().len() as u64;
        match entry {
            DevelEntry::Dir => {}
            DevelEntry::Symlink { target, .. } => self.name_bytes += target.len() as u64,
            DevelEntry::File { file } => {
                self.files += 1;
                self.file_bytes += match file {
                    PlannedFile::PatchRpath { edit, .. } => edit.new_len,
                    other => other.input_len(),
                };
                if let PlannedFile::PatchRpath { edit, .. } = file {
                    *self.rpath_edits.entry(edit.strategy).or_insert(0) += 1;
                }
            }
        }
    }
}

/// What a walk tells the planner besides the entries.
#[derive(Debug)]
enum Noted {
    /// A symlink that cannot be followed: dropped.
    Unresolved { link: Entry, unresolved: Unresolved },
    /// Absolute entries removed from a devel-only file's search path.
    RpathRemoved { rel: RelPath, entries: Vec<String> },
    /// Two artifacts provide one path; the later one wins.
    Override(Override),
}

impl DevelTree {
    /// The directory names of the artifacts the tree is made from, sorted.
    pub fn artifact_names(&self) -> Vec<String> {
        self.merged.artifact_names()
    }

    /// Calls `each` with every entry in path order, deciding it from the artifacts as they
    /// are now, and `note` with every finding; returns what it found.
    fn walk(
        &self,
        each: &mut dyn FnMut(&RelPath, &DevelEntry) -> Result<(), crate::Error>,
        note: &mut dyn FnMut(Noted),
    ) -> Result<DevelSummary, crate::Error> {
        self.walk_checked(None, each, note)
    }

    /// [`DevelTree::walk`] for the writer: every entry as the plan found it, or an error
    /// naming the first path that was added, removed or changed since.
    pub fn walk_planned(
        &self,
        each: &mut dyn FnMut(&RelPath, &DevelEntry) -> Result<(), crate::Error>,
    ) -> Result<(), crate::Error> {
        self.walk_checked(Some(&self.planned.digests), each, &mut |_| {}).map(|_| ())
    }

    fn walk_checked(
        &self,
        planned: Option<&[u64]>,
        each: &mut dyn FnMut(&RelPath, &DevelEntry) -> Result<(), crate::Error>,
        note: &mut dyn FnMut(Noted),
    ) -> Result<DevelSummary, crate::Error> {
        let mut summary = DevelSummary::default();
        let mut soname_links = self.soname_links.iter().peekable();
        let mut clashes: Vec<Override> = Vec::new();
        let mut read = 0usize;
        self.merged.walk::<crate::Error>(
            &mut |entry| {
                let now = digest(&entry);
                match planned {
                    None => summary.digests.push(now),
                    Some(planned) => check_unchanged(&entry, planned.get(read).copied(), now)?,
                }
                read += 1;
                while let Some((rel, link)) = soname_links.next_if(|(rel, _)| **rel < entry.rel) {
                    summary.add(rel, link);
                    each(rel, link)?;
                }
                if let Some(devel_entry) = self.decide(&entry, note)? {
                    summary.add(&entry.rel, &devel_entry);
                    each(&entry.rel, &devel_entry)?;
                }
                Ok(())
            },
            &mut |clash| clashes.push(clash),
        )?;
        if planned.is_some_and(|planned| planned.len() != read) {
            let reason = "paths of the devel artifacts were removed since the plan".to_owned();
            return Err(WriteError::Changed { path: self.artifacts_dir.clone(), reason }.into());
        }
        for (rel, link) in soname_links {
            summary.add(rel, link);
            each(rel, link)?;
        }
        clashes.into_iter().for_each(|clash| note(Noted::Override(clash)));
        self.merged.forget_listings();
        Ok(summary)
    }

    /// Every entry, collected (for tests and small trees: a build's tree is large).
    pub fn collect(&self) -> Result<Vec<(RelPath, DevelEntry)>, crate::Error> {
        let mut entries = Vec::new();
        self.walk_planned(&mut |rel, entry| {
            entries.push((rel.clone(), entry.clone()));
            Ok(())
        })?;
        Ok(entries)
    }

    /// SPEC §2 "Devel population" for one artifact entry; `None` drops it.
    fn decide(&self, entry: &Entry, note: &mut dyn FnMut(Noted)) -> Result<Option<DevelEntry>, crate::Error> {
        let rel = &entry.rel;
        Ok(Some(if matches!(entry.kind, EntryKind::Dir) {
            DevelEntry::Dir
        } else if let Some(soname) = self.aliases.get(rel) {
            DevelEntry::Symlink { target: soname.clone(), why: LinkReason::SonameAlias }
        } else if let Some(platform_dir) = self.placed.get(rel) {
            DevelEntry::Symlink { target: runtime_link(rel, platform_dir), why: LinkReason::RuntimePackage }
        } else if let EntryKind::Symlink { target } = &entry.kind {
            match self.resolve(rel, target)? {
                Ok(()) => DevelEntry::Symlink { target: target.clone(), why: LinkReason::Source },
                Err(unresolved) => {
                    note(Noted::Unresolved { link: entry.clone(), unresolved });
                    return Ok(None);
                }
            }
        } else if let Some(file) = SourceFile::of(&entry.kind) {
            DevelEntry::File { file: self.devel_file(entry, file, note)? }
        } else {
            return Ok(None);
        }))
    }

    /// Follows a link through the artifacts on disk, as the runtime rules do in memory.
    fn resolve(&self, rel: &RelPath, target: &str) -> Result<Result<(), Unresolved>, CatalogError> {
        let mut failed: Option<CatalogError> = None;
        let resolved = resolve(
            |path: &RelPath| match self.merged.lookup(path) {
                Ok(found) => found,
                Err(error) => {
                    failed.get_or_insert(error);
                    None
                }
            },
            rel,
            target,
        );
        match failed {
            Some(error) => Err(error),
            None => Ok(resolved.map(|_| ())),
        }
    }

    /// Devel-only files are shipped as they are, except that an ELF search path is
    /// normalised to DT_RPATH (absolute entries removed unless asked to keep them, and each
    /// removal reported like a runtime package's: SPEC §2 "RPATH dependencies", §5).
    fn devel_file(
        &self,
        entry: &Entry,
        file: SourceFile,
        note: &mut dyn FnMut(Noted),
    ) -> Result<PlannedFile, crate::Error> {
        let SourceFile { len, mode, stamp } = file;
        let executable = mode & 0o111 != 0;
        let source = &entry.source;
        let copy = PlannedFile::Copy { source: source.clone(), len, executable, stamp };
        let elf = elf::read_elf(source).map_err(elf_error)?;
        let Some(elf) = elf.filter(|info| crate::platform::can_run(self.target, info) && info.is_patchable()) else {
            return Ok(copy);
        };
        let Some(existing) = elf.search_path() else { return Ok(copy) };
        let decision = decide_rpath(&entry.rel, Some(existing), "", &[], self.absolute_rpath);
        if elf.runpath.is_none() && decision.rpath == existing {
            return Ok(copy);
        }
        if !decision.removed.is_empty() {
            note(Noted::RpathRemoved { rel: entry.rel.clone(), entries: decision.removed.clone() });
        }
        let planned = elf::plan_set_rpath(source, &decision.rpath).map_err(elf_error)?;
        let mut edited = rpath_edit(source, file, elf.kind, decision);
        if let PlannedFile::PatchRpath { edit, .. } = &mut edited {
            edit.strategy = planned.strategy;
            edit.new_len = planned.new_len();
            edit.edit_digest = crate::member::edit_digest(&planned);
        }
        Ok(edited)
    }
}

/// The plan lists the tree as it lists a runtime package's files: a map of path → entry.
impl serde::Serialize for DevelTree {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let mut map = serializer.serialize_map(usize::try_from(self.planned.entries).ok())?;
        let mut failed: Option<S::Error> = None;
        let walked = self.walk_planned(&mut |rel, entry| {
            map.serialize_entry(rel, entry).map_err(|error| {
                let stop = crate::plan::PlanError::Invalid { message: error.to_string() };
                failed = Some(error);
                stop.into()
            })
        });
        if let Some(error) = failed {
            return Err(error);
        }
        walked.map_err(S::Error::custom)?;
        map.end()
    }
}

/// From `_rocm_sdk_devel/{rel}` to `{platform_dir}/{rel}`, both in site-packages.
fn runtime_link(rel: &RelPath, platform_dir: &str) -> String {
    format!("{}{platform_dir}/{rel}", "../".repeat(rel.depth() + 1))
}

/// The writer's walk reads the entries the plan read, in the same order; the first that
/// differs is named (a path added or removed shifts the rest, so it may be the one after).
fn check_unchanged(entry: &Entry, planned: Option<u64>, now: u64) -> Result<(), WriteError> {
    let reason = match planned {
        Some(planned) if planned == now => return Ok(()),
        Some(_) => "it, or the path before it, was added, removed or modified since the plan",
        None => "it was added since the plan",
    };
    Err(WriteError::Changed { path: entry.source.to_path_buf(), reason: reason.to_owned() })
}

/// Which artifact entry a walk read: its path, where it came from and what it was.
fn digest(entry: &Entry) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    entry.rel.hash(&mut hasher);
    entry.source.hash(&mut hasher);
    match &entry.kind {
        EntryKind::Dir => 0u8.hash(&mut hasher),
        EntryKind::File { len, mode, stamp } => {
            (1u8, len, mode, stamp.inode, stamp.mtime_ns).hash(&mut hasher);
        }
        EntryKind::Symlink { target } => (2u8, target).hash(&mut hasher),
    }
    hasher.finish()
}
