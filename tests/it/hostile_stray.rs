//! Stray names: an artifact directory TheRock would not name so (other case,
//! a `*.bak` copy), a manifest prefix of `.`, a manifest that is a symlink out of the
//! artifacts directory, and a kpack-split flag written as a string: each is an error
//! naming the file, where each used to be taken silently (a new family, even the default).

use std::os::unix::fs::symlink;

use super::{fails_leaving_dist_intact, full_text, Example};

const THEROCK_MANIFEST: &str = "base_lib_generic/base/aux-overlay/stage/share/therock/therock_manifest.json";

/// The first artifact directory whose name starts with `prefix`.
fn artifact_named(example: &Example, prefix: &str) -> String {
    let mut names: Vec<String> = fs_err::read_dir(&example.artifacts)
        .expect("read artifacts")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(prefix))
        .collect();
    names.sort();
    names.into_iter().next().unwrap_or_else(|| panic!("the example has a {prefix}* artifact"))
}

#[test]
fn artifact_names_therock_does_not_write_are_errors_never_families() {
    // Other case, and a backup copy: both copies of a real artifact, so each would add
    // files (and a family) if it were taken.
    for backup in [false, true] {
        let example = Example::new();
        let source = artifact_named(&example, if backup { "blas_lib_gfx" } else { "core-hip_lib_generic" });
        let stray = if backup { format!("{source}.bak") } else { source.to_uppercase() };
        let error = fails_leaving_dist_intact(&example, |example| {
            let mut copy = std::process::Command::new("cp");
            copy.arg("-a").arg(example.artifacts.join(&source)).arg(example.artifacts.join(&stray));
            crate::support::run(&mut copy);
        });
        let text = full_text(&error);
        assert!(text.contains(&format!("{stray:?}")) && text.contains("not a name TheRock writes"), "{stray}: {text}");
        assert!(text.contains("hint: ") && text.contains("rename or remove"), "{stray}: {text}");
    }
}

#[test]
fn a_manifest_prefix_of_dot_is_an_error() {
    let example = Example::new();
    let manifest = example.artifacts.join("core-runtime_lib_generic/artifact_manifest.txt");
    let error = fails_leaving_dist_intact(&example, |_| {
        let mut text = fs_err::read_to_string(&manifest).expect("read");
        text.push_str(".\n");
        fs_err::write(&manifest, text).expect("write");
    });
    let text = full_text(&error);
    assert!(text.contains(&manifest.display().to_string()) && text.contains("the artifact directory itself"), "{text}");
}

#[test]
fn a_manifest_linked_out_of_the_artifacts_directory_is_an_error() {
    let example = Example::new();
    let manifest = example.artifacts.join("core-runtime_lib_generic/artifact_manifest.txt");
    let outside = example.temp.path().join("elsewhere.txt");
    let error = fails_leaving_dist_intact(&example, |_| {
        fs_err::rename(&manifest, &outside).expect("move");
        symlink(&outside, &manifest).expect("symlink");
    });
    let text = full_text(&error);
    assert!(
        text.contains(&manifest.display().to_string()) && text.contains("outside the artifacts directory"),
        "{text}"
    );
}

#[test]
fn a_kpack_split_flag_that_is_a_string_is_an_error() {
    let example = Example::new();
    let path = example.artifacts.join(THEROCK_MANIFEST);
    let error = fails_leaving_dist_intact(&example, |_| {
        let mut json: serde_json::Value =
            serde_json::from_str(&fs_err::read_to_string(&path).expect("read")).expect("JSON");
        json["flags"]["KPACK_SPLIT_ARTIFACTS"] = serde_json::json!("true");
        fs_err::write(&path, json.to_string()).expect("write");
    });
    let text = full_text(&error);
    assert!(
        text.contains(&path.display().to_string()) && text.contains("must be true or false, not \"true\""),
        "{text}"
    );
}

/// A family suffix in other case (`-ALL`, a lower-case series `x`) is a copy under another
/// spelling: refused when the catalog is read, so `--plan` refuses it too, naming the
/// directory and how TheRock spells it, before anything is written.
#[test]
fn family_names_in_other_case_are_refused_when_the_catalog_is_read() {
    for (stray, therock) in [("blas_lib_gfx1030-ALL", "gfx1030-all"), ("blas_lib_gfx110x-ALL", "gfx110X-all")] {
        let example = Example::new();
        let source = artifact_named(&example, "blas_lib_gfx110X");
        let error = fails_leaving_dist_intact(&example, |example| {
            let mut copy = std::process::Command::new("cp");
            copy.arg("-a").arg(example.artifacts.join(&source)).arg(example.artifacts.join(stray));
            crate::support::run(&mut copy);
        });
        let text = full_text(&error);
        assert!(
            matches!(error, packager::Error::Catalog(packager::input::CatalogError::UnexpectedArtifact { .. })),
            "{stray}: {error:?}"
        );
        assert!(
            text.contains(&format!("{stray:?}")) && text.contains(&example.artifacts.display().to_string()),
            "{text}"
        );
        assert!(text.contains(&format!("TheRock spells it {therock:?}")), "{stray}: {text}");
        let planned = packager::plan(&example.config(), &packager::Silent).expect_err("--plan refuses it too");
        assert_eq!(full_text(&planned), text, "{stray}");
    }
}
