//! The symbol check of a repair (SPEC §11): every undefined dynamic symbol of a file that
//! binds to an SDK library, by its version node where it has one (the node names the
//! library), else by name among the libraries the file loads, must be defined there, or
//! the wheel is refused naming the file, the symbol and the library. It turns an
//! import-time `undefined symbol: …, version hip_4.2` into a packaging-time error. The rule
//! itself is ld.so's, in `elf-audit` ([`unresolved_imports`]); this module gives it the
//! libraries each file loads, as the linking resolved them.
//!
//! Owns: the scope of each file and which findings are the SDK's. Does not own: the rule,
//! resolving DT_NEEDED (`links`).

use std::collections::BTreeSet;

use elf_audit::{is_versioned_system_library, unresolved_imports, Provider, Unresolved};

use super::error::{Problem, ProblemKind};
use super::input::InputWheel;
use super::links::{Linking, Resolved};
use super::sdk::Sdk;

/// The problems of every kept ELF file of `wheel` that loads an SDK library.
pub fn check_symbols(wheel: &InputWheel, sdk: &Sdk, linking: &Linking) -> Vec<Problem> {
    let mut problems = BTreeSet::new();
    for member in &wheel.members {
        let (Some(elf), Some(resolved)) = (&member.elf, linking.resolved.get(&member.name)) else { continue };
        let loads_sdk = resolved.iter().any(|(_, found)| matches!(found, Resolved::Sdk(_)));
        if !loads_sdk || !elf.symbols.is_complete() {
            continue;
        }
        // A legacy set has one provider per family, installed one at a time: the file must
        // bind with each.
        let families = resolved
            .iter()
            .filter_map(|(_, found)| match found {
                Resolved::Sdk(soname) => Some(sdk.providers(soname).len()),
                _ => None,
            })
            .max()
            .unwrap_or(1);
        for family in 0..families {
            let scope = Scope { wheel, sdk, linking, family };
            let providers = scope.providers(resolved);
            for unresolved in unresolved_imports(&elf.symbols, &providers) {
                if let Some(kind) = scope.sdk_problem(unresolved, resolved) {
                    problems.insert(Problem { member: member.name.clone(), kind });
                }
            }
        }
    }
    problems.into_iter().collect()
}

/// The libraries one file loads, for one choice of family.
struct Scope<'a> {
    wheel: &'a InputWheel,
    sdk: &'a Sdk,
    linking: &'a Linking,
    family: usize,
}

impl<'a> Scope<'a> {
    /// The SDK library of `soname` in this scope's family.
    fn library(&self, soname: &str) -> Option<&'a super::sdk::SdkLibrary> {
        let providers = self.sdk.providers(soname);
        providers.get(self.family).or_else(|| providers.last())
    }

    /// Breadth first, as ld.so builds a library's scope: the file's own needed libraries,
    /// then theirs.
    fn providers(&self, resolved: &'a [(String, Resolved)]) -> Vec<(String, Provider<'a>)> {
        let mut queue: Vec<(String, Resolved)> = resolved.to_vec();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut providers = Vec::new();
        let mut next = 0;
        while let Some((name, found)) = queue.get(next).cloned() {
            next += 1;
            if !seen.insert(name.clone()) {
                continue;
            }
            let provider = match &found {
                Resolved::Sdk(soname) => match self.library(soname) {
                    Some(library) => {
                        queue.extend(library.needed.iter().map(|needed| (needed.clone(), self.resolve_name(needed))));
                        library.exports.as_ref().map_or(Provider::Unknown, Provider::Known)
                    }
                    None => Provider::Unknown,
                },
                Resolved::Wheel(member) => {
                    if let Some(theirs) = self.linking.resolved.get(member) {
                        queue.extend(theirs.iter().cloned());
                    }
                    let exports =
                        self.wheel.members.iter().find(|candidate| &candidate.name == member).and_then(|candidate| {
                            candidate
                                .elf
                                .as_ref()
                                .filter(|elf| elf.symbols.is_complete())
                                .map(|elf| &elf.symbols.exports)
                        });
                    exports.map_or(Provider::Unknown, Provider::Known)
                }
                Resolved::System if is_versioned_system_library(&name) => Provider::VersionedSystem,
                Resolved::System | Resolved::Allowed | Resolved::Nowhere => Provider::Unknown,
            };
            providers.push((name, provider));
        }
        providers
    }

    /// Where an SDK library's own DT_NEEDED resolves: the SDK itself or the system.
    fn resolve_name(&self, name: &str) -> Resolved {
        if !self.sdk.providers(name).is_empty() {
            Resolved::Sdk(name.to_owned())
        } else if elf_audit::is_system_library(name) {
            Resolved::System
        } else {
            Resolved::Nowhere
        }
    }

    /// The finding when `unresolved` is a symbol or version that binds to an SDK library.
    fn sdk_problem(&self, unresolved: Unresolved, resolved: &[(String, Resolved)]) -> Option<ProblemKind> {
        let provider_of = |library: &str| self.library(library).map(|found| self.sdk.describe(&found.package));
        match unresolved {
            Unresolved::Version { library, version, symbols } => {
                let provider = provider_of(&library)?;
                Some(ProblemKind::Version { library, version, symbols, provider })
            }
            Unresolved::Symbol { name, version: Some(need) } => {
                let provider = provider_of(&need.library)?;
                Some(ProblemKind::Symbol { name, version: Some(need.version), library: need.library, provider })
            }
            Unresolved::Symbol { name, version: None } => {
                let library = resolved.iter().find_map(|(_, found)| match found {
                    Resolved::Sdk(soname) => Some(soname.clone()),
                    _ => None,
                })?;
                let provider = provider_of(&library)?;
                Some(ProblemKind::Symbol { name, version: None, library, provider })
            }
        }
    }
}
