//! Targets vs target ids (SPEC §6), device wheels, and the places where the
//! reference packager goes wrong with them, shown on the bundled example packaged for real.
//!
//! This module owns the shared builds (each example mode generated and packaged once per
//! test binary) and the checks that only read them. Children: `install` (real pip in fresh
//! venvs), `cli` (the `xtask` binary as a child: reproducibility across directory order,
//! completeness), `elf_edits` (a non-PIE executable through the pipeline; patched files
//! need no second edit), `foreign_machines` (i386 and aarch64 libraries in an x86_64
//! build are copied untouched), `devel_rpath` (devel-only ELF files: DT_RPATH, removals
//! reported), `verify` (`verify_dist` on a hand-broken copy), `owners` (two targets in one
//! owner's device wheel), `kfd` (the sdist's choice from each recorded KFD topology, by
//! pip and uv, legacy and kpack-split).

#[path = "targets_cli.rs"]
pub(crate) mod cli;
#[path = "targets_devel.rs"]
mod devel_rpath;
#[path = "targets_elf.rs"]
mod elf_edits;
#[path = "targets_foreign.rs"]
mod foreign_machines;
#[path = "targets_install.rs"]
mod install;
#[path = "targets_kfd.rs"]
mod kfd;
#[path = "targets_owners.rs"]
mod owners;
#[path = "targets_verify.rs"]
mod verify;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use diagnostic::Diagnostic;
use example_artifacts::DEVICE_TARGET_IDS;
use sha2::{Digest, Sha256};

use crate::support;

pub const VERSION: &str = "7.12.0.dev0";

/// One example mode, generated and packaged with the library's defaults.
pub struct Build {
    pub artifacts: PathBuf,
    pub dist: PathBuf,
    pub report: packager::Report,
}

/// The example of one mode, packaged once per test binary under `target/tmp/targets/`
/// (wiped first, so a run never sees an earlier run's output). Tests only read it.
pub fn build(kpack_split: bool) -> &'static Build {
    static LEGACY: OnceLock<Build> = OnceLock::new();
    static KPACK_SPLIT: OnceLock<Build> = OnceLock::new();
    let (cell, mode) = if kpack_split { (&KPACK_SPLIT, "kpack-split") } else { (&LEGACY, "legacy") };
    cell.get_or_init(|| {
        let root = support::target_tmp().join("targets").join(mode);
        if root.exists() {
            fs_err::remove_dir_all(&root).expect("remove the previous run's build");
        }
        fs_err::create_dir_all(&root).expect("create the build dir");
        let artifacts = support::write_example(&root, kpack_split);
        let dist = root.join("dist");
        let report = packager::package(&support::package_config(&artifacts, &root), &packager::Silent)
            .expect("package the example");
        Build { artifacts, dist, report }
    })
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Every `*.whl` directly in `dist`, sorted.
pub fn wheels(dist: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs_err::read_dir(dist)
        .expect("read dist")
        .map(|entry| entry.expect("dist entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    found.sort();
    found
}

pub fn file_name(path: &Path) -> String {
    path.file_name().expect("a file name").to_string_lossy().into_owned()
}

/// Member name → (bytes, unix mode) of a wheel, directory entries left out.
pub fn wheel_entries(wheel: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut archive = zip::ZipArchive::new(fs_err::File::open(wheel).expect("open wheel")).expect("a zip file");
    let mut members = BTreeMap::new();
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).expect("read member");
        if member.is_dir() {
            continue;
        }
        let mode = member.unix_mode().expect("wheel members carry unix modes");
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).expect("inflate member");
        members.insert(member.name().expect("UTF-8 member name").into_owned(), (bytes, mode));
    }
    members
}

/// Member name → bytes of a wheel (directory entries left out).
pub fn wheel_members(wheel: &Path) -> BTreeMap<String, Vec<u8>> {
    wheel_entries(wheel).into_iter().map(|(name, (bytes, _))| (name, bytes)).collect()
}

/// The wheel file of a distribution in `dist`: `rocm_sdk_device_gfx90a` → its `.whl`.
pub fn wheel_of(dist: &Path, normalized_name: &str) -> PathBuf {
    let prefix = format!("{normalized_name}-{VERSION}-");
    let matching: Vec<PathBuf> = wheels(dist).into_iter().filter(|path| file_name(path).starts_with(&prefix)).collect();
    assert_eq!(matching.len(), 1, "expected one {prefix}*.whl in {}: {matching:?}", dist.display());
    matching.into_iter().next().expect("one wheel")
}

