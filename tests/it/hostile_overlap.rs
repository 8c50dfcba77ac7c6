//! The destination apart from the artifacts: a `--dest-dir` inside an artifact's install
//! tree, equal to the artifacts directory, or (for `--no-build-packages` trees) above it,
//! seen through symlinks too, is refused up front with an error saying so; the artifacts
//! and the destination are left as they were.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use packager::config::OutputMode;

use super::{full_text, Example};

/// Every path below `dir` (links not followed), sorted.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in fs_err::read_dir(&next).expect("read dir") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_dir() {
                pending.push(entry.path());
            }
            found.push(entry.path());
        }
    }
    found.sort();
    found
}

/// Packages (and plans) `example` into `dest`, expects the overlap refused with a message
/// holding `says`, and nothing written.
fn refused(example: &Example, dest: &Path, trees: bool, says: &str) {
    let mut config = example.config();
    config.dest_dir = dest.to_owned();
    if trees {
        config.output = OutputMode::Trees;
    }
    let before = tree(&example.artifacts);
    let dest_existed = dest.exists();
    let error = packager::package(&config, &packager::Silent).expect_err("the overlap is refused");
    assert!(matches!(error, packager::Error::Overlap(_)), "{dest:?} (trees: {trees}): {error:?}");
    let text = full_text(&error);
    assert!(text.contains(says) && text.contains(&dest.display().to_string()), "{text}");
    assert!(text.contains("hint: pass a --dest-dir outside the artifacts directory"), "{text}");
    let planned = packager::plan(&config, &packager::Silent).expect_err("--plan refuses it too");
    assert!(matches!(planned, packager::Error::Overlap(_)), "{planned:?}");
    assert_eq!(tree(&example.artifacts), before, "the artifacts changed");
    assert_eq!(dest.exists(), dest_existed, "{dest:?}");
}

#[test]
fn a_destination_inside_an_artifact_or_equal_to_the_artifacts_is_refused() {
    let example = Example::new();
    let stage_out = example.core_stage().join("out");
    refused(&example, &stage_out, false, "is inside the artifacts directory");
    refused(&example, &stage_out, true, "is inside the artifacts directory");
    refused(&example, &example.artifacts, false, "is the artifacts directory");
    refused(&example, &example.artifacts, true, "is the artifacts directory");
    // A tree an earlier run laid there is not taken for a stray artifact first.
    fs_err::create_dir_all(example.artifacts.join("rocm_sdk_core-7.12.0.dev0/_rocm_sdk_core")).expect("mkdir");
    refused(&example, &example.artifacts, true, "is the artifacts directory");
    // Trees go into the destination itself: one above the artifacts holds them.
    refused(&example, example.temp.path(), true, "where this run writes its package trees");
}

#[test]
fn an_overlap_through_a_symlink_is_seen_and_shown_as_it_really_is() {
    let example = Example::new();
    let alias = example.temp.path().join("alias");
    symlink(example.artifacts.join("core-runtime_lib_generic"), &alias).expect("symlink");
    let real = fs_err::canonicalize(&example.artifacts).expect("real path").join("core-runtime_lib_generic/new/out");
    refused(&example, &alias.join("new/out"), false, &format!("(really {})", real.display()));
}

/// Beside the artifacts, as TheRock lays it out (build/python-packages next to
/// build/artifacts), and above them for archives (which go to `dist/`), are apart.
#[test]
fn destinations_beside_the_artifacts_are_apart() {
    let example = Example::new();
    let mut config = example.config();
    config.dest_dir = example.temp.path().join("python-packages");
    config.output = OutputMode::Trees;
    packager::plan(&config, &packager::Silent).expect("trees beside the artifacts");
    config.dest_dir = example.temp.path().to_owned();
    config.output = example.config().output;
    packager::plan(&config, &packager::Silent).expect("archives above the artifacts go to dist/");
    assert!(matches!(
        packager::output::destination::overlap::check_apart(&example.artifacts, &config.destination(), false),
        Ok(())
    ));
}
