//! `cargo xtask split WHEEL...`: the command line over `packager::split` (SPEC §12). Parses
//! flags, reads `SOURCE_DATE_EPOCH`, prints the report (`SplitReport::render`, or `--json`).
//! No rule lives here.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use packager::escape::escape_path;
use packager::split::{split, SplitRequest};

use crate::progress::CliProgress;
use crate::Output;

#[derive(clap::Args)]
pub struct SplitArgs {
    /// Fat wheels to split (Linux; a Windows wheel is refused).
    #[arg(required = true, value_name = "WHEEL")]
    wheels: Vec<PathBuf>,
    /// Device wheels are named PREFIX-<target> (default: the host's name and `-device`,
    /// e.g. `torch-device-gfx942`).
    #[arg(long, value_name = "PREFIX")]
    device_prefix: Option<String>,
    /// A requirement every target's device wheel gets, `@GFXARCH@` replaced by its target
    /// (`'rocm-sdk-device-@GFXARCH@ == 7.10.0'`); repeat for more.
    #[arg(long, value_name = "REQ")]
    device_requires: Vec<String>,
    /// The host and device wheels go to DIR/dist/, as `package` writes its archives.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dest_dir: PathBuf,
    /// zstd level of the code objects in the archives (rocm-kpack's default is 3).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=19))]
    zstd_level: i32,
    /// Deflate level of the members coded again (0-9); unchanged members keep their bytes.
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=9))]
    wheel_compression_level: u32,
    /// Write the report as JSON to this file, or `-` for stdout.
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
}

pub fn run(args: SplitArgs, output: Output) -> anyhow::Result<ExitCode> {
    let request = SplitRequest {
        wheels: args.wheels.clone(),
        device_prefix: args.device_prefix.clone(),
        device_requires: args.device_requires.clone(),
        dest_dir: args.dest_dir.clone(),
        build_time: crate::package::build_time()?,
        compression_level: args.wheel_compression_level,
        zstd_level: args.zstd_level,
    };
    let progress = CliProgress::new(output);
    let what = match args.wheels.as_slice() {
        [one] => escape_path(one),
        several => format!("{} wheels", several.len()),
    };
    let report = split(&request, &progress).with_context(|| format!("splitting {what}"))?;
    progress.finish();
    match &args.json {
        Some(path) => crate::package::write_json(path, &report)?,
        None if !output.quiet => print!("{}", report.render()),
        None => {}
    }
    Ok(ExitCode::SUCCESS)
}
