//! `cmake/python_packages.cmake`: the CMake project in `tests/cmake/` includes the module
//! the way a TheRock build would, and building its `python-packages` target must package
//! the bundled example through `cargo xtask package`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is inside the workspace").to_path_buf()
}

/// `cmake`, by its full path: one test runs it with a `PATH` that no longer finds it.
fn cmake_path() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|dir| dir.join("cmake")).find(|candidate| candidate.is_file());
    let cmake = found.unwrap_or_else(|| panic!("{}", support::missing_tool_message("cmake")));
    let probe = Command::new(&cmake).arg("--version").output();
    assert!(probe.is_ok_and(|output| output.status.success()), "{} --version fails", cmake.display());
    cmake
}

fn cmake() -> Command {
    Command::new(cmake_path())
}

/// This process's `PATH` without the directories that hold a `cargo`, so the module's own
/// search comes up empty wherever cargo and cmake are installed.
fn path_without_cargo() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path).filter(|dir| !dir.join("cargo").exists()).collect();
    std::env::join_paths(kept).expect("PATH entries stay joinable")
}

/// The seeds' sequence through the CMake target: the packages land in
/// `{ROCM_PACKAGER_DEST_DIR}/dist/`, and pip installs them from there as the seeds say.
#[test]
fn the_python_packages_target_writes_dist_and_pip_installs_from_it() {
    let temp = tempfile::tempdir().expect("test step");
    let artifacts = support::write_example(temp.path(), false);
    let build = temp.path().join("build");
    let packages = temp.path().join("packages");
    // The child cargo shares this workspace's target dir, so it reuses the xtask build
    // instead of compiling the workspace from scratch.
    let target_dir = support::target_tmp().parent().expect("target/tmp has a parent").to_path_buf();
    let source = workspace_root().join("tests/cmake");
    support::run(
        cmake()
            .arg("-S")
            .arg(&source)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DROCM_PACKAGER_ARTIFACTS_DIR={}", artifacts.display()))
            .arg(format!("-DROCM_PACKAGER_DEST_DIR={}", packages.display()))
            // As TheRock's CI passes it; the module takes the version from there.
            .arg("-DTHEROCK_PACKAGE_VERSION=7.12.0.dev0")
            .arg("-DROCM_PACKAGER_EXTRA_ARGS=--only;meta,core,libraries,devel,profiler")
            .arg(format!("-DROCM_PACKAGER_CARGO_TARGET_DIR={}", target_dir.display())),
    );
    let cache = fs_err::read_to_string(build.join("CMakeCache.txt")).expect("test step");
    let expected_dir = format!("ROCM_PACKAGER_DIR:PATH={}", workspace_root().display());
    assert!(cache.contains(&expected_dir), "the module finds its own checkout:\n{expected_dir}");
    assert!(cache.contains("ROCM_PACKAGER_VERSION:STRING=7.12.0.dev0\n"), "version from THEROCK_PACKAGE_VERSION");

    let output = support::run(cmake().arg("--build").arg(&build).args(["--target", "python-packages"]));
    // The reference's layout: archives in `{ROCM_PACKAGER_DEST_DIR}/dist/`.
    let dist = packages.join("dist");
    assert_eq!(support::dist_names(&dist), support::legacy_example_archives(), "cmake output:\n{output}");
    // The summary table reached the build log.
    assert!(output.contains("rocm_sdk_core-7.12.0.dev0"), "{output}");

    // Then the seeds' next lines, unchanged: a fresh venv, pip with `--find-links` on the
    // destination's `dist/`, and the installed self-tests.
    let venv = support::fresh_venv(&temp.path().join(".venv"));
    support::run(
        Command::new(venv.join("bin/pip"))
            .args(["install", "rocm[libraries,devel]", "--pre", "--no-cache-dir"])
            .arg(format!("--find-links={}/dist", packages.display()))
            // Hermetic: `--find-links` alone also asks PyPI, where another `rocm` lives;
            // and this machine's GPUs choose nothing (SPEC §3).
            .env("PIP_NO_INDEX", "1")
            .env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology("cpu_only"))
            .env_remove("ROCM_SDK_TARGET_FAMILY"),
    );
    let tested = support::run(Command::new(venv.join("bin/rocm-sdk")).arg("test"));
    assert!(tested.contains("libraries_test") && tested.contains("\nOK"), "{tested}");
}

#[test]
fn configuring_without_cargo_fails_clearly() {
    let temp = tempfile::tempdir().expect("test step");
    let output = cmake()
        .arg("-S")
        .arg(workspace_root().join("tests/cmake"))
        .arg("-B")
        .arg(temp.path().join("build"))
        .arg("-DROCM_PACKAGER_CARGO=ROCM_PACKAGER_CARGO-NOTFOUND")
        .env("PATH", path_without_cargo())
        .env("HOME", temp.path())
        .env_remove("CARGO_HOME")
        .output()
        .expect("run cmake");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cargo not found"), "{stderr}");
}

/// TheRock's default package version is the word `git`: not a version, so the packager
/// falls back to version.json of the checkout instead of failing on it.
#[test]
fn a_development_package_version_is_not_passed_on() {
    let temp = tempfile::tempdir().expect("temp dir");
    let build = temp.path().join("build");
    support::run(
        cmake()
            .arg("-S")
            .arg(workspace_root().join("tests/cmake"))
            .arg("-B")
            .arg(&build)
            .arg("-DTHEROCK_PACKAGE_VERSION=git"),
    );
    let cache = fs_err::read_to_string(build.join("CMakeCache.txt")).expect("read the cache");
    assert!(cache.contains("ROCM_PACKAGER_VERSION:STRING=\n"), "{cache}");
    assert!(cache.contains(&format!("ROCM_PACKAGER_ARTIFACTS_DIR:PATH={}/artifacts\n", build.display())), "{cache}");
}
