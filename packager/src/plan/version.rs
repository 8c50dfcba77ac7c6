//! PEP 440 versions: every package of a build shares one version, and a bad one is refused
//! before anything is written.
//!
//! Owns: the rule that `--version` is in normal form (SPEC §3). Parsing and the normal form
//! are `pep440_rs`'s, the parser the release gate judges built file names with too, so the
//! packager never writes a version the gate would flag.

/// Checks that `version` is a PEP 440 version already in normal form (SPEC §3: every file
/// name and `==` pin carries it as is). Returns the reason when it is not, naming the
/// normal form when there is one (`07.1` → `use 7.1`).
pub fn check_pep440(version: &str) -> Result<(), String> {
    let parsed: pep440_rs::Version = version.parse().map_err(|error: pep440_rs::VersionParseError| {
        format!("{error} (PEP 440 allows e.g. 7.12.0, 7.12.0rc1, 7.12.0.dev0, 7.12.0.post1+local)")
    })?;
    let normal = parsed.to_string();
    if normal == version {
        Ok(())
    } else {
        Err(format!("not in normal form: use {normal}"))
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
