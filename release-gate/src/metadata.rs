//! Names, versions, tags and metadata files: wheel and sdist file names (PEP 427/491/625),
//! PEP 440 versions, METADATA / PKG-INFO / WHEEL headers, `Requires-Dist` pins, and the
//! target list of a `rocm` sdist's `_dist_info_data.py`.
//!
//! Owns: parsing these texts leniently and judging one package's metadata against its
//! file name. Does not own: reading archives (`archive`), cross-package rules (`set`).

use std::collections::BTreeSet;

use super::report::{Check, Findings};

/// The parts of a wheel file name `{name}-{version}(-{build})?-{python}-{abi}-{platform}(-{label})?.whl`
/// (PEP 427/491; the variant label is PEP 825's, a draft).
/// The gate's own reading, not the packager's `WheelFileName`: it shares no code with what
/// it judges, and the one maintained parser (`uv-distribution-filename`) is an internal
/// crate of uv with no stable API that needs a newer rustc than the workspace's floor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WheelName {
    pub name: String,
    pub version: String,
    pub build: Option<String>,
    pub python: String,
    pub abi: String,
    pub platform: String,
    /// A variant wheel's label.
    pub variant: Option<String>,
}

impl WheelName {
    /// Every `python-abi-platform` triple of the (possibly compressed) tag set.
    pub fn expanded_tags(&self) -> BTreeSet<String> {
        let mut tags = BTreeSet::new();
        for python in self.python.split('.') {
            for abi in self.abi.split('.') {
                for platform in self.platform.split('.') {
                    tags.insert(format!("{python}-{abi}-{platform}"));
                }
            }
        }
        tags
    }
}

pub(crate) fn parse_wheel_name(file: &str) -> Result<WheelName, String> {
    let stem = file.strip_suffix(".whl").ok_or_else(|| "does not end in .whl".to_owned())?;
    let parts: Vec<&str> = stem.split('-').collect();
    // PEP 825: a python tag never starts with a digit, a build tag always does, so six
    // parts are either a build tag or a variant label, never both readings.
    let is_build = |part: &&str| part.starts_with(|c: char| c.is_ascii_digit());
    let (name, version, build, tags, variant) = match parts.as_slice() {
        [name, version, python, abi, platform] => (name, version, None, [python, abi, platform], None),
        [name, version, build, python, abi, platform] if is_build(build) => {
            (name, version, Some(*build), [python, abi, platform], None)
        }
        [name, version, python, abi, platform, label] => (name, version, None, [python, abi, platform], Some(*label)),
        [name, version, build, python, abi, platform, label] if is_build(build) => {
            (name, version, Some(*build), [python, abi, platform], Some(*label))
        }
        _ => return Err(format!("has {} dash-separated parts, expected 5 to 7", parts.len())),
    };
    if let Some(label) = variant.filter(|label| label.is_empty() || !label.chars().all(is_tag_char)) {
        return Err(format!("variant label `{label}` is not [0-9a-z_.]+ (PEP 825)"));
    }
    let tag_ok =
        |tag: &str| !tag.is_empty() && tag.split('.').all(|part| !part.is_empty()) && tag.chars().all(is_tag_char);
    if let Some(bad) = tags.iter().find(|tag| !tag_ok(tag)) {
        return Err(format!("tag part `{bad}` is not a valid compressed tag"));
    }
    Ok(WheelName {
        name: (*name).to_owned(),
        version: (*version).to_owned(),
        build: build.map(str::to_owned),
        python: (*tags[0]).to_owned(),
        abi: (*tags[1]).to_owned(),
        platform: (*tags[2]).to_owned(),
        variant: variant.map(str::to_owned),
    })
}

fn is_tag_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.'
}

/// `{name}-{version}.tar.gz` → (name, version).
pub(crate) fn parse_sdist_name(file: &str) -> Result<(String, String), String> {
    let stem = file.strip_suffix(".tar.gz").ok_or_else(|| "does not end in .tar.gz".to_owned())?;
    let (name, version) = stem.rsplit_once('-').ok_or_else(|| "has no `-` between name and version".to_owned())?;
    Ok((name.to_owned(), version.to_owned()))
}

