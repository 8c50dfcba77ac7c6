//! `verify --dist`: a correct kpack-split set built for real passes; each test
//! then breaks exactly one thing in it and sees exactly that violation, naming the archive
//! and the member.
//!
//! This module builds the set (real libraries compiled with `cc`, wheels with a correct
//! RECORD) and checks that it passes. Children break one part of it each: `archive`
//! (zip, member paths, dist-info, RECORD), `elf` (structure, RPATH, closure, portability),
//! `devel` (the devel tarball), `kpack` (sets split into host and device wheels), `runtime_rules` (every devel tarball the installed runtime
//! refuses to expand fails the gate), `set` (rules across packages).

#[path = "verify_archive.rs"]
mod archive;
#[path = "verify_devel.rs"]
mod devel;
#[path = "verify_elf.rs"]
mod elf;
#[path = "verify_kpack.rs"]
mod kpack;
#[path = "verify_runtime_rules.rs"]
mod runtime_rules;
#[path = "verify_set.rs"]
mod set;

use std::io::Write;
use std::path::{Path, PathBuf};

use release_gate::{verify_dist, Check, VerifyReport};
use sha2::{Digest, Sha256};

use crate::support;

const VERSION: &str = "1.0";
const TAG: &str = "py3-none-linux_x86_64";
const CORE_WHEEL: &str = "rocm_sdk_core-1.0-py3-none-linux_x86_64.whl";
const LIBRARIES_WHEEL: &str = "rocm_sdk_libraries-1.0-py3-none-linux_x86_64.whl";
const DEVICE_WHEEL: &str = "rocm_sdk_device_gfx90a-1.0-py3-none-linux_x86_64.whl";
const DEVEL_WHEEL: &str = "rocm_sdk_devel-1.0-py3-none-linux_x86_64.whl";
const BLAS: &str = "_rocm_sdk_libraries/lib/libblas.so";
/// `$ORIGIN` of `_rocm_sdk_libraries/lib/` up to site-packages, then into core.
const BLAS_RPATH: &str = "-Wl,-rpath,$ORIGIN/../../_rocm_sdk_core/lib";

/// One archive member: path, bytes, unix mode.
#[derive(Clone)]
struct Entry {
    name: String,
    bytes: Vec<u8>,
    mode: u32,
}

fn entry(name: &str, bytes: impl Into<Vec<u8>>, mode: u32) -> Entry {
    Entry { name: name.to_owned(), bytes: bytes.into(), mode }
}

/// A wheel in memory: its file name and every member, dist-info with a correct RECORD.
struct Wheel {
    file: String,
    entries: Vec<Entry>,
}

/// Builds a correct wheel from payload files; `requires` become `Requires-Dist` lines.
fn wheel(dist_name: &str, files: Vec<Entry>, requires: &[&str]) -> Wheel {
    wheel_tagged(dist_name, TAG, files, requires)
}

fn wheel_tagged(dist_name: &str, tag: &str, files: Vec<Entry>, requires: &[&str]) -> Wheel {
    wheel_versioned(dist_name, VERSION, tag, files, requires)
}

fn wheel_versioned(dist_name: &str, version: &str, tag: &str, files: Vec<Entry>, requires: &[&str]) -> Wheel {
    let dist_info = format!("{dist_name}-{version}.dist-info");
    let mut metadata = format!("Metadata-Version: 2.1\nName: {}\nVersion: {version}\n", dist_name.replace('_', "-"));
    for requirement in requires {
        metadata.push_str(&format!("Requires-Dist: {requirement}\n"));
    }
    let wheel_text = format!("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n");
    let mut entries = files;
    entries.push(entry(&format!("{dist_info}/METADATA"), metadata, 0o644));
    entries.push(entry(&format!("{dist_info}/WHEEL"), wheel_text, 0o644));
    let file = format!("{dist_name}-{version}-{tag}.whl");
    entries.push(sbom(&dist_info, &file, &entries));
    entries.push(record(&dist_info, &entries));
    Wheel { file, entries }
}

