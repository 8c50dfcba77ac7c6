//! The artifact catalog on real directory trees: sorted artifact order, last-wins merging
//! with override reports, links kept as links, and refusals that name the bad path.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;
use packager::catalog::{Catalog, CatalogError, EntryKind, FileStamp, Glob, Selection, BUILD_MANIFEST};
use packager::RelPath;

/// An artifacts dir under construction: `artifact(name, prefix)` makes the artifact with a
/// manifest of those prefixes (creating them, except those starting with `missing/` or holding `..`) and
/// returns the artifact dir.
struct Tree {
    temp: tempfile::TempDir,
}

impl Tree {
    fn new(kpack_split: bool) -> Tree {
        let tree = Tree { temp: tempfile::tempdir().expect("tempdir") };
        let manifest = format!(r#"{{"flags": {{"KPACK_SPLIT_ARTIFACTS": {kpack_split}}}}}"#);
        tree.write(BUILD_MANIFEST, &manifest);
        fs_err::write(tree.root().join("base_lib_generic/artifact_manifest.txt"), "base/aux-overlay/stage\n")
            .expect("write");
        tree
    }

    fn root(&self) -> &Path {
        self.temp.path()
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root().join(rel);
        fs_err::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
        fs_err::write(&path, text).expect("write");
        path
    }

    fn artifact(&self, name: &str, manifest: &str) -> PathBuf {
        let dir = self.root().join(name);
        fs_err::create_dir_all(&dir).expect("mkdir");
        fs_err::write(dir.join("artifact_manifest.txt"), manifest).expect("write manifest");
        for line in manifest
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.trim().starts_with("missing/") && !line.contains(".."))
        {
            fs_err::create_dir_all(dir.join(line.trim())).expect("mkdir basedir");
        }
        dir
    }
}

fn everything() -> Selection<'static> {
    Selection { artifacts: &|_| true, include: vec![], exclude: vec![] }
}

fn rel(text: &str) -> RelPath {
    RelPath::new(text).expect("valid test path")
}

#[test]
fn artifacts_sorted_and_odd_names_ignored() {
    let tree = Tree::new(true);
    tree.artifact("blas_lib_gfx1030", "s\n");
    tree.artifact("blas_lib_gfx90a:xnack+", "s\n");
    tree.artifact("amd-llvm_lib_generic", "s\n");
    tree.artifact("rocm_smi_lib_generic", "s\n");
    tree.write("README.txt", "not an artifact");
    let catalog = Catalog::read(tree.root()).expect("reads");
    let names: Vec<String> = catalog.artifacts.iter().map(|a| a.name.dir_name()).collect();
    assert_eq!(names, ["amd-llvm_lib_generic", "base_lib_generic", "blas_lib_gfx1030", "blas_lib_gfx90a:xnack+"]);
    assert_eq!(catalog.ignored, ["README.txt", "rocm_smi_lib_generic"]);
    assert!(catalog.kpack_split());
    let families: Vec<String> = catalog.target_families().iter().map(ToString::to_string).collect();
    assert_eq!(families, ["gfx1030", "gfx90a:xnack+"]);
    assert_eq!(catalog.dist_amdgpu_targets, None);
}

#[test]
fn dist_info_from_the_base_artifact() {
    let tree = Tree::new(false);
    tree.write(
        "base_lib_generic/base/aux-overlay/stage/share/therock/dist_info.json",
        r#"{"dist_amdgpu_targets": "gfx1100;gfx942"}"#,
    );
    let catalog = Catalog::read(tree.root()).expect("reads");
    assert!(!catalog.kpack_split());
    assert_eq!(catalog.dist_amdgpu_targets.as_deref(), Some("gfx1100;gfx942"));
}

