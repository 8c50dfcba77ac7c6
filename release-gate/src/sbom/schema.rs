//! The gate's own reading of a CycloneDX 1.6 JSON document: the part of the 1.6 schema
//! (`bom-1.6.schema.json`) that a bill of materials of ours uses, checked as strictly as
//! the schema (required fields, types, no `null` where a value is due, no unknown field
//! where the schema forbids them, enums, patterns, formats, `uniqueItems`), and the
//! specification's rules that a schema cannot say (every `bom-ref` unique, every
//! dependency naming one, purls that parse).
//!
//! No schema file is read: the gate fetches nothing and carries nothing fetched. That
//! this agrees with the schema is what `tests/it/sbom.rs` shows, running the CycloneDX
//! project's own validator (`cyclonedx-python-lib`, which bundles the official schemas)
//! on the same valid and broken documents. A field the 1.6 schema allows but our
//! documents never carry (`services`, `licenses`, …) is refused as outside that part.
//!
//! Owns: that reading. Does not own: what our documents must say beyond the format
//! (`super`, against the wheel and its RECORD).

use std::collections::{BTreeSet, HashSet};

use serde::{Deserialize, Deserializer};

/// A document read and checked: what failed the schema, and what failed the rules the
/// schema cannot express; both empty for a valid document.
#[derive(Debug, Default)]
pub struct Reading {
    pub bom: Option<Bom>,
    /// Each as `{path}: {what}` (`components[2].hashes[0].alg: …`).
    pub schema: Vec<String>,
    pub rules: Vec<String>,
}

/// An optional field that, when present, must hold a value of its type: `null` is no
/// string, array or object to the schema.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bom {
    /// Read for its type only, as `metadata.properties`.
    #[serde(rename = "$schema", default, deserialize_with = "present")]
    #[allow(dead_code)]
    pub schema: Option<String>,
    #[serde(rename = "bomFormat")]
    pub bom_format: String,
    #[serde(rename = "specVersion")]
    pub spec_version: String,
    #[serde(rename = "serialNumber", default, deserialize_with = "present")]
    pub serial_number: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub version: Option<serde_json::Number>,
    #[serde(default, deserialize_with = "present")]
    pub metadata: Option<Metadata>,
    #[serde(default, deserialize_with = "present")]
    pub components: Option<Vec<Component>>,
    #[serde(default, deserialize_with = "present")]
    pub dependencies: Option<Vec<Dependency>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    #[serde(default, deserialize_with = "present")]
    pub lifecycles: Option<Vec<Lifecycle>>,
    #[serde(default, deserialize_with = "present")]
    pub tools: Option<Tools>,
    #[serde(default, deserialize_with = "present")]
    pub component: Option<Component>,
    #[serde(default, deserialize_with = "present")]
    #[allow(dead_code)]
    pub properties: Option<Vec<Property>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lifecycle {
    pub phase: String,
}

/// The object form of `metadata.tools` (1.5 on; the array form is deprecated).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tools {
    #[serde(default, deserialize_with = "present")]
    pub components: Option<Vec<Component>>,
}

#[derive(Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(rename = "bom-ref", default, deserialize_with = "present")]
    pub bom_ref: Option<String>,
    pub name: String,
    #[serde(default, deserialize_with = "present")]
    pub version: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub scope: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub purl: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub hashes: Option<Vec<Hash>>,
    #[serde(rename = "externalReferences", default, deserialize_with = "present")]
    pub external_references: Option<Vec<ExternalReference>>,
    #[serde(default, deserialize_with = "present")]
    pub properties: Option<Vec<Property>>,
    #[serde(default, deserialize_with = "present")]
    pub components: Option<Vec<Component>>,
}

#[derive(Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hash {
    pub alg: String,
    pub content: String,
}

#[derive(Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalReference {
    pub url: String,
    #[serde(default, deserialize_with = "present")]
    pub comment: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, deserialize_with = "present")]
    pub hashes: Option<Vec<Hash>>,
}

#[derive(Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Property {
    pub name: String,
    #[serde(default, deserialize_with = "present")]
    pub value: Option<String>,
}

#[derive(Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dependency {
    #[serde(rename = "ref")]
    pub reference: String,
    #[serde(rename = "dependsOn", default, deserialize_with = "present")]
    pub depends_on: Option<Vec<String>>,
}

