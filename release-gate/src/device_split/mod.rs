//! What a set split into host and device wheels must hold together (SPEC §12): device
//! wheels (wheels holding `.kpack` archives and no host code) pin their host to their own
//! version; a host wheel built on nothing of ours offers `device-<target>` extras (and
//! `device-all`) requiring them; no fat device code is left in a host wheel (nor in any
//! wheel of an SDK split into device wheels); no code object is in two device wheels. Then
//! the runtime's search (`search`), and whether the set's HIP runtime can load archives at
//! all (`runtime`).
//!
//! Owns: those rules; children `search`, `runtime`. Does not own: reading archives or host binaries
//! (`kpack`), the installed view (`closure`).

mod runtime;
mod search;

pub use runtime::ALLOW_FLAG as ALLOW_RUNTIME_WITHOUT_KPACK_FLAG;

use std::collections::BTreeMap;

use crate::archive::Archive;
use crate::closure::{parent_dir, Install};
use crate::escape::escape;
use crate::kpack::{is_generic, split_target, Wrapper};
use crate::metadata::normalize_name;
use crate::report::{ArchiveKind, Check, Findings};
use crate::same_release::pins_release;
use crate::sdk_names::SdkNames;

/// One `Requires-Dist` line, read as far as these rules need.
pub(crate) struct Requirement {
    /// Normalised distribution name.
    pub name: String,
    pub specifiers: String,
    /// The extra named by an `extra == "…"` marker, normalised.
    pub extra: Option<String>,
    pub has_marker: bool,
    pub line: String,
}

pub(crate) fn requirements(headers: &[(String, String)]) -> Vec<Requirement> {
    let lines = headers.iter().filter(|(key, _)| key.eq_ignore_ascii_case("Requires-Dist")).map(|(_, value)| value);
    lines
        .map(|line| {
            let (requirement, marker) = line.split_once(';').unwrap_or((line, ""));
            let name_end = requirement
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
                .unwrap_or(requirement.len());
            let rest = requirement[name_end..].trim_start();
            let rest = match rest.strip_prefix('[') {
                Some(extras) => extras.split_once(']').map_or("", |(_, after)| after),
                None => rest,
            };
            Requirement {
                name: normalize_name(&requirement[..name_end]),
                specifiers: rest.trim().trim_start_matches('(').trim_end_matches(')').trim().to_owned(),
                extra: marker_extra(marker),
                has_marker: !marker.trim().is_empty(),
                line: line.clone(),
            }
        })
        .collect()
}

/// The extra of a marker `extra == "name"` (either quote), normalised as PEP 685 says.
fn marker_extra(marker: &str) -> Option<String> {
    let rest = marker.trim().strip_prefix("extra")?.trim_start().strip_prefix("==")?.trim_start();
    let quote = rest.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let inner = &rest[1..];
    let end = inner.find(quote)?;
    Some(normalize_name(&inner[..end]))
}

/// Whether the wheel holds archives and no host code: a device wheel.
pub(crate) fn is_device_wheel(archive: &Archive) -> bool {
    archive.kind == ArchiveKind::Wheel
        && !archive.kpacks.is_empty()
        && archive.elf_files.is_empty()
        && archive.pe_files.is_empty()
        && archive.fat_binaries.is_empty()
}

fn distribution(archive: &Archive) -> String {
    archive.name.as_deref().map(normalize_name).unwrap_or_default()
}

