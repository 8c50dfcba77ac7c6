//! `verify --dist` across a whole dist tree (SPEC §6 "Shared files between wheels", "Same
//! name, same bytes"): a hand-broken copy of the real kpack-split output, with a member
//! two wheels install and two different files under one name in two family folders,
//! fails and names both problems, and nothing else.

use std::io::{Read, Write};
use std::path::Path;

use release_gate::{verify_dist, Check};

use super::{build, file_name, wheel_of, VERSION};

const SHARED_MEMBER: &str = "_rocm_sdk_libraries/__init__.py";

/// RECORD's hash form: urlsafe base64 of the sha256 digest, without padding.
fn record_hash(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let digest = <sha2::Sha256 as sha2::Digest>::digest(bytes);
    let mut out = String::from("sha256=");
    for chunk in digest.chunks(3) {
        let value = chunk.iter().enumerate().fold(0u32, |acc, (i, &byte)| acc | (u32::from(byte) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(value >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

/// Rewrites `wheel` in place with one more member, listed in RECORD with its hash and size.
fn add_member(wheel: &Path, name: &str, bytes: &[u8]) {
    let mut archive = zip::ZipArchive::new(fs_err::File::open(wheel).expect("open wheel")).expect("zip");
    let mut members: Vec<(String, Vec<u8>, u32)> = Vec::new();
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).expect("member");
        let mut data = Vec::new();
        member.read_to_end(&mut data).expect("inflate");
        members.push((
            member.name().expect("UTF-8 member name").into_owned(),
            data,
            member.unix_mode().unwrap_or(0o644) & 0o777,
        ));
    }
    let record = members.iter_mut().find(|(path, _, _)| path.ends_with(".dist-info/RECORD")).expect("RECORD");
    let mut text = String::from_utf8(std::mem::take(&mut record.1)).expect("RECORD is UTF-8");
    text.insert_str(0, &format!("{name},{},{}\n", record_hash(bytes), bytes.len()));
    record.1 = text.into_bytes();
    // Payload before `.dist-info`, as wheels are laid out.
    let at = members.iter().position(|(path, _, _)| path.contains(".dist-info/")).unwrap_or(members.len());
    members.insert(at, (name.to_owned(), bytes.to_vec(), 0o644));

    let mut writer = zip::ZipWriter::new(fs_err::File::create(wheel).expect("rewrite wheel"));
    for (path, data, mode) in members {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(mode);
        writer.start_file(path, options).expect("start member");
        writer.write_all(&data).expect("write member");
    }
    writer.finish().expect("finish wheel");
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
    let mut expected = vec![
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

    // The CLI fails on it too, printing both problems.
    let output = std::process::Command::new(super::cli::xtask())
        .args(["verify", "--dist"])
        .arg(&broken)
        .env("NO_COLOR", "1")
        .output()
        .expect("run xtask verify");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "xtask verify --dist passed a broken dist:\n{stdout}");
    for expected in ["[duplicate-path] _rocm_sdk_libraries/__init__.py", "[duplicate-file-name]", "3 violations"] {
        assert!(stdout.contains(expected), "`{expected}` not in:\n{stdout}");
    }
}
