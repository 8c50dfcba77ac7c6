//! The plan stage's error: why the artifacts cannot be packaged as the flags ask (SPEC §2
//! validations), with the input stage's and the ELF reader's errors met while planning.
//!
//! Owns: `PlanError` and its hints, and the ELF editor's hints in a packaging run's words.
//! Does not own: the decisions that fail (the rest of `plan`).

use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;
use elf_rpath::{ElfError, Refusal};

use crate::input::CatalogError;

use super::variants::VariantsError;

/// Two targets of one device wheel that provide a path differently. Boxed in
/// [`PlanError::OwnerClash`]: it names five things, and every result of the stage would
/// carry its size.
#[derive(Debug)]
pub struct OwnerClash {
    pub owner: String,
    pub path: String,
    pub first: String,
    pub second: String,
    pub what: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("version {version:?} is not a valid PEP 440 version: {reason}")]
    BadVersion { version: String, reason: String },
    #[error("version suffix {suffix:?} cannot be part of a Python package name")]
    BadVersionSuffix { suffix: String },
    #[error("no profiler artifacts (rocprofiler-compute, rocprofiler-systems) found in {}", dir.display())]
    NoProfiler { dir: PathBuf },
    #[error("the build mixes Linux and Windows binaries: {} is ELF, {} is PE", elf.display(), pe.display())]
    MixedBuildOs { elf: PathBuf, pe: PathBuf },
    #[error(
        "requested GPU targets have no device artifacts: {} (targets with artifacts: {})",
        missing.join(", "),
        available.join(", ")
    )]
    MissingTargets { missing: Vec<String>, available: Vec<String> },
    #[error(
        "requested family {family:?} is not known (not in cmake/therock_amdgpu_targets.cmake and not a gfx target)"
    )]
    UnknownFamily { family: String },
    #[error("{path} would be shipped by both {first} and {second}")]
    DuplicateMember { path: String, first: String, second: String },
    /// Targets sharing an owner's device wheel (SPEC §2) must agree on every path they
    /// both provide; `first` and `second` are the artifacts.
    #[error(
        "the device wheel of {} merges several targets, but {} and {} both provide {} {}",
        .0.owner,
        .0.first,
        .0.second,
        .0.path,
        .0.what
    )]
    OwnerClash(Box<OwnerClash>),
    /// A file or directory name the run would write is longer than file systems allow: pip
    /// fails installing it with `File name too long` (SPEC §2, names).
    #[error(
        "{what} `{}` of {package} is {} bytes long; a file or directory name may be at most {bound} bytes",
        crate::escape::escape(name),
        name.len()
    )]
    NameTooLong { what: &'static str, name: String, package: String, bound: usize },
    #[error("{message}")]
    Invalid { message: String },
    /// The artifacts, read while planning.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// An ELF file of the artifacts, read or its RPATH edit planned.
    #[error(transparent)]
    Elf(#[from] ElfError),
    /// A Windows DLL or program whose layout a Windows loader refuses (SPEC §7): it is
    /// copied byte for byte, so it would fail on the user's machine, not here.
    #[error("malformed PE file {}: {reason}", path.display())]
    MalformedPe { path: PathBuf, reason: String },
    /// The devel tree, decided again from the artifacts as it is written, no longer reads
    /// as it did when it was planned (SPEC §5).
    #[error("{} changed while it was being packaged: {reason}", path.display())]
    Changed { path: PathBuf, reason: String },
    /// `--variants` on a build that cannot have them.
    #[error(transparent)]
    Variants(#[from] VariantsError),
    /// A split of the build's device code (SPEC §12) whose HIP runtime cannot load the
    /// archives it would make.
    #[error(
        "the HIP runtime {} cannot load device code from kpack archives: it neither defines nor imports {} and needs \
         no {}*, so every kernel of the split libraries would fail to load (hipErrorInvalidImage)",
        path.display(),
        elf_audit::KPACK_LOADER_SYMBOLS.map(|name| format!("`{name}`")).join(", "),
        elf_audit::KPACK_LIBRARY
    )]
    RuntimeWithoutKpack { path: PathBuf },
    /// The HIP runtime's dynamic tables could not be read whole, so the check above cannot
    /// tell.
    #[error("cannot tell whether the HIP runtime {} loads kpack archives: {reason}", path.display())]
    RuntimeUnreadable { path: PathBuf, reason: String },
    /// A build whose device code cannot be split per target (SPEC §12).
    #[error("cannot split this build's device code per target: {reason}")]
    FatSplit { reason: String },
    /// A fat library of the build whose device code does not read.
    #[error("device code of {}", path.display())]
    DeviceCode {
        path: PathBuf,
        #[source]
        source: device_code::DeviceCodeError,
    },
}

