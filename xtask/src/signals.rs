//! SIGINT and SIGTERM during `package`: the run stops, and the temp files its writers had
//! open in the destination are removed first, so an interrupted run leaves `dist/` as it
//! found it. Outputs are renamed into place only together, at the end of a
//! successful run (`archive_write::commit`), and a cleanup waits for a commit already
//! under way, so an interrupt never leaves part of a run's set in `dist/`.
//!
//! How: the signals are blocked in every thread (threads inherit the mask of the thread
//! that creates them, so this must run before rayon or indicatif start any), and one
//! thread takes them with `sigwait`. The cleanup then runs as ordinary code, not in a
//! signal handler, so it may take locks, read directories and print. No crate needed:
//! `signal-hook` or `ctrlc` would give a handler that sets a flag, and we would still need
//! a thread to act on it. Child processes (the C compiler) start with an empty mask:
//! std's `Command` resets it.
//!
//! Only the holder of the destination lock may remove temp files there, so cleanup is
//! armed by [`Interrupts::clean_on_interrupt`] once the lock is held, and disarmed before
//! the lock is released. A writer that creates a new temp file between the cleanup and
//! the exit leaves it behind; the next run removes it when it takes the lock.

use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use packager::DestLock;

/// What to clean when a signal arrives: the destination, while this process holds its lock.
#[derive(Clone, Default)]
pub struct Interrupts {
    armed: Arc<Mutex<Option<Arc<DestLock>>>>,
}

/// Disarms the cleanup when dropped (before the caller drops the lock).
pub struct Armed {
    armed: Arc<Mutex<Option<Arc<DestLock>>>>,
}

impl Drop for Armed {
    fn drop(&mut self) {
        // Waits for a cleanup in progress, which then exits the process.
        *self.armed.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl Interrupts {
    /// From now on, SIGINT/SIGTERM remove the temp files of `lock`'s destination.
    pub fn clean_on_interrupt(&self, lock: &Arc<DestLock>) -> Armed {
        *self.armed.lock().unwrap_or_else(PoisonError::into_inner) = Some(lock.clone());
        Armed { armed: self.armed.clone() }
    }
}

/// Blocks SIGINT and SIGTERM in this thread (and so in every thread it creates later) and
/// starts the thread that handles them. Call before any other thread starts.
pub fn install() -> anyhow::Result<Interrupts> {
    let set = termination_signals();
    // SAFETY: `set` is an initialised sigset_t; pthread_sigmask only reads it.
    let result = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if result != 0 {
        return Err(std::io::Error::from_raw_os_error(result)).context("blocking SIGINT and SIGTERM");
    }
    let interrupts = Interrupts::default();
    let armed = interrupts.armed.clone();
    std::thread::Builder::new()
        .name("signals".to_owned())
        .spawn(move || wait_and_clean(set, &armed))
        .context("starting the signal thread")?;
    Ok(interrupts)
}

fn termination_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        set
    }
}

fn wait_and_clean(set: libc::sigset_t, armed: &Mutex<Option<Arc<DestLock>>>) {
    let mut signal: libc::c_int = 0;
    loop {
        // SAFETY: `set` is initialised and `signal` is a valid place for the result.
        if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
            break;
        }
    }
    let name = if signal == libc::SIGTERM { "SIGTERM" } else { "SIGINT" };
    // Held until exit, so the run cannot release the lock while we clean.
    let armed = armed.lock().unwrap_or_else(PoisonError::into_inner);
    match armed.as_deref() {
        Some(lock) => match lock.remove_temp_files() {
            Ok(removed) => {
                let dest = lock.output_dir().display();
                eprintln!("\ninterrupted by {name}: removed {removed} temporary file(s) from {dest}")
            }
            Err(error) => eprintln!("\ninterrupted by {name}: {error}"),
        },
        None => eprintln!("\ninterrupted by {name}"),
    }
    // The shell convention: 128 + the signal number.
    std::process::exit(128 + signal);
}
