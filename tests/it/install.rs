//! End to end on the legacy example (packaged once, by `targets::build`):
//! installed with real pip and uv into fresh venvs and exercised the way users and the
//! loader use it (the checks themselves live in `installed`), the family chosen at install
//! time holding at run time, plus the plan and `verify` read against the same
//! build.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::installed::{self, assert_success, Uninstaller};
use crate::support;
use crate::targets::{build, VERSION};

/// Everything a user does with the legacy example, in one venv so the install is paid
/// once: eight concurrent first uses, the self-tests and the checks of [`installed`], the
/// devel tree against the plan, and an uninstall that leaves nothing behind.
#[test]
fn legacy_example_installs_loads_runs_and_uninstalls() {
    let build = build(false);
    let temp = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&temp.path().join("venv"));
    let before = installed::venv_listing(&venv);
    let output = support::pip_install(&venv, &build.dist, &["rocm[libraries,devel,profiler]"], &[]);
    assert_success(&output, "pip install rocm[libraries,devel,profiler]");

    installed::init_concurrently(&venv);
    installed::assert_installation_works(&venv, temp.path(), "_rocm_sdk_libraries_gfx110X_all/lib/librocblas.so.5");
    installed::assert_devel_tree_matches_plan(&venv, &build.artifacts, "rocm-sdk-devel-gfx110X-all");
    // Core, libraries, devel and profiler: each with its bill of materials where pip put it.
    assert_eq!(installed::assert_sboms_installed(&venv, &build.dist), 4);

    // The same library as built (no packaged RPATH) does not find core at all.
    let original = installed::walk(&build.artifacts)
        .into_iter()
        .find(|path| path.ends_with("blas_lib_gfx110X-all/math-libs/BLAS/rocBLAS/stage/lib/librocblas.so.5"))
        .expect("original librocblas");
    let output = installed::python(&venv, "import ctypes, sys; ctypes.CDLL(sys.argv[1])", &[&original], &[]);
    assert!(!output.status.success(), "the unpatched library should not find libamdhip64.so.7");

    assert_eq!(installed::rocm_dists(&venv).len(), 5);
    installed::assert_uninstall_restores(&venv, &before, Uninstaller::Pip);
}

/// `ROCM_SDK_TARGET_FAMILY` picks the legacy family's wheels at install time (SPEC §3), and
/// at run time the self-tests then use that family: with the non-default family, neither
/// the libraries nor the devel tests are skipped.
#[test]
fn target_family_selects_the_family_wheels() {
    let dist = &build(false).dist;
    let cases = [
        ("gfx110X-all", "rocm[libraries]", &["rocm-sdk-libraries-gfx110X-all"][..]),
        (
            "gfx94X-dcgpu",
            "rocm[libraries,devel]",
            &["rocm-sdk-libraries-gfx94X-dcgpu", "rocm-sdk-devel-gfx94X-dcgpu"][..],
        ),
    ];
    for (family, requirement, wheels) in cases {
        let venv_dir = tempfile::tempdir().expect("tempdir");
        let venv = support::fresh_venv(&venv_dir.path().join("venv"));
        let envs = [("ROCM_SDK_TARGET_FAMILY", family), ("PATH", installed::PATH_WITHOUT_GPU_TOOLS)];
        let output = support::pip_install(&venv, dist, &[requirement], &envs);
        assert_success(&output, &format!("pip install {requirement} with ROCM_SDK_TARGET_FAMILY={family}"));
        let list = Command::new(venv.join("bin/python"))
            .args(["-m", "pip", "list", "--format=freeze"])
            .output()
            .expect("pip list");
        let list = String::from_utf8_lossy(&list.stdout).to_lowercase();
        for wheel in wheels {
            assert!(list.contains(&format!("{}=={VERSION}", wheel.to_lowercase())), "{family}: {list}");
        }
        let other = if family == "gfx110X-all" { "gfx94x" } else { "gfx110x" };
        assert!(!list.contains(other), "{family} also installed {other}: {list}");
        if requirement.contains("devel") {
            let log = installed::rocm_sdk(&venv, &["test"], &[("ROCM_SDK_TARGET_FAMILY", family)]);
            for part in ["libraries", "devel"] {
                assert!(!log.contains(&format!("skipping the {part} tests")), "{family}: {part} skipped:\n{log}");
            }
        }
    }
    let venv_dir = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&venv_dir.path().join("venv"));
    let output = support::pip_install(&venv, dist, &["rocm[libraries]"], &[("ROCM_SDK_TARGET_FAMILY", "gfx1200")]);
    assert!(!output.status.success(), "an unavailable family must fail");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("gfx110X-all") && stderr.contains("gfx94X-dcgpu"), "error lists the families: {stderr}");
}