#[test]
fn last_artifact_wins_and_overrides_are_reported() {
    let tree = Tree::new(false);
    let a = tree.artifact("aaa_lib_generic", "one/stage\n");
    let b = tree.artifact("bbb_lib_generic", "\n  two/stage\n\nmissing/stage\n");
    tree.write("aaa_lib_generic/one/stage/lib/libx.so", "from a");
    tree.write("aaa_lib_generic/one/stage/lib/only-a", "a");
    let winner_file = tree.write("bbb_lib_generic/two/stage/lib/libx.so", "from bbb");
    fs_err::set_permissions(&winner_file, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    tree.write("bbb_lib_generic/two/stage/lib/only-b", "b");
    let catalog = Catalog::read(tree.root()).expect("reads");
    assert_eq!(catalog.artifacts[2].basedirs, [b.join("two/stage")]);
    assert_eq!(catalog.artifacts[0].basedirs, [a.join("one/stage")]);

    let namespace = catalog.select(&everything()).expect("selects");
    let paths: Vec<&str> = namespace.all.keys().map(RelPath::as_str).collect();
    assert_eq!(
        paths,
        [
            "lib",
            "lib/libx.so",
            "lib/only-a",
            "lib/only-b",
            "share",
            "share/therock",
            "share/therock/therock_manifest.json"
        ]
    );
    let winner = &namespace.all[&rel("lib/libx.so")];
    assert_eq!(catalog.artifact_dir_name(winner.artifact), "bbb_lib_generic");
    assert_eq!(*winner.source, *b.join("two/stage/lib/libx.so"));
    // The stamp is the winner's own: the writer re-checks that very file.
    let stamp = FileStamp::of(&fs_err::metadata(b.join("two/stage/lib/libx.so")).expect("stat"));
    assert_eq!(winner.kind, EntryKind::File { len: 8, mode: 0o640, stamp });
    // `lib` is a directory in both artifacts: that is a merge, not an override.
    let overrides: Vec<(&str, &str, &str)> =
        namespace.overridden.iter().map(|o| (o.rel.as_str(), o.winner.as_str(), o.loser.as_str())).collect();
    assert_eq!(overrides, [("lib/libx.so", "bbb_lib_generic", "aaa_lib_generic")]);
}

#[test]
fn selection_by_name_and_globs() {
    let tree = Tree::new(false);
    tree.artifact("core-hip_lib_generic", "s\n");
    tree.artifact("core-hip_dev_generic", "s\n");
    tree.write("core-hip_lib_generic/s/bin/rocprof-x", "");
    tree.write("core-hip_lib_generic/s/bin/hipcc", "");
    tree.write("core-hip_lib_generic/s/lib/cmake/hip/hip-config.cmake", "");
    tree.write("core-hip_dev_generic/s/include/hip/hip.h", "");
    let catalog = Catalog::read(tree.root()).expect("reads");
    let selection = Selection {
        artifacts: &|name| name.name == "core-hip" && name.component == "lib",
        include: vec![],
        exclude: vec![Glob::new("**/cmake/**").expect("glob"), Glob::new("bin/rocprof-*").expect("glob")],
    };
    let namespace = catalog.select(&selection).expect("selects");
    let kept: Vec<&str> = namespace.entries().map(|(rel, _)| rel.as_str()).collect();
    assert_eq!(kept, ["bin", "bin/hipcc", "lib"]);
    assert!(namespace.all.contains_key(&rel("lib/cmake/hip/hip-config.cmake")));
    assert!(!namespace.all.contains_key(&rel("include/hip/hip.h")));
}

#[test]
fn symlinks_are_kept_as_links() {
    let tree = Tree::new(false);
    let base = tree.artifact("core-hip_lib_generic", "s\n").join("s");
    tree.write("core-hip_lib_generic/s/lib/libamdhip64.so.7.1.0", "elf");
    fs_err::create_dir_all(base.join("libexec/tool")).expect("mkdir");
    symlink("libamdhip64.so.7.1.0", base.join("lib/libamdhip64.so.7")).expect("symlink");
    symlink("../../../../../etc/passwd", base.join("lib/escape")).expect("symlink");
    symlink("/etc/passwd", base.join("lib/absolute")).expect("symlink");
    symlink("nothing-here", base.join("lib/dangling")).expect("symlink");
    symlink("../libexec/tool", base.join("lib/dirlink")).expect("symlink");
    symlink("loop", base.join("lib/loop")).expect("symlink");
    let catalog = Catalog::read(tree.root()).expect("reads");
    let namespace = catalog.select(&everything()).expect("selects");
    let link = |path: &str| match &namespace.all[&rel(path)].kind {
        EntryKind::Symlink { target } => target.clone(),
        other => panic!("{path} is not a link: {other:?}"),
    };
    assert_eq!(link("lib/libamdhip64.so.7"), "libamdhip64.so.7.1.0");
    assert_eq!(link("lib/escape"), "../../../../../etc/passwd");
    assert_eq!(link("lib/absolute"), "/etc/passwd");
    assert_eq!(link("lib/dangling"), "nothing-here");
    assert_eq!(link("lib/loop"), "loop");
    // A link to a directory is not walked into.
    assert_eq!(link("lib/dirlink"), "../libexec/tool");
    assert!(!namespace.all.keys().any(|key| key.as_str().starts_with("lib/dirlink/")));
}

#[test]
fn modes_are_permission_bits() {
    let tree = Tree::new(false);
    tree.artifact("x_run_generic", "s\n");
    let script = tree.write("x_run_generic/s/bin/tool", "#!/bin/sh\n");
    let read_only = tree.write("x_run_generic/s/share/doc", "ro");
    fs_err::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    fs_err::set_permissions(&read_only, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let namespace = Catalog::read(tree.root()).expect("reads").select(&everything()).expect("selects");
    let stamp = |path: &Path| FileStamp::of(&fs_err::metadata(path).expect("stat"));
    assert_eq!(namespace.all[&rel("bin/tool")].kind, EntryKind::File { len: 10, mode: 0o755, stamp: stamp(&script) });
    let read_only_kind = EntryKind::File { len: 2, mode: 0o444, stamp: stamp(&read_only) };
    assert_eq!(namespace.all[&rel("share/doc")].kind, read_only_kind);
}

#[test]
fn non_utf8_name_is_refused_naming_it() {
    let tree = Tree::new(false);
    let base = tree.artifact("x_lib_generic", "s\n").join("s");
    fs_err::create_dir_all(base.join("lib")).expect("mkdir");
    let name = std::ffi::OsStr::from_bytes(b"lib\xff.so");
    fs_err::write(base.join("lib").join(name), "x").expect("write");
    let catalog = Catalog::read(tree.root()).expect("reads");
    let error = catalog.select(&everything()).expect_err("refused");
    assert!(matches!(&error, CatalogError::NonUtf8Name { path } if path == &base.join("lib").join(name)));
    assert_eq!(error.to_string(), format!("file name is not valid UTF-8: {}/lib/lib\\xff.so", base.display()));
    // Unselected artifacts are never walked, so their names cannot fail a selection.
    let none = Selection { artifacts: &|name| name.name != "x", include: vec![], exclude: vec![] };
    catalog.select(&none).expect("other artifacts still select");
}

#[test]
fn manifest_line_escaping_the_artifact() {
    let tree = Tree::new(false);
    let dir = tree.artifact("x_lib_generic", "s\n../../etc\n");
    let error = Catalog::read(tree.root()).expect_err("refused");
    assert_eq!(
        error.to_string(),
        format!(
            "manifest line 2 points outside the artifact: \"../../etc\" in {}",
            dir.join("artifact_manifest.txt").display()
        )
    );
}

#[test]
fn missing_inputs_are_named() {
    let temp = tempfile::tempdir().expect("tempdir");
    let missing = temp.path().join("nope");
    let error = Catalog::read(&missing).expect_err("missing dir");
    assert_eq!(error.to_string(), format!("artifacts directory not found: {}", missing.display()));

    // A directory with no artifact in it says so, before the build manifest.
    let error = Catalog::read(temp.path()).expect_err("no artifacts");
    assert_eq!(
        error.to_string(),
        format!(
            "not an artifacts directory (no `{{name}}_{{component}}_{{family}}` directories in it): {}",
            temp.path().display()
        )
    );
    assert!(error.hint().is_some());
    let file = temp.path().join("artifacts.txt");
    fs_err::write(&file, "").expect("write");
    let error = Catalog::read(&file).expect_err("a file");
    assert_eq!(error.to_string(), format!("the artifacts directory is a file, not a directory: {}", file.display()));

    fs_err::create_dir_all(temp.path().join("core-hip_lib_generic")).expect("mkdir");
    let error = Catalog::read(temp.path()).expect_err("no build manifest");
    assert_eq!(error.to_string(), format!("build manifest not found: {}", temp.path().join(BUILD_MANIFEST).display()));
    assert!(error.hint().is_some());

    let tree = Tree::new(false);
    fs_err::create_dir_all(tree.root().join("x_lib_generic")).expect("mkdir");
    let error = Catalog::read(tree.root()).expect_err("no artifact manifest");
    let manifest = tree.root().join("x_lib_generic/artifact_manifest.txt");
    assert_eq!(error.to_string(), format!("cannot read {}", manifest.display()));
}

/// SPEC §1: a kpack-split build names each per-ISA artifact after one target id. A family
/// there would become a device wheel that no GPU selects, so it is refused by name.
#[test]
fn kpack_split_artifact_named_after_a_family_is_refused() {
    let tree = Tree::new(true);
    tree.artifact("blas_lib_gfx90a:xnack+", "s\n");
    tree.artifact("blas_lib_gfx110X-all", "s\n");
    let dest = tempfile::tempdir().expect("tempdir");
    let error = packager::package(&crate::support::package_config(tree.root(), dest.path()), &packager::Silent)
        .expect_err("a family in a kpack-split build is refused");
    assert!(
        matches!(&error, packager::Error::Catalog(packager::catalog::CatalogError::NotATargetId { artifact, .. })
            if artifact == "blas_lib_gfx110X-all"),
        "{error:?}"
    );
    assert!(error.to_string().contains("\"blas_lib_gfx110X-all\""), "{error}");
    assert!(error.hint().is_some_and(|hint| hint.contains("gfx90a:xnack+")), "{error:?}");
}
