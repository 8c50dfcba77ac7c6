//! The ELF rules of a repair (SPEC §11): which members are bundled copies of SDK libraries
//! (removed, and every DT_NEEDED naming them renamed to the SDK's SONAME), where every
//! other ELF file's DT_NEEDED resolve in the installed layout (the wheel's own files
//! through its own `$ORIGIN` entries, the SDK's through entries to the providing
//! package's directory, the manylinux system libraries on the host), and the search path
//! each file gets: its own relative entries kept in order, the SDK's appended, absolute
//! ones removed and reported.
//!
//! Owns: those decisions, as data for the writer (`output`) and the symbol check
//! (`symbols`). Does not own: reading (`input`, `sdk_source`), the ELF editor (`elf-rpath`).

use std::collections::{BTreeMap, BTreeSet};

use elf_audit::is_system_library;

use super::error::{Problem, ProblemKind};
use super::input::{InputMember, InputWheel, Place};
use super::sdk::{without_graft_hash, Sdk};
use elf_rpath::DynamicRequest;

/// Where one DT_NEEDED of a file resolves once installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// A library the SDK ships, by SONAME.
    Sdk(String),
    /// A member of the wheel itself.
    Wheel(String),
    /// A manylinux system library.
    System,
    /// Allowed to be missing (`--allow-missing`): another package provides it at run time.
    Allowed,
    /// Nowhere (a [`ProblemKind::Library`]).
    Nowhere,
}

/// The edit of one member.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileEdit {
    pub request: DynamicRequest,
    /// Search path entries taken out, each with why.
    pub removed_entries: Vec<(String, &'static str)>,
}

/// What a repair does to a wheel's ELF files.
#[derive(Debug, Default)]
pub struct Linking {
    /// Bundled copies of SDK libraries, removed: member → the SDK SONAME it copies.
    pub removed: BTreeMap<String, String>,
    /// Members whose dynamic section changes.
    pub edits: BTreeMap<String, FileEdit>,
    /// Each kept ELF member's DT_NEEDED (after renames) and where it resolves.
    pub resolved: BTreeMap<String, Vec<(String, Resolved)>>,
    /// The SDK packages providing each library linked, one set per library.
    pub linked: Vec<BTreeSet<String>>,
    pub problems: Vec<Problem>,
}

