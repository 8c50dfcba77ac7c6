//! Logging and progress display: tracing to stderr; on a terminal a spinner for the stage
//! under way (catalog, plan, write) with its elapsed time, and an indicatif bar per output
//! file with bytes done, total and ETA; otherwise (CI logs) one line per finished output
//! with its payload size and time. `-q` prints nothing but errors; `-v` adds the stages and
//! each decision.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::Output;

pub fn init_logging(output: Output) {
    let default = match (output.quiet, output.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
}

/// The CLI's [`packager::Progress`].
pub struct CliProgress {
    output: Output,
    started: Instant,
    bars: Option<MultiProgress>,
    /// The spinner of the stage under way (terminal only).
    stage_bar: Mutex<Option<ProgressBar>>,
    active: Mutex<HashMap<String, ProgressBar>>,
    /// When each output started and how many payload bytes it reads, for its line.
    started_outputs: Mutex<HashMap<String, (Instant, u64)>>,
}

impl CliProgress {
    pub fn new(output: Output) -> CliProgress {
        let interactive = std::io::stderr().is_terminal() && !output.quiet;
        CliProgress {
            output,
            started: Instant::now(),
            bars: interactive.then(MultiProgress::new),
            stage_bar: Mutex::new(None),
            active: Mutex::new(HashMap::new()),
            started_outputs: Mutex::new(HashMap::new()),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = self.stage_bar.lock().ok().and_then(|mut stage| stage.take()) {
            bar.finish_and_clear();
        }
        if let Ok(mut active) = self.active.lock() {
            for (_, bar) in active.drain() {
                bar.finish_and_clear();
            }
        }
    }

    fn line(&self, text: &str) {
        if self.output.quiet {
            return;
        }
        match &self.bars {
            Some(bars) => {
                let _ = bars.println(text);
            }
            None => eprintln!("{text}"),
        }
    }
}

impl packager::Progress for CliProgress {
    fn stage(&self, name: &str, _total_bytes: u64) {
        if self.output.verbose > 0 {
            self.line(&format!("[{:>6.1}s] {name}", self.started.elapsed().as_secs_f64()));
        }
        let Some(bars) = &self.bars else { return };
        // The stage line sits above the output bars; each new stage replaces the last.
        let bar = bars.insert(0, ProgressBar::new_spinner());
        let style = ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_message(name.to_owned());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        if let Ok(mut stage) = self.stage_bar.lock() {
            if let Some(previous) = stage.replace(bar) {
                previous.finish_and_clear();
            }
        }
    }

    fn output_started(&self, file_name: &str, total_bytes: u64) {
        if let Ok(mut started) = self.started_outputs.lock() {
            started.insert(file_name.to_owned(), (Instant::now(), total_bytes));
        }
        let Some(bars) = &self.bars else { return };
        let bar = bars.add(ProgressBar::new(total_bytes));
        let style = ProgressStyle::with_template("{spinner} {msg:40!} {bar:30} {bytes}/{total_bytes} {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(file_name.to_owned());
        if let Ok(mut active) = self.active.lock() {
            active.insert(file_name.to_owned(), bar);
        }
    }

    fn advance(&self, file_name: &str, bytes: u64) {
        if self.bars.is_none() {
            return;
        }
        if let Ok(active) = self.active.lock() {
            if let Some(bar) = active.get(file_name) {
                bar.inc(bytes);
            }
        }
    }

    fn output_finished(&self, file_name: &str) {
        if let Ok(mut active) = self.active.lock() {
            if let Some(bar) = active.remove(file_name) {
                bar.finish_and_clear();
            }
        }
        let started = self.started_outputs.lock().ok().and_then(|mut started| started.remove(file_name));
        let detail = match started {
            Some((at, bytes)) => {
                format!(" ({} payload in {:.1}s)", crate::summary::human_bytes(bytes), at.elapsed().as_secs_f64())
            }
            None => String::new(),
        };
        self.line(&format!("[{:>6.1}s] wrote {file_name}{detail}", self.started.elapsed().as_secs_f64()));
    }

    fn explain(&self, message: &str) {
        if self.output.verbose > 0 {
            self.line(message);
        }
    }

    fn warn(&self, message: &str) {
        if !self.output.quiet {
            self.line(&format!("warning: {message}"));
        }
    }
}
