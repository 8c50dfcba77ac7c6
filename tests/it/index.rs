//! `packager::index`: the PEP 503 simple index and the find-links page, checked by
//! installing from them with real pip into fresh venvs.

use std::path::Path;
use std::process::Command;

use diagnostic::Diagnostic;

use crate::support;

fn pip(venv: &Path) -> Command {
    let mut command = Command::new(venv.join("bin/python"));
    command.args(["-m", "pip", "install", "--quiet", "--no-cache-dir", "--disable-pip-version-check"]);
    // The sdist's choice must not depend on the GPUs of the machine running the tests.
    command.env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology("cpu_only"));
    command
}

fn installed(venv: &Path) -> String {
    support::run(Command::new(venv.join("bin/python")).args(["-m", "pip", "list", "--format=freeze"]))
}

#[test]
fn pip_installs_from_the_simple_index() {
    let temp = tempfile::tempdir().expect("test step");
    let dist = support::package_example(temp.path(), false);
    let index = packager::index::write_index(&dist).expect("index the dist");
    assert_eq!(index.n_files(), 7, "{:?}", index.projects.keys());

    let venv = support::fresh_venv(&temp.path().join("venv"));
    let url = format!("file://{}", dist.join("simple").display());
    support::run(
        pip(&venv).args(["--index-url", &url, "rocm[libraries]"]).env("ROCM_SDK_TARGET_FAMILY", "gfx94X-dcgpu"),
    );
    let list = installed(&venv);
    assert!(list.contains("rocm-sdk-core==7.12.0.dev0"), "{list}");
    assert!(list.contains("rocm-sdk-libraries-gfx94X-dcgpu==7.12.0.dev0"), "{list}");
    assert!(!list.to_ascii_lowercase().contains("gfx110x"), "{list}");
    support::run(Command::new(venv.join("bin/rocm-sdk")).arg("test"));
}

#[test]
fn pip_installs_from_the_find_links_page() {
    let temp = tempfile::tempdir().expect("test step");
    let dist = support::package_example(temp.path(), true);
    packager::index::write_index(&dist).expect("index the dist");

    let venv = support::fresh_venv(&temp.path().join("venv"));
    let page = dist.join("index.html");
    support::run(pip(&venv).args(["--no-index", "--find-links"]).arg(&page).arg("rocm[libraries,devel]"));
    let list = installed(&venv);
    for name in ["rocm-sdk-core", "rocm-sdk-libraries", "rocm-sdk-devel"] {
        assert!(list.contains(&format!("{name}==7.12.0.dev0")), "{name} missing:\n{list}");
    }
    support::run(Command::new(venv.join("bin/rocm-sdk")).arg("test"));
}

/// The reference packager writes per-family folders; their files are indexed with links
/// into the folder, and pip follows them.
#[test]
fn files_in_family_subdirectories_are_indexed() {
    let temp = tempfile::tempdir().expect("test step");
    let dist = support::package_example(temp.path(), false);
    let profiler = "rocm_profiler-7.12.0.dev0-py3-none-linux_x86_64.whl";
    fs_err::create_dir(dist.join("gfx110X-all")).expect("test step");
    fs_err::rename(dist.join(profiler), dist.join("gfx110X-all").join(profiler)).expect("test step");
    packager::index::write_index(&dist).expect("index the dist");

    let page = fs_err::read_to_string(dist.join("simple/rocm-profiler/index.html")).expect("read the page");
    assert!(page.contains(&format!("href=\"../../gfx110X-all/{profiler}#sha256=")), "{page}");

    let venv = support::fresh_venv(&temp.path().join("venv"));
    let url = format!("file://{}", dist.join("simple").display());
    support::run(pip(&venv).args(["--index-url", &url, "rocm[profiler]"]));
    assert!(installed(&venv).contains("rocm-profiler==7.12.0.dev0"));
}

#[test]
fn links_carry_the_files_sha256_and_requires_python() {
    let temp = tempfile::tempdir().expect("test step");
    let dist = support::package_example(temp.path(), true);
    let index = packager::index::write_index(&dist).expect("index the dist");
    let core = &index.projects["rocm-sdk-core"][0];
    let bytes = fs_err::read(dist.join(&core.rel)).expect("test step");
    let sha = sha2::Digest::finalize(<sha2::Sha256 as sha2::Digest>::new_with_prefix(&bytes));
    let hex: String = sha.iter().map(|byte| format!("{byte:02x}")).collect();
    assert_eq!(core.sha256, hex);
    assert_eq!(core.len, bytes.len() as u64);
    let flat = fs_err::read_to_string(dist.join("index.html")).expect("read the page");
    let python = core.requires_python.as_deref().expect("our wheels declare Requires-Python");
    let expected =
        format!("href=\"{}#sha256={hex}\" data-requires-python=\"{}\"", core.file_name, python.replace('>', "&gt;"));
    assert!(flat.contains(&expected), "{flat}");
    // Every device wheel is its own project.
    assert!(
        index.projects.keys().any(|project| project.starts_with("rocm-sdk-device-")),
        "{:?}",
        index.projects.keys()
    );
}

