//! The names a Python package's files carry, typed: a distribution name compared by its
//! PEP 503 normal form ([`DistName`], through the one [`normalize`]), a PEP 440 version
//! parsed once ([`Version`]), a platform tag ([`PlatformTag`]), and the wheel file name
//! they make ([`WheelFileName`]: one constructor, [`FromStr`] and [`Display`], the shape of
//! uv's `WheelFilename`). Nothing else in the writer, nor in a crate that uses it, spells
//! or splits a wheel's file name.
//!
//! Hand-written: the one maintained parser on crates.io (`uv-distribution-filename`) is an
//! internal crate of uv with no stable API, needs a newer rustc than the workspace's floor
//! and brings ~100 crates; this takes a page. Versions are `pep440_rs`'s.
//!
//! The release gate splits the file names it judges with a parser of its own, on purpose
//! (it shares no code with the writer); this is the one on the writer's side.
//!
//! Owns: validating, normalising, splitting and joining names. Does not own: what the
//! names of a product's packages are (the caller's).

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// A name, version or tag that cannot be part of a file name, with the reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NameError(String);

/// PEP 503 normalisation: lower case, each run of `-`, `_` and `.` becomes one `-`. What an
/// index and a requirement compare distribution names by.
pub fn normalize(name: &str) -> String {
    fold_separators(name).chars().flat_map(char::to_lowercase).collect()
}

/// Each run of `-`, `_` and `.` as one `-`, the case kept: [`normalize`] before it lowers
/// the case, and how a caller spells a name whose case it keeps.
pub fn fold_separators(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_separator {
                out.push('-');
            }
            in_separator = true;
        } else {
            out.push(c);
            in_separator = false;
        }
    }
    out
}

/// The form a distribution name takes in wheel and sdist file names (PEP 427, PEP 625):
/// normalised, `-` as `_`.
pub fn file_name_form(name: &str) -> String {
    normalize(name).replace('-', "_")
}

/// A version as file names spell it: a version spelled with `-` (not in normal form) cannot
/// stand in a file name as is, so `-` becomes `_`.
pub fn file_name_version(version: &str) -> String {
    version.replace('-', "_")
}

/// A distribution name as it was given (`my-sdk-core`, what METADATA's `Name:` says),
/// equal to another when both normalise alike (PEP 503).
#[derive(Clone, Debug)]
pub struct DistName(String);

impl DistName {
    /// `name`, if it can be one: ASCII letters, digits, `-`, `_` and `.`, not empty.
    pub fn new(name: &str) -> Result<DistName, NameError> {
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        match valid {
            true => Ok(DistName(name.to_owned())),
            false => Err(NameError(format!("distribution name {name:?} is not a valid name"))),
        }
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its PEP 503 normal form: `my-sdk-core`.
    pub fn normalized(&self) -> String {
        normalize(&self.0)
    }

    /// As file names spell it: `my_sdk_core`.
    pub fn file_name_form(&self) -> String {
        file_name_form(&self.0)
    }
}

impl PartialEq for DistName {
    fn eq(&self, other: &DistName) -> bool {
        self.normalized() == other.normalized()
    }
}

impl Eq for DistName {}

impl Hash for DistName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.normalized().hash(state);
    }
}

impl PartialOrd for DistName {
    fn partial_cmp(&self, other: &DistName) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DistName {
    fn cmp(&self, other: &DistName) -> Ordering {
        self.normalized().cmp(&other.normalized())
    }
}

impl FromStr for DistName {
    type Err = NameError;

