//! `verify --dist` (issue 7): a correct kpack-split set built for real passes; each test
//! then breaks exactly one thing in it and sees exactly that violation.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use packager::verify::{verify_dist, Check, VerifyReport};
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

fn urlsafe_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let value = chunk.iter().enumerate().fold(0u32, |acc, (i, &byte)| acc | (u32::from(byte) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(value >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// Builds a correct wheel from payload files; `requires` become `Requires-Dist` lines.
fn wheel(dist_name: &str, files: Vec<Entry>, requires: &[&str]) -> Wheel {
    wheel_tagged(dist_name, TAG, files, requires)
}

fn wheel_tagged(dist_name: &str, tag: &str, files: Vec<Entry>, requires: &[&str]) -> Wheel {
    let dist_info = format!("{dist_name}-{VERSION}.dist-info");
    let mut metadata = format!("Metadata-Version: 2.1\nName: {}\nVersion: {VERSION}\n", dist_name.replace('_', "-"));
    for requirement in requires {
        metadata.push_str(&format!("Requires-Dist: {requirement}\n"));
    }
    let wheel_text = format!("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n");
    let mut entries = files;
    entries.push(entry(&format!("{dist_info}/METADATA"), metadata, 0o644));
    entries.push(entry(&format!("{dist_info}/WHEEL"), wheel_text, 0o644));
    let mut record = String::new();
    for member in &entries {
        let hash = urlsafe_base64(&Sha256::digest(&member.bytes));
        record.push_str(&format!("{},sha256={hash},{}\n", member.name, member.bytes.len()));
    }
    record.push_str(&format!("{dist_info}/RECORD,,\n"));
    entries.push(entry(&format!("{dist_info}/RECORD"), record, 0o644));
    Wheel { file: format!("{dist_name}-{VERSION}-{tag}.whl"), entries }
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
}

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
            TarMember::Symlink(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_link_name(target).expect("link name");
                header.set_mode(0o777);
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
        (format!("{top}/rocm_sdk/_dist_info.py"), dist_info.into_bytes()),
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
    let mut flags = vec!["-L", dir, "-l:libcore.so"];
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
        wheel(
            "rocm_sdk_devel",
            vec![entry("rocm_sdk_devel/__init__.py", "", 0o644), entry("rocm_sdk_devel/_devel.tar", devel_tar, 0o644)],
            &["rocm-sdk-core==1.0"],
        ),
    ]
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

fn member(wheels: &mut [Wheel], file: &str, path: &str) -> usize {
    let wheel = wheels.iter().position(|wheel| wheel.file == file).expect("wheel in the set");
    assert!(wheels[wheel].entries.iter().any(|entry| entry.name == path));
    wheel
}

#[test]
fn correct_set_passes() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let report = verify(&fixture, &good_wheels(&libraries));
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

#[test]
fn wrong_hash_is_a_record_violation() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let mut wheels = good_wheels(&libraries);
    let path = "_rocm_sdk_core/__init__.py";
    let index = member(&mut wheels, CORE_WHEEL, path);
    let init = wheels[index].entries.iter_mut().find(|entry| entry.name == path).expect("member");
    init.bytes = b"x".to_vec();
    let report = verify(&fixture, &wheels);
    // One byte instead of none: the hash and the size both disagree with RECORD.
    assert_eq!(
        violations(&report),
        [
            (CORE_WHEEL.to_owned(), Some(path.to_owned()), Check::Record),
            (CORE_WHEEL.to_owned(), Some(path.to_owned()), Check::Record)
        ]
    );
    assert!(report.violations().any(|finding| finding.message.contains("RECORD hash sha256=")));
}

#[test]
fn runpath_is_a_violation() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &[BLAS_RPATH, "-Wl,--enable-new-dtags"]);
    let report = verify(&fixture, &good_wheels(&libraries));
    assert_eq!(violations(&report), [(LIBRARIES_WHEEL.to_owned(), Some(BLAS.to_owned()), Check::Rpath)]);
    assert!(report.violations().any(|finding| finding.message.contains("DT_RUNPATH")));
}

#[test]
fn absolute_rpath_is_a_violation() {
    let fixture = fixture();
    let flags = ["-Wl,-rpath,$ORIGIN/../../_rocm_sdk_core/lib:/opt/rocm/lib", "-Wl,--disable-new-dtags"];
    let libraries = build_libraries(&fixture.build, &flags);
    let report = verify(&fixture, &good_wheels(&libraries));
    assert_eq!(violations(&report), [(LIBRARIES_WHEEL.to_owned(), Some(BLAS.to_owned()), Check::Rpath)]);
    assert!(report.violations().any(|finding| finding.message.contains("`/opt/rocm/lib`")));
}

