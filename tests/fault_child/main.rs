//! The helper program the integration tests spawn when a write must happen in a process of
//! its own: one whose peak memory is measured alone, one whose file size limit stands in
//! for a full disk, one a test kills mid-run. `fault-child JOB DIR` does JOB in DIR and
//! prints what its test reads (`PEAK …`, `CHILD-OK`); a failed check panics, which its
//! test sees as the program's failure.
//!
//! A program, not a `#[test]` of the test binary that returns at once unless a variable is
//! set: such a test passes in every run without testing anything.

use std::path::{Path, PathBuf};

use packager::progress::Silent;
use packager::write::{write_wheel, WheelRoot, WheelSpec, WriteError};
use packager_tests::fixtures::{add_noise, names_but_the_lock, noise, package_config, write_example};
use packager_tests::wheels::{bytes, file, file_name, metadata, options};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [job, dir] = args.as_slice() else {
        panic!("usage: fault-child JOB DIR, JOB one of zip64, wheel-past-size-limit, package-past-size-limit, trees")
    };
    let dir = PathBuf::from(dir);
    match job.as_str() {
        "zip64" => zip64(&dir),
        "wheel-past-size-limit" => wheel_past_size_limit(&dir),
        "package-past-size-limit" => package_past_size_limit(&dir),
        "trees" => trees(&dir),
        other => panic!("unknown job {other:?}"),
    }
}

/// A 5 GiB sparse member written into `dest/dist`, then this process's peak RSS (SPEC §5:
/// the writer's memory does not grow with a member).
fn zip64(dest: &Path) {
    const SIZE: u64 = 5 << 30;
    let sparse = dest.join("sparse.bin");
    fs_err::File::create(&sparse).expect("create").set_len(SIZE).expect("set_len");
    let spec = WheelSpec {
        file_name: file_name("big"),
        metadata: metadata("big"),
        generator: packager::GENERATOR,
        root: WheelRoot::Platlib,
        variant_json: None,
        entry_points: Vec::new(),
        members: vec![
            bytes("big/__init__.py", ""),
            file("big/sparse.bin", &sparse, false),
            bytes("big/z.txt", "after\n"),
        ],
        inventory: None,
    };
    write_wheel(&dest.join("dist"), &spec, &options(), &Silent).expect("write wheel");
    fs_err::remove_file(&sparse).expect("remove sparse input");
    let status = fs_err::read_to_string("/proc/self/status").expect("read status");
    let hwm = status.lines().find(|line| line.starts_with("VmHWM:")).expect("VmHWM line");
    println!("PEAK {}", hwm.split_whitespace().nth(1).expect("kB value"));
}

/// No file this process writes may pass 1 MiB, as if the disk were full. Called before
/// anything starts a thread.
fn limit_file_size() {
    // SAFETY: plain libc calls in a process that has not started a thread yet.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit { rlim_cur: 1 << 20, rlim_max: libc::RLIM_INFINITY };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
}

/// A 4 MiB wheel that does not compress, written past a 1 MiB file size limit: the write
/// fails midway naming the destination, and nothing is left in it.
fn wheel_past_size_limit(dest: &Path) {
    let noise_file = dest.join("noise.bin");
    fs_err::write(&noise_file, noise(4 << 20)).expect("write noise");
    let mut spec = WheelSpec {
        file_name: file_name("demo-pkg"),
        metadata: metadata("demo-pkg"),
        generator: packager::GENERATOR,
        root: WheelRoot::Platlib,
        variant_json: None,
        entry_points: Vec::new(),
        members: vec![bytes("demo_pkg/__init__.py", "VALUE = 42\n")],
        inventory: None,
    };
    spec.members.push(file("demo_pkg/noise.bin", &noise_file, false));
    let dist = dest.join("dist");
    fs_err::create_dir(&dist).expect("mkdir");
    limit_file_size();
    let error = write_wheel(&dist, &spec, &options(), &Silent).expect_err("must fail");
    assert!(matches!(&error, WriteError::Write { path, .. } if path.starts_with(&dist)), "{error:?}");
    assert_eq!(names_but_the_lock(&dist), Vec::<String>::new());
    println!("CHILD-OK");
}

/// The bundled example with a 4 MiB core wheel, packaged past a 1 MiB file size limit: the
/// run fails midway naming the output directory and the system's reason, and leaves
/// nothing there.
fn package_past_size_limit(dir: &Path) {
    let artifacts = write_example(dir, false);
    add_noise(&artifacts, 4 << 20);
    let config = package_config(&artifacts, &dir.join("dest"));
    limit_file_size();
    let error = packager::package(&config, &Silent).expect_err("the size limit fails the run");
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(&format!("\n  caused by: {cause}"));
        source = cause.source();
    }
    assert!(text.contains(&config.output_dir().display().to_string()), "{text}");
    assert!(text.contains("File too large"), "{text}");
    assert_eq!(names_but_the_lock(&config.output_dir()), Vec::<String>::new(), "{text}");
    println!("CHILD-OK");
}

/// One `--no-build-packages` run of `dirs/artifacts` into `dirs/trees`.
fn trees(dirs: &Path) {
    let mut config = package_config(&dirs.join("artifacts"), &dirs.join("trees"));
    config.output = packager::config::OutputMode::Trees;
    packager::package(&config, &Silent).expect("the child's run");
}
