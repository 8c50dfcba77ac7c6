//! The wheels and the file `--variants` adds to `dist/` (SPEC §9): a `rocm-sdk-device`
//! variant wheel per device wheel, labelled with its owner and requiring that owner's
//! device wheel, the `amd` provider plugin's wheel, and the `-variants.json` index file.
//!
//! Owns: the contents of those wheels and what their metadata says (`metadata`). Does not
//! own: which variants a build has (`plan::variants`), their names (`identity`), core
//! metadata and writing (the output stage).

mod metadata;

use archive_write::WheelRoot;

use crate::identity::{self, PackageRole, PlatformTags, VariantLabel};
use crate::output::python::{self, PythonPart};
use crate::plan::variants::{VariantSet, NAMESPACE};
use crate::plan::version::release_specifier;
use crate::plan::Plan;

pub use metadata::{render_index, render_variant_json, SCHEMA_URL};

/// What a pure wheel's platform tag is.
const ANY_PLATFORM: &str = "any";

/// A wheel of the variant outputs, for the output stage to give core metadata and write.
#[derive(Clone, Debug)]
pub struct VariantWheel {
    pub distribution: String,
    pub requires_dist: Vec<String>,
    pub platform_tag: String,
    pub root: WheelRoot,
    /// A variant wheel's label and its `variant.json` (PEP 825); `None` for the provider.
    pub variant: Option<(VariantLabel, Vec<u8>)>,
    pub python: PythonPart,
}

/// Everything `--variants` adds to `dist/`.
#[derive(Clone, Debug)]
pub struct VariantOutputs {
    pub wheels: Vec<VariantWheel>,
    /// `{name}-{version}-variants.json` and its bytes.
    pub index_file: (String, Vec<u8>),
}

/// The variant wheels (each with its owner's device wheel's platform tag, from `tags`),
/// the provider's wheel and the index file.
pub fn variant_outputs(set: &VariantSet, plan: &Plan, tags: &PlatformTags) -> Result<VariantOutputs, String> {
    let distribution = identity::device_variants_distribution().to_owned();
    let mut wheels = Vec::new();
    for variant in &set.variants {
        let role = PackageRole::Device { target: variant.owner.clone() };
        let device = plan.dist_info.names(&role).distribution;
        let platform_tag = tags.get(&role).ok_or_else(|| format!("no platform tag chosen for {device}"))?.clone();
        wheels.push(VariantWheel {
            distribution: distribution.clone(),
            requires_dist: vec![format!("{device}{}", release_specifier(&set.version))],
            platform_tag,
            root: WheelRoot::Platlib,
            variant: Some((variant.label.clone(), render_variant_json(set, variant))),
            python: PythonPart::default(),
        });
    }
    wheels.push(VariantWheel {
        distribution: identity::VARIANT_PROVIDER_DISTRIBUTION.to_owned(),
        requires_dist: Vec::new(),
        platform_tag: ANY_PLATFORM.to_owned(),
        root: WheelRoot::Purelib,
        variant: None,
        python: python::variant_provider_part(NAMESPACE),
    });
    let index_name = identity::variants_json_file_name(&distribution, &set.version);
    Ok(VariantOutputs { wheels, index_file: (index_name, render_index(set)) })
}
