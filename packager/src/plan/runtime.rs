//! Runtime population (SPEC §2 "Runtime population rules"): core, libraries, profiler and
//! device packages hold only real files: SONAME-named libraries, launchers instead of
//! executable symlinks, and contents instead of other symlinks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::inspect::{FactCache, FileFacts};
use super::resolve::{resolve, Unresolved};
use super::rpath::{decide_rpath, RpathDecision};
use super::{catalog_error, elf_error, rules, Finding, FindingKind, PackagePlan, PlanError, PlannedFile, RpathPlan};
use crate::catalog::{Catalog, Entry, EntryKind, FileStamp, Glob, Namespace, Override, Selection, Walks};
use crate::config::{PackageConfig, PackageGroup};
use crate::elf;
use crate::identity::{PackageRole, WheelNames};
use crate::progress::Progress;
use crate::python::DistInfo;
use crate::relpath::RelPath;

/// Shared state of one planning run: the catalog, the file facts cache, and what the
/// packages decided so far (SONAME aliases feed the devel tree).
pub struct Builder<'a> {
    pub catalog: &'a Catalog,
    pub config: &'a PackageConfig,
    pub dist_info: &'a DistInfo,
    pub progress: &'a dyn Progress,
    pub facts: FactCache,
    pub findings: Vec<Finding>,
    pub overrides: Vec<Override>,
    /// The build's operating system (SPEC §7): Windows builds need no profiler wheel.
    pub build_os: crate::build_os::BuildOs,
    /// Per dist name: relpath → the SONAME it stands for.
    pub aliases: BTreeMap<String, BTreeMap<RelPath, String>>,
    /// Links already warned about: several packages select one link (core and devel), and
    /// the user needs to hear about it once.
    warned_links: BTreeSet<Arc<Path>>,
    /// Every artifact walked once for all packages: their plans share its paths.
    walks: Walks,
}

/// `source` with its search path set as `decision` says; how the edit is made is planned
/// later ([`plan_edits`]), for all files at once.
pub fn rpath_edit(source: &Arc<Path>, file: SourceFile, kind: elf::ElfKind, decision: RpathDecision) -> PlannedFile {
    let SourceFile { len, mode, stamp } = file;
    PlannedFile::PatchRpath {
        source: Arc::clone(source),
        len,
        stamp,
        executable: mode & 0o111 != 0,
        edit: Box::new(RpathPlan {
            kind,
            rpath: decision.rpath,
            removed: decision.removed,
            strategy: elf::EditStrategy::Unchanged,
            new_len: len,
            edit_digest: [0; 32],
        }),
    }
}

/// A regular file as the catalog saw it (the entry itself, or a link's target).
#[derive(Clone, Copy)]
pub struct SourceFile {
    pub len: u64,
    pub mode: u32,
    pub stamp: FileStamp,
}

impl SourceFile {
    /// `None` for directories and symlinks.
    pub fn of(kind: &EntryKind) -> Option<SourceFile> {
        match *kind {
            EntryKind::File { len, mode, stamp } => Some(SourceFile { len, mode, stamp }),
            _ => None,
        }
    }
}

/// The outcome of populating one package's files.
pub struct Population {
    pub files: BTreeMap<RelPath, PlannedFile>,
    pub aliases: BTreeMap<RelPath, String>,
}

