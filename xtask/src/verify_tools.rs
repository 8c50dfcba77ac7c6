//! What `cargo xtask verify` needs from the machine, checked before any stage runs: the
//! programs the tests call (Debian packages) and the Rust components the gates run.
//!
//! As root on Debian or Ubuntu, missing Debian packages are installed with `apt-get` (one
//! line says which). Otherwise each missing tool is one line naming the command that
//! installs it, and verify exits with code 2: a suite that fails 9 tests because `ld.lld`
//! is absent says less than one line that says so.
//!
//! Owns: the tool list, the probes and the install. Does not own: the stages (`verify`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::CliError;

/// How to tell that a tool is there.
enum Probe {
    /// An executable of this name on `PATH`.
    OnPath(&'static str),
    /// This command exits 0 (program looked up on `PATH`).
    Runs(&'static [&'static str]),
}

/// Where a missing tool comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A Debian package, installed with `apt-get install`.
    Debian(&'static str),
    /// A rustup component, installed with `rustup component add`.
    Rustup(&'static str),
}

struct Tool {
    /// What the user reads: the command the tests run.
    name: &'static str,
    probe: Probe,
    source: Source,
    /// Needed only by the stages `--quick` skips.
    slow_only: bool,
}

const fn tool(name: &'static str, package: &'static str) -> Tool {
    Tool { name, probe: Probe::OnPath(name), source: Source::Debian(package), slow_only: false }
}

/// Everything the stages and the tests call. The ELF corpus assembles and links odd
/// layouts with LLVM; `patchelf` and `eu-elflint` check our ELF edits against other tools.
const TOOLS: &[Tool] = &[
    tool("cc", "gcc"),
    tool("readelf", "binutils"),
    tool("strip", "binutils"),
    tool("llvm-mc", "llvm"),
    tool("llvm-as", "llvm"),
    tool("ld.lld", "lld"),
    tool("cmake", "cmake"),
    tool("unzip", "unzip"),
    tool("zipinfo", "unzip"),
    tool("xz", "xz-utils"),
    tool("perl", "perl"),
    tool("patchelf", "patchelf"),
    tool("eu-elflint", "elfutils"),
    // Device code (SPEC §12): real fat HIP binaries are compiled by LLVM 15's clang and
    // linked by its lld, and what we extract is compared with its offload bundler's.
    tool("clang++-15", "clang-15"),
    tool("ld.lld-15", "lld-15"),
    tool("clang-offload-bundler-15", "clang-tools-15"),
    // The device-code crate's tests read what it writes with Python's msgpack and
    // zstandard (Debian's, for the system python3), independently of its own readers.
    Tool {
        name: "python3 msgpack",
        probe: Probe::Runs(&["/usr/bin/python3", "-c", "import msgpack"]),
        source: Source::Debian("python3-msgpack"),
        slow_only: false,
    },
    Tool {
        name: "python3 zstandard",
        probe: Probe::Runs(&["/usr/bin/python3", "-c", "import zstandard"]),
        source: Source::Debian("python3-zstandard"),
        slow_only: false,
    },
    // The Windows example is cross-compiled, and its wheels run by Windows Python under Wine
    // (SPEC §7).
    tool("x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64"),
    Tool {
        name: "wine64",
        probe: Probe::Runs(&["/usr/lib/wine/wine64", "--version"]),
        source: Source::Debian("wine64"),
        slow_only: false,
    },
    // The tests make venvs; Debian splits `venv` and `ensurepip` out of python3.
    Tool {
        name: "python3 -m venv",
        probe: Probe::Runs(&["python3", "-c", "import venv, ensurepip"]),
        source: Source::Debian("python3-venv"),
        slow_only: false,
    },
    // The repair tests compile a Python C extension (SPEC §11).
    Tool {
        name: "Python.h",
        probe: Probe::Runs(&[
            "python3",
            "-c",
            "import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))",
        ]),
        source: Source::Debian("python3-dev"),
        slow_only: false,
    },
    Tool {
        name: "cargo fmt",
        probe: Probe::Runs(&["cargo", "fmt", "--version"]),
        source: Source::Rustup("rustfmt"),
        slow_only: false,
    },
    Tool {
        name: "cargo clippy",
        probe: Probe::Runs(&["cargo", "clippy", "--version"]),
        source: Source::Rustup("clippy"),
        slow_only: true,
    },
];

/// Checks every tool the stages need (`quick`: only those of the quick stages); as root on
/// Debian or Ubuntu installs the missing Debian packages first. Whatever is still missing
/// is printed on stderr, one line per tool, and is an error.
pub fn ensure(quick: bool) -> anyhow::Result<()> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let wanted: Vec<&Tool> = TOOLS.iter().filter(|tool| !(quick && tool.slow_only)).collect();
    let mut missing: Vec<&Tool> = wanted.iter().copied().filter(|tool| !is_present(tool, &path)).collect();
    let packages = debian_packages(&missing);
    if !packages.is_empty() {
        if let Some(apt_get) = apt_get_if_allowed(&path) {
            println!("verify: installing missing Debian packages: {}", packages.join(" "));
            install(&apt_get, &packages)?;
            missing.retain(|tool| !is_present(tool, &path));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    for tool in &missing {
        eprintln!("missing {}: install it with `{}`", tool.name, install_command(tool));
    }
    Err(CliError {
        message: format!("verify needs {} more tool(s), listed above; nothing was run", missing.len()),
        hint: "install them, or run `cargo xtask verify` as root on Debian or Ubuntu to have it install them",
    }
    .into())
}

fn install_command(tool: &Tool) -> String {
    match tool.source {
        Source::Debian(package) => format!("apt-get install {package}"),
        Source::Rustup(component) => format!("rustup component add {component}"),
    }
}

/// The Debian packages that provide `tools`, each once, in list order.
fn debian_packages(tools: &[&Tool]) -> Vec<&'static str> {
    let mut packages = Vec::new();
    for tool in tools {
        if let Source::Debian(package) = tool.source {
            if !packages.contains(&package) {
                packages.push(package);
            }
        }
    }
    packages
}

fn is_present(tool: &Tool, path: &OsStr) -> bool {
    match tool.probe {
        Probe::OnPath(name) => find_on_path(name, path).is_some(),
        Probe::Runs(argv) => {
            let Some(program) = find_on_path(argv[0], path) else { return false };
            Command::new(program)
                .args(&argv[1..])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        }
    }
}

/// The first executable file `name` in the directories of `path`.
pub fn find_on_path(name: &str, path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).map(|dir| dir.join(name)).find(|candidate| {
        std::fs::metadata(candidate)
            .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
    })
}