#[test]
fn needed_library_that_resolves_nowhere() {
    let fixture = fixture();
    support::shared_lib(&fixture.build, "libmissing.so", "int missing(void) { return 1; }\n", &[]);
    let flags = [BLAS_RPATH, "-Wl,--disable-new-dtags", "-Wl,--no-as-needed", "-l:libmissing.so"];
    let libraries = build_libraries(&fixture.build, &flags);
    let report = verify(&fixture, &good_wheels(&libraries));
    assert_eq!(violations(&report), [(LIBRARIES_WHEEL.to_owned(), Some(BLAS.to_owned()), Check::Closure)]);
    assert!(report.violations().any(|finding| finding.message.contains("`libmissing.so`")));
}

/// Moves PT_PHDR of a real PIE executable to the file's non-loaded tail and an unmapped address.
fn break_phdr(bytes: &mut [u8]) {
    let elf = goblin::elf::Elf::parse(bytes).expect("parse executable");
    let index = elf
        .program_headers
        .iter()
        .position(|header| header.p_type == goblin::elf::program_header::PT_PHDR)
        .expect("a PIE executable has PT_PHDR");
    let filesz = elf.program_headers[index].p_filesz;
    let at = elf.header.e_phoff as usize + index * usize::from(elf.header.e_phentsize);
    let offset = bytes.len() as u64 - filesz;
    bytes[at + 8..at + 16].copy_from_slice(&offset.to_le_bytes());
    bytes[at + 16..at + 24].copy_from_slice(&0x7fff_0000u64.to_le_bytes());
    bytes[at + 24..at + 32].copy_from_slice(&0x7fff_0000u64.to_le_bytes());
}

#[test]
fn program_header_table_outside_every_load() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let tool = support::executable(&fixture.build, "tool", "int main(void) { return 0; }\n", &["-pie", "-fPIE"]);
    let mut bytes = fs_err::read(tool).expect("read tool");
    break_phdr(&mut bytes);
    let mut wheels = good_wheels(&libraries);
    let core = wheels.iter().position(|wheel| wheel.file == CORE_WHEEL).expect("core");
    let mut files: Vec<Entry> =
        wheels[core].entries.iter().filter(|entry| !entry.name.contains(".dist-info/")).cloned().collect();
    files.push(entry("_rocm_sdk_core/bin/tool", bytes, 0o755));
    wheels[core] = wheel("rocm_sdk_core", files, &[]);
    let report = verify(&fixture, &wheels);
    let found = violations(&report);
    assert!(!found.is_empty());
    for violation in &found {
        assert_eq!(
            violation,
            &(CORE_WHEEL.to_owned(), Some("_rocm_sdk_core/bin/tool".to_owned()), Check::ElfStructure)
        );
    }
    assert!(report
        .violations()
        .any(|finding| finding.message.starts_with("PT_PHDR") && finding.message.contains("outside every PT_LOAD")));
}

#[test]
fn devel_member_climbing_out() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let mut wheels = good_wheels(&libraries);
    let devel_tar = tar_bytes(&[("_rocm_sdk_devel/", TarMember::Dir), ("../x", TarMember::File(b"x"))]);
    let devel = wheels.iter().position(|wheel| wheel.file == DEVEL_WHEEL).expect("devel");
    wheels[devel] = wheel(
        "rocm_sdk_devel",
        vec![entry("rocm_sdk_devel/__init__.py", "", 0o644), entry("rocm_sdk_devel/_devel.tar", devel_tar, 0o644)],
        &["rocm-sdk-core==1.0"],
    );
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(DEVEL_WHEEL.to_owned(), Some("../x".to_owned()), Check::MemberPath)]);
}

#[test]
fn two_wheels_installing_one_path() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let mut wheels = good_wheels(&libraries);
    let device = wheels.iter().position(|wheel| wheel.file == DEVICE_WHEEL).expect("device");
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
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    write_dist(&fixture.dist, &good_wheels(&libraries));
    write_sdist(&fixture.dist.join("gfx110X-all/rocm-1.0.tar.gz"), "\"gfx90a\"");
    write_sdist(&fixture.dist.join("gfx94X-dcgpu/rocm-1.0.tar.gz"), "\"gfx90a\", \"gfx90a:xnack+\"");
    let report = verify_dist(&fixture.dist).expect("dist is readable");
    assert_eq!(violations(&report), [("rocm-1.0.tar.gz".to_owned(), None, Check::DuplicateFileName)]);
}

#[test]
fn missing_device_wheel_breaks_completeness() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let wheels: Vec<Wheel> = good_wheels(&libraries).into_iter().filter(|wheel| wheel.file != DEVICE_WHEEL).collect();
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(LIBRARIES_WHEEL.to_owned(), None, Check::Completeness)]);
}