    fn from_str(name: &str) -> Result<DistName, NameError> {
        DistName::new(name)
    }
}

impl fmt::Display for DistName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A PEP 440 version, parsed once, kept as it was spelled. Two versions are the same when
/// they are spelled the same: a file name carries its version as it is, so `7.0` and
/// `7.0.0` are two files even though PEP 440 orders them equal (`pep440` compares so).
#[derive(Clone, Debug)]
pub struct Version {
    text: String,
    parsed: pep440_rs::Version,
}

impl Version {
    /// `text` as a PEP 440 version; the error is `pep440_rs`'s reason.
    pub fn parse(text: &str) -> Result<Version, NameError> {
        let parsed = text.parse::<pep440_rs::Version>().map_err(|error| NameError(error.to_string()))?;
        Ok(Version { text: text.to_owned(), parsed })
    }

    /// As spelled.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The parsed version, for PEP 440's comparisons and normal form.
    pub fn pep440(&self) -> &pep440_rs::Version {
        &self.parsed
    }

    /// Whether it is spelled in PEP 440's normal form (`7.12.0.dev0`, not `7.12.0-dev0`).
    pub fn is_normal_form(&self) -> bool {
        self.parsed.to_string() == self.text
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Version) -> bool {
        self.text == other.text
    }
}

impl Eq for Version {}

impl Hash for Version {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}

impl FromStr for Version {
    type Err = NameError;

    fn from_str(text: &str) -> Result<Version, NameError> {
        Version::parse(text)
    }
}

/// As spelled: the plan's and the report's JSON carry the version as a string.
impl serde::Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A wheel's platform tag, or a compressed tag set: `linux_x86_64`,
/// `manylinux_2_17_x86_64.manylinux2014_x86_64`, `win_amd64`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlatformTag(String);

impl PlatformTag {
    /// `tag`, if it can stand in a file name and a WHEEL file: ASCII letters, digits, `_`
    /// and `.`, not empty.
    pub fn new(tag: &str) -> Result<PlatformTag, NameError> {
        match !tag.is_empty() && tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            true => Ok(PlatformTag(tag.to_owned())),
            false => Err(NameError(format!("platform tag {tag:?} is not a valid tag"))),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it is a Windows platform (`win_amd64`, `win32`, `win_arm64`).
    pub fn is_windows(&self) -> bool {
        self.0.starts_with("win")
    }
}

impl FromStr for PlatformTag {
    type Err = NameError;

    fn from_str(tag: &str) -> Result<PlatformTag, NameError> {
        PlatformTag::new(tag)
    }
}

impl fmt::Display for PlatformTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The python and ABI tags of every wheel [`WheelFileName::new`] names: pure Python 3
/// code with native files loaded by path, no extension module.
const PYTHON_TAG: &str = "py3";
const ABI_TAG: &str = "none";

/// `{distribution}-{version}(-{build})?-{python}-{abi}-{platform}(-{label})?.whl`
/// (PEP 427/491, and PEP 825's variant label).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WheelFileName {
    pub name: DistName,
    pub version: Version,
    pub build: Option<String>,
    pub python: String,
    pub abi: String,
    pub platform: PlatformTag,
    /// A variant wheel's label (PEP 825, draft: `^[0-9a-z_.]+$`).
    pub variant: Option<String>,
}

impl WheelFileName {
    /// The name of a `py3-none-{platform}` wheel without a build tag, the one shape this
    /// writer makes; `variant` is a variant wheel's label. Refuses a label PEP 825 does not
    /// allow.
    pub fn new(
        name: DistName,
        version: Version,
        platform: PlatformTag,
        variant: Option<&str>,
    ) -> Result<WheelFileName, NameError> {
        if let Some(label) = variant {
            check_variant_label(label)?;
        }
        let wheel = WheelFileName {
            name,
            version,
            build: None,
            python: PYTHON_TAG.to_owned(),
            abi: ABI_TAG.to_owned(),
            platform,
            variant: variant.map(str::to_owned),
        };
        // Longer, it or its temp name would not fit a file system (NAME_MAX).
        let length = wheel.to_string().len();
        let bound = crate::atomic::MAX_NAME_BYTES;
        if length > bound {
            return Err(NameError(format!(
                "the wheel file name `{wheel}` is {length} bytes long; a file name written here may be at most \
                 {bound} bytes (its temporary name must fit 255)"
            )));
        }
        Ok(wheel)
    }

