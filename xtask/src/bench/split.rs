//! The split row (SPEC §12): a fat wheel holding a real fat library (Debian's
//! `librocsparse.so.0`: 1.3 GB of code objects for six GPU targets, fetched once with
//! `apt-get download`, or `--split-library`) split by `cargo xtask split` in a child
//! process. Its time is set against what it cannot avoid: inflating the input's members,
//! and zstd at level 3 of every code object, on every core (the floor); its peak memory
//! is the child's.
//!
//! Owns: the input wheel (cached under the work dir), the floor, the measurements. Does
//! not own: measuring a process (`measure`).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use rayon::prelude::*;

use super::floor::process_cpu_seconds;
use super::measure::{self, ProcessCost};
use crate::Output;

/// Bump when the input's shape changes, so cached inputs are made again.
const INPUT_VERSION: u32 = 1;
/// The fat library of Debian bookworm's `librocsparse0` (ROCm 5.3).
const DEBIAN_PACKAGE: &str = "librocsparse0";
const DEBIAN_LIBRARY: &str = "usr/lib/x86_64-linux-gnu/librocsparse.so.0.1";
/// rocm-kpack's default zstd level, which `split` uses too.
const ZSTD_LEVEL: i32 = 3;

/// What the split row measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SplitRun {
    pub library: PathBuf,
    pub wheel_bytes: u64,
    pub library_bytes: u64,
    pub code_objects: u64,
    pub code_object_bytes: u64,
    pub split: ProcessCost,
    /// The wheels written: the host's bytes and all device wheels' bytes.
    pub host_bytes: u64,
    pub device_bytes: u64,
    /// Inflating every member of the input wheel once.
    pub inflate_seconds: f64,
    /// zstd level 3 of every code object, one frame each, on every core.
    pub zstd_seconds: f64,
    pub zstd_cpu_seconds: f64,
    /// The split's wall time over inflate + zstd.
    pub ratio: f64,
}

/// Runs the row; `work_dir` caches the input; `library` replaces Debian's.
pub fn bench_split(work_dir: &Path, library: Option<&Path>, output: Output, json: bool) -> anyhow::Result<SplitRun> {
    let say = |text: &str| {
        if !output.quiet && !json {
            eprintln!("bench: {text}");
        }
    };
    say("the split row's fat wheel ...");
    let library = match library {
        Some(path) => path.to_path_buf(),
        None => debian_library(&work_dir.join("debian"))?,
    };
    let input = work_dir.join(format!("split-v{INPUT_VERSION}"));
    let wheel = prepare(&input, &library)?;
    let run_dir = work_dir.join("run-split");
    if run_dir.exists() {
        fs_err::remove_dir_all(&run_dir)?;
    }
    fs_err::create_dir_all(&run_dir)?;
    say("split floor: inflating the wheel, zstd of every code object ...");
    let inflate_seconds = inflate_all(&wheel)?;
    let (code_objects, code_object_bytes, zstd_seconds, zstd_cpu_seconds) = zstd_floor(&library)?;
    say("splitting ...");
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("xtask"));
    let mut command = Command::new(exe);
    command.args(["--quiet", "split"]).arg(&wheel).arg("--dest-dir").arg(run_dir.join("ours"));
    let split = measure::measure(command, &run_dir, &run_dir.join("split.log"))?;
    if let Some(error) = &split.error {
        eprintln!("bench: split failed:\n{error}");
    }
    let (mut host_bytes, mut device_bytes) = (0, 0);
    if let Ok(entries) = fs_err::read_dir(run_dir.join("ours/dist")) {
        for entry in entries.flatten() {
            let len = entry.metadata().map(|meta| meta.len()).unwrap_or_default();
            match entry.file_name().to_string_lossy().contains("_device_") {
                true => device_bytes += len,
                false => host_bytes += len,
            }
        }
    }
    let ratio = split.wall_seconds / (inflate_seconds + zstd_seconds).max(1e-9);
    fs_err::remove_dir_all(&run_dir)?;
    Ok(SplitRun {
        wheel_bytes: fs_err::metadata(&wheel)?.len(),
        library_bytes: fs_err::metadata(&library)?.len(),
        library,
        code_objects,
        code_object_bytes,
        split,
        host_bytes,
        device_bytes,
        inflate_seconds,
        zstd_seconds,
        zstd_cpu_seconds,
        ratio,
    })
}

