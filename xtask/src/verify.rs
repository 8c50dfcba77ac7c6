//! `cargo xtask verify`: the pre-push gate (what CI runs), and with `--dist DIR` the release
//! gate over built packages (`verify_dist`).
//!
//! First the tools every stage needs are checked (and, as root on Debian or Ubuntu,
//! installed: `verify_tools`), so a missing one is one line, not a dozen red tests. Then
//! the stages run in order, each printed with its time; the run ends with the stage and
//! test counts and the name of every failing test.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
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
    /// With --dist: the site-packages directory Windows wheels are judged to install into
    /// (SPEC §7, MAX_PATH); default a per-user Python 3.13 of a 16-character user name.
    #[arg(long, value_name = "PREFIX", requires = "dist")]
    pub windows_prefix: Option<String>,
    /// With --dist: the set requires Windows long paths, so a path past MAX_PATH under the
    /// prefix is reported, not a violation.
    #[arg(long, requires = "dist")]
    pub windows_long_paths: bool,
    /// With --dist: a split set whose HIP runtime (`libamdhip64`) cannot load kpack
    /// archives is a warning, not a violation (the runtime is replaced before use).
    #[arg(long, requires = "dist")]
    pub allow_runtime_without_kpack: bool,
    /// Skip the slow stages (clippy, the end-to-end install) for the edit-compile loop.
    #[arg(long)]
    pub quick: bool,
    /// Only check the tools the stages need (as root on Debian or Ubuntu: install the
    /// missing ones), then stop.
    #[arg(long, conflicts_with = "dist")]
    pub check_tools: bool,
}

/// What the test stage learnt, for the last lines of the run.
#[derive(Default)]
struct Tally {
    tests_passed: usize,
    tests_failed: Vec<String>,
}

struct Stage {
    name: &'static str,
    slow: bool,
    run: fn(&Shell, &Path, &mut Tally) -> anyhow::Result<()>,
}

