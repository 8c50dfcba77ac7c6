//! The pipeline's modes end to end on the bundled example, compared with the
//! normal run that `targets::build` packages once per test binary.
//!
//! This module owns `--only` (a CI matrix of one job per group, merged, equals the full
//! run) and the profiler rule (SPEC §2: no profiler artifacts is an error), plus the
//! readers the children share. Children: `trees` (`--no-build-packages` lays out exactly
//! what the archives hold), `cli` (`--plan --json` and the family flags through the
//! `xtask` binary).

#[path = "pipeline_cli.rs"]
mod cli;
#[path = "pipeline_trees.rs"]
mod trees;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use diagnostic::Diagnostic;
use packager::config::PackageGroup;

use crate::support::{self, Warnings};
use crate::targets::{build, copy_tree, files_below, wheel_entries, CreationOrder, VERSION};

/// The `--only` group a distribution belongs to, from its name (SPEC §2 package table).
fn group_of(dist_name: &str) -> PackageGroup {
    match dist_name {
        "rocm" => PackageGroup::Meta,
        "rocm-sdk-core" => PackageGroup::Core,
        "rocm-profiler" => PackageGroup::Profiler,
        name if name.starts_with("rocm-sdk-libraries") => PackageGroup::Libraries,
        name if name.starts_with("rocm-sdk-device-") => PackageGroup::Device,
        name if name.starts_with("rocm-sdk-devel") => PackageGroup::Devel,
        name => panic!("{name} is no package of the build"),
    }
}

/// Every file directly or indirectly in `dir` (hidden ones too) → its bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    files_below(dir).into_iter().map(|(rel, path)| (rel, fs_err::read(path).expect("read output"))).collect()
}

/// A CI matrix runs one job per group (`--only meta`, `--only core`, ...) and merges their
/// `dist/` folders: the merge must be the full run, file for file and byte for byte.
/// A group the build has no package of (device in legacy mode) is a no-op that says so:
/// the run succeeds, writes nothing and warns, so a matrix may list every group whatever
/// the build's mode.
#[test]
fn only_jobs_merged_equal_the_full_run() {
    for kpack_split in [false, true] {
        let build = build(kpack_split);
        let temp = tempfile::tempdir().expect("temp dir");
        let merged_dest = temp.path().join("merged");
        let merged = merged_dest.join("dist");
        let warnings = Warnings::default();
        for group in PackageGroup::ALL {
            let mut config = support::package_config(&build.artifacts, &merged_dest);
            config.only = vec![group];
            let before = if merged.exists() { contents(&merged) } else { BTreeMap::new() };
            let report = packager::package(&config, &warnings)
                .unwrap_or_else(|error| panic!("kpack_split={kpack_split} --only {}: {error}", group.as_str()));
            let groups: Vec<PackageGroup> = report.outputs.iter().map(|output| group_of(&output.package)).collect();
            assert!(
                groups.iter().all(|written| *written == group),
                "--only {} wrote {:?}",
                group.as_str(),
                report.outputs.iter().map(|output| &output.file_name).collect::<Vec<_>>()
            );
            let warned = warnings.take();
            if group == PackageGroup::Device && !kpack_split {
                assert!(report.outputs.is_empty());
                assert_eq!(contents(&merged), before, "--only device changed the legacy dist");
                assert_eq!(warned, ["--only device: this build has no device package, nothing was written for it"]);
            } else {
                assert!(
                    !report.outputs.is_empty(),
                    "kpack_split={kpack_split} --only {} wrote nothing",
                    group.as_str()
                );
                assert_eq!(warned, Vec::<String>::new());
            }
        }
        let (full, merged) = (contents(&build.dist), contents(&merged));
        assert_eq!(
            full.keys().collect::<Vec<_>>(),
            merged.keys().collect::<Vec<_>>(),
            "kpack_split={kpack_split}: the merged jobs wrote other files than the full run"
        );
        assert!(full.len() >= 5, "kpack_split={kpack_split}: {:?}", full.keys());
        for (name, bytes) in &full {
            assert!(merged[name] == *bytes, "kpack_split={kpack_split}: {name} differs from the full run's");
        }
    }
}

