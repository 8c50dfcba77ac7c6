//! `--no-build-packages`: the run lays each package out as the directory its archive
//! would unpack to, so the trees of both example modes are compared with the archives of
//! the normal run, entry by entry: every wheel as `{name}-{version}/` with the devel
//! tarball expanded in place of `_devel.tar`, and the `rocm` sdist as `rocm-{version}/`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{add_with_parents, sdist_nodes, tar_nodes, wheel_entries, Node};
use crate::support;
use crate::targets::{build, file_name, wheels, VERSION};

/// The packager's lock file, which a run removes when it ends.
const LOCK: &str = ".rocm-packager.lock";

#[test]
fn trees_hold_exactly_what_the_archives_hold() {
    for kpack_split in [false, true] {
        let build = build(kpack_split);
        let temp = tempfile::tempdir().expect("temp dir");
        let trees = temp.path().join("trees");
        let mut config = support::package_config(&build.artifacts, &trees);
        config.output = packager::config::OutputMode::Trees;
        packager::package(&config, &packager::Silent).expect("lay out the trees");

        let wheels = wheels(&build.dist);
        let mut expected: Vec<String> = wheels.iter().map(|wheel| stem_of(wheel)).collect();
        expected.push(format!("rocm-{VERSION}"));
        expected.sort();
        let mut listed: Vec<String> = fs_err::read_dir(&trees)
            .expect("read trees")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        listed.sort();
        assert_eq!(listed, expected, "kpack_split={kpack_split}: one tree per archive of the normal run");
        assert!(!trees.join(LOCK).exists(), "the run left its lock file behind");

        let mut n_devel_trees = 0;
        for wheel in &wheels {
            let (mut nodes, devel_member) = wheel_tree(wheel);
            let root = trees.join(stem_of(wheel));
            if let Some(devel_member) = &devel_member {
                n_devel_trees += 1;
                expect_tree_sbom(&mut nodes, &root, devel_member);
            }
            assert_same_tree(&root, &nodes, &file_name(wheel));
        }
        // One devel wheel per legacy family, one in kpack-split mode.
        assert_eq!(n_devel_trees, if kpack_split { 1 } else { 2 }, "kpack_split={kpack_split}");

        let sdist = sdist_nodes(&build.dist.join(format!("rocm-{VERSION}.tar.gz")));
        let top = format!("rocm-{VERSION}/");
        let sdist: BTreeMap<String, Node> =
            sdist.into_iter().filter_map(|(name, node)| Some((name.strip_prefix(&top)?.to_owned(), node))).collect();
        for name in ["PKG-INFO", "pyproject.toml", "rocm_sdk/_dist_info.py", "rocm_sdk/_dist_info_data.py"] {
            assert!(matches!(sdist.get(name), Some(Node::File { .. })), "the sdist has no {name}");
        }
        assert_same_tree(&trees.join(format!("rocm-{VERSION}")), &sdist, &format!("rocm-{VERSION}.tar.gz"));
    }
}

/// `{name}-{version}` of a wheel file name: the directory its tree is laid out in.
fn stem_of(wheel: &Path) -> String {
    let name = file_name(wheel);
    name.split_once("-py3-none-").map(|(stem, _)| stem.to_owned()).expect("a py3-none wheel name")
}

/// What the tree of `wheel` must hold, and its devel tarball member if it has one: its
/// members as files, that tarball's entries in place of the tarball, and its RECORD
/// without the tarball's line (the tree's RECORD hashes the files the tree holds).
fn wheel_tree(wheel: &Path) -> (BTreeMap<String, Node>, Option<String>) {
    let name = file_name(wheel);
    let members = wheel_entries(wheel);
    let mut nodes = BTreeMap::new();
    let mut devel_member = None;
    for (member, (bytes, mode)) in &members {
        // SPEC §2: no symlink ever enters a wheel.
        assert_ne!(mode & 0o170_000, 0o120_000, "{member} in {name} is a symlink");
        if member.ends_with("/_devel.tar") || member.ends_with("/_devel.tar.xz") {
            assert!(member.ends_with(".tar"), "the default devel tarball is uncompressed: {member}");
            assert!(devel_member.is_none(), "{name} carries two devel tarballs");
            devel_member = Some(member.clone());
            for (entry, node) in tar_nodes(bytes.as_slice(), member) {
                add_with_parents(&mut nodes, entry, node);
            }
        } else if !member.ends_with(".dist-info/RECORD") {
            let node = Node::File { bytes: bytes.clone(), executable: mode & 0o111 != 0 };
            add_with_parents(&mut nodes, member.clone(), node);
        }
    }
    let (record_name, (record, _)) =
        members.iter().find(|(member, _)| member.ends_with(".dist-info/RECORD")).expect("the wheel has a RECORD");
    let record = String::from_utf8(record.clone()).expect("UTF-8 RECORD");
    let kept: String = record
        .lines()
        .filter(|line| devel_member.as_ref().is_none_or(|devel| !line.starts_with(&format!("{devel},"))))
        .map(|line| format!("{line}\n"))
        .collect();
    if devel_member.is_some() {
        assert_eq!(kept.lines().count() + 1, record.lines().count(), "{name}: RECORD lists the devel tarball once");
    }
    add_with_parents(&mut nodes, record_name.clone(), Node::File { bytes: kept.into_bytes(), executable: false });
    (nodes, devel_member)
}