const STAGES: &[Stage] = &[
    Stage { name: "rustfmt --check", slow: false, run: fmt },
    Stage { name: "ruff and mypy (packager/python)", slow: false, run: python_checks },
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
        let mut prefix = args.windows_prefix.clone().unwrap_or_else(|| release_gate::DEFAULT_WINDOWS_PREFIX.to_owned());
        if !prefix.ends_with(['\\', '/']) {
            prefix.push('\\');
        }
        let options = release_gate::VerifyOptions {
            windows: release_gate::WindowsPaths { prefix, long_paths: args.windows_long_paths },
            allow_runtime_without_kpack: args.allow_runtime_without_kpack,
        };
        return crate::verify_dist::run(dist, args.json, &options, output);
    }
    crate::verify_tools::ensure(args.quick)?;
    crate::verify_python::ensure_venv(&crate::verify_python::lint_dir(&crate::target_dir::target_dir()?))?;
    if args.check_tools {
        println!("verify: every tool the stages need is installed");
        return Ok(ExitCode::SUCCESS);
    }
    let root = crate::workspace_root();
    let sh = Shell::new().context("starting a shell")?;
    sh.change_dir(&root);
    let (mut passed, mut failed) = (0, Vec::new());
    let mut tally = Tally::default();
    for stage in STAGES {
        if args.quick && stage.slow {
            println!("skip  {} (--quick)", stage.name);
            continue;
        }
        let started = Instant::now();
        println!("start {}", stage.name);
        let result = (stage.run)(&sh, &root, &mut tally);
        let seconds = started.elapsed().as_secs_f64();
        match result {
            Ok(()) => {
                passed += 1;
                println!("ok    {} ({seconds:.1}s)", stage.name);
            }
            Err(error) => {
                failed.push(stage.name);
                println!("FAIL  {} ({seconds:.1}s): {error:#}", stage.name);
            }
        }
    }
    print!("{}", closing_lines(passed, &failed, &tally));
    Ok(if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The counts, then each failing test by name: what to rerun is the last thing printed.
fn closing_lines(passed: usize, failed: &[&str], tally: &Tally) -> String {
    let mut out = format!("stages: {passed} passed, {} failed", failed.len());
    if !failed.is_empty() {
        out += &format!(" ({})", failed.join(", "));
    }
    out += &format!("; tests: {} passed, {} failed\n", tally.tests_passed, tally.tests_failed.len());
    for name in &tally.tests_failed {
        out += &format!("failed test: {name}\n");
    }
    out
}

fn fmt(sh: &Shell, _root: &Path, _tally: &mut Tally) -> anyhow::Result<()> {
    cmd!(sh, "cargo fmt --all -- --check").run()?;
    Ok(())
}

/// ruff and mypy over the Python the packages ship and its tests (`verify_python`).
fn python_checks(_sh: &Shell, root: &Path, _tally: &mut Tally) -> anyhow::Result<()> {
    let lint = crate::verify_python::lint_dir(&crate::target_dir::target_dir()?);
    let bin = crate::verify_python::ensure_venv(&lint)?;
    crate::verify_python::check(&bin, &root.join("packager/python"), &lint.join("cache"))
}

/// Cargo's own `Checking …` lines stay on: a first run checks for a minute or more, and a
/// gate that prints nothing that long looks hung.
fn clippy(sh: &Shell, _root: &Path, _tally: &mut Tally) -> anyhow::Result<()> {
    cmd!(sh, "cargo clippy --workspace --all-targets -- -D warnings").run()?;
    Ok(())
}

/// Every test binary, even after one fails (`--no-fail-fast`), so the closing lines can
/// name every failing test. Cargo's stderr shares the pipe with the tests' stdout, so its
/// `to rerun pass ...` line follows the failures it is about. Output is passed through as
/// it comes and read back after. Cargo itself is not quiet, so compiling shows its
/// progress and each test binary a `Running …` line; the tests print a dot each.
fn test(_sh: &Shell, root: &Path, tally: &mut Tally) -> anyhow::Result<()> {
    let mut command = Command::new("cargo");
    command.args(["test", "--workspace", "--no-fail-fast", "--", "--quiet"]).current_dir(root);
    let (status, seen) = run_merged(command, &mut std::io::stdout()).context("running cargo test")?;
    let results = read_test_results(&String::from_utf8_lossy(&seen));
    tally.tests_passed += results.passed;
    tally.tests_failed.extend(results.failed.iter().cloned());
    match (status.success(), results.failed.len()) {
        (true, _) => Ok(()),
        (false, 0) => anyhow::bail!("cargo test failed ({status}); see its output above"),
        (false, n) => anyhow::bail!("{n} test(s) failed"),
    }
}

/// Runs `command` with stdout and stderr on one pipe, copying what it writes to `out` as
/// it comes; returns its status and everything it wrote, in order.
fn run_merged(mut command: Command, out: &mut dyn Write) -> anyhow::Result<(std::process::ExitStatus, Vec<u8>)> {
    let (mut pipe, write_end) = merged_pipe().context("creating a pipe")?;
    command.stdout(Stdio::from(write_end.try_clone().context("duplicating the pipe")?));
    command.stderr(Stdio::from(write_end));
    let mut child = command.spawn().with_context(|| format!("starting {:?}", command.get_program()))?;
    // The command holds the write end: dropped, the pipe reports end-of-file when the
    // child exits.
    drop(command);
    let mut seen = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let n = pipe.read(&mut buffer).context("reading the output")?;
        if n == 0 {
            break;
        }
        // Best effort: a closed stdout must not stop the tests.
        let _ = out.write_all(&buffer[..n]).and_then(|()| out.flush());
        seen.extend_from_slice(&buffer[..n]);
    }
    Ok((child.wait().context("waiting for the child")?, seen))
}

/// A pipe whose read end is ours and whose write end goes to a child (both close-on-exec
/// here; `Command` dups the write end onto the child's stdout and stderr).
fn merged_pipe() -> std::io::Result<(std::fs::File, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills `fds` with two new descriptors, which nothing else owns.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (read, write) =
        unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) };
    Ok((std::fs::File::from(read), write))
}

/// Passed count and failing tests from the libtest output of every test binary.
#[derive(Debug, Default, PartialEq)]
struct TestResults {
    passed: usize,
    /// `cargo test -p CRATE --test BINARY NAME` when cargo said how to rerun the binary,
    /// else the bare name.
    failed: Vec<String>,
}