/// `{dist_info}/sboms/rocm-packager.cdx.json`: a bill of materials listing every file of
/// `entries` outside `.dist-info` with its SHA-256, as the gate wants one (SPEC §10).
fn sbom(dist_info: &str, file: &str, entries: &[Entry]) -> Entry {
    let (stem, _) = dist_info.rsplit_once(".dist-info").expect("a dist-info name");
    let (name, version) = stem.split_once('-').expect("{name}-{version}");
    let files: Vec<serde_json::Value> = entries
        .iter()
        .filter(|entry| !entry.name.contains(".dist-info/"))
        .map(|entry| {
            let sha256: String = Sha256::digest(&entry.bytes).iter().map(|byte| format!("{byte:02x}")).collect();
            serde_json::json!({"type": "file", "name": entry.name, "hashes": [{"alg": "SHA-256", "content": sha256}]})
        })
        .collect();
    let purl = format!("pkg:pypi/{}@{version}?file_name={file}", name.replace('_', "-"));
    let document = serde_json::json!({
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "version": 1,
        "metadata": {"component": {"type": "library", "name": name.replace('_', "-"), "version": version, "purl": purl}},
        "components": [{"type": "library", "name": "payload", "components": files}],
    });
    entry(&format!("{dist_info}/sboms/rocm-packager.cdx.json"), document.to_string(), 0o644)
}

/// `{dist_info}/RECORD` listing every one of `entries` with its hash and size.
fn record(dist_info: &str, entries: &[Entry]) -> Entry {
    let mut record = String::new();
    for member in entries {
        let hash = support::record_hash(&member.bytes);
        record.push_str(&format!("{},{hash},{}\n", member.name, member.bytes.len()));
    }
    record.push_str(&format!("{dist_info}/RECORD,,\n"));
    entry(&format!("{dist_info}/RECORD"), record, 0o644)
}

/// Sets member `name` of the wheel `file` to `bytes` (adding it when absent) and rewrites
/// RECORD and the bill of materials to match, so that member is the only thing wrong with
/// the wheel.
fn rewrite_member(wheels: &mut [Wheel], file: &str, name: &str, bytes: impl Into<Vec<u8>>) {
    let wheel = wheels.iter_mut().find(|wheel| wheel.file == file).expect("wheel in the set");
    let record_at = wheel.entries.iter().position(|entry| entry.name.ends_with(".dist-info/RECORD")).expect("RECORD");
    let dist_info = wheel.entries.remove(record_at).name.trim_end_matches("/RECORD").to_owned();
    let bytes = bytes.into();
    match wheel.entries.iter_mut().find(|entry| entry.name == name) {
        Some(found) => found.bytes = bytes,
        None => wheel.entries.insert(0, entry(name, bytes, 0o644)),
    }
    // The bill of materials follows the new bytes, as RECORD does, unless it is the member
    // rewritten.
    let sbom_name = format!("{dist_info}/sboms/rocm-packager.cdx.json");
    if name != sbom_name {
        if let Some(at) = wheel.entries.iter().position(|entry| entry.name == sbom_name) {
            wheel.entries.remove(at);
            let sbom = sbom(&dist_info, &wheel.file, &wheel.entries);
            wheel.entries.insert(at, sbom);
        }
    }
    let record = record(&dist_info, &wheel.entries);
    wheel.entries.push(record);
}

fn write_wheel(dir: &Path, wheel: &Wheel) {
    let file = fs_err::File::create(dir.join(&wheel.file)).expect("create wheel");
    let mut zip = zip::ZipWriter::new(file);
    for member in &wheel.entries {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(member.mode);
        if member.mode & 0o170_000 == 0o120_000 {
            let target = String::from_utf8(member.bytes.clone()).expect("utf-8 link target");
            zip.add_symlink(member.name.as_str(), target, options).expect("add symlink");
            continue;
        }
        zip.start_file(member.name.as_str(), options).expect("start member");
        zip.write_all(&member.bytes).expect("write member");
    }
    zip.finish().expect("finish wheel");
}

