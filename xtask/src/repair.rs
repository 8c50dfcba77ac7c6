//! `cargo xtask repair WHEEL... --against SDK`: the command line over `packager::repair`
//! (SPEC §11). Parses flags, reads `SOURCE_DATE_EPOCH`, prints one block per repaired
//! wheel (or `--json`). No rule lives here.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use packager::repair::{repair, RepairRequest};

use crate::progress::CliProgress;
use crate::Output;

#[derive(clap::Args)]
pub struct RepairArgs {
    /// Wheels built on the SDK (Linux; a Windows wheel is refused).
    #[arg(required = true, value_name = "WHEEL")]
    wheels: Vec<PathBuf>,
    /// The SDK to link against: a dist/ holding its wheels, or a site-packages they are
    /// installed in.
    #[arg(long, value_name = "SDK")]
    against: PathBuf,
    /// Repaired wheels go to DIR/dist/, as `package` writes its archives.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dest_dir: PathBuf,
    /// A needed library that may resolve nowhere (another package provides it at run
    /// time); repeat for more.
    #[arg(long, value_name = "NAME")]
    allow_missing: Vec<String>,
    /// Deflate level of the members coded again (0-9); unchanged members keep their bytes.
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=9))]
    wheel_compression_level: u32,
    /// Write the report as JSON to this file, or `-` for stdout.
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
}

pub fn run(args: RepairArgs, output: Output) -> anyhow::Result<ExitCode> {
    let request = RepairRequest {
        wheels: args.wheels.clone(),
        sdk: args.against.clone(),
        dest_dir: args.dest_dir.clone(),
        allow_missing: args.allow_missing.iter().cloned().collect::<BTreeSet<_>>(),
        build_time: crate::package::build_time()?,
        compression_level: args.wheel_compression_level,
    };
    let progress = CliProgress::new(output);
    let report =
        repair(&request, &progress).with_context(|| format!("repairing against {}", args.against.display()))?;
    progress.finish();
    match &args.json {
        Some(path) => crate::package::write_json(path, &report)?,
        None if !output.quiet => print!("{}", report.render(output.verbose > 0)),
        None => {}
    }
    Ok(ExitCode::SUCCESS)
}