/// The schema's enums, as 1.6 lists them.
const COMPONENT_TYPES: &[&str] = &[
    "application",
    "framework",
    "library",
    "container",
    "platform",
    "operating-system",
    "device",
    "device-driver",
    "firmware",
    "file",
    "machine-learning-model",
    "data",
    "cryptographic-asset",
];
const SCOPES: &[&str] = &["required", "optional", "excluded"];
const HASH_ALGORITHMS: &[&str] = &[
    "MD5",
    "SHA-1",
    "SHA-256",
    "SHA-384",
    "SHA-512",
    "SHA3-256",
    "SHA3-384",
    "SHA3-512",
    "BLAKE2b-256",
    "BLAKE2b-384",
    "BLAKE2b-512",
    "BLAKE3",
];
const PHASES: &[&str] = &["design", "pre-build", "build", "post-build", "operations", "discovery", "decommission"];
const REFERENCE_TYPES: &[&str] = &[
    "vcs",
    "issue-tracker",
    "website",
    "advisories",
    "bom",
    "mailing-list",
    "social",
    "chat",
    "documentation",
    "support",
    "source-distribution",
    "distribution",
    "distribution-intake",
    "license",
    "build-meta",
    "build-system",
    "release-notes",
    "security-contact",
    "model-card",
    "log",
    "configuration",
    "evidence",
    "formulation",
    "attestation",
    "threat-model",
    "adversary-model",
    "risk-assessment",
    "vulnerability-assertion",
    "exploitability-statement",
    "pentest-report",
    "static-analysis-report",
    "dynamic-analysis-report",
    "runtime-analysis-report",
    "component-analysis-report",
    "maturity-report",
    "certification-report",
    "codified-infrastructure",
    "quality-metrics",
    "poam",
    "electronic-signature",
    "digital-signature",
    "rfc-9116",
    "other",
];
/// `hash-content`: an MD5, SHA-1, SHA-256, SHA-384 or SHA-512 length of hex digits.
const HASH_LENGTHS: &[usize] = &[32, 40, 64, 96, 128];
/// `component.version`'s `maxLength`.
const MAX_VERSION_LENGTH: usize = 1024;

/// Reads `text` as a CycloneDX 1.6 document.
pub fn read(text: &str) -> Reading {
    let mut reading = Reading::default();
    let deserializer = &mut serde_json::Deserializer::from_str(text);
    let bom: Bom = match serde_path_to_error::deserialize(deserializer) {
        Ok(bom) => bom,
        Err(error) => {
            let path = error.path().to_string();
            reading.schema.push(format!("{path}: {}", error.into_inner()));
            return reading;
        }
    };
    let mut check = Check { reading: &mut reading, refs: BTreeSet::new() };
    check.bom(&bom);
    reading.bom = Some(bom);
    reading
}

struct Check<'a> {
    reading: &'a mut Reading,
    /// Every `bom-ref` seen so far.
    refs: BTreeSet<String>,
}

