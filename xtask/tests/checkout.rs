//! Inside a TheRock checkout, `package` needs no flags: the version comes from
//! `version.json` (`{rocm-version}.dev0`), the artifacts from `build/artifacts`.
//! `--therock-dir` does the same from outside, `--version` overrides, and a checkout not
//! built yet is an error rather than the bundled example under the checkout's version.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{run, visible_files, xtask};

/// A fake TheRock checkout at `dir/TheRock`: the two files `package` reads, no build.
fn checkout(dir: &Path) -> PathBuf {
    let root = dir.join("TheRock");
    fs_err::create_dir_all(root.join("cmake")).expect("test step");
    fs_err::write(root.join("version.json"), "{\n  \"rocm-version\": \"7.9.0\"\n}\n").expect("test step");
    fs_err::write(
        root.join("cmake/therock_amdgpu_targets.cmake"),
        "therock_add_amdgpu_target(gfx1100 \"AMD RX 7900 XTX\" FAMILY dgpu-all gfx110X-all gfx110X-dgpu)\n\
         therock_add_amdgpu_target(gfx942 \"MI300X\" FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu)\n",
    )
    .expect("test step");
    root
}

/// The version each output's file name carries (`{name}-{version}-…whl`, `{name}-{version}.tar.gz`).
fn versions(files: &[String]) -> Vec<&str> {
    files
        .iter()
        .map(|file| match file.strip_suffix(".tar.gz") {
            Some(stem) => stem.rsplit_once('-').map_or("", |(_, version)| version),
            None => file.split('-').nth(1).unwrap_or(""),
        })
        .collect()
}

/// One member of a zip archive, read back with Python's zipfile.
fn zip_member(archive: &Path, member: &str) -> String {
    let script = "import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())";
    let output = run(Command::new("python3").args(["-c", script]).arg(archive).arg(member));
    String::from_utf8(output.stdout).expect("test step")
}

#[test]
fn a_checkout_gives_the_version_and_the_artifacts() {
    let temp = tempfile::tempdir().expect("test step");
    let root = checkout(temp.path());
    let artifacts = root.join("build/artifacts");
    run(xtask(temp.path()).args(["-q", "example", "--out"]).arg(&artifacts));
    // A line only the checkout's build has: it shows the wheels were made from it.
    let hip_version = artifacts.join("core-hip_lib_generic/core/clr/stage/share/hip/version");
    fs_err::write(&hip_version, "HIP_VERSION=7.1.0\nBUILT_IN=the checkout\n").expect("test step");
    let inside = root.join("projects/clr");
    fs_err::create_dir_all(&inside).expect("test step");

    // From a subdirectory, with no flags: the packages go where TheRock's CMake and CI put
    // them, archives in `build/python-packages/dist/` as the reference lays them out.
    let output = run(xtask(&inside).arg("package"));
    let from_inside = root.join("build/python-packages/dist");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("bundled example"), "{stderr}");
    let files = visible_files(&from_inside);
    assert_eq!(files.len(), 7, "{files:?}");
    assert_eq!(versions(&files), ["7.9.0.dev0"; 7], "{files:?}");
    let core = from_inside.join("rocm_sdk_core-7.9.0.dev0-py3-none-linux_x86_64.whl");
    assert_eq!(zip_member(&core, "_rocm_sdk_core/share/hip/version"), "HIP_VERSION=7.1.0\nBUILT_IN=the checkout\n");
    // The bill of materials was written from the checkout (SPEC §10): its third-party
    // sources are the checkout's to name.
    let sbom = zip_member(&core, "rocm_sdk_core-7.9.0.dev0.dist-info/sboms/rocm-packager.cdx.json");
    assert!(sbom.contains("\"value\":\"the TheRock checkout: third-party/sysdeps/"), "{sbom}");

    // From outside, naming the checkout: the same files, byte for byte.
    let outside = temp.path().join("outside");
    run(xtask(temp.path()).args(["-q", "package", "--therock-dir"]).arg(&root).arg("--dest-dir").arg(&outside));
    let from_outside = outside.join("dist");
    assert_eq!(visible_files(&from_outside), files);
    for file in &files {
        let (inside, outside) = (from_inside.join(file), from_outside.join(file));
        assert!(fs_err::read(inside).expect("test step") == fs_err::read(outside).expect("test step"), "{file}");
    }

    // --version wins over version.json.
    let overridden = temp.path().join("overridden");
    run(xtask(&inside).args(["-q", "package", "--version", "9.9.9", "--dest-dir"]).arg(&overridden));
    let files = visible_files(&overridden.join("dist"));
    assert_eq!(versions(&files), ["9.9.9"; 7], "{files:?}");

    // An empty --version is none, as with the reference: TheRock's CI passes
    // `--version="${{ inputs.package_version }}"`, empty unless a version was asked for.
    let empty = temp.path().join("empty");
    run(xtask(&inside).args(["-q", "package", "--version=", "--dest-dir"]).arg(&empty));
    let files = visible_files(&empty.join("dist"));
    assert_eq!(versions(&files), ["7.9.0.dev0"; 7], "{files:?}");
}

#[test]
fn a_checkout_not_built_yet_is_an_error_naming_build_artifacts() {
    let temp = tempfile::tempdir().expect("test step");
    let root = checkout(temp.path());
    let missing = root.join("build/artifacts");
    let dest = temp.path().join("dist");
    let expected =
        format!("error: the TheRock checkout has no build artifacts: {} is not a directory", missing.display());
    let hint = "\nhint: pass --artifact-dir, or build TheRock first (its build writes build/artifacts)\n";
    let from_root = xtask(&root).arg("package").arg("--dest-dir").arg(&dest).output().expect("run xtask");
    let from_outside =
        xtask(temp.path()).arg("package").arg("--therock-dir").arg(&root).arg("--dest-dir").arg(&dest).output();
    for output in [from_root, from_outside.expect("run xtask")] {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().next(), Some(expected.as_str()), "{stderr}");
        assert!(stderr.ends_with(hint), "{stderr}");
        assert!(!stderr.contains("bundled example"), "{stderr}");
        assert!(!dest.exists(), "nothing written");
    }
}

/// Outside a checkout, the bundled example is generated where cargo keeps its target
/// directory for this workspace (`cargo metadata` says so), here moved by
/// `CARGO_TARGET_DIR`, not under the workspace's `target/`.
#[test]
fn outside_a_checkout_the_example_goes_to_cargos_target_dir() {
    let temp = tempfile::tempdir().expect("test step");
    let target = temp.path().join("elsewhere");
    let dest = temp.path().join("packages");
    let output = run(xtask(temp.path()).args(["package", "--dest-dir"]).arg(&dest).env("CARGO_TARGET_DIR", &target));
    let note = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(note.contains(&format!("generated under {}", target.display())), "{note}");
    let generated: Vec<String> =
        visible_files(&target).into_iter().filter(|name| name.starts_with("example-artifacts-")).collect();
    assert_eq!(generated.len(), 1, "{:?}", visible_files(&target));
    let dist = visible_files(&dest.join("dist"));
    assert!(dist.len() > 3, "the example's wheels and sdist: {dist:?}");
    assert_eq!(versions(&dist), vec!["7.12.0.dev0"; dist.len()]);
}
