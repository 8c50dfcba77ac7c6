//! Artifacts that do not merge into one tree: a path that is a directory in one artifact
//! and a file or symlink in another is refused before anything is written, naming both
//! artifacts; a directory link to a directory holding it is dropped with a warning; a
//! symlink named like an artifact is ignored with a warning saying why.

use std::os::unix::fs::symlink;
use std::path::Path;

use super::{devel_members, fails_leaving_dist_intact, full_text, Example};
use crate::support::Warnings;

const HIP_DEV: &str = "core-hip_dev_generic/core/clr/stage";
const PRIM_DEV: &str = "prim_dev_generic/math-libs/rocPRIM/stage";

/// What a test puts at `rel` inside one artifact's install tree.
enum Put {
    Dir,
    File,
    Link(&'static str),
}

fn put(stage: &Path, rel: &str, what: &Put) {
    let path = stage.join(rel);
    fs_err::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    match what {
        Put::Dir => {
            fs_err::create_dir_all(path.join("inner")).and_then(|()| fs_err::write(path.join("inner/x.h"), "x"))
        }
        Put::File => fs_err::write(&path, "a file\n"),
        Put::Link(target) => symlink(target, &path),
    }
    .expect("put");
}

#[test]
fn a_directory_and_a_file_or_link_at_one_path_are_refused_naming_both_artifacts() {
    // (earlier artifact, later artifact, the message). The earlier one (by name) is
    // core-hip_dev_generic; as for two files, the later would have won.
    let cases = [
        (
            Put::Dir,
            Put::Link("rocprim"),
            "include/h3clash is a directory in core-hip_dev_generic and a symlink in prim_dev_generic",
        ),
        (Put::Dir, Put::File, "include/h3clash is a directory in core-hip_dev_generic and a file in prim_dev_generic"),
        (
            Put::Link("hip"),
            Put::Dir,
            "include/h3clash is a symlink in core-hip_dev_generic and a directory in prim_dev_generic",
        ),
        (Put::File, Put::Dir, "include/h3clash is a file in core-hip_dev_generic and a directory in prim_dev_generic"),
    ];
    for (earlier, later, says) in cases {
        let example = Example::new();
        let error = fails_leaving_dist_intact(&example, |example| {
            put(&example.artifacts.join(HIP_DEV), "include/h3clash", &earlier);
            put(&example.artifacts.join(PRIM_DEV), "include/h3clash", &later);
        });
        let text = full_text(&error);
        assert!(text.starts_with(says), "{text}");
        for stage in [HIP_DEV, PRIM_DEV] {
            let path = example.artifacts.join(stage).join("include/h3clash");
            assert!(text.contains(&path.display().to_string()), "{text}");
        }
        assert!(text.contains("hint: ") && text.contains("nothing was written"), "{text}");
        // `--plan` refuses it too: the plan is what a run would write.
        let planned = packager::plan(&example.config(), &packager::Silent).expect_err("the plan refuses it");
        assert!(full_text(&planned).starts_with(says), "{planned}");
    }
}

/// Links to a directory holding them make every walk that follows links loop, and the
/// installed runtime refuses a devel tree holding one: dropped, each named in a warning,
/// so the devel wheel expands and passes `verify --dist`.
#[test]
fn links_to_a_directory_holding_them_are_dropped_with_a_warning() {
    let example = Example::new();
    let stage = example.artifacts.join(HIP_DEV);
    let links = [("include/up", "../include"), ("include/hip/self", "."), ("include/hip/top", "../..")];
    for (link, target) in links {
        symlink(target, stage.join(link)).expect("symlink");
    }
    let warnings = Warnings::default();
    packager::package(&example.config(), &warnings).expect("packages without the loops");
    let warnings = warnings.take();
    for (link, _) in links {
        let named = format!("dropped {link} ({})", stage.join(link).display());
        assert!(
            warnings.iter().any(|warning| warning.starts_with(&named) && warning.contains("the link itself (a loop)")),
            "{link}: {warnings:#?}"
        );
    }
    let devel = devel_members(&example.dist());
    assert!(devel.keys().any(|name| name.ends_with("/include/hip/hip_runtime.h")), "{:?}", devel.keys());
    for (link, _) in links {
        assert!(!devel.keys().any(|name| name.ends_with(&format!("/{link}"))), "{link} in the devel tarball");
    }
    let report = release_gate::verify_dist(&example.dist()).expect("verify runs");
    assert_eq!(report.n_violations(), 0, "{report:#?}");
}

/// A symlink named like an artifact is not read (it could bring in files from anywhere),
/// and the run says so at default verbosity rather than leaving the artifact out quietly.
#[test]
fn a_symlinked_artifact_directory_is_ignored_with_a_warning_saying_why() {
    let example = Example::new();
    let moved = example.temp.path().join("elsewhere/rand_lib_generic");
    fs_err::create_dir_all(moved.parent().expect("parent")).expect("mkdir");
    let link = example.artifacts.join("rand_lib_generic");
    fs_err::rename(&link, &moved).expect("move the artifact out");
    symlink(&moved, &link).expect("symlink");
    let warnings = Warnings::default();
    let plan = packager::plan(&example.config(), &warnings).expect("plans");
    let warnings = warnings.take();
    let named = format!("ignored {} (a symlink to {})", link.display(), moved.display());
    assert!(
        warnings.iter().any(|warning| warning.starts_with(&named) && warning.contains("only real directories")),
        "{warnings:#?}"
    );
    assert!(!plan.packages.iter().any(|package| package.files.keys().any(|rel| rel.as_str().contains("rocrand"))));
}
