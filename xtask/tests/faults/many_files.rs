//! An artifacts tree of 200,000 small files packages within bounded memory (peak RSS under
//! 1 GiB) and with at most 256 open file descriptors.

use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Instant;

use super::{copy_example, core_stage, package_command};

const N_DIRS: usize = 200;
const FILES_PER_DIR: usize = 1000;

#[test]
fn two_hundred_thousand_files_in_bounded_memory_and_descriptors() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = copy_example(temp.path());
    let headers = core_stage(&artifacts).join("include/x");
    let started = Instant::now();
    // Hard links of a few hundred distinct headers: each path is its own file to the
    // packager, but creating (and removing) a link costs one syscall and no data block,
    // so the tree takes seconds to make even on a busy disk.
    let sources = temp.path().join("sources");
    fs_err::create_dir_all(&sources).expect("mkdir");
    for dir in 0..N_DIRS {
        let source = sources.join(format!("h{dir:03}.h"));
        fs_err::write(&source, format!("#define H{dir} {dir}\n")).expect("write");
        let dir_path = headers.join(format!("{dir:03}"));
        fs_err::create_dir_all(&dir_path).expect("mkdir");
        for file in 0..FILES_PER_DIR {
            let n = dir * FILES_PER_DIR + file;
            fs_err::hard_link(&source, dir_path.join(format!("h{n:06}.h"))).expect("link");
        }
    }
    let generated = started.elapsed();

    let dist = temp.path().join("dist");
    let log = temp.path().join("stderr.txt");
    let mut command = package_command(&artifacts, &dist);
    command.stdout(Stdio::null()).stderr(fs_err::File::create(&log).expect("log").into_parts().0);
    // SAFETY: setrlimit is async-signal-safe; the closure allocates nothing.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 256, rlim_max: 256 };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    // Reaped by wait4 below, which Child::wait cannot replace.
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().expect("spawn xtask");
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    let mut status: libc::c_int = 0;
    // SAFETY: zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // wait4, not Child::wait: it reports this child's own peak RSS.
    // SAFETY: `status` and `usage` are valid for writes; `pid` is our child.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let packaged = started.elapsed();
    let stderr = fs_err::read_to_string(&log).expect("read log");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "status {status:#x}:\n{stderr}");

    // ru_maxrss is in KiB on Linux.
    let peak_mib = usage.ru_maxrss / 1024;
    println!(
        "200,000 files: generated in {:.1} s, packaged in {:.1} s (user {} s, system {} s), peak RSS {peak_mib} MiB",
        generated.as_secs_f64(),
        packaged.as_secs_f64(),
        usage.ru_utime.tv_sec,
        usage.ru_stime.tv_sec,
    );
    assert!(peak_mib < 1024, "peak RSS {peak_mib} MiB");

    // Every header is in the core wheel.
    const COUNT: &str = "import sys, zipfile, glob\n\
        wheel, = glob.glob(sys.argv[1] + '/rocm_sdk_core-*.whl')\n\
        names = zipfile.ZipFile(wheel).namelist()\n\
        print(sum(1 for name in names if '/include/x/' in name))\n";
    let result = super::output(std::process::Command::new("python3").args(["-c", COUNT]).arg(&dist));
    assert!(result.status.success(), "{}", super::describe(&result));
    assert_eq!(String::from_utf8_lossy(&result.stdout).trim(), (N_DIRS * FILES_PER_DIR).to_string());
}