    /// `{name}-{version}` as file names spell them: what the `.dist-info` directory and an
    /// unpacked tree are named after.
    pub fn stem(&self) -> String {
        format!("{}-{}", self.name.file_name_form(), file_name_version(self.version.as_str()))
    }

    /// The `.dist-info` directory inside the wheel.
    pub fn dist_info_dir(&self) -> String {
        format!("{}.dist-info", self.stem())
    }

    /// The `Tag:` line's value in the WHEEL file: `py3-none-linux_x86_64`.
    pub fn tag(&self) -> String {
        format!("{}-{}-{}", self.python, self.abi, self.platform)
    }
}

/// Refuses a variant label PEP 825 does not allow (`^[0-9a-z_.]+$`).
pub fn check_variant_label(label: &str) -> Result<(), NameError> {
    let allowed = |byte: u8| byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'_' | b'.');
    match !label.is_empty() && label.bytes().all(allowed) {
        true => Ok(()),
        false => Err(NameError(format!("variant label {label:?} is not a valid label"))),
    }
}

impl FromStr for WheelFileName {
    type Err = NameError;

    /// The parts of a wheel file name; of six parts, the third is a build tag when it
    /// starts with a digit, else the python tag of a variant wheel (PEP 825 keeps python
    /// tags from starting with a digit so that the two readings never meet).
    fn from_str(file_name: &str) -> Result<WheelFileName, NameError> {
        let not_a_wheel = || NameError(format!("{file_name:?} is not a wheel file name"));
        let stem = file_name.strip_suffix(".whl").ok_or_else(not_a_wheel)?;
        let parts: Vec<&str> = stem.split('-').collect();
        let is_build = |part: &&str| part.starts_with(|c: char| c.is_ascii_digit());
        let (name, version, build, python, abi, platform, variant) = match parts.as_slice() {
            [name, version, python, abi, platform] => (name, version, None, python, abi, platform, None),
            [name, version, build, python, abi, platform] if is_build(build) => {
                (name, version, Some(*build), python, abi, platform, None)
            }
            [name, version, python, abi, platform, label] => (name, version, None, python, abi, platform, Some(*label)),
            [name, version, build, python, abi, platform, label] if is_build(build) => {
                (name, version, Some(*build), python, abi, platform, Some(*label))
            }
            _ => return Err(not_a_wheel()),
        };
        if python.is_empty() || abi.is_empty() {
            return Err(not_a_wheel());
        }
        Ok(WheelFileName {
            name: DistName::new(name)?,
            version: Version::parse(version)?,
            build: build.map(str::to_owned),
            python: (*python).to_owned(),
            abi: (*abi).to_owned(),
            platform: PlatformTag::new(platform)?,
            variant: variant.map(str::to_owned),
        })
    }
}

