//! The bundled example build: a small TheRock-shaped artifacts directory of real ELF files
//! compiled from C sources kept in the repo (`example/c/`), laid out to exercise every rule
//! of SPEC §2 (see `layout.rs` for which file stands for which rule).
//!
//! Owns: the example's content and writing it. Does not own: reading it back (`catalog`)
//! or deciding where its files go (`plan`). Needs a host C compiler; AMDGPU code objects
//! also need `llvm-mc` and `ld.lld`, and are skipped with a warning without them; the fat
//! mode's GPU libraries need `clang++-15` (with `ld.lld`), and fail naming it without.

mod layout;
mod spec;
mod synthetic;
mod table;
mod toolchain;
mod windows;

use std::io;
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

pub use layout::{
    DEEP_DEVICE_FILE, DEVICE_TARGET_IDS, FAT_FAMILY, FAT_LIBRARIES, FAT_TARGET_IDS, KPACK_HOLE_END,
    KPACK_LOADER_SYMBOL, LEGACY_FAMILIES, OWNER_SHARED_TARGET_IDS,
};
pub use synthetic::{write_synthetic, SyntheticOptions, SyntheticSummary};
pub use windows::MINGW_GCC;

/// Which flavour of TheRock build to imitate.
#[derive(Clone, Debug, Default)]
pub struct ExampleOptions {
    /// Kpack-split (generic libraries plus per-target device artifacts) instead of legacy
    /// (libraries artifacts per family).
    pub kpack_split: bool,
    /// Fat: a legacy build of one family ([`FAT_FAMILY`]) whose GPU libraries carry real
    /// `.hip_fatbin` sections for [`FAT_TARGET_IDS`], compiled by `clang++-15`; the HIP
    /// runtime exports the registration functions they call. Not with `kpack_split`.
    pub fat: bool,
    /// The HIP runtime carries the kpack loader (exports [`KPACK_LOADER_SYMBOL`]), as a
    /// runtime built with `ROCM_KPACK_ENABLED` does, so a split of the build can load.
    pub kpack_runtime: bool,
}

/// What [`write_example`] wrote.
#[derive(Clone, Debug, Default)]
pub struct ExampleSummary {
    /// Artifact directory names, sorted.
    pub artifacts: Vec<String>,
    /// Text files (scripts, headers, data), not counting `artifact_manifest.txt`.
    pub n_files: usize,
    pub n_symlinks: usize,
    /// Host ELF files compiled with the C compiler.
    pub n_elf: usize,
    /// AMDGPU code objects assembled with `llvm-mc` and linked with `ld.lld`.
    pub n_code_objects: usize,
    /// Things left out, e.g. code objects when LLVM tools are missing.
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExampleError {
    #[error("output directory is not empty: {}", path.display())]
    OutputNotEmpty { path: PathBuf },
    #[error("no C compiler found: {message}")]
    NoCompiler { message: String },
    #[error("`{tool}` (Debian package clang-15) is not on PATH: the fat example compiles its GPU libraries with it")]
    NoHipCompiler { tool: &'static str },
    #[error("building {} failed: {command}\n{stderr}", path.display())]
    Tool { path: PathBuf, command: String, stderr: String },
    #[error("example layout is inconsistent: {message}")]
    Layout { message: String },
    #[error("cannot write {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Diagnostic for ExampleError {
    fn path(&self) -> Option<&Path> {
        match self {
            Self::OutputNotEmpty { path } | Self::Tool { path, .. } | Self::Io { path, .. } => Some(path),
            Self::NoCompiler { .. } | Self::NoHipCompiler { .. } | Self::Layout { .. } => None,
        }
    }

    /// What the user can do next. The CLI prints it as `hint: ...`.
    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::OutputNotEmpty { .. } => Some("choose a new directory, or remove this one first"),
            Self::NoCompiler { .. } => Some("install a C compiler (apt-get install gcc) or set CC"),
            Self::NoHipCompiler { .. } => Some("apt-get install clang-15 lld-15, or leave out --fat"),
            _ => None,
        }
    }
}

/// Writes the example artifacts directory into `out`, which must be missing or empty.
/// The content is deterministic: the same options give the same bytes on one machine.
pub fn write_example(out: &Path, options: &ExampleOptions) -> Result<ExampleSummary, ExampleError> {
    // The compiler runs in a scratch directory, so a relative `out` would name the wrong place.
    let out = &std::path::absolute(out).map_err(|source| ExampleError::Io { path: out.to_owned(), source })?;
    match std::fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(ExampleError::OutputNotEmpty { path: out.to_owned() });
            }
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(source) => return Err(ExampleError::Io { path: out.to_owned(), source }),
    }
    if options.fat && options.kpack_split {
        return Err(ExampleError::Layout { message: "a build is either fat or kpack-split, not both".to_owned() });
    }
    std::fs::create_dir_all(out).map_err(|source| ExampleError::Io { path: out.to_owned(), source })?;
    // The compiler runs in a scratch directory, so a relative `out` would land there.
    let out = std::path::absolute(out).map_err(|source| ExampleError::Io { path: out.to_owned(), source })?;
    let artifacts = layout::artifacts(options);
    spec::materialize(&out, &artifacts)
}

/// Writes the bundled example as a Windows build (PE files from MinGW-w64) under `out`,
/// which must be missing or empty (SPEC §7).
pub fn write_windows_example(out: &Path) -> Result<ExampleSummary, ExampleError> {
    let out = std::path::absolute(out).map_err(|source| ExampleError::Io { path: out.to_owned(), source })?;
    if std::fs::read_dir(&out).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(ExampleError::OutputNotEmpty { path: out });
    }
    windows::write_windows_example(&out)
}
