//! Wheel variant files (PEP 825 format, PEP 850 providers; both drafts, format 0.2.0):
//! each variant wheel's `*.dist-info/variant.json` and each `{name}-{version}-variants.json`
//! index file, checked against the rules of the drafts' JSON schema, and against each
//! other (SPEC §9).
//!
//! The gate's own reading of the schema, written from the drafts and variantlib's
//! validators: the packager's writer shares no code with it.
//!
//! Owns: those checks. Does not own: reading archives (`archive`), wheel file names
//! (`metadata`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::archive::Archive;
use super::report::{Check, Findings};

/// The name every index file ends with (PEP 825).
pub(crate) const INDEX_SUFFIX: &str = "-variants.json";

/// Keys the 0.2.0 schema knows at the top level; any other is reported as a warning (a
/// newer draft may add keys an installer of today ignores, and variantlib does).
const TOP_KEYS: &[&str] = &["$schema", "default-priorities", "providers", "static-properties", "variants"];
/// Keys of `default-priorities` and of a provider that variantlib 0.2.2 reads: it refuses
/// the whole file for any other, so the gate does too.
const PRIORITY_KEYS: &[&str] = &["namespace"];
const PROVIDER_KEYS: &[&str] =
    &["requires", "optional", "plugin-api", "feature-order", "static-properties", "builtin", "build-requires"];
/// The label of the variant without properties, and only of it (variantlib).
const NULL_LABEL: &str = "null";

/// One `*-variants.json` file of the dist tree.
#[derive(Clone, Debug)]
pub(crate) struct VariantsIndex {
    pub file: String,
    pub locations: Vec<PathBuf>,
    /// (distribution in file name form, version), when the name parses.
    pub name: Option<(String, String)>,
    pub sha256: String,
    pub text: Result<String, String>,
}

/// (name, version) of `{name}-{version}-variants.json`; `None` for another shape.
pub(crate) fn parse_index_name(file: &str) -> Option<(String, String)> {
    let stem = file.strip_suffix(INDEX_SUFFIX)?;
    let (name, version) = stem.split_once('-')?;
    let name_ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'));
    (name_ok && !version.is_empty() && !version.contains('-')).then(|| (name.to_owned(), version.to_owned()))
}

/// What a variant file says, once its shape passed: the shared part and the variants.
struct Parsed {
    shared: Value,
    variants: Map<String, Value>,
}

/// Every check: each variant wheel's `variant.json` against the schema and its label, each
/// index file against the schema, each variant wheel against its index.
pub(crate) fn check_variants(archives: &[Archive], indexes: &[VariantsIndex], findings: &mut Findings) {
    let mut by_release: BTreeMap<(String, String), (&VariantsIndex, Option<Parsed>)> = BTreeMap::new();
    for index in indexes {
        let Some(name) = &index.name else {
            let message = "is not named `{name}-{version}-variants.json` (PEP 825)";
            findings.violation(&index.file, None, Check::Variant, message);
            continue;
        };
        let parsed = match &index.text {
            Err(message) => {
                findings.violation(&index.file, None, Check::Variant, message.clone());
                None
            }
            Ok(text) => parse(text, &index.file, None, findings),
        };
        by_release.insert(name.clone(), (index, parsed));
    }
    let mut offered: BTreeSet<(String, String, String)> = BTreeSet::new();
    for archive in archives {
        let Some(wheel_name) = &archive.wheel_name else { continue };
        let path = archive.variant_json.as_ref().map(|(path, _)| path.as_str());
        match (&wheel_name.variant, archive.variant_json.as_ref().map(|(_, text)| text)) {
            (None, None) => {}
            (None, Some(_)) => findings.violation(
                &archive.file,
                path,
                Check::Variant,
                "a wheel without a variant label in its file name carries variant.json",
            ),
            (Some(_), None) => findings.violation(
                &archive.file,
                None,
                Check::Variant,
                "a variant wheel (its file name has a label) has no *.dist-info/variant.json",
            ),
            (Some(label), Some(text)) => {
                let Some(parsed) = parse(text, &archive.file, path, findings) else { continue };
                let key = (wheel_name.name.clone(), wheel_name.version.clone());
                offered.insert((key.0.clone(), key.1.clone(), label.clone()));
                check_wheel(archive, path, label, &parsed, by_release.get(&key), findings);
            }
        }
    }
    for ((name, version), (index, parsed)) in &by_release {
        let Some(parsed) = parsed else { continue };
        for label in parsed.variants.keys() {
            if !offered.contains(&(name.clone(), version.clone(), label.clone())) {
                let message = format!("variant `{label}` has no wheel in the dist tree");
                findings.warning(&index.file, None, Check::Variant, message);
            }
        }
    }
}

