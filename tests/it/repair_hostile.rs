//! `repair` on its own output and on broken or hostile input (SPEC §11): a repaired wheel
//! repaired again gives the same bytes; the SDK's own wheels are refused by the set's
//! package names, and a project merely named `rocm_sdk_*` is not; what `verify --dist`
//! refuses in METADATA and WHEEL is refused at input in the gate's words; a truncated ELF
//! member and one whose `PT_DYNAMIC` claims 2 GiB are named by wheel and member, never by a
//! scratch file; RPATH entries with terminal escapes reach the report escaped; a wheel
//! built for another ROCm major is told so; a refusal leaves no directory behind.
//! (An installed SDK whose METADATA is a FIFO or RECORD `/dev/zero`: `repair_sdk_files`.)

use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;
use packager::repair::RepairError;

use super::{ext_wheel, extension_wheel, member_names, member_text, repair_into, sdk, EXT_C};
use crate::support;

/// The extension member of `wheel` (`ext.cpython-…so`).
fn extension_member(wheel: &Path) -> String {
    let names = member_names(wheel);
    names.into_iter().find(|name| name.ends_with(".so")).expect("the extension member")
}

/// A copy of `wheel` in `dir` with its members as `edit` leaves them, RECORD made right.
fn edited_copy(wheel: &Path, dir: &Path, edit: impl FnOnce(&mut Vec<support::WheelMember>)) -> PathBuf {
    fs_err::create_dir_all(dir).expect("mkdir");
    let copy = dir.join(wheel.file_name().expect("a file name"));
    fs_err::copy(wheel, &copy).expect("copy the wheel");
    support::rewrite_wheel(&copy, edit);
    copy
}

/// Every member of `wheel`, inflated.
fn members_of(wheel: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(fs_err::File::open(wheel).expect("open")).expect("zip");
    let mut members = std::collections::BTreeMap::new();
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).expect("member");
        let mut data = Vec::new();
        member.read_to_end(&mut data).expect("inflate");
        members.insert(member.name().expect("UTF-8 name").into_owned(), data);
    }
    members
}

/// `text` with a member's text replaced.
fn replace_text(members: &mut [support::WheelMember], suffix: &str, edit: impl Fn(&str) -> String) {
    let member = members.iter_mut().find(|(name, _, _)| name.ends_with(suffix)).expect("the member");
    member.1 = edit(&String::from_utf8_lossy(&member.1)).into_bytes();
}

#[test]
fn a_repaired_wheel_repaired_again_gives_the_same_bytes() {
    let work = tempfile::tempdir().expect("temp dir");
    let built = ext_wheel(work.path());
    let first = repair_into(std::slice::from_ref(&built), &sdk().dist, &work.path().join("once"), &[]).expect("repair");
    let once = first.wheels[0].output.clone();
    let sbom = "ext-1.0.dist-info/sboms/rocm-packager.cdx.json";
    assert!(member_names(&once).contains(&sbom.to_owned()), "the repaired wheel carries our bill of materials");

    let second = repair_into(std::slice::from_ref(&once), &sdk().dist, &work.path().join("twice"), &[])
        .expect("a wheel carrying our bill of materials is repaired: the earlier one is replaced");
    let twice = second.wheels[0].output.clone();
    assert_eq!(once.file_name(), twice.file_name());
    let (before, after) = (members_of(&once), members_of(&twice));
    let differing: Vec<&String> = before.keys().filter(|name| before.get(*name) != after.get(*name)).collect();
    assert!(differing.is_empty(), "members differ: {differing:?}");
    assert!(
        fs_err::read(&once).expect("read") == fs_err::read(&twice).expect("read"),
        "repairing a repaired wheel changes no byte"
    );
    assert!(second.wheels[0].dropped.contains(&sbom.to_owned()), "{:?}", second.wheels[0].dropped);
    // The document still names the wheel the files came from, edits and all.
    let document = member_text(&twice, sbom);
    let built_name = built.file_name().expect("a file name").to_string_lossy().into_owned();
    assert!(document.contains(&format!("\"wheel:{built_name}\"")), "{document}");
    assert!(document.contains("\"rocm-packager:edit\""), "{document}");
}

