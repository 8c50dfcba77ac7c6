//! `verify --dist` on broken archives: an unreadable zip, unsafe member paths, symlinks
//! and Windows names, METADATA / WHEEL that disagree with the file name, a wrong RECORD.

use super::*;

#[test]
fn wrong_hash_is_a_record_violation() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let path = "_rocm_sdk_core/__init__.py";
    let index = member(&mut wheels, CORE_WHEEL, path);
    let init = wheels[index].entries.iter_mut().find(|entry| entry.name == path).expect("member");
    init.bytes = b"x".to_vec();
    let report = verify(&fixture, &wheels);
    // One byte instead of none: the hash and the size both disagree with RECORD, and the
    // bill of materials gives the file the hash it had.
    let sbom = "rocm_sdk_core-1.0.dist-info/sboms/rocm-packager.cdx.json";
    assert_eq!(
        violations(&report),
        [
            (CORE_WHEEL.to_owned(), Some(path.to_owned()), Check::Record),
            (CORE_WHEEL.to_owned(), Some(path.to_owned()), Check::Record),
            (CORE_WHEEL.to_owned(), Some(sbom.to_owned()), Check::Sbom),
        ]
    );
    assert!(report.violations().any(|finding| finding.message.contains("RECORD hash sha256=")));
    assert!(report.violations().any(|finding| finding.message.starts_with(&format!("gives {path} the SHA-256"))));
}

#[test]
fn colon_in_member_name_is_a_warning() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let device = position(&wheels, DEVICE_WHEEL);
    let kpack = "_rocm_sdk_libraries/.kpack/blas_lib_gfx90a:xnack+.kpack";
    wheels[device] = wheel(
        "rocm_sdk_device_gfx90a",
        vec![entry("_rocm_sdk_libraries/.devel_links/gfx90a.json", "{}", 0o644), entry(kpack, "k", 0o644)],
        &["rocm-sdk-libraries==1.0"],
    );
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), []);
    let warnings: Vec<_> = report.warnings().map(|w| (w.file.clone(), w.path.clone(), w.check)).collect();
    assert_eq!(warnings, [(DEVICE_WHEEL.to_owned(), Some(kpack.to_owned()), Check::WindowsName)]);
}

#[test]
fn symlink_in_a_wheel() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let core = position(&wheels, CORE_WHEEL);
    // Added after RECORD was written, so RECORD does not mention it either way.
    wheels[core].entries.insert(0, entry("_rocm_sdk_core/lib/libcore.so.1", "libcore.so", 0o120_777));
    let report = verify(&fixture, &wheels);
    assert_eq!(
        violations(&report),
        [(CORE_WHEEL.to_owned(), Some("_rocm_sdk_core/lib/libcore.so.1".to_owned()), Check::Symlink)]
    );
}

#[test]
fn absolute_member_path() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    rewrite_member(&mut wheels, CORE_WHEEL, "/etc/rocm/evil.conf", "x");
    let report = verify(&fixture, &wheels);
    assert_violations(
        &report,
        &[(CORE_WHEEL, Some("/etc/rocm/evil.conf"), Check::MemberPath, "member path is an absolute path")],
    );
}

#[test]
fn member_path_climbing_out_of_site_packages() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let climbing = "_rocm_sdk_core/../../bin/evil";
    rewrite_member(&mut wheels, CORE_WHEEL, climbing, "x");
    let report = verify(&fixture, &wheels);
    assert_violations(&report, &[(CORE_WHEEL, Some(climbing), Check::MemberPath, "has a `..` component")]);
}

#[test]
fn truncated_wheel_is_not_a_zip() {
    let fixture = fixture();
    write_dist(&fixture.dist, &default_wheels(&fixture));
    // Cut off the central directory, as an interrupted download or copy would.
    let path = fixture.dist.join(DEVICE_WHEEL);
    let bytes = fs_err::read(&path).expect("read wheel");
    fs_err::write(&path, &bytes[..bytes.len() / 2]).expect("truncate wheel");
    let report = verify(&fixture, &[]);
    assert_violations(&report, &[(DEVICE_WHEEL, None, Check::Archive, "not a readable zip archive")]);
}

#[test]
fn metadata_without_name_and_version() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let metadata = "rocm_sdk_core-1.0.dist-info/METADATA";
    rewrite_member(&mut wheels, CORE_WHEEL, metadata, "Metadata-Version: 2.1\nSummary: lost its name\n");
    let report = verify(&fixture, &wheels);
    assert_violations(
        &report,
        &[
            (CORE_WHEEL, Some(metadata), Check::Metadata, "no Name"),
            (CORE_WHEEL, Some(metadata), Check::Metadata, "no Version"),
        ],
    );
}

#[test]
fn wheel_tag_that_differs_from_the_file_name() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let wheel_file = "rocm_sdk_core-1.0.dist-info/WHEEL";
    let text = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-manylinux_2_28_aarch64\n";
    rewrite_member(&mut wheels, CORE_WHEEL, wheel_file, text);
    let report = verify(&fixture, &wheels);
    assert_violations(
        &report,
        &[(
            CORE_WHEEL,
            Some(wheel_file),
            Check::Metadata,
            "WHEEL Tag lines [py3-none-manylinux_2_28_aarch64] differ from the file name's tags [py3-none-linux_x86_64]",
        )],
    );
}
