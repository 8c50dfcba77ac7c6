//! The devel tarball inside a wheel (plain and xz): sorted entries, exec bits, symlinks
//! kept as symlinks, long names; and `write_tree` expanding it as real files and links.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use packager::config::{BuildTime, DevelTarballCompression};
use packager::progress::Silent;
use packager::write::{
    write_tarball, write_tree, write_wheel, Member, MemberData, TarEntry, TarEntryKind, TarEntrySource, TarTotals,
    TarballSpec, WheelSpec, WriteError,
};

use super::{bytes, file, file_name, metadata, options, python};
use crate::support::{run, tools_venv};

fn long_dir() -> String {
    format!("_devel/include/{}", "very_long_directory_name/".repeat(5).trim_end_matches('/'))
}

fn devel_spec(fixtures: &Path, compression: DevelTarballCompression) -> TarballSpec {
    let tool = fixtures.join("tool.sh");
    fs_err::write(&tool, "#!/bin/sh\necho devel tool\n").expect("write");
    let header = fixtures.join("api.h");
    fs_err::write(&header, "int api(void);\n".repeat(100_000)).expect("write");
    let entry = |name: &str, kind: TarEntryKind| TarEntry { name: name.into(), kind };
    let file_kind = |path: &Path, executable: bool| TarEntryKind::File {
        data: packager::member::file(std::sync::Arc::from(path), fs_err::metadata(path).expect("stat").len(), None),
        executable,
    };
    TarballSpec {
        entries: vec![
            entry("_devel/lib/libfoo.so", TarEntryKind::Symlink { target: "libfoo.so.1".into() }),
            entry("_devel/bin/tool", file_kind(&tool, true)),
            entry("_devel", TarEntryKind::Dir),
            entry("_devel/bin", TarEntryKind::Dir),
            entry("_devel/lib", TarEntryKind::Dir),
            entry("_devel/include", TarEntryKind::Dir),
            entry(&long_dir(), TarEntryKind::Dir),
            entry(&format!("{}/api.h", long_dir()), file_kind(&header, false)),
            entry(
                "_devel/lib/libfoo.so.1",
                TarEntryKind::Symlink { target: format!("../../_rocm_sdk_core_with_a_long_name/{}", "x/".repeat(60)) },
            ),
            entry(
                "_devel/lib/generated.txt",
                TarEntryKind::File { data: MemberData::Bytes(Arc::new(b"generated\n".to_vec())), executable: false },
            ),
        ],
        streamed: None,
        compression,
        build_time: BuildTime::DEFAULT,
    }
}

fn devel_wheel(fixtures: &Path, compression: DevelTarballCompression, tar_name: &str) -> WheelSpec {
    let devel = devel_spec(fixtures, compression);
    let readme = fixtures.join("README");
    fs_err::write(&readme, "devel\n").expect("write");
    WheelSpec {
        file_name: file_name("demo-devel"),
        metadata: metadata("demo-devel"),
        generator: packager::GENERATOR,
        root: packager::write::WheelRoot::Platlib,
        variant_json: None,
        entry_points: Vec::new(),
        members: vec![
            bytes("demo_devel/__init__.py", ""),
            file("demo_devel/README", &readme, false),
            Member {
                name: format!("demo_devel/{tar_name}"),
                data: MemberData::Tarball(Arc::new(devel)),
                executable: false,
            },
        ],
        inventory: None,
    }
}

/// `tar -tv` of the tarball member of `wheel`, extracted with Python's zipfile.
fn list_tarball(wheel: &Path, member: &str, dir: &Path) -> String {
    let out = dir.join(member.rsplit('/').next().expect("name"));
    let script = "import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))";
    run(Command::new(python(tools_venv())).args(["-c", script]).arg(wheel).arg(member).arg(&out));
    run(Command::new("tar").arg("-tvf").arg(&out).env("TZ", "UTC"))
}

fn check_listing(listing: &str) {
    let lines: Vec<&str> = listing.lines().collect();
    let names: Vec<&str> = lines.iter().map(|l| l.split_whitespace().nth(5).expect("name column")).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "{listing}");
    let line =
        |suffix: &str| *lines.iter().find(|l| l.contains(suffix)).unwrap_or_else(|| panic!("{suffix} in {listing}"));
    assert!(line("_devel/bin/tool").starts_with("-rwxr-xr-x 0/0"), "{listing}");
    assert!(line("/api.h").starts_with("-rw-r--r-- 0/0"), "{listing}");
    assert!(line(&format!("{}/api.h", long_dir())).contains("2020-01-01 00:00"), "{listing}");
    assert!(line("_devel/lib/libfoo.so ->").starts_with("lrwxrwxrwx 0/0"), "{listing}");
    assert!(line("_devel/lib/libfoo.so ->").ends_with("-> libfoo.so.1"), "{listing}");
    assert!(line("_devel/lib/libfoo.so.1 ->").ends_with(&"x/".repeat(60)), "{listing}");
    assert!(lines.iter().any(|l| l.starts_with("drwxr-xr-x 0/0") && l.ends_with(" _devel/bin")), "{listing}");
}

