//! The metadata of a split (SPEC §12 "Metadata"): the host keeps its name, version and
//! tags and gains one `device-<target>` extra per GPU target its device code serves, plus
//! `device-all`, each requiring the device wheels that target needs at the host's exact
//! version (`pip install 'torch[device-gfx942]'`); each device wheel has the host's version
//! and tags and requires its host at that version, plus what `--device-requires` adds
//! (`@GFXARCH@` replaced by its target, as TheRock's CI pulls the SDK's matching device
//! wheel).
//!
//! Owns: those lines, the device wheels' names, METADATA and WHEEL. Does not own: which
//! wheels exist (`grouping`), the file name's spelling (`archive-write`'s names).

use std::collections::{BTreeMap, BTreeSet};

use super::grouping::WheelKey;
use crate::targets::Target;
use archive_write::{normalize, DistName, NameError, WheelFileName};

/// The placeholder `--device-requires` replaces with a device wheel's target.
pub const GFXARCH: &str = "@GFXARCH@";

/// The extra every device wheel is required by.
pub const DEVICE_ALL: &str = "device-all";

/// The extra of one target.
pub fn extra_name(target: &Target) -> String {
    format!("device-{target}")
}

/// The distribution name of the device wheel `key` with `prefix` (`torch-device` →
/// `torch-device-gfx942`).
pub fn device_name(prefix: &str, key: &WheelKey) -> Result<DistName, NameError> {
    DistName::new(&format!("{prefix}-{key}"))
}

/// The device wheel's file name: the host's, with the device distribution's name.
pub fn device_file_name(host: &WheelFileName, name: DistName) -> WheelFileName {
    WheelFileName { name, ..host.clone() }
}

