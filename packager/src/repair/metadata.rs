//! The repaired wheel's metadata (SPEC §11): `Requires-Dist` on the SDK packages that
//! provide the libraries now linked (with the release rule, SPEC §2), existing
//! requirements on SDK packages checked against the set's release, and the WHEEL file's
//! tags with the platform the files allow (as `--platform-tag auto` chooses it). Every
//! other line stays as the wheel's build tool wrote it.
//!
//! Owns: those texts and the file name they give. Does not own: the tag choice
//! (`manylinux`), which packages are linked (`links`).

use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};

use super::error::{Problem, ProblemKind};
use super::sdk::{Sdk, SdkKind};
use crate::escape::escape;
use archive_write::{normalize, PlatformTag, WheelFileName};

/// A requirement's distribution name, extras and version specifiers (PEP 508, without
/// URLs), and whether a marker follows.
struct Requirement<'a> {
    name: &'a str,
    specifiers: &'a str,
}

fn parse_requirement(text: &str) -> Requirement<'_> {
    let requirement = text.split(';').next().unwrap_or(text).trim();
    let name_end = requirement
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(requirement.len());
    let (name, mut rest) = requirement.split_at(name_end);
    rest = rest.trim_start();
    if let Some(after_extras) = rest.strip_prefix('[').and_then(|inner| inner.split_once(']')).map(|(_, after)| after) {
        rest = after_extras;
    }
    let specifiers = rest.trim().trim_start_matches('(').trim_end_matches(')').trim();
    Requirement { name, specifiers }
}