#[test]
fn the_sdks_own_wheels_are_refused_by_the_sets_names_and_a_lookalike_is_not() {
    let work = tempfile::tempdir().expect("temp dir");
    let sdk = sdk();
    let core = support::dist_names(&sdk.dist).into_iter().find(|name| name.starts_with("rocm_sdk_core-"));
    let core = sdk.dist.join(core.expect("the core wheel"));
    let dest = work.path().join("out");
    let error = repair_into(std::slice::from_ref(&core), &sdk.dist, &dest, &[]).expect_err("the core is the SDK's");
    assert!(matches!(&error, RepairError::OwnPackage { name, .. } if name == "rocm-sdk-core"), "{error}");
    assert!(error.to_string().contains("is the SDK's own package rocm-sdk-core"), "{error}");
    assert_eq!(error.path(), Some(core.as_path()));
    assert!(error.hint().is_some_and(|hint| hint.contains("install the SDK's wheels as they are")));
    assert!(!dest.exists(), "nothing is made for a refused repair");

    // A project of its own whose name starts like the SDK's is repaired as any other.
    let libraries = [
        sdk.site_packages.join("_rocm_sdk_core/lib/libamdhip64.so.7"),
        sdk.site_packages.join("_rocm_sdk_libraries/lib/librocblas.so.5"),
    ];
    let lookalike = extension_wheel("rocm_sdk_h5ext", EXT_C, &libraries, work.path());
    let report = repair_into(&[lookalike], &sdk.dist, &dest, &[]).expect("not a package of the set");
    assert_eq!(report.wheels[0].requirements_added.len(), 2, "{:?}", report.wheels[0].requirements_added);
}

/// The gate's findings on `wheel` alone, of its METADATA and WHEEL.
fn gate_metadata_findings(wheel: &Path, dir: &Path) -> Vec<String> {
    fs_err::create_dir_all(dir).expect("mkdir");
    fs_err::copy(wheel, dir.join(wheel.file_name().expect("a file"))).expect("copy");
    let report = release_gate::verify_dist(dir).expect("verify reads the dist");
    let findings = report.packages.into_iter().flat_map(|package| package.violations);
    findings
        .filter(|finding| finding.check == release_gate::Check::Metadata)
        .map(|finding| format!("{}: {}", finding.path.unwrap_or_default(), finding.message))
        .collect()
}

#[test]
fn what_the_gate_refuses_in_metadata_is_refused_at_input_in_its_words() {
    let work = tempfile::tempdir().expect("temp dir");
    let built = ext_wheel(work.path());
    // (case, member, text replaced, replacement, the gate's words)
    let cases = [
        (
            "two-names",
            "/METADATA",
            "Name: ext\n",
            "Name: ext\nName: other\n",
            "Name appears 2 times (`ext`, `other`); it may appear once",
        ),
        (
            "other-name",
            "/METADATA",
            "Name: ext\n",
            "Name: other\n",
            "Name `other` does not match the file name's `ext`",
        ),
        (
            "purelib",
            "/WHEEL",
            "Root-Is-Purelib: false",
            "Root-Is-Purelib: true",
            "Root-Is-Purelib is `true` on a platform wheel",
        ),
    ];
    for (case, member, from, to, words) in cases {
        let broken = edited_copy(&built, &work.path().join(case), |members| {
            replace_text(members, member, |text| text.replace(from, to))
        });
        let dest = work.path().join(format!("{case}-out"));
        let error = repair_into(std::slice::from_ref(&broken), &sdk().dist, &dest, &[]).expect_err("refused");
        let text = error.to_string();
        assert!(matches!(error, RepairError::BadWheel { .. }), "{case}: {text}");
        assert!(text.contains(words), "{case}: {text}");
        assert_eq!(error.path(), Some(broken.as_path()), "{case}");
        // Each reason is the gate's own finding on the same wheel, word for word.
        let gate = gate_metadata_findings(&broken, &work.path().join(format!("{case}-gate")));
        let same: Vec<&String> = gate.iter().filter(|finding| text.contains(finding.as_str())).collect();
        assert!(same.iter().any(|finding| finding.contains(words)), "{case}: {text}\ngate: {gate:#?}");
        assert!(!dest.exists(), "{case}: a refused repair leaves no directory");
    }
}

