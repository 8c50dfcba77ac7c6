//! The `xtask` binary as a child process, so the environment it sees can differ from the
//! test's: the same artifacts laid down in opposite directory orders and packaged under
//! different `PYTHONHASHSEED`s give byte-identical dists (SPEC §6 "Order is defined"), and
//! `--linux-amdgpu-families` is checked against the targets the artifacts provide.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::{add_clashes, build, copy_tree, files_below, wheel_members, wheel_of, CreationOrder, CLASHES, VERSION};

/// The `xtask` executable, built once per test binary with the cargo running the tests.
pub(crate) fn xtask() -> &'static Path {
    static XTASK: OnceLock<PathBuf> = OnceLock::new();
    XTASK.get_or_init(|| {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let stdout = crate::support::run(
            Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--package", "xtask", "--message-format=json", "--manifest-path"])
                .arg(&manifest),
        );
        stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|message| message["reason"] == "compiler-artifact" && message["target"]["name"] == "xtask")
            .find_map(|message| message["executable"].as_str().map(PathBuf::from))
            .expect("cargo build reports the xtask executable")
    })
}

/// `xtask package` of `artifacts` with `--dest-dir dest` (archives in `dest/dist/`) and `extra` flags, from a directory that is
/// no TheRock checkout; `SOURCE_DATE_EPOCH` unset so the default time applies. The report
/// goes to `json` (`-`: stdout, instead of the summary table).
fn package(cwd: &Path, artifacts: &Path, dest: &Path, json: &str, extra: &[&str], hash_seed: &str) -> Output {
    Command::new(xtask())
        .current_dir(cwd)
        .args(["package", "--version", VERSION, "--artifact-dir"])
        .arg(artifacts)
        .arg("--dest-dir")
        .arg(dest)
        .arg(format!("--json={json}"))
        .args(extra)
        .env("PYTHONHASHSEED", hash_seed)
        .env("NO_COLOR", "1")
        .env_remove("SOURCE_DATE_EPOCH")
        .env_remove("ROCM_SDK_WHEEL_PLATFORM_TAG")
        .output()
        .expect("run xtask")
}

fn report_of(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "xtask package failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("--json prints the report")
}

/// A directory whose `readdir` order follows creation order. ext4 lists by name hash, the
/// same for any creation order, so the copies go to tmpfs.
fn order_sensitive_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm").expect("a temp dir on tmpfs (/dev/shm) is needed to vary readdir order")
}

fn listing(dir: &Path) -> Vec<String> {
    fs_err::read_dir(dir)
        .expect("read dir")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn same_dist_whatever_the_directory_order() {
    let temp = order_sensitive_dir();
    let (first, second) = (temp.path().join("first"), temp.path().join("second"));
    copy_tree(&build(true).artifacts, &first, CreationOrder::Ascending);
    copy_tree(&build(true).artifacts, &second, CreationOrder::Descending);
    // A clash makes "which artifact wins" visible in the output bytes too.
    add_clashes(&first);
    add_clashes(&second);

    let inside = format!("blas_lib_gfx90a:xnack+/{}", CLASHES[1].3[0]);
    for dir in [PathBuf::new(), PathBuf::from("core-hip_lib_generic/core/clr/stage/lib"), PathBuf::from(&inside)] {
        let (listed_first, listed_second) = (listing(&first.join(&dir)), listing(&second.join(&dir)));
        assert_ne!(
            listed_first,
            listed_second,
            "readdir order of {} did not change with creation order",
            dir.display()
        );
        let (mut sorted_first, mut sorted_second) = (listed_first.clone(), listed_second.clone());
        sorted_first.sort();
        sorted_second.sort();
        assert_eq!(sorted_first, sorted_second);
    }

    let (dest_first, dest_second) = (temp.path().join("dest-first"), temp.path().join("dest-second"));
    let (dist_first, dist_second) = (dest_first.join("dist"), dest_second.join("dist"));
    let report_first = report_of(&package(temp.path(), &first, &dest_first, "-", &[], "0"));
    // The second run writes its report to a file, so the summary table shows as well.
    let report_file = temp.path().join("second.json");
    let output = package(temp.path(), &second, &dest_second, &report_file.display().to_string(), &[], "4242");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(summary.contains(&format!("{} paths provided by two artifacts", CLASHES.len())), "{summary}");
    let report_second: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&report_file).expect("read report")).expect("report JSON");
    let (files_first, files_second) = (files_below(&dist_first), files_below(&dist_second));
    let names = |files: &[(String, PathBuf)]| files.iter().map(|(rel, _)| rel.clone()).collect::<Vec<_>>();
    assert_eq!(names(&files_first), names(&files_second));
    // Seven wheels and the sdist (beside them, the packager's own lock file).
    let n_packages = files_first.iter().filter(|(rel, _)| rel.ends_with(".whl") || rel.ends_with(".tar.gz")).count();
    assert_eq!(n_packages, 8, "{:?}", names(&files_first));
    for ((rel, a), (_, b)) in files_first.iter().zip(&files_second) {
        assert!(fs_err::read(a).expect("read") == fs_err::read(b).expect("read"), "{rel} differs between the two runs");
    }
    assert_eq!(report_first["overrides"], report_second["overrides"]);
    assert_eq!(
        report_first["overrides"].as_array().map(Vec::len),
        Some(CLASHES.len()),
        "{}",
        report_first["overrides"]
    );
    let device = wheel_members(&wheel_of(&dist_first, "rocm_sdk_device_gfx90a"));
    assert_eq!(device[&format!("_rocm_sdk_libraries/{}", CLASHES[1].0)], format!("from {}\n", CLASHES[1].1).as_bytes());
}

