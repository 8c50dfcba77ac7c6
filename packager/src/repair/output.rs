//! Writing the repaired wheel (SPEC §11): every member of the input but the bundled SDK
//! copies and RECORD's signatures, in the writer's order, RECORD made anew from the
//! hashes; members that did not change copied as their coded bytes, only edited ELF files
//! (their edits spliced in while they stream) and the metadata coded again. Its bill of
//! materials (SPEC §10) names each file as a member of the input wheel, edited or not,
//! rendered from the digests the writer measures. Staged under a temp name in the output
//! directory and renamed into place with the run's others.
//!
//! Owns: the writer's spec of a repaired wheel. Does not own: what changes (`links`,
//! `metadata`), the writer (`archive-write`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::error::RepairError;
use super::input::{hashed_copy, InputWheel};
use super::metadata::requirements_of;
use super::sdk_source::name_and_version;
use crate::output::sbom::{self, Edit, Origin, Provenance};
use archive_write::{
    stage_rewritten_wheel, ArchiveOptions, Inventory, MemberData, Progress, RewriteContent, RewriteMember, RewriteSpec,
    StagedFile,
};
use elf_rpath::RpathEdit;

/// What the repaired wheel holds beyond the input's unchanged members.
pub struct Changes<'a> {
    pub file_name: String,
    pub metadata: String,
    pub wheel_file: String,
    /// Members left out (bundled SDK copies).
    pub removed: &'a BTreeMap<String, String>,
    /// Edited ELF members, by member name.
    pub edits: BTreeMap<String, RpathEdit>,
}

/// Stages the repaired wheel in `output_dir`.
pub fn stage(
    wheel: InputWheel,
    changes: Changes<'_>,
    output_dir: &Path,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<StagedFile, RepairError> {
    let metadata_name = format!("{}/METADATA", wheel.dist_info);
    let wheel_name = format!("{}/WHEEL", wheel.dist_info);
    let mut edits = changes.edits;
    let edited: BTreeSet<String> = edits.keys().cloned().collect();
    let text = |text: &str| RewriteContent::Data(MemberData::Bytes(Arc::new(text.as_bytes().to_vec())));
    let mut members = Vec::with_capacity(wheel.members.len());
    let mut unchanged = Vec::new();
    for member in wheel.members {
        if changes.removed.contains_key(&member.name) {
            continue;
        }
        let content = if member.name == metadata_name {
            text(&changes.metadata)
        } else if member.name == wheel_name {
            text(&changes.wheel_file)
        } else if let (Some(edit), Some(extracted)) = (edits.remove(&member.name), member.extracted.as_ref()) {
            let path: Arc<Path> = Arc::from(extracted.as_path());
            RewriteContent::Data(crate::output::payload::patched(path, Arc::new(edit)))
        } else {
            unchanged.push(member);
            continue;
        };
        members.push(RewriteMember { name: member.name, executable: member.executable, content });
    }
    // Unchanged extracted members are hashed now, on every core; the rest were while read.
    let copied = unchanged
        .into_par_iter()
        .map(|member| {
            let (name, executable) = (member.name.clone(), member.executable);
            let copy = hashed_copy(&wheel.path, member)?;
            Ok(RewriteMember { name, executable, content: RewriteContent::Copied(copy) })
        })
        .collect::<Result<Vec<_>, RepairError>>()?;
    members.extend(copied);
    let earlier = wheel.earlier_sbom.as_deref().map(earlier_origins).unwrap_or_default();
    let inventory = bill_of_materials(&wheel.path, &changes.metadata, &members, &edited, &earlier);
    let spec = RewriteSpec {
        file_name: changes.file_name,
        dist_info: wheel.dist_info,
        generator: crate::output::GENERATOR,
        members,
        inventory: Some(inventory),
    };
    Ok(stage_rewritten_wheel(output_dir, spec, options, progress)?)
}

/// The repaired wheel's bill of materials: each member a member of the input wheel, its
/// bytes edited or as they were; its requirements METADATA's. A member an earlier repair
/// took from another wheel (`earlier`) keeps that origin and edit, so a repaired wheel
/// repaired again names the wheel its files came from, and gives the same bytes.
fn bill_of_materials(
    input: &Path,
    metadata: &str,
    members: &[RewriteMember],
    edited: &BTreeSet<String>,
    earlier: &BTreeMap<String, (String, bool)>,
) -> Inventory {
    let file_name = input.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let mut provenance = Provenance::new(None);
    for member in members {
        let (origin, was_edited) = match earlier.get(&member.name) {
            Some((wheel, was_edited)) => (wheel.clone(), *was_edited),
            None => (file_name.clone(), false),
        };
        let edit = if was_edited || edited.contains(&member.name) { Edit::Rpath } else { Edit::None };
        provenance.insert(member.name.clone(), Origin::Wheel { file_name: origin, edit });
    }
    let (name, version) = name_and_version(metadata).unwrap_or_default();
    sbom::inventory(&name, &version, provenance, requirements_of(metadata))
}

/// The members an earlier bill of materials of ours says were taken from another wheel:
/// member → (that wheel's file name, whether it was edited). A document that does not
/// parse says nothing: the members are then this input's.
fn earlier_origins(document: &str) -> BTreeMap<String, (String, bool)> {
    let mut origins = BTreeMap::new();
    let Ok(document) = serde_json::from_str::<serde_json::Value>(document) else { return origins };
    let components = document.get("components").and_then(serde_json::Value::as_array);
    for wheel in components.into_iter().flatten() {
        let is_wheel =
            wheel.get("bom-ref").and_then(serde_json::Value::as_str).is_some_and(|r| r.starts_with("wheel:"));
        let Some(file_name) = wheel.get("name").and_then(serde_json::Value::as_str).filter(|_| is_wheel) else {
            continue;
        };
        let files = wheel.get("components").and_then(serde_json::Value::as_array);
        for file in files.into_iter().flatten() {
            let Some(member) = file.get("name").and_then(serde_json::Value::as_str) else { continue };
            let properties = file.get("properties").and_then(serde_json::Value::as_array);
            let edited = properties.into_iter().flatten().any(|property| {
                property.get("name").and_then(serde_json::Value::as_str) == Some("rocm-packager:edit")
                    && property.get("value").and_then(serde_json::Value::as_str) == Some("rpath")
            });
            origins.insert(member.to_owned(), (file_name.to_owned(), edited));
        }
    }
    origins
}