/// In which order [`copy_tree`] creates the entries of each directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreationOrder {
    Ascending,
    Descending,
}

/// Copies `source` to `dest` (which must not exist): files with their modes, symlinks as
/// symlinks, each directory's entries created in `order`, depth first.
pub fn copy_tree(source: &Path, dest: &Path, order: CreationOrder) {
    fs_err::create_dir(dest).expect("create copy dir");
    let mut entries: Vec<_> = fs_err::read_dir(source).expect("read dir").map(|entry| entry.expect("entry")).collect();
    entries.sort_by_key(|entry| entry.file_name());
    if order == CreationOrder::Descending {
        entries.reverse();
    }
    for entry in entries {
        let from = entry.path();
        let to = dest.join(entry.file_name());
        let file_type = entry.file_type().expect("file type");
        if file_type.is_symlink() {
            std::os::unix::fs::symlink(fs_err::read_link(&from).expect("readlink"), &to).expect("symlink");
        } else if file_type.is_dir() {
            copy_tree(&from, &to, order);
        } else {
            // `std::fs::copy` carries the permission bits over.
            fs_err::copy(&from, &to).expect("copy file");
        }
    }
}

/// The existing basedirs of an artifact: its manifest's prefixes that were built.
pub fn basedirs(artifact: &Path) -> Vec<PathBuf> {
    let manifest = fs_err::read_to_string(artifact.join("artifact_manifest.txt")).expect("artifact manifest");
    manifest
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| artifact.join(line))
        .filter(|dir| dir.is_dir())
        .collect()
}

