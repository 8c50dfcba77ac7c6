//! Whether the build's HIP runtime can load kpack archives (SPEC §12, CONTRACT §12 "What a
//! split SDK needs"), asked before the build's device code is split out of its libraries:
//! a runtime built with `ROCM_KPACK_ENABLED` carries rocm-kpack's loader (the rule is
//! `elf-audit`'s, which the gate asks of the built wheels too). Without it every split
//! library fails to load its kernels, so the split is refused unless the caller says the
//! runtime will be replaced (`--allow-runtime-without-kpack`).
//!
//! Owns: finding the runtime among the artifacts and the verdict. Does not own: what shows
//! a loader (`elf-audit`), splitting (`split`).

use std::path::{Path, PathBuf};

use elf_audit::{is_hip_runtime, kpack_loader, parse_elf, read_dynamic_symbols, ElfWindow};

use super::PlanError;
use crate::input::catalog::{Catalog, EntryKind, Selection};

/// What the check found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum KpackRuntime {
    /// The runtime carries the loader; `evidence` says how (`defines \`kpack_load_code_object\``).
    Loads { path: PathBuf, evidence: String },
    /// The runtime lacks it, and the caller allowed that.
    Allowed { path: PathBuf },
    /// The build has no HIP runtime (a libraries-only build): nothing to check.
    NoRuntime,
}

/// Checks every HIP runtime file (`lib/libamdhip64.so*`, a real file) of the build.
/// `allow`: a runtime without the loader is [`KpackRuntime::Allowed`] instead of refused.
pub fn check_kpack_runtime(catalog: &Catalog, allow: bool) -> Result<KpackRuntime, PlanError> {
    let namespace = catalog.select(&Selection { artifacts: &|_| true, include: Vec::new(), exclude: Vec::new() })?;
    let runtimes: Vec<&Path> = namespace
        .all
        .iter()
        .filter(|(rel, entry)| {
            let text = rel.as_str();
            matches!(entry.kind, EntryKind::File { .. })
                && text.strip_prefix("lib/").is_some_and(|name| !name.contains('/') && is_hip_runtime(name))
        })
        .map(|(_, entry)| &*entry.source)
        .collect();
    let mut verdict = KpackRuntime::NoRuntime;
    for path in runtimes {
        verdict = match loader_of(path)? {
            Some(evidence) => KpackRuntime::Loads { path: path.to_owned(), evidence },
            None if allow => KpackRuntime::Allowed { path: path.to_owned() },
            None => return Err(PlanError::RuntimeWithoutKpack { path: path.to_owned() }),
        };
    }
    Ok(verdict)
}

/// How the runtime at `path` shows the loader, or `None`.
fn loader_of(path: &Path) -> Result<Option<String>, PlanError> {
    let unreadable = |reason: String| PlanError::RuntimeUnreadable { path: path.to_owned(), reason };
    let window = ElfWindow::read_file(path)
        .map_err(|error| unreadable(error.to_string()))?
        .ok_or_else(|| unreadable("not an ELF file".to_owned()))?;
    let elf = parse_elf(&window).map_err(unreadable)?;
    let symbols = read_dynamic_symbols(&window, &elf);
    if let Some(loader) = kpack_loader(&symbols, &elf.needed) {
        return Ok(Some(loader.to_string()));
    }
    if !symbols.is_complete() {
        let tables: Vec<String> = symbols.unchecked.iter().chain(&symbols.problems).cloned().collect();
        return Err(unreadable(format!("its dynamic symbols are not all readable ({})", tables.join("; "))));
    }
    Ok(None)
}
