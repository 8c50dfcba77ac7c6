//! Hostile and broken input: every bad input is built for real inside a copy of
//! the bundled example, and each test asserts the clear outcome: an error naming the file
//! and what to do, or a finding naming what was dropped; never a panic, never outside data
//! in a package, and never anything partial in `dist/`.
//!
//! Faults that need the command line (signals, two runs at once, resource limits) live in
//! `xtask/tests/cli/`.

#[path = "hostile_commit.rs"]
mod commit;
#[path = "hostile_dest.rs"]
mod dest;
#[path = "hostile_devel.rs"]
mod devel;
#[path = "hostile_disk.rs"]
mod disk;
#[path = "hostile_elf.rs"]
mod elf;
#[path = "hostile_files.rs"]
mod files;
#[path = "hostile_links.rs"]
mod links;
#[path = "hostile_merge.rs"]
mod merge;
#[path = "hostile_metadata.rs"]
mod metadata;
#[path = "hostile_names.rs"]
mod names;
#[path = "hostile_overlap.rs"]
mod overlap;
#[path = "hostile_soname.rs"]
mod soname;
#[path = "hostile_stale.rs"]
mod stale;
#[path = "hostile_stray.rs"]
mod stray;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use diagnostic::Diagnostic;
use packager::PackageConfig;

/// The bundled legacy example in a temp dir, packaged into `dist/` beside it.
pub struct Example {
    pub temp: tempfile::TempDir,
    pub artifacts: PathBuf,
}

impl Example {
    /// A fresh copy of the example, which each test may break as it likes.
    pub fn new() -> Example {
        let temp = tempfile::tempdir().expect("tempdir");
        let artifacts = temp.path().join("artifacts");
        // `cp -a` keeps the symlinks and modes the example is made of.
        crate::support::run(Command::new("cp").arg("-a").arg(pristine_example()).arg(&artifacts));
        Example { temp, artifacts }
    }

    /// The install tree of a core artifact: its files go into `rocm-sdk-core` (and devel).
    pub fn core_stage(&self) -> PathBuf {
        packager_tests::fixtures::core_stage(&self.artifacts)
    }

    pub fn dist(&self) -> PathBuf {
        self.temp.path().join("dist")
    }

    pub fn config(&self) -> PackageConfig {
        crate::support::package_config(&self.artifacts, self.temp.path())
    }

    pub fn package(&self) -> Result<packager::Report, packager::Error> {
        packager::package(&self.config(), &packager::Silent)
    }

    /// The core wheel's members, by name.
    pub fn core_wheel(&self) -> BTreeMap<String, Vec<u8>> {
        let wheel = fs_err::read_dir(self.dist())
            .expect("read dist")
            .map(|entry| entry.expect("entry").path())
            .find(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with("rocm_sdk_core-")))
            .expect("a core wheel in dist");
        zip_members(&wheel)
    }
}

/// The example, compiled once per test process (that takes seconds; a copy takes
/// milliseconds) under `target/tmp/hostile-examples/{pid}`. Directories of processes that
/// have ended are removed first.
fn pristine_example() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = crate::support::target_tmp().join("hostile-examples");
        if let Ok(entries) = fs_err::read_dir(&root) {
            for entry in entries.flatten() {
                let pid = entry.file_name().to_string_lossy().into_owned();
                if !Path::new("/proc").join(&pid).exists() {
                    let _ = fs_err::remove_dir_all(entry.path());
                }
            }
        }
        let dir = root.join(std::process::id().to_string());
        if dir.exists() {
            fs_err::remove_dir_all(&dir).expect("remove a stale example");
        }
        crate::support::write_example(&dir, false)
    })
}

/// Every member of a zip archive with its bytes.
pub fn zip_members(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut archive = zip::ZipArchive::new(fs_err::File::open(path).expect("open wheel")).expect("a valid zip");
    let mut members = BTreeMap::new();
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).expect("member");
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).expect("read member");
        members.insert(member.name().expect("UTF-8 member name").into_owned(), bytes);
    }
    members
}

/// Every member of the devel tarballs in `dist` (uncompressed `_devel.tar`), by name: a
/// file's bytes, or `-> target` for a symlink.
pub fn devel_members(dist: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for wheel in fs_err::read_dir(dist).expect("read dist").map(|entry| entry.expect("entry").path()) {
        if !wheel.file_name().is_some_and(|name| name.to_string_lossy().starts_with("rocm_sdk_devel")) {
            continue;
        }
        for (name, bytes) in zip_members(&wheel) {
            if !name.ends_with("/_devel.tar") {
                continue;
            }
            let mut archive = tar::Archive::new(bytes.as_slice());
            for entry in archive.entries().expect("tar entries") {
                let mut entry = entry.expect("tar entry");
                let path = entry.path().expect("path").to_string_lossy().into_owned();
                let mut content = Vec::new();
                if let Some(target) = entry.link_name().expect("link name") {
                    content = format!("-> {}", target.display()).into_bytes();
                } else {
                    entry.read_to_end(&mut content).expect("read tar member");
                }
                out.insert(path, content);
            }
        }
    }
    out
}

/// The files of `dist` with their bytes (the lock file aside): what a failed run must
/// leave exactly as it found it.
pub fn dist_snapshot(dist: &Path) -> BTreeMap<String, Vec<u8>> {
    let Ok(entries) = fs_err::read_dir(dist) else { return BTreeMap::new() };
    entries
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.file_name().is_some_and(|name| name != ".rocm-packager.lock"))
        .map(|path| {
            let name = path.file_name().expect("name").to_string_lossy().into_owned();
            (name, fs_err::read(&path).expect("read dist file"))
        })
        .collect()
}

/// Packages `example` once, breaks it with `corrupt`, packages again and expects a failure
/// that leaves `dist/` byte for byte as the good run left it. Returns the error.
pub fn fails_leaving_dist_intact(example: &Example, corrupt: impl FnOnce(&Example)) -> packager::Error {
    example.package().expect("the unbroken example packages");
    let before = dist_snapshot(&example.dist());
    assert!(before.keys().any(|name| name.ends_with(".whl")), "{:?}", before.keys());
    corrupt(example);
    let error = example.package().expect_err("the broken input must fail the run");
    let after = dist_snapshot(&example.dist());
    assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>(), "dist changed: {error}");
    assert!(before == after, "a file in dist changed although the run failed: {error}");
    error
}

/// `error`, its causes and its hint, as the CLI prints them.
pub fn full_text(error: &packager::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!("\n  caused by: {cause}"));
        source = cause.source();
    }
    if let Some(hint) = error.hint() {
        text.push_str(&format!("\n\nhint: {hint}"));
    }
    text
}
