//! `cargo xtask example`: writes the bundled example build (real ELF files) to a directory.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use packager::example::{write_example, ExampleOptions};

use crate::Output;

#[derive(clap::Args)]
pub struct ExampleArgs {
    /// Directory to write the artifacts into; must be missing or empty.
    #[arg(long)]
    out: PathBuf,
    /// Imitate a kpack-split build (generic libraries plus per-target device artifacts)
    /// instead of a legacy two-family build.
    #[arg(long)]
    kpack_split: bool,
}

pub fn run(args: ExampleArgs, output: Output) -> anyhow::Result<ExitCode> {
    let options = ExampleOptions { kpack_split: args.kpack_split };
    let summary = write_example(&args.out, &options)
        .with_context(|| format!("writing the example build to {}", args.out.display()))?;
    for warning in &summary.warnings {
        eprintln!("warning: {warning}");
    }
    if !output.quiet {
        let mode = if args.kpack_split { "kpack-split" } else { "legacy" };
        println!(
            "wrote {} artifacts ({mode}) to {}: {} ELF files, {} AMDGPU code objects, {} other files, {} symlinks",
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
