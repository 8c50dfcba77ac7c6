//! SPEC §6 "Never edit what is not ours to edit", for CPU code: an i386 and an aarch64
//! shared library in an x86_64 build (another class, another machine) are copied into the
//! wheel byte for byte, without an error or a finding, while a host library beside them
//! still gets its RPATH rewritten; and `verify --dist` judges only the host library, so
//! the foreign ones' kept absolute RPATHs are no violation.

use std::path::Path;

use elf_rpath::ElfKind;
use packager::plan::FindingKind;

use super::{build, copy_tree, sha256_hex, wheel_of, CreationOrder};
use crate::support;

/// Where the libraries go: the generic rocBLAS artifact, shipped by `rocm-sdk-libraries`.
const LIB_DIR: &str = "blas_lib_generic/math-libs/BLAS/rocBLAS/stage/lib";
/// A build machine's directory, which the host library's RPATH loses and the foreign
/// libraries keep.
const ABSOLUTE_RPATH: &str = "/build/abs/lib";

/// A shared library for `triple` at `out`, assembled with `llvm-mc` and linked with
/// `ld.lld -m {emulation}`, with a SONAME and an absolute RPATH.
fn foreign_shared_lib(scratch: &Path, triple: &str, emulation: &str, soname: &str, out: &Path) {
    let (source, object) = (scratch.join(format!("{triple}.s")), scratch.join(format!("{triple}.o")));
    fs_err::write(&source, "\t.text\n\t.globl foreign\nforeign:\n\tret\n").expect("write assembly");
    support::run(
        support::tool("llvm-mc")
            .arg(format!("--triple={triple}"))
            .args(["-filetype=obj", "-o"])
            .arg(&object)
            .arg(&source),
    );
    support::run(
        support::tool("ld.lld")
            .args(["-shared", "-m", emulation, "--soname", soname, "-rpath", ABSOLUTE_RPATH, "-o"])
            .arg(out)
            .arg(&object),
    );
}

#[test]
fn libraries_for_other_machines_are_copied_untouched() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = temp.path().join("artifacts");
    copy_tree(&build(true).artifacts, &artifacts, CreationOrder::Ascending);
    let lib_dir = artifacts.join(LIB_DIR);
    let scratch = temp.path().join("scratch");
    fs_err::create_dir(&scratch).expect("scratch dir");
    // The aarch64 library's SONAME differs from its name: a host library would become an
    // alias and stay out of the wheel under this name.
    let foreign = [
        ("i386-linux-gnu", "elf_i386", "libforeign_i386.so.1", "libforeign_i386.so.1", (3, false)),
        ("aarch64-linux-gnu", "aarch64linux", "libforeign_aarch64.so.1", "libforeign_aarch64.so.1.2", (183, true)),
    ];
    let mut originals = Vec::new();
    for (triple, emulation, soname, file, (machine, is_64)) in foreign {
        let out = lib_dir.join(file);
        foreign_shared_lib(&scratch, triple, emulation, soname, &out);
        let info = elf_rpath::read_elf(&out).expect("read").expect("ELF");
        assert_eq!((info.machine, info.is_64, info.kind), (machine, is_64, ElfKind::SharedLibrary), "{triple}");
        originals.push((file, sha256_hex(&fs_err::read(&out).expect("read library"))));
    }
    let rpath = format!("-Wl,-rpath,{ABSOLUTE_RPATH}");
    support::shared_lib(&lib_dir, "libhost_neighbour.so", "int neighbour(void) { return 1; }\n", &[&rpath]);

    let config = support::package_config(&artifacts, temp.path());
    let dist = config.output_dir();
    let report = packager::package(&config, &packager::Silent).expect("foreign libraries must not fail the run");
    let wheel = wheel_of(&dist, "rocm_sdk_libraries");
    let mut archive = zip::ZipArchive::new(fs_err::File::open(&wheel).expect("open wheel")).expect("zip");
    for (file, original) in &originals {
        let member = format!("_rocm_sdk_libraries/lib/{file}");
        let mut entry = archive.by_name(&member).unwrap_or_else(|_| panic!("{member} is not in the wheel"));
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).expect("inflate");
        assert_eq!(&sha256_hex(&bytes), original, "{member} was edited");
        assert_eq!(entry.unix_mode().map(|mode| mode & 0o111), Some(0o111), "{member}: exec bits survive");
    }
    let foreign_findings: Vec<_> =
        report.findings.iter().filter(|finding| finding.path.as_str().contains("libforeign_")).collect();
    assert!(foreign_findings.is_empty(), "a foreign library was aliased, dropped or patched: {foreign_findings:?}");

    let mut entry = archive.by_name("_rocm_sdk_libraries/lib/libhost_neighbour.so").expect("host library");
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut entry, &mut bytes).expect("inflate");
    let elf = goblin::elf::Elf::parse(&bytes).expect("host library is ELF");
    // Only the libraries package's dependencies remain (SPEC §2 "RPATH dependencies").
    let expected: Vec<String> = ["lib", "lib/rocm_sysdeps/lib", "lib/host-math/lib", "lib/llvm/lib"]
        .iter()
        .map(|dir| format!("$ORIGIN/../../_rocm_sdk_core/{dir}"))
        .collect();
    assert_eq!(elf.rpaths, [expected.join(":")]);
    assert!(elf.runpaths.is_empty(), "{:?}", elf.runpaths);
    let removed = report.findings.iter().any(|finding| {
        finding.path.as_str() == "lib/libhost_neighbour.so"
            && finding.what == FindingKind::RpathRemoved { entries: vec![ABSOLUTE_RPATH.to_owned()] }
    });
    assert!(removed, "the host library's absolute entry is not reported: {:?}", report.findings);

    // verify --dist reads the foreign libraries as data, as the packager does: their
    // absolute RPATH is for a loader of another machine.
    let verified = release_gate::verify_dist(&dist).expect("verify reads the dist");
    let violations: Vec<_> = verified.violations().collect();
    assert!(violations.is_empty(), "{violations:#?}");
    let libraries = verified
        .packages
        .iter()
        .find(|package| package.file.starts_with("rocm_sdk_libraries-"))
        .expect("the libraries wheel is verified");
    let mut expected: Vec<String> =
        originals.iter().map(|(file, _)| format!("_rocm_sdk_libraries/lib/{file}")).collect();
    expected.sort();
    assert_eq!(libraries.foreign_elf_files, expected);
    assert!(libraries.n_elf_files > 0, "the host libraries are still checked");
}