#[test]
fn colon_in_member_name_is_a_warning() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let mut wheels = good_wheels(&libraries);
    let device = wheels.iter().position(|wheel| wheel.file == DEVICE_WHEEL).expect("device");
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
fn glibc_floor_agrees_with_auditwheel() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let report = verify(&fixture, &good_wheels(&libraries));
    let core = report.packages.iter().find(|package| package.file == CORE_WHEEL).expect("core wheel");
    let ours = core.portability.as_ref().and_then(|facts| facts.manylinux_tag.clone()).expect("a tag");
    let auditwheel = support::tools_venv().join("bin/auditwheel");
    let shown = support::run(Command::new(auditwheel).arg("show").arg(fixture.dist.join(CORE_WHEEL)));
    let theirs = shown
        .split('"')
        .find(|part| part.starts_with("manylinux_"))
        .unwrap_or_else(|| panic!("no manylinux tag in auditwheel's output:\n{shown}"));
    assert_eq!(ours, theirs, "auditwheel said:\n{shown}");
}

#[test]
fn devel_symlink_to_nothing() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let mut wheels = good_wheels(&libraries);
    let link = "_rocm_sdk_devel/lib/libgone.so";
    let devel_tar = tar_bytes(&[
        ("./", TarMember::Dir),
        ("./_rocm_sdk_devel/", TarMember::Dir),
        (link, TarMember::Symlink("../../_rocm_sdk_core/lib/libgone.so")),
    ]);
    let devel = wheels.iter().position(|wheel| wheel.file == DEVEL_WHEEL).expect("devel");
    wheels[devel] = wheel(
        "rocm_sdk_devel",
        vec![entry("rocm_sdk_devel/__init__.py", "", 0o644), entry("rocm_sdk_devel/_devel.tar", devel_tar, 0o644)],
        &["rocm-sdk-core==1.0"],
    );
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(DEVEL_WHEEL.to_owned(), Some(link.to_owned()), Check::Devel)]);
}

#[test]
fn launcher_target_must_exist() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let template = packager::launcher::LauncherTemplate::compile(&fixture.build).expect("compile the launcher");
    let launcher = template.instantiate("../libexec/tool.py").expect("a launcher");
    let core_with = |extra: Vec<Entry>| {
        let mut files = vec![
            entry("_rocm_sdk_core/__init__.py", "", 0o644),
            entry("_rocm_sdk_core/lib/libcore.so", libraries.core.clone(), 0o755),
            entry("_rocm_sdk_core/bin/tool", launcher.clone(), 0o755),
        ];
        files.extend(extra);
        wheel("rocm_sdk_core", files, &[])
    };
    let mut wheels = good_wheels(&libraries);
    let core = wheels.iter().position(|wheel| wheel.file == CORE_WHEEL).expect("core");
    wheels[core] = core_with(vec![]);
    let report = verify(&fixture, &wheels);
    assert_eq!(
        violations(&report),
        [(CORE_WHEEL.to_owned(), Some("_rocm_sdk_core/bin/tool".to_owned()), Check::Launcher)]
    );

    let fixed = self::fixture();
    wheels[core] = core_with(vec![entry("_rocm_sdk_core/libexec/tool.py", "print()\n", 0o755)]);
    let report = verify(&fixed, &wheels);
    assert_eq!(violations(&report), []);
}

#[test]
fn manylinux_tag_older_than_the_symbols_need() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let mut wheels = good_wheels(&libraries);
    let core = wheels.iter().position(|wheel| wheel.file == CORE_WHEEL).expect("core");
    let files = vec![
        entry("_rocm_sdk_core/__init__.py", "", 0o644),
        entry("_rocm_sdk_core/lib/libcore.so", libraries.core.clone(), 0o755),
    ];
    wheels[core] = wheel_tagged("rocm_sdk_core", "py3-none-manylinux_2_17_x86_64", files, &[]);
    let report = verify(&fixture, &wheels);
    let file = "rocm_sdk_core-1.0-py3-none-manylinux_2_17_x86_64.whl".to_owned();
    assert_eq!(violations(&report), [(file, None, Check::Portability)]);
    assert!(report.violations().any(|finding| finding.message.contains("GLIBC_2.26")));
}

#[test]
fn symlink_in_a_wheel() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let mut wheels = good_wheels(&libraries);
    let core = wheels.iter().position(|wheel| wheel.file == CORE_WHEEL).expect("core");
    // Added after RECORD was written, so RECORD does not mention it either way.
    wheels[core].entries.insert(0, entry("_rocm_sdk_core/lib/libcore.so.1", "libcore.so", 0o120_777));
    let report = verify(&fixture, &wheels);
    assert_eq!(
        violations(&report),
        [(CORE_WHEEL.to_owned(), Some("_rocm_sdk_core/lib/libcore.so.1".to_owned()), Check::Symlink)]
    );
}