impl Check<'_> {
    fn schema(&mut self, path: &str, what: String) {
        self.reading.schema.push(format!("{path}: {what}"));
    }

    fn rule(&mut self, path: &str, what: String) {
        self.reading.rules.push(format!("{path}: {what}"));
    }

    fn one_of(&mut self, path: &str, value: &str, allowed: &[&str]) {
        if !allowed.contains(&value) {
            self.schema(path, format!("`{value}` is not one of {}", allowed.join(", ")));
        }
    }

    fn bom(&mut self, bom: &Bom) {
        self.one_of("bomFormat", &bom.bom_format, &["CycloneDX"]);
        if bom.spec_version != "1.6" {
            self.rule("specVersion", format!("`{}` is not 1.6, the version this gate reads", bom.spec_version));
        }
        if let Some(serial) = &bom.serial_number {
            if !is_serial_number(serial) {
                self.schema("serialNumber", format!("`{serial}` is not `urn:uuid:` and a lower-case UUID"));
            }
        }
        if let Some(version) = &bom.version {
            let integral = version.as_u64().is_some_and(|value| value >= 1)
                || version.as_f64().is_some_and(|value| value >= 1.0 && value.fract() == 0.0);
            if !integral {
                self.schema("version", format!("{version} is not an integer of at least 1"));
            }
        }
        if let Some(metadata) = &bom.metadata {
            for (index, lifecycle) in metadata.lifecycles.iter().flatten().enumerate() {
                self.one_of(&format!("metadata.lifecycles[{index}].phase"), &lifecycle.phase, PHASES);
            }
            if let Some(components) = metadata.tools.as_ref().and_then(|tools| tools.components.as_ref()) {
                self.components("metadata.tools.components", components);
            }
            if let Some(component) = &metadata.component {
                self.component("metadata.component", component);
            }
        }
        if let Some(components) = &bom.components {
            self.components("components", components);
        }
        if let Some(dependencies) = &bom.dependencies {
            self.unique("dependencies", dependencies);
            for (index, dependency) in dependencies.iter().enumerate() {
                self.dependency(&format!("dependencies[{index}]"), dependency);
            }
        }
    }

    fn components(&mut self, path: &str, components: &[Component]) {
        self.unique(path, components);
        for (index, component) in components.iter().enumerate() {
            self.component(&format!("{path}[{index}]"), component);
        }
    }

    fn component(&mut self, path: &str, component: &Component) {
        self.one_of(&format!("{path}.type"), &component.kind, COMPONENT_TYPES);
        if let Some(bom_ref) = &component.bom_ref {
            if bom_ref.is_empty() {
                self.schema(&format!("{path}.bom-ref"), "is empty".to_owned());
            } else if !self.refs.insert(bom_ref.clone()) {
                self.rule(&format!("{path}.bom-ref"), format!("`{bom_ref}` is the bom-ref of another object too"));
            }
        }
        if component.version.as_ref().is_some_and(|version| version.chars().count() > MAX_VERSION_LENGTH) {
            self.schema(&format!("{path}.version"), format!("is longer than {MAX_VERSION_LENGTH} characters"));
        }
        if let Some(scope) = &component.scope {
            self.one_of(&format!("{path}.scope"), scope, SCOPES);
        }
        if let Some(purl) = &component.purl {
            if let Err(why) = check_purl(purl) {
                self.rule(&format!("{path}.purl"), format!("`{purl}` is no package URL: {why}"));
            }
        }
        for (index, hash) in component.hashes.iter().flatten().enumerate() {
            self.hash(&format!("{path}.hashes[{index}]"), hash);
        }
        for (index, reference) in component.external_references.iter().flatten().enumerate() {
            let at = format!("{path}.externalReferences[{index}]");
            self.one_of(&format!("{at}.type"), &reference.kind, REFERENCE_TYPES);
            if !is_iri_reference(&reference.url) {
                self.schema(&format!("{at}.url"), format!("`{}` is not an IRI reference", reference.url));
            }
            for (hash_index, hash) in reference.hashes.iter().flatten().enumerate() {
                self.hash(&format!("{at}.hashes[{hash_index}]"), hash);
            }
        }
        if let Some(children) = &component.components {
            self.components(&format!("{path}.components"), children);
        }
    }

    fn hash(&mut self, path: &str, hash: &Hash) {
        self.one_of(&format!("{path}.alg"), &hash.alg, HASH_ALGORITHMS);
        let hex = hash.content.bytes().all(|byte| byte.is_ascii_hexdigit());
        if !hex || !HASH_LENGTHS.contains(&hash.content.len()) {
            self.schema(&format!("{path}.content"), format!("`{}` is not a hash in hexadecimal", hash.content));
        }
    }

    fn dependency(&mut self, path: &str, dependency: &Dependency) {
        let depends_on = dependency.depends_on.as_deref().unwrap_or_default();
        self.unique(&format!("{path}.dependsOn"), depends_on);
        let refs = std::iter::once((format!("{path}.ref"), &dependency.reference))
            .chain(depends_on.iter().enumerate().map(|(index, to)| (format!("{path}.dependsOn[{index}]"), to)));
        for (at, reference) in refs {
            if reference.is_empty() {
                self.schema(&at, "is empty".to_owned());
            } else if !self.refs.contains(reference) {
                self.rule(&at, format!("`{reference}` is the bom-ref of nothing in the document"));
            }
        }
    }

    /// `uniqueItems`: no two items of the array are equal JSON values.
    fn unique<T: Eq + std::hash::Hash>(&mut self, path: &str, items: &[T]) {
        let mut seen = HashSet::new();
        if let Some(index) = items.iter().position(|item| !seen.insert(item)) {
            self.schema(&format!("{path}[{index}]"), "repeats an earlier item (the schema wants unique items)".into());
        }
    }
}

