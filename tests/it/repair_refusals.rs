//! What a repair refuses (SPEC §11), each before anything is written: a wheel needing a
//! symbol version node and a symbol the SDK's HIP runtime lacks (built against a newer
//! runtime of the same SONAME), named with file, symbol, version and library; a library
//! found nowhere, unless allowed; a Windows wheel, in one line.

use std::path::Path;

use diagnostic::Diagnostic;
use packager::repair::RepairError;

use super::{extension_wheel, repair_into, sdk};
use crate::support;

/// A newer HIP runtime: `hipFree` joins `hip_4.2`, `hipNewApi` opens `hip_7.99`.
const NEWER_HIP_MAP: &str =
    "hip_4.2 { global: amdhip64_example_name; amdhip64_example_dependency; hipMalloc; hipFree; \
                             local: *; };\nhip_7.99 { global: hipNewApi; } hip_4.2;\n";

/// An extension calling what only the newer runtime has.
const NEWER_EXT_C: &str = "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n\
    int hipFree(void *p);\nint hipNewApi(void);\n\
    static PyObject *call(PyObject *self, PyObject *args) { return PyLong_FromLong(hipNewApi() + hipFree(0)); }\n\
    static PyMethodDef methods[] = {{\"call\", call, METH_NOARGS, 0}, {0, 0, 0, 0}};\n\
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, \"ext\", 0, -1, methods};\n\
    PyMODINIT_FUNC PyInit_ext(void) { return PyModule_Create(&module); }\n";

/// The output directory holds nothing after a refusal.
fn assert_nothing_written(dest: &Path) {
    let dist = dest.join("dist");
    let names = if dist.exists() { support::dist_names(&dist) } else { Vec::new() };
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn symbols_the_sdk_lacks_are_refused_naming_them() {
    let work = tempfile::tempdir().expect("temp dir");
    let sdk = sdk();
    // The newer runtime, with the SDK's SONAME, linked to the SDK's HSA runtime.
    let newer = work.path().join("newer/libamdhip64.so.7");
    let hsa = sdk.site_packages.join("_rocm_sdk_core/lib/libhsa-runtime64.so.1");
    super::compile_hip_runtime(&newer, &hsa, &work.path().join("hip-build"), NEWER_HIP_MAP);
    let wheel = extension_wheel("newer", NEWER_EXT_C, &[newer], work.path());

    let dest = work.path().join("out");
    let error = repair_into(std::slice::from_ref(&wheel), &sdk.dist, &dest, &[]).expect_err("refused");
    let RepairError::Unlinkable { problems, .. } = &error else { panic!("{error}") };
    let text = error.to_string();
    let member = problems.first().map(|problem| problem.member.clone()).unwrap_or_default();
    assert!(member.starts_with("newer.cpython"), "{text}");
    for part in [
        "needs version hip_7.99 of libamdhip64.so.7, which rocm-sdk-core 7.12.0 does not define (for hipNewApi)",
        "needs symbol hipFree@hip_4.2 of libamdhip64.so.7, which rocm-sdk-core 7.12.0 does not define",
    ] {
        assert!(text.contains(&format!("{member} {part}")), "missing `{part}` in:\n{text}");
    }
    assert!(error.hint().is_some_and(|hint| hint.contains("another ROCm release")), "{:?}", error.hint());
    assert_nothing_written(&dest);
}

#[test]
fn a_library_found_nowhere_is_refused_unless_allowed() {
    let work = tempfile::tempdir().expect("temp dir");
    let elsewhere = work.path().join("elsewhere");
    fs_err::create_dir_all(&elsewhere).expect("mkdir");
    let library = support::shared_lib(&elsewhere, "libnotthere.so.1", "int not_there(void) { return 1; }\n", &[]);
    let source = super::EXT_C.replace("int hipMalloc", "int not_there(void);\nint hipMalloc");
    let sdk = sdk();
    let libraries = [
        sdk.site_packages.join("_rocm_sdk_core/lib/libamdhip64.so.7"),
        sdk.site_packages.join("_rocm_sdk_libraries/lib/librocblas.so.5"),
        library,
    ];
    let wheel = extension_wheel("needy", &source, &libraries, work.path());
    let dest = work.path().join("out");
    let error = repair_into(std::slice::from_ref(&wheel), &sdk.dist, &dest, &[]).expect_err("refused");
    let text = error.to_string();
    assert!(text.contains("needs libnotthere.so.1, which resolves nowhere"), "{text}");
    assert!(error.hint().is_some_and(|hint| hint.contains("--allow-missing")), "{:?}", error.hint());
    assert_nothing_written(&dest);

    let report = repair_into(&[wheel], &sdk.dist, &dest, &["libnotthere.so.1"]).expect("allowed");
    let edited = &report.wheels[0].edited[0];
    assert_eq!(edited.rpath.as_deref(), Some("$ORIGIN/_rocm_sdk_core/lib:$ORIGIN/_rocm_sdk_libraries/lib"));
    assert_eq!(edited.removed_entries.len(), 3, "every absolute entry is removed and reported: {edited:?}");
}

#[test]
fn a_windows_wheel_is_refused_in_one_line() {
    let work = tempfile::tempdir().expect("temp dir");
    let wheel = work.path().join("ext-1.0-cp311-cp311-win_amd64.whl");
    fs_err::write(&wheel, b"PK").expect("write");
    let error = repair_into(&[wheel], &sdk().dist, &work.path().join("out"), &[]).expect_err("refused");
    assert!(matches!(error, RepairError::Windows { .. }), "{error}");
    let text = error.to_string();
    assert!(!text.contains('\n') && text.contains("is a Windows wheel"), "{text}");
    assert!(error.hint().is_some_and(|hint| hint.contains("initialize_process")));
}
