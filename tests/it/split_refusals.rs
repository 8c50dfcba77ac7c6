//! What a split refuses or leaves alone, in one clear line each, with nothing written: a
//! wheel with no device code, a Windows wheel, a wheel split already, and a fat binary
//! whose device code is damaged (a `.hipFatBinSegment` wrapper with an unknown magic).

use std::path::Path;

use super::{fat_wheel, split_into};
use crate::support;
use packager::split::SplitError;

/// Nothing at all: `dest` and its `dist/` were not there before, and are not now.
fn assert_nothing_written(dest: &Path) {
    assert!(!dest.join("dist").exists(), "{} was left behind", dest.join("dist").display());
    if !dest.exists() {
        return;
    }
    let scratch: Vec<String> = fs_err::read_dir(dest)
        .expect("list dest")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".rocm-packager-split"))
        .collect();
    assert!(scratch.is_empty(), "{scratch:?}");
}

#[test]
fn a_wheel_without_device_code_is_left_as_it_is() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut members = Vec::new();
    let plain = copy_of_fixture(dir.path());
    support::rewrite_wheel(&plain, |all| {
        all.retain(|(name, _, _)| !name.contains("/lib/") && !name.contains("/bin/"));
        members = all.iter().map(|(name, _, _)| name.clone()).collect();
    });
    let dest = dir.path().join("out");
    let report = split_into(std::slice::from_ref(&plain), &dest, &[]).expect("a wheel without device code is no error");
    assert_eq!(report.wheels[0].left_as_is.as_deref(), Some("it carries no device code"), "{members:?}");
    assert!(report.wheels[0].host.is_none());
    assert_nothing_written(&dest);
}

#[test]
fn a_windows_wheel_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let windows = dir.path().join("hipext-1.0-py3-none-win_amd64.whl");
    fs_err::copy(&fat_wheel().wheel, &windows).expect("copy");
    let error = split_into(&[windows], &dir.path().join("out"), &[]).expect_err("refused");
    assert!(matches!(error, SplitError::Windows { .. }), "{error:?}");
    assert!(error.to_string().contains("hipext-1.0-py3-none-win_amd64.whl: a Windows wheel"), "{error}");
    assert_nothing_written(&dir.path().join("out"));
}

#[test]
fn a_split_wheel_is_not_split_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    split_into(&[fat_wheel().wheel.clone()], &dir.path().join("first"), &[]).expect("split");
    let host = dir.path().join("first/dist").join(fat_wheel().wheel.file_name().expect("a name"));
    let error = split_into(&[host], &dir.path().join("second"), &[]).expect_err("refused");
    assert!(matches!(error, SplitError::AlreadySplit { .. }), "{error:?}");
    assert!(error.to_string().contains("already split: hipext/"), "{error}");
    assert_nothing_written(&dir.path().join("second"));
}

#[test]
fn the_input_is_never_replaced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dist = dir.path().join("dist");
    fs_err::create_dir_all(&dist).expect("mkdir");
    let input = dist.join(fat_wheel().wheel.file_name().expect("a name"));
    fs_err::copy(&fat_wheel().wheel, &input).expect("copy");
    let error = split_into(std::slice::from_ref(&input), dir.path(), &[]).expect_err("refused");
    assert!(matches!(error, SplitError::ReplacesInput { .. }), "{error:?}");
    assert_eq!(fs_err::read(&input).expect("read"), fs_err::read(&fat_wheel().wheel).expect("read"));
}

#[test]
fn a_wrapper_with_an_unknown_magic_is_refused_naming_wheel_and_member() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broken = copy_of_fixture(dir.path());
    support::rewrite_wheel(&broken, |members| {
        for (name, bytes, _) in members.iter_mut() {
            if name == "hipext/lib/libhipext.so" {
                let at = find(bytes, &0x48495046u32.to_le_bytes()).expect("a HIPF wrapper");
                bytes[at..at + 4].copy_from_slice(b"XXXX");
            }
        }
    });
    let dest = dir.path().join("out");
    let error = split_into(&[broken], &dest, &[]).expect_err("refused");
    let text = error.to_string();
    assert!(text.contains("hipext-1.0-") && text.contains("hipext/lib/libhipext.so"), "{text}");
    assert!(!text.contains(".rocm-packager-"), "no scratch path: {text}");
    assert_nothing_written(&dest);
}

/// A copy of the fixture's wheel under `dir/in`, to be rewritten.
fn copy_of_fixture(dir: &Path) -> std::path::PathBuf {
    let copy = dir.join("in").join(fat_wheel().wheel.file_name().expect("a name"));
    fs_err::create_dir_all(dir.join("in")).expect("mkdir");
    fs_err::copy(&fat_wheel().wheel, &copy).expect("copy");
    copy
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}
