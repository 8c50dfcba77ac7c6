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
        vec![
            entry("_rocm_sdk_libraries/.devel_links/gfx90a.json", "{}", 0o644),
            entry(kpack, super::kpack::empty_archive("gfx90a:xnack+"), 0o644),
        ],
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

/// The offset of `name`'s local header in the zip `bytes`.
fn local_header_of(bytes: &[u8], name: &str) -> usize {
    (0..bytes.len() - 30)
        .find(|&at| {
            let name_len = usize::from(u16::from_le_bytes([bytes[at + 26], bytes[at + 27]]));
            bytes[at..at + 4] == *b"PK\x03\x04" && bytes.get(at + 30..at + 30 + name_len) == Some(name.as_bytes())
        })
        .expect("the member's local header")
}

/// Writes the set, then `patch`es the bytes of the core wheel's `_rocm_sdk_core/__init__.py`
/// local header (at its offset) as a forger or a broken writer would; returns the report
/// and what Python's `zipfile`, pip's reader, says opening that member.
fn with_local_header_patched(patch: impl Fn(&mut [u8], usize)) -> (VerifyReport, String) {
    let fixture = fixture();
    write_dist(&fixture.dist, &default_wheels(&fixture));
    let path = fixture.dist.join(CORE_WHEEL);
    let mut bytes = fs_err::read(&path).expect("read wheel");
    let at = local_header_of(&bytes, "_rocm_sdk_core/__init__.py");
    patch(&mut bytes, at);
    fs_err::write(&path, &bytes).expect("write the patched wheel");
    let report = verify(&fixture, &[]);
    let pip_says = std::process::Command::new(support::tools_venv().join("bin/python"))
        .args(["-c", "import sys, zipfile\ntry:\n    zipfile.ZipFile(sys.argv[1]).read(sys.argv[2])\nexcept Exception as error:\n    print(type(error).__name__, error)\nelse:\n    print('read')"])
        .arg(&path)
        .arg("_rocm_sdk_core/__init__.py")
        .output()
        .expect("run python");
    (report, String::from_utf8_lossy(&pip_says.stdout).trim().to_owned())
}

#[test]
fn a_local_header_naming_another_file_than_its_central_entry() {
    // Same length, so every offset stays right: only the name differs.
    let (report, pip_says) =
        with_local_header_patched(|bytes, at| bytes[at + 30 + 22..at + 30 + 26].copy_from_slice(b"evil"));
    assert!(pip_says.starts_with("BadZipFile File name in directory"), "{pip_says}");
    assert_violations(
        &report,
        &[(
            CORE_WHEEL,
            Some("_rocm_sdk_core/__init__.py"),
            Check::Archive,
            "its local header names `_rocm_sdk_core/__init_evil`, its central directory entry `_rocm_sdk_core/__init__.py`",
        )],
    );
}

#[test]
fn a_local_header_announcing_another_size() {
    let (report, _) = with_local_header_patched(|bytes, at| {
        let compressed = u32::from_le_bytes(bytes[at + 18..at + 22].try_into().expect("4 bytes"));
        bytes[at + 18..at + 22].copy_from_slice(&(compressed + 7).to_le_bytes());
    });
    assert_violations(
        &report,
        &[(CORE_WHEEL, Some("_rocm_sdk_core/__init__.py"), Check::Archive, "its local header announces")],
    );
}

#[test]
fn a_local_header_with_another_method() {
    let (report, _) =
        with_local_header_patched(|bytes, at| bytes[at + 8..at + 10].copy_from_slice(&0u16.to_le_bytes()));
    assert_violations(
        &report,
        &[(CORE_WHEEL, Some("_rocm_sdk_core/__init__.py"), Check::Archive, "method 0, its central directory entry")],
    );
}

