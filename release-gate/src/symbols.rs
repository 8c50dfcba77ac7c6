//! The symbol closure (SPEC §11): in the simulated install, every undefined dynamic symbol
//! of every host ELF file must bind in the libraries it loads, its DT_NEEDED found through
//! its RPATH and theirs, breadth first as ld.so builds its scope. The SDK's files are held
//! to it as strictly as the wheels built on it: a `.post1` core put into a set is checked
//! against the libraries it serves, so an ABI break is a finding here rather than a
//! user's `undefined symbol` at import.
//!
//! The rule (a missing version node, a missing symbol; an unversioned import judged only
//! when every library the file loads is known) is `elf-audit`'s, read from each file's
//! own tables. Files whose tables lie outside what verify reads are not judged (their
//! `not checked` warning says so).
//!
//! Owns: the scope of each file and the findings' words. Does not own: resolving a path
//! (`closure`), reading symbols (`elf-audit`).

use std::collections::{BTreeMap, BTreeSet};

use elf_audit::{is_versioned_system_library, unresolved_imports, Provider, Unresolved};

use super::archive::Archive;
use super::closure::{resolve_needed, Install};
use super::member::ElfMember;
use super::report::{Check, Findings};

pub(crate) fn check_symbols(archives: &[Archive], install: &Install, findings: &mut Findings) {
    let mut by_path: BTreeMap<&str, &ElfMember> = BTreeMap::new();
    for archive in archives {
        for member in elf_members(archive) {
            by_path.insert(&member.path, member);
        }
    }
    for archive in archives {
        for member in elf_members(archive) {
            if member.symbols.imports.is_empty() || !member.symbols.is_complete() {
                continue;
            }
            let (providers, paths) = scope(install, &by_path, member);
            for unresolved in unresolved_imports(&member.symbols, &providers) {
                findings.violation(&archive.file, Some(&member.path), Check::Symbol, describe(&unresolved, &paths));
            }
        }
    }
}

fn elf_members(archive: &Archive) -> impl Iterator<Item = &ElfMember> {
    archive.elf_files.iter().chain(archive.devel.iter().flat_map(|tree| tree.elf_files.iter()))
}

/// The libraries `member` loads, in ld.so's order, and where each of them is.
fn scope<'a>(
    install: &Install,
    by_path: &BTreeMap<&str, &'a ElfMember>,
    member: &'a ElfMember,
) -> (Vec<(String, Provider<'a>)>, BTreeMap<String, String>) {
    let mut queue: Vec<(String, Option<String>)> =
        resolve_needed(install, member).into_iter().map(|(name, path)| (name.to_owned(), path)).collect();
    let mut seen = BTreeSet::new();
    let mut providers = Vec::new();
    let mut paths = BTreeMap::new();
    let mut next = 0;
    while let Some((name, path)) = queue.get(next).cloned() {
        next += 1;
        if !seen.insert(name.clone()) {
            continue;
        }
        let loaded = path.as_deref().and_then(|path| by_path.get(path).copied());
        let provider = match loaded {
            Some(library) => {
                queue.extend(resolve_needed(install, library).into_iter().map(|(name, path)| (name.to_owned(), path)));
                paths.insert(name.clone(), library.path.clone());
                if library.symbols.is_complete() {
                    Provider::Known(&library.symbols.exports)
                } else {
                    Provider::Unknown
                }
            }
            None if is_versioned_system_library(&name) => Provider::VersionedSystem,
            None => Provider::Unknown,
        };
        providers.push((name, provider));
    }
    (providers, paths)
}

fn describe(unresolved: &Unresolved, paths: &BTreeMap<String, String>) -> String {
    let at = |library: &str| paths.get(library).map_or_else(|| library.to_owned(), |path| format!("`{path}`"));
    match unresolved {
        Unresolved::Version { library, version, symbols } => {
            let wanted = if symbols.is_empty() { String::new() } else { format!(" (for {})", symbols.join(", ")) };
            format!("needs version {version} of {library}{wanted}, which {} does not define", at(library))
        }
        Unresolved::Symbol { name, version: Some(need) } => format!(
            "needs symbol {name}@{} of {}, which {} does not define",
            need.version,
            need.library,
            at(&need.library)
        ),
        Unresolved::Symbol { name, version: None } => {
            let loaded: Vec<&str> = paths.keys().map(String::as_str).collect();
            format!("needs symbol {name}, which none of the libraries it loads defines ({})", loaded.join(", "))
        }
    }
}
