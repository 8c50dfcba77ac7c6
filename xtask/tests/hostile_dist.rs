//! The previous `dist/` is input (SPEC §8, CONTRACT "Reliability"): an old wheel whose
//! central directory or RECORD is far larger than the new wheel can use is not read (one
//! warning), so a rerun and `verify --dist` stay within 256 MiB whatever it holds; an old
//! wheel or lock file that is a FIFO never blocks a run; a symlink at a tree's name or a
//! dangling destination is refused in words; `verify --dist` summarises a package with
//! many findings. Peak memory is the child's own `ru_maxrss` (memory, not time).

mod common;

use std::io::{BufWriter, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{example, xtask};

/// The memory bound of a rerun and of `verify --dist`, whatever `dist/` holds.
const MEMORY_BOUND_KIB: i64 = 256 << 10;

/// What a child did: exit code, stderr and stdout, and its peak resident memory in KiB.
struct Measured {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    max_rss_kib: i64,
}

/// Runs `command` to completion and reads its own peak memory from `wait4`: the getrusage
/// of all children would mix in other tests' children.
// The child is reaped by `wait4` below, which std's `Child` does not know of.
#[allow(clippy::zombie_processes)]
fn measured(command: &mut Command, scratch: &Path) -> Measured {
    let (out, err) = (scratch.join("stdout"), scratch.join("stderr"));
    let child = command
        .stdin(Stdio::null())
        .stdout(fs_err::File::create(&out).expect("stdout file").into_file())
        .stderr(fs_err::File::create(&err).expect("stderr file").into_file())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, not yet waited for; status and usage are valid pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let status = std::process::ExitStatus::from_raw(status);
    Measured {
        code: status.code(),
        stdout: fs_err::read_to_string(&out).expect("stdout"),
        stderr: fs_err::read_to_string(&err).expect("stderr"),
        max_rss_kib: usage.ru_maxrss,
    }
}

fn package(dir: &Path, artifacts: &Path, dest: &Path) -> Command {
    let mut command = xtask(dir);
    command.args(["package", "--version", "7.12.0.dev0", "--artifact-dir"]).arg(artifacts).arg("--dest-dir").arg(dest);
    command
}

/// The example packaged once into `dir/dest`; returns (artifacts, dest, the core wheel).
fn packaged(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let artifacts = example(dir);
    let dest = dir.join("dest");
    common::run(&mut package(dir, &artifacts, &dest));
    let dist = dest.join("dist");
    let core = common::visible_files(&dist)
        .into_iter()
        .find(|name| name.starts_with("rocm_sdk_core-") && name.ends_with(".whl"))
        .expect("a core wheel");
    (artifacts, dest, dist.join(core))
}

fn u16le(value: u64) -> [u8; 2] {
    u16::try_from(value.min(0xFFFF)).expect("fits").to_le_bytes()
}

fn u32le(value: u64) -> [u8; 4] {
    u32::try_from(value.min(0xFFFF_FFFF)).expect("fits").to_le_bytes()
}

/// One stored member's local header and bytes.
fn local(out: &mut dyn Write, name: &str, method: u16, crc: u32, coded: &[u8], size: u64) {
    out.write_all(&0x0403_4b50u32.to_le_bytes()).expect("write");
    out.write_all(&[20, 0, 0, 0]).expect("write");
    out.write_all(&method.to_le_bytes()).expect("write");
    out.write_all(&[0, 0, 0x21, 0]).expect("write");
    out.write_all(&crc.to_le_bytes()).expect("write");
    out.write_all(&u32le(coded.len() as u64)).expect("write");
    out.write_all(&u32le(size)).expect("write");
    out.write_all(&u16le(name.len() as u64)).expect("write");
    out.write_all(&[0, 0]).expect("write");
    out.write_all(name.as_bytes()).expect("write");
    out.write_all(coded).expect("write");
}

/// One central directory entry (46 bytes and the name).
#[allow(clippy::too_many_arguments)]
fn central(out: &mut dyn Write, name: &[u8], method: u16, crc: u32, coded: u64, size: u64, offset: u64) {
    out.write_all(&0x0201_4b50u32.to_le_bytes()).expect("write");
    out.write_all(&[20, 3, 20, 0, 0, 0]).expect("write");
    out.write_all(&method.to_le_bytes()).expect("write");
    out.write_all(&[0, 0, 0x21, 0]).expect("write");
    out.write_all(&crc.to_le_bytes()).expect("write");
    out.write_all(&u32le(coded)).expect("write");
    out.write_all(&u32le(size)).expect("write");
    out.write_all(&u16le(name.len() as u64)).expect("write");
    out.write_all(&[0; 8]).expect("write");
    out.write_all(&0o100_644u32.wrapping_shl(16).to_le_bytes()).expect("write");
    out.write_all(&u32le(offset)).expect("write");
    out.write_all(name).expect("write");
}

/// The end records: ZIP64 end record and locator, then the classic one pointing at them.
fn end(out: &mut dyn Write, entries: u64, central_len: u64, central_start: u64) {
    let zip64_end_at = central_start + central_len;
    out.write_all(&0x0606_4b50u32.to_le_bytes()).expect("write");
    out.write_all(&44u64.to_le_bytes()).expect("write");
    out.write_all(&[45, 3, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]).expect("write");
    for value in [entries, entries, central_len, central_start] {
        out.write_all(&value.to_le_bytes()).expect("write");
    }
    out.write_all(&0x0706_4b50u32.to_le_bytes()).expect("write");
    out.write_all(&0u32.to_le_bytes()).expect("write");
    out.write_all(&zip64_end_at.to_le_bytes()).expect("write");
    out.write_all(&1u32.to_le_bytes()).expect("write");
    out.write_all(&0x0605_4b50u32.to_le_bytes()).expect("write");
    out.write_all(&[0; 4]).expect("write");
    out.write_all(&[0xFF; 4]).expect("write");
    out.write_all(&[0xFF; 8]).expect("write");
    out.write_all(&[0, 0]).expect("write");
}

/// A zip whose central directory lists `entries` members (all naming one stored file):
/// about 60 bytes each on disk, far more once a reader keeps each as a record.
fn huge_central_directory(path: &Path, entries: u64) {
    let mut out = BufWriter::new(fs_err::File::create(path).expect("create"));
    let crc = 0x8BE6_B5CB; // CRC-32 of "x"
    local(&mut out, "x", 0, crc, b"x", 1);
    let central_start = 30 + 1 + 1;
    let mut central_len = 0;
    for index in 0..entries {
        let name = format!("m/{index:010}");
        central(&mut out, name.as_bytes(), 0, crc, 1, 1, 0);
        central_len += 46 + name.len() as u64;
    }
    end(&mut out, entries, central_len, central_start);
    out.flush().expect("flush");
}

/// A zip of one member, `record`, deflated, that inflates to `size` bytes.
fn inflating_record(path: &Path, record: &str, size: u64) {
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut crc = flate2::Crc::new();
    let block = vec![b'a'; 1 << 20];
    for _ in 0..size / block.len() as u64 {
        encoder.write_all(&block).expect("deflate");
        crc.update(&block);
    }
    let coded = encoder.finish().expect("deflate");
    let mut out = BufWriter::new(fs_err::File::create(path).expect("create"));
    local(&mut out, record, 8, crc.sum(), &coded, size);
    let central_start = 30 + record.len() as u64 + coded.len() as u64;
    central(&mut out, record.as_bytes(), 8, crc.sum(), coded.len() as u64, size, 0);
    end(&mut out, 1, 46 + record.len() as u64, central_start);
    out.flush().expect("flush");
}

/// `core-7.12.0.dev0` of `core-7.12.0.dev0-py3-none-linux_x86_64.whl`.
fn dist_info_record(wheel: &Path) -> String {
    let name = wheel.file_name().expect("name").to_string_lossy().into_owned();
    let mut parts = name.splitn(3, '-');
    let (dist, version) = (parts.next().expect("name"), parts.next().expect("version"));
    format!("{dist}-{version}.dist-info/RECORD")
}

/// Reruns over the hostile old wheel, then verifies a dist holding only it; both succeed
/// or fail in words, stay under the memory bound, and say so in one line.
fn rerun_and_verify_within_bound(dir: &Path, artifacts: &Path, dest: &Path, hostile: &Path, what: &str) {
    let rerun = measured(&mut package(dir, artifacts, dest), dir);
    assert_eq!(rerun.code, Some(0), "{what}: {}", rerun.stderr);
    let warnings: Vec<&str> = rerun.stderr.lines().filter(|line| line.contains("not reusing")).collect();
    assert_eq!(warnings.len(), 1, "{what}: one warning: {}", rerun.stderr);
    assert!(warnings[0].contains("it is not read"), "{what}: {}", warnings[0]);
    eprintln!("{what}: rerun peak RSS {} KiB", rerun.max_rss_kib);
    assert!(rerun.max_rss_kib < MEMORY_BOUND_KIB, "{what}: rerun took {} KiB", rerun.max_rss_kib);

    let gate = dir.join("gate");
    fs_err::create_dir_all(&gate).expect("mkdir");
    fs_err::rename(hostile, gate.join(hostile.file_name().expect("name"))).expect("move");
    let verify = measured(xtask(dir).args(["verify", "--dist"]).arg(&gate), dir);
    eprintln!("{what}: verify --dist peak RSS {} KiB", verify.max_rss_kib);
    assert!(verify.max_rss_kib < MEMORY_BOUND_KIB, "{what}: verify took {} KiB", verify.max_rss_kib);
    assert!(!verify.stderr.contains("panicked"), "{what}: {}", verify.stderr);
    assert!(verify.stdout.lines().count() < 40, "{what}: a summary, not a line a member:\n{}", verify.stdout);
    fs_err::remove_dir_all(&gate).expect("rm");
}

#[test]
fn an_old_wheel_with_a_huge_central_directory_is_not_read() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (artifacts, dest, core) = packaged(temp.path());
    // Two million entries: about 120 MB of central directory, gigabytes once parsed.
    let hostile = temp.path().join("hostile.whl");
    huge_central_directory(&hostile, 2_000_000);
    fs_err::copy(&hostile, &core).expect("copy");
    rerun_and_verify_within_bound(temp.path(), &artifacts, &dest, &hostile, "huge central directory");
}

