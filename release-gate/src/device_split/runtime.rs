//! The HIP runtime of a split set (CONTRACT §12 "What a split SDK needs"): when wheels of
//! the set hold host binaries whose device code was split out (`HIPK` wrappers) and the
//! set ships the HIP runtime (`libamdhip64`), that runtime must carry rocm-kpack's loader,
//! or every kernel of those binaries fails to load (`hipErrorInvalidImage`).
//! `--allow-runtime-without-kpack`, for a runtime that will be replaced before use, makes
//! the violation a warning. A set without the runtime (a third-party split set) is not
//! judged here: its runtime comes from elsewhere.
//!
//! Owns: the rule's scope and words. Does not own: what shows a loader (`elf-audit`),
//! reading the files (`member_check`).

use elf_audit::{is_hip_runtime, kpack_loader, HIP_RUNTIME, KPACK_LIBRARY, KPACK_LOADER_SYMBOLS};

use crate::archive::Archive;
use crate::report::{Check, Findings};

/// The flag that makes a runtime without the loader a warning, as the packager names it.
pub const ALLOW_FLAG: &str = "--allow-runtime-without-kpack";

/// Judges every HIP runtime of the set against `hipk_wrappers` split wrappers.
pub(super) fn check_runtime(archives: &[Archive], hipk_wrappers: usize, allow: bool, findings: &mut Findings) {
    for archive in archives {
        for member in &archive.elf_files {
            let file_name = member.path.rsplit('/').next().unwrap_or(&member.path);
            let named = is_hip_runtime(file_name) || member.elf.soname.as_deref().is_some_and(is_hip_runtime);
            if !named {
                continue;
            }
            if kpack_loader(&member.symbols, &member.elf.needed).is_some() {
                continue;
            }
            if !member.symbols.is_complete() {
                let message = format!(
                    "the HIP runtime's dynamic symbols could not all be read, so whether it carries the kpack loader \
                     that the {hipk_wrappers} HIPK wrappers of this set need is not checked"
                );
                findings.warning(&archive.file, Some(&member.path), Check::KpackRuntime, message);
                continue;
            }
            let message = format!(
                "the HIP runtime {HIP_RUNTIME} cannot load device code from kpack archives: it neither defines nor \
                 imports {} and needs no {KPACK_LIBRARY}*, so the {hipk_wrappers} HIPK wrappers of this set fail with \
                 hipErrorInvalidImage; ship a runtime built with ROCM_KPACK_ENABLED, or pass {ALLOW_FLAG} if this one \
                 is replaced before use",
                KPACK_LOADER_SYMBOLS.map(|name| format!("`{name}`")).join(", ")
            );
            if allow {
                let message = format!("{message} (allowed by {ALLOW_FLAG})");
                findings.warning(&archive.file, Some(&member.path), Check::KpackRuntime, message);
            } else {
                findings.violation(&archive.file, Some(&member.path), Check::KpackRuntime, message);
            }
        }
    }
}
