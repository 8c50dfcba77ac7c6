//! What the variant files say (PEP 825 `variant.json` and `{name}-{version}-variants.json`,
//! with PEP 850's `providers`; format 0.2.0 of the drafts): written from typed values,
//! keys sorted, so the same build gives the same bytes.
//!
//! Owns: the JSON. Does not own: which variants there are (`plan::variants`).

use std::collections::BTreeMap;

use crate::identity;
use crate::plan::variants::{DeviceVariant, VariantSet, FEATURE, NAMESPACE};

/// `$schema`: format 0.2.0 at the URL of the providers draft (PEP 850), the one uv's wheel
/// variant support knows alongside PEP 825's 0.1.1 (SPEC §9; the drafts leave the final
/// URL on packaging.python.org open).
pub const SCHEMA_URL: &str = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json";

/// namespace → feature → values.
type Properties = BTreeMap<&'static str, BTreeMap<&'static str, Vec<String>>>;

#[derive(serde::Serialize)]
struct VariantMetadata {
    #[serde(rename = "$schema")]
    schema: &'static str,
    #[serde(rename = "default-priorities")]
    default_priorities: DefaultPriorities,
    providers: BTreeMap<&'static str, Provider>,
    variants: BTreeMap<String, Properties>,
}

#[derive(serde::Serialize)]
struct DefaultPriorities {
    namespace: Vec<&'static str>,
}

#[derive(serde::Serialize)]
struct Provider {
    requires: Vec<String>,
    #[serde(rename = "plugin-api")]
    plugin_api: &'static str,
}

/// A variant's properties: `amd :: gfx_arch :: {owner}`. An owner's members that are not
/// GPUs a machine reports (`gfx1250-strict`) are no value of their own: the owner's GPU
/// needs this wheel, and the plugin reports only what the KFD topology names.
fn properties(variant: &DeviceVariant) -> Properties {
    let value = variant.label.as_str().to_owned();
    BTreeMap::from([(NAMESPACE, BTreeMap::from([(FEATURE, vec![value])]))])
}

fn metadata<'a>(set: &VariantSet, variants: impl Iterator<Item = &'a DeviceVariant>) -> VariantMetadata {
    let provider =
        Provider { requires: vec![set.provider_requirement()], plugin_api: identity::VARIANT_PROVIDER_PACKAGE };
    VariantMetadata {
        schema: SCHEMA_URL,
        default_priorities: DefaultPriorities { namespace: vec![NAMESPACE] },
        providers: BTreeMap::from([(NAMESPACE, provider)]),
        variants: variants.map(|variant| (variant.label.as_str().to_owned(), properties(variant))).collect(),
    }
}

fn to_json(metadata: &VariantMetadata) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(metadata).expect("variant metadata is plain strings and maps");
    bytes.push(b'\n');
    bytes
}

/// `*.dist-info/variant.json` of one variant wheel: exactly its own label.
pub fn render_variant_json(set: &VariantSet, variant: &DeviceVariant) -> Vec<u8> {
    to_json(&metadata(set, std::iter::once(variant)))
}

/// `{name}-{version}-variants.json`: every variant of the release.
pub fn render_index(set: &VariantSet) -> Vec<u8> {
    to_json(&metadata(set, set.variants.iter()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::VariantLabel;
    use crate::targets::Target;

    fn set() -> VariantSet {
        let variant = |target: &str| {
            let owner = Target::from_target_id(target);
            DeviceVariant { label: VariantLabel::of_owner(&owner).expect("label"), owner }
        };
        VariantSet { version: "7.12.0".to_owned(), variants: vec![variant("gfx1030"), variant("gfx90a")] }
    }

    #[test]
    fn a_wheel_names_its_own_label_and_the_provider() {
        let set = set();
        let text = String::from_utf8(render_variant_json(&set, &set.variants[1])).expect("utf-8");
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        let expected = serde_json::json!({
            "$schema": SCHEMA_URL,
            "default-priorities": {"namespace": ["amd"]},
            "providers": {"amd": {"requires": ["rocm-sdk-variant-provider>=7.12.0,<7.12.0.0.1"], "plugin-api": "rocm_sdk_variant_provider"}},
            "variants": {"gfx90a": {"amd": {"gfx_arch": ["gfx90a"]}}},
        });
        assert_eq!(value, expected);
        assert!(text.ends_with("}\n"));
    }

    #[test]
    fn the_index_lists_every_label_in_order() {
        let text = String::from_utf8(render_index(&set())).expect("utf-8");
        let gfx1030 = text.find("\"gfx1030\": {").expect("gfx1030");
        let gfx90a = text.find("\"gfx90a\": {").expect("gfx90a");
        assert!(gfx1030 < gfx90a, "{text}");
        assert!(text.find("\"$schema\"") < text.find("\"variants\""));
    }
}
