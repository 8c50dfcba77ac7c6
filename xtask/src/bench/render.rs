//! The bench's table and the lines printed as each size finishes: what each figure is
//! called, in which order, and what it means (the legend under the table).
//!
//! Owns: presentation. Does not own: the figures (`bench`, `floor`, `rerun`).

use std::fmt::Write as _;

use super::{BenchReport, SizeRun, GIB, MIB};

pub fn human_bytes(bytes: u64) -> String {
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
pub fn render_run(run: &SizeRun) -> String {
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
        "  dist against {}: {} → {}, dist/zlib6 {:.4} ({:.2} s wall, {:.2} s CPU)",
        run.zlib6.codec,
        human_bytes(run.zlib6.input_bytes),
        human_bytes(run.zlib6.compressed_bytes),
        run.dist_to_zlib6,
        run.zlib6.wall_seconds,
        run.zlib6.cpu_seconds
    );
    let _ = writeln!(
        out,
        "  floor ({}): {:.2} s wall, {:.2} s CPU on {} threads ({} → {}), ratio {:.2} (CPU ratio {:.2}, to the idle-machine floor {:.2})",
        run.libdeflate_floor.codec,
        run.libdeflate_floor.wall_seconds,
        run.libdeflate_floor.cpu_seconds,
        run.libdeflate_floor.threads,
        human_bytes(run.libdeflate_floor.input_bytes),
        human_bytes(run.libdeflate_floor.compressed_bytes),
        run.libdeflate_ratio,
        run.cpu_ratio,
        run.ideal_floor_ratio
    );
    let _ = writeln!(
        out,
        "  earlier floor ({}): {:.2} s wall, {:.2} s CPU ({} → {}), ratio {:.2}",
        run.floor.codec,
        run.floor.wall_seconds,
        run.floor.cpu_seconds,
        human_bytes(run.floor.input_bytes),
        human_bytes(run.floor.compressed_bytes),
        run.floor_ratio
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
    if let Some(alternation) = &run.alternation {
        let ratios: Vec<String> = alternation.pairs.iter().map(|pair| format!("{:.2}", pair.ratio)).collect();
        let cpu_ratios: Vec<String> = alternation.pairs.iter().map(|pair| format!("{:.2}", pair.cpu_ratio)).collect();
        let _ = writeln!(
            out,
            "  floor and cold run in turn, {} times: median ratio {:.2} ({}), median CPU ratio {:.2} ({})",
            alternation.pairs.len(),
            alternation.median_ratio,
            ratios.join(", "),
            alternation.median_cpu_ratio,
            cpu_ratios.join(", ")
        );
    }
    out
}

/// The summary table on stdout.
pub fn render(report: &BenchReport) -> String {
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
        "{:>10} {:>8} {:>8} {:>9} {:>10} {:>11} {:>10} {:>10} {:>8} {:>8} {:>8} {:>9} {:>10} {:>9} {:>9} {:>8} {:>9} {:>6} {:>9} {:>7} {:>6} {:>6}",
        "input",
        "wall s",
        "CPU s",
        "peak RSS",
        "peak disk",
        "transient",
        "dist",
        "zlib6",
        "dist/z6",
        "floor s",
        "ratio",
        "CPU ratio",
        "idle ratio",
        "zrs fl s",
        "zrs ratio",
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
            "{:>10} {:>8.2} {:>8.2} {:>9} {:>10} {:>11} {:>10} {:>10} {:>8.4} {:>8.2} {:>8.2} {:>9.2} {:>10.2} {:>9.2} {:>9.2} {:>8.2} {:>9.2} {:>6.2} {:>9.2} {:>7.1} {:>6.2} {:>6}{status}",
            human_bytes(run.input.payload_bytes),
            run.package.wall_seconds,
            run.package.cpu_seconds(),
            human_bytes(run.package.peak_rss_bytes),
            human_bytes(run.package.peak_extra_disk_bytes),
            human_signed(run.transient_disk_bytes),
            human_bytes(run.dist_bytes),
            human_bytes(run.zlib6.compressed_bytes),
            run.dist_to_zlib6,
            run.libdeflate_floor.wall_seconds,
            run.libdeflate_ratio,
            run.cpu_ratio,
            run.ideal_floor_ratio,
            run.floor.wall_seconds,
            run.floor_ratio,
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
    if let Some(repair) = &report.repair {
        out.push_str(&render_repair(repair));
    }
    if let Some(split) = &report.split {
        out.push_str(&render_split(split));
    }
    if let Some(run) = &report.split_device {
        out.push_str(&render_split_device(run));
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
    let header = ["scenario", "wall s", "CPU s", "reused", "unread", "compressed"];
    let _ = writeln!(
        out,
        "{:<42} {:>8} {:>8} {:>10} {:>10} {:>11}",
        header[0], header[1], header[2], header[3], header[4], header[5]
    );
    for rerun in &run.reruns {
        let _ = writeln!(
            out,
            "{:<42} {:>8.2} {:>8.2} {:>10} {:>10} {:>11}",
            rerun.scenario,
            rerun.cost.wall_seconds,
            rerun.cost.cpu_seconds(),
            human_bytes(rerun.reused_bytes),
            human_bytes(rerun.unread_bytes),
            human_bytes(rerun.compressed_bytes)
        );
    }
    let _ = writeln!(out, "  unread: reused bytes whose files the identity cache knew, so not read again");
    out
}

/// The split row: ours against inflate + zstd.
fn render_split(run: &super::split::SplitRun) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nsplit of a {} wheel holding {} ({} code objects, {}):",
        human_bytes(run.wheel_bytes),
        run.library.display(),
        run.code_objects,
        human_bytes(run.code_object_bytes)
    );
    let _ = writeln!(
        out,
        "{:<26} {:>8} {:>8} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "", "wall s", "CPU s", "peak RSS", "peak disk", "ratio", "host", "devices"
    );
    let _ = writeln!(
        out,
        "{:<26} {:>8.2} {:>8.2} {:>9} {:>10} {:>10.2} {:>10} {:>10}{}",
        "cargo xtask split",
        run.split.wall_seconds,
        run.split.cpu_seconds(),
        human_bytes(run.split.peak_rss_bytes),
        human_bytes(run.split.peak_extra_disk_bytes),
        run.ratio,
        human_bytes(run.host_bytes),
        human_bytes(run.device_bytes),
        if run.split.success { "" } else { "  FAILED" }
    );
    let _ = writeln!(
        out,
        "{:<26} {:>8.2} {:>8.2} {:>9} {:>10} {:>10}",
        "inflate + zstd floor",
        run.inflate_seconds + run.zstd_seconds,
        run.zstd_cpu_seconds,
        "",
        "",
        format!("{:.2}+{:.2}", run.inflate_seconds, run.zstd_seconds)
    );
    out
}