/// A devel tree's bill of materials lists what its RECORD does, so not the tarball its
/// entries replace (SPEC §10): the tree's document must be the wheel's without that file
/// (and with the serial number of its own content). It is then what `nodes` expects, with
/// its line in RECORD.
fn expect_tree_sbom(nodes: &mut BTreeMap<String, Node>, root: &Path, devel_member: &str) {
    let (sbom_name, wheel_bytes) = nodes
        .iter()
        .find_map(|(name, node)| match node {
            Node::File { bytes, .. } if name.ends_with(crate::sbom::SBOM_LEAF) => Some((name.clone(), bytes.clone())),
            _ => None,
        })
        .expect("the wheel has a bill of materials");
    let tree_bytes = fs_err::read(root.join(&sbom_name)).expect("the tree has it too");
    let without_serial = |bytes: &[u8]| {
        let mut document: serde_json::Value = serde_json::from_slice(bytes).expect("JSON");
        document.as_object_mut().expect("an object").remove("serialNumber").expect("a serial number");
        document
    };
    let mut expected = without_serial(&wheel_bytes);
    let components = expected["components"].as_array_mut().expect("components");
    let before = components.len();
    components.retain(|component| component["name"] != devel_member);
    assert_eq!(components.len() + 1, before, "the wheel's document lists {devel_member} once");
    assert_eq!(without_serial(&tree_bytes), expected, "{}", root.display());

    let record_name = sbom_name.replace(crate::sbom::SBOM_LEAF, "RECORD");
    let Some(Node::File { bytes: record, .. }) = nodes.get_mut(&record_name) else { panic!("no {record_name}") };
    let text = String::from_utf8(std::mem::take(record)).expect("UTF-8 RECORD");
    let line = format!("{sbom_name},{},{}", support::record_hash(&tree_bytes), tree_bytes.len());
    let text: String = text
        .lines()
        .map(|old| if old.starts_with(&format!("{sbom_name},")) { line.as_str() } else { old })
        .map(|line| format!("{line}\n"))
        .collect();
    *record = text.into_bytes();
    nodes.insert(sbom_name, Node::File { bytes: tree_bytes, executable: false });
}

/// Asserts that the directory `root` holds exactly `expected`: the same paths, each the
/// same kind, files with the same bytes and exec bits, symlinks with the same targets.
fn assert_same_tree(root: &Path, expected: &BTreeMap<String, Node>, archive: &str) {
    let found = tree_nodes(root);
    let missing: Vec<&String> = expected.keys().filter(|path| !found.contains_key(*path)).collect();
    let extra: Vec<&String> = found.keys().filter(|path| !expected.contains_key(*path)).collect();
    assert!(missing.is_empty() && extra.is_empty(), "{archive}: tree lacks {missing:?}, has extra {extra:?}");
    for (path, node) in expected {
        let on_disk = &found[path];
        if on_disk != node {
            let describe = |node: &Node| match node {
                Node::File { bytes, executable } => format!("file of {} bytes, executable={executable}", bytes.len()),
                other => format!("{other:?}"),
            };
            panic!("{archive}: {path} is {} in the tree, {} in the archive", describe(on_disk), describe(node));
        }
    }
}

/// Every entry below `root` by '/'-separated relative path; symlinks are read, not followed.
fn tree_nodes(root: &Path) -> BTreeMap<String, Node> {
    let mut nodes = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs_err::read_dir(&dir).expect("read tree dir") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(root).expect("below root").to_string_lossy().into_owned();
            let metadata = fs_err::symlink_metadata(&path).expect("stat");
            let node = if metadata.is_symlink() {
                Node::Symlink { target: fs_err::read_link(&path).expect("readlink").to_string_lossy().into_owned() }
            } else if metadata.is_dir() {
                stack.push(path);
                Node::Dir
            } else {
                let executable = metadata.permissions().mode() & 0o111 != 0;
                Node::File { bytes: fs_err::read(&path).expect("read tree file"), executable }
            };
            nodes.insert(rel, node);
        }
    }
    nodes
}