/// PEP 503 normalisation: lower case, runs of `-_.` become one `-`.
pub(crate) fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_separator {
                out.push('-');
            }
            in_separator = true;
        } else {
            out.extend(c.to_lowercase());
            in_separator = false;
        }
    }
    out
}

/// The form a distribution name takes in file names: normalised, `-` → `_`.
pub(crate) fn file_name_form(name: &str) -> String {
    normalize_name(name).replace('-', "_")
}

/// A normalised PEP 440 version: `[N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local]`, as
/// `pep440_rs` (the parser the packager checks `--version` with too) writes it.
pub(crate) fn is_normalized_version(version: &str) -> bool {
    version.parse::<pep440_rs::Version>().is_ok_and(|parsed| parsed.to_string() == version)
}

/// Email-style headers up to the first blank line; continuation lines are joined.
pub(crate) fn parse_headers(text: &str) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = headers.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            headers.push((key.trim().to_owned(), value.trim().to_owned()));
        }
    }
    headers
}

pub(crate) fn header<'a>(headers: &'a [(String, String)], key: &str) -> Option<&'a str> {
    headers.iter().find(|(name, _)| name.eq_ignore_ascii_case(key)).map(|(_, value)| value.as_str())
}

fn header_values<'a>(headers: &'a [(String, String)], key: &'a str) -> impl Iterator<Item = &'a str> {
    headers.iter().filter(move |(name, _)| name.eq_ignore_ascii_case(key)).map(|(_, value)| value.as_str())
}

/// `Requires-Dist` entries with a version specifier: (normalised name, the specifiers as
/// written, `>=7.12.0,<7.12.0.0.1`, the whole line). Extras and parentheses are left out.
pub(crate) fn version_pins(headers: &[(String, String)]) -> Vec<(String, String, String)> {
    let mut pins = Vec::new();
    for requirement in header_values(headers, "Requires-Dist") {
        let requirement_part = requirement.split(';').next().unwrap_or_default();
        let name_end = requirement_part
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(requirement_part.len());
        let name = normalize_name(&requirement_part[..name_end]);
        let rest = requirement_part[name_end..].trim_start();
        let rest = match rest.strip_prefix('[') {
            Some(extras) => extras.split_once(']').map_or("", |(_, after)| after),
            None => rest,
        };
        let specifiers = rest.trim().trim_start_matches('(').trim_end_matches(')').trim();
        if !specifiers.is_empty() {
            pins.push((name, specifiers.to_owned(), requirement.to_owned()));
        }
    }
    pins
}

/// Compares a wheel's METADATA and WHEEL with its file name.
pub(crate) fn check_wheel_metadata(
    file: &str,
    wheel_name: &WheelName,
    dist_info: &str,
    metadata: Option<&str>,
    wheel: Option<&str>,
    findings: &mut Findings,
) {
    let metadata_path = format!("{dist_info}/METADATA");
    match metadata {
        None => findings.violation(file, Some(&metadata_path), Check::Metadata, "METADATA is missing"),
        Some(text) => {
            let headers = parse_headers(text);
            check_core_metadata(file, &metadata_path, &headers, &wheel_name.name, &wheel_name.version, findings);
        }
    }
    let wheel_path = format!("{dist_info}/WHEEL");
    let Some(text) = wheel else {
        findings.violation(file, Some(&wheel_path), Check::Metadata, "WHEEL is missing");
        return;
    };
    let headers = parse_headers(text);
    if header(&headers, "Wheel-Version").is_none() {
        findings.violation(file, Some(&wheel_path), Check::Metadata, "WHEEL has no Wheel-Version");
    }
    check_single_fields(
        file,
        &wheel_path,
        &headers,
        &["Wheel-Version", "Root-Is-Purelib", "Generator", "Build"],
        findings,
    );
    match header(&headers, "Root-Is-Purelib") {
        None => findings.violation(file, Some(&wheel_path), Check::Metadata, "WHEEL has no Root-Is-Purelib"),
        // Installed to purelib, which differs from platlib on some systems (Fedora's lib
        // and lib64): the one site-packages our relative RPATHs rely on would be split
        // (SPEC §2, "One site-packages").
        Some("true") if wheel_name.platform != "any" => findings.violation(
            file,
            Some(&wheel_path),
            Check::Metadata,
            format!(
                "Root-Is-Purelib is `true` on a platform wheel ({}): installers may put it apart from the \
                 platform wheels it reaches through relative RPATHs",
                wheel_name.platform
            ),
        ),
        Some("true" | "false") => {}
        Some(other) => findings.violation(
            file,
            Some(&wheel_path),
            Check::Metadata,
            format!("Root-Is-Purelib is `{other}`, expected `true` or `false`"),
        ),
    }
    let declared: BTreeSet<String> = header_values(&headers, "Tag").map(str::to_owned).collect();
    let expected = wheel_name.expanded_tags();
    if declared != expected {
        let declared_list = declared.iter().cloned().collect::<Vec<_>>().join(", ");
        let expected_list = expected.iter().cloned().collect::<Vec<_>>().join(", ");
        findings.violation(
            file,
            Some(&wheel_path),
            Check::Metadata,
            format!("WHEEL Tag lines [{declared_list}] differ from the file name's tags [{expected_list}]"),
        );
    }
}

