//! The device payload as wheel variants (SPEC §9; PEP 825 format and PEP 850 providers,
//! both drafts): `--variants` adds, beside the `rocm-sdk-device-{owner}` wheels, one
//! `rocm-sdk-device` variant wheel per owner labelled with its `amd :: gfx_arch` value,
//! the `{name}-{version}-variants.json` index file, and the wheel of the `amd` provider
//! plugin that tells an installer which value a machine's GPUs have.
//!
//! A variant wheel carries no payload: it requires its owner's device wheel, so every
//! installed path still belongs to exactly one distribution whichever route a user takes
//! (SPEC §6), and the payload is published once.
//!
//! Owns: which variants a build has, what their metadata says (`metadata`), and the
//! contents of the variant and provider wheels. Does not own: their names (`identity`),
//! the Python files (`python`), core metadata and writing (`assemble`, `write`).

mod metadata;

use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

use crate::build_os::BuildOs;
use crate::config::{DeviceVariants, OutputMode, PackageConfig};
use crate::identity::{self, PackageRole, PlatformTags, VariantLabel};
use crate::plan::{version::release_specifier, Plan};
use crate::python::{self, PythonPart};
use crate::targets::Target;
use crate::write::WheelRoot;

pub use metadata::{render_index, render_variant_json, SCHEMA_URL};

/// The namespace of our properties: the `amd` provider governs it.
pub const NAMESPACE: &str = "amd";
/// The one feature: the GPU target a device wheel carries code for.
pub const FEATURE: &str = "gfx_arch";
/// What a pure wheel's platform tag is.
const ANY_PLATFORM: &str = "any";

#[derive(Debug, thiserror::Error)]
pub enum VariantsError {
    #[error("--variants needs a kpack-split build (device wheels per target), and {} is a legacy build", artifacts_dir.display())]
    LegacyBuild { artifacts_dir: PathBuf },
    #[error("--variants needs a Linux build: the amd provider reads the GPUs from Linux's KFD topology")]
    WindowsBuild,
    #[error("--variants writes archives, and --no-build-packages lays out trees")]
    Trees,
    #[error("device wheel target {target:?} cannot be a variant label (PEP 825: [0-9a-z_.], at most 16 characters)")]
    BadLabel { target: String },
}

impl Diagnostic for VariantsError {
    fn path(&self) -> Option<&Path> {
        match self {
            VariantsError::LegacyBuild { artifacts_dir } => Some(artifacts_dir),
            _ => None,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::LegacyBuild { .. } => Some(
                "package a kpack-split build (its `base` artifact sets KPACK_SPLIT_ARTIFACTS), or leave out --variants: \
                 a legacy build's libraries wheels carry their families' device code, so there is no device wheel to \
                 offer as a variant",
            ),
            Self::WindowsBuild => Some("leave out --variants for a Windows build"),
            Self::Trees => Some("leave out --no-build-packages to write the variant wheels, or --variants to lay out trees"),
            Self::BadLabel { .. } => Some("rename the target's artifacts, or leave out --variants"),
        }
    }
}

/// One variant wheel: the owner it stands for and its label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceVariant {
    pub owner: Target,
    pub label: VariantLabel,
}

/// The variants of a build, one per device wheel (owner), in owner order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariantSet {
    pub version: String,
    pub variants: Vec<DeviceVariant>,
}

impl VariantSet {
    /// PEP 850 `requires` of the `amd` provider: our plugin's distribution, of this release.
    pub fn provider_requirement(&self) -> String {
        format!("{}{}", identity::VARIANT_PROVIDER_DISTRIBUTION, release_specifier(&self.version))
    }
}

/// The variants `config` asks for, or `None` without `--variants`; an error when the build
/// cannot have them (legacy, Windows, trees) or an owner's name cannot be a label.
pub fn plan_variants(plan: &Plan, config: &PackageConfig) -> Result<Option<VariantSet>, VariantsError> {
    if config.variants == DeviceVariants::Off {
        return Ok(None);
    }
    if !plan.kpack_split {
        return Err(VariantsError::LegacyBuild { artifacts_dir: config.artifacts_dir.clone() });
    }
    if plan.build_os == BuildOs::Windows {
        return Err(VariantsError::WindowsBuild);
    }
    if config.output == OutputMode::Trees {
        return Err(VariantsError::Trees);
    }
    let variants = plan
        .families
        .device_targets
        .iter()
        .map(|owner| {
            let label =
                VariantLabel::of_owner(owner).ok_or_else(|| VariantsError::BadLabel { target: owner.to_string() })?;
            Ok(DeviceVariant { owner: owner.clone(), label })
        })
        .collect::<Result<_, VariantsError>>()?;
    Ok(Some(VariantSet { version: plan.version.to_string(), variants }))
}

/// A wheel of the variant outputs, for `assemble` to give core metadata and write.
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