/// `apt-get`, when this process may install with it: root, on Debian or a derivative, with
/// `apt-get` on `PATH`. Anyone else gets the commands to run.
fn apt_get_if_allowed(path: &OsStr) -> Option<PathBuf> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || !Path::new("/etc/debian_version").exists() {
        return None;
    }
    find_on_path("apt-get", path)
}

fn install(apt_get: &Path, packages: &[&str]) -> anyhow::Result<()> {
    // A fresh container has no package lists yet; without them the install finds nothing.
    run_quietly(Command::new(apt_get).args(["update", "-qq"])).context("apt-get update")?;
    run_quietly(
        Command::new(apt_get)
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .with_context(|| format!("apt-get install {}", packages.join(" ")))
}

/// Runs `command`; on failure the error carries the end of its output.
fn run_quietly(command: &mut Command) -> anyhow::Result<()> {
    let output = command.stdin(Stdio::null()).output().context("starting apt-get")?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    anyhow::bail!("{} ({})", tail.join("; "), output.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_debian_package_is_installed_once() {
        let missing: Vec<&Tool> =
            TOOLS.iter().filter(|tool| matches!(tool.name, "readelf" | "strip" | "cmake")).collect();
        assert_eq!(debian_packages(&missing), ["binutils", "cmake"]);
    }

    #[test]
    fn the_elf_checkers_are_on_the_list() {
        let commands: Vec<String> = TOOLS.iter().map(install_command).collect();
        for expected in ["apt-get install elfutils", "apt-get install patchelf", "apt-get install lld"] {
            assert!(commands.iter().any(|command| command == expected), "{commands:?}");
        }
    }
}
