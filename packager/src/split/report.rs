//! The text `cargo xtask split` prints of a [`SplitReport`] (SPEC §12): one block per
//! wheel, where the host went, each transformed binary, each device wheel. Member names
//! and targets came from the wheel, so each is escaped as `package`, `repair` and `verify`
//! print theirs.
//!
//! Owns: that text. Does not own: the report's data (`split`), `--json` (the CLI's).

use std::fmt::Write as _;

use super::SplitReport;
use crate::escape::{escape, escape_path};

impl SplitReport {
    /// The report as printed: one block per wheel, the host, its binaries, each device wheel.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for wheel in &self.wheels {
            let Some(host) = &wheel.host else {
                let why = wheel.left_as_is.as_deref().unwrap_or("nothing to split");
                let _ = writeln!(text, "{}: left as it is ({why})", escape_path(&wheel.input));
                continue;
            };
            let _ = writeln!(text, "{} -> {}", escape_path(&wheel.input), escape_path(host));
            for binary in &wheel.binaries {
                let _ = writeln!(
                    text,
                    "  {}: {} wrappers, {}; {} -> {} bytes",
                    escape(&binary.member),
                    binary.wrappers,
                    escape(&binary.targets.join(" ")),
                    binary.bytes_before,
                    binary.bytes_after
                );
            }
            for device in &wheel.devices {
                let name = device.path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
                let mut parts = Vec::new();
                if !device.targets.is_empty() {
                    parts.push(format!(
                        "{} code objects for {} ({} bytes, {} in archives)",
                        device.code_objects,
                        escape(&device.targets.join(" ")),
                        device.original_bytes,
                        device.archive_bytes
                    ));
                }
                if device.database_files > 0 {
                    parts.push(format!("{} kernel database files", device.database_files));
                }
                let _ = writeln!(text, "  + {}: {}", escape(&name), parts.join(", "));
            }
        }
        text
    }
}
