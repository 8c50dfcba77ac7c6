//! What the device-code integration tests share: running the external tools they compare
//! against (naming the Debian package when one is missing), the Python that has `msgpack`
//! and `zstandard`, and Debian's real ROCm libraries, fetched once and kept under the
//! target directory.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The Debian package of each program the tests run.
const PACKAGES: &[(&str, &str)] = &[
    ("clang++-15", "clang-15 and lld-15"),
    ("clang-offload-bundler-15", "clang-tools-15"),
    ("objcopy", "binutils"),
    ("cc", "gcc"),
    ("apt-get", "apt"),
    ("dpkg-deb", "dpkg"),
];

/// Runs `command` and returns its output, failing the test with its stderr when it fails
/// and with the package to install when the program is missing.
pub fn run(command: &mut Command) -> Output {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command.output().unwrap_or_else(|error| {
        let package = PACKAGES.iter().find(|(name, _)| *name == program).map_or("?", |(_, package)| package);
        panic!("cannot run {program} ({error}): install Debian's {package}")
    });
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A `python3` that imports `msgpack` and `zstandard`: the one on PATH, else the system's
/// (a pyenv or venv interpreter on PATH may lack Debian's modules).
pub fn python() -> &'static str {
    static PYTHON: OnceLock<&'static str> = OnceLock::new();
    PYTHON.get_or_init(|| {
        for candidate in ["python3", "/usr/bin/python3"] {
            let works = Command::new(candidate)
                .args(["-c", "import msgpack, zstandard"])
                .output()
                .is_ok_and(|output| output.status.success());
            if works {
                return candidate;
            }
        }
        panic!("no python3 with msgpack and zstandard: install Debian's python3-msgpack and python3-zstandard")
    })
}

/// The shared libraries of Debian bookworm's `librocrand1` and `librocsparse0` (real fat
/// binaries: rocSPARSE's `.hip_fatbin` is 1.3 GB), fetched with `apt-get download` (after
/// `apt-get update` when the lists are empty), unpacked with `dpkg-deb`, and kept across
/// runs under the target directory.
pub fn debian_rocm_library(name: &str) -> PathBuf {
    static UNPACKED: OnceLock<PathBuf> = OnceLock::new();
    let lib = UNPACKED.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("debian-rocm-device-code");
        let unpacked = dir.join("root");
        let lib = unpacked.join("usr/lib/x86_64-linux-gnu");
        let done = dir.join(".unpacked");
        if !done.exists() {
            std::fs::create_dir_all(&dir).expect("create the download directory");
            let packages = ["librocrand1", "librocsparse0"];
            let download = || Command::new("apt-get").arg("download").args(packages).current_dir(&dir).output();
            let mut output = download().expect("run apt-get (Debian's apt) to fetch real ROCm libraries");
            if !output.status.success() {
                run(Command::new("apt-get").args(["update", "-qq"]));
                output = download().expect("run apt-get");
            }
            assert!(
                output.status.success(),
                "apt-get download {packages:?} failed (needs Debian bookworm's archive): {}",
                String::from_utf8_lossy(&output.stderr)
            );
            for entry in std::fs::read_dir(&dir).expect("read the download directory") {
                let deb = entry.expect("entry").path();
                if deb.extension().is_some_and(|extension| extension == "deb") {
                    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked));
                    std::fs::remove_file(&deb).expect("remove the unpacked .deb");
                }
            }
            std::fs::write(&done, "").expect("mark the libraries unpacked");
        }
        lib
    });
    let path = lib.join(name);
    assert!(path.is_file(), "{} is not in Debian's packages", path.display());
    path
}