impl<'a> Builder<'a> {
    pub fn new(
        catalog: &'a Catalog,
        config: &'a PackageConfig,
        dist_info: &'a DistInfo,
        progress: &'a dyn Progress,
    ) -> Builder<'a> {
        Builder {
            catalog,
            config,
            dist_info,
            progress,
            facts: FactCache::new(config.platform_tag.machine()),
            findings: Vec::new(),
            overrides: Vec::new(),
            build_os: crate::build_os::BuildOs::Linux,
            aliases: BTreeMap::new(),
            warned_links: BTreeSet::new(),
            walks: Walks::default(),
        }
    }

    pub fn select(&mut self, selection: &Selection<'_>) -> Result<Namespace, crate::Error> {
        let namespace = self.catalog.select_walked(&mut self.walks, selection).map_err(catalog_error)?;
        for override_ in &namespace.overridden {
            self.note_override(override_.clone());
        }
        Ok(namespace)
    }

    /// Several packages select the same artifacts; each override is explained once.
    pub fn note_override(&mut self, override_: Override) {
        if !self.overrides.contains(&override_) {
            self.progress
                .explain(&format!("override {}: {} wins over {}", override_.rel, override_.winner, override_.loser));
            self.overrides.push(override_);
        }
    }

    /// The platform dir that RPATH dependencies point into (always core's).
    pub fn core_platform_dir(&self) -> String {
        self.dist_info.naming().core_platform_dir().as_str().to_owned()
    }

    /// Core, or a libraries package (legacy per family, kpack-split arch-neutral).
    pub fn runtime_package(&mut self, role: PackageRole) -> Result<PackagePlan, crate::Error> {
        let (group, family) = match &role {
            PackageRole::Core => (PackageGroup::Core, None),
            PackageRole::Libraries { family } => (PackageGroup::Libraries, family.as_deref()),
            _ => {
                return Err(PlanError::Invalid { message: "runtime_package takes core or libraries".to_owned() }.into())
            }
        };
        let excludes =
            if group == PackageGroup::Core { rules::core_excludes().map_err(catalog_error)? } else { Vec::new() };
        let predicate = move |name: &crate::catalog::ArtifactName| match group {
            PackageGroup::Core => rules::is_core_artifact(name),
            _ => rules::is_libraries_artifact(name, family),
        };
        let namespace = self.select(&Selection { artifacts: &predicate, include: Vec::new(), exclude: excludes })?;
        self.package_from(role, &namespace)
    }

    /// The profiler package, or `None` when `--only` leaves it out.
    pub fn profiler_package(&mut self) -> Result<Option<PackagePlan>, crate::Error> {
        if !self.config.only.is_empty() && !self.config.only.contains(&PackageGroup::Profiler) {
            return Ok(None);
        }
        if !self.catalog.artifacts.iter().any(|artifact| rules::is_profiler_artifact(&artifact.name)) {
            // The profiler is Linux-only: a Windows build has none, and that is no error.
            if self.build_os == crate::build_os::BuildOs::Windows {
                return Ok(None);
            }
            return Err(PlanError::NoProfiler { dir: self.catalog.artifacts_dir.clone() }.into());
        }
        let includes: Vec<Glob> = rules::profiler_includes().map_err(catalog_error)?;
        let namespace = self.select(&Selection {
            artifacts: &rules::is_profiler_artifact,
            include: includes,
            exclude: Vec::new(),
        })?;
        let mut plan = self.package_from(PackageRole::Profiler, &namespace)?;
        add_profiler_links(&mut plan.files);
        Ok(Some(plan))
    }

    pub fn package_from(&mut self, role: PackageRole, namespace: &Namespace) -> Result<PackagePlan, crate::Error> {
        let names = self.wheel_names(&role)?;
        let population = self.populate(namespace, role.group(), &names.distribution)?;
        self.aliases.insert(names.distribution.clone(), population.aliases);
        let mut plan =
            PackagePlan { role, names, requires_dist: Vec::new(), files: population.files, devel_tree: None };
        plan_edits(plan.files.values_mut())?;
        self.progress.explain(&format!("{}: {} files", plan.names.distribution, plan.files.len()));
        Ok(plan)
    }

    /// The names of a wheel's role; the meta package, an sdist, has no plan of this kind.
    pub fn wheel_names(&self, role: &PackageRole) -> Result<WheelNames, PlanError> {
        self.dist_info
            .names(role)
            .into_wheel()
            .ok_or_else(|| PlanError::Invalid { message: format!("{role:?} is planned as a wheel, but is none") })
    }

    /// Applies the runtime rules to every selected entry, in path order.
    pub fn populate(
        &mut self,
        namespace: &Namespace,
        group: PackageGroup,
        dist_name: &str,
    ) -> Result<Population, crate::Error> {
        self.inspect_namespace(namespace)?;
        let deps = rules::rpath_deps(group);
        let core_dir = self.core_platform_dir();
        let mut population = Population { files: BTreeMap::new(), aliases: BTreeMap::new() };
        for (rel, entry) in namespace.entries() {
            if population.files.contains_key(rel) {
                continue;
            }
            let (source, file) = match &entry.kind {
                EntryKind::Dir => continue,
                EntryKind::File { len, mode, stamp } => (entry, SourceFile { len: *len, mode: *mode, stamp: *stamp }),
                EntryKind::Symlink { target } => match resolve(|path: &RelPath| namespace.all.get(path), rel, target) {
                    Ok(resolved) => match SourceFile::of(&resolved.kind) {
                        Some(file) => (resolved, file),
                        None => {
                            self.drop_finding(dist_name, rel, "symlink to a directory (wheels cannot hold links)");
                            continue;
                        }
                    },
                    Err(unresolved) => {
                        self.drop_unresolved(dist_name, entry, &unresolved);
                        continue;
                    }
                },
            };
            let facts = self.facts.get(&source.source);
            if let Some(soname) = facts.bad_soname() {
                self.report_bad_soname(dist_name, rel, source, soname);
            }
            let is_link = matches!(entry.kind, EntryKind::Symlink { .. });
            if is_link && facts.soname().is_none() && facts.is_executable(file.mode) {
                // SPEC §2: an executable symlink becomes a launcher of its target, as long as
                // the target ships in the same package; otherwise the contents are copied.
                if namespace.selects(&source.rel) {
                    let target = rel.relative_link_to(&source.rel);
                    self.record(Finding {
                        package: dist_name.to_owned(),
                        path: rel.clone(),
                        what: FindingKind::Launcher { target: target.clone() },
                    });
                    population.files.insert(rel.clone(), PlannedFile::Launcher { target, link: entry.source.clone() });
                    continue;
                }
            }
            if let Some(soname) = facts.soname() {
                if rel.file_name() != soname {
                    population.aliases.insert(rel.clone(), soname.to_owned());
                    self.record(Finding {
                        package: dist_name.to_owned(),
                        path: rel.clone(),
                        what: FindingKind::Alias { soname: soname.to_owned() },
                    });
                    // A library whose SONAME file is missing from the build would be lost
                    // entirely; ship it under its SONAME instead.
                    let soname_rel = rel.parent().and_then(|dir| dir.join(soname).ok());
                    if let Some(soname_rel) = soname_rel {
                        if !namespace.selects(&soname_rel) && !population.files.contains_key(&soname_rel) {
                            let file = self.planned_file(&soname_rel, source, file, &facts, &core_dir, deps, dist_name);
                            population.files.insert(soname_rel, file);
                        }
                    }
                    continue;
                }
            }
            let planned = self.planned_file(rel, source, file, &facts, &core_dir, deps, dist_name);
            population.files.insert(rel.clone(), planned);
        }
        Ok(population)
    }

    #[allow(clippy::too_many_arguments)]
    fn planned_file(
        &mut self,
        rel: &RelPath,
        source: &Entry,
        file: SourceFile,
        facts: &FileFacts,
        core_dir: &str,
        deps: &[&str],
        dist_name: &str,
    ) -> PlannedFile {
        let SourceFile { len, mode, stamp } = file;
        let executable = mode & 0o111 != 0;
        let Some(elf) = facts.elf.as_ref().filter(|_| facts.is_patchable_elf()) else {
            return PlannedFile::Copy { source: source.source.clone(), len, executable, stamp };
        };
        let decision = decide_rpath(rel, elf.search_path(), core_dir, deps, self.config.absolute_rpath);
        if !decision.removed.is_empty() {
            self.record(Finding {
                package: dist_name.to_owned(),
                path: rel.clone(),
                what: FindingKind::RpathRemoved { entries: decision.removed.clone() },
            });
        }
        rpath_edit(&source.source, file, elf.kind, decision)
    }

    /// Reads the facts of every regular file the namespace can reach.
    pub fn inspect_namespace(&mut self, namespace: &Namespace) -> Result<(), crate::Error> {
        let paths: Vec<&Arc<Path>> = namespace
            .all
            .values()
            .filter(|entry| matches!(entry.kind, EntryKind::File { .. }))
            .map(|entry| &entry.source)
            .collect();
        self.facts.fill(paths)
    }

    /// Keeps a decision for the summary and `--json`, and explains it at `-v` in the words
    /// `--plan` lists it with.
    pub fn record(&mut self, finding: Finding) {
        self.progress.explain(&finding.to_string());
        self.findings.push(finding);
    }

    pub fn drop_finding(&mut self, dist_name: &str, rel: &RelPath, reason: &str) {
        self.record(Finding {
            package: dist_name.to_owned(),
            path: rel.clone(),
            what: FindingKind::Dropped { reason: reason.to_owned() },
        });
    }

    /// A SONAME that is a path or empty is a mistake (or an attack) in the build: warned
    /// about once per file, naming it in the artifacts, and recorded per package.
    fn report_bad_soname(&mut self, dist_name: &str, rel: &RelPath, source: &Entry, soname: &str) {
        if self.warned_links.insert(source.source.clone()) {
            self.progress.warn(&format!(
                "{}: SONAME {} is not a plain file name; packaged as a library without one",
                crate::escape::escape_path(&source.source),
                crate::escape::escape(soname)
            ));
        }
        self.record(Finding {
            package: dist_name.to_owned(),
            path: rel.clone(),
            what: FindingKind::BadSoname { soname: soname.to_owned() },
        });
    }

    /// Drops a symlink that cannot be followed. A link that leaves the tree or loops (a
    /// chain, or a link to a directory holding it) is a mistake in the build (an absolute
    /// link to the build machine, a bad relative one), and
    /// is warned about at default verbosity, once, naming the link in the artifacts.
    /// A dangling link is only counted and explained at `-v`, like a link to a
    /// directory: a runtime package selects some components and paths of each artifact, so
    /// links into the rest (`lib/libfoo.so` of a `dev` component, a doc link into an
    /// excluded tree) dangle there by design in every real build, and the devel tree, which
    /// selects everything, keeps them; warning about each would bury the real mistakes.
    pub fn drop_unresolved(&mut self, dist_name: &str, link: &Entry, unresolved: &Unresolved) {
        let reason = unresolved.describe();
        let is_mistake =
            matches!(unresolved, Unresolved::Escapes { .. } | Unresolved::Loop | Unresolved::Ancestor { .. });
        if is_mistake && self.warned_links.insert(link.source.clone()) {
            self.progress.warn(&format!("dropped {} ({}): {reason}", link.rel, link.source.display()));
        }
        self.drop_finding(dist_name, &link.rel, &reason);
    }
}

