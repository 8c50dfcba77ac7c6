//! The archives of a split (SPEC §12 "Archives"): one `.kpack` per package directory and
//! full target id (`torch/.kpack/torch_gfx942.kpack`, `torch_gfx942:xnack+.kpack`: the
//! runtime looks a feature variant up in an archive of its own), holding for each wrapper
//! of each fat binary there the code object its bundle has for that target, filed as
//! `<kernel name>#<wrapper index>`. Two wrappers registering the same bundle share one
//! code object. Each archive is written to the scratch directory, in parallel, its code
//! objects streamed from the binaries and coded with zstd one at a time.
//!
//! Owns: which code object goes in which archive under which key. Does not own: the
//! archive format (the device-code crate), which wheel an archive travels in (`grouping`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use device_code::kpack::{ArchiveSpec, ArchiveWriter, Compression};

use super::binaries::{archive_member, FatMember};
use super::error::SplitError;

/// One code object to file: binary, bundle and entry, under a key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Filed {
    key: String,
    binary: usize,
    bundle: usize,
    entry: usize,
}

/// An archive to write.
#[derive(Debug)]
pub struct ArchivePlan {
    /// Its member path in the device wheel.
    pub member: String,
    /// The full target id it serves (`gfx942:xnack+`).
    pub target_id: String,
    entries: Vec<Filed>,
}

/// An archive written to the scratch directory.
#[derive(Debug)]
pub struct WrittenArchive {
    pub member: String,
    pub target_id: String,
    pub path: PathBuf,
    pub len: u64,
    /// `key target` of each code object filed, for the bill of materials and the report.
    pub code_objects: Vec<String>,
    /// Bytes of code objects before compression.
    pub original_bytes: u64,
}

/// The archives the fat binaries' code objects go to, by member path.
pub fn plan_archives(binaries: &[FatMember], group: &str) -> BTreeMap<String, ArchivePlan> {
    let mut plans: BTreeMap<String, ArchivePlan> = BTreeMap::new();
    for (binary_index, binary) in binaries.iter().enumerate() {
        for (wrapper, &bundle_index) in binary.wrapper_bundles.iter().enumerate() {
            let key = format!("{}#{wrapper}", binary.marker.kernel_name);
            let Some(bundle) = binary.fat.bundles().get(bundle_index) else { continue };
            for (entry_index, code_object) in bundle.entries.iter().enumerate() {
                // A target repeated within a bundle (`-fgpu-rdc`) is registered once by the
                // runtime, from the first entry for it.
                if code_object.repeat > 0 {
                    continue;
                }
                let target_id = code_object.target.to_string();
                let member = archive_member(&binary.package_dir, group, &target_id);
                let plan = plans.entry(member.clone()).or_insert_with(|| ArchivePlan {
                    member,
                    target_id,
                    entries: Vec::new(),
                });
                plan.entries.push(Filed {
                    key: key.clone(),
                    binary: binary_index,
                    bundle: bundle_index,
                    entry: entry_index,
                });
            }
        }
    }
    for plan in plans.values_mut() {
        plan.entries.sort();
    }
    plans
}

/// Writes every planned archive into `scratch`, on every core.
pub fn write_archives(
    wheel: &Path,
    binaries: &[FatMember],
    plans: &BTreeMap<String, ArchivePlan>,
    group: &str,
    scratch: &Path,
    zstd_level: i32,
) -> Result<Vec<WrittenArchive>, SplitError> {
    plans
        .values()
        .enumerate()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(index, plan)| {
            write_archive(wheel, binaries, plan, group, &scratch.join(format!("archive-{index}.kpack")), zstd_level)
        })
        .collect()
}

fn write_archive(
    wheel: &Path,
    binaries: &[FatMember],
    plan: &ArchivePlan,
    group: &str,
    path: &Path,
    zstd_level: i32,
) -> Result<WrittenArchive, SplitError> {
    let failed =
        |member: &str, source| SplitError::DeviceCode { path: wheel.to_path_buf(), member: member.to_owned(), source };
    let spec = ArchiveSpec {
        group_name: group.to_owned(),
        gfx_arch_family: plan.target_id.clone(),
        gfx_arches: vec![plan.target_id.clone()],
        compression: Compression::Zstd { level: zstd_level },
    };
    let mut writer = ArchiveWriter::new(spec).map_err(|source| failed(&plan.member, source))?;
    let mut ordinals: BTreeMap<(usize, usize, usize), u32> = BTreeMap::new();
    let mut code_objects = Vec::new();
    let mut original_bytes = 0;
    // Filed by key, so the archive's order and ordinals follow the keys, not the scan.
    for filed in &plan.entries {
        let binary = &binaries[filed.binary];
        let code_object = &binary.fat.bundles()[filed.bundle].entries[filed.entry];
        let arch = &plan.target_id;
        let failed_here = |source| failed(&binary.member, source);
        match ordinals.get(&(filed.binary, filed.bundle, filed.entry)) {
            Some(&ordinal) => writer.alias(&filed.key, arch, ordinal).map_err(failed_here)?,
            None => {
                let ordinal = writer
                    .add(&filed.key, arch, code_object.size, |out| {
                        binary.fat.copy_code_object(code_object, out).map(|_| ())
                    })
                    .map_err(failed_here)?;
                ordinals.insert((filed.binary, filed.bundle, filed.entry), ordinal);
                original_bytes += code_object.size;
            }
        }
        code_objects.push(format!("{} {arch}", filed.key));
    }
    let create =
        |source| SplitError::Write(archive_write::WriteError::io(archive_write::WriteAction::Write, path, source));
    let file = File::create(path).map_err(create)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let summary = writer.finish(&mut out).map_err(|source| failed(&plan.member, source))?;
    out.into_inner().map_err(|error| create(error.into_error()))?;
    Ok(WrittenArchive {
        member: plan.member.clone(),
        target_id: plan.target_id.clone(),
        path: path.to_path_buf(),
        len: summary.len,
        code_objects,
        original_bytes,
    })
}
