//! `cargo xtask` (the alias in `.cargo/config.toml` runs this): builds the `xtask` tool
//! with `SOURCE_DATE_EPOCH` removed from the build's environment, then runs it with the
//! caller's whole environment, the timestamp included.
//!
//! Why: the C libraries the tool links (libdeflate, liblzma) are compiled by the `cc`
//! crate, which tells cargo to rebuild them whenever `SOURCE_DATE_EPOCH` changes (GCC
//! reads it for `__DATE__`). A release script that sets it to each commit's time would
//! then recompile them and everything above them before every run. The timestamp is a
//! run-time input of the tool (the archives' times, SPEC §5), never a build input: this
//! crate has no dependencies, so building it does not depend on the variable either.
//!
//! Owns: that split. Does not own: anything the tool does.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode};

/// The variable kept out of the build.
const TIMESTAMP: &str = "SOURCE_DATE_EPOCH";

fn main() -> ExitCode {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(env!("CARGO_MANIFEST_DIR")));
    // `cargo run` tells its program which cargo it is; a plain `cargo` otherwise.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let tool = match std::env::current_exe() {
        Ok(launcher) => launcher.with_file_name(format!("xtask{}", std::env::consts::EXE_SUFFIX)),
        Err(error) => {
            eprintln!("error: cannot find this launcher's own path (to find the tool beside it): {error}");
            return ExitCode::from(2);
        }
    };
    let mut build = Command::new(&cargo);
    build.args(["build", "--package", "xtask", "--manifest-path"]).arg(workspace.join("Cargo.toml"));
    // The tool is built in the profile and target directory this launcher was built in
    // (`target/<profile>/`, whatever `--target-dir` said), so it lands beside it.
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    if let Some(target_dir) = tool.parent().and_then(Path::parent) {
        build.arg("--target-dir").arg(target_dir);
    }
    build.env_remove(TIMESTAMP);
    match build.status() {
        Ok(status) if status.success() => {}
        Ok(status) => return ExitCode::from(status.code().map_or(2, |code| code.clamp(1, 255) as u8)),
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", cargo.to_string_lossy());
            return ExitCode::from(2);
        }
    }
    run(&tool)
}

/// Replaces this process with the tool, so signals and the exit code are the tool's own.
#[cfg(unix)]
fn run(tool: &Path) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let error = Command::new(tool).args(std::env::args_os().skip(1)).exec();
    eprintln!("error: cannot run {}: {error}", tool.display());
    ExitCode::from(2)
}

#[cfg(not(unix))]
fn run(tool: &Path) -> ExitCode {
    match Command::new(tool).args(std::env::args_os().skip(1)).status() {
        Ok(status) => ExitCode::from(status.code().map_or(2, |code| code.clamp(0, 255) as u8)),
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", tool.display());
            ExitCode::from(2)
        }
    }
}
