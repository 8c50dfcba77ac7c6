//! The command line under faults: signals mid-run, two runs into one
//! destination, a bad `--version`, and a tree of 200,000 files under a descriptor limit.
//! Each test runs the real `xtask` binary as a child process on a copy of the example.

#[path = "../common/mod.rs"]
mod common;
mod concurrency;
mod interrupt;
mod many_files;
mod version;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

/// The `xtask` binary cargo built for these tests.
pub fn xtask() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
}

/// `xtask package` of `artifacts` with its archives in `dist`, quiet, with a fixed version.
/// `dist` is `{dest-dir}/dist`, where the packager puts archives (SPEC §2).
pub fn package_command(artifacts: &Path, dist: &Path) -> Command {
    assert_eq!(dist.file_name().and_then(|name| name.to_str()), Some("dist"), "{}", dist.display());
    let dest = dist.parent().expect("a dist dir has a parent");
    let mut command = xtask();
    command.args(["package", "--quiet", "--version", "7.12.0.dev0", "--artifact-dir"]).arg(artifacts);
    command.arg("--dest-dir").arg(dest);
    command
}

/// Runs `command` to the end and returns its output.
pub fn output(command: &mut Command) -> Output {
    command.output().unwrap_or_else(|error| panic!("cannot run {command:?}: {error}"))
}

pub fn describe(output: &Output) -> String {
    format!(
        "{} (signal {:?})\nstdout:\n{}\nstderr:\n{}",
        output.status,
        output.status.signal(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The example, generated once per test process under `target/tmp/cli-examples/{pid}`
/// (directories of ended processes are removed); each test copies it.
fn pristine_example() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = common::per_process_dir("cli-examples");
        let result = output(xtask().args(["example", "--quiet", "--out"]).arg(&dir));
        assert!(result.status.success(), "xtask example: {}", describe(&result));
        dir
    })
}

/// A copy of the example at `dir/artifacts`.
pub fn copy_example(dir: &Path) -> PathBuf {
    let artifacts = dir.join("artifacts");
    let result = output(Command::new("cp").arg("-a").arg(pristine_example()).arg(&artifacts));
    assert!(result.status.success(), "cp: {}", describe(&result));
    artifacts
}

/// The install tree of a core artifact.
pub fn core_stage(artifacts: &Path) -> PathBuf {
    artifacts.join("core-runtime_lib_generic/core/ROCR-Runtime/stage")
}

/// `len` bytes that do not compress, in the core artifact: the core wheel then takes a
/// while to write, long enough to be interrupted.
pub fn add_noise(artifacts: &Path, len: usize) {
    let dir = core_stage(artifacts).join("share/noise");
    fs_err::create_dir_all(&dir).expect("mkdir");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut noise = Vec::with_capacity(len);
    while noise.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        noise.extend_from_slice(&state.to_le_bytes());
    }
    fs_err::write(dir.join("noise.bin"), noise).expect("write noise");
}

/// Names in `dist` that are writer temp files.
pub fn temp_files(dist: &Path) -> Vec<String> {
    let Ok(entries) = fs_err::read_dir(dist) else { return Vec::new() };
    entries
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp-"))
        .collect()
}

/// Waits (up to two minutes) until a writer temp file appears in `dist`, i.e. the run is
/// in the middle of writing an output.
pub fn wait_for_temp_file(dist: &Path, child: &mut std::process::Child) {
    for _ in 0..24_000 {
        if !temp_files(dist).is_empty() {
            return;
        }
        if let Some(status) = child.try_wait().expect("poll child") {
            panic!("the run ended ({status}) before it wrote anything");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("no temp file appeared in {}", dist.display());
}

/// Checks every archive in `dist` with Python's zipfile/tarfile (what pip uses) and
/// returns their names; fails on a truncated or corrupt one.
pub fn check_archives(dist: &Path) -> Vec<String> {
    if !dist.exists() {
        return Vec::new();
    }
    const CHECK: &str = "import sys, os, zipfile, tarfile\n\
        names = []\n\
        for name in sorted(os.listdir(sys.argv[1])):\n\
        \x20   path = os.path.join(sys.argv[1], name)\n\
        \x20   if name.endswith('.whl'):\n\
        \x20       with zipfile.ZipFile(path) as archive:\n\
        \x20           bad = archive.testzip()\n\
        \x20           assert bad is None, (name, bad)\n\
        \x20   elif name.endswith('.tar.gz'):\n\
        \x20       with tarfile.open(path) as archive:\n\
        \x20           for member in archive:\n\
        \x20               if member.isfile():\n\
        \x20                   archive.extractfile(member).read()\n\
        \x20   elif not name.startswith('.'):\n\
        \x20       raise SystemExit('unexpected file ' + name)\n\
        \x20   else:\n\
        \x20       continue\n\
        \x20   names.append(name)\n\
        print('\\n'.join(names))\n";
    let result = output(Command::new("python3").args(["-c", CHECK]).arg(dist));
    assert!(result.status.success(), "archives in {} are not all valid: {}", dist.display(), describe(&result));
    String::from_utf8_lossy(&result.stdout).lines().filter(|line| !line.is_empty()).map(str::to_owned).collect()
}
