//! `cargo xtask bench`: packages a synthetic TheRock-shaped build in a child process (the
//! real CLI, this very binary re-run as `package`) and reports wall time, CPU, peak RSS,
//! peak extra disk, bytes in and out, and our time as a multiple of the compression floor.
//! Then reruns `package` into the same destination after a few changes, which copies what
//! did not change from the wheels there (SPEC §8). Optionally runs the reference packager
//! on the same tree.
//!
//! Owns: orchestrating runs, caching generated trees under `target/bench/`, the table and
//! `--json`. Does not own: generating the tree (`example_artifacts::write_synthetic`).

mod floor;
mod measure;
mod output_floor;
mod rerun;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::Context;
use example_artifacts::{SyntheticOptions, SyntheticSummary};

use crate::Output;

#[derive(clap::Args)]
pub struct BenchArgs {
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
    /// Skip the reruns into the cold run's destination (nothing changed, a library
    /// rewritten, a file added and one removed).
    #[arg(long)]
    pub no_reruns: bool,
    /// Print the results as JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Where generated trees are cached and runs write [default: target/bench].
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
    /// Each input file deflated once.
    pub floor: floor::Floor,
    /// Our wall time divided by the floor's.
    pub floor_ratio: f64,
    /// What the outputs carry, each with its own codec, repeats included.
    pub output_floor: floor::Floor,
    /// Our wall time divided by the output floor's: the overhead we own.
    pub output_floor_ratio: f64,
    /// Our user + system CPU divided by the floor's: less sensitive to a busy machine.
    pub cpu_ratio: f64,
    /// Our wall time divided by the floor's CPU spread over every thread: the floor's wall
    /// time on an idle machine, since its chunks keep every core busy. On a shared machine
    /// the floor's own wall time varies with the load; this does not.
    pub ideal_floor_ratio: f64,
    pub seconds_per_gib: f64,
    /// User + system CPU per GiB of input: flat across sizes even when the machine is busy.
    pub cpu_seconds_per_gib: f64,
    pub input_mib_per_second: f64,
    /// The cold run, then reruns into its destination after each change.
    pub reruns: Vec<rerun::Rerun>,
    pub reference: Option<ReferenceRun>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ReferenceRun {
    pub cost: measure::ProcessCost,
    pub dist_bytes: u64,
    /// Reference wall time divided by ours.
    pub ratio_to_ours: f64,
}

const GIB: f64 = (1u64 << 30) as f64;
const MIB: f64 = (1u64 << 20) as f64;
/// Bump when the generator's output changes, so cached trees are regenerated.
const GENERATOR_VERSION: u32 = 1;

pub fn run(args: BenchArgs, output: Output) -> anyhow::Result<ExitCode> {
    // Checked before minutes of generating and packaging, not after.
    if let Some(checkout) = &args.reference {
        reference_script(checkout)?;
    }
    let work_dir = args.work_dir.clone().unwrap_or_else(|| crate::workspace_root().join("target/bench"));
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
    };
    for size in sizes {
        let run = bench_size(&args, &work_dir, size, output)?;
        if !output.quiet && !args.json {
            eprintln!("{}", render_run(&run));
        }
        report.runs.push(run);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).context("serialising the bench report")?);
    } else {
        print!("{}", render(&report));
    }
    let all_ok = report.runs.iter().all(|run| run.package.success);
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn bench_size(args: &BenchArgs, work_dir: &Path, size: u64, output: Output) -> anyhow::Result<SizeRun> {
    let (tree, input, generation_seconds) = synthetic_tree(work_dir, size, output)?;
    let artifacts = tree.join("artifacts");
    let run_dir = work_dir.join(format!("run-{}", size_label(size)));
    if run_dir.exists() {
        fs_err::remove_dir_all(&run_dir)?;
    }
    fs_err::create_dir_all(&run_dir)?;

    // The floor first: it also brings the tree into the page cache, so neither side of
    // the ratio pays for cold reads.
    if !output.quiet && !args.json {
        eprintln!("bench: floor over {} ...", human_bytes(input.payload_bytes));
    }
    let floor = floor::measure_floor(&artifacts, args.wheel_compression_level)?;
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
        eprintln!("bench: packaging {} ...", human_bytes(input.payload_bytes));
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
            rerun::measure_reruns(&artifacts, &run_dir, &package, &run_dir.join("report.json"), &command)?
        }
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
        floor_ratio: package.wall_seconds / floor.wall_seconds.max(1e-9),
        output_floor_ratio: package.wall_seconds / output_floor.wall_seconds.max(1e-9),
        output_floor,
        cpu_ratio: package.cpu_seconds() / floor.cpu_seconds.max(1e-9),
        ideal_floor_ratio: package.wall_seconds * floor.threads as f64 / floor.cpu_seconds.max(1e-9),
        seconds_per_gib: package.wall_seconds / gib.max(1e-12),
        cpu_seconds_per_gib: package.cpu_seconds() / gib.max(1e-12),
        input_mib_per_second: (gib * 1024.0) / package.wall_seconds.max(1e-9),
        dist_bytes,
        package,
        floor,
        reruns,
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
fn synthetic_tree(
    work_dir: &Path,
    size: u64,
    output: Output,
) -> anyhow::Result<(PathBuf, SyntheticSummary, Option<f64>)> {
    let tree = work_dir.join(format!("synthetic-{}-v{GENERATOR_VERSION}", size_label(size)));
    let summary_path = tree.join("summary.json");
    if let Ok(text) = std::fs::read_to_string(&summary_path) {
        if let Ok(summary) = serde_json::from_str::<SyntheticSummary>(&text) {
            return Ok((tree, summary, None));
        }
    }
    if tree.exists() {
        fs_err::remove_dir_all(&tree)?;
    }
    if !output.quiet {
        eprintln!("bench: generating a {} synthetic build in {} ...", human_bytes(size), tree.display());
    }
    let started = Instant::now();
    let options = SyntheticOptions { payload_bytes: size, seed: 0x5EED_0000 + size };
    let summary = example_artifacts::write_synthetic(&tree.join("artifacts"), &options)
        .with_context(|| format!("generating the synthetic build in {}", tree.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    let text = serde_json::to_string_pretty(&summary).context("serialising the summary")?;
    fs_err::write(&summary_path, text)?;
    Ok((tree, summary, Some(seconds)))
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

fn human_bytes(bytes: u64) -> String {
    if bytes as f64 >= GIB {
        format!("{:.2} GiB", bytes as f64 / GIB)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB)
    }
}

fn human_signed(bytes: i64) -> String {
    if bytes < 0 {
        format!("-{}", human_bytes(bytes.unsigned_abs()))
    } else {
        human_bytes(bytes as u64)
    }
}

/// One size as a few lines (printed on stderr as each size finishes).
fn render_run(run: &SizeRun) -> String {
    let mut out = String::new();
    let cost = &run.package;
    let _ = writeln!(
        out,
        "bench: {} in {} files ({} symlinks, largest {}), load {:.2}",
        human_bytes(run.input.payload_bytes),
        run.input.n_files,
        run.input.n_symlinks,
        human_bytes(run.input.largest_file_bytes),
        run.load_average[0]
    );
    let _ = writeln!(
        out,
        "  package: {:.2} s wall, {:.2} s CPU ({:.2} user + {:.2} sys), peak RSS {}, peak extra disk {}, dist {}",
        cost.wall_seconds,
        cost.cpu_seconds(),
        cost.user_seconds,
        cost.sys_seconds,
        human_bytes(cost.peak_rss_bytes),
        human_bytes(cost.peak_extra_disk_bytes),
        human_bytes(run.dist_bytes)
    );
    let _ = writeln!(
        out,
        "  floor: {:.2} s wall, {:.2} s CPU on {} threads ({} → {}), ratio {:.2} (CPU ratio {:.2}, to the idle-machine floor {:.2})",
        run.floor.wall_seconds,
        run.floor.cpu_seconds,
        run.floor.threads,
        human_bytes(run.floor.input_bytes),
        human_bytes(run.floor.compressed_bytes),
        run.floor_ratio,
        run.cpu_ratio,
        run.ideal_floor_ratio
    );
    let _ = writeln!(
        out,
        "  output floor: {:.2} s wall, {:.2} s CPU ({} → {}), ratio {:.2}",
        run.output_floor.wall_seconds,
        run.output_floor.cpu_seconds,
        human_bytes(run.output_floor.input_bytes),
        human_bytes(run.output_floor.compressed_bytes),
        run.output_floor_ratio
    );
    out
}

/// The summary table on stdout.
fn render(report: &BenchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "profile {}, {} threads, wheel deflate level {}, devel tarball {}",
        report.profile,
        report.threads,
        report.wheel_compression_level,
        if report.devel_tarball_compression { "xz" } else { "uncompressed" }
    );
    let _ = writeln!(
        out,
        "{:>10} {:>8} {:>8} {:>9} {:>10} {:>11} {:>10} {:>8} {:>9} {:>6} {:>9} {:>10} {:>8} {:>9} {:>6} {:>9} {:>7} {:>6} {:>6}",
        "input",
        "wall s",
        "CPU s",
        "peak RSS",
        "peak disk",
        "transient",
        "dist",
        "floor s",
        "floor CPU",
        "ratio",
        "CPU ratio",
        "idle ratio",
        "out fl s",
        "out ratio",
        "s/GiB",
        "CPU s/GiB",
        "MiB/s",
        "load",
        "ref x"
    );
    for run in &report.runs {
        let reference = run.reference.as_ref().map_or("-".to_owned(), |r| format!("{:.2}", r.ratio_to_ours));
        let status = if run.package.success { "" } else { "  FAILED" };
        let _ = writeln!(
            out,
            "{:>10} {:>8.2} {:>8.2} {:>9} {:>10} {:>11} {:>10} {:>8.2} {:>9.2} {:>6.2} {:>9.2} {:>10.2} {:>8.2} {:>9.2} {:>6.2} {:>9.2} {:>7.1} {:>6.2} {:>6}{status}",
            human_bytes(run.input.payload_bytes),
            run.package.wall_seconds,
            run.package.cpu_seconds(),
            human_bytes(run.package.peak_rss_bytes),
            human_bytes(run.package.peak_extra_disk_bytes),
            human_signed(run.transient_disk_bytes),
            human_bytes(run.dist_bytes),
            run.floor.wall_seconds,
            run.floor.cpu_seconds,
            run.floor_ratio,
            run.cpu_ratio,
            run.ideal_floor_ratio,
            run.output_floor.wall_seconds,
            run.output_floor_ratio,
            run.seconds_per_gib,
            run.cpu_seconds_per_gib,
            run.input_mib_per_second,
            run.load_average[0],
            reference,
        );
    }
    for run in &report.runs {
        out.push_str(&render_reruns(run));
    }
    let _ = writeln!(out, "\ncolumns:");
    for (column, meaning) in LEGEND {
        let _ = writeln!(out, "  {column:>10}  {meaning}");
    }
    out
}

/// The reruns of one size: wall time, CPU, and how many bytes were copied or compressed.
fn render_reruns(run: &SizeRun) -> String {
    let mut out = String::new();
    if run.reruns.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\nreruns into the same destination, {}:", human_bytes(run.input.payload_bytes));
    let _ = writeln!(out, "{:<42} {:>8} {:>8} {:>10} {:>11}", "scenario", "wall s", "CPU s", "reused", "compressed");
    for rerun in &run.reruns {
        let _ = writeln!(
            out,
            "{:<42} {:>8.2} {:>8.2} {:>10} {:>11}",
            rerun.scenario,
            rerun.cost.wall_seconds,
            rerun.cost.cpu_seconds(),
            human_bytes(rerun.reused_bytes),
            human_bytes(rerun.compressed_bytes)
        );
    }
    out
}

/// What each column of the table means, printed under it: the headers are abbreviations.
const LEGEND: &[(&str, &str)] = &[
    ("input", "payload bytes of the synthetic build"),
    ("wall s", "wall time of the `package` run"),
    ("CPU s", "its user + system CPU time"),
    ("peak RSS", "its peak resident memory"),
    ("peak disk", "most disk space it used at once (other writers on the machine add to it)"),
    ("transient", "peak disk minus the dist: space used beyond the output"),
    ("dist", "bytes of the packages written"),
    ("floor s", "wall time to deflate each input file once on all cores (no packaging logic)"),
    ("floor CPU", "CPU time of that floor"),
    ("ratio", "wall s / floor s: 1.0 would be as fast as compression alone"),
    ("CPU ratio", "CPU s / floor CPU: steadier than `ratio` on a busy machine"),
    ("idle ratio", "wall s / (floor CPU spread over every thread): `ratio` as on an idle machine"),
    ("out fl s", "output floor: wall time to compress what the outputs carry, each with its codec"),
    ("out ratio", "wall s / out fl s: the overhead that is ours"),
    ("s/GiB", "wall seconds per GiB of input"),
    ("CPU s/GiB", "CPU seconds per GiB of input"),
    ("MiB/s", "input MiB packaged per wall second"),
    ("load", "1-minute load average before the run (the machine may be shared)"),
    ("ref x", "with --reference: the reference packager's wall time / ours"),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every header of the table has a line in the legend under it, in the same order.
    #[test]
    fn the_legend_explains_every_column() {
        let report = BenchReport {
            profile: "dev",
            threads: 2,
            devel_tarball_compression: false,
            wheel_compression_level: 6,
            runs: Vec::new(),
        };
        let text = render(&report);
        let header = text.lines().nth(1).expect("a header line");
        let mut rest = header;
        for (column, _) in LEGEND {
            let at = rest.find(column).unwrap_or_else(|| panic!("{column} is not in order in {header:?}"));
            rest = &rest[at + column.len()..];
        }
        assert!(rest.trim().is_empty(), "a column without a legend: {rest:?}");
        let legend: Vec<&str> = text.lines().skip_while(|line| *line != "columns:").skip(1).collect();
        assert_eq!(legend.len(), LEGEND.len(), "{text}");
    }

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