/// Debian's fat rocSPARSE, downloaded and unpacked under `dir` once.
pub(super) fn debian_library(dir: &Path) -> anyhow::Result<PathBuf> {
    let library = dir.join("root").join(DEBIAN_LIBRARY);
    if library.is_file() {
        return Ok(library);
    }
    fs_err::create_dir_all(dir)?;
    let download = || Command::new("apt-get").args(["download", DEBIAN_PACKAGE]).current_dir(dir).output();
    let mut output = download().context("apt-get download (a Debian or Ubuntu machine is needed)")?;
    if !output.status.success() {
        Command::new("apt-get").args(["update", "-qq"]).status().context("apt-get update")?;
        output = download().context("apt-get download")?;
    }
    anyhow::ensure!(
        output.status.success(),
        "apt-get download {DEBIAN_PACKAGE} failed (needs Debian bookworm's archive; or pass --split-library): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for entry in fs_err::read_dir(dir)? {
        let deb = entry?.path();
        if deb.extension().is_some_and(|extension| extension == "deb") {
            let status = Command::new("dpkg-deb").arg("-x").arg(&deb).arg(dir.join("root")).status()?;
            anyhow::ensure!(status.success(), "dpkg-deb -x {} failed", deb.display());
        }
    }
    anyhow::ensure!(library.is_file(), "{} is not in {DEBIAN_PACKAGE}", library.display());
    Ok(library)
}

/// The input wheel: the library under `fat/lib/`, written by the archive writer.
fn prepare(dir: &Path, library: &Path) -> anyhow::Result<PathBuf> {
    use archive_write::{Member, MemberData};
    let stamp = dir.join("ready");
    let wheel = dir.join("fat-1.0-py3-none-manylinux_2_28_x86_64.whl");
    if stamp.exists() && fs_err::read_to_string(&stamp)? == library.display().to_string() {
        return Ok(wheel);
    }
    if dir.exists() {
        fs_err::remove_dir_all(dir)?;
    }
    let len = fs_err::metadata(library)?.len();
    let members = vec![
        Member {
            name: "fat/__init__.py".into(),
            data: MemberData::Bytes(Arc::new(b"VALUE = 1\n".to_vec())),
            executable: false,
        },
        Member {
            name: "fat/lib/librocsparse.so.0".into(),
            data: packager::output::payload::file(Arc::from(library), len, None),
            executable: true,
        },
    ];
    super::repair::write_input_wheel(&wheel, "fat", "manylinux_2_28_x86_64", members, 6)?;
    fs_err::write(&stamp, library.display().to_string())?;
    Ok(wheel)
}

/// Seconds to inflate every member of `wheel` (into a sink).
fn inflate_all(wheel: &Path) -> anyhow::Result<f64> {
    // Read once first, so the floor and the split both find the wheel in the page cache.
    std::io::copy(&mut fs_err::File::open(wheel)?, &mut std::io::sink())?;
    let started = Instant::now();
    let mut archive = zip::ZipArchive::new(fs_err::File::open(wheel)?)?;
    let mut buffer = vec![0u8; 1 << 20];
    for index in 0..archive.len() {
        let mut member = archive.by_index(index)?;
        while member.read(&mut buffer)? > 0 {}
    }
    Ok(started.elapsed().as_secs_f64())
}

/// zstd at [`ZSTD_LEVEL`] of each code object of `library`, one frame each on every core:
/// (code objects, their bytes, wall seconds, CPU seconds).
fn zstd_floor(library: &Path) -> anyhow::Result<(u64, u64, f64, f64)> {
    let file = fs_err::File::open(library)?;
    let fat = device_code::bundle::FatBinary::read(file.file(), library)?
        .with_context(|| format!("{} has no .hip_fatbin", library.display()))?;
    let code_objects: Vec<_> = fat.bundles().iter().flat_map(|bundle| bundle.entries.iter()).collect();
    let bytes: u64 = code_objects.iter().map(|code_object| code_object.size).sum();
    let started = Instant::now();
    let cpu_before = process_cpu_seconds();
    code_objects.par_iter().try_for_each(|code_object| -> anyhow::Result<()> {
        let mut data = Vec::with_capacity(usize::try_from(code_object.size).unwrap_or_default());
        fat.copy_code_object(code_object, &mut data)?;
        zstd::bulk::compress(&data, ZSTD_LEVEL)?;
        Ok(())
    })?;
    let wall = started.elapsed().as_secs_f64();
    Ok((code_objects.len() as u64, bytes, wall, process_cpu_seconds() - cpu_before))
}