/// The split-device row: the fat build packaged split per target against packaged fat.
fn render_split_device(run: &super::split_device::SplitDeviceRun) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\npackage of a fat build of {} (the fat example with it), fat and --split-device:",
        human_bytes(run.payload_bytes)
    );
    let _ = writeln!(
        out,
        "{:<26} {:>8} {:>8} {:>9} {:>10} {:>10} {:>10}",
        "", "wall s", "CPU s", "peak RSS", "peak disk", "dist", "ratio"
    );
    for (name, cost, dist, ratio) in [
        ("package (fat)", &run.fat, run.fat_dist_bytes, String::new()),
        ("package --split-device", &run.split, run.split_dist_bytes, format!("{:.2}", run.ratio)),
    ] {
        let _ = writeln!(
            out,
            "{:<26} {:>8.2} {:>8.2} {:>9} {:>10} {:>10} {:>10}{}",
            name,
            cost.wall_seconds,
            cost.cpu_seconds(),
            human_bytes(cost.peak_rss_bytes),
            human_bytes(cost.peak_extra_disk_bytes),
            human_bytes(dist),
            ratio,
            if cost.success { "" } else { "  FAILED" }
        );
    }
    out
}

/// The repair row: ours against copy + floor, and auditwheel's beside it.
fn render_repair(run: &super::repair::RepairRun) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nrepair of a {} wheel holding one {} library (edited, coded again), against the example SDK:",
        human_bytes(run.wheel_bytes),
        human_bytes(run.library_bytes)
    );
    let _ = writeln!(
        out,
        "{:<26} {:>8} {:>8} {:>9} {:>10} {:>10} {:>9}",
        "", "wall s", "CPU s", "peak RSS", "peak disk", "ratio", "CPU ratio"
    );
    let _ = writeln!(
        out,
        "{:<26} {:>8.2} {:>8.2} {:>9} {:>10} {:>10.2} {:>9.2}{}",
        "cargo xtask repair",
        run.repair.wall_seconds,
        run.repair.cpu_seconds(),
        human_bytes(run.repair.peak_rss_bytes),
        human_bytes(run.repair.peak_extra_disk_bytes),
        run.ratio,
        run.cpu_ratio,
        if run.repair.success { "" } else { "  FAILED" }
    );
    let _ = writeln!(
        out,
        "{:<26} {:>8.2} {:>8.2} {:>9} {:>10} {:>10}",
        "copy + libdeflate floor",
        run.copy_seconds + run.floor.wall_seconds,
        run.floor.cpu_seconds,
        "",
        "",
        format!("{:.2}+{:.2}", run.copy_seconds, run.floor.wall_seconds)
    );
    match (&run.auditwheel, run.auditwheel_ratio) {
        (Some(cost), Some(ratio)) => {
            let _ = writeln!(
                out,
                "{:<26} {:>8.2} {:>8.2} {:>9} {:>10} {:>9.2}x",
                "auditwheel repair",
                cost.wall_seconds,
                cost.cpu_seconds(),
                human_bytes(cost.peak_rss_bytes),
                human_bytes(cost.peak_extra_disk_bytes),
                ratio
            );
        }
        _ => {
            let _ = writeln!(out, "auditwheel repair: {}", run.auditwheel_note.as_deref().unwrap_or("not run"));
        }
    }
    let _ = writeln!(
        out,
        "(ratio: repair wall / (copy + floor wall); CPU ratio: repair CPU / floor CPU; auditwheel's: its wall / ours)"
    );
    out
}

