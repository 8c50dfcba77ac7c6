//! `cargo xtask verify --dist DIR [--json]`: prints what `release_gate::verify_dist`
//! found, grouped by package, and turns it into an exit code (0 clean or warnings only,
//! 1 violations; errors such as an unreadable dist become 2 in `main`).

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use release_gate::{verify_dist_with_options, Finding, VerifyOptions, VerifyReport};

use crate::Output;

pub fn run(dist: &Path, json: bool, options: &VerifyOptions, output: Output) -> anyhow::Result<ExitCode> {
    if dist.exists() && !dist.is_dir() {
        return Err(crate::CliError {
            message: format!("--dist {} is a file, not a directory", dist.display()),
            hint: "point --dist at the directory holding the packages (the dist/ under the --dest-dir of \
                   `cargo xtask package`)",
        }
        .into());
    }
    let report = verify_dist_with_options(dist, options).with_context(|| format!("verifying {}", dist.display()))?;
    // A CI job with a mistyped path must fail, not pass with nothing checked.
    if report.packages.is_empty() {
        return Err(crate::CliError {
            message: format!(
                "no package to verify: no .whl or .tar.gz file in {} or its subdirectories",
                dist.display()
            ),
            hint: "point --dist at the directory holding the packages (the dist/ under the --dest-dir of \
                   `cargo xtask package`)",
        }
        .into());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report).context("serializing the report")?);
    } else if !output.quiet || report.n_violations() > 0 {
        print!("{}", render(&report, output.verbose > 0));
    }
    Ok(if report.n_violations() > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The human-readable report: one block per package, findings under it, a summary line.
fn render(report: &VerifyReport, verbose: bool) -> String {
    let mut text = String::new();
    for package in &report.packages {
        let status = if !package.violations.is_empty() {
            "FAIL"
        } else if !package.warnings.is_empty() {
            "warn"
        } else {
            "ok"
        };
        let _ = write!(text, "{status:4} {}", package.file);
        if let Some(tag) = package.portability.as_ref().and_then(|facts| facts.manylinux_tag.as_deref()) {
            let glibc = package.portability.as_ref().and_then(|facts| facts.glibc.as_deref()).unwrap_or("-");
            let _ = write!(text, "  (glibc {glibc}, can carry {tag})");
        }
        let counts = &package.device_code;
        if counts.kpack_archives + counts.hipk_wrappers > 0 {
            let _ = write!(
                text,
                "  ({} kpack archives, {} code objects, {} HIPK wrappers)",
                counts.kpack_archives, counts.kpack_code_objects, counts.hipk_wrappers
            );
        }
        if let Some(length) = package.portability.as_ref().and_then(|facts| facts.windows_path_length) {
            let _ = write!(text, "  (deepest installed path: {length} characters)");
        }
        text.push('\n');
        if verbose || package.locations.len() > 1 {
            for location in &package.locations {
                let _ = writeln!(text, "       at {}", location.display());
            }
        }
        if let Some(line) = foreign_line(&package.foreign_elf_files, verbose) {
            let _ = writeln!(text, "       info: {line}");
        }
        render_findings(&mut text, "error", "violations", &package.violations, verbose);
        render_findings(&mut text, "warning", "warnings", &package.warnings, verbose);
    }
    let _ = writeln!(
        text,
        "{} packages (found in {} and its subdirectories), {} violations, {} warnings",
        report.packages.len(),
        report.dist.display(),
        report.n_violations(),
        report.n_warnings()
    );
    text
}

/// Without `-v`, this many findings of each kind are shown per package; the rest are
/// counted, so a package with a million bad members reports in a few lines.
const FINDINGS_SHOWN: usize = 20;

fn render_findings(text: &mut String, label: &str, plural: &str, findings: &[Finding], verbose: bool) {
    let shown = if verbose { findings.len() } else { findings.len().min(FINDINGS_SHOWN) };
    for finding in &findings[..shown] {
        let _ = writeln!(text, "       {label}: {}", describe(finding));
    }
    if shown < findings.len() {
        let _ = writeln!(text, "       ... and {} more {plural} (-v or --json lists them)", findings.len() - shown);
    }
}

/// Without `-v`, this many foreign ELF files are named; the rest are counted.
const FOREIGN_NAMED: usize = 3;

/// ELF files for another machine are data in the wheel (SPEC §6), so verify does not judge
/// them; one line says which, so a foreign file that should have been a host one is seen.
fn foreign_line(paths: &[String], verbose: bool) -> Option<String> {
    if paths.is_empty() {
        return None;
    }
    let shown = if verbose { paths.len() } else { paths.len().min(FOREIGN_NAMED) };
    let mut line = format!(
        "{} ELF file(s) for another machine, kept as data and not checked: {}",
        paths.len(),
        paths[..shown].join(", ")
    );
    if shown < paths.len() {
        let _ = write!(line, " and {} more (-v lists them)", paths.len() - shown);
    }
    Some(line)
}

fn describe(finding: &Finding) -> String {
    let check = serde_json::to_value(finding.check).ok().and_then(|value| value.as_str().map(str::to_owned));
    let check = check.unwrap_or_default();
    match &finding.path {
        Some(path) => format!("[{check}] {path}: {}", finding.message),
        None => format!("[{check}] {}", finding.message),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use release_gate::{ArchiveKind, Check, Finding, PackageReport, Portability, VerifyReport};

    use super::{render, render_findings, FINDINGS_SHOWN};

    #[test]
    fn groups_findings_under_their_package() {
        let finding = |check, path: Option<&str>, message: &str| Finding {
            file: "a-1.0-py3-none-linux_x86_64.whl".to_owned(),
            path: path.map(str::to_owned),
            check,
            message: message.to_owned(),
        };
        let package = PackageReport {
            file: "a-1.0-py3-none-linux_x86_64.whl".to_owned(),
            locations: vec![PathBuf::from("a-1.0-py3-none-linux_x86_64.whl")],
            kind: ArchiveKind::Wheel,
            name: Some("a".to_owned()),
            version: Some("1.0".to_owned()),
            sha256: String::new(),
            n_members: 3,
            n_elf_files: 1,
            n_gpu_code_objects: 0,
            device_code: Default::default(),
            foreign_elf_files: vec!["a/lib/arm64.so".to_owned()],
            portability: Some(Portability {
                glibc: Some("2.26".to_owned()),
                glibcxx: None,
                cxxabi: None,
                manylinux_tag: Some("manylinux_2_26_x86_64".to_owned()),
                windows_deepest_path: None,
                windows_path_length: None,
            }),
            violations: vec![finding(Check::Rpath, Some("a/lib/x.so"), "has DT_RUNPATH `$ORIGIN`")],
            warnings: vec![finding(Check::WindowsName, Some("a/x:y"), "Windows cannot extract this name")],
        };
        let report = VerifyReport { dist: PathBuf::from("dist"), packages: vec![package] };
        assert_eq!(
            render(&report, false),
            "FAIL a-1.0-py3-none-linux_x86_64.whl  (glibc 2.26, can carry manylinux_2_26_x86_64)\n\
             \x20      info: 1 ELF file(s) for another machine, kept as data and not checked: a/lib/arm64.so\n\
             \x20      error: [rpath] a/lib/x.so: has DT_RUNPATH `$ORIGIN`\n\
             \x20      warning: [windows-name] a/x:y: Windows cannot extract this name\n\
             1 packages (found in dist and its subdirectories), 1 violations, 1 warnings\n"
        );
    }

    #[test]
    fn many_findings_are_summarised_unless_verbose() {
        let findings: Vec<Finding> = (0..FINDINGS_SHOWN + 5)
            .map(|index| Finding {
                file: "a.whl".to_owned(),
                path: Some(format!("a/{index}")),
                check: Check::Record,
                message: "is not in RECORD".to_owned(),
            })
            .collect();
        let mut short = String::new();
        render_findings(&mut short, "error", "violations", &findings, false);
        assert_eq!(short.lines().count(), FINDINGS_SHOWN + 1, "{short}");
        assert!(short.ends_with("... and 5 more violations (-v or --json lists them)\n"), "{short}");
        let mut long = String::new();
        render_findings(&mut long, "error", "violations", &findings, true);
        assert_eq!(long.lines().count(), FINDINGS_SHOWN + 5, "{long}");
    }
}