/// Runs every rule of split sets; nothing when the set has no archive and no `HIPK` wrapper.
/// `allow_runtime_without_kpack`: a HIP runtime of the set without the kpack loader is a
/// warning, not a violation (`runtime`).
pub(crate) fn check_split_sets(
    archives: &[Archive],
    install: &Install,
    allow_runtime_without_kpack: bool,
    findings: &mut Findings,
) {
    let has_split_binary = |archive: &Archive| {
        archive
            .fat_binaries
            .iter()
            .any(|binary| binary.wrappers.iter().any(|wrapper| matches!(wrapper, Wrapper::Split { .. })))
    };
    if !archives.iter().any(|archive| !archive.kpacks.is_empty() || has_split_binary(archive)) {
        return;
    }
    let sdk_names = SdkNames::of(archives);
    let devices: Vec<&Archive> = archives.iter().filter(|archive| is_device_wheel(archive)).collect();
    let mut hosts: Vec<&Archive> = archives.iter().filter(|archive| has_split_binary(archive)).collect();
    for device in &devices {
        if let Some(host) = check_pin(device, archives, findings) {
            if !sdk_names.contains(&distribution(host)) {
                check_extras(device, host, findings);
            }
            hosts.push(host);
        }
    }
    hosts.sort_by(|a, b| a.file.cmp(&b.file));
    hosts.dedup_by(|a, b| a.file == b.file);
    for host in &hosts {
        check_no_device_code(host, findings);
    }
    // An SDK split into device wheels is split whole: a fat binary left in any of its
    // wheels ships every target's code to every user.
    if devices.iter().any(|device| sdk_names.contains(&distribution(device))) {
        let others = archives.iter().filter(|archive| {
            archive.kind == ArchiveKind::Wheel
                && sdk_names.contains(&distribution(archive))
                && !is_device_wheel(archive)
                && !hosts.iter().any(|host| host.file == archive.file)
        });
        for archive in others {
            check_no_fat_binary(archive, findings);
        }
    }
    check_each_code_object_once(&devices, findings);
    let hipk_wrappers: usize = archives
        .iter()
        .flat_map(|archive| &archive.fat_binaries)
        .flat_map(|binary| &binary.wrappers)
        .filter(|wrapper| matches!(wrapper, Wrapper::Split { .. }))
        .count();
    if hipk_wrappers > 0 {
        runtime::check_runtime(archives, hipk_wrappers, allow_runtime_without_kpack, findings);
    }
    search::check_search(archives, install, findings);
}

/// A device wheel's pin on its host, a wheel of the set that is no device wheel: the
/// host it pins, or `None` (reported).
fn check_pin<'a>(device: &Archive, archives: &'a [Archive], findings: &mut Findings) -> Option<&'a Archive> {
    let version = device.version.as_deref().unwrap_or_default();
    let mut unpinned = Vec::new();
    for requirement in requirements(&device.headers).into_iter().filter(|requirement| !requirement.has_marker) {
        let host = archives.iter().find(|archive| {
            archive.kind == ArchiveKind::Wheel && !is_device_wheel(archive) && distribution(archive) == requirement.name
        });
        let Some(host) = host else { continue };
        if pins_release(&requirement.specifiers, version) {
            return Some(host);
        }
        unpinned.push(requirement.line);
    }
    let message = match unpinned.first() {
        Some(line) => format!(
            "`Requires-Dist: {}` does not pin its host to this wheel's version {version}: pip may pair these kernels \
             with another build of the host, whose wrappers ask for other code objects",
            escape(line)
        ),
        None => format!(
            "device wheel pins no host of the set: no `Requires-Dist: <host> == {version}` names a wheel here whose \
             binaries load its archives"
        ),
    };
    findings.violation(&device.file, None, Check::DeviceCode, message);
    None
}

/// The host offers `device-<target>` for each target of the device wheel, and `device-all`,
/// each requiring it pinned (what `pip install host[device-gfx942]` installs).
fn check_extras(device: &Archive, host: &Archive, findings: &mut Findings) {
    let device_name = distribution(device);
    let version = device.version.as_deref().unwrap_or_default();
    let offered: Vec<String> = host
        .headers
        .iter()
        .filter(|(key, _)| key.eq_ignore_ascii_case("Provides-Extra"))
        .map(|(_, value)| normalize_name(value))
        .collect();
    let host_requirements = requirements(&host.headers);
    let mut targets: Vec<String> = device
        .kpacks
        .iter()
        .flat_map(|kpack| kpack.gfx_arches.iter())
        .map(|arch| split_target(arch).0.to_owned())
        .filter(|processor| !is_generic(processor))
        .collect();
    targets.sort();
    targets.dedup();
    targets.push("all".to_owned());
    for target in targets {
        let extra = normalize_name(&format!("device-{target}"));
        let pinned = host_requirements.iter().any(|requirement| {
            requirement.name == device_name
                && requirement.extra.as_deref() == Some(extra.as_str())
                && pins_release(&requirement.specifiers, version)
        });
        if offered.contains(&extra) && pinned {
            continue;
        }
        findings.violation(
            &host.file,
            None,
            Check::DeviceCode,
            format!(
                "offers no extra `{extra}` installing {device_name} {version}: it needs `Provides-Extra: {extra}` and \
                 `Requires-Dist: {device_name} == {version}; extra == \"{extra}\"`",
                extra = escape(&extra),
                device_name = escape(&device_name),
                version = escape(version),
            ),
        );
    }
}

