//! The split-device row (SPEC §12, `package --split-device`): a real fat build — the
//! example's fat legacy build (`example --fat --kpack-runtime`) with Debian's
//! `librocsparse.so.0` (1.3 GB of code objects for six targets) added to its rocBLAS
//! artifact — packaged twice in child processes: fat, as the build is, and split per
//! target. The split's wall time is set against the fat run's (the device code is coded
//! once with zstd instead of deflate, and the libraries lose their device code), and its
//! peak memory is the child's.
//!
//! Owns: the tree (cached under the work dir), the two runs. Does not own: measuring a
//! process (`measure`), fetching Debian's library (`split`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use super::measure::{self, ProcessCost};
use crate::Output;

/// Bump when the tree's shape changes, so a cached one is made again.
const TREE_VERSION: u32 = 1;

/// What the split-device row measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SplitDeviceRun {
    pub payload_bytes: u64,
    pub fat: ProcessCost,
    pub fat_dist_bytes: u64,
    pub split: ProcessCost,
    pub split_dist_bytes: u64,
    /// The split's wall time over the fat run's.
    pub ratio: f64,
}

/// Runs the row; `library` is the fat library added to the example's build.
pub fn bench_split_device(
    work_dir: &Path,
    library: &Path,
    output: Output,
    json: bool,
) -> anyhow::Result<SplitDeviceRun> {
    let say = |text: &str| {
        if !output.quiet && !json {
            eprintln!("bench: {text}");
        }
    };
    say("the split-device row's fat build ...");
    let artifacts = fat_tree(&work_dir.join(format!("split-device-v{TREE_VERSION}")), library)?;
    let payload_bytes = measure::tree_bytes(&artifacts);
    let run_dir = work_dir.join("run-split-device");
    if run_dir.exists() {
        fs_err::remove_dir_all(&run_dir)?;
    }
    fs_err::create_dir_all(&run_dir)?;
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("xtask"));
    let package = |dest: &str, split: bool| -> anyhow::Result<(ProcessCost, u64)> {
        let mut command = Command::new(&exe);
        command
            .args(["--quiet", "package", "--version", "7.12.0.dev0", "--artifact-dir"])
            .arg(&artifacts)
            .arg("--dest-dir")
            .arg(run_dir.join(dest))
            .current_dir(&run_dir);
        if split {
            command.arg("--split-device");
        }
        let cost = measure::measure(command, &run_dir, &run_dir.join(format!("{dest}.log")))?;
        if let Some(error) = &cost.error {
            eprintln!("bench: package ({dest}) failed:\n{error}");
        }
        Ok((cost, measure::tree_bytes(&run_dir.join(dest).join("dist"))))
    };
    say("packaging it fat ...");
    let (fat, fat_dist_bytes) = package("fat", false)?;
    say("packaging it split per target (--split-device) ...");
    let (split, split_dist_bytes) = package("split", true)?;
    let ratio = split.wall_seconds / fat.wall_seconds.max(1e-9);
    fs_err::remove_dir_all(&run_dir)?;
    Ok(SplitDeviceRun { payload_bytes, fat, fat_dist_bytes, split, split_dist_bytes, ratio })
}

/// The example's fat build under `dir/artifacts` with `library` beside its rocBLAS, made
/// when missing.
fn fat_tree(dir: &Path, library: &Path) -> anyhow::Result<PathBuf> {
    let artifacts = dir.join("artifacts");
    let stamp = dir.join("ready");
    if stamp.exists() && fs_err::read_to_string(&stamp)? == library.display().to_string() {
        return Ok(artifacts);
    }
    if dir.exists() {
        fs_err::remove_dir_all(dir)?;
    }
    fs_err::create_dir_all(dir)?;
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("xtask"));
    let output = Command::new(&exe)
        .args(["--quiet", "example", "--fat", "--kpack-runtime", "--out"])
        .arg(&artifacts)
        .output()
        .context("running example --fat")?;
    anyhow::ensure!(output.status.success(), "example --fat failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let rocblas = find_file(&artifacts, "librocblas.so.5")?.context("the fat example has no librocblas.so.5")?;
    let target = rocblas.with_file_name("librocsparse.so.0");
    // A hard link where the file system allows, so the 1.3 GB library is not copied.
    if fs_err::hard_link(library, &target).is_err() {
        fs_err::copy(library, &target)?;
    }
    fs_err::write(&stamp, library.display().to_string())?;
    Ok(artifacts)
}

/// The first file named `name` under `dir`, depth first in name order.
fn find_file(dir: &Path, name: &str) -> anyhow::Result<Option<PathBuf>> {
    let mut entries: Vec<_> = fs_err::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            if let Some(found) = find_file(&path, name)? {
                return Ok(Some(found));
            }
        } else if entry.file_name() == name {
            return Ok(Some(path));
        }
    }
    Ok(None)
}