/// The host's METADATA with the extras added after its last header line.
pub fn host_metadata(
    metadata: &str,
    version: &str,
    device_names: &BTreeMap<WheelKey, DistName>,
    extras: &BTreeMap<Target, Vec<WheelKey>>,
) -> String {
    let (headers, body) = split_headers(metadata);
    let mut lines: Vec<String> = headers.lines().map(str::to_owned).collect();
    let pin = |key: &WheelKey| device_names.get(key).map(|name| format!("{name}=={version}"));
    for (target, keys) in extras {
        let extra = extra_name(target);
        lines.push(format!("Provides-Extra: {extra}"));
        for requirement in keys.iter().filter_map(pin) {
            lines.push(format!("Requires-Dist: {requirement}; extra == \"{extra}\""));
        }
    }
    lines.push(format!("Provides-Extra: {DEVICE_ALL}"));
    for requirement in device_names.keys().filter_map(pin) {
        lines.push(format!("Requires-Dist: {requirement}; extra == \"{DEVICE_ALL}\""));
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out.push_str(body);
    out
}

/// A device wheel's METADATA.
pub fn device_metadata(
    name: &DistName,
    version: &str,
    host: &str,
    key: &WheelKey,
    device_requires: &[String],
    targets: &BTreeSet<String>,
) -> String {
    let served = describe(key, targets);
    let mut lines = vec![
        "Metadata-Version: 2.1".to_owned(),
        format!("Name: {name}"),
        format!("Version: {version}"),
        format!("Summary: Device code of {host} for {served}"),
        "Description-Content-Type: text/markdown".to_owned(),
        format!("Requires-Dist: {}=={version}", normalize(host)),
    ];
    // A family's wheel serves several targets: a requirement naming one target has no
    // single value for it.
    if let WheelKey::Target(target) = key {
        for requirement in device_requires {
            lines.push(format!("Requires-Dist: {}", requirement.replace(GFXARCH, target.as_str())));
        }
    }
    let extra = match key {
        WheelKey::Target(target) => extra_name(target),
        WheelKey::Family(_) => DEVICE_ALL.to_owned(),
    };
    let mut out = lines.join("\n");
    out.push_str(&format!(
        "\n\nThe GPU code objects of {host} {version} for {served}, in kpack archives that the HIP runtime \
         loads from beside {host}'s libraries. Install it with its host: `pip install '{host}[{extra}]'`.\n"
    ));
    out
}

fn describe(key: &WheelKey, targets: &BTreeSet<String>) -> String {
    match (key, targets.is_empty()) {
        (WheelKey::Target(target), true) => target.to_string(),
        (WheelKey::Family(family), true) => format!("the {family} family"),
        (_, false) => targets.iter().cloned().collect::<Vec<_>>().join(", "),
    }
}

/// A device wheel's WHEEL: the host's tags, our generator, installed into platlib.
pub fn device_wheel_file(host_wheel_file: &str, generator: &str) -> String {
    let mut lines =
        vec!["Wheel-Version: 1.0".to_owned(), format!("Generator: {generator}"), "Root-Is-Purelib: false".to_owned()];
    for line in host_wheel_file.lines() {
        if line.split_once(':').is_some_and(|(key, _)| key.trim().eq_ignore_ascii_case("Tag")) {
            lines.push(line.trim_end().to_owned());
        }
    }
    if let Some(build) = host_wheel_file
        .lines()
        .find(|line| line.split_once(':').is_some_and(|(key, _)| key.trim().eq_ignore_ascii_case("Build")))
    {
        lines.push(build.trim_end().to_owned());
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Core metadata's header lines and its body (after the first blank line).
fn split_headers(metadata: &str) -> (&str, &str) {
    match metadata.find("\n\n") {
        Some(at) => (&metadata[..at], &metadata[at + 1..]),
        None => (metadata.trim_end_matches('\n'), ""),
    }
}

/// Whether METADATA already offers device extras: the wheel was split before.
pub fn offers_device_extras(metadata: &str) -> bool {
    split_headers(metadata).0.lines().any(|line| {
        line.split_once(':').is_some_and(|(key, value)| {
            key.trim().eq_ignore_ascii_case("Provides-Extra") && value.trim().starts_with("device-")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(names: &[&str]) -> BTreeMap<WheelKey, DistName> {
        names
            .iter()
            .filter_map(|name| WheelKey::of_target_id(name))
            .map(|key| {
                let name = device_name("ext-device", &key).expect("a valid name");
                (key, name)
            })
            .collect()
    }

    #[test]
    fn the_host_offers_one_extra_per_target_and_device_all() {
        let names = keys(&["gfx90a", "gfx11-generic"]);
        let extras = super::super::grouping::extras(&names.keys().cloned().collect());
        let metadata = "Metadata-Version: 2.1\nName: ext\nVersion: 1.0\nRequires-Dist: numpy\n\nThe description.\n";
        let out = host_metadata(metadata, "1.0", &names, &extras);
        assert!(out.starts_with("Metadata-Version: 2.1\nName: ext\nVersion: 1.0\nRequires-Dist: numpy\n"), "{out}");
        assert!(out.ends_with("\n\nThe description.\n"), "{out}");
        assert!(out.contains(
            "Provides-Extra: device-gfx90a\nRequires-Dist: ext-device-gfx90a==1.0; extra == \"device-gfx90a\"\n"
        ));
        assert!(out.contains(
            "Provides-Extra: device-gfx1151\nRequires-Dist: ext-device-gfx11-generic==1.0; extra == \"device-gfx1151\"\n"
        ));
        assert!(out.contains("Provides-Extra: device-all\nRequires-Dist: ext-device-gfx90a==1.0; extra == \"device-all\"\nRequires-Dist: ext-device-gfx11-generic==1.0; extra == \"device-all\"\n"), "{out}");
        assert!(offers_device_extras(&out) && !offers_device_extras(metadata));
    }

    #[test]
    fn device_wheels_pin_their_host_and_take_requirements_per_target() {
        let key = WheelKey::of_target_id("gfx942").expect("a target");
        let name = device_name("Ext_device", &key).expect("a name");
        let requires = vec!["rocm-sdk-device-@GFXARCH@ == 7.10.0".to_owned()];
        let out = device_metadata(
            &name,
            "1.0",
            "Ext.Pkg",
            &key,
            &requires,
            &BTreeSet::from(["gfx942".into(), "gfx942:xnack+".into()]),
        );
        assert_eq!(
            out,
            "Metadata-Version: 2.1\nName: Ext_device-gfx942\nVersion: 1.0\nSummary: Device code of Ext.Pkg for gfx942, \
             gfx942:xnack+\nDescription-Content-Type: text/markdown\nRequires-Dist: ext-pkg==1.0\nRequires-Dist: \
             rocm-sdk-device-gfx942 == 7.10.0\n\nThe GPU code objects of Ext.Pkg 1.0 for gfx942, gfx942:xnack+, in kpack \
             archives that the HIP runtime loads from beside Ext.Pkg's libraries. Install it with its host: `pip install \
             'Ext.Pkg[device-gfx942]'`.\n"
        );
        let family = WheelKey::of_pattern("gfx11xx").expect("a family");
        let out = device_metadata(
            &device_name("e", &family).expect("a name"),
            "1.0",
            "e",
            &family,
            &requires,
            &BTreeSet::new(),
        );
        assert!(!out.contains("rocm-sdk-device"), "{out}");
    }

    #[test]
    fn device_wheels_keep_the_hosts_tags() {
        let host = "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.45)\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_28_x86_64\nBuild: 3\n";
        assert_eq!(
            device_wheel_file(host, "rocm-packager 0.1.0"),
            "Wheel-Version: 1.0\nGenerator: rocm-packager 0.1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_28_x86_64\nBuild: 3\n"
        );
    }
}