#[test]
fn an_old_wheel_whose_record_inflates_to_hundreds_of_megabytes_is_not_read() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (artifacts, dest, core) = packaged(temp.path());
    let hostile = temp.path().join("hostile.whl");
    inflating_record(&hostile, &dist_info_record(&core), 200 << 20);
    fs_err::copy(&hostile, &core).expect("copy");
    rerun_and_verify_within_bound(temp.path(), &artifacts, &dest, &hostile, "inflating RECORD");
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL");
    // SAFETY: a valid NUL-terminated path; mkfifo touches no memory of ours.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0, "{}", std::io::Error::last_os_error());
}

/// Runs `command` with a deadline: a run that blocks is killed and fails the test, never
/// hangs the suite.
fn within_a_minute(command: &mut Command) -> std::process::Output {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    for _ in 0..600 {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().expect("kill");
    panic!("{command:?} blocked");
}

#[test]
fn a_fifo_as_old_wheel_or_lock_file_never_blocks_a_run() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (artifacts, dest, core) = packaged(temp.path());
    // An old wheel that is a FIFO, and one that is a symlink to a FIFO.
    fs_err::remove_file(&core).expect("rm");
    mkfifo(&core);
    let rerun = within_a_minute(&mut package(temp.path(), &artifacts, &dest));
    let stderr = String::from_utf8_lossy(&rerun.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(rerun.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is a FIFO, which a run never replaces or writes through"), "{stderr}");
    let fifo = temp.path().join("fifo");
    mkfifo(&fifo);
    let _ = fs_err::remove_file(&core);
    std::os::unix::fs::symlink(&fifo, &core).expect("symlink");
    let rerun = within_a_minute(&mut package(temp.path(), &artifacts, &dest));
    let stderr = String::from_utf8_lossy(&rerun.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(rerun.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is a symlink, which a run never replaces or writes through"), "{stderr}");
    // The lock file a FIFO: refused in words, at once.
    let lock = dest.join(".rocm-packager.lock");
    let _ = fs_err::remove_file(&lock);
    mkfifo(&lock);
    let locked = within_a_minute(&mut package(temp.path(), &artifacts, &dest));
    let stderr = String::from_utf8_lossy(&locked.stderr);
    assert_eq!(locked.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is a FIFO, not a regular file"), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
    // verify --dist over a FIFO named like a wheel: reported, not waited on.
    let gate = temp.path().join("gate");
    fs_err::create_dir_all(&gate).expect("mkdir");
    mkfifo(&gate.join("x-1.0-py3-none-any.whl"));
    let verify = within_a_minute(xtask(temp.path()).args(["verify", "--dist"]).arg(&gate));
    assert_eq!(verify.status.code(), Some(1), "{}", String::from_utf8_lossy(&verify.stderr));
    assert!(String::from_utf8_lossy(&verify.stdout).contains("is a FIFO"));
}

#[test]
fn a_symlink_at_a_tree_name_is_refused_and_not_written_through() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = example(temp.path());
    let dest = temp.path().join("trees");
    let elsewhere = temp.path().join("elsewhere");
    fs_err::create_dir_all(&elsewhere).expect("mkdir");
    fs_err::create_dir_all(&dest).expect("mkdir");
    let link = dest.join("rocm_sdk_core-7.12.0.dev0");
    std::os::unix::fs::symlink(&elsewhere, &link).expect("symlink");
    let out = common::output(package(temp.path(), &artifacts, &dest).arg("--no-build-packages"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&link.display().to_string()) && stderr.contains("symlink"), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
    assert!(fs_err::read_dir(&elsewhere).expect("ls").next().is_none(), "nothing written through the link");
}

#[test]
fn a_dangling_destination_a_symlinked_lock_and_an_uncreatable_destination_say_so_in_words() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = example(temp.path());
    let dangling = temp.path().join("dangling");
    std::os::unix::fs::symlink(temp.path().join("gone"), &dangling).expect("symlink");
    let out = common::output(&mut package(temp.path(), &artifacts, &dangling));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("which does not exist") && stderr.contains("hint:"), "{stderr}");
    assert!(!stderr.contains("os error 17"), "{stderr}");
    // A symlinked lock file: said in words, not "Too many levels of symbolic links".
    let dest = temp.path().join("dest");
    fs_err::create_dir_all(&dest).expect("mkdir");
    std::os::unix::fs::symlink(temp.path().join("elsewhere.lock"), dest.join(".rocm-packager.lock")).expect("symlink");
    let out = common::output(&mut package(temp.path(), &artifacts, &dest));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is a symlink, not a regular file") && stderr.contains("hint:"), "{stderr}");
    assert!(!stderr.contains("symbolic links"), "{stderr}");
    // Under /proc nothing can be created: the error says what it was doing, and a hint.
    let out = common::output(&mut package(temp.path(), &artifacts, Path::new("/proc/rocm-packager-x")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot create") && stderr.contains("/proc/rocm-packager-x"), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
}
