//! Real ELF files the corpus takes from outside this machine, fetched once with ordinary
//! clients and kept in `target/tmp/elf-real`: the libraries Pillow vendors in its manylinux
//! wheels for x86_64 and aarch64 (`pip download` from the tools venv, then `unzip`).
//! auditwheel's patchelf already edited them, so they carry the shapes only real files have:
//! a writable load holding nothing but the tables patchelf moved, relocations whose symbols
//! reach past the writable data (a 15 KB function behind a jump slot), room left behind
//! the program header table, aarch64's absolute `_DYNAMIC` and 64 KiB pages.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

/// Pinned, so every run edits the same bytes.
const PILLOW: &str = "pillow==12.2.0";

/// Each wheel's platform tag, the machine it is for, and the vendored libraries taken
/// from its `pillow.libs/` (by name prefix; auditwheel adds a hash to each name). Chosen
/// for their shapes and because each loads without its siblings.
const WHEELS: &[(&str, &str, &[&str])] = &[
    ("manylinux2014_x86_64", "x86_64", &["libsharpyuv", "libopenjp2", "libzstd"]),
    ("manylinux2014_aarch64", "aarch64", &["libsharpyuv", "libfreetype"]),
];

/// One fetched library: its corpus name (`pillow-sharpyuv-x86_64`) and where it is kept.
pub struct Fetched {
    pub name: String,
    pub path: PathBuf,
    /// Built for the machine the tests run on, so it can be loaded.
    pub native: bool,
}

/// The vendored libraries of [`WHEELS`], downloaded and unpacked on the first run.
pub fn pillow_libraries() -> Vec<Fetched> {
    let root = support::target_tmp().join("elf-real").join(PILLOW.replace("==", "-"));
    let mut fetched = Vec::new();
    for (platform, arch, prefixes) in WHEELS {
        let libs = root.join(platform);
        if !libs.join(".complete").exists() {
            unpack_wheel(platform, prefixes, &libs);
        }
        for prefix in *prefixes {
            let path = find_prefixed(&libs, prefix);
            let stem = prefix.trim_start_matches("lib");
            fetched.push(Fetched {
                name: format!("pillow-{stem}-{arch}"),
                path,
                native: *arch == std::env::consts::ARCH,
            });
        }
    }
    fetched
}

/// `pip download` of the wheel for `platform` into `libs/wheel`, then the libraries named
/// by `prefixes` unzipped flat into `libs`; `.complete` marks a finished fetch.
fn unpack_wheel(platform: &str, prefixes: &[&str], libs: &Path) {
    let wheel_dir = libs.join("wheel");
    fs_err::create_dir_all(&wheel_dir).expect("create the wheel directory");
    let python = support::tools_venv().join("bin/python");
    support::run(
        Command::new(python)
            .args(["-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"])
            .args(["--platform", platform, "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311"])
            .arg("--dest")
            .arg(&wheel_dir)
            .arg(PILLOW),
    );
    let wheel = fs_err::read_dir(&wheel_dir)
        .expect("list the downloaded wheel")
        .map(|entry| entry.expect("wheel entry").path())
        .find(|path| path.extension().is_some_and(|extension| extension == "whl"))
        .unwrap_or_else(|| panic!("pip downloaded no wheel of {PILLOW} for {platform}"));
    let patterns: Vec<String> = prefixes.iter().map(|prefix| format!("pillow.libs/{prefix}-*")).collect();
    support::run(support::tool("unzip").args(["-o", "-j", "-q"]).arg(&wheel).args(&patterns).arg("-d").arg(libs));
    fs_err::write(libs.join(".complete"), PILLOW).expect("mark the fetch complete");
}

/// The one file in `dir` named `{prefix}-<hash>.so...`.
fn find_prefixed(dir: &Path, prefix: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = fs_err::read_dir(dir)
        .expect("list fetched libraries")
        .map(|entry| entry.expect("library entry").path())
        .filter(|path| {
            let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            name.starts_with(&format!("{prefix}-")) && name.contains(".so")
        })
        .collect();
    found.sort();
    assert_eq!(found.len(), 1, "expected one {prefix}-*.so in {}: {found:?}", dir.display());
    found.remove(0)
}
