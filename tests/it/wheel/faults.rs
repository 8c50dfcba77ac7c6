//! A failure midway leaves nothing in the destination: no partial archive and
//! no temp file.

use std::sync::Arc;

use diagnostic::Diagnostic;
use packager::progress::Silent;
use packager::write::{
    write_sdist, write_tree, write_wheel, Member, MemberData, SdistFile, SdistSpec, TarEntry, TarEntryKind,
    TarballSpec, WriteError,
};

use super::{bytes, demo_spec, metadata, options};

fn assert_empty(dir: &std::path::Path) {
    let left: Vec<_> = fs_err::read_dir(dir).expect("read dest").map(|e| e.expect("entry").file_name()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_file_that_changed_size_fails_the_wheel_and_leaves_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dist = tmp.path().join("dist");
    fs_err::create_dir(&dist).expect("mkdir");
    let mut spec = demo_spec(tmp.path());
    let grown = tmp.path().join("grown.bin");
    fs_err::write(&grown, vec![7u8; 3 << 20]).expect("write");
    // The plan saw one byte less than the file now has.
    spec.members.push(Member {
        name: "demo_pkg/zz_grown.bin".into(),
        data: packager::member::file(std::sync::Arc::from(grown.as_path()), (3 << 20) - 1, None),
        executable: false,
    });
    let error = write_wheel(&dist, &spec, &options(), &Silent).expect_err("must fail");
    assert!(matches!(&error, WriteError::Changed { path, .. } if *path == grown), "{error:?}");
    assert!(error.hint().is_some());
    assert_empty(&dist);

    // The same inside the devel tarball, where the file is read on the producer thread.
    let mut spec = demo_spec(tmp.path());
    let devel = TarballSpec {
        entries: vec![TarEntry {
            name: "_devel/big.bin".into(),
            kind: TarEntryKind::File {
                data: packager::member::file(std::sync::Arc::from(grown.as_path()), (3 << 20) + 5, None),
                executable: false,
            },
        }],
        streamed: None,
        compression: packager::config::DevelTarballCompression::Xz { preset: 0 },
        build_time: packager::config::BuildTime::DEFAULT,
    };
    spec.members.push(Member {
        name: "demo_pkg/_devel.tar.xz".into(),
        data: MemberData::Tarball(Arc::new(devel)),
        executable: false,
    });
    let error = write_wheel(&dist, &spec, &options(), &Silent).expect_err("must fail");
    assert!(matches!(&error, WriteError::Changed { path, .. } if *path == grown), "{error:?}");
    assert_empty(&dist);
    let error = write_tree(&dist, &spec).expect_err("must fail");
    assert!(matches!(&error, WriteError::Changed { .. }), "{error:?}");
    assert_empty(&dist);
}

#[test]
fn invalid_names_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = demo_spec(tmp.path());
    spec.members.push(bytes("../escape.py", "x"));
    let error = write_wheel(tmp.path(), &spec, &options(), &Silent).expect_err("must fail");
    assert!(error.to_string().contains("../escape.py"), "{error}");

    let mut spec = demo_spec(tmp.path());
    spec.members.push(bytes("demo_pkg/__init__.py", "duplicate"));
    assert!(write_wheel(tmp.path(), &spec, &options(), &Silent).is_err());

    let mut bad = metadata("rocm-demo");
    bad.summary = "line\nRequires-Dist: evil".into();
    let sdist =
        SdistSpec { metadata: bad, files: vec![SdistFile { name: "a".into(), bytes: vec![], executable: false }] };
    let dist = tmp.path().join("dist");
    assert!(write_sdist(&dist, &sdist, &options()).is_err());
    assert!(!dist.exists() || fs_err::read_dir(&dist).expect("read").next().is_none());
}

/// A wheel too big for what is left of the disk: `size` bytes that do not compress.
fn incompressible_spec(dir: &std::path::Path) -> packager::write::WheelSpec {
    let noise = dir.join("noise.bin");
    fs_err::write(&noise, packager_tests::fixtures::noise(4 << 20)).expect("write noise");
    let mut spec = demo_spec(dir);
    spec.members.push(super::file("demo_pkg/noise.bin", &noise, false));
    spec
}

#[test]
fn a_write_error_midway_leaves_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A file size limit stands in for a full disk, in a process of its own.
    let out = crate::support::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_fault-child")).arg("wheel-past-size-limit").arg(tmp.path()),
    );
    assert!(out.contains("CHILD-OK"), "{out}");

    // As root, a real full disk: a 1 MiB tmpfs.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mount_point = tmp.path().join("small");
        fs_err::create_dir(&mount_point).expect("mkdir");
        crate::support::run(
            std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"]).arg(&mount_point),
        );
        let spec = incompressible_spec(tmp.path());
        let result = write_wheel(&mount_point, &spec, &options(), &Silent);
        let left: Vec<_> =
            fs_err::read_dir(&mount_point).expect("read").map(|e| e.expect("entry").file_name()).collect();
        crate::support::run(std::process::Command::new("umount").arg(&mount_point));
        let error = result.expect_err("a full disk must fail the write");
        assert_eq!(error.hint().map(|h| h.contains("destination is full")), Some(true), "{error:?}");
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}
