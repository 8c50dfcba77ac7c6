//! Rerun figures (SPEC §8): after the cold run, `package` again into the same
//! destination, which then holds the cold run's wheels to copy from: with nothing
//! changed, and, in a tree the bench generated, after one large library is rewritten with
//! new bytes of the same size and the same modification time, and after a file is added
//! and another removed. The tree is put back as it was afterwards; while it is changed its
//! `summary.json` is away, so an interrupted bench regenerates the tree rather than
//! measure a changed one later. A real tree (`--artifact-dir`) is never changed.
//!
//! Owns: the changes and their undoing, and reading each run's reuse counts from its
//! `--json` report. Does not own: measuring a process (`measure`), the table (`bench`).

use std::fs::FileTimes;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use super::measure::{self, ProcessCost};

/// One run into the destination and how much of it was copied from the wheels there.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Rerun {
    pub scenario: &'static str,
    pub cost: ProcessCost,
    /// Member bytes copied compressed from the previous wheels.
    pub reused_bytes: u64,
    /// Of those, bytes not read at all: their files' identities were as the identity
    /// cache recorded them (SPEC §8).
    pub unread_bytes: u64,
    /// Member bytes compressed by the run.
    pub compressed_bytes: u64,
}

/// Bytes of the library rewritten with new ones: the member is compressed again whole
/// however few of its bytes change.
const REWRITTEN_BYTES: u64 = 1 << 20;

/// `cold` is the cold run already measured, whose report is `cold_report`; `command`
/// makes a `package` command into the same destination. `change_files`: the tree is the
/// bench's own, so the reruns that change files run too.
pub fn measure_reruns(
    artifacts: &Path,
    run_dir: &Path,
    cold: &ProcessCost,
    cold_report: &Path,
    command: &dyn Fn(&Path) -> Command,
    change_files: bool,
) -> anyhow::Result<Vec<Rerun>> {
    let mut reruns = vec![rerun_of("cold", cold.clone(), cold_report)?];
    let run = |scenario: &'static str, n: usize| -> anyhow::Result<Rerun> {
        let report = run_dir.join(format!("rerun-{n}.json"));
        let cost = measure::measure(command(&report), run_dir, &run_dir.join(format!("rerun-{n}.log")))?;
        if let Some(error) = &cost.error {
            anyhow::bail!("the rerun ({scenario}) failed:\n{error}");
        }
        rerun_of(scenario, cost, &report)
    };
    reruns.push(run("nothing changed", 1)?);
    if !change_files {
        return Ok(reruns);
    }

    let summary = artifacts.parent().context("the tree holds the artifacts")?.join("summary.json");
    let summary_text = fs_err::read_to_string(&summary)?;
    fs_err::remove_file(&summary)?;
    let files = regular_files(artifacts)?;
    let library = files.iter().max_by_key(|(_, len)| *len).map(|(path, _)| path.clone()).context("no files")?;
    let original = rewrite_middle(&library, None)?;
    let rewritten = run("one library rewritten, same size and time", 2);
    rewrite_middle(&library, Some(&original))?;
    let rewritten = rewritten?;
    reruns.push(rewritten);

    let added = library.with_file_name("bench-rerun-added.txt");
    let removed = files.iter().map(|(path, _)| path).find(|path| path.extension().is_some_and(|ext| ext == "hpp"));
    let removed = removed.context("no header in the synthetic tree")?.clone();
    let aside = run_dir.join("bench-rerun-removed.hpp");
    fs_err::write(&added, "a file added between two runs\n".repeat(36_000))?;
    fs_err::rename(&removed, &aside)?;
    let changed = run("a file added, one removed", 3);
    fs_err::rename(&aside, &removed)?;
    fs_err::remove_file(&added)?;
    reruns.push(changed?);
    fs_err::write(&summary, summary_text)?;
    Ok(reruns)
}

/// A run's figures: its cost and the reuse counts of its `package --json` report.
fn rerun_of(scenario: &'static str, cost: ProcessCost, report: &Path) -> anyhow::Result<Rerun> {
    let value: serde_json::Value = serde_json::from_str(&fs_err::read_to_string(report)?)
        .with_context(|| format!("reading {}", report.display()))?;
    let count = |field: &str| value["reuse"][field].as_u64().with_context(|| format!("no reuse.{field} in the report"));
    Ok(Rerun {
        scenario,
        cost,
        reused_bytes: count("reused_bytes")?,
        unread_bytes: count("unread_bytes")?,
        compressed_bytes: count("compressed_bytes")?,
    })
}

/// Every regular file under `dir` with its size, in sorted order.
fn regular_files(dir: &Path) -> anyhow::Result<Vec<(PathBuf, u64)>> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = fs_err::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let kind = entry.file_type()?;
        if kind.is_dir() {
            out.extend(regular_files(&entry.path())?);
        } else if kind.is_file() {
            out.push((entry.path(), entry.metadata()?.len()));
        }
    }
    Ok(out)
}

/// Overwrites [`REWRITTEN_BYTES`] in the middle of `path` (inside the blob that makes a
/// synthetic library large, clear of its ELF headers and tables) with `bytes`, or with
/// their complement when `None`, and puts the modification time back. Returns what was
/// there.
fn rewrite_middle(path: &Path, bytes: Option<&[u8]>) -> anyhow::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let file = fs_err::File::options().read(true).write(true).open(path)?;
    let metadata = file.metadata()?;
    let len = REWRITTEN_BYTES.min(metadata.len() / 4);
    let at = metadata.len() / 2 - len / 2;
    let mut old = vec![0u8; len as usize];
    file.file().read_exact_at(&mut old, at).with_context(|| format!("reading {}", path.display()))?;
    let new: Vec<u8> = match bytes {
        Some(bytes) => bytes.to_vec(),
        None => old.iter().map(|byte| !byte).collect(),
    };
    file.file().write_all_at(&new, at).with_context(|| format!("writing {}", path.display()))?;
    file.file()
        .set_times(FileTimes::new().set_modified(metadata.modified()?))
        .with_context(|| format!("setting the time of {}", path.display()))?;
    Ok(old)
}