/// libtest ends a failing binary with `failures:`, one indented name per line, a blank
/// line and `test result: FAILED. …`; the panics come before, under an earlier
/// `failures:` whose `---- name stdout ----` lines end the candidate list. Cargo then
/// says ``error: test failed, to rerun pass `-p xtask --test cli` ``.
fn read_test_results(text: &str) -> TestResults {
    let mut results = TestResults::default();
    let mut candidates: Option<Vec<String>> = None;
    let mut pending: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(rerun) = line.strip_prefix("error: test failed, to rerun pass `") {
            let rerun = rerun.trim_end_matches('`');
            results.failed.extend(pending.drain(..).map(|name| format!("cargo test {rerun} {name}")));
        } else if line == "failures:" {
            candidates = Some(Vec::new());
        } else if let Some(rest) = line.strip_prefix("test result: ") {
            results.failed.append(&mut pending);
            results.passed += count_before(rest, " passed");
            if rest.starts_with("FAILED") {
                pending = candidates.take().unwrap_or_default();
            }
            candidates = None;
        } else if let Some(list) = candidates.as_mut() {
            match line.strip_prefix("    ") {
                Some(name) if !name.trim().is_empty() => list.push(name.trim().to_owned()),
                _ if line.trim().is_empty() => {}
                _ => candidates = None,
            }
        }
    }
    results.failed.append(&mut pending);
    results
}

/// `12` from `ok. 12 passed; 0 failed` for `" passed"`; 0 if absent.
fn count_before(text: &str, label: &str) -> usize {
    text.split(';')
        .find_map(|part| part.trim().trim_start_matches("ok. ").trim_start_matches("FAILED. ").strip_suffix(label))
        .and_then(|number| number.trim().parse().ok())
        .unwrap_or(0)
}

/// Packages the bundled example with this very binary, installs it into a fresh venv with
/// pip (no index), and runs the installed `rocm-sdk test`.
fn round_trip(sh: &Shell, _root: &Path, _tally: &mut Tally) -> anyhow::Result<()> {
    let target_dir = crate::target_dir::target_dir()?;
    let work = target_dir.join("verify");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_tests_are_named_and_passes_counted() {
        let text = "running 3 tests\n.F.\nfailures:\n\n---- targets::a stdout ----\n\
                    thread 'targets::a' panicked at tests/it/targets.rs:1:1:\n    left: 0\n\n\
                    failures:\n    targets::a\n    elf::b\n\n\
                    test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out\n\n\
                    error: test failed, to rerun pass `-p packager-tests --test it`\n\
                    \nrunning 4 tests\n....\ntest result: ok. 4 passed; 0 failed; 0 ignored\n\
                    \nrunning 1 test\nF\nfailures:\n    lib.rs - f (line 3)\n\ntest result: FAILED. 0 passed; 1 failed\n";
        let results = read_test_results(text);
        let failed = [
            "cargo test -p packager-tests --test it targets::a",
            "cargo test -p packager-tests --test it elf::b",
            "lib.rs - f (line 3)",
        ];
        assert_eq!(results, TestResults { passed: 5, failed: failed.map(str::to_owned).to_vec() });
    }

    /// The Python tests' harness (`tests/python/main.rs`, libtest-mimic) ends a failing run
    /// as libtest does; a traceback's indented lines are not taken for names.
    #[test]
    fn a_failing_python_test_is_named() {
        let text = "running 2 tests\n.F\nfailures:\n\n---- test_x::T::test_fails ----\n\
                    Traceback (most recent call last):\n  File \"tests/test_x.py\", line 11, in test_fails\n\
                    \x20   self.assertEqual(1, 2)\nAssertionError: 1 != 2\n\nStdout:\nsaid\n\n\n\n\
                    failures:\n    test_x::T::test_fails\n\n\
                    test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.54s\n\n\
                    error: test failed, to rerun pass `-p packager-tests --test python`\n";
        let failed = ["cargo test -p packager-tests --test python test_x::T::test_fails".to_owned()];
        assert_eq!(read_test_results(text), TestResults { passed: 1, failed: failed.to_vec() });
    }

    #[test]
    fn stdout_and_stderr_arrive_in_order_on_one_pipe() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo one; echo two >&2; echo three; exit 3"]);
        let mut copy = Vec::new();
        let (status, seen) = run_merged(command, &mut copy).expect("sh runs");
        assert_eq!(status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&seen), "one\ntwo\nthree\n");
        assert_eq!(copy, seen);
    }

    #[test]
    fn the_run_ends_with_the_failing_tests() {
        let tally = Tally { tests_passed: 135, tests_failed: vec!["targets::a".to_owned(), "cmake::b".to_owned()] };
        assert_eq!(
            closing_lines(3, &["cargo test"], &tally),
            "stages: 3 passed, 1 failed (cargo test); tests: 135 passed, 2 failed\n\
             failed test: targets::a\nfailed test: cmake::b\n"
        );
        assert_eq!(closing_lines(4, &[], &Tally::default()), "stages: 4 passed, 0 failed; tests: 0 passed, 0 failed\n");
    }
}