/// Python printing, as JSON, what the runtime picks with no variable set: the family, where
/// `find_libraries` finds hipblas, and what `preload_libraries` loaded it from; a failure
/// is `[exception type, message]`.
const FAMILY_PROBE: &str = "import json, rocm_sdk, rocm_sdk._dist_info as di\n\
    def attempt(function):\n\
    \x20   try:\n\
    \x20       return function()\n\
    \x20   except Exception as error:\n\
    \x20       return [type(error).__name__, str(error)]\n\
    print(json.dumps({\n\
    \x20   'family': attempt(di.determine_target_family),\n\
    \x20   'found': attempt(lambda: [str(path) for path in rocm_sdk.find_libraries('hipblas')]),\n\
    \x20   'preloaded': attempt(lambda: (rocm_sdk.initialize_process(['hipblas']), rocm_sdk._ALL_CDLLS['hipblas']._name)[1]),\n\
    }))";

fn probe_family(venv: &Path) -> serde_json::Value {
    let output = installed::python(venv, FAMILY_PROBE, &[], &[]);
    assert_success(&output, "the family probe");
    assert!(output.stderr.is_empty(), "the runtime printed {:?}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON from the family probe")
}

/// The family chosen at install time holds at run time without the variable (SPEC §4):
/// the non-default family installed with `ROCM_SDK_TARGET_FAMILY` set is then
/// what `determine_target_family()`, `find_libraries`, `initialize_process` and
/// `rocm-sdk test` use, on a machine with no GPU. With a second family installed beside
/// it, nothing says which, and each of them fails with one error listing both.
#[test]
fn the_installed_family_holds_without_the_variable() {
    let dist = &build(false).dist;
    let temp = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&temp.path().join("venv"));
    let envs = [("ROCM_SDK_TARGET_FAMILY", "gfx94X-dcgpu"), ("PATH", installed::PATH_WITHOUT_GPU_TOOLS)];
    let output = support::pip_install(&venv, dist, &["rocm[libraries,devel]"], &envs);
    assert_success(&output, "pip install rocm[libraries,devel] with ROCM_SDK_TARGET_FAMILY=gfx94X-dcgpu");

    // `installed::python` and `installed::rocm_sdk` run without the variable and without GPU tools.
    let hipblas = installed::site_packages(&venv).join("_rocm_sdk_libraries_gfx94X_dcgpu/lib/libhipblas.so.3");
    let hipblas = hipblas.to_string_lossy();
    assert_eq!(
        probe_family(&venv),
        serde_json::json!({"family": "gfx94X-dcgpu", "found": [hipblas], "preloaded": hipblas})
    );
    let log = installed::rocm_sdk(&venv, &["test"], &[]);
    assert!(!log.contains("skipping the libraries tests") && !log.contains("skipping the devel tests"), "{log}");
    assert!(log.contains("rocm_sdk.tests.libraries_test") && log.contains("rocm_sdk.tests.devel_test"), "{log}");
    let root = installed::rocm_sdk(&venv, &["path", "--root"], &[]);
    assert!(root.trim_end().ends_with("_rocm_sdk_devel_gfx94X_dcgpu"), "{root}");

    let output = support::pip_install(&venv, dist, &["--no-deps", "rocm-sdk-libraries-gfx110X-all"], &[]);
    assert_success(&output, "pip install --no-deps rocm-sdk-libraries-gfx110x-all");
    let both = "several ROCm target families are installed in this environment (gfx110X-all, gfx94X-dcgpu)";
    let probe = probe_family(&venv);
    for key in ["family", "found", "preloaded"] {
        let message = probe[key][1].as_str().unwrap_or_default();
        assert!(message.contains(both) && message.contains("set ROCM_SDK_TARGET_FAMILY"), "{key}: {probe}");
    }
    assert_eq!(probe["family"][0], "TargetFamilyError", "{probe}");
    for args in [&["test"][..], &["path", "--root"][..]] {
        let output = installed::venv_command(&venv, "rocm-sdk").args(args).output().expect("run rocm-sdk");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "rocm-sdk {args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "rocm-sdk {args:?} printed {:?}", String::from_utf8_lossy(&output.stdout));
        assert_eq!(stderr.matches(both).count(), 1, "rocm-sdk {args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "rocm-sdk {args:?}: {stderr}");
    }
    // A tool of the devel tree: whose tree is not ours to guess either.
    let hipcc = installed::venv_command(&venv, "hipcc").arg("--version").output().expect("run hipcc");
    let stderr = String::from_utf8_lossy(&hipcc.stderr);
    assert_eq!(hipcc.status.code(), Some(127), "hipcc: {stderr}");
    assert!(stderr.starts_with("rocm-sdk-core: cannot run hipcc: ") && stderr.contains(both), "hipcc: {stderr}");
    // The variable settles it.
    let chosen = installed::rocm_sdk(&venv, &["path", "--root"], &[("ROCM_SDK_TARGET_FAMILY", "gfx94X-dcgpu")]);
    assert_eq!(chosen, root);
}

