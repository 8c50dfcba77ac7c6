//! The static checks of the Python code under `packager/python/` (what the packages ship,
//! its tests, the replays run in installed environments): ruff's lint and format check,
//! then mypy, with the settings of `packager/python/pyproject.toml`, as a stage of
//! `cargo xtask verify`.
//!
//! The tools come from PyPI at pinned versions, in a venv of their own under the target
//! directory that `verify`'s tool setup makes before any stage runs (and remakes when the
//! pins change). mypy checks twice: as on Linux, and the shipped packages as on Windows,
//! whose branches (`sys.platform == "win32"`, SPEC §7) a Linux check skips.
//!
//! Owns: the pins, the venv, the commands. Does not own: the settings (the pyproject), the
//! other stages (`verify`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

/// Pinned, so a new release's findings arrive in a commit of their own. mypy 1.20 is the
/// last release that checks against Python 3.9 (2.0 needs 3.10 or newer), the oldest
/// Python the shipped code runs on (`Requires-Python: >=3.9`).
const LINT_PACKAGES: &[&str] = &["mypy==1.20.2", "ruff==0.17.6"];

/// The directories of `packager/python/` that ship in the packages: mypy's Windows check.
const SHIPPED: &[&str] = &["meta", "core", "profiler", "libraries", "devel", "platform_package", "variant_provider"];

/// Where the venv and the tools' caches live: `{target}/tmp/python-lint`.
pub fn lint_dir(target_dir: &Path) -> PathBuf {
    target_dir.join("tmp/python-lint")
}

/// The venv holding [`LINT_PACKAGES`] under `dir`, made (or remade, when the pins
/// changed) with `python3 -m venv` and pip; returns its `bin` directory.
pub fn ensure_venv(dir: &Path) -> anyhow::Result<PathBuf> {
    let venv = dir.join("venv");
    let marker = venv.join(".packages-installed");
    let wanted = LINT_PACKAGES.join(" ");
    if fs_err::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(venv.join("bin"));
    }
    println!("verify: installing {wanted} into {}", venv.display());
    run(Command::new("python3").args(["-m", "venv", "--clear"]).arg(&venv))
        .context("making the venv for ruff and mypy")?;
    run(Command::new(venv.join("bin/python"))
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
        .args(LINT_PACKAGES))
    .with_context(|| format!("installing {wanted} from PyPI"))?;
    fs_err::write(&marker, &wanted)?;
    Ok(venv.join("bin"))
}

/// Runs every check over the Python tree `python_root` (`packager/python`), the tools from
/// `bin`, their caches under `cache_dir`. All of them run; the error holds, for each that
/// failed, its name and its findings (file, line, what is wrong).
pub fn check(bin: &Path, python_root: &Path, cache_dir: &Path) -> anyhow::Result<()> {
    let ruff = bin.join("ruff");
    let mypy = bin.join("mypy");
    let ruff_cache = cache_dir.join("ruff");
    let checks: [(&str, Command); 4] = [
        ("ruff check", command(&ruff, python_root, &["check", "--cache-dir"], &ruff_cache, &[])),
        ("ruff format --check", command(&ruff, python_root, &["format", "--check", "--cache-dir"], &ruff_cache, &[])),
        ("mypy", command(&mypy, python_root, &["--cache-dir"], &cache_dir.join("mypy-linux"), &[])),
        (
            "mypy --platform win32",
            command(
                &mypy,
                python_root,
                &["--platform", "win32", "--cache-dir"],
                &cache_dir.join("mypy-win32"),
                SHIPPED,
            ),
        ),
    ];
    let mut failed = Vec::new();
    for (name, mut command) in checks {
        let output = command.output().with_context(|| format!("starting {name}"))?;
        if !output.status.success() {
            let findings = String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
            failed.push(format!("{name} ({}):\n{}", output.status, findings.trim_end()));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("in {}:\n{}", python_root.display(), failed.join("\n"))
    }
}

/// `program {args} {cache} {paths}` run in `dir`, where the pyproject is found.
fn command(program: &Path, dir: &Path, args: &[&str], cache: &Path, paths: &[&str]) -> Command {
    let mut command = Command::new(program);
    command.args(args).arg(cache).args(paths).current_dir(dir).env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

/// Runs `command` with its output on the terminal; a non-zero exit is an error.
fn run(command: &mut Command) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("starting {:?}", command.get_program()))?;
    anyhow::ensure!(status.success(), "{:?} exited with {status}", command.get_program());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool is pinned to one version.
    #[test]
    fn the_tools_are_pinned() {
        for package in LINT_PACKAGES {
            let (name, version) = package.split_once("==").expect("a pin");
            assert!(!name.is_empty() && version.split('.').all(|part| part.parse::<u32>().is_ok()), "{package}");
        }
    }

    /// The checks pass on the repository's Python and fail, naming the check, on a copy of
    /// it with one untyped function (mypy) and one unused import (ruff). The tools come from
    /// the venv `verify` uses (made here when missing, from PyPI).
    #[test]
    fn the_checks_pass_on_the_tree_and_fail_on_a_finding() {
        let root = crate::workspace_root();
        let lint = lint_dir(&crate::target_dir::target_dir().expect("the target directory"));
        let bin = ensure_venv(&lint).expect("the ruff and mypy venv");
        let scratch = tempfile::tempdir().expect("temp dir");
        let copy = scratch.path().join("python");
        copy_tree(&root.join("packager/python"), &copy);
        check(&bin, &copy, &scratch.path().join("cache")).expect("the repository's Python passes");

        let module = copy.join("meta/rocm_sdk/_record.py");
        let mut text = fs_err::read_to_string(&module).expect("read");
        text.push_str("\n\ndef untyped(value):\n    return value\n");
        fs_err::write(&module, text).expect("write");
        let error = format!("{:#}", check(&bin, &copy, &scratch.path().join("cache")).expect_err("untyped"));
        assert!(error.contains("mypy (exit status: 1)"), "{error}");
        assert!(error.contains("mypy --platform win32 (exit status: 1)"), "{error}");
        assert!(error.contains("meta/rocm_sdk/_record.py:"), "the finding names the file: {error}");
        assert!(!error.contains("ruff"), "{error}");

        let module = copy.join("tests/support.py");
        let text = fs_err::read_to_string(&module).expect("read");
        fs_err::write(&module, text.replacen("import io\n", "import io\nimport zlib\n", 1)).expect("write");
        let error = format!("{:#}", check(&bin, &copy, &scratch.path().join("cache")).expect_err("unused"));
        assert!(error.contains("ruff check (exit status: 1)"), "{error}");
        assert!(error.contains("`zlib` imported but unused"), "{error}");
    }

    fn copy_tree(from: &Path, to: &Path) {
        fs_err::create_dir_all(to).expect("mkdir");
        for entry in fs_err::read_dir(from).expect("read_dir") {
            let entry = entry.expect("entry");
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') || name == "__pycache__" {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                copy_tree(&path, &to.join(&name));
            } else {
                fs_err::copy(&path, to.join(&name)).expect("copy");
            }
        }
    }
}
