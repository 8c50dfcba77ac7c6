//! A wheel's bill of materials (SPEC §10): `{dist-info}/sboms/rocm-packager.cdx.json` must
//! be CycloneDX 1.6 JSON (`schema`), describe this wheel (`metadata.component`: its name and
//! version as METADATA says them, its purl `pkg:pypi/{normalised name}@{version}?file_name=
//! {file}`), and list as `file` components exactly the wheel's files outside `.dist-info`
//! (RECORD's entries there), each once, with the SHA-256 the gate measured reading them.
//! A wheel without one gets a warning: the reference's wheels and a `--no-sbom` build have
//! none.
//!
//! Owns: those rules. Does not own: reading the archive (`archive`), or RECORD, which
//! `record` holds to the same measured digests.

pub mod schema;

use std::collections::BTreeMap;

use super::metadata::WheelName;
use super::record::MemberDigest;
use super::report::{Check, Findings};
use schema::Component;

/// Where in `.dist-info` our document lies.
pub(crate) const SBOM_LEAF: &str = "sboms/rocm-packager.cdx.json";

/// Whether `name` is the bill of materials of its wheel: `{x}.dist-info/sboms/rocm-packager.cdx.json`.
pub(crate) fn is_sbom(name: &str) -> bool {
    name.split_once('/').is_some_and(|(dir, leaf)| dir.ends_with(".dist-info") && leaf == SBOM_LEAF)
}

/// What the check compares the document with.
pub(crate) struct Wheel<'a> {
    pub file: &'a str,
    pub name: Option<&'a WheelName>,
    /// METADATA's headers.
    pub headers: &'a [(String, String)],
    pub dist_info: &'a str,
    /// Every file of the wheel with what reading it measured.
    pub members: &'a BTreeMap<String, MemberDigest>,
    /// The document's text, and its size in the archive (a text the gate did not read
    /// whole is shorter).
    pub sbom: Option<(&'a str, u64)>,
}

/// Checks the wheel's bill of materials, or warns that it has none.
pub(crate) fn check_sbom(wheel: &Wheel<'_>, findings: &mut Findings) {
    let path = format!("{}/{SBOM_LEAF}", wheel.dist_info);
    let Some((text, size)) = wheel.sbom else {
        let what = "the wheel has no bill of materials (CycloneDX, .dist-info/sboms/rocm-packager.cdx.json): \
                    scanners cannot tell what it bundles";
        findings.warning(wheel.file, None, Check::Sbom, what);
        return;
    };
    let mut violation = |what: String| findings.violation(wheel.file, Some(&path), Check::Sbom, what);
    if (text.len() as u64) < size {
        violation(format!("is {size} bytes, more than the gate reads of a text member"));
        return;
    }
    let reading = schema::read(text);
    for what in &reading.schema {
        violation(format!("breaks the CycloneDX 1.6 schema: {what}"));
    }
    for what in &reading.rules {
        violation(format!("breaks a CycloneDX rule: {what}"));
    }
    let Some(bom) = reading.bom else { return };
    check_wheel_component(
        wheel,
        bom.metadata.as_ref().and_then(|metadata| metadata.component.as_ref()),
        &mut violation,
    );
    let mut files: BTreeMap<&str, Vec<&Component>> = BTreeMap::new();
    let mut stack: Vec<&Component> = bom.components.iter().flatten().collect();
    while let Some(component) = stack.pop() {
        if component.kind == "file" {
            files.entry(component.name.as_str()).or_default().push(component);
        }
        stack.extend(component.components.iter().flatten());
    }
    let recorded: BTreeMap<&str, String> = wheel
        .members
        .iter()
        .filter(|(name, _)| !name.split('/').next().is_some_and(|first| first.ends_with(".dist-info")))
        .map(|(name, digest)| (name.as_str(), digest.sha256.iter().map(|byte| format!("{byte:02x}")).collect()))
        .collect();
    for (name, listed) in &files {
        if listed.len() > 1 {
            violation(format!("lists the file {name} {} times", listed.len()));
        }
        let Some(expected) = recorded.get(*name) else {
            violation(format!("lists the file {name}, which the wheel does not hold (or only in .dist-info)"));
            continue;
        };
        let sha256: Vec<&str> = listed[0]
            .hashes
            .iter()
            .flatten()
            .filter(|hash| hash.alg == "SHA-256")
            .map(|hash| hash.content.as_str())
            .collect();
        match sha256.as_slice() {
            [one] if one.eq_ignore_ascii_case(expected) => {}
            [one] => violation(format!("gives {name} the SHA-256 {one}, but the file's is {expected}")),
            _ => violation(format!("gives {name} {} SHA-256 hashes, not one", sha256.len())),
        }
    }
    for name in recorded.keys().filter(|name| !files.contains_key(*name)) {
        violation(format!("does not list {name}, a file of the wheel"));
    }
}