/// Plans every RPATH edit on all cores, so a corrupt ELF file fails the run before
/// anything is written, and records how each edit will be made.
pub fn plan_edits<'p>(files: impl Iterator<Item = &'p mut PlannedFile>) -> Result<(), crate::Error> {
    let mut edits: Vec<&mut PlannedFile> =
        files.filter(|file| matches!(file, PlannedFile::PatchRpath { .. })).collect();
    edits
        .par_iter_mut()
        .try_for_each(|file| {
            if let PlannedFile::PatchRpath { source, edit, .. } = &mut **file {
                let planned = elf::plan_set_rpath(source, &edit.rpath)?;
                edit.strategy = planned.strategy;
                edit.new_len = planned.new_len();
                edit.edit_digest = crate::member::edit_digest(&planned);
            }
            Ok::<(), elf::ElfError>(())
        })
        .map_err(elf_error)
}

/// SPEC §2: the profiler wheel also carries unversioned names of its libraries (loaded by
/// name at run time) and `bin/rocprof-compute`.
fn add_profiler_links(files: &mut BTreeMap<RelPath, PlannedFile>) {
    let mut extra = Vec::new();
    for (rel, file) in files.iter() {
        let name = rel.file_name();
        let versioned =
            (name.starts_with("librocprof-sys") || name.starts_with("libprofiler-hub")) && name.contains(".so.");
        if rel.depth() == 1 && rel.as_str().starts_with("lib/") && versioned {
            if let Some((stem, _)) = name.split_once(".so.") {
                if let Ok(unversioned) = RelPath::new(&format!("lib/{stem}.so")) {
                    extra.push((unversioned, file.clone()));
                }
            }
        }
    }
    let compute = RelPath::new("libexec/rocprofiler-compute/rocprof-compute").ok();
    let link = RelPath::new("bin/rocprof-compute").ok();
    if let (Some(compute), Some(link)) = (compute, link) {
        if files.contains_key(&compute) {
            let target = link.relative_link_to(&compute);
            extra.push((link, PlannedFile::Launcher { target, link: Arc::from(std::path::Path::new("")) }));
        }
    }
    for (rel, file) in extra {
        files.entry(rel).or_insert(file);
    }
}
