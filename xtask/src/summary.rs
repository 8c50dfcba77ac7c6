//! What `package` prints on stdout: the plan (`--plan`), the summary table, and the JSON
//! report; plus the GitHub Actions step summary.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use packager::elf::EditStrategy;
use packager::plan::{DevelEntry, LinkReason, Plan, PlannedFile};
use packager::Report;

use crate::Output;

/// One line per member: package, path, action and the reason. The devel trees are read
/// again from the artifacts, which fails if they changed since the plan.
pub fn render_plan(plan: &Plan) -> Result<String, packager::Error> {
    let mut out = String::new();
    let mode = if plan.kpack_split { "kpack-split" } else { "legacy" };
    let _ = writeln!(out, "version {} ({mode}), families: {}", plan.version, plan.families.available.join(", "));
    if let Some(pe_file) = &plan.build_os_evidence {
        let _ = writeln!(out, "{}", windows_build_line(pe_file, Path::new("")));
    }
    for package in &plan.packages {
        let platform_dir = &package.names.platform_dir;
        let _ =
            writeln!(out, "\n{} ({} files{})", package.names.distribution, package.files.len(), devel_count(package));
        for (rel, file) in &package.files {
            let _ = writeln!(out, "  {}  {}", platform_dir.member(rel), describe_file(file));
        }
        if let Some(tree) = &package.devel_tree {
            tree.walk_planned(&mut |rel, entry| {
                let what = match entry {
                    DevelEntry::Dir => "dir".to_owned(),
                    DevelEntry::Symlink { target, why } => format!("symlink -> {target} ({})", link_reason(*why)),
                    DevelEntry::File { file } => describe_file(file),
                };
                let _ = writeln!(out, "  {}  {what}", platform_dir.member(rel));
                Ok(())
            })?;
        }
    }
    if !plan.findings.is_empty() {
        let _ = writeln!(out, "\nfindings:");
        for finding in &plan.findings {
            let _ = writeln!(out, "  {finding}");
        }
    }
    for override_ in &plan.overrides {
        let _ = writeln!(out, "  override {}: {} wins over {}", override_.rel, override_.winner, override_.loser);
    }
    Ok(out)
}

/// Why a build is packaged as a Windows build, in one line (SPEC §7).
pub fn windows_build_line(pe_file: &Path, artifacts_dir: &Path) -> String {
    let shown = pe_file.strip_prefix(artifacts_dir).unwrap_or(pe_file);
    format!(
        "a Windows build: {} is a PE file and no artifact has ELF programs or libraries \
         (win_amd64 wheels, PE files copied unchanged, no launchers, no profiler wheel; \
         --build-os linux says otherwise)",
        shown.display()
    )
}

fn devel_count(package: &packager::plan::PackagePlan) -> String {
    match &package.devel_tree {
        None => String::new(),
        Some(tree) => format!(", {} devel entries", tree.planned.entries),
    }
}

fn describe_file(file: &PlannedFile) -> String {
    match file {
        PlannedFile::Copy { source, .. } => format!("copy {}", source.display()),
        PlannedFile::PatchRpath { source, edit, .. } => {
            let removed =
                if edit.removed.is_empty() { String::new() } else { format!(", removed {}", edit.removed.join(":")) };
            format!(
                "copy {} with DT_RPATH={} ({}{removed})",
                source.display(),
                edit.rpath,
                edit_strategy(edit.strategy)
            )
        }
        PlannedFile::Launcher { target, .. } => format!("launcher -> {target}"),
        PlannedFile::Generated { bytes } => format!("generated ({} bytes)", bytes.len()),
    }
}

/// Why a devel entry is a symlink, in the words of the contract rather than the enum's.
fn link_reason(why: LinkReason) -> &'static str {
    match why {
        LinkReason::SonameAlias => "alias of the SONAME",
        LinkReason::RuntimePackage => "file shipped by a runtime package",
        LinkReason::Source => "symlink in the artifact",
    }
}

/// How an RPATH edit fits into the file, in words.
fn edit_strategy(strategy: EditStrategy) -> &'static str {
    match strategy {
        EditStrategy::Unchanged => "already so",
        EditStrategy::InPlace => "fits in place",
        EditStrategy::Grown => "file grown by a new segment",
    }
}

/// A package's or a stage's time: milliseconds below 0.1 s, where `0.0s` would say nothing.
fn format_seconds(seconds: f64) -> String {
    if seconds < 0.1 {
        format!("{:.0}ms", seconds * 1000.0)
    } else {
        format!("{seconds:.1}s")
    }
}