#[test]
fn the_index_is_deterministic_and_follows_the_dist() {
    let temp = tempfile::tempdir().expect("test step");
    let dist = support::package_example(temp.path(), false);
    packager::index::write_index(&dist).expect("index the dist");
    let first = fs_err::read(dist.join("index.html")).expect("test step");
    let first_root = fs_err::read(dist.join("simple/index.html")).expect("test step");
    packager::index::write_index(&dist).expect("index the dist");
    assert_eq!(first, fs_err::read(dist.join("index.html")).expect("test step"));
    assert_eq!(first_root, fs_err::read(dist.join("simple/index.html")).expect("test step"));

    // A removed package leaves the index too; no temp files are left behind.
    fs_err::remove_file(dist.join("rocm_profiler-7.12.0.dev0-py3-none-linux_x86_64.whl")).expect("test step");
    packager::index::write_index(&dist).expect("index the dist");
    assert!(!dist.join("simple/rocm-profiler").exists());
    let root = fs_err::read_to_string(dist.join("simple/index.html")).expect("read the page");
    assert!(!root.contains("rocm-profiler") && root.contains("rocm-sdk-core/"), "{root}");
    let hidden: Vec<_> = walk(&dist).into_iter().filter(|name| name.contains(".tmp-")).collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}

#[test]
fn two_different_files_with_one_name_are_refused() {
    let temp = tempfile::tempdir().expect("test step");
    let dist = support::package_example(temp.path(), false);
    let sdist = "rocm-7.12.0.dev0.tar.gz";
    // The same bytes twice (merged CI folders) are offered once.
    fs_err::create_dir(dist.join("copy")).expect("test step");
    fs_err::copy(dist.join(sdist), dist.join("copy").join(sdist)).expect("test step");
    let index = packager::index::write_index(&dist).expect("index the dist");
    assert_eq!(index.projects["rocm"].len(), 1);
    assert_eq!(index.projects["rocm"][0].rel, sdist);

    // Different bytes under one name: the index cannot say which one pip gets.
    // A second build with another platform package suffix: same sdist name, other bytes.
    let other = temp.path().join("other");
    let config = packager::PackageConfig {
        version_suffix: "x".to_owned(),
        ..support::package_config(&temp.path().join("artifacts"), &other)
    };
    packager::package(&config, &packager::Silent).expect("test step");
    fs_err::create_dir(dist.join("other")).expect("test step");
    fs_err::copy(other.join("dist").join(sdist), dist.join("other").join(sdist)).expect("test step");
    let error = packager::index::write_index(&dist).expect_err("must fail");
    assert!(matches!(error, packager::index::IndexError::DuplicateName { .. }), "{error}");
    assert!(error.to_string().contains("other/rocm-7.12.0.dev0.tar.gz"), "{error}");
}

#[test]
fn a_file_that_is_not_a_package_is_an_error_naming_it() {
    let temp = tempfile::tempdir().expect("test step");
    fs_err::write(temp.path().join("broken-1.0-py3-none-any.whl"), b"not a zip").expect("test step");
    let error = packager::index::write_index(temp.path()).expect_err("must fail");
    assert_eq!(error.path(), Some(temp.path().join("broken-1.0-py3-none-any.whl").as_path()));
    assert!(error.to_string().starts_with("no package metadata in "), "{error}");
    assert!(!temp.path().join("index.html").exists());
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(dir).expect("test step") {
        let entry = entry.expect("test step");
        if entry.file_type().expect("test step").is_dir() {
            out.extend(walk(&entry.path()));
        } else {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

/// `--no-build-packages` trees are not indexed: their payload may hold any `.tar.gz`.
#[test]
fn package_trees_below_the_first_level_are_not_indexed() {
    let temp = tempfile::tempdir().expect("temp dir");
    let deep = temp.path().join("rocm_sdk_core-7.12.0.dev0/_rocm_sdk_core/share");
    fs_err::create_dir_all(&deep).expect("create tree");
    fs_err::write(deep.join("data.tar.gz"), b"not an sdist").expect("write payload");
    let index = packager::index::write_index(temp.path()).expect("index the dist");
    assert_eq!(index.n_files(), 0);
    let flat = fs_err::read_to_string(temp.path().join("index.html")).expect("read the page");
    assert!(!flat.contains("<a "), "{flat}");
}