/// The core metadata fields that appear at most once (the core metadata specifications;
/// the others, `Requires-Dist`, `Classifier`, ..., may repeat). A second `Name:` leaves
/// which name a tool reads to the tool.
const SINGLE_METADATA_FIELDS: &[&str] = &[
    "Metadata-Version",
    "Name",
    "Version",
    "Summary",
    "Description",
    "Description-Content-Type",
    "Home-page",
    "Download-URL",
    "Author",
    "Author-email",
    "Maintainer",
    "Maintainer-email",
    "License",
    "License-Expression",
    "Requires-Python",
];

/// A violation for each of `fields` that `headers` hold more than once.
fn check_single_fields(file: &str, path: &str, headers: &[(String, String)], fields: &[&str], findings: &mut Findings) {
    for field in fields {
        let values: Vec<&str> = header_values(headers, field).collect();
        if values.len() > 1 {
            let values: Vec<String> =
                values.iter().map(|value| format!("`{}`", crate::escape::escape(value))).collect();
            findings.violation(
                file,
                Some(path),
                Check::Metadata,
                format!("{field} appears {} times ({}); it may appear once", values.len(), values.join(", ")),
            );
        }
    }
}

/// Metadata-Version, Name and Version of METADATA or PKG-INFO against the file name.
pub(crate) fn check_core_metadata(
    file: &str,
    path: &str,
    headers: &[(String, String)],
    file_name_part: &str,
    file_version: &str,
    findings: &mut Findings,
) {
    if header(headers, "Metadata-Version").is_none() {
        findings.violation(file, Some(path), Check::Metadata, "no Metadata-Version");
    }
    check_single_fields(file, path, headers, SINGLE_METADATA_FIELDS, findings);
    match header(headers, "Name") {
        None => findings.violation(file, Some(path), Check::Metadata, "no Name"),
        Some(name) if file_name_form(name) != file_name_form(file_name_part) => findings.violation(
            file,
            Some(path),
            Check::Metadata,
            format!("Name `{name}` does not match the file name's `{file_name_part}`"),
        ),
        Some(_) => {}
    }
    match header(headers, "Version") {
        None => findings.violation(file, Some(path), Check::Metadata, "no Version"),
        Some(version) if version != file_version => findings.violation(
            file,
            Some(path),
            Check::Metadata,
            format!("Version `{version}` does not match the file name's `{file_version}`"),
        ),
        Some(_) => {}
    }
}

/// The strings of `AVAILABLE_TARGET_FAMILIES = [...]` in a `_dist_info_data.py`, read leniently
/// (any bracket kind, either quote, trailing commas), without running Python.
pub(crate) fn available_target_families(source: &str) -> Option<Vec<String>> {
    string_list(source, "AVAILABLE_TARGET_FAMILIES")
}

