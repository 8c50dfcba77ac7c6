//! The names a wheel's files derive from its metadata ([`WheelNames`]), and its inventory
//! member: where it lies in `.dist-info` and its bytes, rendered from the digests of the
//! members written before it.
//!
//! Owns: those names and the rendering call. Does not own: writing (the parent).

use super::super::deflate::MemberDigest;
use super::super::metadata::{check_platform_tag, check_variant_label, file_name_version, normalize_dist_name};
use super::super::{Inventory, ListedMember, WheelSpec, WriteError};

/// The names a wheel's files derive from its metadata.
pub struct WheelNames {
    /// `{name}-{version}` as file names spell it.
    pub stem: String,
    pub file_name: String,
    pub dist_info: String,
}

impl WheelNames {
    pub fn new(spec: &WheelSpec) -> Result<WheelNames, WriteError> {
        super::super::metadata::check_metadata(&spec.metadata)?;
        check_platform_tag(&spec.platform_tag)?;
        let stem =
            format!("{}-{}", normalize_dist_name(&spec.metadata.name), file_name_version(&spec.metadata.version));
        // PEP 825: the label follows the platform tag; the python tag (`py3`) never starts
        // with a digit, so the name cannot be read as one with a build tag.
        let label = match &spec.variant {
            Some(variant) => {
                check_variant_label(&variant.label)?;
                format!("-{}", variant.label)
            }
            None => String::new(),
        };
        Ok(WheelNames {
            file_name: format!("{stem}-py3-none-{}{label}.whl", spec.platform_tag),
            dist_info: format!("{stem}.dist-info"),
            stem,
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
