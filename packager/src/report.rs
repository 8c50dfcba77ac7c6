//! `Report`: what a run did, for the summary table and `--json`.

use std::collections::BTreeMap;

use crate::assemble::OutputReport;
use crate::catalog::Override;
use crate::plan::{Finding, Plan, PlannedFile};
use crate::write::ReuseCounts;

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