/// The strings of `{key} = [...]` in a `_dist_info_data.py`, read leniently, as
/// [`available_target_families`].
pub(crate) fn string_list(source: &str, key: &str) -> Option<Vec<String>> {
    let start = source.find(&format!("{key} ")).or_else(|| source.find(&format!("{key}=")))?;
    let rest = &source[start + key.len()..];
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let close = match rest.chars().next()? {
        '[' => ']',
        '(' => ')',
        '{' => '}',
        _ => return None,
    };
    let body = &rest[1..rest.find(close)?];
    let mut families = Vec::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '"' || c == '\'' {
            let value: String = chars.by_ref().take_while(|&next| next != c).collect();
            families.push(value);
        }
    }
    Some(families)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_names() {
        let name = parse_wheel_name("rocm_sdk_core-7.0.0.dev0-py3-none-linux_x86_64.whl").expect("valid");
        assert_eq!((name.name.as_str(), name.version.as_str()), ("rocm_sdk_core", "7.0.0.dev0"));
        assert_eq!(name.expanded_tags().into_iter().collect::<Vec<_>>(), ["py3-none-linux_x86_64"]);
        assert!(parse_wheel_name("a-1-py3-none.whl").is_err());
        let variant = parse_wheel_name("rocm_sdk_device-7.0-py3-none-linux_x86_64-gfx90a.whl").expect("variant");
        assert_eq!((variant.build, variant.variant.as_deref()), (None, Some("gfx90a")));
        let built = parse_wheel_name("rocm_sdk_core-7.0-1-py3-none-linux_x86_64.whl").expect("build tag");
        assert_eq!((built.build.as_deref(), built.variant), (Some("1"), None));
        assert!(parse_wheel_name("rocm_sdk_device-7.0-py3-none-linux_x86_64-Gfx90a.whl").is_err());
        assert!(parse_wheel_name("a-1-py3-none-Linux.whl").is_err());
    }

    #[test]
    fn versions() {
        for good in ["7.0.0", "7.12.0.dev0", "1!2.0rc1.post2.dev3+local.7", "0.1a0"] {
            assert!(is_normalized_version(good), "{good}");
        }
        for bad in ["", "7.0.", "07.1", "7.0-dev", "v1", "1.0.DEV0", "1..2", "7.0+ABC", "0!1.0"] {
            assert!(!is_normalized_version(bad), "{bad}");
        }
    }

    #[test]
    fn names() {
        assert_eq!(normalize_name("rocm_sdk__Core.x"), "rocm-sdk-core-x");
        assert_eq!(file_name_form("rocm-sdk-libraries-gfx110X-all"), "rocm_sdk_libraries_gfx110x_all");
        // How `set` spells the device wheel an advertised target id needs (SPEC §6).
        let device_base = |id: &str| file_name_form(crate::targets::Target::from_target_id(id).as_str());
        assert_eq!(device_base("gfx90a:xnack+"), "gfx90a");
        assert_eq!(device_base("GFX90A:sramecc+:xnack-"), "gfx90a");
    }

    #[test]
    fn pins() {
        let headers = parse_headers(
            "Name: x\nRequires-Dist: rocm-sdk-core==7.0.0\nRequires-Dist: rocm_sdk_devel (==7.0.0) ; extra == \"devel\"\n\
             Requires-Dist: numpy[extra]>=1,<2\nRequires-Dist: plain\n",
        );
        let pins: Vec<(String, String)> = version_pins(&headers).into_iter().map(|(n, v, _)| (n, v)).collect();
        let expected = [("rocm-sdk-core", "==7.0.0"), ("rocm-sdk-devel", "==7.0.0"), ("numpy", ">=1,<2")];
        assert_eq!(pins, expected.map(|(name, pin)| (name.to_owned(), pin.to_owned())));
    }

    #[test]
    fn dist_info_targets() {
        let source = "X = 1\nAVAILABLE_TARGET_FAMILIES = [\n    \"gfx1030\",\n    'gfx90a:xnack+',\n]\n";
        assert_eq!(available_target_families(source), Some(vec!["gfx1030".to_owned(), "gfx90a:xnack+".to_owned()]));
        assert_eq!(available_target_families("nothing"), None);
    }
}
