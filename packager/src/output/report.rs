//! `Report`: what a run did, for the summary table and `--json`: a line per output
//! ([`OutputReport`]), the stages' times, the plan's findings and counts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use archive_write::{ReuseCounts, StagedTree, WrittenFile};

use crate::input::catalog::Override;
use crate::plan::{Finding, Plan, PlannedFile};

/// One output file in the summary table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct OutputReport {
    pub package: String,
    pub file_name: String,
    pub path: PathBuf,
    pub files: usize,
    pub uncompressed_bytes: u64,
    pub compressed_bytes: u64,
    pub sha256: String,
    pub seconds: f64,
    /// Member bytes copied compressed from the previous wheel, and bytes compressed anew (SPEC §8).
    pub reuse: ReuseCounts,
}

impl OutputReport {
    pub(super) fn new(package: &str, written: &WrittenFile, started: Instant) -> OutputReport {
        OutputReport {
            package: package.to_owned(),
            file_name: written.file_name.clone(),
            path: written.path.clone(),
            files: written.n_members,
            uncompressed_bytes: written.uncompressed_bytes,
            compressed_bytes: written.compressed_bytes,
            sha256: written.sha256.clone(),
            seconds: started.elapsed().as_secs_f64(),
            reuse: written.reuse,
        }
    }

    /// A `--no-build-packages` tree: its files and their bytes, nothing compressed, and no
    /// digest (a tree is no one file; its RECORD holds its files').
    pub(super) fn tree(package: &str, tree: &StagedTree, started: Instant) -> OutputReport {
        let totals = tree.totals();
        let file_name = tree.root().file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        OutputReport {
            package: package.to_owned(),
            file_name,
            path: tree.root().to_path_buf(),
            files: totals.files,
            uncompressed_bytes: totals.bytes,
            compressed_bytes: totals.bytes,
            sha256: String::new(),
            seconds: started.elapsed().as_secs_f64(),
            reuse: ReuseCounts::default(),
        }
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct StageTime {
    pub stage: String,
    pub seconds: f64,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    pub version: String,
    pub kpack_split: bool,
    pub outputs: Vec<OutputReport>,
    /// The outputs' reuse counts added up: bytes copied compressed from the previous
    /// wheels and bytes compressed anew (SPEC §8).
    pub reuse: ReuseCounts,
    pub stages: Vec<StageTime>,
    /// Counts per finding kind ("dropped", "aliased", "launchers", ...).
    pub counts: BTreeMap<&'static str, usize>,
    /// Counts of RPATH edits per strategy ("in-place", "grown", "unchanged").
    pub rpath_edits: BTreeMap<String, usize>,
    pub findings: Vec<Finding>,
    pub overrides: Vec<Override>,
}

impl Report {
    pub fn new(plan: &Plan, outputs: Vec<OutputReport>, stages: Vec<StageTime>) -> Report {
        let mut rpath_edits = BTreeMap::new();
        for package in &plan.packages {
            let devel_edits = package.devel_tree.iter().flat_map(|tree| &tree.planned.rpath_edits);
            let edits = package.files.values().filter_map(|file| match file {
                PlannedFile::PatchRpath { edit, .. } => Some((&edit.strategy, &1)),
                _ => None,
            });
            for (strategy, count) in edits.chain(devel_edits) {
                let key =
                    serde_json::to_value(strategy).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
                *rpath_edits.entry(key).or_insert(0) += count;
            }
        }
        let reuse = outputs.iter().fold(ReuseCounts::default(), |total, output| total.plus(output.reuse));
        Report {
            version: plan.version.to_string(),
            kpack_split: plan.kpack_split,
            reuse,
            outputs,
            stages,
            counts: plan.finding_counts(),
            rpath_edits,
            findings: plan.findings.clone(),
            overrides: plan.overrides.clone(),
        }
    }
}