/// `--plan --json` for the example, checked against the SPEC §2 rules (not against a stored
/// copy of itself).
#[test]
fn plan_json_follows_the_rules() {
    let artifacts = &build(false).artifacts;
    let config = support::package_config(artifacts, Path::new("/nonexistent-dest"));
    let plan = packager::plan(&config, &packager::Silent).expect("plan");
    let json = serde_json::to_value(&plan).expect("json");
    let packages: BTreeMap<String, &serde_json::Value> = json["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| (package["dist_name"].as_str().expect("name").to_owned(), package))
        .collect();
    let names: Vec<&str> = packages.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "rocm-profiler",
            "rocm-sdk-core",
            "rocm-sdk-devel-gfx110X-all",
            "rocm-sdk-devel-gfx94X-dcgpu",
            "rocm-sdk-libraries-gfx110X-all",
            "rocm-sdk-libraries-gfx94X-dcgpu"
        ]
    );
    let core = &packages["rocm-sdk-core"]["files"];
    let core_files = core.as_object().expect("core files");
    for path in core_files.keys() {
        assert!(
            !path.contains("/cmake/") && !path.starts_with("bin/rocprof-") && !path.contains("rocprofiler-systems"),
            "core ships {path}"
        );
    }
    // SONAME rule: only SONAME-named libraries, aliases and dangling links reported.
    for package in packages.values() {
        for (path, file) in package["files"].as_object().expect("files") {
            if let Some(source) = file["source"].as_str() {
                if let Ok(Some(info)) = packager::elf::read_elf(Path::new(source)) {
                    if let (Some(soname), packager::elf::ElfKind::SharedLibrary) = (&info.soname, info.kind) {
                        // The profiler's unversioned names are recreated on purpose (SPEC §2).
                        let recreated =
                            path.starts_with("lib/librocprof-sys") || path.starts_with("lib/libprofiler-hub");
                        assert!(
                            path.ends_with(soname.as_str()) || recreated,
                            "{path} is not named after its SONAME {soname}"
                        );
                    }
                }
            }
        }
    }
    assert_eq!(core["lib/libamdhip64.so.7"]["action"], "patch-rpath");
    assert!(core.get("lib/libamdhip64.so").is_none() && core.get("lib/libamdhip64.so.7.1.0").is_none());
    assert_eq!(
        core["bin/rocm-smi"],
        serde_json::json!({"action": "launcher", "target": "../libexec/rocm_smi/rocm_smi.py", "link": core["bin/rocm-smi"]["link"]})
    );
    assert_eq!(core["lib/llvm/bin/amdclang"]["target"], "clang");
    assert_eq!(core["bin/amdclang"]["target"], "../lib/llvm/bin/clang");
    let hipinfo_rpath = core["bin/hipInfo"]["rpath"].as_str().expect("hipInfo rpath");
    assert_eq!(
        hipinfo_rpath,
        "$ORIGIN/../lib:$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib:$ORIGIN/../../_rocm_sdk_core/lib/rocm_sysdeps/lib"
    );
    assert_eq!(core["bin/hipInfo"]["removed"], serde_json::json!(["/build/x/lib"]));
    let rocblas = &packages["rocm-sdk-libraries-gfx110X-all"]["files"]["lib/librocblas.so.5"];
    assert!(rocblas["rpath"]
        .as_str()
        .expect("rpath")
        .split(':')
        .any(|entry| entry == "$ORIGIN/../../_rocm_sdk_core/lib"));
    let profiler = &packages["rocm-profiler"]["files"];
    assert_eq!(profiler["bin/rocprof-compute"]["action"], "launcher");
    assert_eq!(profiler["lib/librocprof-sys.so"]["action"], "patch-rpath");
    let devel = &packages["rocm-sdk-devel-gfx110X-all"]["devel_tree"];
    assert_eq!(
        devel["lib/libamdhip64.so"],
        serde_json::json!({"kind": "symlink", "target": "libamdhip64.so.7", "why": "soname-alias"})
    );
    assert_eq!(devel["lib/libamdhip64.so.7"]["target"], "../../_rocm_sdk_core/lib/libamdhip64.so.7");
    assert_eq!(
        devel["lib/llvm/lib/clang/current"],
        serde_json::json!({"kind": "symlink", "target": "22", "why": "source"})
    );
    assert!(devel.get("lib/libamdhip64.so.6").is_none(), "the dangling link is dropped");
    let findings = json["findings"].as_array().expect("findings");
    assert!(
        findings.iter().any(|f| f["path"] == "lib/libamdhip64.so.6" && f["finding"] == "dropped"),
        "dangling link reported"
    );
}

