//! Whether a HIP runtime can load kpack archives (SPEC §12, CONTRACT §12 "What a split SDK
//! needs"), asked of the fat example (`example --fat`, real `.hip_fatbin` libraries) with
//! and without the kpack loader in its `libamdhip64`: by the packager before a split (the
//! runtime refused by name, the override accepted, the loader found), and by the gate on a
//! split SDK set, made by splitting the fat libraries wheel with `split` (a violation naming
//! the runtime and the flag, a warning with the flag, nothing with a kpack-enabled runtime).

use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;
use example_artifacts::{write_example, ExampleOptions};
use packager::input::catalog::Catalog;
use packager::plan::kpack_runtime::{check_kpack_runtime, KpackRuntime};
use packager::plan::PlanError;
use release_gate::{verify_dist_with_options, Check, VerifyOptions};

/// The fat example (its runtime with the kpack loader when `kpack_runtime`) under `dir`.
fn fat_example(dir: &Path, kpack_runtime: bool) -> PathBuf {
    let artifacts = dir.join("artifacts");
    let options = ExampleOptions { fat: true, kpack_runtime, ..Default::default() };
    let summary = write_example(&artifacts, &options).expect("the fat example");
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    artifacts
}

#[test]
fn the_packager_refuses_a_runtime_without_the_loader_by_name() {
    let temp = tempfile::tempdir().expect("tempdir");
    let catalog = Catalog::read(&fat_example(temp.path(), false)).expect("reads");
    let error = check_kpack_runtime(&catalog, false).expect_err("refused");
    assert!(matches!(error, PlanError::RuntimeWithoutKpack { .. }), "{error:?}");
    let path = error.path().expect("names the runtime").to_owned();
    assert!(path.ends_with("core-hip_lib_generic/core/clr/stage/lib/libamdhip64.so.7.1.0"), "{}", path.display());
    let message = error.to_string();
    assert!(message.starts_with(&format!("the HIP runtime {} cannot load device code", path.display())), "{message}");
    assert!(message.contains("`kpack_load_code_object`") && message.contains("librocm_kpack.so*"), "{message}");
    assert!(error.hint().expect("a hint").contains("--allow-runtime-without-kpack"));
    assert_eq!(check_kpack_runtime(&catalog, true).expect("allowed"), KpackRuntime::Allowed { path });
}

#[test]
fn the_packager_accepts_a_runtime_with_the_loader() {
    let temp = tempfile::tempdir().expect("tempdir");
    let catalog = Catalog::read(&fat_example(temp.path(), true)).expect("reads");
    let verdict = check_kpack_runtime(&catalog, false).expect("accepted");
    let KpackRuntime::Loads { path, evidence } = verdict else { panic!("no loader found: {verdict:?}") };
    assert!(path.ends_with("lib/libamdhip64.so.7.1.0"), "{}", path.display());
    assert_eq!(evidence, "defines `kpack_load_code_object`");
}

/// A split SDK set of the fat example: the core wheel, and the libraries wheel split by
/// `split` into its host wheel and device wheels, in `dir/set`.
fn split_sdk_set(dir: &Path, kpack_runtime: bool) -> PathBuf {
    let artifacts = fat_example(dir, kpack_runtime);
    let packaged = dir.join("packaged");
    packager::package(&crate::support::package_config(&artifacts, &packaged), &packager::Silent).expect("packages");
    let dist = packaged.join("dist");
    let wheels = crate::support::dist_names(&dist);
    let libraries = wheels.iter().find(|name| name.starts_with("rocm_sdk_libraries_")).expect("a libraries wheel");
    let core = wheels.iter().find(|name| name.starts_with("rocm_sdk_core-")).expect("a core wheel");
    let split = dir.join("split");
    super::split::split_into(&[dist.join(libraries)], &split, &[]).expect("split the libraries wheel");
    let set = dir.join("set");
    fs_err::create_dir_all(&set).expect("create the set");
    fs_err::copy(dist.join(core), set.join(core)).expect("copy core");
    for name in crate::support::dist_names(&split.join("dist")) {
        fs_err::copy(split.join("dist").join(&name), set.join(&name)).expect("copy a split wheel");
    }
    set
}

/// The `kpack-runtime` findings of `verify --dist` on `set`: (violations, warnings), each
/// as `file: path: message`.
fn runtime_findings(set: &Path, allow: bool) -> (Vec<String>, Vec<String>) {
    let options = VerifyOptions { allow_runtime_without_kpack: allow, ..VerifyOptions::default() };
    let report = verify_dist_with_options(set, &options).expect("verifies");
    let (mut violations, mut warnings) = (Vec::new(), Vec::new());
    for package in &report.packages {
        for finding in package.violations.iter().filter(|finding| finding.check == Check::KpackRuntime) {
            violations.push(format!(
                "{}: {}: {}",
                package.file,
                finding.path.as_deref().unwrap_or(""),
                finding.message
            ));
        }
        for finding in package.warnings.iter().filter(|finding| finding.check == Check::KpackRuntime) {
            warnings.push(format!("{}: {}: {}", package.file, finding.path.as_deref().unwrap_or(""), finding.message));
        }
    }
    (violations, warnings)
}

#[test]
fn the_gate_refuses_a_split_sdk_whose_runtime_cannot_load_archives() {
    let temp = tempfile::tempdir().expect("tempdir");
    let set = split_sdk_set(temp.path(), false);
    let (violations, warnings) = runtime_findings(&set, false);
    assert!(warnings.is_empty(), "{warnings:?}");
    let [violation] = violations.as_slice() else { panic!("one violation: {violations:?}") };
    assert!(violation.starts_with("rocm_sdk_core-"), "{violation}");
    assert!(violation.contains("_rocm_sdk_core/lib/libamdhip64.so.7: the HIP runtime libamdhip64.so cannot load"));
    assert!(violation.contains("the 3 HIPK wrappers of this set"), "{violation}");
    assert!(violation.contains("pass --allow-runtime-without-kpack"), "{violation}");
    let (violations, warnings) = runtime_findings(&set, true);
    assert!(violations.is_empty(), "{violations:?}");
    let [warning] = warnings.as_slice() else { panic!("one warning: {warnings:?}") };
    assert!(warning.ends_with("(allowed by --allow-runtime-without-kpack)"), "{warning}");
}

#[test]
fn the_gate_passes_a_split_sdk_whose_runtime_loads_archives() {
    let temp = tempfile::tempdir().expect("tempdir");
    let set = split_sdk_set(temp.path(), true);
    assert_eq!(runtime_findings(&set, false), (Vec::new(), Vec::new()));
    let options = VerifyOptions::default();
    let report = verify_dist_with_options(&set, &options).expect("verifies");
    let violations: Vec<String> = report
        .packages
        .iter()
        .flat_map(|package| package.violations.iter().map(move |finding| format!("{}: {finding:?}", package.file)))
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");
}
