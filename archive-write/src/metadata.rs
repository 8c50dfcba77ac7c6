//! The text files of a wheel's `.dist-info` and of an sdist: METADATA / PKG-INFO (core
//! metadata 2.1), WHEEL, `entry_points.txt`. How names are spelled in file names is
//! `names`'.
//!
//! Owns: how metadata is spelled. Does not own: what the metadata says (the caller's).

use super::{CoreMetadata, EntryPoint, Generator, WheelRoot, WriteError};

/// Core metadata version written to METADATA and PKG-INFO. 2.1 on purpose: from 2.2 on,
/// installers (uv) may trust an sdist's PKG-INFO instead of asking its build backend, and
/// an sdist may compute its requirements at install time (SPEC §3).
const METADATA_VERSION: &str = "2.1";

/// Refuses names and versions that cannot be spelled in a file name or a header line.
pub fn check_metadata(metadata: &CoreMetadata) -> Result<(), WriteError> {
    let name_ok = !metadata.name.is_empty()
        && metadata.name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !name_ok {
        return Err(WriteError::Invalid {
            reason: format!("distribution name {:?} is not a valid name", metadata.name),
        });
    }
    let version_ok = !metadata.version.is_empty()
        && metadata.version.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '!' | '-' | '_'));
    if !version_ok {
        return Err(WriteError::Invalid { reason: format!("version {:?} is not a valid version", metadata.version) });
    }
    let single_line = [("Summary", &metadata.summary)]
        .into_iter()
        .chain(metadata.requires_dist.iter().map(|value| ("Requires-Dist", value)))
        .chain(metadata.provides_extra.iter().map(|value| ("Provides-Extra", value)))
        .chain(metadata.requires_python.iter().map(|value| ("Requires-Python", value)));
    for (field, value) in single_line {
        if value.contains(['\n', '\r']) {
            return Err(WriteError::Invalid { reason: format!("{field} {value:?} spans several lines") });
        }
    }
    Ok(())
}

/// METADATA of a wheel, PKG-INFO of an sdist (the same format).
pub fn render_core_metadata(metadata: &CoreMetadata) -> Result<Vec<u8>, WriteError> {
    check_metadata(metadata)?;
    let mut out = String::new();
    out.push_str(&format!("Metadata-Version: {METADATA_VERSION}\n"));
    out.push_str(&format!("Name: {}\n", metadata.name));
    out.push_str(&format!("Version: {}\n", metadata.version));
    out.push_str(&format!("Summary: {}\n", metadata.summary));
    if let Some(license) = &metadata.license {
        // A multi-line license text continues on lines indented by 8 spaces (RFC 822 folding).
        let folded = license.trim_end().replace("\r\n", "\n").replace('\n', "\n        ");
        out.push_str(&format!("License: {folded}\n"));
    }
    if let Some(requires_python) = &metadata.requires_python {
        out.push_str(&format!("Requires-Python: {requires_python}\n"));
    }
    for requirement in &metadata.requires_dist {
        out.push_str(&format!("Requires-Dist: {requirement}\n"));
    }
    for extra in &metadata.provides_extra {
        out.push_str(&format!("Provides-Extra: {extra}\n"));
    }
    if let Some(description) = &metadata.description {
        // Without a content type, `twine check` renders the body as reStructuredText and
        // fails on Markdown.
        out.push_str("Description-Content-Type: text/markdown\n\n");
        out.push_str(description);
        if !description.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out.into_bytes())
}

/// The WHEEL file (PEP 427); `tag` is the wheel's `{python}-{abi}-{platform}`.
pub fn render_wheel_file(generator: Generator, tag: &str, root: WheelRoot) -> Vec<u8> {
    let Generator { name, version } = generator;
    let purelib = match root {
        WheelRoot::Platlib => "false",
        WheelRoot::Purelib => "true",
    };
    format!("Wheel-Version: 1.0\nGenerator: {name} {version}\nRoot-Is-Purelib: {purelib}\nTag: {tag}\n").into_bytes()
}

/// `entry_points.txt`: one section per group, groups and names sorted.
pub fn render_entry_points(entry_points: &[EntryPoint]) -> Result<Vec<u8>, WriteError> {
    let mut sorted: Vec<&EntryPoint> = entry_points.iter().collect();
    sorted.sort_by(|a, b| a.group.cmp(&b.group).then_with(|| a.name.cmp(&b.name)));
    let mut out = String::new();
    let mut group: Option<&str> = None;
    for entry in sorted {
        let bad = |s: &str| s.is_empty() || s.contains(['\n', '\r', '=', '[', ']']);
        // A module alone (`package.module`) is an object reference too (a plugin module).
        if bad(&entry.group) || bad(&entry.name) || bad(&entry.target) {
            return Err(WriteError::Invalid {
                reason: format!(
                    "entry point {:?} = {:?} in [{}] is not a valid entry point",
                    entry.name, entry.target, entry.group
                ),
            });
        }
        if group != Some(entry.group.as_str()) {
            if group.is_some() {
                out.push('\n');
            }
            out.push_str(&format!("[{}]\n", entry.group));
            group = Some(entry.group.as_str());
        }
        out.push_str(&format!("{} = {}\n", entry.name, entry.target));
    }
    Ok(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_metadata_in_field_order() {
        let metadata = CoreMetadata {
            name: "my-sdk-core".into(),
            version: "7.1.0".into(),
            summary: "SDK core".into(),
            requires_dist: vec!["my-sdk==7.1.0".into()],
            requires_python: Some(">=3.9".into()),
            license: Some("MIT\nsecond line".into()),
            provides_extra: vec!["headers".into()],
            description: Some("# Title".into()),
        };
        let text = String::from_utf8(render_core_metadata(&metadata).expect("valid")).expect("utf-8");
        assert_eq!(
            text,
            "Metadata-Version: 2.1\nName: my-sdk-core\nVersion: 7.1.0\nSummary: SDK core\n\
             License: MIT\n        second line\nRequires-Python: >=3.9\nRequires-Dist: my-sdk==7.1.0\n\
             Provides-Extra: headers\nDescription-Content-Type: text/markdown\n\n# Title\n"
        );
    }

    #[test]
    fn refuses_a_summary_that_injects_a_header() {
        let metadata = CoreMetadata {
            name: "x".into(),
            version: "1".into(),
            summary: "a\nRequires-Dist: evil".into(),
            ..CoreMetadata::default()
        };
        assert!(render_core_metadata(&metadata).is_err());
    }

    #[test]
    fn entry_points_come_in_one_section_per_group() {
        let entry = |group: &str, name: &str, target: &str| EntryPoint {
            group: group.into(),
            name: name.into(),
            target: target.into(),
        };
        let points = [
            entry("plugins", "ns", "my_plugin"),
            entry(crate::CONSOLE_SCRIPTS, "b", "pkg:b"),
            entry(crate::CONSOLE_SCRIPTS, "a", "pkg:a"),
        ];
        let text = String::from_utf8(render_entry_points(&points).expect("valid")).expect("utf-8");
        assert_eq!(text, "[console_scripts]\na = pkg:a\nb = pkg:b\n\n[plugins]\nns = my_plugin\n");
        assert!(render_entry_points(&[entry("a]b", "x", "m")]).is_err());
        assert!(render_entry_points(&[entry("g", "x", "m\n[other]")]).is_err());
    }
}