/// `metadata.component` is this wheel: METADATA's name and version, and the purl of this
/// file.
fn check_wheel_component(wheel: &Wheel<'_>, component: Option<&Component>, violation: &mut impl FnMut(String)) {
    let Some(component) = component else {
        violation("has no metadata.component describing the wheel".to_owned());
        return;
    };
    let header = |key: &str| wheel.headers.iter().find(|(name, _)| name == key).map(|(_, value)| value.as_str());
    if let Some(name) = header("Name").filter(|name| *name != component.name) {
        violation(format!("names the wheel `{}`, METADATA `{name}`", component.name));
    }
    if let Some(version) = header("Version").filter(|version| Some(*version) != component.version.as_deref()) {
        violation(format!("gives the wheel the version {:?}, METADATA {version}", component.version));
    }
    let Some(file_name) = wheel.name else { return };
    let expected = format!(
        "pkg:pypi/{}@{}?file_name={}",
        file_name.name.replace('_', "-"),
        encode(&file_name.version),
        encode(wheel.file)
    );
    if component.purl.as_deref() != Some(expected.as_str()) {
        violation(format!("gives the wheel the purl {:?}, not {expected}", component.purl));
    }
}

/// Percent-encoding as the purl spec wants it of a version or qualifier value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(byte: u8) -> MemberDigest {
        MemberDigest { size: 1, sha256: [byte; 32] }
    }

    fn document(files: &[(&str, u8)], purl: &str) -> String {
        let files: Vec<String> = files
            .iter()
            .map(|(name, byte)| {
                let content = format!("{byte:02x}").repeat(32);
                format!(r#"{{"type":"file","bom-ref":"file:{name}","name":"{name}","hashes":[{{"alg":"SHA-256","content":"{content}"}}]}}"#)
            })
            .collect();
        format!(
            r#"{{"bomFormat":"CycloneDX","specVersion":"1.6","version":1,"metadata":{{"component":{{"type":"library",
            "name":"demo","version":"1.0","purl":"{purl}"}}}},"components":[{{"type":"library","bom-ref":"a",
            "name":"a","components":[{}]}}]}}"#,
            files.join(",")
        )
    }

    fn findings(document: &str) -> Vec<String> {
        let name = crate::metadata::parse_wheel_name("demo-1.0-py3-none-any.whl").expect("a wheel name");
        let members: BTreeMap<String, MemberDigest> =
            [("demo/a.py", 1), ("demo/b.so", 2), ("demo-1.0.dist-info/METADATA", 3)]
                .into_iter()
                .map(|(name, byte)| (name.to_owned(), digest(byte)))
                .collect();
        let headers = vec![("Name".to_owned(), "demo".to_owned()), ("Version".to_owned(), "1.0".to_owned())];
        let wheel = Wheel {
            file: "demo-1.0-py3-none-any.whl",
            name: Some(&name),
            headers: &headers,
            dist_info: "demo-1.0.dist-info",
            members: &members,
            sbom: Some((document, document.len() as u64)),
        };
        let mut findings = Findings::default();
        check_sbom(&wheel, &mut findings);
        assert!(findings.warnings.is_empty());
        findings.violations.into_iter().map(|finding| finding.message).collect()
    }

    const PURL: &str = "pkg:pypi/demo@1.0?file_name=demo-1.0-py3-none-any.whl";

    #[test]
    fn a_complete_document_passes() {
        assert_eq!(findings(&document(&[("demo/a.py", 1), ("demo/b.so", 2)], PURL)), Vec::<String>::new());
    }

    #[test]
    fn a_missing_file_a_wrong_digest_and_an_extra_file_fail() {
        assert_eq!(findings(&document(&[("demo/a.py", 1)], PURL)), ["does not list demo/b.so, a file of the wheel"]);
        let wrong = findings(&document(&[("demo/a.py", 1), ("demo/b.so", 9)], PURL));
        assert!(wrong.len() == 1 && wrong[0].starts_with("gives demo/b.so the SHA-256 0909"), "{wrong:?}");
        let extra =
            findings(&document(&[("demo/a.py", 1), ("demo/b.so", 2), ("demo-1.0.dist-info/METADATA", 3)], PURL));
        assert!(extra.len() == 1 && extra[0].contains("only in .dist-info"), "{extra:?}");
    }

    #[test]
    fn the_document_must_describe_this_wheel() {
        let other = findings(&document(&[("demo/a.py", 1), ("demo/b.so", 2)], "pkg:pypi/demo@1.0"));
        assert!(other.len() == 1 && other[0].contains("not pkg:pypi/demo@1.0?file_name="), "{other:?}");
        let broken = findings("{\"bomFormat\":\"CycloneDX\"}");
        assert!(broken.len() == 1 && broken[0].contains("missing field `specVersion`"), "{broken:?}");
    }

    #[test]
    fn a_wheel_without_one_is_warned_about() {
        let wheel = Wheel {
            file: "x-1-py3-none-any.whl",
            name: None,
            headers: &[],
            dist_info: "x-1.dist-info",
            members: &BTreeMap::new(),
            sbom: None,
        };
        let mut findings = Findings::default();
        check_sbom(&wheel, &mut findings);
        assert_eq!((findings.violations.len(), findings.warnings.len()), (0, 1));
    }
}