#[test]
fn a_refused_repair_leaves_no_empty_dist() {
    let work = tempfile::tempdir().expect("temp dir");
    let built = ext_wheel(work.path());
    let broken = edited_copy(&built, &work.path().join("broken"), |members| {
        replace_text(members, "/METADATA", |text| text.replace("Version: 1.0\n", "Version: 2.0\n"))
    });
    // The destination the user made stays, and nothing is made inside it.
    let dest = work.path().join("out");
    fs_err::create_dir_all(&dest).expect("mkdir");
    let error = repair_into(&[broken], &sdk().dist, &dest, &[]).expect_err("refused");
    assert!(error.to_string().contains("Version `2.0` does not match the file name's `1.0`"), "{error}");
    let left: Vec<_> = fs_err::read_dir(&dest).expect("list").map(|entry| entry.expect("entry").file_name()).collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_broken_elf_member_is_named_by_wheel_and_member() {
    let work = tempfile::tempdir().expect("temp dir");
    let built = ext_wheel(work.path());
    let member = extension_member(&built);
    let truncated = edited_copy(&built, &work.path().join("truncated"), |members| {
        let found = members.iter_mut().find(|(name, _, _)| name.ends_with(".so")).expect("the extension");
        found.1.truncate(300);
    });
    // A PT_DYNAMIC that claims 2 GiB: its file size and memory size in the program header.
    let huge = edited_copy(&built, &work.path().join("huge"), |members| {
        let found = members.iter_mut().find(|(name, _, _)| name.ends_with(".so")).expect("the extension");
        let bytes = &mut found.1;
        let word = |bytes: &[u8], at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let half = |bytes: &[u8], at: usize| usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
        let (phoff, phentsize, phnum) = (word(bytes, 0x20) as usize, half(bytes, 0x36), half(bytes, 0x38));
        let dynamic = (0..phnum)
            .map(|index| phoff + index * phentsize)
            .find(|&at| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) == 2)
            .expect("a PT_DYNAMIC");
        for field in [0x20, 0x28] {
            bytes[dynamic + field..dynamic + field + 8].copy_from_slice(&(2u64 << 30).to_le_bytes());
        }
    });
    for broken in [truncated, huge] {
        let error = repair_into(std::slice::from_ref(&broken), &sdk().dist, &work.path().join("out"), &[])
            .expect_err("refused");
        let text = error.to_string();
        assert_eq!(error.path(), Some(broken.as_path()), "{text}");
        assert!(text.contains(&member), "names the member: {text}");
        assert!(!text.contains(".rocm-packager-repair") && !text.contains("member-"), "no scratch path: {text}");
    }
}

#[test]
fn rpath_entries_with_terminal_escapes_are_printed_escaped() {
    let work = tempfile::tempdir().expect("temp dir");
    let built = ext_wheel(work.path());
    let hostile = "/build/\u{1b}[31mred\u{1b}]0;owned\u{7}/lib";
    let scratch = work.path().join("scratch.so");
    let wheel = edited_copy(&built, &work.path().join("hostile"), |members| {
        let found = members.iter_mut().find(|(name, _, _)| name.ends_with(".so")).expect("the extension");
        fs_err::write(&scratch, &found.1).expect("write");
        let old = elf_rpath::read_elf(&scratch).expect("read").expect("ELF");
        let rpath = format!("{}:{hostile}", old.search_path().expect("a search path"));
        let edit = elf_rpath::plan_set_rpath(&scratch, &rpath).expect("plan");
        elf_rpath::apply_edit_in_place(&scratch, &edit).expect("edit");
        found.1 = fs_err::read(&scratch).expect("read back");
    });
    let report = repair_into(&[wheel], &sdk().dist, &work.path().join("out"), &[]).expect("repair");
    let removed = &report.wheels[0].edited[0].removed_entries;
    assert!(removed.iter().any(|(entry, _)| entry == hostile), "the data keeps the entry as it is: {removed:?}");
    for verbose in [false, true] {
        let text = report.render(verbose);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
        assert!(text.contains("removed RPATH entry /build/\\u{1b}[31mred\\u{1b}]0;owned\\u{7}/lib"), "{text}");
    }
}

