//! The `xtask` binary on the example of each mode: `--plan --json` describes the packages
//! the real run writes (and writes nothing), and the family flags reach `_dist_info_data.py`
//! with the default SPEC §2 asks for.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output};

use super::{constant, sdist_dist_info};
use crate::support;
use crate::targets::cli::xtask;
use crate::targets::{build, file_name, wheel_members, wheel_of, wheels, VERSION};

/// `xtask package` of `artifacts` with `--dest-dir dest` and `extra` flags, quiet, run from `cwd`
/// (no TheRock checkout), with the host's platform tag.
fn package(cwd: &Path, artifacts: &Path, dest: &Path, extra: &[&str]) -> Output {
    let output = support::output(
        Command::new(xtask())
            .current_dir(cwd)
            .args(["package", "-q", "--version", VERSION, "--artifact-dir"])
            .arg(artifacts)
            .arg("--dest-dir")
            .arg(dest)
            .args(extra)
            .env("NO_COLOR", "1")
            .env_remove("ROCM_SDK_WHEEL_PLATFORM_TAG"),
    )
    .expect("run xtask");
    assert!(
        output.status.success(),
        "xtask package {extra:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A wheel file name's distribution part, normalised: `rocm_sdk_device_gfx90a`.
fn normalized(dist_name: &str) -> String {
    dist_name.to_ascii_lowercase().replace(['-', '.'], "_")
}

#[test]
fn plan_json_describes_what_the_run_writes() {
    for kpack_split in [false, true] {
        let build = build(kpack_split);
        let temp = tempfile::tempdir().expect("temp dir");
        let dest = temp.path().join("dist");
        let output = package(temp.path(), &build.artifacts, &dest, &["--plan", "--json=-"]);
        let plan: serde_json::Value = serde_json::from_slice(&output.stdout).expect("--plan --json prints JSON");
        assert!(!dest.exists(), "--plan wrote into {}", dest.display());
        assert_eq!(plan["version"], VERSION);
        assert_eq!(plan["kpack_split"], kpack_split);
        let packages = plan["packages"].as_array().expect("packages");

        // Every wheel of the real run, and nothing else; the `rocm` sdist is no package of
        // the plan, its content follows from the plan's families.
        let planned: BTreeSet<String> =
            packages.iter().map(|package| normalized(package["dist_name"].as_str().expect("dist_name"))).collect();
        let written: BTreeSet<String> = wheels(&build.dist)
            .iter()
            .map(|wheel| file_name(wheel).split_once('-').expect("a wheel name").0.to_owned())
            .collect();
        assert_eq!(planned, written, "kpack_split={kpack_split}");
        let available: Vec<String> = plan["families"]["available"]
            .as_array()
            .expect("families")
            .iter()
            .map(|family| format!("'{}'", family.as_str().expect("a family")))
            .collect();
        let advertised = sdist_dist_info(&build.dist);
        assert_eq!(constant(&advertised, "AVAILABLE_TARGET_FAMILIES"), format!("[{}]", available.join(", ")));

        // Platform dir → the relative paths each runtime package ships there (device
        // wheels share the libraries dir).
        let mut runtime: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut n_files = 0;
        for package in packages {
            let dist_name = package["dist_name"].as_str().expect("dist_name");
            let files = package["files"].as_object().expect("files");
            for (rel, file) in files {
                check_runtime_file(dist_name, rel, file);
            }
            n_files += files.len();
            if package["group"] != "devel" {
                let dir = package["platform_dir"].as_str().expect("a runtime package has a platform dir");
                runtime.entry(dir).or_default().extend(files.keys().map(String::as_str));
            }
        }
        assert!(n_files > 50, "kpack_split={kpack_split}: suspiciously few files ({n_files})");

        let mut n_links = 0;
        for package in packages.iter().filter(|package| package["group"] == "devel") {
            let devel_dir = package["platform_dir"].as_str().expect("devel platform dir");
            for (rel, entry) in package["devel_tree"].as_object().expect("devel tree") {
                if entry["kind"] != "symlink" || entry["why"] != "runtime-package" {
                    continue;
                }
                n_links += 1;
                let target = entry["target"].as_str().expect("link target");
                let (dir, path) = resolve_in_site_packages(devel_dir, rel, target);
                assert!(
                    runtime.get(dir.as_str()).is_some_and(|paths| paths.contains(path.as_str())),
                    "{devel_dir}/{rel} -> {target}: no runtime package ships {dir}/{path}"
                );
            }
        }
        assert!(n_links > 10, "kpack_split={kpack_split}: suspiciously few links into runtime packages ({n_links})");
    }
}

/// A runtime file is copied, patched, a launcher or generated; a copied or patched one
/// reads a regular file of the artifacts, never a symlink (SPEC §2: no symlink in a wheel).
fn check_runtime_file(dist_name: &str, rel: &str, file: &serde_json::Value) {
    let action = file["action"].as_str().unwrap_or_default();
    match action {
        "copy" | "patch-rpath" => {
            let source = PathBuf::from(file["source"].as_str().expect("a source path"));
            let metadata = fs_err::symlink_metadata(&source).expect("the source exists");
            assert!(metadata.is_file(), "{dist_name}: {rel} is read from {}, no regular file", source.display());
        }
        "launcher" => assert!(file["target"].is_string(), "{dist_name}: launcher {rel} has no target"),
        "generated" => {}
        other => panic!("{dist_name}: {rel} has action {other:?}"),
    }
}

/// Where the link `{devel_dir}/{rel}` → `target` lands, as (top directory in
/// site-packages, path below it); panics if it leaves site-packages.
fn resolve_in_site_packages(devel_dir: &str, rel: &str, target: &str) -> (String, String) {
    let mut parts: Vec<String> = format!("{devel_dir}/{rel}").split('/').map(str::to_owned).collect();
    parts.pop();
    for component in Path::new(target).components() {
        match component {
            Component::ParentDir => {
                assert!(parts.pop().is_some(), "{devel_dir}/{rel} -> {target} leaves site-packages");
            }
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => panic!("{devel_dir}/{rel} -> {target} is not relative"),
        }
    }
    assert!(parts.len() > 1, "{devel_dir}/{rel} -> {target} lands in site-packages itself");
    let dir = parts.remove(0);
    (dir, parts.join("/"))
}

/// SPEC §2: with both family flags the available families are the build's, each flag's
/// list is written as given (as targets in kpack-split mode), and the default is a family
/// both lists name even where the sorted first is another. Read back from the `rocm`
/// sdist and the core wheel of a `--only meta,core` run.
#[test]
fn family_flags_reach_dist_info() {
    // (mode, --linux-amdgpu-families, --windows-amdgpu-families, LINUX_, WINDOWS_, DEFAULT_)
    let cases = [
        (
            false,
            "gfx110X-all,gfx94X-dcgpu",
            "gfx94X-dcgpu",
            "['gfx110X-all', 'gfx94X-dcgpu']",
            "['gfx94X-dcgpu']",
            "'gfx94X-dcgpu'",
        ),
        (true, "gfx90a:xnack+;gfx1030", "gfx90a", "['gfx1030', 'gfx90a']", "['gfx90a']", "'gfx90a'"),
    ];
    for (kpack_split, linux, windows, linux_written, windows_written, default) in cases {
        let build = build(kpack_split);
        let temp = tempfile::tempdir().expect("temp dir");
        let dest = temp.path().join("dist");
        let flags = ["--only", "meta,core", "--linux-amdgpu-families", linux, "--windows-amdgpu-families", windows];
        package(temp.path(), &build.artifacts, temp.path(), &flags);
        let core = wheel_members(&wheel_of(&dest, "rocm_sdk_core"));
        let core_dist_info = String::from_utf8(core["rocm_sdk_core/_dist_info_data.py"].clone()).expect("UTF-8 source");
        let sdist_source = sdist_dist_info(&dest);
        // The available families are still the build's, whatever the flags name.
        let normal_run = sdist_dist_info(&build.dist);
        let available = constant(&normal_run, "AVAILABLE_TARGET_FAMILIES");
        for source in [&sdist_source, &core_dist_info] {
            assert_eq!(constant(source, "LINUX_TARGET_FAMILIES"), linux_written, "kpack_split={kpack_split}");
            assert_eq!(constant(source, "WINDOWS_TARGET_FAMILIES"), windows_written, "kpack_split={kpack_split}");
            assert_eq!(constant(source, "DEFAULT_TARGET_FAMILY"), default, "kpack_split={kpack_split}");
            assert_eq!(constant(source, "AVAILABLE_TARGET_FAMILIES"), available, "kpack_split={kpack_split}");
        }
    }
}
