//! Issue 2: bad input ends with a one-line error naming the path, exit code 2, no panic.

use std::path::Path;
use std::process::Command;

fn package(artifacts: &Path, dest: &Path) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["package", "--version", "7.12.0.dev0", "--artifact-dir"])
        .arg(artifacts)
        .arg("--dest-dir")
        .arg(dest)
        .env_remove("GITHUB_ACTIONS")
        .output()
        .expect("run xtask");
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

fn check(artifacts: &Path, dest: &Path, names: &str) {
    let (code, stderr) = package(artifacts, dest);
    assert_eq!(code, Some(2), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(first.starts_with("error: ") && first.contains(names), "first line should name {names}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!dest.exists() || std::fs::read_dir(dest).expect("dest").next().is_none(), "nothing written");
}

#[test]
fn artifacts_dir_that_does_not_exist() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-artifacts");
    check(&missing, &dir.path().join("dist"), &missing.display().to_string());
}

#[test]
fn missing_build_manifest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let artifacts = dir.path().join("artifacts");
    std::fs::create_dir_all(artifacts.join("core-hip_lib_generic")).expect("mkdir");
    std::fs::write(artifacts.join("core-hip_lib_generic/artifact_manifest.txt"), "core/stage\n").expect("write");
    check(&artifacts, &dir.path().join("dist"), "therock_manifest.json");
}

#[test]
fn manifest_line_outside_the_artifact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let artifacts = dir.path().join("artifacts");
    packager::example::write_example(&artifacts, &packager::example::ExampleOptions { kpack_split: false })
        .expect("example");
    let manifest = artifacts.join("core-hip_lib_generic/artifact_manifest.txt");
    std::fs::write(&manifest, "core/clr/stage\n../../../etc\n").expect("write");
    check(&artifacts, &dir.path().join("dist"), "artifact_manifest.txt");
}