/// SPEC §2 profiler: a Linux build without profiler artifacts is an error naming the
/// artifacts dir (no empty profiler wheel), and nothing is written. Leaving the profiler
/// out with `--only`, as the hint says, packages the rest.
#[test]
fn no_profiler_artifacts_is_an_error() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = temp.path().join("artifacts");
    copy_tree(&build(false).artifacts, &artifacts, CreationOrder::Ascending);
    let mut removed = Vec::new();
    for entry in fs_err::read_dir(&artifacts).expect("read artifacts") {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("rocprofiler-compute_") || name.starts_with("rocprofiler-systems_") {
            fs_err::remove_dir_all(entry.path()).expect("remove a profiler artifact");
            removed.push(name);
        }
    }
    removed.sort();
    assert_eq!(
        removed,
        ["rocprofiler-compute_run_generic", "rocprofiler-systems_lib_generic", "rocprofiler-systems_run_generic"]
    );

    let dist = temp.path().join("dist");
    fs_err::create_dir(&dist).expect("create dist");
    for only in [Vec::new(), vec![PackageGroup::Profiler]] {
        let mut config = support::package_config(&artifacts, temp.path());
        config.only = only;
        let error = packager::package(&config, &packager::Silent).expect_err("no profiler artifacts must fail");
        assert_eq!(
            error.to_string(),
            format!(
                "no profiler artifacts (rocprofiler-compute, rocprofiler-systems) found in {}",
                artifacts.display()
            )
        );
        assert!(error.hint().is_some_and(|hint| hint.contains("--only")), "{:?}", error.hint());
        assert_eq!(fs_err::read_dir(&dist).expect("read dist").count(), 0, "the failed run wrote into dist/");
    }

    let mut config = support::package_config(&artifacts, temp.path());
    config.only = vec![PackageGroup::Meta, PackageGroup::Core];
    let report = packager::package(&config, &packager::Silent).expect("--only without the profiler packages");
    let mut written: Vec<&str> = report.outputs.iter().map(|output| output.package.as_str()).collect();
    written.sort();
    assert_eq!(written, ["rocm", "rocm-sdk-core"]);
}

/// One entry of a tar archive, as a tree on disk would hold it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Dir,
    File { bytes: Vec<u8>, executable: bool },
    Symlink { target: String },
}

/// Every entry of the tar archive `origin` read from `reader`, by path, with the
/// directories its paths imply.
fn tar_nodes(reader: impl Read, origin: &str) -> BTreeMap<String, Node> {
    let mut archive = tar::Archive::new(reader);
    let mut nodes = BTreeMap::new();
    for entry in archive.entries().expect("read archive") {
        let mut entry = entry.expect("archive entry");
        let name = entry.path().expect("entry path").to_string_lossy().trim_end_matches('/').to_owned();
        let node = match entry.header().entry_type() {
            tar::EntryType::Directory => Node::Dir,
            tar::EntryType::Symlink => Node::Symlink {
                target: entry.link_name().expect("link name").expect("a target").to_string_lossy().into_owned(),
            },
            tar::EntryType::Regular => {
                let executable = entry.header().mode().expect("mode") & 0o111 != 0;
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).expect("read entry");
                Node::File { bytes, executable }
            }
            other => panic!("{name}: unexpected entry type {other:?} in {origin}"),
        };
        add_with_parents(&mut nodes, name, node);
    }
    nodes
}

/// Inserts `node` at `name` and a directory at each of its ancestors.
fn add_with_parents(nodes: &mut BTreeMap<String, Node>, name: String, node: Node) {
    let mut parent = name.as_str();
    while let Some((dir, _)) = parent.rsplit_once('/') {
        nodes.entry(dir.to_owned()).or_insert(Node::Dir);
        parent = dir;
    }
    nodes.insert(name, node);
}

/// The `_dist_info_data.py` constant `name` as written (a Python literal), from `source`.
fn constant<'s>(source: &'s str, name: &str) -> &'s str {
    let prefix = format!("{name} = ");
    source
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("{name} is not in _dist_info_data.py:\n{source}"))
}

/// `rocm_sdk/_dist_info_data.py` of the `rocm` sdist in `dist`.
fn sdist_dist_info(dist: &Path) -> String {
    let nodes = sdist_nodes(&dist.join(format!("rocm-{VERSION}.tar.gz")));
    match nodes.get(&format!("rocm-{VERSION}/rocm_sdk/_dist_info_data.py")) {
        Some(Node::File { bytes, .. }) => String::from_utf8(bytes.clone()).expect("UTF-8 source"),
        other => panic!("no _dist_info_data.py file in the sdist: {other:?}"),
    }
}

/// Every entry of the sdist at `path`, by path inside the archive.
fn sdist_nodes(path: &Path) -> BTreeMap<String, Node> {
    let file = fs_err::File::open(path).expect("open the sdist");
    tar_nodes(flate2::read::GzDecoder::new(file), &path.display().to_string())
}