/// The end-of-run table (package, file, members, sizes, time), counts, and `--json`.
/// Columns are as wide as their longest cell, so long wheel names stay aligned.
pub fn render_table(report: &Report) -> String {
    let mut out = String::new();
    let package_width = report.outputs.iter().map(|output| output.package.len()).max().unwrap_or(0).max(7);
    let file_width = report.outputs.iter().map(|output| output.file_name.len()).max().unwrap_or(0).max(4);
    let _ = writeln!(
        out,
        "{:<package_width$}  {:<file_width$}  {:>7}  {:>10}  {:>10}  {:>6}",
        "package", "file", "files", "size", "compressed", "time"
    );
    for output in &report.outputs {
        let _ = writeln!(
            out,
            "{:<package_width$}  {:<file_width$}  {:>7}  {:>10}  {:>10}  {:>6}",
            output.package,
            output.file_name,
            output.files,
            human_bytes(output.uncompressed_bytes),
            human_bytes(output.compressed_bytes),
            format_seconds(output.seconds)
        );
    }
    let _ = writeln!(out, "stages: {}", stage_line(report));
    let _ = writeln!(out, "reuse: {}", reuse_line(report));
    if let Some(notes) = notes_line(report) {
        let _ = writeln!(out, "notes: {notes} (details: --json)");
    }
    out
}

/// The same table as GitHub-flavoured Markdown, for `$GITHUB_STEP_SUMMARY`.
pub fn render_markdown(report: &Report) -> String {
    let mode = if report.kpack_split { "kpack-split" } else { "legacy" };
    let mut out = format!("### ROCm Python packages {} ({mode})\n\n", report.version);
    out.push_str("| package | file | files | size | compressed | time |\n|---|---|--:|--:|--:|--:|\n");
    for output in &report.outputs {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} |",
            output.package,
            output.file_name,
            output.files,
            human_bytes(output.uncompressed_bytes),
            human_bytes(output.compressed_bytes),
            format_seconds(output.seconds)
        );
    }
    let _ = writeln!(out, "\nStages: {}", stage_line(report));
    let _ = writeln!(out, "\nReuse: {}", reuse_line(report));
    if let Some(notes) = notes_line(report) {
        let _ = writeln!(out, "\nNotes: {notes}");
    }
    // A blank line, so whatever a later step appends starts a new block.
    out.push('\n');
    out
}

fn stage_line(report: &Report) -> String {
    let stages: Vec<String> =
        report.stages.iter().map(|stage| format!("{} {}", stage.stage, format_seconds(stage.seconds))).collect();
    stages.join(", ")
}

/// How much of the input was copied compressed from the previous wheels (SPEC §8).
fn reuse_line(report: &Report) -> String {
    let reuse = &report.reuse;
    // The members proven unchanged by their files' identities, not by reading them.
    let unread = match reuse.unread_members {
        0 => String::new(),
        n => format!("; {} of them ({n} members) not read again", human_bytes(reuse.unread_bytes)),
    };
    format!(
        "{} reused from the previous wheels ({} members{unread}), {} compressed ({} members)",
        human_bytes(reuse.reused_bytes),
        reuse.reused_members,
        human_bytes(reuse.compressed_bytes),
        reuse.compressed_members
    )
}

fn notes_line(report: &Report) -> Option<String> {
    let mut counts: Vec<String> = report.counts.iter().map(|(kind, count)| format!("{count} {kind}")).collect();
    counts.extend(report.rpath_edits.iter().map(|(strategy, count)| format!("{count} rpath edits {strategy}")));
    if !report.overrides.is_empty() {
        counts.push(format!("{} paths provided by two artifacts", report.overrides.len()));
    }
    (!counts.is_empty()).then(|| counts.join(", "))
}

pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

pub fn publish(report: &Report, output: Output, json: Option<&Path>) -> anyhow::Result<()> {
    let table = render_table(report);
    match json {
        Some(path) if path == Path::new("-") => {
            println!("{}", serde_json::to_string_pretty(report).context("serialising the report")?);
        }
        Some(path) => {
            let text = serde_json::to_string_pretty(report).context("serialising the report")?;
            fs_err::write(path, text + "\n")?;
            if !output.quiet {
                print!("{table}");
            }
        }
        None => {
            if !output.quiet {
                print!("{table}");
            }
        }
    }
    // GitHub Actions shows this file on the run's page; appending keeps earlier steps' text.
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|path| !path.is_empty()) {
        let mut file = fs_err::OpenOptions::new().create(true).append(true).open(summary)?;
        std::io::Write::write_all(&mut file, render_markdown(report).as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_packages_show_milliseconds() {
        assert_eq!(format_seconds(0.0042), "4ms");
        assert_eq!(format_seconds(0.0999), "100ms");
        assert_eq!(format_seconds(0.1), "0.1s");
        assert_eq!(format_seconds(12.34), "12.3s");
    }
}
