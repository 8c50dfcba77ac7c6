//! The names a wheel's files derive from its file name ([`WheelNames`]), and its inventory
//! member: where it lies in `.dist-info` and its bytes, rendered from the digests of the
//! members written before it.
//!
//! Owns: those names and the rendering call. Does not own: writing (the parent).

use super::super::deflate::MemberDigest;
use super::super::names::DistName;
use super::super::{Inventory, ListedMember, WheelSpec, WriteError};

/// The names a wheel's files derive from its file name.
pub struct WheelNames {
    /// `{name}-{version}` as file names spell it.
    pub stem: String,
    pub file_name: String,
    pub dist_info: String,
}

impl WheelNames {
    /// The names of `spec`'s wheel, once its metadata is checked and agrees with its file
    /// name: the same distribution (PEP 503) and version, and a label exactly when it has a
    /// `variant.json`.
    pub fn new(spec: &WheelSpec) -> Result<WheelNames, WriteError> {
        super::super::metadata::check_metadata(&spec.metadata)?;
        let file_name = &spec.file_name;
        if DistName::new(&spec.metadata.name)? != file_name.name || spec.metadata.version != file_name.version.as_str()
        {
            let reason = format!(
                "the wheel file name {file_name} does not name {} {}, the distribution its metadata describes",
                spec.metadata.name, spec.metadata.version
            );
            return Err(WriteError::Invalid { reason });
        }
        if file_name.variant.is_some() != spec.variant_json.is_some() {
            let reason = format!("{file_name}: a variant wheel has a label and a variant.json, others neither");
            return Err(WriteError::Invalid { reason });
        }
        Ok(WheelNames {
            file_name: file_name.to_string(),
            dist_info: file_name.dist_info_dir(),
            stem: file_name.stem(),
        })
    }

    pub fn record(&self) -> String {
        format!("{}/RECORD", self.dist_info)
    }

    /// The member path of the spec's inventory, if it has one.
    pub fn inventory(&self, spec: &WheelSpec) -> Option<String> {
        spec.inventory.as_ref().map(|inventory| format!("{}/{}", self.dist_info, inventory.path))
    }
}

/// The inventory's member path and bytes, rendered from every member written before it.
pub fn render_inventory<'a>(
    spec: &WheelSpec,
    names: &WheelNames,
    members: impl Iterator<Item = (&'a str, &'a MemberDigest)>,
) -> Option<(String, Vec<u8>)> {
    rendered(spec.inventory.as_ref()?, &names.dist_info, &names.file_name, members)
}

/// `inventory`'s member path in `dist_info` and its bytes, rendered from `members`.
pub(crate) fn rendered<'a>(
    inventory: &Inventory,
    dist_info: &str,
    file_name: &str,
    members: impl Iterator<Item = (&'a str, &'a MemberDigest)>,
) -> Option<(String, Vec<u8>)> {
    let listed: Vec<ListedMember<'_>> =
        members.map(|(name, digest)| ListedMember { name, sha256: digest.sha256, size: digest.len }).collect();
    Some((format!("{dist_info}/{}", inventory.path), inventory.render.render(file_name, &listed)))
}
