//! Measuring a child process: wall time and user and system CPU (from `wait4`), peak RSS
//! (the child's `VmHWM`, sampled), and the peak extra disk space on the destination's
//! filesystem (sampled with `statvfs`).
//!
//! Owns: running one command and what it cost. Does not own: what the command is.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

/// What one child process cost.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProcessCost {
    pub wall_seconds: f64,
    pub user_seconds: f64,
    pub sys_seconds: f64,
    pub peak_rss_bytes: u64,
    /// Free space on the destination's filesystem at the start minus its lowest value
    /// during the run. Other writers on the machine add to it.
    pub peak_extra_disk_bytes: u64,
    pub success: bool,
    /// The end of stderr when the command failed.
    pub error: Option<String>,
}

impl ProcessCost {
    pub fn cpu_seconds(&self) -> f64 {
        self.user_seconds + self.sys_seconds
    }
}

/// How often free disk space and the child's peak RSS are sampled.
const DISK_SAMPLE_INTERVAL: Duration = Duration::from_millis(20);

/// Runs `command` to completion with stdout and stderr sent to `log`, watching the free
/// space of the filesystem holding `disk_dir`.
pub fn measure(mut command: Command, disk_dir: &Path, log: &Path) -> anyhow::Result<ProcessCost> {
    let baseline = free_bytes(disk_dir)?;
    let log_file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let stderr = log_file.try_clone().with_context(|| format!("duplicating {}", log.display()))?;
    let started = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::from(log_file))
        .stderr(Stdio::from(stderr))
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = Arc::clone(&stop);
        let disk_dir = disk_dir.to_path_buf();
        let status_path = format!("/proc/{}/status", child.id());
        std::thread::spawn(move || {
            let (mut lowest, mut peak_rss) = (baseline, 0);
            while !stop.load(Ordering::Relaxed) {
                if let Ok(free) = free_bytes(&disk_dir) {
                    lowest = lowest.min(free);
                }
                peak_rss = peak_rss.max(high_water_rss(&status_path));
                std::thread::sleep(DISK_SAMPLE_INTERVAL);
            }
            (lowest, peak_rss)
        })
    };
    let (status, usage) = wait_with_usage(child.id());
    let wall_seconds = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let (lowest, sampled_rss) = sampler.join().unwrap_or((baseline, 0));
    let status = status?;
    let success = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    let error = if success {
        None
    } else {
        let text = fs_err::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        Some(tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
    };
    Ok(ProcessCost {
        wall_seconds,
        user_seconds: seconds(usage.ru_utime),
        sys_seconds: seconds(usage.ru_stime),
        // wait4's ru_maxrss (KiB) starts from this process's own RSS: posix_spawn runs the
        // child in our address space until exec, and the kernel keeps that mm's high-water
        // mark. The child's own VmHWM, sampled, is what it used; ru_maxrss only bounds it
        // from above when the child ran too briefly to be sampled.
        peak_rss_bytes: if sampled_rss > 0 { sampled_rss } else { (usage.ru_maxrss.max(0) as u64) * 1024 },
        peak_extra_disk_bytes: baseline.saturating_sub(lowest),
        success,
        error,
    })
}

/// Reaps `pid` with `wait4`, which reports that child's own resource use (not the sum of
/// every child this process ever had, as `getrusage(RUSAGE_CHILDREN)` would).
fn wait_with_usage(pid: u32) -> (anyhow::Result<i32>, libc::rusage) {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut status = 0;
    loop {
        // SAFETY: pid is our own unreaped child; both pointers are to live locals.
        let result = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        if result >= 0 {
            return (Ok(status), usage);
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return (Err(anyhow::Error::new(error).context("waiting for the child process")), usage);
        }
    }
}

fn seconds(time: libc::timeval) -> f64 {
    time.tv_sec as f64 + time.tv_usec as f64 / 1e6
}

/// `VmHWM` of `/proc/{pid}/status` in bytes: the process's peak resident set since exec
/// (0 once it has exited).
fn high_water_rss(status_path: &str) -> u64 {
    let text = std::fs::read_to_string(status_path).unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Bytes available to unprivileged users on the filesystem holding `dir`.
pub fn free_bytes(dir: &Path) -> anyhow::Result<u64> {
    let path = CString::new(dir.as_os_str().as_bytes()).context("path contains a NUL byte")?;
    // SAFETY: statvfs is plain old data; all-zero is a valid value.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: path is NUL-terminated and stats is a live local.
    let result = unsafe { libc::statvfs(path.as_ptr(), &mut stats) };
    if result != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("statvfs {}", dir.display()));
    }
    Ok(stats.f_bavail as u64 * stats.f_frsize as u64)
}

/// The 1, 5 and 15 minute load averages, to say how busy the machine was.
pub fn load_average() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut values = text.split_whitespace().map(|field| field.parse().unwrap_or(0.0));
    [values.next().unwrap_or(0.0), values.next().unwrap_or(0.0), values.next().unwrap_or(0.0)]
}

/// Sum of the sizes of regular files under `dir` (0 when it does not exist).
pub fn tree_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(entry.path()),
                Ok(kind) if kind.is_file() => total += entry.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}
