//! The bundled example build: a small TheRock-shaped artifacts directory of real ELF files
//! compiled from C sources kept in the repo (`example/c/`), laid out to exercise every rule
//! of SPEC §2 (see `layout.rs` for which file stands for which rule).
//!
//! Owns: the example's content and writing it. Does not own: reading it back (`catalog`)
//! or deciding where its files go (`plan`). Needs a host C compiler; AMDGPU code objects
//! also need `llvm-mc` and `ld.lld`, and are skipped with a warning without them.

mod layout;
mod spec;
mod synthetic;
mod table;
mod toolchain;
mod windows;

use std::io;
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

pub use layout::{DEEP_DEVICE_FILE, DEVICE_TARGET_IDS, KPACK_HOLE_END, LEGACY_FAMILIES, OWNER_SHARED_TARGET_IDS};
pub use synthetic::{write_synthetic, SyntheticOptions, SyntheticSummary};
pub use windows::MINGW_GCC;

/// Which flavour of TheRock build to imitate.
#[derive(Clone, Debug)]
pub struct ExampleOptions {
    /// Kpack-split (generic libraries plus per-target device artifacts) instead of legacy
    /// (libraries artifacts per family).
    pub kpack_split: bool,
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
            Self::NoCompiler { .. } | Self::Layout { .. } => None,
        }
    }

    /// What the user can do next. The CLI prints it as `hint: ...`.
    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::OutputNotEmpty { .. } => Some("choose a new directory, or remove this one first"),
            Self::NoCompiler { .. } => Some("install a C compiler (apt-get install gcc) or set CC"),
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
