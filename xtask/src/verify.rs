//! `cargo xtask verify`: the pre-push gate (what CI runs), and with `--dist DIR` the release
//! gate over built packages (`verify_dist`).
//!
//! Stages run in order, each printed with its time; the last line is `N passed, M failed`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use xshell::{cmd, Shell};

use crate::Output;

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Check this built dist/ directory instead of running the project's checks.
    #[arg(long, value_name = "DIR")]
    pub dist: Option<PathBuf>,
    /// With --dist: print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Skip the slow stages (clippy, the end-to-end install) for the edit-compile loop.
    #[arg(long)]
    pub quick: bool,
}

struct Stage {
    name: &'static str,
    slow: bool,
    run: fn(&Shell, &Path) -> anyhow::Result<()>,
}

const STAGES: &[Stage] = &[
    Stage { name: "rustfmt --check", slow: false, run: fmt },
    Stage { name: "clippy -D warnings", slow: true, run: clippy },
    Stage { name: "cargo test (Rust and Python tests)", slow: false, run: test },
    Stage {
        name: "example round trip (package, pip install, rocm-sdk test, verify --dist)",
        slow: true,
        run: round_trip,
    },
];

pub fn run(args: VerifyArgs, output: Output) -> anyhow::Result<ExitCode> {
    if let Some(dist) = &args.dist {
        return crate::verify_dist::run(dist, args.json, output);
    }
    let root = crate::workspace_root();
    let sh = Shell::new().context("starting a shell")?;
    sh.change_dir(&root);
    let (mut passed, mut failed) = (0, 0);
    for stage in STAGES {
        if args.quick && stage.slow {
            println!("skip  {} (--quick)", stage.name);
            continue;
        }
        let started = Instant::now();
        println!("start {}", stage.name);
        let result = (stage.run)(&sh, &root);
        let seconds = started.elapsed().as_secs_f64();
        match result {
            Ok(()) => {
                passed += 1;
                println!("ok    {} ({seconds:.1}s)", stage.name);
            }
            Err(error) => {
                failed += 1;
                println!("FAIL  {} ({seconds:.1}s): {error:#}", stage.name);
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn fmt(sh: &Shell, _root: &Path) -> anyhow::Result<()> {
    cmd!(sh, "cargo fmt --all -- --check").run()?;
    Ok(())
}

fn clippy(sh: &Shell, _root: &Path) -> anyhow::Result<()> {
    cmd!(sh, "cargo clippy --workspace --all-targets --quiet -- -D warnings").run()?;
    Ok(())
}

fn test(sh: &Shell, _root: &Path) -> anyhow::Result<()> {
    cmd!(sh, "cargo test --workspace --quiet").run()?;
    Ok(())
}

/// Packages the bundled example with this very binary, installs it into a fresh venv with
/// pip (no index), and runs the installed `rocm-sdk test`.
fn round_trip(sh: &Shell, root: &Path) -> anyhow::Result<()> {
    let work = root.join("target/verify");
    if work.exists() {
        fs_err::remove_dir_all(&work)?;
    }
    // The seeds' layout: `--dest-dir P` puts the archives in `P/dist/`.
    let packages = work.join("packages");
    let dist = packages.join(packager::config::DIST_DIR);
    let venv = work.join("venv");
    cmd!(sh, "cargo run --quiet --package xtask -- package --quiet --dest-dir {packages}").run()?;
    cmd!(sh, "python3 -m venv {venv}").run()?;
    let python = venv.join("bin/python");
    cmd!(sh, "{python} -m pip install --quiet --no-cache-dir --no-index --find-links {dist} rocm[libraries,devel]")
        .run()?;
    let rocm_sdk = venv.join("bin/rocm-sdk");
    cmd!(sh, "{rocm_sdk} test").run()?;
    // The release gate over what was just built, as CI would run it before publishing.
    cmd!(sh, "cargo run --quiet --package xtask -- verify --dist {dist}").run()?;
    // Standard checkers, from the test suite's tools venv (made by `cargo test`). Duplicate
    // files (identical launchers, headers) and payload outside importable paths are by design.
    let target_dir = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let tools = target_dir.join("tmp/venv/bin");
    let mut archives: Vec<PathBuf> = fs_err::read_dir(&dist)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.to_string_lossy().ends_with(".whl") || path.to_string_lossy().ends_with(".tar.gz"))
        .collect();
    archives.sort();
    let wheels: Vec<&PathBuf> = archives.iter().filter(|path| path.to_string_lossy().ends_with(".whl")).collect();
    let check_wheel_contents = tools.join("check-wheel-contents");
    cmd!(sh, "{check_wheel_contents} --ignore W002,W004 {wheels...}").run()?;
    let twine = tools.join("twine");
    cmd!(sh, "{twine} check --strict {archives...}").run()?;
    Ok(())
}
