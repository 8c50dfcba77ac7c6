//! Wheels built on the SDK, judged with the set they sit in (SPEC §11). A wheel that is no
//! package of the SDK (an extension, a framework) must bundle no copy of a library the set
//! ships (the same SONAME, or an auditwheel-grafted copy's with its hash taken out: two
//! copies of one runtime in a process), and every `Requires-Dist` it has on an SDK package
//! must be satisfiable by the set's release. Its DT_NEEDED and symbol closure are the
//! rules of `closure` and `symbols`, as for the SDK's own files.
//!
//! Owns: those two rules. Does not own: which packages are the SDK's (`sdk_names`), the
//! release rule (`same_release`), resolving paths (`closure`).

use std::collections::BTreeMap;
use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};

use super::archive::Archive;
use super::metadata::normalize_name;
use super::report::{ArchiveKind, Check, Findings};
use super::sdk_names::SdkNames;

pub(crate) fn check_third_party(archives: &[Archive], findings: &mut Findings) {
    let names = SdkNames::of(archives);
    let is_sdk = |archive: &Archive| archive.name.as_deref().is_some_and(|name| names.contains(name));
    let mut shipped: BTreeMap<&str, &str> = BTreeMap::new();
    let mut versions: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for archive in archives.iter().filter(|archive| is_sdk(archive)) {
        if let (Some(name), Some(version)) = (&archive.name, &archive.version) {
            versions.entry(normalize_name(name)).or_default().push(version);
        }
        for member in &archive.elf_files {
            let file_name = member.path.rsplit('/').next().unwrap_or(&member.path);
            if member.elf.soname.as_deref() == Some(file_name) {
                shipped.entry(file_name).or_insert(&archive.file);
            }
        }
    }
    for archive in archives.iter().filter(|archive| archive.kind == ArchiveKind::Wheel && !is_sdk(archive)) {
        for member in &archive.elf_files {
            let own = member.elf.soname.as_deref().unwrap_or_else(|| member.path.rsplit('/').next().unwrap_or(""));
            let copied = [Some(own.to_owned()), without_graft_hash(own)]
                .into_iter()
                .flatten()
                .find_map(|name| shipped.get_key_value(name.as_str()).map(|(name, file)| (*name, *file)));
            if let Some((soname, file)) = copied {
                findings.violation(
                    &archive.file,
                    Some(&member.path),
                    Check::SdkCopy,
                    format!(
                        "is a copy of {soname}, which {file} ships: a process would load two copies of it \
                         (`cargo xtask repair` links the SDK's instead)"
                    ),
                );
            }
        }
        check_requirements(archive, &names, &versions, findings);
    }
}

/// Every `Requires-Dist` on an SDK package must admit a version of it the set has.
fn check_requirements(
    archive: &Archive,
    names: &SdkNames,
    versions: &BTreeMap<String, Vec<&str>>,
    findings: &mut Findings,
) {
    for (key, value) in &archive.headers {
        if !key.eq_ignore_ascii_case("Requires-Dist") {
            continue;
        }
        let requirement = value.split(';').next().unwrap_or(value).trim();
        let name_end = requirement
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(requirement.len());
        let name = normalize_name(&requirement[..name_end]);
        if !names.contains(&name) {
            continue;
        }
        let mut rest = requirement[name_end..].trim_start();
        if let Some((_, after)) = rest.strip_prefix('[').and_then(|inner| inner.split_once(']')) {
            rest = after;
        }
        let specifiers = rest.trim().trim_start_matches('(').trim_end_matches(')').trim();
        let available = versions.get(&name).map(Vec::as_slice).unwrap_or_default();
        let admitted = match VersionSpecifiers::from_str(specifiers) {
            Ok(specifiers) => available
                .iter()
                .any(|version| Version::from_str(version).is_ok_and(|version| specifiers.contains(&version))),
            Err(_) => {
                findings.violation(
                    &archive.file,
                    None,
                    Check::Pin,
                    format!("`Requires-Dist: {value}` has version specifiers that do not parse"),
                );
                continue;
            }
        };
        if !admitted {
            let has = if available.is_empty() { "none".to_owned() } else { available.join(", ") };
            findings.violation(
                &archive.file,
                None,
                Check::Pin,
                format!("`Requires-Dist: {value}` is not satisfied by the set, which has {name} {has}"),
            );
        }
    }
}

/// A SONAME with auditwheel's graft hash taken out (`libamdhip64-1a2b3c4d.so.7` →
/// `libamdhip64.so.7`), the gate's own reading of that naming.
fn without_graft_hash(soname: &str) -> Option<String> {
    let (base, rest) = soname.split_once('.')?;
    let (name, hash) = base.rsplit_once('-')?;
    let hashed = hash.len() == 8 && hash.bytes().all(|byte| byte.is_ascii_hexdigit()) && !name.is_empty();
    hashed.then(|| format!("{name}.{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graft_hashes_come_off() {
        assert_eq!(without_graft_hash("libamdhip64-69bae30f.so.7").as_deref(), Some("libamdhip64.so.7"));
        assert_eq!(without_graft_hash("libamdhip64.so.7"), None);
    }
}