/// Decides the linking of `wheel`'s ELF files against `sdk`; `allowed` names libraries
/// that may resolve nowhere.
pub fn link(wheel: &InputWheel, sdk: &Sdk, allowed: &BTreeSet<String>) -> Linking {
    let mut linking = Linking::default();
    let mut renames: BTreeMap<String, String> = BTreeMap::new();
    for member in &wheel.members {
        let Some(elf) = &member.elf else { continue };
        let own_name = elf.info.soname.clone().unwrap_or_else(|| file_name(&member.name).to_owned());
        let copied = [Some(own_name.clone()), without_graft_hash(&own_name)]
            .into_iter()
            .flatten()
            .find(|name| !sdk.providers(name).is_empty());
        if let (Some(sdk_soname), elf_rpath::ElfKind::SharedLibrary) = (copied, elf.info.kind) {
            if own_name != sdk_soname {
                renames.insert(own_name, sdk_soname.clone());
            }
            linking.removed.insert(member.name.clone(), sdk_soname);
        }
    }
    let kept: Vec<&InputMember> =
        wheel.members.iter().filter(|member| !linking.removed.contains_key(&member.name)).collect();
    // Installed path → member, and the directories that still hold a member.
    let installed: BTreeMap<&str, &str> =
        kept.iter().filter_map(|member| Some((member.installed()?, member.name.as_str()))).collect();
    let holding: BTreeSet<&str> = installed.keys().map(|path| parent(path)).collect();
    let emptied: BTreeSet<String> = wheel
        .members
        .iter()
        .filter(|member| linking.removed.contains_key(&member.name))
        .filter_map(|member| member.installed().map(|path| parent(path).to_owned()))
        .filter(|dir| !holding.contains(dir.as_str()))
        .collect();
    let sdk_dirs = sdk.library_dirs();
    let context = Context { sdk, allowed, installed: &installed, emptied: &emptied, sdk_dirs: &sdk_dirs };
    let mut linked: BTreeSet<BTreeSet<String>> = BTreeSet::new();
    for member in kept {
        let Some(elf) = &member.elf else { continue };
        let needed: Vec<String> =
            elf.info.needed.iter().map(|name| renames.get(name).cloned().unwrap_or_else(|| name.clone())).collect();
        let replace_needed: Vec<(String, String)> = elf
            .info
            .needed
            .iter()
            .filter_map(|name| renames.get(name).map(|new| (name.clone(), new.clone())))
            .collect();
        let Place::SitePackages(path) = &member.place else {
            if needed.iter().any(|name| !sdk.providers(name).is_empty()) {
                let scheme = match &member.place {
                    Place::Elsewhere(scheme) => scheme.clone(),
                    Place::SitePackages(_) => unreachable!("matched above"),
                };
                linking
                    .problems
                    .push(Problem { member: member.name.clone(), kind: ProblemKind::OutsideSitePackages { scheme } });
            }
            continue;
        };
        let decision = context.decide(path, elf.info.search_path(), &needed);
        for (name, resolved) in &decision.resolved {
            match resolved {
                Resolved::Sdk(soname) => {
                    linked.insert(sdk.providers(soname).iter().map(|library| library.package.clone()).collect());
                }
                Resolved::Nowhere => linking.problems.push(Problem {
                    member: member.name.clone(),
                    kind: ProblemKind::Library {
                        name: name.clone(),
                        searched: decision.searched.clone(),
                        other_version: sdk
                            .other_version_of(name)
                            .map(|(soname, package)| format!("{soname} (ROCm {})", package.version)),
                    },
                }),
                _ => {}
            }
        }
        let changes = elf.info.runpath.is_some()
            || !replace_needed.is_empty()
            || elf.info.search_path().unwrap_or("") != decision.rpath;
        let needs_a_path = elf.info.search_path().is_some() || !decision.rpath.is_empty();
        if changes && needs_a_path {
            // An empty DT_RPATH would mean the current directory to ld.so: a file left
            // with no entry keeps its own directory, which loads nothing it did not before.
            let rpath = if decision.rpath.is_empty() { "$ORIGIN".to_owned() } else { decision.rpath };
            let request = DynamicRequest { rpath: Some(rpath), replace_needed };
            linking.edits.insert(member.name.clone(), FileEdit { request, removed_entries: decision.removed });
        } else if !replace_needed.is_empty() {
            let request = DynamicRequest { rpath: None, replace_needed };
            linking.edits.insert(member.name.clone(), FileEdit { request, removed_entries: Vec::new() });
        }
        linking.resolved.insert(member.name.clone(), decision.resolved);
    }
    linking.linked = linked.into_iter().collect();
    linking.problems.sort();
    linking
}

/// What one file's search path and needed libraries come to.
struct Decision {
    rpath: String,
    removed: Vec<(String, &'static str)>,
    resolved: Vec<(String, Resolved)>,
    /// The wheel directories its own entries search, for messages.
    searched: Vec<String>,
}

/// What becomes of one search path entry.
enum Entry {
    /// Kept: the wheel's own (with the directory it names in site-packages, when inside).
    Own(Option<String>),
    /// A directory of the SDK: searched anew where the needed libraries put it.
    Sdk,
    Removed(&'static str),
}

struct Context<'a> {
    sdk: &'a Sdk,
    allowed: &'a BTreeSet<String>,
    installed: &'a BTreeMap<&'a str, &'a str>,
    emptied: &'a BTreeSet<String>,
    sdk_dirs: &'a BTreeSet<&'a str>,
}

impl Context<'_> {
    fn judge(&self, origin: &str, entry: &str) -> Entry {
        if entry.is_empty() {
            return Entry::Removed("an empty entry searches the current directory");
        }
        if entry.starts_with('/') {
            return Entry::Removed("absolute: a directory of the build machine, or of no machine");
        }
        let Some(rest) = origin_relative(entry) else {
            return Entry::Removed("not relative to $ORIGIN: it searches the current directory");
        };
        match join(origin, rest) {
            Some(dir) if self.sdk_dirs.contains(dir.as_str()) => Entry::Sdk,
            Some(dir) if self.emptied.contains(&dir) => Entry::Removed("held only the bundled SDK copies"),
            dir => Entry::Own(dir),
        }
    }