/// The example's own packages pass `verify --dist`, and the glibc floor it reports
/// is the one `auditwheel show` finds.
#[test]
fn verify_passes_on_the_example_and_agrees_with_auditwheel() {
    let dist = &build(false).dist;
    let report = release_gate::verify_dist(dist).expect("verify");
    assert_eq!(report.n_violations(), 0, "{:#?}", report.violations().collect::<Vec<_>>());
    let auditwheel = support::tools_venv().join("bin/auditwheel");
    let mut compared = 0;
    for package in &report.packages {
        let Some(tag) = package.portability.as_ref().and_then(|portability| portability.manylinux_tag.clone()) else {
            continue;
        };
        if !package.file.contains("rocm_sdk_core") && !package.file.contains("rocm_profiler") {
            continue;
        }
        let output = support::run(Command::new(&auditwheel).arg("show").arg(dist.join(&package.file)));
        assert!(
            output.contains(&format!("\"{tag}\"")),
            "{}: verify says {tag}, auditwheel says:\n{output}",
            package.file
        );
        compared += 1;
    }
    assert_eq!(compared, 2);
}

/// The packages install and pass their self-test with `uv pip install` too, and
/// `uv pip uninstall` takes away everything, the expanded devel tree included.
#[test]
fn uv_installs_and_uninstalls_the_example() {
    let dist = &build(false).dist;
    let venv_dir = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&venv_dir.path().join("venv"));
    let before = installed::venv_listing(&venv);
    let uv = support::tools_venv().join("bin/uv");
    let output = Command::new(uv)
        .args(["pip", "install", "--no-cache", "--offline", "--no-index", "--python"])
        .arg(venv.join("bin/python"))
        .arg("--find-links")
        .arg(dist)
        .arg("rocm[libraries,devel]")
        .env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology("cpu_only"))
        .output()
        .expect("uv");
    assert_success(&output, "uv pip install");
    installed::rocm_sdk(&venv, &["test"], &[]);
    assert_eq!(installed::assert_sboms_installed(&venv, dist), 3, "core, libraries and devel");
    installed::assert_uninstall_restores(&venv, &before, Uninstaller::Uv);
}

/// uv caches the wheel it builds from the `rocm` sdist and replays that family
/// choice later; `tool.uv.cache-keys` does not reach an sdist archive (only local project
/// directories), so the README says `uv pip install --no-cache`. That command follows
/// `ROCM_SDK_TARGET_FAMILY` even after a cached install of another family.
#[test]
fn uv_with_no_cache_follows_the_family_after_a_cached_install() {
    let dist = &build(false).dist;
    let temp = tempfile::tempdir().expect("tempdir");
    let cache = temp.path().join("uv-cache");
    let uv = support::tools_venv().join("bin/uv");
    for (family, no_cache, expected) in [
        ("gfx94X-dcgpu", false, "rocm-sdk-libraries-gfx94X-dcgpu"),
        ("gfx110X-all", true, "rocm-sdk-libraries-gfx110X-all"),
    ] {
        let venv = support::fresh_venv(&temp.path().join(family));
        let mut command = Command::new(&uv);
        command.args(["pip", "install", "--offline", "--no-index", "--python"]).arg(venv.join("bin/python"));
        if no_cache {
            command.arg("--no-cache");
        }
        let output = command
            .arg("--find-links")
            .arg(dist)
            .arg("rocm[libraries]")
            .env("UV_CACHE_DIR", &cache)
            .env("ROCM_SDK_TARGET_FAMILY", family)
            .env("PATH", installed::PATH_WITHOUT_GPU_TOOLS)
            .env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology("cpu_only"))
            .output()
            .expect("uv");
        assert_success(&output, &format!("uv pip install for {family}"));
        let dists = installed::rocm_dists(&venv);
        assert!(dists.contains(expected), "{family}: {dists:?}");
    }
}
