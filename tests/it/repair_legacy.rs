//! A legacy set (one libraries wheel per GPU family, installed one at a time) offers each
//! library once per family (SPEC §11): the repaired wheel searches every family's
//! directory, as the set spells it, and requires the libraries through the `rocm`
//! sdist's `libraries` extra, which chooses the family at install time. Installed with
//! one family chosen, the extension loads that family's library.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::{ext_wheel, member_names, package, rebuild_hip_runtime, repair_into, RELEASE, SDK_HIP_MAP};
use crate::installed;
use crate::support;

/// The legacy example with the versioned HIP runtime, packaged once per test process.
fn legacy_dist() -> &'static PathBuf {
    static DIST: OnceLock<PathBuf> = OnceLock::new();
    DIST.get_or_init(|| {
        let root = support::target_tmp().join("repair-legacy");
        if root.exists() {
            fs_err::remove_dir_all(&root).expect("remove the previous run's SDK");
        }
        let artifacts = support::write_example(&root, false);
        rebuild_hip_runtime(&artifacts, &root.join("hip-build"), SDK_HIP_MAP);
        package(&artifacts, &root.join("sdk"), RELEASE, &[])
    })
}

/// The directory each libraries wheel of `dist` places rocBLAS in.
fn rocblas_dirs(dist: &std::path::Path) -> Vec<String> {
    let mut dirs = Vec::new();
    for name in support::dist_names(dist).iter().filter(|name| name.starts_with("rocm_sdk_libraries_")) {
        let members = member_names(&dist.join(name));
        let library = members.iter().find(|member| member.ends_with("/lib/librocblas.so.5")).expect("rocBLAS");
        dirs.push(library.trim_end_matches("/librocblas.so.5").to_owned());
    }
    dirs
}

#[test]
fn a_legacy_set_is_searched_per_family_and_required_through_the_libraries_extra() {
    let work = tempfile::tempdir().expect("temp dir");
    let dist = legacy_dist();
    let families = rocblas_dirs(dist);
    assert_eq!(families.len(), 2, "{families:?}");
    let report = repair_into(&[ext_wheel(work.path())], dist, &work.path().join("out"), &[]).expect("repair");
    let repaired = &report.wheels[0];
    let specifier = format!(">={RELEASE},<{RELEASE}.0.1");
    assert_eq!(
        repaired.requirements_added,
        [format!("rocm-sdk-core{specifier}"), format!("rocm[libraries]{specifier}")]
    );
    let mut expected = vec!["$ORIGIN/_rocm_sdk_core/lib".to_owned()];
    expected.extend(families.iter().map(|dir| format!("$ORIGIN/{dir}")));
    assert_eq!(repaired.edited[0].rpath.as_deref(), Some(expected.join(":").as_str()));

    let venv = support::fresh_venv(&work.path().join("venv"));
    let family = "gfx94X-dcgpu";
    let out_dist = repaired.output.parent().expect("a directory").to_path_buf();
    let mut install = std::process::Command::new(venv.join("bin/python"));
    install.args(["-m", "pip", "install", "-q", "--no-cache-dir", "--no-index", "--find-links"]).arg(dist);
    install.arg("--find-links").arg(&out_dist).arg("ext");
    install.env("ROCM_SDK_TARGET_FAMILY", family).env("PATH", installed::PATH_WITHOUT_GPU_TOOLS);
    support::run(&mut install);
    let output = installed::python(&venv, "import ext\nprint(ext.blas())", &[], &[]);
    installed::assert_success(&output, "import ext");
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("example:rocblas {family}\n"));
}