/// A variant wheel: exactly its own label, and what its index file says about it.
fn check_wheel(
    archive: &Archive,
    path: Option<&str>,
    label: &str,
    parsed: &Parsed,
    index: Option<&(&VariantsIndex, Option<Parsed>)>,
    findings: &mut Findings,
) {
    let labels: Vec<&String> = parsed.variants.keys().collect();
    if labels != [label] {
        let message =
            format!("variant.json must describe exactly the label `{label}` of the file name, not {labels:?}");
        findings.violation(&archive.file, path, Check::Variant, message);
        return;
    }
    let Some((index, index_parsed)) = index else {
        let message = "no `{name}-{version}-variants.json` for this variant wheel in the dist tree: an installer \
                       cannot choose it (PEP 825)";
        findings.violation(&archive.file, None, Check::Variant, message);
        return;
    };
    let Some(index_parsed) = index_parsed else { return };
    match index_parsed.variants.get(label) {
        None => {
            let message = format!("{} does not list variant `{label}`", index.file);
            findings.violation(&archive.file, path, Check::Variant, message);
        }
        Some(properties) if Some(properties) != parsed.variants.get(label) => {
            let message = format!("the properties of `{label}` differ from those {} lists", index.file);
            findings.violation(&archive.file, path, Check::Variant, message);
        }
        Some(_) => {}
    }
    if index_parsed.shared != parsed.shared {
        let message =
            format!("default-priorities, providers or static-properties differ from {} (PEP 825)", index.file);
        findings.violation(&archive.file, path, Check::Variant, message);
    }
}

/// The file's JSON checked against the schema; `None` (with violations) when it fails.
fn parse(text: &str, file: &str, path: Option<&str>, findings: &mut Findings) -> Option<Parsed> {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => {
            findings.violation(file, path, Check::Variant, format!("is not JSON: {error}"));
            return None;
        }
    };
    let mut problems = Problems::default();
    let parsed = schema(&value, &mut problems);
    for message in problems.violations {
        findings.violation(file, path, Check::Variant, message);
    }
    for message in problems.warnings {
        findings.warning(file, path, Check::Variant, message);
    }
    parsed
}

#[derive(Default)]
struct Problems {
    violations: Vec<String>,
    warnings: Vec<String>,
}

/// The schema's rules; the shared part is everything but `variants` and `$schema`.
fn schema(value: &Value, problems: &mut Problems) -> Option<Parsed> {
    let Some(top) = value.as_object() else {
        problems.violations.push("is not a JSON object".to_owned());
        return None;
    };
    let before = problems.violations.len();
    unknown_keys(top, TOP_KEYS, "the top level", problems);
    if !top.get("$schema").is_none_or(Value::is_string) {
        problems.violations.push("`$schema` is not a string".to_owned());
    }
    let namespaces = default_priorities(top.get("default-priorities"), problems);
    let providers = providers(top.get("providers"), problems);
    if namespaces != providers {
        problems.violations.push(format!(
            "`default-priorities.namespace` lists {namespaces:?}, `providers` {providers:?}: they must be the same \
             namespaces (variantlib)"
        ));
    }
    let variants = match top.get("variants").and_then(Value::as_object) {
        None => {
            problems.violations.push("`variants` is missing or not an object".to_owned());
            Map::new()
        }
        Some(variants) => variants.clone(),
    };
    for (label, properties) in &variants {
        if !is_label(label) {
            problems.violations.push(format!("variant label `{label}` is not [0-9a-z_.]{{1,16}} (PEP 825)"));
        }
        let null = properties.as_object().is_some_and(Map::is_empty);
        if null != (label == NULL_LABEL) {
            problems.violations.push(match null {
                true => format!("variant `{label}` has no properties: the null variant, whose label is `{NULL_LABEL}`"),
                false => format!("the label `{NULL_LABEL}` is the null variant's, which has no properties"),
            });
        }
        for namespace in variant_namespaces(label, properties, problems) {
            if !providers.contains(&namespace) {
                problems.violations.push(format!("variant `{label}` uses namespace `{namespace}` no provider governs"));
            }
            if !namespaces.contains(&namespace) {
                let message = format!("namespace `{namespace}` of `{label}` is not in default-priorities.namespace");
                problems.violations.push(message);
            }
        }
    }
    if problems.violations.len() > before {
        return None;
    }
    let mut shared = top.clone();
    shared.remove("variants");
    shared.remove("$schema");
    Some(Parsed { shared: Value::Object(shared), variants })
}

