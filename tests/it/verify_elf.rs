//! `verify --dist` on broken ELF files: search paths (DT_RUNPATH, absolute entries),
//! libraries that resolve nowhere, tables outside every PT_LOAD, launchers, the glibc floor,
//! and layouts grown by the packager's own ELF code that must pass.

use std::path::Path;
use std::process::Command;

use super::*;

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
    let tool = support::executable(&fixture.build, "tool", "int main(void) { return 0; }\n", &["-pie", "-fPIE"]);
    let mut bytes = fs_err::read(tool).expect("read tool");
    break_phdr(&mut bytes);
    let mut wheels = default_wheels(&fixture);
    let core = position(&wheels, CORE_WHEEL);
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
fn launcher_target_must_exist() {
    let fixture = fixture();
    let libraries = build_libraries(&fixture.build, &default_blas_flags());
    let template = packager::output::launcher::LauncherTemplate::compile(&fixture.build).expect("compile the launcher");
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
    let core = position(&wheels, CORE_WHEEL);
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
    let core = position(&wheels, CORE_WHEEL);
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
fn glibc_floor_agrees_with_auditwheel() {
    let fixture = fixture();
    let report = verify(&fixture, &default_wheels(&fixture));
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

/// An RPATH long enough that every layout must grow.
const LONG_RPATH: &str = "$ORIGIN/../../_rocm_sdk_core/lib:$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib:\
                          $ORIGIN/../../_rocm_sdk_core/lib/rocm_sysdeps/lib:$ORIGIN/../../_rocm_sdk_core/lib/host-math/lib";

fn set_rpath(path: &Path) -> Vec<u8> {
    let edit = elf_rpath::plan_set_rpath(path, LONG_RPATH).expect("plan the RPATH edit");
    elf_rpath::apply_edit_in_place(path, &edit).expect("apply the RPATH edit");
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
    let libraries_index = position(&wheels, LIBRARIES_WHEEL);
    wheels[libraries_index] = wheel(
        "rocm_sdk_libraries",
        vec![entry("_rocm_sdk_libraries/__init__.py", "", 0o644), entry(BLAS, blas, 0o755)],
        &["rocm-sdk-core==1.0"],
    );
    let core = position(&wheels, CORE_WHEEL);
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

/// Sets DT_STRSZ of a real library so the dynamic string table runs one byte past the end
/// of the PT_LOAD that holds its start; returns the new size.
fn stretch_string_table(bytes: &mut [u8]) -> u64 {
    let elf = goblin::elf::Elf::parse(bytes).expect("parse library");
    let dynamic = elf.dynamic.as_ref().expect("a shared library has a dynamic section");
    let strtab = dynamic.info.strtab as u64;
    let load = elf
        .program_headers
        .iter()
        .find(|header| {
            header.p_type == goblin::elf::program_header::PT_LOAD
                && strtab >= header.p_vaddr
                && strtab < header.p_vaddr + header.p_filesz
        })
        .expect("DT_STRTAB is in a PT_LOAD");
    let strsz = load.p_vaddr + load.p_filesz - strtab + 1;
    let index = dynamic.dyns.iter().position(|entry| entry.d_tag == goblin::elf::dynamic::DT_STRSZ).expect("DT_STRSZ");
    let section = elf
        .program_headers
        .iter()
        .find(|header| header.p_type == goblin::elf::program_header::PT_DYNAMIC)
        .expect("PT_DYNAMIC");
    let at = section.p_offset as usize + index * 16 + 8;
    bytes[at..at + 8].copy_from_slice(&strsz.to_le_bytes());
    strsz
}

#[test]
fn string_table_running_past_its_load() {
    let fixture = fixture();
    let mut libraries = build_libraries(&fixture.build, &default_blas_flags());
    let strsz = stretch_string_table(&mut libraries.blas);
    let report = verify(&fixture, &good_wheels(&libraries));
    assert_violations(
        &report,
        &[(LIBRARIES_WHEEL, Some(BLAS), Check::ElfStructure, "is not inside one PT_LOAD's file-backed range")],
    );
    let message = &report.violations().next().expect("one violation").message;
    assert!(message.contains(&format!("DT_STRSZ {strsz:#x}")), "{message}");
}