    fn decide(&self, path: &str, search_path: Option<&str>, needed: &[String]) -> Decision {
        let origin = parent(path);
        let mut kept: Vec<String> = Vec::new();
        let mut own_dirs: Vec<String> = Vec::new();
        let mut removed = Vec::new();
        for entry in search_path.into_iter().flat_map(|path| path.split(':')) {
            match self.judge(origin, entry) {
                Entry::Own(dir) => {
                    own_dirs.extend(dir);
                    if !kept.iter().any(|kept| kept == entry) {
                        kept.push(entry.to_owned());
                    }
                }
                // Written again below, where the needed libraries put it.
                Entry::Sdk => {}
                Entry::Removed(reason) => removed.push((entry.to_owned(), reason)),
            }
        }
        let mut resolved = Vec::new();
        for name in needed {
            let found = if !self.sdk.providers(name).is_empty() {
                for library in self.sdk.providers(name) {
                    let entry = origin_entry(origin, &library.dir);
                    if !kept.contains(&entry) {
                        kept.push(entry);
                    }
                }
                Resolved::Sdk(name.clone())
            } else if let Some(member) =
                own_dirs.iter().find_map(|dir| self.installed.get(join_name(dir, name).as_str()))
            {
                Resolved::Wheel((*member).to_owned())
            } else if is_system_library(name) {
                Resolved::System
            } else if self.allowed.contains(name) {
                Resolved::Allowed
            } else {
                Resolved::Nowhere
            };
            resolved.push((name.clone(), found));
        }
        Decision { rpath: kept.join(":"), removed, resolved, searched: own_dirs }
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The directory of a site-packages path (`""` for a top-level file).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn join_name(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// The rest of an `$ORIGIN`-relative entry (`$ORIGIN/../lib` → `../lib`).
fn origin_relative(entry: &str) -> Option<&str> {
    let rest = entry.strip_prefix("$ORIGIN").or_else(|| entry.strip_prefix("${ORIGIN}"))?;
    if rest.is_empty() {
        return Some("");
    }
    rest.strip_prefix('/')
}

/// `origin` joined with `rest` lexically, inside site-packages; `None` when it leaves it.
fn join(origin: &str, rest: &str) -> Option<String> {
    let mut parts: Vec<&str> = origin.split('/').filter(|part| !part.is_empty()).collect();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name),
        }
    }
    Some(parts.join("/"))
}

/// The entry that finds `dir` (site-packages relative) from files in `origin`: up to
/// site-packages, then down, as the SDK's own entries are written (SPEC §2).
fn origin_entry(origin: &str, dir: &str) -> String {
    let depth = origin.split('/').filter(|part| !part.is_empty()).count();
    let mut entry = "$ORIGIN".to_owned();
    for _ in 0..depth {
        entry.push_str("/..");
    }
    entry.push('/');
    entry.push_str(dir);
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_go_up_to_site_packages_then_down() {
        assert_eq!(origin_entry("", "_rocm_sdk_core/lib"), "$ORIGIN/_rocm_sdk_core/lib");
        assert_eq!(origin_entry("ext/sub", "_rocm_sdk_core/lib"), "$ORIGIN/../../_rocm_sdk_core/lib");
    }

    #[test]
    fn origin_entries_resolve_inside_site_packages() {
        assert_eq!(origin_relative("$ORIGIN/../ext.libs"), Some("../ext.libs"));
        assert_eq!(origin_relative("${ORIGIN}"), Some(""));
        assert_eq!(origin_relative("$ORIGINAL"), None);
        assert_eq!(join("ext", "../ext.libs").as_deref(), Some("ext.libs"));
        assert_eq!(join("", "ext.libs").as_deref(), Some("ext.libs"));
        assert_eq!(join("", ".."), None);
    }
}