enum TarMember<'a> {
    Dir,
    File(&'a [u8]),
    Symlink(&'a str),
    /// A tar hard link to the member named.
    HardLink(&'a str),
    Fifo,
}

/// The devel platform directory's `__init__.py`, which every expanded tree must have.
const DEVEL_INIT: (&str, TarMember<'static>) = ("_rocm_sdk_devel/__init__.py", TarMember::File(b""));

/// A tar written with raw header names, so a test can put `..` in one.
fn tar_bytes(members: &[(&str, TarMember)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, member) in members {
        let mut header = tar::Header::new_gnu();
        let name_field = &mut header.as_gnu_mut().expect("gnu header").name;
        name_field[..name.len()].copy_from_slice(name.as_bytes());
        let data: &[u8] = match member {
            TarMember::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                &[]
            }
            TarMember::File(bytes) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                bytes
            }
            TarMember::Symlink(target) | TarMember::HardLink(target) => {
                let hard = matches!(member, TarMember::HardLink(_));
                header.set_entry_type(if hard { tar::EntryType::Link } else { tar::EntryType::Symlink });
                // Written raw, as a hostile tarball would: `set_link_name` refuses `` and `.`.
                let link_field = &mut header.as_gnu_mut().expect("gnu header").linkname;
                link_field[..target.len()].copy_from_slice(target.as_bytes());
                header.set_mode(if hard { 0o644 } else { 0o777 });
                &[]
            }
            TarMember::Fifo => {
                header.set_entry_type(tar::EntryType::Fifo);
                header.set_mode(0o644);
                &[]
            }
        };
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).expect("append tar member");
    }
    builder.into_inner().expect("finish tar")
}

fn write_sdist(path: &Path, targets: &str) {
    let top = format!("rocm-{VERSION}");
    let pkg_info = format!("Metadata-Version: 2.1\nName: rocm\nVersion: {VERSION}\n");
    let dist_info = format!("__version__ = \"{VERSION}\"\nAVAILABLE_TARGET_FAMILIES = [{targets}]\n");
    let members = [
        (format!("{top}/PKG-INFO"), pkg_info.into_bytes()),
        (format!("{top}/rocm_sdk/_dist_info_data.py"), dist_info.into_bytes()),
    ];
    fs_err::create_dir_all(path.parent().expect("sdist dir")).expect("create sdist dir");
    let gz = flate2::write::GzEncoder::new(fs_err::File::create(path).expect("create sdist"), Default::default());
    let mut builder = tar::Builder::new(gz);
    for (name, bytes) in &members {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, bytes.as_slice()).expect("append sdist member");
    }
    builder.into_inner().expect("finish tar").finish().expect("finish gzip");
}

/// Real libraries: libcore (needs `reallocarray`, GLIBC_2.26) and libblas needing libcore
/// through a DT_RPATH `$ORIGIN` entry; `blas_flags` replace libblas's link flags.
struct Libraries {
    core: Vec<u8>,
    blas: Vec<u8>,
}

const CORE_C: &str = "#include <stdlib.h>\nvoid *core_grow(void *p, size_t n) { return reallocarray(p, n, 8); }\n";
const BLAS_C: &str = "void *core_grow(void *, unsigned long);\nvoid *blas_grow(void *p) { return core_grow(p, 2); }\n";

fn build_libraries(build: &Path, blas_flags: &[&str]) -> Libraries {
    let core = support::shared_lib(build, "libcore.so", CORE_C, &[]);
    let dir = build.to_str().expect("utf-8 temp dir");
    // The library comes before the source on the compiler's line: a linker that links
    // `--as-needed` by default would drop it, and libblas would need nothing.
    let mut flags = vec!["-L", dir, "-Wl,--no-as-needed", "-l:libcore.so"];
    flags.extend_from_slice(blas_flags);
    let blas = support::shared_lib(build, "libblas.so", BLAS_C, &flags);
    Libraries { core: fs_err::read(core).expect("read libcore"), blas: fs_err::read(blas).expect("read libblas") }
}

fn default_blas_flags() -> Vec<&'static str> {
    vec![BLAS_RPATH, "-Wl,--disable-new-dtags"]
}

/// The correct set: core, libraries, one device wheel, devel (with a symlink into core).
fn good_wheels(libraries: &Libraries) -> Vec<Wheel> {
    let devel_tar = tar_bytes(&[
        ("_rocm_sdk_devel/", TarMember::Dir),
        DEVEL_INIT,
        ("_rocm_sdk_devel/include/core.h", TarMember::File(b"int core(void);\n")),
        ("_rocm_sdk_devel/lib/libcore.so", TarMember::Symlink("../../_rocm_sdk_core/lib/libcore.so")),
    ]);
    vec![
        wheel(
            "rocm_sdk_core",
            vec![
                entry("_rocm_sdk_core/__init__.py", "", 0o644),
                entry("_rocm_sdk_core/lib/libcore.so", libraries.core.clone(), 0o755),
            ],
            &[],
        ),
        wheel(
            "rocm_sdk_libraries",
            vec![entry("_rocm_sdk_libraries/__init__.py", "", 0o644), entry(BLAS, libraries.blas.clone(), 0o755)],
            &["rocm-sdk-core==1.0"],
        ),
        wheel(
            "rocm_sdk_device_gfx90a",
            vec![entry("_rocm_sdk_libraries/.devel_links/gfx90a.json", "{}", 0o644)],
            &["rocm-sdk-libraries==1.0"],
        ),
        devel_wheel("_devel.tar", devel_tar),
    ]
}