impl Diagnostic for PlanError {
    /// The file or directory the error is about, if it names one.
    fn path(&self) -> Option<&Path> {
        match self {
            PlanError::NoProfiler { dir } => Some(dir),
            PlanError::Catalog(error) => error.path(),
            PlanError::Elf(error) => error.path(),
            PlanError::Variants(error) => error.path(),
            PlanError::MalformedPe { path, .. }
            | PlanError::Changed { path, .. }
            | PlanError::RuntimeWithoutKpack { path }
            | PlanError::RuntimeUnreadable { path, .. }
            | PlanError::DeviceCode { path, .. } => Some(path),
            _ => None,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::BadVersion { .. } => Some("pass --version with a PEP 440 version such as 7.12.0.dev0"),
            Self::NameTooLong { .. } => Some(
                "shorten what forms the name: --version-suffix (it ends every platform directory), --version \
                 (it is in every .dist-info directory), or the artifact's file name",
            ),
            Self::BadVersionSuffix { .. } => {
                Some("pass a --version-suffix of ASCII letters, digits and `_` only (it ends directory and module names)")
            }
            Self::MixedBuildOs { .. } => Some(
                "package one platform's artifacts at a time: point --artifact-dir at a directory that holds only \
                 that build's artifacts",
            ),
            Self::NoProfiler { .. } => Some("build the rocprofiler-systems and rocprofiler-compute artifacts, or leave the profiler out with --only"),
            Self::MissingTargets { .. } => Some("fetch the device artifacts of every requested target, or narrow --linux-amdgpu-families"),
            Self::UnknownFamily { .. } => Some("use a family or target from cmake/therock_amdgpu_targets.cmake, e.g. gfx110X-all or gfx1100"),
            Self::DuplicateMember { .. } => Some("two artifacts feeding different wheels provide this path; each installed path must belong to one wheel, so remove it from one artifact"),
            Self::OwnerClash { .. } => Some(
                "targets that share a device wheel (the owner table, packager/python/common/target_owners.json) keep \
                 their payloads under target-specific names: rename the file in one artifact, or remove it from one \
                 if both should ship the same bytes; nothing was written",
            ),
            Self::RuntimeWithoutKpack { .. } | Self::RuntimeUnreadable { .. } => Some(
                "package a build whose HIP runtime is built with ROCM_KPACK_ENABLED (TheRock's core-kpack artifact, \
                 librocm_kpack), or pass --allow-runtime-without-kpack if this runtime is replaced before use",
            ),
            Self::FatSplit { .. } => Some(
                "package a fat build of one family (each family's build on its own), or package without \
                 --split-device",
            ),
            Self::DeviceCode { source, .. } => source.hint(),
            Self::Catalog(error) => error.hint(),
            Self::Elf(error) => elf_hint(error),
            Self::Variants(error) => error.hint(),
            Self::MalformedPe { .. } => Some(
                "the file is truncated or corrupt: rebuild the artifact or remove the file from it, \
                 and report the build if a fresh one has it too",
            ),
            Self::Changed { .. } => {
                Some("something modified the artifacts during packaging: rerun when the build has finished")
            }
            _ => None,
        }
    }
}

/// The ELF editor's hint, in a packaging run's words: the file came from an artifact, and a
/// file the editor may not touch is one the packager copies unchanged (SPEC §6).
fn elf_hint(error: &ElfError) -> Option<&'static str> {
    match error {
        ElfError::Malformed { .. } => Some(
            "the file is truncated or corrupt: rebuild the artifact or remove the file from it, \
             and report the build if a fresh one has it too",
        ),
        ElfError::Unsupported { refusal: Refusal::ForeignMachine | Refusal::NoSearchPath, .. } => Some(
            "only executables and shared libraries get a search path; the packager copies other ELF files \
             (GPU code objects, object files, static programs) unchanged",
        ),
        _ => error.hint(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CLI has no flag to leave a file out, so the hint must not suggest one.
    #[test]
    fn malformed_hint_names_something_the_user_can_do() {
        let error =
            PlanError::Elf(ElfError::Malformed { path: PathBuf::from("lib/libx.so"), reason: "truncated".into() });
        let hint = error.hint().unwrap_or_default();
        assert!(hint.contains("rebuild the artifact") && hint.contains("remove the file"), "{hint}");
        assert!(hint.contains("report the build"), "{hint}");
        assert!(!hint.contains("glob") && !hint.contains("exclude"), "{hint}");
    }
}
