//! A run that fails after some of its outputs were written: it commits nothing,
//! so `dist/` keeps exactly what an earlier run put there, and an empty `dist/` gets no
//! partial set. The runs' outputs differ from the earlier ones (a file is added first), so
//! a package replaced and not put back would show.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use packager::plan::{DevelEntry, PackagePlan, PlannedFile};

use super::{dist_snapshot, full_text, Example};

const SDIST: &str = "rocm-7.12.0.dev0.tar.gz";

/// Every entry of `dist` but the lock, hidden temp files included: a file's bytes, or
/// `None` for a directory.
fn entries(dist: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fs_err::read_dir(dist)
        .expect("read dist")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.file_name().is_some_and(|name| name != ".rocm-packager.lock"))
        .map(|path| {
            let name = path.file_name().expect("name").to_string_lossy().into_owned();
            let bytes = if path.is_dir() { None } else { Some(fs_err::read(&path).expect("read dist file")) };
            (name, bytes)
        })
        .collect()
}

/// A file the core wheel gets that the earlier run did not see.
fn add_core_file(example: &Example) {
    let dir = example.core_stage().join("share/rerun");
    fs_err::create_dir_all(&dir).expect("mkdir");
    fs_err::write(dir.join("new.txt"), "only in the rerun\n").expect("write");
}

/// The input files a package reads, as the plan recorded them.
fn sources(package: &PackagePlan) -> BTreeSet<PathBuf> {
    let devel = package.devel_tree.as_ref().map(|tree| tree.collect().expect("devel tree")).unwrap_or_default();
    let devel_files = devel.iter().filter_map(|(_, entry)| match entry {
        DevelEntry::File { file } => Some(file),
        _ => None,
    });
    package
        .files
        .values()
        .chain(devel_files)
        .filter_map(|file| match file {
            PlannedFile::Copy { source, .. } | PlannedFile::PatchRpath { source, .. } => Some(source.to_path_buf()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_rerun_that_fails_on_its_last_wheel_leaves_the_earlier_packages_byte_for_byte() {
    let example = Example::new();
    example.package().expect("the first run");
    let before = dist_snapshot(&example.dist());
    assert_eq!(before.len(), 7, "{:?}", before.keys());

    add_core_file(&example);
    let config = example.config();
    let plan = packager::plan(&config, &packager::Silent).expect("plans");
    // A file only the last wheel reads, changed after the plan: every other wheel is
    // written before the run fails.
    let (last, earlier) = plan.packages.split_last().expect("packages");
    let earlier: BTreeSet<PathBuf> = earlier.iter().flat_map(sources).collect();
    let changed = sources(last).into_iter().find(|source| !earlier.contains(source)).expect("a file of its own");
    let mut bytes = fs_err::read(&changed).expect("read");
    bytes.extend_from_slice(b"grown after the plan");
    fs_err::write(&changed, bytes).expect("write");

    let lock = packager::DestLock::acquire(&config.destination()).expect("lock");
    let error = packager::write_locked(&plan, &config, &packager::Silent, &lock).expect_err("the run must fail");
    let text = full_text(&error);
    assert!(text.contains(&changed.display().to_string()) && text.contains("changed while"), "{text}");
    let after = dist_snapshot(&example.dist());
    assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>(), "{last:?} failed: {text}");
    assert!(before == after, "a package of the earlier run changed: {text}");
}

#[test]
fn a_sdist_that_cannot_be_placed_leaves_no_wheel_in_an_empty_dist() {
    let example = Example::new();
    // A directory under the sdist's name: its rename, after every wheel's, fails.
    let in_the_way = example.dist().join(SDIST);
    fs_err::create_dir_all(in_the_way.join("inside")).expect("mkdir");

    let error = example.package().expect_err("the sdist cannot be placed");
    let text = full_text(&error);
    assert!(text.contains(&in_the_way.display().to_string()), "{text}");
    let left: Vec<String> = entries(&example.dist()).into_keys().collect();
    assert_eq!(left, [SDIST], "{text}");
    assert!(in_the_way.join("inside").is_dir());
}

#[test]
fn a_commit_that_fails_midway_puts_back_the_packages_it_replaced() {
    let example = Example::new();
    example.package().expect("the first run");
    add_core_file(&example);
    let sdist = example.dist().join(SDIST);
    fs_err::remove_file(&sdist).expect("rm");
    fs_err::create_dir_all(sdist.join("inside")).expect("mkdir");
    let before = entries(&example.dist());

    // The wheels are renamed over the earlier ones, then the sdist's rename fails.
    let error = example.package().expect_err("the sdist cannot be placed");
    let after = entries(&example.dist());
    assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>(), "{}", full_text(&error));
    assert!(before == after, "an earlier package was not put back: {}", full_text(&error));

    // With the way clear, the run replaces every package and leaves no temp file.
    fs_err::remove_dir_all(&sdist).expect("rm");
    example.package().expect("the rerun");
    let after = dist_snapshot(&example.dist());
    let names: Vec<&String> = before.keys().collect();
    assert_eq!(after.keys().collect::<Vec<_>>(), names);
    assert!(example.core_wheel().keys().any(|name| name.ends_with("share/rerun/new.txt")));
}

/// The devel tree is read from the artifacts again as its tarball is written (it is never
/// held in memory): a header added or removed after the plan fails the run, naming where
/// the artifacts changed, and leaves `dist/` empty.
#[test]
fn a_devel_path_added_or_removed_after_the_plan_fails_naming_it() {
    // Two headers only the devel tree reads; the change is made beside or to them.
    let headers = |example: &Example| {
        let dir = example.artifacts.join("prim_dev_generic/math-libs/rocPRIM/stage/include/rocprim/late");
        fs_err::create_dir_all(&dir).expect("mkdir");
        for name in ["a.hpp", "b.hpp"] {
            fs_err::write(dir.join(name), "#pragma once\n").expect("write");
        }
        dir
    };
    type Change = fn(&Path) -> PathBuf;
    let cases: [(&str, Change); 2] = [
        ("added", |dir| {
            fs_err::write(dir.join("c.hpp"), "#pragma once\n").expect("write");
            dir.join("c.hpp")
        }),
        ("removed", |dir| {
            fs_err::remove_file(dir.join("a.hpp")).expect("rm");
            // The first path the writer finds out of step is the one after it.
            dir.join("b.hpp")
        }),
    ];
    for (what, change) in cases {
        let example = Example::new();
        let dir = headers(&example);
        let config = example.config();
        let plan = packager::plan(&config, &packager::Silent).expect("plans");
        let named = change(&dir);
        let lock = packager::DestLock::acquire(&config.destination()).expect("lock");
        let error = packager::write_locked(&plan, &config, &packager::Silent, &lock).expect_err(what);
        let text = full_text(&error);
        let says = "was added, removed or modified since the plan";
        assert!(text.contains(&named.display().to_string()) && text.contains(says), "{what}: {text}");
        assert!(dist_snapshot(&example.dist()).is_empty(), "{what}: a package was left in dist");
    }
}
