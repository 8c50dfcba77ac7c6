//! Bad input ends with a one-line error naming the path, then one `hint:`
//! line, exit code 2, no panic; a wrong path is reported before anything derived from it.

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
    example_artifacts::write_example(&artifacts, &example_artifacts::ExampleOptions::default()).expect("example");
    let manifest = artifacts.join("core-hip_lib_generic/artifact_manifest.txt");
    std::fs::write(&manifest, "core/clr/stage\n../../../etc\n").expect("write");
    check(&artifacts, &dir.path().join("dist"), "artifact_manifest.txt");
}

/// The least that counts as an artifacts directory: one artifact, no build manifest.
fn artifacts_shaped(dir: &Path) -> std::path::PathBuf {
    let artifacts = dir.join("artifacts");
    std::fs::create_dir_all(artifacts.join("core-hip_lib_generic")).expect("mkdir");
    std::fs::write(artifacts.join("core-hip_lib_generic/artifact_manifest.txt"), "core/stage\n").expect("write");
    artifacts
}

/// Exit code 2 and exactly `error: {first}`, a blank line and `hint: {hint}` on stderr.
fn assert_one_error(code: Option<i32>, stderr: &str, first: &str, hint: &str) {
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr, format!("error: {first}\n\nhint: {hint}\n"));
}

/// `xtask package` with `args` and no `--version`, run from `cwd` (outside a checkout).
fn package_without_version(cwd: &Path, args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(cwd)
        .arg("package")
        .args(args)
        .env_remove("GITHUB_ACTIONS")
        .output()
        .expect("run xtask");
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn artifacts_dir_that_does_not_exist_without_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-artifacts");
    let (code, stderr) = package_without_version(dir.path(), &["--artifact-dir".as_ref(), missing.as_os_str()]);
    assert_eq!(code, Some(2), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert_eq!(first, format!("error: artifacts directory not found: {}", missing.display()), "{stderr}");
    assert!(
        stderr.ends_with("\nhint: pass --artifact-dir pointing at a TheRock build's `artifacts` directory\n"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("hint:").count(), 1, "{stderr}");
    assert!(!dir.path().join("dist").exists(), "nothing written");
}

#[test]
fn no_version_outside_a_checkout_says_so_with_one_hint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let artifacts = artifacts_shaped(dir.path());
    let (code, stderr) = package_without_version(dir.path(), &["--artifact-dir".as_ref(), artifacts.as_os_str()]);
    assert_eq!(code, Some(2), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: no --version given") && first.contains(&dir.path().display().to_string()),
        "{stderr}"
    );
    assert!(
        stderr.ends_with(
            "\nhint: pass --version (such as --version 7.12.0.dev0), or --therock-dir naming the TheRock \
             checkout the artifacts were built from\n"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.matches("hint:").count(), 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 3, "one error line, a blank line, the hint: {stderr}");
    assert!(!stderr.contains("version.json") && !stderr.contains("panicked"), "{stderr}");
    assert!(!dir.path().join("dist").exists(), "nothing written");
}

/// A malformed `SOURCE_DATE_EPOCH` is an error naming the variable and its value, never
/// silently replaced by the default time.
#[test]
fn malformed_source_date_epoch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let artifacts = artifacts_shaped(dir.path());
    let dest = dir.path().join("dist");
    for value in ["yesterday", "-1", "1.5e9", ""] {
        let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .current_dir(dir.path())
            .args(["package", "--version", "7.12.0.dev0", "--artifact-dir"])
            .arg(&artifacts)
            .arg("--dest-dir")
            .arg(&dest)
            .env("SOURCE_DATE_EPOCH", value)
            .env_remove("GITHUB_ACTIONS")
            .output()
            .expect("run xtask");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{value:?}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("error: SOURCE_DATE_EPOCH=") && first.contains(&format!("{value:?}")), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!dest.exists(), "nothing written");
    }
}

#[test]
fn a_directory_that_is_not_an_artifacts_directory_is_said_before_the_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let artifacts = dir.path().join("somewhere");
    std::fs::create_dir_all(artifacts.join("not-an-artifact")).expect("mkdir");
    let (code, stderr) = package_without_version(dir.path(), &["--artifact-dir".as_ref(), artifacts.as_os_str()]);
    let first = format!(
        "not an artifacts directory (no `{{name}}_{{component}}_{{family}}` directories in it): {}",
        artifacts.display()
    );
    let hint =
        "point --artifact-dir at `build/artifacts` of a TheRock build (or run `cargo xtask example --out DIR` for one)";
    assert_one_error(code, &stderr, &first, hint);
}

#[test]
fn an_artifacts_dir_that_is_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("artifacts.txt");
    std::fs::write(&file, "not a directory\n").expect("write");
    let (code, stderr) = package_without_version(dir.path(), &["--artifact-dir".as_ref(), file.as_os_str()]);
    let first = format!("the artifacts directory is a file, not a directory: {}", file.display());
    assert_one_error(code, &stderr, &first, "pass --artifact-dir pointing at a TheRock build's `artifacts` directory");
}