#[test]
fn root_is_purelib_on_a_platform_wheel() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let wheel_file = "rocm_sdk_core-1.0.dist-info/WHEEL";
    let text = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-linux_x86_64\n";
    rewrite_member(&mut wheels, CORE_WHEEL, wheel_file, text);
    let report = verify(&fixture, &wheels);
    assert_violations(
        &report,
        &[(
            CORE_WHEEL,
            Some(wheel_file),
            Check::Metadata,
            "Root-Is-Purelib is `true` on a platform wheel (linux_x86_64)",
        )],
    );
}

#[test]
fn two_name_fields_in_metadata() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let metadata = "rocm_sdk_core-1.0.dist-info/METADATA";
    let text = "Metadata-Version: 2.1\nName: rocm-sdk-core\nVersion: 1.0\nName: rocm-sdk-core-evil\n";
    rewrite_member(&mut wheels, CORE_WHEEL, metadata, text);
    let report = verify(&fixture, &wheels);
    assert_violations(
        &report,
        &[(
            CORE_WHEEL,
            Some(metadata),
            Check::Metadata,
            "Name appears 2 times (`rocm-sdk-core`, `rocm-sdk-core-evil`); it may appear once",
        )],
    );
}

#[test]
fn a_member_name_longer_than_255_bytes() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let core = position(&wheels, CORE_WHEEL);
    let long = format!("_rocm_sdk_core/{}.h", "h".repeat(300));
    // Added after RECORD and the bill of materials were written: they miss it too.
    wheels[core].entries.insert(0, entry(&long, "", 0o644));
    let report = verify(&fixture, &wheels);
    let paths: Vec<_> = report
        .violations()
        .filter(|finding| finding.check == Check::MemberPath)
        .map(|finding| (finding.path.clone(), finding.message.clone()))
        .collect();
    let message = "member path has a component longer than 255 bytes, which no file system takes".to_owned();
    assert_eq!(paths, [(Some(long), message)]);
}

/// Bytes that are not UTF-8 inside a string of the bill of materials (RECORD's hashes
/// right) and in METADATA: JSON must be UTF-8 (RFC 8259), the metadata files too; each is
/// a violation naming the member, never text decoded with replacement characters.
#[test]
fn text_members_that_are_not_utf8_are_violations() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let sbom = "rocm_sdk_core-1.0.dist-info/sboms/rocm-packager.cdx.json";
    let metadata = "rocm_sdk_core-1.0.dist-info/METADATA";
    let index = member(&mut wheels, CORE_WHEEL, metadata);
    let text = wheels[index].entries.iter().find(|entry| entry.name == metadata).expect("METADATA").bytes.clone();
    let mut latin1 = text.clone();
    latin1.extend_from_slice(b"Caf\xe9 society\n");
    rewrite_member(&mut wheels, CORE_WHEEL, metadata, latin1);
    // The bill of materials last: rewriting another member makes it anew.
    let document = wheels[index].entries.iter().find(|entry| entry.name == sbom).expect("the SBOM").bytes.clone();
    let key = b"\"name\":\"";
    let at = document.windows(key.len()).position(|window| window == key).expect("a name") + key.len();
    let mut broken = document[..at].to_vec();
    broken.extend_from_slice(b"\xff\xfe");
    broken.extend_from_slice(&document[at..]);
    rewrite_member(&mut wheels, CORE_WHEEL, sbom, broken);
    let report = verify(&fixture, &wheels);
    let found: Vec<(Option<String>, Check, String)> =
        report.violations().map(|finding| (finding.path.clone(), finding.check, finding.message.clone())).collect();
    assert!(
        found.iter().any(|(path, check, message)| path.as_deref() == Some(sbom)
            && *check == Check::Sbom
            && message == &format!("is not UTF-8: byte 0xff at offset {at}; JSON must be UTF-8 (RFC 8259)")),
        "{found:#?}"
    );
    assert!(
        found.iter().any(|(path, check, message)| path.as_deref() == Some(metadata)
            && *check == Check::Metadata
            && message.starts_with("is not UTF-8: byte 0xe9")),
        "{found:#?}"
    );
}