impl fmt::Display for WheelFileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.stem())?;
        if let Some(build) = &self.build {
            write!(f, "-{build}")?;
        }
        write!(f, "-{}-{}-{}", self.python, self.abi, self.platform)?;
        if let Some(label) = &self.variant {
            write!(f, "-{label}")?;
        }
        f.write_str(".whl")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays_the_same_name() {
        for name in [
            "my_sdk_core-7.12.0.dev0-py3-none-linux_x86_64.whl",
            "my_sdk_core-7.12.0-1-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            "my_sdk_device-7.12.0-py3-none-linux_x86_64-sm_90a.whl",
            "my_sdk_device-7.12.0-1-py3-none-linux_x86_64-sm_90a.whl",
        ] {
            let parsed: WheelFileName = name.parse().expect(name);
            assert_eq!(parsed.to_string(), name);
        }
        let parsed: WheelFileName = "my_sdk_core-7.0-py3-none-win_amd64.whl".parse().expect("valid");
        assert_eq!((parsed.name.as_str(), parsed.version.as_str()), ("my_sdk_core", "7.0"));
        assert!(parsed.platform.is_windows());
        let variant: WheelFileName = "my_sdk_device-7.0-py3-none-linux_x86_64-x86_64_v3.whl".parse().expect("valid");
        assert_eq!((variant.build, variant.variant.as_deref()), (None, Some("x86_64_v3")));
        let built: WheelFileName = "my_sdk_core-7.0-2-py3-none-linux_x86_64.whl".parse().expect("valid");
        assert_eq!((built.build.as_deref(), built.variant), (Some("2"), None));
        for not_a_wheel in
            ["demo-7.0.tar.gz", "a-1-py3-none.whl", "a-notaversion-py3-none-any.whl", "a-1-py3-none-x!y.whl"]
        {
            assert!(not_a_wheel.parse::<WheelFileName>().is_err(), "{not_a_wheel}");
        }
    }

    /// The one constructor spells what the writer writes: the distribution in file-name
    /// form, `py3-none`, the platform, the label last.
    #[test]
    fn the_constructor_names_a_py3_none_wheel() {
        let name = DistName::new("My.SDK--Core").expect("name");
        let version = Version::parse("7.1.0rc1").expect("version");
        let platform = PlatformTag::new("manylinux_2_28_x86_64").expect("tag");
        let wheel = WheelFileName::new(name.clone(), version.clone(), platform.clone(), None).expect("valid");
        assert_eq!(wheel.to_string(), "my_sdk_core-7.1.0rc1-py3-none-manylinux_2_28_x86_64.whl");
        assert_eq!(wheel.dist_info_dir(), "my_sdk_core-7.1.0rc1.dist-info");
        assert_eq!(wheel.tag(), "py3-none-manylinux_2_28_x86_64");
        assert_eq!(wheel.to_string().parse::<WheelFileName>(), Ok(wheel));
        let labelled = WheelFileName::new(name.clone(), version.clone(), platform.clone(), Some("x86_64_v3"));
        assert!(labelled.expect("valid").to_string().ends_with("-manylinux_2_28_x86_64-x86_64_v3.whl"));
        for label in ["", "Sm90a", "sm_90a-x", "a/b"] {
            assert!(
                WheelFileName::new(name.clone(), version.clone(), platform.clone(), Some(label)).is_err(),
                "{label}"
            );
        }
    }

    #[test]
    fn names_compare_by_their_normal_form() {
        assert_eq!(normalize("my-sdk-core"), "my-sdk-core");
        assert_eq!(normalize("my_sdk_libraries_family110X_all"), "my-sdk-libraries-family110x-all");
        assert_eq!(normalize("A.-_b"), "a-b");
        assert_eq!(file_name_form("my-sdk-libraries-family110X-all"), "my_sdk_libraries_family110x_all");
        assert_eq!(file_name_form("A.b--C__d"), "a_b_c_d");
        assert_eq!(fold_separators("family110X..all"), "family110X-all", "the case kept");
        let name = |text: &str| DistName::new(text).expect(text);
        assert_eq!(name("My_SDK.core"), name("my-sdk-core"));
        assert_ne!(name("my-sdk-core"), name("my-sdk-cores"));
        assert_eq!(name("My_SDK.core").as_str(), "My_SDK.core", "kept as given");
        for bad in ["", "a b", "a/b", "é"] {
            assert!(DistName::new(bad).is_err(), "{bad:?}");
        }
    }

    /// A version is the same version only when spelled the same: a file name carries it as is.
    #[test]
    fn versions_are_parsed_once_and_kept_as_spelled() {
        let version = |text: &str| Version::parse(text).expect(text);
        assert_ne!(version("7.0"), version("7.0.0"));
        assert_eq!(version("7.0").pep440(), version("7.0.0").pep440());
        assert!(version("7.12.0.dev0").is_normal_form());
        assert!(!version("7.12.0-dev0").is_normal_form());
        assert!(Version::parse("garbage").is_err());
    }
}
