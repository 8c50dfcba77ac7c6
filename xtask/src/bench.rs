//! `cargo xtask bench`: packages a synthetic TheRock-shaped build (or a real artifacts
//! directory, `--artifact-dir`) in a child process (the real CLI, this very binary re-run
//! as `package`) and reports wall time, CPU, peak RSS, peak extra disk, bytes in and out,
//! our time as a multiple of the compression floors (libdeflate's, and zlib-rs's), and
//! `dist/` against what stock zlib at level 6 makes of the same payload. Then reruns
//! `package` into the same destination after a few changes, which copies what did not
//! change from the wheels there (SPEC §8). Optionally runs the reference packager on the
//! same tree. Then the repair row: a wheel built on the SDK linked to it by `repair`, and
//! by `auditwheel repair --exclude` beside it (`repair`, SPEC §10). Then the split rows
//! (SPEC §12): a fat wheel split by `split`, and a fat build packaged fat and with
//! `--split-device`.
//!
//! Owns: orchestrating runs, caching generated trees under `bench/` of cargo's target directory, `--json`. Does
//! not own: generating the tree (`example_artifacts::write_synthetic`), the table (`render`).

mod alternate;
mod floor;
mod measure;
mod output_floor;
mod render;
mod repair;
mod rerun;
mod split;
mod split_device;
mod zlib;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::Context;
use example_artifacts::{SyntheticOptions, SyntheticSummary};

use crate::Output;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// A real artifacts directory to package instead of a synthetic build (e.g. ROCm
    /// libraries laid out as TheRock artifacts). It is only read: the reruns that change
    /// files are skipped, and --size and --sizes do not apply.
    #[arg(long, value_name = "DIR")]
    pub artifact_dir: Option<PathBuf>,
    /// Payload size of the synthetic build (e.g. 2GiB, 512MiB, 16MiB).
    #[arg(long, default_value = "2GiB", value_parser = parse_size)]
    pub size: u64,
    /// Run at this many sizes: 1 (--size) or 3 (--size/4, --size/2, --size).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=3))]
    pub sizes: u32,
    /// A TheRock checkout: also run its build_tools/build_python_packages.py on the tree.
    #[arg(long, value_name = "DIR")]
    pub reference: Option<PathBuf>,
    /// Compress the devel tarball with xz (passed on to `package`).
    #[arg(long, default_value = "false", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub devel_tarball_compression: bool,
    /// Deflate level of wheel members (passed on to `package`, and used by the floor).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub wheel_compression_level: u32,
    /// xz preset of the devel tarball (passed on to `package`, and used by the output floor).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub devel_tarball_xz_preset: u32,
    /// Keep the packages (each run's --dest-dir) written by the runs.
    #[arg(long)]
    pub keep: bool,
    /// Then measure the libdeflate floor and a cold run N more times, one after the
    /// other, and report the median of each pair's ratio: steadier on a shared machine,
    /// where one run and one floor may each be slowed by neighbours.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub alternate: u32,
    /// Skip the reruns into the cold run's destination (nothing changed, a library
    /// rewritten, a file added and one removed).
    #[arg(long)]
    pub no_reruns: bool,
    /// Skip the repair row (a wheel of three quarters of --size, holding one large
    /// library, linked to the SDK by `repair` and by `auditwheel repair --exclude`).
    #[arg(long)]
    pub no_repair: bool,
    /// Skip the split row (a fat wheel of a real fat library split by `split`) and the
    /// split-device row (a fat build with that library packaged fat and with
    /// `--split-device`).
    #[arg(long)]
    pub no_split: bool,
    /// The fat library of the split row [default: Debian's librocsparse.so.0, fetched
    /// once with `apt-get download librocsparse0`].
    #[arg(long, value_name = "FILE")]
    pub split_library: Option<PathBuf>,
    /// Print the results as JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Where generated trees are cached and runs write [default: `bench` in cargo's target
    /// directory, as `cargo metadata` reports it]
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
}

/// Everything one `bench` invocation measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchReport {
    /// `release` or `dev` (of this binary, so of the measured `package` child too).
    pub profile: &'static str,
    pub threads: usize,
    pub devel_tarball_compression: bool,
    pub wheel_compression_level: u32,
    pub runs: Vec<SizeRun>,
    /// The repair row, unless `--no-repair`.
    pub repair: Option<repair::RepairRun>,
    /// The split row, unless `--no-split`.
    pub split: Option<split::SplitRun>,
    /// The split-device row, unless `--no-split`.
    pub split_device: Option<split_device::SplitDeviceRun>,
}