fn unknown_keys(object: &Map<String, Value>, known: &[&str], what: &str, problems: &mut Problems) {
    for key in object.keys().filter(|key| !known.contains(&key.as_str())) {
        problems.warnings.push(format!("`{key}` at {what} is no key of the 0.2.0 schema"));
    }
}

/// Keys variantlib refuses the file for.
fn refused_keys(object: &Map<String, Value>, known: &[&str], what: &str, problems: &mut Problems) {
    for key in object.keys().filter(|key| !known.contains(&key.as_str())) {
        problems.violations.push(format!("`{key}` at {what} is no key variantlib reads (it refuses the file)"));
    }
}

/// `default-priorities`: required, with a non-empty list of distinct namespaces.
fn default_priorities(value: Option<&Value>, problems: &mut Problems) -> BTreeSet<String> {
    let Some(priorities) = value.and_then(Value::as_object) else {
        problems.violations.push("`default-priorities` is missing or not an object".to_owned());
        return BTreeSet::new();
    };
    refused_keys(priorities, PRIORITY_KEYS, "default-priorities", problems);
    let names = strings(priorities.get("namespace"));
    let unique: BTreeSet<String> = names.iter().cloned().collect();
    if names.is_empty() || unique.len() != names.len() || !names.iter().all(|name| is_identifier(name)) {
        problems.violations.push("`default-priorities.namespace` must list distinct namespaces [a-z0-9_]+".to_owned());
    }
    unique
}

/// `providers`: namespace → { `requires`: strings, `plugin-api`: `module[:object]` }.
fn providers(value: Option<&Value>, problems: &mut Problems) -> BTreeSet<String> {
    let Some(providers) = value.and_then(Value::as_object) else {
        problems.violations.push("`providers` is missing or not an object".to_owned());
        return BTreeSet::new();
    };
    for (namespace, provider) in providers {
        if !is_identifier(namespace) {
            problems.violations.push(format!("provider namespace `{namespace}` is not [a-z0-9_]+"));
        }
        let Some(provider) = provider.as_object() else {
            problems.violations.push(format!("provider `{namespace}` is not an object"));
            continue;
        };
        refused_keys(provider, PROVIDER_KEYS, &format!("providers.{namespace}"), problems);
        let requires_ok = provider.get("requires").is_none_or(|requires| {
            requires.as_array().is_some_and(|items| {
                !items.is_empty() && items.iter().all(|item| item.as_str().is_some_and(is_requirement))
            })
        });
        if !requires_ok {
            problems
                .violations
                .push(format!("`providers.{namespace}.requires` is not a non-empty list of requirements"));
        }
        // How the installer gets the provider's properties: exactly one way (variantlib);
        // build requirements belong to pyproject.toml, not to a built wheel's files.
        let ways =
            ["requires", "static-properties", "builtin"].iter().filter(|key| provider.contains_key(**key)).count();
        if ways != 1 || provider.contains_key("build-requires") {
            problems.violations.push(format!(
                "`providers.{namespace}` must have exactly one of `requires`, `static-properties` and `builtin`"
            ));
        }
        if provider.contains_key("plugin-api") && !provider.contains_key("requires") {
            problems.violations.push(format!("`providers.{namespace}.plugin-api` is valid only with `requires`"));
        }
        if !provider.get("optional").is_none_or(Value::is_boolean) {
            problems.violations.push(format!("`providers.{namespace}.optional` is not true or false"));
        }
        if !provider.get("plugin-api").is_none_or(|api| api.as_str().is_some_and(is_plugin_api)) {
            problems.violations.push(format!("`providers.{namespace}.plugin-api` is not `module[:object]`"));
        }
    }
    providers.keys().cloned().collect()
}