/// The `AVAILABLE_TARGET_FAMILIES` the `rocm` sdist in `dist` advertises.
fn advertised_targets(dist: &Path) -> String {
    let sdist = dist.join(format!("rocm-{VERSION}.tar.gz"));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(fs_err::File::open(&sdist).expect("open sdist")));
    let wanted = format!("rocm-{VERSION}/rocm_sdk/_dist_info_data.py");
    for entry in archive.entries().expect("read sdist") {
        let mut entry = entry.expect("sdist member");
        if entry.path().expect("member path").to_string_lossy() == wanted {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut entry, &mut text).expect("read _dist_info_data.py");
            let line =
                text.lines().find(|line| line.starts_with("AVAILABLE_TARGET_FAMILIES = ")).expect("the constant");
            return line.trim_start_matches("AVAILABLE_TARGET_FAMILIES = ").to_owned();
        }
    }
    panic!("{wanted} is not in the sdist");
}

fn unrequested_targets(report: &serde_json::Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|finding| finding["finding"] == "unrequested-target")
        .map(|finding| finding["target"].as_str().expect("target").to_owned())
        .collect()
}

#[test]
fn completeness_works_on_targets() {
    let artifacts = &build(true).artifacts;
    let temp = tempfile::tempdir().expect("temp dir");

    // `gfx90a:xnack+` and `gfx90a:xnack-` artifacts satisfy gfx90a; the `;` list form too.
    // Targets sharing an owner's wheel are requested, and offered, each by its own name.
    let both = temp.path().join("both");
    let all = ["--linux-amdgpu-families", "gfx90a;gfx1030;gfx1250-strict;gfx1250"];
    let report = report_of(&package(temp.path(), artifacts, &both, "-", &all, "0"));
    assert_eq!(unrequested_targets(&report), Vec::<String>::new());
    assert_eq!(advertised_targets(&both.join("dist")), "['gfx1030', 'gfx1250', 'gfx1250-strict', 'gfx90a']");

    // A target without artifacts is an error naming it, and nothing is written.
    let missing = temp.path().join("missing");
    let output = package(temp.path(), artifacts, &missing, "-", &["--linux-amdgpu-families", "gfx90a,gfx942"], "0");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "requesting gfx942 must fail:\n{stderr}");
    assert!(
        stderr.contains(
            "requested GPU targets have no device artifacts: gfx942 (targets with artifacts: gfx1030, gfx1250, gfx1250-strict, gfx90a)"
        ),
        "{stderr}"
    );
    assert!(!missing.join("dist").join(format!("rocm-{VERSION}.tar.gz")).exists());

    // Artifacts nobody asked for are reported and still packaged: the sdist advertises
    // exactly the device wheels built.
    let one = temp.path().join("one");
    let report = report_of(&package(temp.path(), artifacts, &one, "-", &["--linux-amdgpu-families", "gfx90a"], "0"));
    let one = one.join("dist");
    assert_eq!(unrequested_targets(&report), ["gfx1030", "gfx1250", "gfx1250-strict"]);
    assert_eq!(report["counts"]["unrequested targets"], 3);
    assert_eq!(advertised_targets(&one), "['gfx1030', 'gfx1250', 'gfx1250-strict', 'gfx90a']");
    for target in ["gfx1030", "gfx1250", "gfx90a"] {
        wheel_of(&one, &format!("rocm_sdk_device_{target}"));
    }
    let verified = release_gate::verify_dist(&one).expect("verify");
    let violations: Vec<_> = verified.packages.iter().flat_map(|package| &package.violations).collect();
    assert!(violations.is_empty(), "{violations:#?}");
}

/// `xtask example --out` with a relative path: the compiler runs elsewhere, so the library
/// must resolve the path first (it once handed `cc` the relative path).
#[test]
fn example_accepts_a_relative_out_dir() {
    let temp = tempfile::tempdir().expect("temp dir");
    let output = Command::new(xtask())
        .current_dir(temp.path())
        .args(["example", "--quiet", "--kpack-split", "--out", "relative/artifacts"])
        .output()
        .expect("run xtask");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let manifest = temp.path().join("relative/artifacts/base_lib_generic/artifact_manifest.txt");
    assert!(manifest.is_file(), "{} missing", manifest.display());
}
