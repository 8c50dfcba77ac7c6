//! The text `cargo xtask repair` prints of a [`RepairReport`] (SPEC §11): one block per
//! wheel, where it went and what changed. Every name in it came from the wheel (members,
//! RPATH entries, SONAMEs) or the file system, so each is escaped as `package` and `verify`
//! print theirs: a control character in an RPATH entry cannot rewrite the terminal.
//!
//! Owns: that text. Does not own: the report's data (`repair`), `--json` (the CLI writes
//! the data, where JSON escapes every control character itself).

use std::fmt::Write as _;

use super::RepairReport;
use crate::escape::{escape, escape_path};

impl RepairReport {
    /// The report as printed; `verbose` adds each edited file's new RPATH.
    pub fn render(&self, verbose: bool) -> String {
        let mut text = String::new();
        let packages = escape(&self.sdk_packages.join(", "));
        let _ = writeln!(text, "SDK {}: {packages}", escape_path(&self.sdk));
        for wheel in &self.wheels {
            let _ = writeln!(text, "{} -> {}", escape_path(&wheel.input), escape_path(&wheel.output));
            for requirement in &wheel.requirements_added {
                let _ = writeln!(text, "  requires {}", escape(requirement));
            }
            for (member, soname) in &wheel.removed {
                let _ = writeln!(text, "  removed {}: a copy of the SDK's {}", escape(member), escape(soname));
            }
            for file in &wheel.edited {
                let member = escape(&file.member);
                for (old, new) in &file.renamed {
                    let _ = writeln!(text, "  {member}: needs {} (was {})", escape(new), escape(old));
                }
                for (entry, why) in &file.removed_entries {
                    let _ = writeln!(text, "  {member}: removed RPATH entry {} ({why})", escape(entry));
                }
                if let (Some(rpath), true) = (&file.rpath, verbose) {
                    let _ = writeln!(text, "  {member}: RPATH {} ({:?})", escape(rpath), file.strategy);
                }
            }
            for member in &wheel.dropped {
                let _ = writeln!(text, "  left out {}", escape(member));
            }
            let _ = writeln!(
                text,
                "  tag {}; {} bytes copied as they were, {} coded again",
                escape(&wheel.platform_tag),
                wheel.copied_bytes,
                wheel.coded_bytes
            );
        }
        text
    }
}