#[test]
fn devel_tarball_keeps_modes_symlinks_and_long_names() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (compression, tar_name) in
        [(DevelTarballCompression::None, "_devel.tar"), (DevelTarballCompression::Xz { preset: 1 }, "_devel.tar.xz")]
    {
        let spec = devel_wheel(tmp.path(), compression, tar_name);
        let written = write_wheel(&tmp.path().join("dist-a"), &spec, &options(), &Silent).expect("write wheel");
        let again = write_wheel(&tmp.path().join("dist-b"), &spec, &options(), &Silent).expect("write wheel again");
        assert_eq!(written.sha256, again.sha256, "{tar_name}: two builds differ");
        assert_eq!(fs_err::read(&written.path).expect("read"), fs_err::read(&again.path).expect("read"));
        run(Command::new("unzip").arg("-t").arg(&written.path));
        run(Command::new(tools_venv().join("bin/check-wheel-contents")).arg(&written.path));
        check_listing(&list_tarball(&written.path, &format!("demo_devel/{tar_name}"), tmp.path()));
        if tar_name.ends_with(".xz") {
            let listing = run(Command::new("zipinfo").arg(&written.path));
            assert!(listing.lines().any(|l| l.contains(" stor ") && l.ends_with(tar_name)), "{listing}");
        }
    }
}

#[test]
fn write_tree_expands_the_devel_tarball_as_real_files_and_links() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = devel_wheel(tmp.path(), DevelTarballCompression::Xz { preset: 0 }, "_devel.tar.xz");
    let dest = tmp.path().join("trees");
    let root = write_tree(&dest, &spec).expect("write tree");
    assert_eq!(root, dest.join("demo_devel-1.2.0.dev0"));
    // Twice: the second run replaces the first.
    assert_eq!(write_tree(&dest, &spec).expect("write tree again"), root);
    assert!(!root.join("demo_devel/_devel.tar.xz").exists());
    let link = fs_err::symlink_metadata(root.join("_devel/lib/libfoo.so")).expect("link");
    assert!(link.file_type().is_symlink());
    assert_eq!(fs_err::read_link(root.join("_devel/lib/libfoo.so")).expect("readlink"), Path::new("libfoo.so.1"));
    let tool = fs_err::metadata(root.join("_devel/bin/tool")).expect("tool");
    assert_eq!(tool.permissions().mode() & 0o777, 0o755);
    assert_eq!(run(&mut Command::new(root.join("_devel/bin/tool"))), "devel tool\n");
    let readme = fs_err::metadata(root.join("demo_devel/README")).expect("readme");
    assert_eq!(readme.permissions().mode() & 0o777, 0o644);
    assert!(root.join(format!("{}/api.h", long_dir())).is_file());
    let record = fs_err::read_to_string(root.join("demo_devel-1.2.0.dev0.dist-info/RECORD")).expect("record");
    assert!(record.contains("demo_devel/README,sha256="), "{record}");
    assert!(record.ends_with("demo_devel-1.2.0.dev0.dist-info/RECORD,,\n"), "{record}");
    let entries: Vec<_> = fs_err::read_dir(&dest).expect("read").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(entries, ["demo_devel-1.2.0.dev0"], "temp dirs left behind");
}

/// Entries made while writing, as the packager makes a plan's devel tree.
#[derive(Debug)]
struct Streamed(Vec<TarEntry>);

impl TarEntrySource for Streamed {
    fn for_each_entry(&self, each: &mut dyn FnMut(TarEntry) -> Result<(), WriteError>) -> Result<(), WriteError> {
        self.0.iter().cloned().try_for_each(each)
    }

    fn totals(&self) -> TarTotals {
        TarTotals::default().with(&self.0)
    }
}

/// Half the entries listed, half streamed in name order: the tarball has the same bytes as
/// with every entry listed, in both layouts.
#[test]
fn streamed_entries_merge_with_listed_ones_by_name() {
    let temp = tempfile::tempdir().expect("tempdir");
    for compression in [DevelTarballCompression::None, DevelTarballCompression::Xz { preset: 0 }] {
        let listed = devel_spec(temp.path(), compression);
        let mut sorted = listed.entries.clone();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        let (streamed, kept): (Vec<_>, Vec<_>) = sorted.into_iter().enumerate().partition(|(index, _)| index % 2 == 1);
        let split = TarballSpec {
            entries: kept.into_iter().rev().map(|(_, entry)| entry).collect(),
            streamed: Some(Arc::new(Streamed(streamed.into_iter().map(|(_, entry)| entry).collect()))),
            ..listed.clone()
        };
        let tarball = |spec: &TarballSpec| {
            let mut out = Vec::new();
            write_tarball(&mut out, spec, Path::new("_devel.tar")).expect("tarball");
            out
        };
        assert!(tarball(&listed) == tarball(&split), "{compression:?}: streamed entries changed the tarball");
    }
}

/// A name both listed and streamed, or streamed out of order, is refused, naming it.
#[test]
fn streamed_entries_twice_or_out_of_order_are_errors() {
    let dir = |name: &str| TarEntry { name: name.into(), kind: TarEntryKind::Dir };
    let spec = |listed: Vec<TarEntry>, streamed: Vec<TarEntry>| TarballSpec {
        entries: listed,
        streamed: Some(Arc::new(Streamed(streamed))),
        compression: DevelTarballCompression::None,
        build_time: BuildTime::DEFAULT,
    };
    let error = |spec: TarballSpec| {
        write_tarball(&mut Vec::new(), &spec, Path::new("_devel.tar")).expect_err("refused").to_string()
    };
    let twice = error(spec(vec![dir("_devel/a")], vec![dir("_devel"), dir("_devel/a")]));
    assert!(twice.contains("_devel/a twice"), "{twice}");
    let unordered = error(spec(Vec::new(), vec![dir("_devel/b"), dir("_devel/a")]));
    assert!(unordered.contains("out of order: _devel/a after _devel/b"), "{unordered}");
}
