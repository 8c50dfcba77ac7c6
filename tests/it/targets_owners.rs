//! Device packages grouped by owner (SPEC §2, §3; TheRock #8280, #8327, rocm-systems
//! #11801), on the kpack-split example, whose `blas_lib_gfx1250` and
//! `blas_lib_gfx1250-strict` artifacts share the `gfx1250` owner: one wheel holding both
//! payloads and one extra; base-only and strict-only builds; clashes between the members
//! refused before anything is written; legacy builds that do not merge; `verify --dist`
//! judging device wheels by owner.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use diagnostic::Diagnostic;
use packager::config::PackageGroup;
use release_gate::{verify_dist, Check};

use super::{build, copy_tree, wheel_members, wheel_of, CreationOrder, VERSION};
use crate::installed::PATH_WITHOUT_GPU_TOOLS;
use crate::support;

const ROCBLAS: &str = "math-libs/BLAS/rocBLAS/stage";

#[test]
fn one_owner_wheel_holds_the_payloads_of_both_gfx1250_targets() {
    let build = build(true);
    let names = support::dist_names(&build.dist);
    assert!(!names.iter().any(|name| name.contains("strict")), "a wheel of gfx1250-strict's own: {names:?}");
    let members = wheel_members(&wheel_of(&build.dist, "rocm_sdk_device_gfx1250"));
    for target in ["gfx1250", "gfx1250-strict"] {
        // Each member keeps its own file names, side by side.
        for rel in
            [format!(".kpack/blas_lib_{target}.kpack"), format!("lib/rocblas/library/TensileLibrary_{target}.dat")]
        {
            let source = build.artifacts.join(format!("blas_lib_{target}")).join(ROCBLAS).join(&rel);
            let shipped = members.get(&format!("_rocm_sdk_libraries/{rel}"));
            assert_eq!(shipped, Some(&fs_err::read(&source).expect("read source")), "{rel}");
        }
    }
    let metadata = String::from_utf8_lossy(&members[&format!("rocm_sdk_device_gfx1250-{VERSION}.dist-info/METADATA")])
        .into_owned();
    assert!(metadata.contains("Name: rocm-sdk-device-gfx1250\n") && !metadata.contains("strict"), "{metadata}");
    assert!(members.contains_key("_rocm_sdk_libraries/.devel_links/gfx1250.json"));
    assert!(members.contains_key("_rocm_sdk_libraries/_device_gfx1250.py"));
}

/// The `rocm` sdist of the example, unpacked; returns its root.
fn unpacked_sdist(dir: &Path) -> PathBuf {
    let sdist = build(true).dist.join(format!("rocm-{VERSION}.tar.gz"));
    support::run(Command::new("tar").arg("xzf").arg(&sdist).arg("-C").arg(dir));
    dir.join(format!("rocm-{VERSION}"))
}

/// `compute_requirements` of the sdist's own backend: (requires, extras).
fn requirements(root: &Path, envs: &[(&str, &str)]) -> (Vec<String>, BTreeMap<String, Vec<String>>) {
    let code = "import json, sys\n\
        sys.path.insert(0, sys.argv[1])\n\
        import _rocm_build_backend as backend\n\
        print(json.dumps(backend.compute_requirements(backend.load_dist_info())))";
    let mut command = Command::new("python3");
    command.args(["-c", code]).arg(root).env("PYTHONDONTWRITEBYTECODE", "1").env_remove("ROCM_SDK_TARGET_FAMILY");
    command.envs(envs.iter().copied());
    serde_json::from_str(&support::run(&mut command)).expect("JSON from the backend")
}