#[test]
fn a_dest_dir_that_is_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let artifacts = artifacts_shaped(dir.path());
    let file = dir.path().join("dist");
    std::fs::write(&file, "not a directory\n").expect("write");
    let hint = "pass a directory for --dest-dir (a missing one is created)";
    for (dest, first) in [
        (file.clone(), format!("--dest-dir is a file, not a directory: {}", file.display())),
        (file.join("sub"), format!("--dest-dir cannot be created: {} is a file, not a directory", file.display())),
    ] {
        let (code, stderr) = package(&artifacts, &dest);
        assert_one_error(code, &stderr, &first, hint);
    }
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "not a directory\n", "the file is untouched");
}

#[test]
fn a_therock_dir_that_is_not_a_checkout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let checkout = dir.path().join("TheRock");
    std::fs::create_dir_all(&checkout).expect("mkdir");
    let (code, stderr) = package_without_version(dir.path(), &["--therock-dir".as_ref(), checkout.as_os_str()]);
    let first = format!(
        "--therock-dir is not a TheRock checkout (no version.json and cmake/therock_amdgpu_targets.cmake): {}",
        checkout.display()
    );
    let hint = "point --therock-dir at the root of a TheRock source checkout, the directory holding version.json";
    assert_one_error(code, &stderr, &first, hint);
}

/// A malformed `--version` is said before the example is generated or any artifact read,
/// naming the version alone: no internal path of the bundled example.
#[test]
fn a_malformed_version_names_the_version_and_no_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, stderr) = package_without_version(dir.path(), &["--version".as_ref(), "7.12.0-dev0".as_ref()]);
    assert_one_error(
        code,
        &stderr,
        "version \"7.12.0-dev0\" is not a valid PEP 440 version: not in normal form: use 7.12.0.dev0",
        "pass --version with a PEP 440 version such as 7.12.0.dev0",
    );
    assert!(!dir.path().join("dist").exists(), "nothing written");
}

/// `verify --dist` on a directory holding no package fails (a CI job with a mistyped path
/// must not pass), and on a file says it is not a directory; both exit with 2 and a hint.
#[test]
fn verify_dist_without_packages_or_on_a_file_fails_with_a_hint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let verify = |path: &Path| {
        let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["verify", "--dist"])
            .arg(path)
            .env_remove("GITHUB_ACTIONS")
            .output()
            .expect("run xtask");
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let hint = "point --dist at the directory holding the packages (the dist/ under the --dest-dir of \
                `cargo xtask package`)";
    let empty = dir.path().join("dist");
    std::fs::create_dir_all(empty.join("nested")).expect("mkdir");
    std::fs::write(empty.join("nested/README.txt"), "not a package\n").expect("write");
    let (code, stderr) = verify(&empty);
    let first = format!("no package to verify: no .whl or .tar.gz file in {} or its subdirectories", empty.display());
    assert_one_error(code, &stderr, &first, hint);
    let file = dir.path().join("dist.txt");
    std::fs::write(&file, "").expect("write");
    let (code, stderr) = verify(&file);
    assert_one_error(code, &stderr, &format!("--dist {} is a file, not a directory", file.display()), hint);
}

/// `repair` refuses a Windows wheel in one line, and an `--against` that holds no SDK
/// names it; both exit with 2 and a hint, and nothing is written.
#[test]
fn repair_refuses_a_windows_wheel_and_a_directory_without_an_sdk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repair = |wheel: &Path, against: &Path| {
        let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("repair")
            .arg(wheel)
            .arg("--against")
            .arg(against)
            .arg("--dest-dir")
            .arg(dir.path().join("out"))
            .env_remove("GITHUB_ACTIONS")
            .output()
            .expect("run xtask");
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let windows = dir.path().join("ext-1.0-cp311-cp311-win_amd64.whl");
    std::fs::write(&windows, b"PK").expect("write");
    let (code, stderr) = repair(&windows, dir.path());
    let first = format!(
        "repairing against {}: {} is a Windows wheel: DLLs have no RPATH (the SDK's DLLs load through \
         rocm_sdk.initialize_process), so only Linux wheels are repaired",
        dir.path().display(),
        windows.display()
    );
    let hint = "install a Windows wheel beside the SDK as it is and call rocm_sdk.initialize_process() before \
                importing it";
    assert_one_error(code, &stderr, &first, hint);
    let linux = dir.path().join("ext-1.0-cp311-cp311-linux_x86_64.whl");
    std::fs::write(&linux, b"PK").expect("write");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let (code, stderr) = repair(&linux, &empty);
    let first = format!(
        "repairing against {}: no ROCm SDK in {}: no rocm-sdk-core package, neither installed nor as a wheel",
        empty.display(),
        empty.display()
    );
    let hint = "point --against at a dist/ holding the SDK's wheels (rocm_sdk_core-*.whl, ...) or at a \
                site-packages where they are installed";
    assert_one_error(code, &stderr, &first, hint);
    assert!(!dir.path().join("out").exists(), "nothing written");
}