/// A host wheel of a split set holds no device code: no fat binary, no code object or
/// archive of its own.
fn check_no_device_code(host: &Archive, findings: &mut Findings) {
    check_no_fat_binary(host, findings);
    let code_objects = host.elf_scope.n_gpu_code_objects;
    if code_objects > 0 {
        findings.violation(
            &host.file,
            None,
            Check::DeviceCode,
            format!("holds {code_objects} AMDGPU code objects; in a split set device code lives in the device wheels"),
        );
    }
    for kpack in &host.kpacks {
        findings.violation(
            &host.file,
            Some(&kpack.path),
            Check::DeviceCode,
            "is a kpack archive in a host wheel; in a split set device code lives in the device wheels",
        );
    }
}

/// No `HIPF` wrapper and no `.hip_fatbin` bytes: nothing of the device code left in a file.
fn check_no_fat_binary(wheel: &Archive, findings: &mut Findings) {
    for binary in &wheel.fat_binaries {
        let fat = binary.wrappers.iter().filter(|wrapper| matches!(wrapper, Wrapper::Fat)).count();
        if fat > 0 {
            findings.violation(
                &wheel.file,
                Some(&binary.path),
                Check::DeviceCode,
                format!("still has {fat} HIPF wrappers (device code in the file) in a wheel of a split set"),
            );
        }
        if let Some(bytes) = binary.fatbin_file_bytes {
            findings.violation(
                &wheel.file,
                Some(&binary.path),
                Check::DeviceCode,
                format!(
                    "keeps {bytes} bytes of `.hip_fatbin` in the file; a split binary's `.hip_fatbin` is SHT_NOBITS"
                ),
            );
        }
    }
}

/// Every code object of the set is in exactly one device wheel: two wheels holding one
/// (binary key, target) would be installed together and the search would take either.
fn check_each_code_object_once(devices: &[&Archive], findings: &mut Findings) {
    // Keys name binaries relative to the archives' directory (one package's `.kpack/`), so
    // one key in two directories is two binaries' code.
    let mut first: BTreeMap<(&str, &str, &str), &str> = BTreeMap::new();
    for device in devices {
        let mut repeated: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
        for kpack in &device.kpacks {
            let directory = parent_dir(&kpack.path);
            for (key, arch) in &kpack.entries {
                match first.get(&(directory, key.as_str(), arch.as_str())) {
                    Some(other) if *other != device.file => {
                        let slot = repeated.entry(other).or_insert((0, key.as_str()));
                        slot.0 += 1;
                    }
                    Some(_) => {}
                    None => {
                        first.insert((directory, key.as_str(), arch.as_str()), device.file.as_str());
                    }
                }
            }
        }
        for (other, (count, key)) in repeated {
            findings.violation(
                &device.file,
                None,
                Check::DeviceCode,
                format!(
                    "holds {count} code objects {other} holds too (`{}` first): every code object belongs to exactly \
                     one device wheel",
                    escape(key)
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_lines() {
        let headers = |lines: &[&str]| -> Vec<(String, String)> {
            lines.iter().map(|line| ("Requires-Dist".to_owned(), (*line).to_owned())).collect()
        };
        let read = requirements(&headers(&[
            "torch == 2.10.0",
            "amd-torch-device-gfx942 ==2.10.0; extra == \"device-gfx942\"",
            "Rocm_SDK_Device_gfx90a[x] (==1.0) ; extra=='device_gfx90a'",
            "numpy; python_version >= \"3.9\"",
        ]));
        let fields: Vec<(&str, &str, Option<&str>, bool)> =
            read.iter().map(|r| (r.name.as_str(), r.specifiers.as_str(), r.extra.as_deref(), r.has_marker)).collect();
        assert_eq!(
            fields,
            [
                ("torch", "== 2.10.0", None, false),
                ("amd-torch-device-gfx942", "==2.10.0", Some("device-gfx942"), true),
                ("rocm-sdk-device-gfx90a", "==1.0", Some("device-gfx90a"), true),
                ("numpy", "", None, true),
            ]
        );
    }
}