/// What each column of the table means, printed under it: the headers are abbreviations.
const LEGEND: &[(&str, &str)] = &[
    ("input", "payload bytes of the build"),
    ("wall s", "wall time of the `package` run"),
    ("CPU s", "its user + system CPU time"),
    ("peak RSS", "its peak resident memory"),
    ("peak disk", "most disk space it used at once (other writers on the machine add to it)"),
    ("transient", "peak disk minus the dist: space used beyond the output"),
    ("dist", "bytes of the packages written"),
    ("zlib6", "bytes stock zlib at level 6 (the reference's encoder) makes of the input, a stream per file"),
    ("dist/z6", "dist / zlib6: at most 1 means no larger than the reference's encoder"),
    (
        "floor s",
        "floor: wall time to deflate each input file once with libdeflate at our level, 4 MiB chunks, all cores",
    ),
    ("ratio", "wall s / floor s: 1.0 would be as fast as compression alone"),
    ("CPU ratio", "CPU s / floor CPU: steadier than `ratio` on a busy machine"),
    ("idle ratio", "wall s / (floor CPU spread over every thread): `ratio` as on an idle machine"),
    ("zrs fl s", "the earlier floor: the same with zlib-rs (about zlib-ng) in 1 MiB chunks"),
    ("zrs ratio", "wall s / zrs fl s"),
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
            repair: None,
            split: None,
            split_device: None,
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
}
