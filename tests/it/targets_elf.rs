//! ELF edits through the whole pipeline (SPEC §6 "A grown layout keeps the kernel's
//! rules"): a non-PIE executable whose RPATH outgrows its slot comes out with a first
//! `PT_LOAD` that is still not writable and runs from the venv it was installed into, and
//! no file the pipeline patched would be edited again.

use std::path::Path;
use std::process::Command;

use elf_rpath::EditStrategy;
use packager::plan::PlannedFile;

use super::{build, copy_tree, wheel_members, wheel_of, CreationOrder};
use crate::support;

const PROGRAM: &str = "bin/hipInfo-nopie";
const PROGRAM_C: &str = r#"#include <stdio.h>
const char *amdhip64_example_name(void);
const char *amdhip64_example_dependency(void);
int main(void) {
    printf("nopie uses %s via %s\n", amdhip64_example_name(), amdhip64_example_dependency());
    return 0;
}
"#;

/// `readelf -lWd` of `path`, failing on any warning.
fn readelf(path: &Path) -> String {
    let text = support::run(support::tool("readelf").arg("-lWd").arg(path));
    assert!(!text.contains("Warning") && !text.contains("Error"), "readelf complains:\n{text}");
    text
}

/// The flags column of the first `LOAD` line of `readelf -lW`.
fn first_load_flags(readelf_text: &str) -> String {
    let line = readelf_text.lines().find(|line| line.trim_start().starts_with("LOAD")).expect("a LOAD segment");
    // Type, Offset, VirtAddr, PhysAddr, FileSiz, MemSiz, then the flags up to Align.
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert!(fields.len() >= 8, "unexpected LOAD line: {line}");
    fields[6..fields.len() - 1].join(" ")
}

#[test]
fn non_pie_executable_grown_through_the_pipeline_still_runs() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = temp.path().join("artifacts");
    copy_tree(&build(true).artifacts, &artifacts, CreationOrder::Ascending);
    let stage = |artifact: &str, prefix: &str| artifacts.join(artifact).join(prefix);
    let hip_lib = stage("core-hip_lib_generic", "core/clr/stage").join("lib");
    let hsa_lib = stage("core-runtime_lib_generic", "core/ROCR-Runtime/stage").join("lib");
    let lzma_lib = stage("sysdeps_lib_generic", "third-party/sysdeps/linux/xz/stage").join("lib/rocm_sysdeps/lib");
    let bin = stage("core-hipinfo_run_generic", "core/hipInfo/stage").join("bin");
    let rpath_links: Vec<String> =
        [&hsa_lib, &lzma_lib].iter().map(|dir| format!("-Wl,-rpath-link,{}", dir.display())).collect();
    let scratch = temp.path().join("scratch");
    fs_err::create_dir(&scratch).expect("scratch dir");
    let program_c = scratch.join("hipInfo-nopie.c");
    fs_err::write(&program_c, PROGRAM_C).expect("write C source");
    let source = bin.join("hipInfo-nopie");
    // The library after the object that needs it, as linkers using --as-needed want.
    support::run(
        support::c_compiler()
            .args(["-no-pie", "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/../lib", "-o"])
            .arg(&source)
            .arg(&program_c)
            .arg(hip_lib.join("libamdhip64.so.7.1.0"))
            .args(&rpath_links),
    );
    let before = readelf(&source);
    assert!(before.contains("Elf file type is EXEC"), "not a non-PIE executable:\n{before}");
    assert_eq!(first_load_flags(&before), "R", "{before}");

    let config = support::package_config(&artifacts, temp.path());
    let dist = config.output_dir();
    let plan = packager::plan(&config, &packager::Silent).expect("plan");
    let core =
        plan.packages.iter().find(|package| package.names.distribution == "rocm-sdk-core").expect("core package");
    let planned = core.files.iter().find(|(rel, _)| rel.as_str() == PROGRAM).map(|(_, file)| file);
    match planned {
        Some(PlannedFile::PatchRpath { edit, .. }) => {
            assert_eq!(edit.strategy, EditStrategy::Grown, "the RPATH {} should not fit the old slot", edit.rpath);
        }
        other => panic!("{PROGRAM} is not planned as an RPATH edit: {other:?}"),
    }
    packager::package(&config, &packager::Silent).expect("package");

    let core_wheel = wheel_of(&dist, "rocm_sdk_core");
    let extracted = temp.path().join("hipInfo-nopie.extracted");
    fs_err::write(&extracted, &wheel_members(&core_wheel)[&format!("_rocm_sdk_core/{PROGRAM}")]).expect("extract");
    let after = readelf(&extracted);
    let flags = first_load_flags(&after);
    assert!(flags.starts_with('R') && !flags.contains('W'), "first PT_LOAD became writable ({flags}):\n{after}");
    assert!(after.contains("Library rpath: [$ORIGIN/../lib:"), "{after}");
    assert!(!after.contains("(RUNPATH)"), "{after}");

    let venv = support::fresh_venv(&temp.path().join("venv"));
    let core_wheel_arg = core_wheel.display().to_string();
    let output = support::pip_install(&venv, &dist, &["--no-deps", core_wheel_arg.as_str()], &[]);
    assert!(output.status.success(), "pip: {}", String::from_utf8_lossy(&output.stderr));
    let platform_dir = support::run(
        Command::new(venv.join("bin/python"))
            .args(["-c", "import os, _rocm_sdk_core; print(os.path.dirname(_rocm_sdk_core.__file__))"]),
    );
    let installed = Path::new(platform_dir.trim()).join(PROGRAM);
    let stdout = support::run(&mut Command::new(&installed));
    assert_eq!(stdout, "nopie uses example:amdhip64 via example:hsa-runtime64\n");
}