/// A variant's namespaces, after checking its `namespace → feature → [values]` shape.
fn variant_namespaces(label: &str, properties: &Value, problems: &mut Problems) -> Vec<String> {
    let Some(namespaces) = properties.as_object() else {
        problems.violations.push(format!("variant `{label}` is not an object of namespaces"));
        return Vec::new();
    };
    for (namespace, features) in namespaces {
        let Some(features) = features.as_object().filter(|features| !features.is_empty()) else {
            problems.violations.push(format!("`{label}`: namespace `{namespace}` has no features"));
            continue;
        };
        for (feature, values) in features {
            let values = values.as_array().filter(|values| !values.is_empty());
            let values_ok =
                values.is_some_and(|values| values.iter().all(|value| value.as_str().is_some_and(is_value)));
            if !is_identifier(namespace) || !is_identifier(feature) || !values_ok {
                problems.violations.push(format!(
                    "`{label}`: `{namespace} :: {feature}` is not a namespace and feature [a-z0-9_]+ with values \
                     [a-z0-9_.]+"
                ));
            }
        }
    }
    namespaces.keys().cloned().collect()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// `[a-z0-9_]+`: a namespace or a feature name.
fn is_identifier(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// `[a-z0-9_.]+`: a property value.
fn is_value(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.'))
}

/// `[0-9a-z_.]{1,16}`: a label (the 0.2.0 schema's length limit).
fn is_label(text: &str) -> bool {
    is_value(text) && text.len() <= 16
}

/// The schema's `[\S ]+`.
fn is_requirement(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c == ' ' || !c.is_whitespace())
}

/// `module` or `module:object`, dotted names of `[a-zA-Z0-9._]`.
fn is_plugin_api(text: &str) -> bool {
    let dotted = |part: &str| {
        let part = part.trim();
        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_'))
    };
    match text.split_once(':') {
        None => dotted(text),
        Some((module, object)) => dotted(module) && dotted(object),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(json: &str) -> Problems {
        let mut problems = Problems::default();
        schema(&serde_json::from_str(json).expect("json"), &mut problems);
        problems
    }

    const GOOD: &str = r#"{"$schema": "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json",
        "default-priorities": {"namespace": ["amd"]},
        "providers": {"amd": {"requires": ["rocm-sdk-variant-provider==7.0"], "plugin-api": "rocm_sdk_variant_provider"}},
        "variants": {"gfx90a": {"amd": {"gfx_arch": ["gfx90a"]}}}}"#;

    #[test]
    fn the_schema_accepts_what_the_drafts_allow() {
        let problems = problems(GOOD);
        assert!(problems.violations.is_empty() && problems.warnings.is_empty(), "{:?}", problems.violations);
    }

    #[test]
    fn the_schema_names_each_broken_rule() {
        let broken = GOOD
            .replace("\"gfx90a\": {", "\"GFX90A\": {")
            .replace("[\"gfx90a\"]", "[\"gfx90a:xnack+\"]")
            .replace("\"namespace\": [\"amd\"]", "\"namespace\": []");
        let violations = problems(&broken).violations;
        // The empty namespace list breaks its own rule and the one tying it to `providers`.
        assert_eq!(violations.len(), 5, "{violations:#?}");
        assert!(violations.iter().any(|v| v.contains("must be the same")));
        assert!(violations.iter().any(|v| v.contains("label `GFX90A`")));
        assert!(violations.iter().any(|v| v.contains("`amd :: gfx_arch`")));
        assert!(violations.iter().any(|v| v.contains("default-priorities.namespace")));
        let unknown = problems(&GOOD.replace("\"$schema\"", "\"extra\": 1, \"$schema\"")).warnings;
        assert_eq!(unknown, ["`extra` at the top level is no key of the 0.2.0 schema"]);
    }

    #[test]
    fn index_names_parse() {
        assert_eq!(
            parse_index_name("rocm_sdk_device-7.0.dev0-variants.json"),
            Some(("rocm_sdk_device".to_owned(), "7.0.dev0".to_owned()))
        );
        assert_eq!(parse_index_name("rocm-sdk-device-7.0-variants.json"), None);
        assert_eq!(parse_index_name("x-variants.json"), None);
    }
}
