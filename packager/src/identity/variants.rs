//! Names of the device payload as wheel variants (SPEC §9; PEP 825 and PEP 850, drafts):
//! the variant distribution, its labels, its index file and the provider plugin's
//! distribution.
//!
//! Owns: those names. Does not own: what the variant files say (`variants`), wheel file
//! names in general (`archive-write`'s `WheelFileName`).

use archive_write::file_name_form;

use super::distribution_stem;
use crate::config::PackageGroup;
use crate::targets::Target;

/// The distribution whose variant wheels stand for the device wheels, one label per owner:
/// `rocm-sdk-device`, the stem every device wheel's name starts with (SPEC §9).
pub fn device_variants_distribution() -> &'static str {
    distribution_stem(PackageGroup::Device)
}

/// The `amd` provider plugin's distribution, built from `packager/python/variant_provider`.
pub const VARIANT_PROVIDER_DISTRIBUTION: &str = "rocm-sdk-variant-provider";
/// Its import package, which is also its API endpoint (PEP 850 `plugin-api`).
pub const VARIANT_PROVIDER_PACKAGE: &str = "rocm_sdk_variant_provider";

/// The longest label variantlib's schema (0.2.0) accepts; PEP 825 sets no limit.
const MAX_LABEL_LEN: usize = 16;

/// A variant label (PEP 825: `^[0-9a-z_.]+$`, at most 16 characters in the 0.2.0 schema):
/// the owner's target as a feature value spells it, `gfx90a`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VariantLabel(String);

impl VariantLabel {
    /// The label of an owner's variant wheel, or `None` when its name cannot be one.
    pub fn of_owner(owner: &Target) -> Option<VariantLabel> {
        let label = gfx_arch_value(owner.as_str())?;
        (label.len() <= MAX_LABEL_LEN && label != "null").then_some(VariantLabel(label))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A GPU target as an `amd :: gfx_arch` value (`^[a-z0-9_.]+$`): lower case, `-` as `_`
/// (`gfx1250-strict` → `gfx1250_strict`), as the provider plugin spells what it detects.
pub fn gfx_arch_value(target: &str) -> Option<String> {
    let value = target.trim().to_ascii_lowercase().replace('-', "_");
    let allowed = |byte: u8| byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'_' | b'.');
    (!value.is_empty() && value.bytes().all(allowed)).then_some(value)
}

/// `{name}-{version}-variants.json` (PEP 825, index-level metadata), the name in its file
/// name form as wheels spell it.
pub fn variants_json_file_name(distribution: &str, version: &str) -> String {
    format!("{}-{version}{VARIANTS_JSON_SUFFIX}", file_name_form(distribution))
}

const VARIANTS_JSON_SUFFIX: &str = "-variants.json";

/// (distribution in file name form, version) of a `-variants.json` file name; `None` for
/// any other name.
pub fn parse_variants_json_file_name(file_name: &str) -> Option<(String, String)> {
    let stem = file_name.strip_suffix(VARIANTS_JSON_SUFFIX)?;
    let (distribution, version) = stem.split_once('-')?;
    (!distribution.is_empty() && !version.is_empty() && !version.contains('-'))
        .then(|| (distribution.to_owned(), version.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_owner_targets_as_pep_825_spells_them() {
        let label = |target: &str| VariantLabel::of_owner(&Target::from_target_id(target)).map(|label| label.0);
        assert_eq!(label("gfx90a:xnack+").as_deref(), Some("gfx90a"));
        assert_eq!(label("GFX1030").as_deref(), Some("gfx1030"));
        assert_eq!(label("gfx1250-strict").as_deref(), Some("gfx1250_strict"));
        assert_eq!(label("gfx+weird"), None);
        assert_eq!(label("gfx1234567890abcdef"), None, "longer than the schema's 16 characters");
    }

    #[test]
    fn variants_json_names_round_trip() {
        let name = variants_json_file_name("rocm-sdk-device", "7.12.0.dev0");
        assert_eq!(name, "rocm_sdk_device-7.12.0.dev0-variants.json");
        assert_eq!(
            parse_variants_json_file_name(&name),
            Some(("rocm_sdk_device".to_owned(), "7.12.0.dev0".to_owned()))
        );
        assert_eq!(parse_variants_json_file_name("rocm_sdk_device-7.0.json"), None);
        assert_eq!(parse_variants_json_file_name("rocm-sdk-device-7.0-variants.json"), None);
    }
}
