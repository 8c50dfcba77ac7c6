//! A wheel written anew from an existing one ([`RewriteSpec`]): the caller's file name and
//! `.dist-info`, its members in the writer's order, the ones that did not change copied
//! as the existing wheel's coded bytes, RECORD (and the inventory, if any) from the
//! members' digests.
//!
//! Owns: checking and ordering a rewrite's members. Does not own: writing them (the
//! parent's member loop), reading the existing wheel (`existing`).

use std::path::Path;
use std::sync::Arc;

use super::super::existing::CodedCopy;
use super::super::member::check_member_name;
use super::super::reuse::Copy;
use super::super::{ArchiveOptions, Inventory, Member, MemberData, Progress, StagedFile, WriteError};
use super::{stage_members, Target};

/// A wheel written anew from an existing one: the caller names it and its `.dist-info`
/// (the existing wheel's tags, changed as it sees fit) and gives every member but RECORD,
/// METADATA and WHEEL included as bytes; members that did not change come as the existing
/// wheel's coded bytes ([`CodedCopy`]) and are copied, not coded again.
#[derive(Debug)]
pub struct RewriteSpec {
    /// `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`.
    pub file_name: String,
    /// `{name}-{version}.dist-info`, where RECORD is written.
    pub dist_info: String,
    /// Part of every coded member's codec fingerprint.
    pub generator: super::super::Generator,
    pub members: Vec<RewriteMember>,
    /// A `.dist-info` member rendered from the others' digests, as [`WheelSpec::inventory`].
    pub inventory: Option<Inventory>,
}

/// One member of a [`RewriteSpec`].
#[derive(Debug)]
pub struct RewriteMember {
    pub name: String,
    pub executable: bool,
    pub content: RewriteContent,
}

/// Where a rewritten member's bytes come from.
#[derive(Debug)]
pub enum RewriteContent {
    /// Bytes coded by this writer.
    Data(MemberData),
    /// Coded bytes of the existing wheel, copied as they are.
    Copied(CodedCopy),
}

/// Writes a [`RewriteSpec`] into a temp file in `dest_dir`, staged for `super::commit`.
pub fn stage_rewritten_wheel(
    dest_dir: &Path,
    spec: RewriteSpec,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<StagedFile, WriteError> {
    let file_name = &spec.file_name;
    if !file_name.ends_with(".whl") || file_name.contains(['/', '\\', '\0']) || file_name.starts_with('.') {
        return Err(WriteError::Invalid { reason: format!("{file_name:?} is not a wheel file name") });
    }
    let mut members: Vec<(Member, Option<Copy>)> = spec
        .members
        .into_iter()
        .map(|member| match member.content {
            RewriteContent::Data(data) => Ok((Member { name: member.name, data, executable: member.executable }, None)),
            RewriteContent::Copied(copy) => {
                // The writer copies the coded bytes; the member's data is never opened.
                let data = MemberData::Bytes(Arc::default());
                Ok((Member { name: member.name, data, executable: member.executable }, Some(copy.into_copy()?)))
            }
        })
        .collect::<Result<Vec<_>, WriteError>>()?;
    let dist_info_prefix = format!("{}/", spec.dist_info);
    let record = format!("{}/RECORD", spec.dist_info);
    let inventory_name = spec.inventory.as_ref().map(|inventory| format!("{}/{}", spec.dist_info, inventory.path));
    members.sort_by(|(a, _), (b, _)| {
        let key = |member: &Member| member.name.starts_with(&dist_info_prefix);
        key(a).cmp(&key(b)).then_with(|| a.name.cmp(&b.name))
    });
    for pair in members.windows(2) {
        if pair[0].0.name == pair[1].0.name {
            return Err(WriteError::Invalid { reason: format!("{} is in the wheel twice", pair[0].0.name) });
        }
    }
    for (member, _) in &members {
        check_member_name(&member.name)?;
        if member.name == record || Some(&member.name) == inventory_name.as_ref() {
            return Err(WriteError::Invalid { reason: format!("{} is written from the members' hashes", member.name) });
        }
    }
    let target = Target {
        file_name,
        dist_info: &spec.dist_info,
        generator: spec.generator.name,
        inventory: spec.inventory.as_ref(),
    };
    stage_members(dest_dir, &target, members, options, progress)
}
