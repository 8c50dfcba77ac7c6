//! `cargo xtask example`: writes the bundled example build (real ELF files) to a directory.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use example_artifacts::{write_example, write_windows_example, ExampleOptions};

use crate::Output;

#[derive(clap::Args)]
pub struct ExampleArgs {
    /// Directory to write the artifacts into; must be missing or empty.
    #[arg(long)]
    out: PathBuf,
    /// Imitate a kpack-split build (generic libraries plus per-target device artifacts)
    /// instead of a legacy two-family build.
    #[arg(long, conflicts_with = "windows")]
    kpack_split: bool,
    /// Imitate a fat legacy build of one family (gfx90X-dcgpu): rocBLAS, hipBLASLt and
    /// rocRAND carry real `.hip_fatbin` device code for gfx908, gfx90a:xnack- and
    /// gfx90a:xnack+, compiled by `clang++-15` (Debian clang-15, lld-15).
    #[arg(long, conflicts_with_all = ["windows", "kpack_split"])]
    fat: bool,
    /// Make the HIP runtime (`libamdhip64`) carry the kpack loader, as a runtime built with
    /// `ROCM_KPACK_ENABLED` does: `kpack_load_code_object` among its exports.
    #[arg(long, conflicts_with = "windows")]
    kpack_runtime: bool,
    /// Imitate a Windows build instead: PE DLLs and executables cross-compiled with
    /// MinGW-w64 (`x86_64-w64-mingw32-gcc`), one family.
    #[arg(long)]
    windows: bool,
}

pub fn run(args: ExampleArgs, output: Output) -> anyhow::Result<ExitCode> {
    let options = ExampleOptions { kpack_split: args.kpack_split, fat: args.fat, kpack_runtime: args.kpack_runtime };
    let summary = if args.windows { write_windows_example(&args.out) } else { write_example(&args.out, &options) }
        .with_context(|| format!("writing the example build to {}", args.out.display()))?;
    for warning in &summary.warnings {
        eprintln!("warning: {warning}");
    }
    if !output.quiet {
        let mode = match (args.windows, args.kpack_split, args.fat) {
            (true, _, _) => "Windows",
            (false, true, _) => "kpack-split",
            (false, false, true) => "fat legacy",
            (false, false, false) => "legacy",
        };
        let binaries = if args.windows { "PE files" } else { "ELF files" };
        println!(
            "wrote {} artifacts ({mode}) to {}: {} {binaries}, {} AMDGPU code objects, {} other files, {} symlinks",
            summary.artifacts.len(),
            args.out.display(),
            summary.n_elf,
            summary.n_code_objects,
            summary.n_files,
            summary.n_symlinks,
        );
    }
    Ok(ExitCode::SUCCESS)
}
