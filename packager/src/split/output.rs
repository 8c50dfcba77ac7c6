//! Writing a split (SPEC §12): the host wheel, under the input's file name, with every
//! member of the input but the kernel database files that moved and an earlier bill of
//! materials of ours, its fat binaries transformed while they stream and METADATA with the
//! device extras; and one device wheel per key, holding its archives and database files.
//! Members that do not change are copied as the input's coded bytes; archives are zstd
//! already, and the writer stores what deflate cannot shrink. Each wheel carries a bill of
//! materials naming every file as a member of the input wheel, and the code objects in
//! each archive. Staged in the output directory and renamed into place with the run's
//! others.
//!
//! Owns: the writer's specs of a split. Does not own: what goes where (the stage's other
//! modules), the writer (`archive-write`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::archives::WrittenArchive;
use super::error::SplitError;
use crate::output::payload;
use crate::output::sbom::{self, Edit, Origin, Provenance, SBOM_PATH};
use crate::repair::input::{hashed_copy, InputMember, InputWheel};
use archive_write::{
    open_regular, stage_rewritten_wheel, ArchiveOptions, Links, MemberData, MemberSource, Progress, RewriteContent,
    RewriteMember, RewriteSpec, StagedFile, WriteError,
};
use device_code::host::HostTransform;

/// Transformed fat binaries, by member name: the extracted file and the plan.
pub type Transforms = BTreeMap<String, (Arc<Path>, Arc<HostTransform>)>;

/// The host wheel's changes.
pub struct HostChanges {
    pub metadata: String,
    pub transforms: Transforms,
}

/// One device wheel to write.
pub struct DeviceWheel {
    pub file_name: String,
    pub dist_info: String,
    pub name: String,
    pub metadata: String,
    pub wheel_file: String,
    pub archives: Vec<WrittenArchive>,
    /// Database files of the input, by member name.
    pub files: Vec<InputMember>,
}

/// Splits the input's members between the host wheel's and the device wheels' sets.
pub fn take_moved(wheel: &mut InputWheel, moved: &BTreeSet<String>) -> BTreeMap<String, InputMember> {
    let (taken, kept): (Vec<InputMember>, Vec<InputMember>) =
        std::mem::take(&mut wheel.members).into_iter().partition(|member| moved.contains(&member.name));
    wheel.members = kept;
    taken.into_iter().map(|member| (member.name.clone(), member)).collect()
}

/// Stages the host wheel in `output_dir`.
pub fn stage_host(
    wheel: InputWheel,
    changes: HostChanges,
    output_dir: &Path,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<StagedFile, SplitError> {
    let input_name = file_name_of(&wheel.path);
    let metadata_name = format!("{}/METADATA", wheel.dist_info);
    let earlier_sbom = format!("{}/{SBOM_PATH}", wheel.dist_info);
    let mut provenance = Provenance::new(None);
    let mut members = Vec::new();
    let mut unchanged = Vec::new();
    for member in wheel.members {
        if member.name == earlier_sbom {
            continue;
        }
        let (content, edit) = if member.name == metadata_name {
            (RewriteContent::Data(MemberData::Bytes(Arc::new(changes.metadata.as_bytes().to_vec()))), Edit::None)
        } else if let Some((path, transform)) = changes.transforms.get(&member.name) {
            let source = TransformedFile { path: path.clone(), transform: transform.clone() };
            (RewriteContent::Data(MemberData::Source(Arc::new(source))), Edit::DeviceCodeRemoved)
        } else {
            provenance.insert(member.name.clone(), Origin::Wheel { file_name: input_name.clone(), edit: Edit::None });
            unchanged.push(member);
            continue;
        };
        provenance.insert(member.name.clone(), Origin::Wheel { file_name: input_name.clone(), edit });
        members.push(RewriteMember { name: member.name, executable: member.executable, content });
    }
    members.extend(copied(&wheel.path, unchanged)?);
    let (name, version) = crate::repair::name_and_version(&changes.metadata).unwrap_or_default();
    let requirements = crate::repair::requirements_of(&changes.metadata);
    let spec = RewriteSpec {
        file_name: input_name,
        dist_info: wheel.dist_info,
        generator: crate::output::GENERATOR,
        members,
        inventory: Some(sbom::inventory(&name, &version, provenance, requirements)),
    };
    Ok(stage_rewritten_wheel(output_dir, spec, options, progress)?)
}

/// Stages one device wheel in `output_dir`.
pub fn stage_device(
    input: &Path,
    device: DeviceWheel,
    output_dir: &Path,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<StagedFile, SplitError> {
    let input_name = file_name_of(input);
    let mut provenance = Provenance::new(None);
    let text = |text: &str| RewriteContent::Data(MemberData::Bytes(Arc::new(text.as_bytes().to_vec())));
    let mut members = vec![
        RewriteMember {
            name: format!("{}/METADATA", device.dist_info),
            executable: false,
            content: text(&device.metadata),
        },
        RewriteMember {
            name: format!("{}/WHEEL", device.dist_info),
            executable: false,
            content: text(&device.wheel_file),
        },
    ];
    for archive in device.archives {
        let edit = Edit::DeviceArchive { code_objects: archive.code_objects };
        provenance.insert(archive.member.clone(), Origin::Wheel { file_name: input_name.clone(), edit });
        let data = payload::file(Arc::from(archive.path.as_path()), archive.len, None);
        members.push(RewriteMember { name: archive.member, executable: false, content: RewriteContent::Data(data) });
    }
    for member in &device.files {
        provenance.insert(member.name.clone(), Origin::Wheel { file_name: input_name.clone(), edit: Edit::None });
    }
    members.extend(copied(input, device.files)?);
    let requirements = crate::repair::requirements_of(&device.metadata);
    let version = crate::repair::name_and_version(&device.metadata).unwrap_or_default().1;
    let spec = RewriteSpec {
        file_name: device.file_name,
        dist_info: device.dist_info,
        generator: crate::output::GENERATOR,
        members,
        inventory: Some(sbom::inventory(&device.name, &version, provenance, requirements)),
    };
    Ok(stage_rewritten_wheel(output_dir, spec, options, progress)?)
}

/// Unchanged members as their coded bytes, hashed on every core where reading them did not.
fn copied(wheel: &Path, members: Vec<InputMember>) -> Result<Vec<RewriteMember>, SplitError> {
    members
        .into_par_iter()
        .map(|member| {
            let (name, executable) = (member.name.clone(), member.executable);
            let copy = hashed_copy(wheel, member).map_err(Box::new)?;
            Ok(RewriteMember { name, executable, content: RewriteContent::Copied(copy) })
        })
        .collect()
}

fn file_name_of(path: &Path) -> String {
    path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A fat binary as the transform rewrites it, streamed from its extracted bytes.
#[derive(Debug)]
struct TransformedFile {
    path: Arc<Path>,
    transform: Arc<HostTransform>,
}

impl MemberSource for TransformedFile {
    fn len(&self) -> u64 {
        self.transform.output_len()
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn open(&self) -> Result<Box<dyn Read + Send + '_>, WriteError> {
        let file: File = open_regular(&self.path, Links::Refuse)
            .map_err(|source| WriteError::Read { path: self.path.to_path_buf(), source })?;
        let reader = self.transform.into_reader(file).map_err(|error| WriteError::Read {
            path: self.path.to_path_buf(),
            source: std::io::Error::other(error.to_string()),
        })?;
        Ok(Box::new(reader))
    }
}