/// One size: the tree, our run, the floor and, if asked, the reference.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SizeRun {
    pub requested_bytes: u64,
    pub input: SyntheticSummary,
    /// Seconds spent generating the tree, `None` when it came from the cache.
    pub generation_seconds: Option<f64>,
    /// Load averages (1, 5, 15 min) just before our run: the machine may be shared.
    pub load_average: [f64; 3],
    pub package: measure::ProcessCost,
    pub dist_bytes: u64,
    /// Peak extra disk minus the dist: what the run used transiently beyond its output.
    pub transient_disk_bytes: i64,
    /// Each input file deflated once by libdeflate at our level, in 4 MiB chunks: the floor.
    pub libdeflate_floor: floor::Floor,
    /// Our wall time divided by the libdeflate floor's.
    pub libdeflate_ratio: f64,
    /// Each input file deflated once by zlib-rs (about zlib-ng), the earlier floor.
    pub floor: floor::Floor,
    /// Our wall time divided by the zlib-rs floor's.
    pub floor_ratio: f64,
    /// Each input file as one stream of stock zlib at level 6 (the reference's encoder).
    pub zlib6: floor::Floor,
    /// Our `dist/` bytes divided by zlib 6's bytes of the payload: at most 1 is the goal.
    pub dist_to_zlib6: f64,
    /// What the outputs carry, each with its own codec, repeats included.
    pub output_floor: floor::Floor,
    /// Our wall time divided by the output floor's: the overhead we own.
    pub output_floor_ratio: f64,
    /// Our user + system CPU divided by the libdeflate floor's: steadier on a busy machine.
    pub cpu_ratio: f64,
    /// Our wall time divided by the libdeflate floor's CPU spread over every thread: the
    /// floor's wall time on an idle machine, since its chunks keep every core busy. On a
    /// shared machine the floor's own wall time varies with the load; this does not.
    pub ideal_floor_ratio: f64,
    pub seconds_per_gib: f64,
    /// User + system CPU per GiB of input: flat across sizes even when the machine is busy.
    pub cpu_seconds_per_gib: f64,
    pub input_mib_per_second: f64,
    /// The cold run, then reruns into its destination after each change.
    pub reruns: Vec<rerun::Rerun>,
    /// With `--alternate N`: N more floors and cold runs, one after the other.
    pub alternation: Option<alternate::Alternation>,
    pub reference: Option<ReferenceRun>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ReferenceRun {
    pub cost: measure::ProcessCost,
    pub dist_bytes: u64,
    /// Reference wall time divided by ours.
    pub ratio_to_ours: f64,
}

pub(crate) const GIB: f64 = (1u64 << 30) as f64;
pub(crate) const MIB: f64 = (1u64 << 20) as f64;
/// Bump when the generator's output changes, so cached trees are regenerated.
const GENERATOR_VERSION: u32 = 2;

