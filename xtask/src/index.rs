//! `cargo xtask index DIST`: a PEP 503 simple index and a `--find-links` page for a built
//! `dist/` (the library's `packager::index` does the work).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::Output;

#[derive(clap::Args)]
pub struct IndexArgs {
    /// The dist/ directory to index (family subdirectories included).
    #[arg(value_name = "DIST")]
    pub dist: PathBuf,
    /// Also print what was indexed as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: IndexArgs, output: Output) -> anyhow::Result<ExitCode> {
    let index =
        packager::index::write_index(&args.dist).with_context(|| format!("indexing {}", args.dist.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&index).context("serialising the index")?);
    }
    if !output.quiet {
        for (project, files) in &index.projects {
            for file in files {
                eprintln!("{project:<34} {}", file.rel);
            }
        }
        let simple = args.dist.join("simple");
        let absolute = std::path::absolute(&simple).unwrap_or(simple);
        eprintln!(
            "indexed {} files of {} projects: {} and {}\n\n\
             pip install --no-cache-dir --index-url file://{} 'rocm[libraries,devel]'\n\
             pip install --no-cache-dir --no-index --find-links {} 'rocm[libraries,devel]'",
            index.n_files(),
            index.projects.len(),
            args.dist.join("simple/index.html").display(),
            args.dist.join("index.html").display(),
            absolute.display(),
            args.dist.join("index.html").display(),
        );
    }
    Ok(ExitCode::SUCCESS)
}