/// SPEC §6: "re-running on the output changes nothing". Every file the kpack-split build
/// patched, read back from its wheel, already has the RPATH the plan asks for.
#[test]
fn patched_files_in_the_wheels_need_no_second_edit() {
    let build = build(true);
    let plan =
        packager::plan(&support::package_config(&build.artifacts, &build.dist), &packager::Silent).expect("plan");
    let temp = tempfile::tempdir().expect("temp dir");
    let mut n_checked = 0;
    for package in &plan.packages {
        let platform_dir = package.names.platform_dir.as_str();
        let wheel_name = package.names.file_name_form();
        let patched: Vec<_> = package
            .files
            .iter()
            .filter_map(|(rel, file)| match file {
                PlannedFile::PatchRpath { edit, .. } => Some((rel, &edit.rpath)),
                _ => None,
            })
            .collect();
        if patched.is_empty() {
            continue;
        }
        let members = wheel_members(&wheel_of(&build.dist, &wheel_name));
        for (rel, rpath) in patched {
            let out = temp.path().join(format!("{n_checked}.elf"));
            fs_err::write(&out, &members[&format!("{platform_dir}/{rel}")]).expect("extract");
            let edit = elf_rpath::plan_set_rpath(&out, rpath).expect("plan the edit again");
            assert!(edit.is_unchanged(), "{} in {wheel_name} would be edited again: {edit:?}", rel.as_str());
            n_checked += 1;
        }
    }
    assert!(n_checked > 40, "only {n_checked} patched files");
}

/// `PT_LOAD` lines of `readelf -lW` as (offset, vaddr).
fn load_offsets_and_addresses(readelf_text: &str) -> Vec<(u64, u64)> {
    let hex = |field: &str| u64::from_str_radix(field.trim_start_matches("0x"), 16).expect("readelf prints hex");
    readelf_text
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| fields.first() == Some(&"LOAD"))
        .map(|fields| (hex(fields[1]), hex(fields[2])))
        .collect()
}

/// The kpack-split example's hipSPARSE keeps a 1.125 GiB hole in its address
/// space, as the kpack splitter leaves real ROCm libraries. The pipeline grows its RPATH
/// (the libraries wheel appends four entries) by a block and less than a page of alignment,
/// keeps every `PT_LOAD` congruent modulo the page size, and the install tests load it.
#[test]
fn a_kpack_split_library_with_an_address_space_hole_grows_by_its_block() {
    let build = build(true);
    let source = build.artifacts.join("blas_lib_generic/math-libs/BLAS/hipBLAS/stage/lib/libhipsparse.so.4");
    let before = readelf(&source);
    let hole_end = load_offsets_and_addresses(&before).iter().map(|(_, vaddr)| *vaddr).max().unwrap_or(0);
    assert_eq!(hole_end, example_artifacts::KPACK_HOLE_END, "the example lost its hole:\n{before}");
    let members = wheel_members(&wheel_of(&build.dist, "rocm_sdk_libraries"));
    let packed = &members["_rocm_sdk_libraries/lib/libhipsparse.so.4"];
    let temp = tempfile::tempdir().expect("temp dir");
    let out = temp.path().join("libhipsparse.so.4");
    fs_err::write(&out, packed).expect("extract");
    let original_len = fs_err::metadata(&source).expect("stat").len();
    let growth = packed.len() as u64 - original_len;
    assert!(growth > 0 && growth <= 64 << 10, "grew by {growth} bytes");
    let after = readelf(&out);
    let loads = load_offsets_and_addresses(&after);
    assert!(loads.iter().all(|(offset, vaddr)| offset % 4096 == vaddr % 4096), "{after}");
    assert!(loads.iter().any(|(_, vaddr)| *vaddr == example_artifacts::KPACK_HOLE_END), "{after}");
    assert!(after.contains("Library rpath: [$ORIGIN:$ORIGIN/../../_rocm_sdk_core/lib"), "{after}");
}