#[test]
fn pin_to_another_version_of_a_set_member() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let mut wheels = good_wheels(&libraries);
    let device = wheels.iter().position(|wheel| wheel.file == DEVICE_WHEEL).expect("device");
    wheels[device] = wheel(
        "rocm_sdk_device_gfx90a",
        vec![entry("_rocm_sdk_libraries/.devel_links/gfx90a.json", "{}", 0o644)],
        &["rocm-sdk-libraries==0.9"],
    );
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(DEVICE_WHEEL.to_owned(), None, Check::Pin)]);
}

#[test]
fn xz_devel_tarball_elf_files_are_checked() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let runpath_dir = fixture.build.join("runpath");
    fs_err::create_dir_all(&runpath_dir).expect("create dir");
    let with_runpath = build_libraries(&runpath_dir, &[BLAS_RPATH, "-Wl,--enable-new-dtags"]);
    let devel_lib = "_rocm_sdk_devel/lib/libblas.so";
    let tar = tar_bytes(&[("_rocm_sdk_devel/", TarMember::Dir), (devel_lib, TarMember::File(&with_runpath.blas))]);
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&tar).expect("compress");
    let devel_tar_xz = xz.finish().expect("finish xz");
    let mut wheels = good_wheels(&libraries);
    let devel = wheels.iter().position(|wheel| wheel.file == DEVEL_WHEEL).expect("devel");
    wheels[devel] = wheel(
        "rocm_sdk_devel",
        vec![
            entry("rocm_sdk_devel/__init__.py", "", 0o644),
            entry("rocm_sdk_devel/_devel.tar.xz", devel_tar_xz, 0o644),
        ],
        &["rocm-sdk-core==1.0"],
    );
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(DEVEL_WHEEL.to_owned(), Some(devel_lib.to_owned()), Check::Rpath)]);
    let devel = report.packages.iter().find(|package| package.file == DEVEL_WHEEL).expect("devel");
    assert_eq!(devel.n_elf_files, 1);
}

#[test]
fn identical_copies_in_family_folders_are_one_package() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let wheels = good_wheels(&libraries);
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

/// An RPATH long enough that every layout must grow.
const LONG_RPATH: &str = "$ORIGIN/../../_rocm_sdk_core/lib:$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib:\
                          $ORIGIN/../../_rocm_sdk_core/lib/rocm_sysdeps/lib:$ORIGIN/../../_rocm_sdk_core/lib/host-math/lib";

fn set_rpath(path: &Path) -> Vec<u8> {
    let edit = packager::elf::plan_set_rpath(path, LONG_RPATH).expect("plan the RPATH edit");
    packager::elf::apply_edit_in_place(path, &edit).expect("apply the RPATH edit");
    fs_err::read(path).expect("read patched file")
}

#[test]
fn layouts_grown_by_the_elf_work_pass() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let grown = fixture.build.join("grown");
    fs_err::create_dir_all(&grown).expect("create dir");
    // A short DT_RUNPATH becomes a long DT_RPATH: the dynamic string table must move.
    build_libraries(&grown, &["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"]);
    let blas = set_rpath(&grown.join("libblas.so"));
    let main = "int main(void) { return 0; }\n";
    let tool = support::executable(&grown, "tool", main, &["-no-pie", "-fno-pie", "-Wl,-rpath,$ORIGIN"]);
    let tool = set_rpath(&tool);
    let mut wheels = good_wheels(&libraries);
    let libraries_index = wheels.iter().position(|wheel| wheel.file == LIBRARIES_WHEEL).expect("libraries");
    wheels[libraries_index] = wheel(
        "rocm_sdk_libraries",
        vec![entry("_rocm_sdk_libraries/__init__.py", "", 0o644), entry(BLAS, blas, 0o755)],
        &["rocm-sdk-core==1.0"],
    );
    let core = wheels.iter().position(|wheel| wheel.file == CORE_WHEEL).expect("core");
    wheels[core] = wheel(
        "rocm_sdk_core",
        vec![
            entry("_rocm_sdk_core/__init__.py", "", 0o644),
            entry("_rocm_sdk_core/lib/libcore.so", libraries.core.clone(), 0o755),
            entry("_rocm_sdk_core/bin/tool", tool, 0o755),
        ],
        &[],
    );
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [], "{report:#?}");
    assert_eq!(report.n_warnings(), 0, "{report:#?}");
}
