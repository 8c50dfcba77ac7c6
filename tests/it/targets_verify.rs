//! `verify --dist` across a whole dist tree (SPEC §6 "Shared files between wheels", "Same
//! name, same bytes"): a hand-broken copy of the real kpack-split output, with a member
//! two wheels install and two different files under one name in two family folders,
//! fails and names both problems, and nothing else.

use std::io::{Read, Write};
use std::path::Path;

use release_gate::{verify_dist, Check};

use super::{build, file_name, wheel_of, VERSION};

const SHARED_MEMBER: &str = "_rocm_sdk_libraries/__init__.py";

/// Rewrites `wheel` in place with one more member, listed in RECORD with its hash and size.
fn add_member(wheel: &Path, name: &str, bytes: &[u8]) {
    crate::support::rewrite_wheel(wheel, |members| {
        // Payload before `.dist-info`, as wheels are laid out.
        let at = members.iter().position(|(path, _, _)| path.contains(".dist-info/")).unwrap_or(members.len());
        members.insert(at, (name.to_owned(), bytes.to_vec(), 0o644));
    });
}

/// The same tar under a gzip stream of another level: same content, other bytes.
fn recompressed(sdist: &Path) -> Vec<u8> {
    let original = fs_err::read(sdist).expect("read sdist");
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(original.as_slice()).read_to_end(&mut tar).expect("gunzip sdist");
    for level in [1, 9] {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        encoder.write_all(&tar).expect("gzip");
        let bytes = encoder.finish().expect("gzip");
        if bytes != original {
            return bytes;
        }
    }
    panic!("every gzip level gave the packager's bytes");
}

#[test]
fn broken_copy_fails_naming_both_problems() {
    let real = &build(true).dist;
    let temp = tempfile::tempdir().expect("temp dir");
    let broken = temp.path().join("dist");
    fs_err::create_dir(&broken).expect("create dist copy");
    for entry in fs_err::read_dir(real).expect("read dist") {
        let path = entry.expect("entry").path();
        fs_err::copy(&path, broken.join(file_name(&path))).expect("copy dist file");
    }

    // What the reference's device wheels do: ship the libraries wheel's `__init__.py`.
    let libraries = wheel_of(&broken, "rocm_sdk_libraries");
    let init = super::wheel_members(&libraries)[SHARED_MEMBER].clone();
    let device = wheel_of(&broken, "rocm_sdk_device_gfx1030");
    add_member(&device, SHARED_MEMBER, &init);

    // What the reference's multi-family build does: one sdist name per family folder.
    let sdist_name = format!("rocm-{VERSION}.tar.gz");
    let other_bytes = recompressed(&broken.join(&sdist_name));
    for family in ["gfx1030", "gfx90a"] {
        fs_err::create_dir(broken.join(family)).expect("family folder");
    }
    fs_err::rename(broken.join(&sdist_name), broken.join("gfx90a").join(&sdist_name)).expect("move sdist");
    fs_err::write(broken.join("gfx1030").join(&sdist_name), other_bytes).expect("write other sdist");

    let report = verify_dist(&broken).expect("verify reads the broken dist");
    let mut violations: Vec<(String, Option<String>, Check)> = report
        .packages
        .iter()
        .flat_map(|package| &package.violations)
        .map(|finding| (finding.file.clone(), finding.path.clone(), finding.check))
        .collect();
    violations.sort();
    // The added member is in RECORD, but not in the wheel's bill of materials.
    let sbom = format!("rocm_sdk_device_gfx1030-{VERSION}.dist-info/sboms/rocm-packager.cdx.json");
    let mut expected = vec![
        (file_name(&device), Some(sbom), Check::Sbom),
        (file_name(&device), Some(SHARED_MEMBER.to_owned()), Check::DuplicatePath),
        (file_name(&libraries), Some(SHARED_MEMBER.to_owned()), Check::DuplicatePath),
        (sdist_name.clone(), None, Check::DuplicateFileName),
    ];
    expected.sort();
    assert_eq!(violations, expected, "{:#?}", report.packages);

    let messages: Vec<&str> = report
        .packages
        .iter()
        .flat_map(|package| &package.violations)
        .map(|finding| finding.message.as_str())
        .collect();
    let duplicate_name = messages.iter().find(|message| message.contains("two different files")).expect("named");
    for location in [format!("gfx1030/{sdist_name}"), format!("gfx90a/{sdist_name}")] {
        assert!(duplicate_name.contains(&location), "{duplicate_name} does not name {location}");
    }
    assert!(
        messages.iter().any(|message| message.contains(&file_name(&libraries))),
        "the device wheel's violation names the libraries wheel: {messages:?}"
    );

    // The CLI fails on it too, printing both problems (and the device wheel's bill of
    // materials, which does not list the member added).
    let output = std::process::Command::new(super::cli::xtask())
        .args(["verify", "--dist"])
        .arg(&broken)
        .env("NO_COLOR", "1")
        .output()
        .expect("run xtask verify");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "xtask verify --dist passed a broken dist:\n{stdout}");
    let expected_lines = [
        "[duplicate-path] _rocm_sdk_libraries/__init__.py",
        "[duplicate-file-name]",
        "[sbom] rocm_sdk_device_gfx1030-7.12.0.dev0.dist-info/sboms/rocm-packager.cdx.json: does not list \
         _rocm_sdk_libraries/__init__.py",
        "4 violations",
    ];
    for expected in expected_lines {
        assert!(stdout.contains(expected), "`{expected}` not in:\n{stdout}");
    }
}