/// `^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`.
fn is_serial_number(serial: &str) -> bool {
    let Some(uuid) = serial.strip_prefix("urn:uuid:") else { return false };
    let groups: Vec<&str> = uuid.split('-').collect();
    groups.iter().map(|group| group.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|group| group.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)))
}

/// RFC 3987's `IRI-reference`, as far as a URL of ours can break it: no spaces, controls or
/// characters an IRI never holds, `%` only before two hex digits, at most one `#`, and a
/// scheme (when there is one) of a letter then letters, digits, `+`, `-` or `.`.
fn is_iri_reference(url: &str) -> bool {
    let forbidden = |c: char| c.is_control() || c.is_whitespace() || "\"<>\\^`{|}".contains(c);
    if url.chars().any(forbidden) || url.matches('#').count() > 1 {
        return false;
    }
    let bytes = url.as_bytes();
    let percent_ok = bytes
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'%')
        .all(|(at, _)| bytes.get(at + 1..at + 3).is_some_and(|pair| pair.iter().all(u8::is_ascii_hexdigit)));
    let before_path = url.split(['/', '?', '#']).next().unwrap_or_default();
    let scheme_ok = match before_path.split_once(':') {
        Some((scheme, _)) => {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => true,
    };
    percent_ok && scheme_ok
}