/// Every regular file below `dir`, as (path relative to `dir` with `/`, absolute path), sorted.
pub fn files_below(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in fs_err::read_dir(&current).expect("read dir") {
            let path = entry.expect("entry").path();
            let metadata = fs_err::symlink_metadata(&path).expect("stat");
            if metadata.is_dir() {
                stack.push(path);
            } else if metadata.is_file() {
                let rel = path.strip_prefix(dir).expect("below dir").to_string_lossy().into_owned();
                found.push((rel, path));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn one_device_wheel_per_target_with_code_objects_byte_for_byte() {
    let build = build(true);
    let device_wheels: Vec<String> = wheels(&build.dist)
        .iter()
        .map(|path| file_name(path))
        .filter(|name| name.starts_with("rocm_sdk_device_"))
        .collect();
    assert_eq!(
        device_wheels,
        [
            format!("rocm_sdk_device_gfx1030-{VERSION}-py3-none-linux_x86_64.whl"),
            format!("rocm_sdk_device_gfx1250-{VERSION}-py3-none-linux_x86_64.whl"),
            format!("rocm_sdk_device_gfx90a-{VERSION}-py3-none-linux_x86_64.whl"),
        ]
    );
    let mut n_code_objects = 0;
    for (name, target_id) in DEVICE_TARGET_IDS {
        let target = target_id.split(':').next().expect("a base target");
        let members = wheel_members(&wheel_of(&build.dist, &format!("rocm_sdk_device_{target}")));
        let metadata =
            String::from_utf8_lossy(&members[&format!("rocm_sdk_device_{target}-{VERSION}.dist-info/METADATA")])
                .into_owned();
        assert!(metadata.contains(&format!("Requires-Dist: rocm-sdk-libraries=={VERSION}\n")), "{metadata}");
        let artifact = build.artifacts.join(format!("{name}_lib_{target_id}"));
        for basedir in basedirs(&artifact) {
            for (rel, source) in files_below(&basedir) {
                let bytes = fs_err::read(&source).expect("read source");
                let member = format!("_rocm_sdk_libraries/{rel}");
                let shipped = members.get(&member).unwrap_or_else(|| panic!("{member} is not in the {target} wheel"));
                let machine = goblin::elf::Elf::parse(&bytes).ok().map(|elf| elf.header.e_machine);
                if machine == Some(goblin::elf::header::EM_AMDGPU) {
                    // A code object for another machine is copied untouched (SPEC §6).
                    assert_eq!(sha256_hex(shipped), sha256_hex(&bytes), "{member} changed on its way into the wheel");
                    n_code_objects += 1;
                } else if machine.is_none() {
                    assert_eq!(shipped, &bytes, "data file {member} changed");
                } else {
                    // The host `.so` gets the device RPATH (SPEC §2), so only its ELF-ness is kept.
                    let elf = goblin::elf::Elf::parse(shipped).expect("shipped library is ELF");
                    assert!(!elf.rpaths.is_empty() && elf.runpaths.is_empty(), "{member}: {:?}", elf.rpaths);
                }
            }
        }
    }
    // `.co` and `.hsaco` of each of the four device artifacts.
    assert_eq!(n_code_objects, 2 * DEVICE_TARGET_IDS.len());
}

/// Member paths (dist-info excluded: each wheel's is its own by name) → the wheels that ship them.
fn member_owners(dist: &Path) -> BTreeMap<String, Vec<String>> {
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for wheel in wheels(dist) {
        for member in wheel_members(&wheel).into_keys() {
            let top = member.split('/').next().unwrap_or_default();
            if !top.ends_with(".dist-info") {
                owners.entry(member).or_default().push(file_name(&wheel));
            }
        }
    }
    owners
}

/// Every member of every wheel, device wheels included, is deflated only where deflate
/// shrinks it by at least 1 %, and stored otherwise (SPEC §5): the device wheels' kpack
/// archives and small tables are stored. Python's zipfile reads every member back.
#[test]
fn members_deflate_only_when_it_gains() {
    let build = build(true);
    let mut stored_in_device_wheels = 0;
    for wheel in wheels(&build.dist) {
        let mut archive = zip::ZipArchive::new(fs_err::File::open(&wheel).expect("open wheel")).expect("zip");
        for index in 0..archive.len() {
            let member = archive.by_index_raw(index).expect("member");
            let name = member.name().map(|name| name.to_string()).unwrap_or_default();
            let (size, coded) = (member.size(), member.compressed_size());
            match member.compression() {
                zip::CompressionMethod::Stored => {
                    assert_eq!(coded, size, "{name}");
                    stored_in_device_wheels += usize::from(file_name(&wheel).starts_with("rocm_sdk_device_"));
                }
                zip::CompressionMethod::Deflated => assert!(coded * 100 <= size * 99, "{name}: {size} → {coded}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        let test =
            "import sys, zipfile; bad = zipfile.ZipFile(sys.argv[1]).testzip(); sys.exit(bad and 'bad member: ' + bad)";
        support::run(std::process::Command::new("python3").args(["-c", test]).arg(&wheel));
    }
    assert!(stored_in_device_wheels > 0, "no device wheel stores anything");
}

#[test]
fn no_member_path_in_two_wheels() {
    for kpack_split in [false, true] {
        let build = build(kpack_split);
        // The example itself has no clash: overrides come only from `add_clashes`.
        assert!(build.report.overrides.is_empty(), "{:?}", build.report.overrides);
        let owners = member_owners(&build.dist);
        let shared: Vec<(&String, &Vec<String>)> = owners.iter().filter(|(_, wheels)| wheels.len() > 1).collect();
        assert!(shared.is_empty(), "kpack_split={kpack_split}: member paths shipped by two wheels: {shared:#?}");
        assert!(owners.len() > 50, "kpack_split={kpack_split}: suspiciously few members ({})", owners.len());
    }
}

#[test]
fn device_wheels_add_only_their_own_files() {
    let build = build(true);
    for target in ["gfx1030", "gfx90a"] {
        let wheel = wheel_of(&build.dist, &format!("rocm_sdk_device_{target}"));
        let members = wheel_members(&wheel);
        let dist_info = format!("rocm_sdk_device_{target}-{VERSION}.dist-info/");
        for member in members.keys() {
            assert!(
                member.starts_with("_rocm_sdk_libraries/") || member.starts_with(&dist_info),
                "{member} is outside the libraries overlay"
            );
            assert!(!member.ends_with("/__init__.py"), "{member}: the libraries wheel owns the package");
            assert!(!member.contains("/_dist_info"), "{member}: the shared _dist_info is not a device's");
        }
        let links: serde_json::Value =
            serde_json::from_slice(&members[&format!("_rocm_sdk_libraries/.devel_links/{target}.json")])
                .expect("devel links manifest is JSON");
        assert_eq!(links["version"], VERSION);
        let device_module = format!("_rocm_sdk_libraries/_device_{target}.py");
        let values = device_module_values(&members[&device_module]);
        assert_eq!(values, serde_json::json!([VERSION, target, "rocm_sdk_libraries"]), "{device_module}");
        // Every file the wheel adds, the manifest and the metadata module included, is
        // mirrored into the devel tree, from `_rocm_sdk_devel/{relpath}` back up to
        // site-packages and into the libraries dir.
        let added: BTreeSet<&str> =
            members.keys().filter_map(|member| member.strip_prefix("_rocm_sdk_libraries/")).collect();
        let links = links["links"].as_array().expect("links");
        let listed: BTreeSet<&str> = links.iter().map(|link| link["relpath"].as_str().expect("relpath")).collect();
        assert_eq!(listed, added, "rocm-sdk-device-{target}");
        assert_eq!(listed.len(), links.len(), "each file once");
        assert!(listed.contains(format!("_device_{target}.py").as_str()));
        for link in links {
            let relpath = link["relpath"].as_str().expect("relpath");
            let up = "../".repeat(relpath.split('/').count());
            assert_eq!(link["target"], format!("{up}_rocm_sdk_libraries/{relpath}"));
        }
    }
    // The libraries wheel keeps the package the device wheels overlay.
    let libraries = wheel_members(&wheel_of(&build.dist, "rocm_sdk_libraries"));
    assert!(libraries.contains_key("_rocm_sdk_libraries/__init__.py"));
}

/// `__version__`, `TARGET` and `LIBRARIES_PY_PACKAGE_NAME` of a device wheel's metadata
/// module (SPEC §2), as Python evaluates it.
fn device_module_values(source: &[u8]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("device.py");
    fs_err::write(&path, source).expect("write the device module");
    let code = "import json, runpy, sys\n\
        values = runpy.run_path(sys.argv[1])\n\
        print(json.dumps([values[name] for name in ('__version__', 'TARGET', 'LIBRARIES_PY_PACKAGE_NAME')]))";
    let printed = support::run(std::process::Command::new("python3").args(["-c", code]).arg(&path));
    serde_json::from_str(&printed).expect("JSON from python3")
}

#[test]
fn verify_passes_on_the_real_output() {
    for kpack_split in [false, true] {
        let report = release_gate::verify_dist(&build(kpack_split).dist).expect("verify reads the dist");
        let violations: Vec<_> = report.packages.iter().flat_map(|package| &package.violations).collect();
        assert!(violations.is_empty(), "kpack_split={kpack_split}: {violations:#?}");
        // Core, profiler, the sdist, and libraries + devel per legacy family or libraries,
        // devel and three device wheels (one per owner) in kpack-split mode.
        assert_eq!(report.packages.len(), if kpack_split { 8 } else { 7 }, "{:?}", report.packages);
        // Member names Windows cannot extract are reported, without failing (SPEC §6).
        let mut windows_names: Vec<&str> = report
            .packages
            .iter()
            .flat_map(|package| &package.warnings)
            .filter(|warning| warning.check == release_gate::Check::WindowsName)
            .filter_map(|warning| warning.path.as_deref())
            .collect();
        windows_names.sort();
        let expected: &[&str] = if kpack_split {
            &[
                "_rocm_sdk_libraries/.kpack/blas_lib_gfx90a:xnack+.kpack",
                "_rocm_sdk_libraries/.kpack/blas_lib_gfx90a:xnack-.kpack",
                "_rocm_sdk_libraries/.kpack/rand_lib_gfx90a:xnack+.kpack",
            ]
        } else {
            &[]
        };
        assert_eq!(windows_names, expected);
    }
}

/// Sorted name order decides a clash, whatever order the directory lists the artifacts
/// in: the later artifact wins, and the report says so.
#[test]
fn later_artifact_wins_a_clash_and_is_reported() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = temp.path().join("artifacts");
    copy_tree(&build(true).artifacts, &artifacts, CreationOrder::Descending);
    add_clashes(&artifacts);
    let dist = temp.path().join("dist");
    let report =
        packager::package(&support::package_config(&artifacts, temp.path()), &packager::Silent).expect("package");
    let overrides: Vec<(String, String, String)> =
        report.overrides.iter().map(|o| (o.rel.as_str().to_owned(), o.winner.clone(), o.loser.clone())).collect();
    for (rel, winner, loser, _) in CLASHES {
        assert!(
            overrides.contains(&(rel.to_owned(), winner.to_owned(), loser.to_owned())),
            "{rel}: {winner} over {loser} is not in {overrides:#?}"
        );
    }
    let core = wheel_members(&wheel_of(&dist, "rocm_sdk_core"));
    assert_eq!(core["_rocm_sdk_core/share/rocm/clash.txt"], b"from core-runtime_lib_generic\n");
    let device = wheel_members(&wheel_of(&dist, "rocm_sdk_device_gfx90a"));
    assert_eq!(device["_rocm_sdk_libraries/lib/rocblas/library/TensileManifest.txt"], b"from blas_lib_gfx90a:xnack-\n");
}

/// (relpath, winner, loser, prefix of both artifacts): one clash in core, one between the
/// two xnack variants of one device target.
pub const CLASHES: [(&str, &str, &str, [&str; 2]); 2] = [
    (
        "share/rocm/clash.txt",
        "core-runtime_lib_generic",
        "core-hip_lib_generic",
        ["core/ROCR-Runtime/stage", "core/clr/stage"],
    ),
    (
        "lib/rocblas/library/TensileManifest.txt",
        "blas_lib_gfx90a:xnack-",
        "blas_lib_gfx90a:xnack+",
        ["math-libs/BLAS/rocBLAS/stage", "math-libs/BLAS/rocBLAS/stage"],
    ),
];

/// Writes each clash of [`CLASHES`] into both artifacts, the winner first, so an order
/// taken from creation time or `readdir` would likely pick the loser.
pub fn add_clashes(artifacts: &Path) {
    for (rel, winner, loser, prefixes) in CLASHES {
        for (artifact, prefix) in [winner, loser].into_iter().zip(prefixes) {
            let path = artifacts.join(artifact).join(prefix).join(rel);
            fs_err::create_dir_all(path.parent().expect("parent")).expect("create dir");
            fs_err::write(&path, format!("from {artifact}\n")).expect("write clash");
        }
    }
}

/// An AMDGPU code object at `out`, linked with `ld.lld -shared` and the given SONAME.
fn amdgpu_code_object(scratch: &Path, out: &Path, soname: &str) {
    let (source, object) = (scratch.join("blob.s"), scratch.join("blob.o"));
    fs_err::write(&source, "\t.text\n\ts_endpgm\n").expect("write assembly");
    support::run(
        support::tool("llvm-mc")
            .args(["-triple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-filetype=obj", "-o"])
            .arg(&object)
            .arg(&source),
    );
    support::run(support::tool("ld.lld").args(["-shared", "-soname", soname, "-o"]).arg(out).arg(&object));
}

/// SPEC §6 "Never edit what is not ours to edit": an AMDGPU code object named like a host
/// library (with a SONAME that differs from its name, which would make a host library an
/// alias), one with exec bits in `bin/`, and a link to the first are all copied untouched.
#[test]
fn foreign_elf_files_are_copied_whatever_their_name() {
    use std::os::unix::fs::PermissionsExt;
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = temp.path().join("artifacts");
    copy_tree(&build(true).artifacts, &artifacts, CreationOrder::Ascending);
    let stage = artifacts.join("core-hip_lib_generic/core/clr/stage");
    amdgpu_code_object(temp.path(), &stage.join("lib/libamdgpu_blob.so.1"), "libamdgpu_blob.so");
    std::os::unix::fs::symlink("libamdgpu_blob.so.1", stage.join("lib/libamdgpu_blob.so")).expect("symlink");
    fs_err::create_dir_all(stage.join("bin")).expect("bin dir");
    let runner = stage.join("bin/amdgpu_kernel_runner");
    fs_err::copy(stage.join("lib/libamdgpu_blob.so.1"), &runner).expect("copy code object");
    fs_err::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let original = sha256_hex(&fs_err::read(&runner).expect("read code object"));

    let dist = temp.path().join("dist");
    let report =
        packager::package(&support::package_config(&artifacts, temp.path()), &packager::Silent).expect("package");
    let core = wheel_of(&dist, "rocm_sdk_core");
    let members = wheel_members(&core);
    for member in ["lib/libamdgpu_blob.so.1", "lib/libamdgpu_blob.so", "bin/amdgpu_kernel_runner"] {
        let shipped =
            members.get(&format!("_rocm_sdk_core/{member}")).unwrap_or_else(|| panic!("{member} not in core"));
        assert_eq!(sha256_hex(shipped), original, "{member} was edited");
    }
    let findings: Vec<_> = report.findings.iter().filter(|finding| finding.path.as_str().contains("amdgpu_")).collect();
    assert!(findings.is_empty(), "a foreign ELF file was aliased, dropped or patched: {findings:?}");
    let mut archive = zip::ZipArchive::new(fs_err::File::open(&core).expect("open core")).expect("zip");
    let runner_mode = archive.by_name("_rocm_sdk_core/bin/amdgpu_kernel_runner").expect("member").unix_mode();
    assert_eq!(runner_mode.map(|mode| mode & 0o111), Some(0o111), "exec bits survive");
}

/// SPEC §2, §6 "Same name, same bytes": the two-family legacy build writes one flat dist,
/// one `rocm` sdist for both families and a devel wheel named after each family.
#[test]
fn legacy_families_share_one_flat_dist() {
    let dist = &build(false).dist;
    let mut names: Vec<String> = fs_err::read_dir(dist)
        .expect("read dist")
        .map(|entry| entry.expect("entry"))
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| {
            assert!(entry.file_type().expect("file type").is_file(), "{:?} is not a file", entry.path());
            entry.file_name().to_string_lossy().into_owned()
        })
        .collect();
    names.sort();
    let tag = "py3-none-linux_x86_64";
    assert_eq!(
        names,
        [
            format!("rocm-{VERSION}.tar.gz"),
            format!("rocm_profiler-{VERSION}-{tag}.whl"),
            format!("rocm_sdk_core-{VERSION}-{tag}.whl"),
            format!("rocm_sdk_devel_gfx110x_all-{VERSION}-{tag}.whl"),
            format!("rocm_sdk_devel_gfx94x_dcgpu-{VERSION}-{tag}.whl"),
            format!("rocm_sdk_libraries_gfx110x_all-{VERSION}-{tag}.whl"),
            format!("rocm_sdk_libraries_gfx94x_dcgpu-{VERSION}-{tag}.whl"),
        ]
    );
}

/// A path that two wheels would both install is refused before anything is written
/// (SPEC §6: uninstalling either wheel would delete the other's file), between two device
/// wheels as between a device wheel and the libraries wheel it overlays.
#[test]
fn a_path_two_wheels_would_install_is_an_error() {
    let cases = [
        ("blas_lib_gfx1030", "lib/rocblas/library/Manifest.txt", "rocm-sdk-device-gfx1030 and rocm-sdk-device-gfx90a"),
        ("blas_lib_generic", "lib/librocblas.so.5", "rocm-sdk-libraries and rocm-sdk-device-gfx90a"),
    ];
    for (other_artifact, rel, wheels) in cases {
        let temp = tempfile::tempdir().expect("temp dir");
        let artifacts = temp.path().join("artifacts");
        copy_tree(&build(true).artifacts, &artifacts, CreationOrder::Ascending);
        let prefix = "math-libs/BLAS/rocBLAS/stage";
        for artifact in ["blas_lib_gfx90a:xnack+", other_artifact] {
            // The generic artifact already has its real library at that path.
            let path = artifacts.join(artifact).join(prefix).join(rel);
            if !path.exists() {
                fs_err::write(&path, format!("{artifact}\n")).expect("write the shared path");
            }
        }
        let dist = temp.path().join("dist");
        let error = packager::package(&support::package_config(&artifacts, temp.path()), &packager::Silent)
            .expect_err("two wheels must not ship one path");
        assert_eq!(error.to_string(), format!("_rocm_sdk_libraries/{rel} would be shipped by both {wheels}"));
        assert!(error.hint().is_some_and(|hint| hint.contains("one wheel")), "{:?}", error.hint());
        assert!(!dist.join(format!("rocm-{VERSION}.tar.gz")).exists(), "output written despite the error");
    }
}
