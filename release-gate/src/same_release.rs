//! Which versions are one release, as the gate reads them (SPEC §4, post releases): a final
//! release and its post releases (`7.12.0`, `7.12.0.post1`) are one release; dev, pre and
//! local versions are only ever themselves. Read with `pep440_rs`, apart from the packager's
//! own rule, so a mistake in one is seen by the other.
//!
//! Owns: that comparison. Does not own: which packages must agree (`set`).

use pep440_rs::Version;

/// The final release `version` belongs to, spelled `[E!]N(.N)*` (`7.12.0.post1` → `7.12.0`),
/// or None for a dev, pre or local version, or one that is not PEP 440.
pub(crate) fn final_release(version: &str) -> Option<String> {
    let parsed: Version = version.parse().ok()?;
    if parsed.is_pre() || parsed.is_dev() || parsed.is_local() {
        return None;
    }
    let release: Vec<String> = parsed.release().iter().map(u64::to_string).collect();
    let release = release.join(".");
    Some(match parsed.epoch() {
        0 => release,
        epoch => format!("{epoch}!{release}"),
    })
}

/// Whether two versions are one release: equal, or one final release up to a `.postN`.
pub(crate) fn same_release(first: &str, second: &str) -> bool {
    first == second || final_release(first).is_some_and(|release| final_release(second) == Some(release))
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
            ("7.12.0", "7.12.1", false),
            ("7.12.0", "7.12.0.1", false),
            ("7.12.0.dev0", "7.12.0.post1.dev0", false),
            ("7.12.0rc1", "7.12.0rc1.post1", false),
            ("7.12.0+abc", "7.12.0.post1", false),
            ("7.12.0.dev0", "7.12.0.dev0", true),
            ("not a version", "7.12.0", false),
        ] {
            assert_eq!(same_release(first, second), same, "{first} {second}");
            assert_eq!(same_release(second, first), same, "{second} {first}");
        }
        assert_eq!(final_release("7.12.0.post4").as_deref(), Some("7.12.0"));
        assert_eq!(final_release("7.12.0.dev0"), None);
    }
}