/// A HIP runtime of another ROCm major: the same library under another SONAME version.
const OTHER_MAJOR_C: &str = "const char *amdhip64_example_name(void) { return \"rocm 8\"; }\n";

const OTHER_MAJOR_EXT_C: &str = "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n\
    const char *amdhip64_example_name(void);\n\
    static PyObject *hip(PyObject *self, PyObject *args) { return PyUnicode_FromString(amdhip64_example_name()); }\n\
    static PyMethodDef methods[] = {{\"hip\", hip, METH_NOARGS, 0}, {0, 0, 0, 0}};\n\
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, \"ext\", 0, -1, methods};\n\
    PyMODINIT_FUNC PyInit_ext(void) { return PyModule_Create(&module); }\n";

/// A wheel linked to `libamdhip64.so.8`, which the example SDK (ROCm 7) does not ship.
pub fn other_major_wheel(work: &Path) -> PathBuf {
    let dir = work.join("rocm8");
    fs_err::create_dir_all(&dir).expect("mkdir");
    let runtime = support::shared_lib(&dir, "libamdhip64.so.8", OTHER_MAJOR_C, &[]);
    extension_wheel("major", OTHER_MAJOR_EXT_C, &[runtime], work)
}

#[test]
fn a_wheel_built_for_another_rocm_major_is_told_so() {
    let work = tempfile::tempdir().expect("temp dir");
    let wheel = other_major_wheel(work.path());
    let error = repair_into(&[wheel], &sdk().dist, &work.path().join("out"), &[]).expect_err("refused");
    let text = error.to_string();
    assert!(
        text.contains(
            "needs libamdhip64.so.8, which the SDK does not ship: the SDK has libamdhip64.so.7 (ROCm 7.12.0); this \
             wheel was built for another ROCm major"
        ),
        "{text}"
    );
    assert!(error.hint().is_some_and(|hint| hint.contains("ROCm major it was built for")), "{:?}", error.hint());
}

#[test]
fn a_duplicated_member_is_named_by_repair_and_the_gate() {
    let work = tempfile::tempdir().expect("temp dir");
    let built = ext_wheel(work.path());
    let dir = work.path().join("twice");
    fs_err::create_dir_all(&dir).expect("mkdir");
    let twice = dir.join(built.file_name().expect("a file name"));
    fs_err::copy(&built, &twice).expect("copy");
    // Python's zipfile writes a second member of one name (with a warning), as a careless
    // build script would.
    support::run(
        std::process::Command::new("python3")
            .args([
                "-W",
                "ignore",
                "-c",
                "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'a') as z: z.writestr('ext_helpers.py', 'VALUE = 1\\n')",
            ])
            .arg(&twice),
    );
    let error =
        repair_into(std::slice::from_ref(&twice), &sdk().dist, &work.path().join("out"), &[]).expect_err("refused");
    assert!(error.to_string().contains("its central directory lists \"ext_helpers.py\" twice"), "{error}");
    assert_eq!(error.path(), Some(twice.as_path()));

    let report = release_gate::verify_dist(&dir).expect("verify reads the dist");
    let archive: Vec<(Option<String>, String)> = report
        .violations()
        .filter(|finding| finding.check == release_gate::Check::Archive)
        .map(|finding| (finding.path.clone(), finding.message.clone()))
        .collect();
    assert!(
        archive
            .iter()
            .any(|(path, message)| path.as_deref() == Some("ext_helpers.py")
                && message.starts_with("is in the zip twice")),
        "{archive:#?}"
    );
    assert!(!archive.iter().any(|(_, message)| message.contains("several members with one name")), "{archive:#?}");
}