/// METADATA with `requirements` added (those on a package not required yet), after the
/// last `Requires-Dist` (or the last header), and the requirements added. A requirement
/// already there on an SDK package must admit the set's version of it.
pub fn rewrite_metadata(
    text: &str,
    sdk: &Sdk,
    requirements: &[String],
    member: &str,
) -> Result<(String, Vec<String>), Vec<Problem>> {
    let (headers, body) = match text.find("\n\n") {
        Some(at) => text.split_at(at + 1),
        None => (text, ""),
    };
    let mut lines: Vec<String> = headers.lines().map(str::to_owned).collect();
    let mut problems = Vec::new();
    let mut required = Vec::new();
    let mut last_requirement = None;
    for (index, line) in lines.iter().enumerate() {
        let Some((key, value)) = line.split_once(':') else { continue };
        if !key.trim().eq_ignore_ascii_case("Requires-Dist") {
            continue;
        }
        last_requirement = Some(index);
        let requirement = parse_requirement(value.trim());
        let name = normalize(requirement.name);
        required.push(name.clone());
        if let Some(available) = version_offered(sdk, &name) {
            let admits = match (VersionSpecifiers::from_str(requirement.specifiers), Version::from_str(&available)) {
                (Ok(specifiers), Ok(version)) => specifiers.contains(&version),
                _ => true,
            };
            if !admits {
                let kind = ProblemKind::Requirement {
                    requirement: value.trim().to_owned(),
                    available: format!("{name} {available}"),
                };
                problems.push(Problem { member: member.to_owned(), kind });
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let added: Vec<String> = requirements
        .iter()
        .filter(|line| !required.contains(&normalize(parse_requirement(line).name)))
        .cloned()
        .collect();
    let at = match last_requirement {
        Some(index) => index + 1,
        None => lines.len(),
    };
    lines.splice(at..at, added.iter().map(|line| format!("Requires-Dist: {line}")));
    for line in &mut lines {
        // Requires-Dist needs core metadata 1.2 or later.
        if let Some(("Metadata-Version", version)) = line.split_once(": ") {
            if matches!(version.trim(), "1.0" | "1.1") {
                *line = "Metadata-Version: 1.2".to_owned();
            }
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out.push_str(body);
    Ok((out, added))
}

/// The core metadata fields that appear at most once (the core metadata specifications).
const SINGLE_FIELDS: &[&str] = &[
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

/// What `verify --dist` would refuse in the input's METADATA and WHEEL, in its words, so
/// a repair never writes a wheel its own gate rejects (SPEC §11): a field that may appear
/// once appearing more often (which `Name:` a tool reads is then the tool's choice), a
/// `Name:` or `Version:` unlike the file name's, and `Root-Is-Purelib: true` on a wheel with
/// ELF files (installed to purelib, apart from the SDK its relative RPATHs reach).
pub fn refusals(
    name: &WheelFileName,
    dist_info: &str,
    metadata: &str,
    wheel_file: &str,
    has_elf_files: bool,
) -> Vec<String> {
    let mut found = Vec::new();
    let metadata_member = format!("{dist_info}/METADATA");
    let headers = headers_of(metadata);
    for (field, values) in repeated(&headers, SINGLE_FIELDS) {
        found.push(format!(
            "{metadata_member}: {field} appears {} times ({}); it may appear once",
            values.len(),
            values.join(", ")
        ));
    }
    let first = |headers: &[(String, String)], key: &str| {
        headers.iter().find(|(field, _)| field.eq_ignore_ascii_case(key)).map(|(_, value)| value.clone())
    };
    if let Some(value) = first(&headers, "Name").filter(|value| normalize(value) != name.name.normalized()) {
        found.push(format!(
            "{metadata_member}: Name `{}` does not match the file name's `{}`",
            escape(&value),
            name.name.as_str()
        ));
    }
    if let Some(value) = first(&headers, "Version").filter(|value| value != name.version.as_str()) {
        found.push(format!(
            "{metadata_member}: Version `{}` does not match the file name's `{}`",
            escape(&value),
            name.version.as_str()
        ));
    }
    let wheel_member = format!("{dist_info}/WHEEL");
    let headers = headers_of(wheel_file);
    for (field, values) in repeated(&headers, &["Wheel-Version", "Root-Is-Purelib", "Generator", "Build"]) {
        found.push(format!(
            "{wheel_member}: {field} appears {} times ({}); it may appear once",
            values.len(),
            values.join(", ")
        ));
    }
    if has_elf_files && first(&headers, "Root-Is-Purelib").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
        found.push(format!(
            "{wheel_member}: Root-Is-Purelib is `true` on a platform wheel ({}): installers may put it apart from \
             the platform wheels it reaches through relative RPATHs",
            name.platform.as_str()
        ));
    }
    found
}

/// The header fields of a metadata text (up to its first blank line).
fn headers_of(text: &str) -> Vec<(String, String)> {
    text.lines()
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| !line.starts_with([' ', '\t']))
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect()
}

/// Each of `fields` that `headers` hold more than once, with its values quoted.
fn repeated(headers: &[(String, String)], fields: &[&str]) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for field in fields {
        let values: Vec<String> = headers
            .iter()
            .filter(|(key, _)| key.eq_ignore_ascii_case(field))
            .map(|(_, value)| format!("`{}`", escape(value)))
            .collect();
        if values.len() > 1 {
            found.push(((*field).to_owned(), values));
        }
    }
    found
}

/// The `Requires-Dist` values of core metadata, in order.
pub fn requirements_of(metadata: &str) -> Vec<String> {
    metadata
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_once(':'))
        .filter(|(key, _)| key.trim().eq_ignore_ascii_case("Requires-Dist"))
        .map(|(_, value)| value.trim().to_owned())
        .collect()
}

/// The version of `name` the set offers, when it is an SDK package the set has (the
/// `rocm` sdist's version is the core's when the set holds no sdist).
fn version_offered(sdk: &Sdk, name: &str) -> Option<String> {
    SdkKind::of(name)?;
    match sdk.package(name) {
        Some(package) => Some(package.version.clone()),
        None if name == "rocm" => sdk.package("rocm-sdk-core").map(|core| core.version.clone()),
        None => None,
    }
}

/// WHEEL with its `Tag:` lines for `platform`: one per python and abi tag of the file
/// name, where the first `Tag:` line was.
pub fn rewrite_wheel_file(text: &str, name: &WheelFileName, platform: &str) -> String {
    let mut tags = Vec::new();
    for python in name.python.split('.') {
        for abi in name.abi.split('.') {
            tags.push(format!("Tag: {python}-{abi}-{platform}"));
        }
    }
    let mut lines: Vec<String> = Vec::new();
    let mut placed = false;
    for line in text.lines() {
        if line.split_once(':').is_some_and(|(key, _)| key.trim().eq_ignore_ascii_case("Tag")) {
            if !placed {
                lines.append(&mut tags);
                placed = true;
            }
        } else {
            lines.push(line.to_owned());
        }
    }
    while lines.last().is_some_and(|line| line.trim().is_empty()) {
        lines.pop();
    }
    lines.append(&mut tags);
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The repaired wheel's file name: the input's with the new platform tag.
pub fn output_file_name(name: &WheelFileName, platform: &PlatformTag) -> String {
    WheelFileName { platform: platform.clone(), ..name.clone() }.to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::repair::sdk::SdkPackage;

    fn sdk() -> Sdk {
        let package = |name: &str, version: &str| SdkPackage {
            name: name.to_owned(),
            version: version.to_owned(),
            kind: SdkKind::of(name).expect("SDK"),
        };
        Sdk {
            location: PathBuf::from("dist"),
            packages: vec![package("rocm-sdk-core", "7.12.0.post1"), package("rocm-sdk-libraries", "7.12.0")],
            libraries: BTreeMap::new(),
            names: std::collections::BTreeSet::new(),
        }
    }

    const METADATA: &str = "Metadata-Version: 2.1\nName: ext\nVersion: 1.0\nRequires-Dist: numpy\n\nA description.\n";

    #[test]
    fn requirements_are_added_after_the_last_one() {
        let (out, added) = rewrite_metadata(METADATA, &sdk(), &["rocm-sdk-core>=7.12.0,<7.12.0.0.1".to_owned()], "M")
            .expect("no problem");
        assert_eq!(added, ["rocm-sdk-core>=7.12.0,<7.12.0.0.1"]);
        assert_eq!(
            out,
            "Metadata-Version: 2.1\nName: ext\nVersion: 1.0\nRequires-Dist: numpy\n\
             Requires-Dist: rocm-sdk-core>=7.12.0,<7.12.0.0.1\n\nA description.\n"
        );
    }

    #[test]
    fn an_existing_sdk_requirement_must_admit_the_set() {
        let text = "Metadata-Version: 2.1\nName: ext\nVersion: 1.0\nRequires-Dist: rocm-sdk-core==7.11.0\n";
        let problems = rewrite_metadata(text, &sdk(), &[], "M").expect_err("refused");
        assert_eq!(problems.len(), 1);
        assert!(problems[0].to_string().contains("rocm-sdk-core 7.12.0.post1"), "{}", problems[0]);
        let admitted =
            "Metadata-Version: 2.1\nName: ext\nVersion: 1.0\nRequires-Dist: rocm[libraries] (>=7.12.0,<7.12.0.0.1)\n";
        let requirements = ["rocm-sdk-core>=7.12.0,<7.12.0.0.1".to_owned(), "rocm[libraries]==7.12.0".to_owned()];
        let (out, added) = rewrite_metadata(admitted, &sdk(), &requirements, "M").expect("ok");
        assert!(out.contains("Requires-Dist: rocm-sdk-core>=7.12.0"), "{out}");
        assert_eq!(added, ["rocm-sdk-core>=7.12.0,<7.12.0.0.1"], "rocm is required already");
    }

    #[test]
    fn tags_name_the_new_platform() {
        let name = "ext-1.0-cp311-cp311-linux_x86_64.whl".parse::<WheelFileName>().expect("valid");
        let wheel = "Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n\n";
        assert_eq!(
            rewrite_wheel_file(wheel, &name, "manylinux_2_17_x86_64"),
            "Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_17_x86_64\n"
        );
        let tag = PlatformTag::new("manylinux_2_17_x86_64").expect("valid");
        assert_eq!(output_file_name(&name, &tag), "ext-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
    }
}
