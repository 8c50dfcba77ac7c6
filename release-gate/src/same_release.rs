//! Which versions are one release, as the gate reads them (SPEC §2, post releases): the
//! versions a set's pins admit, as pip reads them with `--pre` (TheRock's install line).
//! The pin of a final release `R` or its post release is `>=R,<R.0.1` (R, its post
//! releases, dev ones of those, local builds), of any other version `V` `==V`. Spelled and
//! evaluated here with `pep440_rs`, apart from the packager's and the runtime's copies of
//! the rule; tests/it/release_rule.rs walks one table of versions through all three and
//! pip's own `packaging`.
//!
//! Owns: that rule. Does not own: which packages must agree (`set`).

use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};

/// The pin a package of a set of `version` names the others with, or None when `version`
/// is not PEP 440.
fn release_pin(version: &str) -> Option<VersionSpecifiers> {
    let parsed: Version = version.parse().ok()?;
    let pin = if parsed.is_pre() || parsed.is_dev() || parsed.is_local() {
        format!("=={version}")
    } else {
        let release: Vec<String> = parsed.release().iter().map(u64::to_string).collect();
        let release = match parsed.epoch() {
            0 => release.join("."),
            epoch => format!("{epoch}!{}", release.join(".")),
        };
        format!(">={release},<{release}.0.1")
    };
    VersionSpecifiers::from_str(&pin).ok()
}

/// Whether a `Requires-Dist` specifier (`>=7.12.0,<7.12.0.0.1`, `==7.12.0.dev0`) admits
/// `version` as pip reads it with `--pre`; a specifier or version that is not PEP 440 admits
/// only the same text.
pub(crate) fn specifier_admits(specifiers: &str, version: &str) -> bool {
    match (VersionSpecifiers::from_str(specifiers), version.parse::<Version>()) {
        (Ok(specifiers), Ok(version)) => specifiers.contains(&version),
        _ => specifiers.trim().strip_prefix("==").map(str::trim) == Some(version),
    }
}

/// Whether the pins of a set of `set_version` admit `version` (SPEC §2): `7.12.0` admits
/// `7.12.0.post1` and `7.12.0.post1.dev3`, never `7.12.0.1` or `7.12.1`. A version that is
/// not PEP 440 is only itself.
pub fn release_admits(set_version: &str, version: &str) -> bool {
    match (release_pin(set_version), version.parse::<Version>()) {
        (Some(pin), Ok(parsed)) => pin.contains(&parsed),
        _ => set_version == version,
    }
}

/// Whether `specifiers` pins exactly the release of `version`: `==V`, or the release pin
/// the set's packages name each other with (`>=R,<R.0.1`).
pub(crate) fn pins_release(specifiers: &str, version: &str) -> bool {
    let Ok(parsed) = VersionSpecifiers::from_str(specifiers) else { return false };
    let exact = VersionSpecifiers::from_str(&format!("=={version}")).ok();
    Some(&parsed) == exact.as_ref() || Some(&parsed) == release_pin(version).as_ref()
}

/// Whether two versions are one release, either read as the set's.
pub(crate) fn same_release(first: &str, second: &str) -> bool {
    release_admits(first, second) || release_admits(second, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_releases_are_their_release_and_nothing_else_is() {
        for (first, second, same) in [
            ("7.12.0", "7.12.0.post1", true),
            ("7.12.0.post1", "7.12.0.post2", true),
            ("1!7.12.0", "1!7.12.0.post3", true),
            ("7.12.0", "7.12.0.post1.dev3", true),
            ("7.12.0", "7.12.1", false),
            ("7.12.0", "7.12.0.1", false),
            ("7.12.0", "7.12.0.0.1", false),
            ("7.12.0", "7.12.0.1rc1", false),
            ("7.12.0.dev0", "7.12.0.post1.dev0", false),
            ("7.12.0rc1", "7.12.0rc1.post1", false),
            ("7.12.0.dev0", "7.12.0.dev0", true),
            ("not a version", "7.12.0", false),
        ] {
            assert_eq!(same_release(first, second), same, "{first} {second}");
            assert_eq!(same_release(second, first), same, "{second} {first}");
        }
        assert!(specifier_admits(">=7.12.0,<7.12.0.0.1", "7.12.0.post4"));
        assert!(!specifier_admits(">=7.12.0,<7.12.0.0.1", "7.12.0.1"));
        assert!(specifier_admits("==7.12.0.*", "7.12.0.1"));
        assert!(pins_release("== 2.10.0", "2.10.0"));
        assert!(pins_release(">=7.12.0,<7.12.0.0.1", "7.12.0"));
        assert!(!pins_release(">=2.10.0", "2.10.0"));
        assert!(!pins_release("==2.10.*", "2.10.0"));
    }
}
