//! PEP 440 versions: every package of a build shares one version, and a bad one is refused
//! before anything is written.
//!
//! Owns: the rule that `--version` is in normal form (SPEC §3), and the pins a package
//! of a set names the others with (a post release is its release, SPEC §2). Parsing and the normal form are
//! `pep440_rs`'s (through `archive-write`'s [`Version`], the one version type of the
//! writer's side), the parser the release gate judges built file names with too, so the
//! packager never writes a version the gate would flag.

use archive_write::Version;

/// `version` parsed, once for the run, if it is a PEP 440 version already in normal form
/// (SPEC §3: every file name and `==` pin carries it as is). Returns the reason when it is
/// not, naming the normal form when there is one (`07.1` → `use 7.1`).
pub fn parse_version(version: &str) -> Result<Version, String> {
    // The parser quotes the version in its message: escaped, as the rest of the message is.
    let parsed = Version::parse(version).map_err(|error| {
        let error = crate::escape::escape(&error.to_string());
        format!("{error} (PEP 440 allows e.g. 7.12.0, 7.12.0rc1, 7.12.0.dev0, 7.12.0.post1+local)")
    })?;
    if parsed.is_normal_form() {
        Ok(parsed)
    } else {
        Err(format!("not in normal form: use {}", parsed.pep440()))
    }
}

/// Whether `version` is a PEP 440 version in normal form ([`parse_version`]), for a caller
/// that checks `--version` before anything else is read.
pub fn check_pep440(version: &str) -> Result<(), String> {
    parse_version(version).map(|_| ())
}

/// The final release a version in normal form belongs to when it is that release or a post
/// release of it (`7.12.0`, `7.12.0.post1` → `7.12.0`); `None` for dev, pre and local
/// versions, which only ever match themselves (TheRock's docs/packaging/versioning.md).
pub fn final_release(version: &str) -> Option<&str> {
    let (release, post) = match version.rsplit_once(".post") {
        Some((release, post)) => (release, Some(post)),
        None => (version, None),
    };
    let numbers = match release.split_once('!') {
        Some((epoch, rest)) if is_number(epoch) => rest,
        // No epoch, or a malformed one that the check below refuses.
        _ => release,
    };
    let release_ok = numbers.split('.').all(is_number);
    let post_ok = post.is_none_or(is_number);
    (release_ok && post_ok).then_some(release)
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// The version specifier a package of a set pins another with (SPEC §2, §3): `==V` for a
/// dev or pre release, `>=R,<R.0.1` for a final release `R` (or its post releases), so one
/// package republished as `R.postN` joins the set of `R`. Not `==R.*`, which admits
/// `R.1` and, with `--pre`, `R.1rc1`: what PEP 440 orders below `R.0.1` is R, its post
/// releases (dev ones with `--pre`) and local builds, and what the runtime and the release
/// gate call this release is exactly that (SPEC §2).
pub fn release_specifier(version: &str) -> String {
    match final_release(version) {
        Some(release) => format!(">={release},<{release}.0.1"),
        None => format!("=={version}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_normal_forms() {
        let versions =
            ["7.12.0", "7.12.0.dev0", "7.12.0rc1", "7.12.0a2.post1.dev3", "1!2.0", "7.0.0+abc.1", "7", "1.0.post1"];
        for version in versions {
            assert_eq!(check_pep440(version), Ok(()), "{version}");
        }
    }

    #[test]
    fn names_the_normal_form_of_other_spellings() {
        let cases = [
            ("7.12.0-dev0", "7.12.0.dev0"),
            ("7.12.0.DEV0", "7.12.0.dev0"),
            ("7.12.0dev", "7.12.0.dev0"),
            ("07.1", "7.1"),
            ("7.0+ABC", "7.0+abc"),
            ("7.0+abc-01_x", "7.0+abc.1.x"),
            ("v7.0", "7.0"),
            ("7.0-beta", "7.0b0"),
            ("7.0.dev", "7.0.dev0"),
            ("7.0 ", "7.0"),
            ("7.0\n", "7.0"),
            ("1.0-1", "1.0.post1"),
            ("1.0.rev2", "1.0.post2"),
            ("1.0preview.3", "1.0rc3"),
            ("1.0-c1_post.2-dev3", "1.0rc1.post2.dev3"),
            ("0!1.0", "1.0"),
            ("007!01.002", "7!1.2"),
        ];
        for (version, normal) in cases {
            assert_eq!(check_pep440(version), Err(format!("not in normal form: use {normal}")), "{version:?}");
        }
    }

    #[test]
    fn a_final_release_pins_itself_and_its_post_releases() {
        assert_eq!(release_specifier("7.12.0"), ">=7.12.0,<7.12.0.0.1");
        assert_eq!(release_specifier("7.12.0.post2"), ">=7.12.0,<7.12.0.0.1");
        assert_eq!(release_specifier("1!7.12.0"), ">=1!7.12.0,<1!7.12.0.0.1");
        assert_eq!(release_specifier("7.12.0+abc"), "==7.12.0+abc");
        assert_eq!(release_specifier("7.12.0.dev0"), "==7.12.0.dev0");
        assert_eq!(release_specifier("7.12.0rc1"), "==7.12.0rc1");
    }

    #[test]
    fn rejects_others_with_the_reason() {
        let cases = [
            ("", "start with a number"),
            ("garbage", "start with a number"),
            ("1!", "after the epoch"),
            ("7..0", "found `..0`"),
            ("7.0.", "found `.`"),
            ("7.0+", "local component"),
            ("7.0+a..b", "local component"),
            ("7.0.0.dev0\"x", "found `\"x`"),
            ("7.0-beta-gamma", "found `gamma`"),
            ("7.0é", "found `é`"),
        ];
        for (version, reason) in cases {
            let error = check_pep440(version).expect_err(version);
            assert!(error.contains(reason) && error.contains("PEP 440 allows"), "{version:?}: {error}");
        }
    }
}