pub fn run(args: BenchArgs, output: Output) -> anyhow::Result<ExitCode> {
    // Checked before minutes of generating and packaging, not after.
    if let Some(checkout) = &args.reference {
        reference_script(checkout)?;
    }
    let work_dir = match &args.work_dir {
        Some(dir) => dir.clone(),
        None => crate::target_dir::target_dir()?.join("bench"),
    };
    fs_err::create_dir_all(&work_dir)?;
    let work_dir = fs_err::canonicalize(&work_dir)?;
    let sizes: Vec<u64> = match args.sizes {
        1 => vec![args.size],
        2 => vec![args.size / 2, args.size],
        _ => vec![args.size / 4, args.size / 2, args.size],
    };
    let mut report = BenchReport {
        profile: if cfg!(debug_assertions) { "dev" } else { "release" },
        threads: rayon::current_num_threads(),
        devel_tarball_compression: args.devel_tarball_compression,
        wheel_compression_level: args.wheel_compression_level,
        runs: Vec::new(),
        repair: None,
        split: None,
        split_device: None,
    };
    let trees = match &args.artifact_dir {
        Some(dir) => vec![real_tree(dir)?],
        None => sizes.into_iter().map(|size| synthetic_tree(&work_dir, size, output)).collect::<anyhow::Result<_>>()?,
    };
    for tree in trees {
        let run = bench_tree(&args, &work_dir, tree, output)?;
        if !output.quiet && !args.json {
            eprintln!("{}", render::render_run(&run));
        }
        report.runs.push(run);
    }
    if !args.no_repair {
        let library_bytes = args.size / 4 * 3;
        report.repair =
            Some(repair::bench_repair(&work_dir, library_bytes, args.wheel_compression_level, output, args.json)?);
    }
    if !args.no_split {
        let split = split::bench_split(&work_dir, args.split_library.as_deref(), output, args.json)?;
        report.split_device = Some(split_device::bench_split_device(&work_dir, &split.library, output, args.json)?);
        report.split = Some(split);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).context("serialising the bench report")?);
    } else {
        print!("{}", render::render(&report));
    }
    let all_ok = report.runs.iter().all(|run| run.package.success)
        && report.repair.as_ref().is_none_or(|repair| repair.repair.success)
        && report.split.as_ref().is_none_or(|split| split.split.success)
        && report.split_device.as_ref().is_none_or(|run| run.fat.success && run.split.success);
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A tree to package: its artifacts directory and what it holds.
struct Tree {
    artifacts: PathBuf,
    input: SyntheticSummary,
    /// Seconds spent generating it; `None` when cached or real.
    generation_seconds: Option<f64>,
    requested_bytes: u64,
    /// Generated by the bench (so the reruns may change its files and put them back).
    synthetic: bool,
}

fn bench_tree(args: &BenchArgs, work_dir: &Path, tree: Tree, output: Output) -> anyhow::Result<SizeRun> {
    let Tree { artifacts, input, generation_seconds, requested_bytes: size, synthetic } = tree;
    let run_dir = work_dir.join(match synthetic {
        true => format!("run-{}", size_label(size)),
        false => "run-artifact-dir".to_owned(),
    });
    if run_dir.exists() {
        fs_err::remove_dir_all(&run_dir)?;
    }
    fs_err::create_dir_all(&run_dir)?;

    // The floor first: it also brings the tree into the page cache, so neither side of
    // the ratio pays for cold reads.
    if !output.quiet && !args.json {
        eprintln!("bench: floors over {} ...", render::human_bytes(input.payload_bytes));
    }
    let level = args.wheel_compression_level;
    let libdeflate_floor = floor::measure_floor(&artifacts, floor::Codec::Libdeflate { level })?;
    let floor = floor::measure_floor(&artifacts, floor::Codec::ZlibRs { level })?;
    let zlib6 = floor::measure_floor(&artifacts, floor::Codec::Zlib { level: 6 })?;
    let plan_json = run_dir.join("plan.json");
    let mut plan_command = package_command(args, &artifacts, &run_dir);
    plan_command.arg("--plan").arg("--json").arg(&plan_json);
    let plan_output = plan_command.output().context("running `package --plan`")?;
    anyhow::ensure!(
        plan_output.status.success(),
        "package --plan failed:\n{}",
        String::from_utf8_lossy(&plan_output.stderr)
    );
    let payload = output_floor::read_output_payload(&plan_json, &run_dir, args.devel_tarball_compression)?;
    if !output.quiet && !args.json {
        eprintln!("bench: output floor over {} files ...", payload.deflated.len());
    }
    let output_floor =
        output_floor::measure_output_floor(&payload, args.wheel_compression_level, args.devel_tarball_xz_preset)?;

    if !output.quiet && !args.json {
        eprintln!("bench: packaging {} ...", render::human_bytes(input.payload_bytes));
    }
    // Archives land in `{dest-dir}/dist/`, ours and the reference's alike (SPEC §2).
    let dest = run_dir.join("packages");
    let dist = dest.join(packager::config::DIST_DIR);
    let mut command = package_command(args, &artifacts, &run_dir);
    command.arg("--dest-dir").arg(&dest).arg("--json").arg(run_dir.join("report.json"));
    let load_average = measure::load_average();
    let package = measure::measure(command, &run_dir, &run_dir.join("package.log"))?;
    if let Some(error) = &package.error {
        eprintln!("bench: package failed:\n{error}");
    }
    let dist_bytes = measure::tree_bytes(&dist);
    let reruns = match args.no_reruns || !package.success {
        true => Vec::new(),
        false => {
            if !output.quiet && !args.json {
                eprintln!("bench: reruns into the same destination ...");
            }
            // The cold run's `--dest-dir`, so each rerun finds the wheels in its `dist/`.
            let command = |report: &Path| {
                let mut command = package_command(args, &artifacts, &run_dir);
                command.arg("--dest-dir").arg(&dest).arg("--json").arg(report);
                command
            };
            let cold_report = run_dir.join("report.json");
            rerun::measure_reruns(&artifacts, &run_dir, &package, &cold_report, &command, synthetic)?
        }
    };

    if args.alternate > 0 && package.success && !output.quiet && !args.json {
        eprintln!("bench: the floor and a cold run, {} times in turn ...", args.alternate);
    }
    let alternation = match package.success {
        true => {
            let command = |dest: &Path| {
                let mut command = package_command(args, &artifacts, &run_dir);
                command.arg("--dest-dir").arg(dest);
                command
            };
            alternate::alternate(args.alternate, &artifacts, level, &run_dir, &command)?
        }
        false => None,
    };

    let reference = match &args.reference {
        Some(checkout) => Some(run_reference(checkout, &artifacts, &run_dir, package.wall_seconds)?),
        None => None,
    };
    if !args.keep {
        fs_err::remove_dir_all(&dest)?;
        if run_dir.join(REFERENCE_DEST).exists() {
            fs_err::remove_dir_all(run_dir.join(REFERENCE_DEST))?;
        }
    }
    let gib = input.payload_bytes as f64 / GIB;
    Ok(SizeRun {
        requested_bytes: size,
        input,
        generation_seconds,
        load_average,
        transient_disk_bytes: package.peak_extra_disk_bytes as i64 - dist_bytes as i64,
        libdeflate_ratio: package.wall_seconds / libdeflate_floor.wall_seconds.max(1e-9),
        floor_ratio: package.wall_seconds / floor.wall_seconds.max(1e-9),
        dist_to_zlib6: dist_bytes as f64 / zlib6.compressed_bytes.max(1) as f64,
        output_floor_ratio: package.wall_seconds / output_floor.wall_seconds.max(1e-9),
        output_floor,
        cpu_ratio: package.cpu_seconds() / libdeflate_floor.cpu_seconds.max(1e-9),
        ideal_floor_ratio: package.wall_seconds * libdeflate_floor.threads as f64
            / libdeflate_floor.cpu_seconds.max(1e-9),
        seconds_per_gib: package.wall_seconds / gib.max(1e-12),
        cpu_seconds_per_gib: package.cpu_seconds() / gib.max(1e-12),
        input_mib_per_second: (gib * 1024.0) / package.wall_seconds.max(1e-9),
        dist_bytes,
        package,
        libdeflate_floor,
        floor,
        zlib6,
        reruns,
        alternation,
        reference,
    })
}

