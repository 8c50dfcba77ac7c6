//! The `rocm` sdist's Python as the packager renders it, run by the system `python3`. The
//! Python unit tests of `packager/python/tests` are a test binary of their own
//! (`tests/python/main.rs`), one test each.

use std::process::Command;

/// The sdist files as the packager renders them build a `rocm` wheel with the in-tree
/// backend, selecting the device wheel the environment names.
#[test]
fn rendered_sdist_builds_a_wheel_with_its_backend() {
    use packager::output::python::sdist_files;
    use packager::plan::DistInfo;

    let targets = vec!["gfx1030".to_owned(), "gfx90a".to_owned()];
    let info = DistInfo {
        version: "7.12.0".to_owned(),
        nonce: String::new(),
        kpack_split: true,
        default_target_family: Some("gfx1030".to_owned()),
        available_target_families: targets.clone(),
        linux_target_families: targets.clone(),
        windows_target_families: Vec::new(),
        device_targets: targets,
        devel_target_specific: false,
        windows: false,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("rocm-7.12.0");
    for file in sdist_files(&info) {
        let path = root.join(&file.path);
        fs_err::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs_err::write(&path, &file.bytes).expect("write");
    }
    let out = dir.path().join("out");
    fs_err::create_dir_all(&out).expect("mkdir");
    let build = "import sys; sys.path.insert(0, sys.argv[1]); import _rocm_build_backend as b; print(b.build_wheel(sys.argv[2]))";
    let output = Command::new("python3")
        .args(["-c", build])
        .arg(&root)
        .arg(&out)
        .env("ROCM_SDK_TARGET_FAMILY", "gfx90a:xnack+")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let name = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert_eq!(name, "rocm-7.12.0-py3-none-any.whl");
    let mut wheel = zip::ZipArchive::new(fs_err::File::open(out.join(&name)).expect("open wheel")).expect("zip");
    let mut metadata = String::new();
    std::io::Read::read_to_string(
        &mut wheel.by_name("rocm-7.12.0.dist-info/METADATA").expect("METADATA"),
        &mut metadata,
    )
    .expect("read METADATA");
    // A final release admits its post releases (SPEC §3).
    assert!(metadata.contains("Requires-Dist: rocm-sdk-core>=7.12.0,<7.12.0.0.1\n"), "{metadata}");
    let device = "Requires-Dist: rocm-sdk-device-gfx90a>=7.12.0,<7.12.0.0.1; extra == \"device\"\n";
    assert!(metadata.contains(device), "{metadata}");
    assert!(wheel.by_name("rocm_sdk/_dist_info.py").is_ok());
}