#[test]
fn the_sdist_offers_one_extra_per_owner_and_a_gfx1250_gpu_selects_it() {
    let temp = tempfile::tempdir().expect("temp dir");
    let root = unpacked_sdist(temp.path());
    let pinned = |name: &str| format!("{name}=={VERSION}");
    for family in ["gfx1250", "gfx1250-strict", "GFX1250-STRICT"] {
        let (_, extras) = requirements(&root, &[("ROCM_SDK_TARGET_FAMILY", family), ("PATH", PATH_WITHOUT_GPU_TOOLS)]);
        assert_eq!(extras["device"], [pinned("rocm-sdk-device-gfx1250")], "{family}");
        let device_extras: Vec<&String> = extras.keys().filter(|extra| extra.starts_with("device-")).collect();
        assert_eq!(device_extras, ["device-all", "device-gfx1030", "device-gfx1250", "device-gfx90a"]);
        let every = ["rocm-sdk-device-gfx1030", "rocm-sdk-device-gfx1250", "rocm-sdk-device-gfx90a"].map(pinned);
        assert_eq!(extras["device-all"], every, "device-all names each owner once");
    }
    // A gfx1250 GPU, as `offload-arch` reports it, selects the owner's package.
    let bin = temp.path().join("gpu-bin");
    fs_err::create_dir(&bin).expect("create dir");
    let fake = bin.join("offload-arch");
    fs_err::write(&fake, "#!/bin/sh\necho gfx1250\n").expect("write fake offload-arch");
    fs_err::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let path = format!("{}:{PATH_WITHOUT_GPU_TOOLS}", bin.display());
    let (_, extras) = requirements(&root, &[("PATH", &path)]);
    assert_eq!(extras["device"], [pinned("rocm-sdk-device-gfx1250")]);
}

/// The example's artifacts copied to `dir/artifacts`, without those of `left_out` targets.
fn artifacts_without(dir: &Path, left_out: &[&str]) -> PathBuf {
    let artifacts = dir.join("artifacts");
    copy_tree(&build(true).artifacts, &artifacts, CreationOrder::Ascending);
    for target in left_out {
        fs_err::remove_dir_all(artifacts.join(format!("blas_lib_{target}"))).expect("remove an artifact");
    }
    artifacts
}

/// Packages only the device wheels of `artifacts` into `dir/dist`.
fn package_devices(artifacts: &Path, dir: &Path) -> Result<PathBuf, packager::Error> {
    let mut config = support::package_config(artifacts, dir);
    config.only = vec![PackageGroup::Device];
    packager::package(&config, &packager::Silent)?;
    Ok(config.output_dir())
}

#[test]
fn base_only_and_strict_only_builds_each_make_the_one_gfx1250_wheel() {
    for (left_out, kept) in [("gfx1250-strict", "gfx1250"), ("gfx1250", "gfx1250-strict")] {
        let temp = tempfile::tempdir().expect("temp dir");
        let artifacts = artifacts_without(temp.path(), &[left_out]);
        let dist = package_devices(&artifacts, temp.path()).expect("package the device wheels");
        let kpack: Vec<String> = wheel_members(&wheel_of(&dist, "rocm_sdk_device_gfx1250"))
            .into_keys()
            .filter(|member| member.ends_with(".kpack"))
            .collect();
        assert_eq!(kpack, [format!("_rocm_sdk_libraries/.kpack/blas_lib_{kept}.kpack")], "a {kept} build");
        assert!(!support::dist_names(&dist).iter().any(|name| name.contains("strict")));
    }
}

/// Writes `text` at `rel` of the `gfx1250-strict` artifact.
fn add_to_strict(artifacts: &Path, rel: &str, text: &str) {
    let path = artifacts.join("blas_lib_gfx1250-strict").join(ROCBLAS).join(rel);
    fs_err::create_dir_all(path.parent().expect("parent")).expect("create dir");
    fs_err::write(&path, text).expect("write");
}

