//! A `--version` that is not PEP 440, or not in its normal form, is refused with the
//! reason (the normal form, when there is one), before anything is written.

use super::{check_archives, copy_example, describe, output, xtask};

#[test]
fn a_non_pep440_version_is_refused_with_the_reason() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = copy_example(temp.path());
    let dist = temp.path().join("dist");
    let cases = [
        ("7.0-beta", "not in normal form: use 7.0b0"),
        ("v7.0", "not in normal form: use 7.0"),
        ("7.0.dev", "not in normal form: use 7.0.dev0"),
        ("07.1", "not in normal form: use 7.1"),
        ("7.0+ABC", "not in normal form: use 7.0+abc"),
        ("release-7", "expected version to start with a number"),
        ("7.0+", "did not find any alphanumeric ASCII segment following the `+`"),
        ("7.0\"; import os", "found `\"; import os`, which is not part of a valid version"),
    ];
    for (version, reason) in cases {
        let result = output(
            xtask()
                .args(["package", "--version", version, "--artifact-dir"])
                .arg(&artifacts)
                .arg("--dest-dir")
                .arg(&dist),
        );
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{version}: {}", describe(&result));
        assert!(stderr.contains(&format!("version {version:?} is not a valid PEP 440 version")), "{stderr}");
        assert!(stderr.contains(reason), "{version}: {stderr}");
        assert!(stderr.contains("hint: pass --version with a PEP 440 version such as 7.12.0.dev0"), "{stderr}");
        assert_eq!(check_archives(&dist), Vec::<String>::new(), "{version}: nothing written");
    }
}

#[test]
fn an_escape_in_the_version_is_escaped_in_the_parsers_words_too() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = copy_example(temp.path());
    let dist = temp.path().join("dist");
    let result = output(
        xtask()
            .args(["package", "--version", "7.12.0.post1\u{1b}[31m", "--artifact-dir"])
            .arg(&artifacts)
            .arg("--dest-dir")
            .arg(&dist),
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{}", describe(&result));
    assert!(!stderr.contains('\u{1b}'), "a raw ESC reached the terminal: {stderr:?}");
    assert!(stderr.contains("\\u{1b}[31m"), "{stderr}");
    assert_eq!(check_archives(&dist), Vec::<String>::new(), "nothing written");
}

#[test]
fn a_version_suffix_making_a_name_longer_than_255_bytes_is_refused_naming_the_bound() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = copy_example(temp.path());
    let dist = temp.path().join("dist");
    let suffix = "a".repeat(300);
    let result = output(
        xtask()
            .args(["package", "--version", "7.12.0", "--version-suffix", &suffix, "--artifact-dir"])
            .arg(&artifacts)
            .arg("--dest-dir")
            .arg(&dist),
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{}", describe(&result));
    let expected = format!(
        "the platform directory `_rocm_sdk_core{suffix}` of rocm-sdk-core is 314 bytes long; a file or directory \
         name may be at most 255 bytes"
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains("hint: shorten what forms the name: --version-suffix"), "{stderr}");
    assert_eq!(check_archives(&dist), Vec::<String>::new(), "nothing written");
}

#[test]
fn a_version_making_a_file_name_too_long_to_write_is_refused() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = copy_example(temp.path());
    // Each name fits, but the wheel's file name, with its temporary name's additions, does not.
    let version = format!("7.12.0+{}", "a".repeat(205));
    let result = output(
        xtask()
            .args(["package", "--version", &version, "--artifact-dir"])
            .arg(&artifacts)
            .arg("--dest-dir")
            .arg(temp.path().join("out")),
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{}", describe(&result));
    assert!(stderr.contains("bytes long; a file name written here may be at most 229 bytes"), "{stderr}");
    assert!(!stderr.contains("os error 36"), "{stderr}");
    assert_eq!(check_archives(&temp.path().join("out/dist")), Vec::<String>::new(), "nothing written");
}