/// `package` as the bench runs it: this very binary, outside any TheRock checkout (so
/// nothing of the caller's tree is picked up), with the bench's compression settings.
fn package_command(args: &BenchArgs, artifacts: &Path, run_dir: &Path) -> Command {
    // current_exe only fails on exotic platforms; `Command` then reports the spawn error.
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("xtask"));
    let mut command = Command::new(exe);
    command
        .arg("--quiet")
        .arg("package")
        .arg("--artifact-dir")
        .arg(artifacts)
        .arg("--version")
        .arg("7.12.0.dev0")
        .arg("--wheel-compression-level")
        .arg(args.wheel_compression_level.to_string())
        .arg("--devel-tarball-compression")
        .arg(args.devel_tarball_compression.to_string())
        .arg("--devel-tarball-xz-preset")
        .arg(args.devel_tarball_xz_preset.to_string())
        .current_dir(run_dir);
    command
}

/// The cached tree for `size`, generated when missing: `{work}/synthetic-{size}-v{N}/`
/// with `artifacts/` and `summary.json` (written last, so an interrupted generation is redone).
fn synthetic_tree(work_dir: &Path, size: u64, output: Output) -> anyhow::Result<Tree> {
    let tree = work_dir.join(format!("synthetic-{}-v{GENERATOR_VERSION}", size_label(size)));
    let summary_path = tree.join("summary.json");
    let made = |input, generation_seconds| Tree {
        artifacts: tree.join("artifacts"),
        input,
        generation_seconds,
        requested_bytes: size,
        synthetic: true,
    };
    if let Ok(text) = std::fs::read_to_string(&summary_path) {
        if let Ok(summary) = serde_json::from_str::<SyntheticSummary>(&text) {
            return Ok(made(summary, None));
        }
    }
    if tree.exists() {
        fs_err::remove_dir_all(&tree)?;
    }
    if !output.quiet {
        eprintln!("bench: generating a {} synthetic build in {} ...", render::human_bytes(size), tree.display());
    }
    let started = Instant::now();
    let options = SyntheticOptions { payload_bytes: size, seed: 0x5EED_0000 + size };
    let summary = example_artifacts::write_synthetic(&tree.join("artifacts"), &options)
        .with_context(|| format!("generating the synthetic build in {}", tree.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    let text = serde_json::to_string_pretty(&summary).context("serialising the summary")?;
    fs_err::write(&summary_path, text)?;
    Ok(made(summary, Some(seconds)))
}

/// Files at least this large count as large libraries in a real tree's summary.
const LARGE_FILE_BYTES: u64 = 64 << 20;

/// A real artifacts directory: what it holds, read without changing anything.
fn real_tree(dir: &Path) -> anyhow::Result<Tree> {
    anyhow::ensure!(
        dir.is_dir(),
        "--artifact-dir {}: not a directory; pass an artifacts directory (one folder per artifact)",
        dir.display()
    );
    let artifacts = fs_err::canonicalize(dir)?;
    let files = floor::regular_files(&artifacts)?;
    let input = SyntheticSummary {
        n_files: files.len() as u64,
        payload_bytes: files.iter().map(|(_, len)| len).sum(),
        n_symlinks: count_symlinks(&artifacts)?,
        n_large_libraries: files.iter().filter(|(_, len)| *len >= LARGE_FILE_BYTES).count() as u64,
        largest_file_bytes: files.iter().map(|(_, len)| *len).max().unwrap_or(0),
    };
    Ok(Tree { artifacts, requested_bytes: input.payload_bytes, input, generation_seconds: None, synthetic: false })
}

fn count_symlinks(dir: &Path) -> anyhow::Result<u64> {
    let mut count = 0;
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            count += 1;
        } else if kind.is_dir() {
            count += count_symlinks(&entry.path())?;
        }
    }
    Ok(count)
}