/// The devel wheel carrying `tarball` as `rocm_sdk_devel/{tar_name}`.
fn devel_wheel(tar_name: &str, tarball: Vec<u8>) -> Wheel {
    wheel(
        "rocm_sdk_devel",
        vec![
            entry("rocm_sdk_devel/__init__.py", "", 0o644),
            entry(&format!("rocm_sdk_devel/{tar_name}"), tarball, 0o644),
        ],
        &["rocm-sdk-core==1.0"],
    )
}

/// [`good_wheels`] of the libraries built with the default flags in the fixture.
fn default_wheels(fixture: &Fixture) -> Vec<Wheel> {
    good_wheels(&build_libraries(&fixture.build, &default_blas_flags()))
}

fn write_dist(dist: &Path, wheels: &[Wheel]) {
    fs_err::create_dir_all(dist).expect("create dist");
    for wheel in wheels {
        write_wheel(dist, wheel);
    }
}

struct Fixture {
    _temp: tempfile::TempDir,
    build: PathBuf,
    dist: PathBuf,
}

fn fixture() -> Fixture {
    let temp = tempfile::tempdir().expect("temp dir");
    let build = temp.path().join("build");
    let dist = temp.path().join("dist");
    fs_err::create_dir_all(&build).expect("create build dir");
    Fixture { _temp: temp, build, dist }
}

/// Writes `wheels` plus the `rocm` sdist and verifies.
fn verify(fixture: &Fixture, wheels: &[Wheel]) -> VerifyReport {
    write_dist(&fixture.dist, wheels);
    write_sdist(&fixture.dist.join(format!("rocm-{VERSION}.tar.gz")), "\"gfx90a:xnack+\", \"gfx90a:xnack-\"");
    verify_dist(&fixture.dist).expect("dist is readable")
}

/// (file, member path, check) of every violation.
fn violations(report: &VerifyReport) -> Vec<(String, Option<String>, Check)> {
    report.violations().map(|finding| (finding.file.clone(), finding.path.clone(), finding.check)).collect()
}

/// Asserts that the violations are exactly `expected`: (file, member path, check, a piece
/// of the message), in report order.
fn assert_violations(report: &VerifyReport, expected: &[(&str, Option<&str>, Check, &str)]) {
    let found: Vec<(&str, Option<&str>, Check, &str)> = report
        .violations()
        .map(|finding| (finding.file.as_str(), finding.path.as_deref(), finding.check, finding.message.as_str()))
        .collect();
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    for (found, expected) in found.iter().zip(expected) {
        assert_eq!((found.0, found.1, found.2), (expected.0, expected.1, expected.2), "{found:#?}");
        assert!(found.3.contains(expected.3), "`{}` should contain `{}`", found.3, expected.3);
    }
}

/// Index of the wheel `file` in the set.
fn position(wheels: &[Wheel], file: &str) -> usize {
    wheels.iter().position(|wheel| wheel.file == file).expect("wheel in the set")
}

fn member(wheels: &mut [Wheel], file: &str, path: &str) -> usize {
    let wheel = position(wheels, file);
    assert!(wheels[wheel].entries.iter().any(|entry| entry.name == path));
    wheel
}

#[test]
fn correct_set_passes() {
    let fixture = fixture();
    let report = verify(&fixture, &default_wheels(&fixture));
    assert_eq!(violations(&report), [], "{report:#?}");
    assert_eq!(report.n_warnings(), 0, "{report:#?}");
    assert_eq!(report.packages.len(), 5);
    let core = report.packages.iter().find(|package| package.file == CORE_WHEEL).expect("core wheel");
    assert_eq!(core.n_elf_files, 1);
    let facts = core.portability.as_ref().expect("wheel facts");
    assert_eq!(facts.glibc.as_deref(), Some("2.26"));
    let json = serde_json::to_value(&report).expect("report serializes");
    assert_eq!(json["packages"][0]["file"], "rocm-1.0.tar.gz");
}