/// The purl specification's syntax: `pkg:{type}/{namespace/…}{name}[@{version}]
/// [?{key}={value}&…][#{subpath}]`, the type a letter then letters, digits, `.+-`, every
/// part percent-encoded where it must be.
pub fn check_purl(purl: &str) -> Result<(), String> {
    let rest = purl.strip_prefix("pkg:").ok_or("it does not start with `pkg:`")?;
    let (rest, _subpath) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, qualifiers) = rest.split_once('?').map_or((rest, None), |(rest, query)| (rest, Some(query)));
    let (kind, path) = rest.split_once('/').ok_or("it has no `/` after the type")?;
    let kind_ok = kind.starts_with(|c: char| c.is_ascii_alphabetic())
        && kind.chars().all(|c| c.is_ascii_alphanumeric() || ".+-".contains(c));
    if !kind_ok {
        return Err(format!("the type `{kind}` is not a letter then letters, digits, `.`, `+` or `-`"));
    }
    let (path, version) = match path.rsplit_once('@') {
        Some((path, version)) if !path.is_empty() => (path, Some(version)),
        _ => (path, None),
    };
    if path.split('/').any(str::is_empty) {
        return Err("its namespace or name has an empty segment".to_owned());
    }
    if version.is_some_and(str::is_empty) {
        return Err("its version is empty".to_owned());
    }
    let encoded = |text: &str| {
        let bytes = text.as_bytes();
        !text.chars().any(|c| c.is_whitespace() || c.is_control())
            && bytes
                .iter()
                .enumerate()
                .filter(|(_, byte)| **byte == b'%')
                .all(|(at, _)| bytes.get(at + 1..at + 3).is_some_and(|pair| pair.iter().all(u8::is_ascii_hexdigit)))
    };
    if !encoded(path) || !version.is_none_or(encoded) {
        return Err("a part is not percent-encoded".to_owned());
    }
    let mut keys = BTreeSet::new();
    for pair in qualifiers.into_iter().flat_map(|query| query.split('&')) {
        let (key, value) = pair.split_once('=').ok_or_else(|| format!("the qualifier `{pair}` has no `=`"))?;
        let key_ok = key.starts_with(|c: char| c.is_ascii_lowercase())
            && key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-_".contains(c));
        if !key_ok || value.is_empty() || !encoded(value) || !keys.insert(key) {
            return Err(format!("the qualifier `{pair}` is not a lower-case key, once, with a percent-encoded value"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = r#"{"$schema":"http://cyclonedx.org/schema/bom-1.6.schema.json","bomFormat":"CycloneDX",
        "specVersion":"1.6","serialNumber":"urn:uuid:3e671687-395b-81f5-a30f-a58921a69b79","version":1,
        "metadata":{"lifecycles":[{"phase":"build"}],"tools":{"components":[{"type":"application","name":"t"}]},
          "component":{"type":"library","bom-ref":"w","name":"w","purl":"pkg:pypi/w@1.0?file_name=w-1.0-py3-none-any.whl"}},
        "components":[{"type":"library","bom-ref":"a","name":"a","components":[
          {"type":"file","bom-ref":"f","name":"a/f","hashes":[{"alg":"SHA-256","content":"00000000000000000000000000000000000000000000000000000000000000ff"}]}],
          "externalReferences":[{"type":"source-distribution","url":"https://example.org/a-1.tar.gz"}]}],
        "dependencies":[{"ref":"w","dependsOn":["a"]}]}"#;

    fn check(text: &str) -> (Vec<String>, Vec<String>) {
        let reading = read(text);
        (reading.schema, reading.rules)
    }

    #[test]
    fn a_valid_document_has_no_finding() {
        assert_eq!(check(VALID), (Vec::new(), Vec::new()));
    }

    #[test]
    fn schema_breaks_are_found_with_their_path() {
        let broken = |from: &str, to: &str| {
            assert!(VALID.contains(from), "{from}");
            let (schema, _) = check(&VALID.replacen(from, to, 1));
            assert_eq!(schema.len(), 1, "{from} → {to}: {schema:?}");
            schema[0].clone()
        };
        assert!(
            broken(r#""alg":"SHA-256""#, r#""alg":"SHA256""#).starts_with("components[0].components[0].hashes[0].alg")
        );
        assert!(broken(r#""type":"file""#, r#""type":"binary""#).contains("`binary` is not one of"));
        assert!(broken(r#""version":1,"#, r#""version":0,"#).starts_with("version"));
        assert!(broken(r#""bomFormat":"CycloneDX","#, "").contains("bomFormat"));
        assert!(broken(r#""name":"a/f","#, r#""name":"a/f","size":3,"#).contains("unknown field `size`"));
        assert!(broken(r#""purl":"pkg"#, r#""purl":null,"x":"pkg"#).contains("purl"));
        assert!(broken("https://example.org/a-1.tar.gz", "https://example.org/a 1.tar.gz").contains("IRI"));
        assert!(broken(r#"ff"}]}]"#, r#"fg"}]}]"#).contains("not a hash"));
        assert!(broken(r#""dependsOn":["a"]"#, r#""dependsOn":["a","a"]"#).contains("unique"));
    }

    #[test]
    fn rules_beyond_the_schema() {
        let (schema, rules) = check(&VALID.replace(r#""bom-ref":"f""#, r#""bom-ref":"a""#));
        assert!(schema.is_empty() && rules.len() == 1 && rules[0].contains("another object"), "{rules:?}");
        let (schema, rules) = check(&VALID.replace(r#""dependsOn":["a"]"#, r#""dependsOn":["nothing"]"#));
        assert!(schema.is_empty() && rules.len() == 1 && rules[0].contains("nothing"), "{rules:?}");
        let (_, rules) = check(&VALID.replace("pkg:pypi/w@1.0", "pypi/w"));
        assert!(rules.len() == 1 && rules[0].contains("no package URL"), "{rules:?}");
        let (_, rules) = check(&VALID.replace(r#""specVersion":"1.6""#, r#""specVersion":"1.5""#));
        assert!(rules.len() == 1 && rules[0].contains("1.6"), "{rules:?}");
    }

    #[test]
    fn purls() {
        for good in [
            "pkg:pypi/rocm-sdk-core@7.12.0.dev0%2Bx?file_name=a.whl",
            "pkg:generic/xz@5.8.1",
            "pkg:github/a/b#sub/path",
        ] {
            assert_eq!(check_purl(good), Ok(()), "{good}");
        }
        for bad in [
            "pypi/x",
            "pkg:pypi",
            "pkg:1x/y",
            "pkg:pypi//x",
            "pkg:pypi/x@",
            "pkg:pypi/x y",
            "pkg:pypi/x?K=v",
            "pkg:pypi/x?a=1&a=2",
            "pkg:pypi/%zz",
        ] {
            assert!(check_purl(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn iri_references() {
        assert!(is_iri_reference("https://rocm-third-party-deps.s3.us-east-2.amazonaws.com/xz-5.8.1.tar.bz2"));
        assert!(is_iri_reference("rel/path") && is_iri_reference("a:b") && is_iri_reference("https://ü.example/"));
        for bad in ["not a url", "http://x/%zz", "http://x/a#b#c", "1http://x", "http://x/<a>"] {
            assert!(!is_iri_reference(bad), "{bad}");
        }
    }
}