/// The reference packager of a TheRock checkout.
fn reference_script(checkout: &Path) -> anyhow::Result<PathBuf> {
    let script = checkout.join("build_tools/build_python_packages.py");
    anyhow::ensure!(
        script.is_file(),
        "--reference {}: not a TheRock checkout ({} is missing); pass the root of a TheRock clone",
        checkout.display(),
        script.display()
    );
    Ok(script)
}

/// The reference packager's `--dest-dir` inside a run directory.
const REFERENCE_DEST: &str = "reference-packages";

/// Runs TheRock's `build_python_packages.py` on the same artifacts.
fn run_reference(checkout: &Path, artifacts: &Path, run_dir: &Path, our_seconds: f64) -> anyhow::Result<ReferenceRun> {
    let script = reference_script(checkout)?;
    let dest = run_dir.join(REFERENCE_DEST);
    let mut command = Command::new("python3");
    command.arg(&script).arg("--artifact-dir").arg(artifacts).arg("--dest-dir").arg(&dest).current_dir(checkout);
    let cost = measure::measure(command, run_dir, &run_dir.join("reference.log"))?;
    if let Some(error) = &cost.error {
        eprintln!("bench: the reference packager failed:\n{error}");
    }
    // Only `dist/` is output: the reference leaves its staging trees beside it in `dest`,
    // which count in its peak disk instead.
    let dist_bytes = measure::tree_bytes(&dest.join(packager::config::DIST_DIR));
    let ratio_to_ours = cost.wall_seconds / our_seconds.max(1e-9);
    Ok(ReferenceRun { cost, dist_bytes, ratio_to_ours })
}

/// `2GiB`, `512MiB`, `16M`, `1.5G` or a plain number of bytes.
fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| format!("not a size: {text:?} (try 2GiB or 512MiB)"))?;
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1u64,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("unknown unit in {text:?} (use KiB, MiB or GiB)")),
    };
    Ok((number * factor as f64) as u64)
}

fn size_label(bytes: u64) -> String {
    format!("{}MiB", bytes >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("2 parsecs").is_err());
    }
}
