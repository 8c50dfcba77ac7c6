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
    /// Imitate a Windows build instead: PE DLLs and executables cross-compiled with
    /// MinGW-w64 (`x86_64-w64-mingw32-gcc`), one family.
    #[arg(long)]
    windows: bool,
}

pub fn run(args: ExampleArgs, output: Output) -> anyhow::Result<ExitCode> {
    let options = ExampleOptions { kpack_split: args.kpack_split };
    let summary = if args.windows { write_windows_example(&args.out) } else { write_example(&args.out, &options) }
        .with_context(|| format!("writing the example build to {}", args.out.display()))?;
    for warning in &summary.warnings {
        eprintln!("warning: {warning}");
    }
    if !output.quiet {
        let mode = match (args.windows, args.kpack_split) {
            (true, _) => "Windows",
            (false, true) => "kpack-split",
            (false, false) => "legacy",
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
