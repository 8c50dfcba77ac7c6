//! `verify --dist` on broken sets: one path in two wheels, two files under one name, a
//! missing device wheel, pins to another version, mixed versions; identical copies pass.

use std::path::{Path, PathBuf};

use super::*;

#[test]
fn two_wheels_installing_one_path() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let device = position(&wheels, DEVICE_WHEEL);
    wheels[device] = wheel(
        "rocm_sdk_device_gfx90a",
        vec![
            entry("_rocm_sdk_libraries/__init__.py", "", 0o644),
            entry("_rocm_sdk_libraries/.devel_links/gfx90a.json", "{}", 0o644),
        ],
        &["rocm-sdk-libraries==1.0"],
    );
    let report = verify(&fixture, &wheels);
    let path = Some("_rocm_sdk_libraries/__init__.py".to_owned());
    assert_eq!(
        violations(&report),
        [
            (DEVICE_WHEEL.to_owned(), path.clone(), Check::DuplicatePath),
            (LIBRARIES_WHEEL.to_owned(), path, Check::DuplicatePath)
        ]
    );
}

#[test]
fn two_different_files_under_one_name() {
    let fixture = fixture();
    write_dist(&fixture.dist, &default_wheels(&fixture));
    write_sdist(&fixture.dist.join("gfx110X-all/rocm-1.0.tar.gz"), "\"gfx90a\"");
    write_sdist(&fixture.dist.join("gfx94X-dcgpu/rocm-1.0.tar.gz"), "\"gfx90a\", \"gfx90a:xnack+\"");
    let report = verify_dist(&fixture.dist).expect("dist is readable");
    assert_eq!(violations(&report), [("rocm-1.0.tar.gz".to_owned(), None, Check::DuplicateFileName)]);
}

#[test]
fn missing_device_wheel_breaks_completeness() {
    let fixture = fixture();
    let wheels: Vec<Wheel> = default_wheels(&fixture).into_iter().filter(|wheel| wheel.file != DEVICE_WHEEL).collect();
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(LIBRARIES_WHEEL.to_owned(), None, Check::Completeness)]);
}

#[test]
fn pin_to_another_version_of_a_set_member() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let device = position(&wheels, DEVICE_WHEEL);
    wheels[device] = wheel(
        "rocm_sdk_device_gfx90a",
        vec![entry("_rocm_sdk_libraries/.devel_links/gfx90a.json", "{}", 0o644)],
        &["rocm-sdk-libraries==0.9"],
    );
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(DEVICE_WHEEL.to_owned(), None, Check::Pin)]);
}

#[test]
fn identical_copies_in_family_folders_are_one_package() {
    let fixture = fixture();
    let wheels = default_wheels(&fixture);
    write_dist(&fixture.dist.join("gfx110X-all"), &wheels);
    write_dist(&fixture.dist.join("gfx94X-dcgpu"), &wheels);
    write_sdist(&fixture.dist.join("rocm-1.0.tar.gz"), "\"gfx90a\"");
    let report = verify_dist(&fixture.dist).expect("dist is readable");
    assert_eq!(violations(&report), []);
    let core = report.packages.iter().find(|package| package.file == CORE_WHEEL).expect("core");
    let expected: Vec<PathBuf> =
        ["gfx110X-all", "gfx94X-dcgpu"].iter().map(|dir| Path::new(dir).join(CORE_WHEEL)).collect();
    assert_eq!(core.locations, expected);
}

#[test]
fn one_wheel_of_another_version() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let device = position(&wheels, DEVICE_WHEEL);
    let files = vec![entry("_rocm_sdk_libraries/.devel_links/gfx90a.json", "{}", 0o644)];
    wheels[device] = wheel_versioned("rocm_sdk_device_gfx90a", "1.1", TAG, files, &["rocm-sdk-libraries==1.0"]);
    let report = verify(&fixture, &wheels);
    let stray = "rocm_sdk_device_gfx90a-1.1-py3-none-linux_x86_64.whl";
    // The stray wheel does not count as the set's device wheel, so the set is also incomplete.
    assert_violations(
        &report,
        &[
            (stray, None, Check::Version, "version 1.1 differs from the rest of the set (1.0)"),
            (LIBRARIES_WHEEL, None, Check::Completeness, "there is no rocm_sdk_device_gfx90a-1.0 wheel"),
        ],
    );
}

/// A wheel with a pure package installs its files under `_` + METADATA's `Name:` (the
/// family spelled as the build spells it, SPEC §2 "Names"): a directory spelled otherwise
/// is one `get_py_package_name()` never finds, nor code that hard-codes the name.
#[test]
fn platform_directory_spelled_otherwise_than_the_name() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    rewrite_member(&mut wheels, CORE_WHEEL, "rocm_sdk_core/_dist_info_data.py", "PY_PACKAGE_SUFFIX_NONCE = ''\n");
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [], "the core wheel's own directory is `_rocm_sdk_core`");
    rewrite_member(&mut wheels, CORE_WHEEL, "_ROCM_sdk_core/__init__.py", "");
    let report = verify(&fixture, &wheels);
    assert_violations(
        &report,
        &[(
            CORE_WHEEL,
            Some("_ROCM_sdk_core"),
            Check::MemberPath,
            "platform directory `_ROCM_sdk_core` is not `_rocm_sdk_core`, where the runtime looks for the package's files",
        )],
    );
}