#[test]
fn members_that_clash_are_refused_before_anything_is_written() {
    let base_file = "lib/rocblas/library/TensileLibrary_gfx1250.dat";
    let cases = [
        (base_file.to_owned(), "other bytes\n", "with different bytes"),
        (
            format!("{base_file}/nested.dat"),
            "under a directory\n",
            "as a file in blas_lib_gfx1250 and a directory in blas_lib_gfx1250-strict",
        ),
    ];
    for (rel, text, what) in cases {
        let temp = tempfile::tempdir().expect("temp dir");
        let artifacts = artifacts_without(temp.path(), &[]);
        add_to_strict(&artifacts, &rel, text);
        let config = support::package_config(&artifacts, temp.path());
        let error = packager::package(&config, &packager::Silent).expect_err("a clash must be refused");
        assert_eq!(
            error.to_string(),
            format!(
                "the device wheel of gfx1250 merges several targets, but blas_lib_gfx1250 and \
                 blas_lib_gfx1250-strict both provide {base_file} {what}"
            )
        );
        assert!(error.hint().is_some_and(|hint| hint.contains("nothing was written")), "{:?}", error.hint());
        let dist = config.output_dir();
        assert!(!dist.exists() || support::dist_names(&dist).is_empty(), "{:?}", support::dist_names(&dist));
    }
}

#[test]
fn identical_entries_of_two_members_are_kept_once() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = artifacts_without(temp.path(), &[]);
    let rel = "lib/rocblas/library/TensileLibrary_gfx1250.dat";
    let bytes = fs_err::read(artifacts.join("blas_lib_gfx1250").join(ROCBLAS).join(rel)).expect("read");
    add_to_strict(&artifacts, rel, &String::from_utf8(bytes.clone()).expect("text"));
    let dist = package_devices(&artifacts, temp.path()).expect("identical entries are no clash");
    let members = wheel_members(&wheel_of(&dist, "rocm_sdk_device_gfx1250"));
    assert_eq!(members.get(&format!("_rocm_sdk_libraries/{rel}")), Some(&bytes));
}

#[test]
fn legacy_builds_do_not_merge_targets() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = temp.path().join("artifacts");
    copy_tree(&build(false).artifacts, &artifacts, CreationOrder::Ascending);
    // The legacy example's two families, renamed to two targets of one owner.
    for entry in fs_err::read_dir(&artifacts).expect("list artifacts") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name").to_string_lossy().into_owned();
        let renamed = name.replace("_gfx110X-all", "_gfx1250").replace("_gfx94X-dcgpu", "_gfx1250-strict");
        if renamed != name {
            fs_err::rename(&path, artifacts.join(renamed)).expect("rename artifact");
        }
    }
    let plan = packager::plan(&support::package_config(&artifacts, temp.path()), &packager::Silent).expect("plan");
    let mut libraries: Vec<&str> = plan
        .packages
        .iter()
        .filter(|package| package.group() == PackageGroup::Libraries)
        .map(|package| package.names.distribution.as_str())
        .collect();
    libraries.sort_unstable();
    assert_eq!(libraries, ["rocm-sdk-libraries-gfx1250", "rocm-sdk-libraries-gfx1250-strict"]);
}

#[test]
fn verify_judges_device_wheels_by_owner() {
    let temp = tempfile::tempdir().expect("temp dir");
    let dist = temp.path().join("dist");
    copy_tree(&build(true).dist, &dist, CreationOrder::Ascending);
    let owner = wheel_of(&dist, "rocm_sdk_device_gfx1250");
    let strict = dist.join(format!("rocm_sdk_device_gfx1250_strict-{VERSION}-py3-none-linux_x86_64.whl"));
    fs_err::rename(&owner, &strict).expect("rename the owner's wheel");
    let report = verify_dist(&dist).expect("verify reads the dist");
    let completeness: Vec<String> = report
        .packages
        .iter()
        .flat_map(|package| &package.violations)
        .filter(|violation| violation.check == Check::Completeness)
        .map(|violation| violation.message.clone())
        .collect();
    let expected_missing =
        format!("the sdist offers target gfx1250, but there is no rocm_sdk_device_gfx1250-{VERSION} wheel");
    assert!(completeness.contains(&expected_missing), "{completeness:#?}");
    assert!(
        completeness.iter().any(|message| message.contains("the payload of gfx1250-strict ships in its owner's wheel")),
        "{completeness:#?}"
    );
}
