//! Real pip in fresh venvs on the kpack-split output (SPEC §3, §4, §6): the example passes
//! what the legacy one does (the checks of `installed`), device wheels install and
//! uninstall without breaking anything else, and the `rocm` sdist picks device wheels
//! by base target: from `ROCM_SDK_TARGET_FAMILY`, from a GPU `offload-arch` reports, and
//! never from the fallback default.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{build, VERSION};
use crate::installed::{self, rocm_dists as installed, same_inode, site_packages, PATH_WITHOUT_GPU_TOOLS};
use crate::support;

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `pip install` of `requirements` from the kpack-split dist, checked to succeed; returns
/// pip's stderr (warnings).
fn install(venv: &Path, requirements: &[&str], envs: &[(&str, &str)]) -> String {
    let output = support::pip_install(venv, &build(true).dist, requirements, envs);
    assert!(
        output.status.success(),
        "pip install {requirements:?} {envs:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr_of(&output)
    );
    stderr_of(&output)
}

fn uninstall(venv: &Path, names: &[&str]) {
    support::run(Command::new(venv.join("bin/python")).args(["-m", "pip", "uninstall", "--quiet", "-y"]).args(names));
}

/// `Provides-Extra` of the installed `rocm`, sorted: what the sdist built on this machine offers.
fn extras(venv: &Path) -> Vec<String> {
    let code =
        "import importlib.metadata as m; print('\\n'.join(sorted(m.metadata('rocm').get_all('Provides-Extra'))))";
    support::run(Command::new(venv.join("bin/python")).args(["-c", code])).lines().map(str::to_owned).collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| name.to_string()).collect()
}

fn rocm_sdk(venv: &Path, args: &[&str]) -> String {
    installed::rocm_sdk(venv, args, &[])
}

/// Everything a user does with the kpack-split example, in one venv so the install is
/// paid once: the checks the legacy example passes (see [`installed`]), the device
/// metadata modules, a device wheel uninstalled and installed again, and an uninstall of
/// everything that leaves nothing behind (device links included).
#[test]
fn kpack_split_example_installs_loads_runs_and_uninstalls() {
    let build = build(true);
    let temp = tempfile::tempdir().expect("temp dir");
    let venv = support::fresh_venv(&temp.path().join("venv"));
    let before = installed::venv_listing(&venv);
    install(&venv, &["rocm[libraries,devel,profiler,device-all]"], &[]);
    let everything = set(&[
        "rocm",
        "rocm-profiler",
        "rocm-sdk-core",
        "rocm-sdk-devel",
        "rocm-sdk-device-gfx1030",
        "rocm-sdk-device-gfx1250",
        "rocm-sdk-device-gfx90a",
        "rocm-sdk-libraries",
    ]);
    assert_eq!(installed(&venv), everything);

    // The racing first uses also place the device links (and record them).
    installed::init_concurrently(&venv);
    installed::assert_installation_works(&venv, temp.path(), "_rocm_sdk_libraries/lib/librocblas.so.5");
    installed::assert_devel_tree_matches_plan(&venv, &build.artifacts, "rocm-sdk-devel");
    assert_device_modules_import(&venv);
    uninstalling_a_device_wheel_leaves_the_rest_working(&venv, &everything);
    installed::assert_records_complete(&venv);
    installed::assert_uninstall_restores(&venv, &before, installed::Uninstaller::Pip);
}

/// Each device wheel's metadata module (SPEC §2) imports from the installed libraries
/// package and names its target, its version and an importable libraries package.
fn assert_device_modules_import(venv: &Path) {
    let code = "import importlib, importlib.metadata as m, json, sys\n\
        out = {}\n\
        for target in sys.argv[1:]:\n\
        \x20   d = importlib.import_module('_rocm_sdk_libraries._device_' + target)\n\
        \x20   importlib.import_module(d.LIBRARIES_PY_PACKAGE_NAME)\n\
        \x20   out[target] = [d.__version__, d.TARGET, d.LIBRARIES_PY_PACKAGE_NAME, m.version(d.DIST_NAME), d.__file__]\n\
        print(json.dumps(out))";
    let targets = [Path::new("gfx1030"), Path::new("gfx90a")];
    let output = installed::python(venv, code, &targets, &[]);
    installed::assert_success(&output, "importing the device modules");
    let values: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let libraries = site_packages(venv).join("_rocm_sdk_libraries");
    for target in ["gfx1030", "gfx90a"] {
        let file = libraries.join(format!("_device_{target}.py"));
        assert_eq!(
            values[target],
            serde_json::json!([VERSION, target, "rocm_sdk_libraries", VERSION, file.to_string_lossy()]),
            "_rocm_sdk_libraries._device_{target}"
        );
    }
}

/// Uninstalling one device wheel removes its files and devel links and nothing else;
/// installing it again brings them back.
fn uninstalling_a_device_wheel_leaves_the_rest_working(venv: &Path, everything: &BTreeSet<String>) {
    let libraries = site_packages(venv).join("_rocm_sdk_libraries");
    let devel_root = PathBuf::from(rocm_sdk(venv, &["path", "--root"]).trim());
    let gfx1030_file = "lib/rocblas/library/Kernels_gfx1030.co";
    let gfx90a_file = "lib/rocblas/library/Kernels_gfx90a-xnack-.co";
    // Every file a device wheel added, its metadata module and manifest included, appears
    // in the devel tree as a hard link of the installed one.
    let added: Vec<(&str, Vec<String>)> =
        ["gfx1030", "gfx90a"].into_iter().map(|target| (target, files_added_by(venv, target))).collect();
    for (target, files) in &added {
        for wanted in [format!("_device_{target}.py"), format!(".devel_links/{target}.json")] {
            assert!(files.contains(&wanted), "rocm-sdk-device-{target} added no {wanted}: {files:?}");
        }
        for file in files {
            let (installed_file, linked) = (libraries.join(file), devel_root.join(file));
            assert!(linked.is_file() && installed_file.is_file(), "{file} missing from the devel tree or libraries");
            assert!(same_inode(&installed_file, &linked), "{file} is not a hard link");
        }
    }
    assert!(added[0].1.iter().any(|file| file == gfx1030_file) && added[1].1.iter().any(|file| file == gfx90a_file));

    uninstall(venv, &["rocm-sdk-device-gfx1030"]);
    for file in &added[0].1 {
        assert!(!devel_root.join(file).exists(), "{file} of rocm-sdk-device-gfx1030 is still in the devel tree");
    }
    for file in &added[1].1 {
        assert!(devel_root.join(file).is_file(), "{file} of rocm-sdk-device-gfx90a left the devel tree");
    }
    assert!(!installed(venv).contains("rocm-sdk-device-gfx1030"));
    rocm_sdk(venv, &["test"]);
    gpu_checks_name_what_is_missing(venv, Some("gfx1030"));
    let module_file = support::run(
        Command::new(venv.join("bin/python"))
            .args(["-c", "import _rocm_sdk_libraries; print(_rocm_sdk_libraries.__file__)"]),
    );
    assert_eq!(PathBuf::from(module_file.trim()), libraries.join("__init__.py"));
    assert!(!libraries.join(gfx1030_file).exists() && !devel_root.join(gfx1030_file).exists());
    assert!(libraries.join(gfx90a_file).is_file() && devel_root.join(gfx90a_file).is_file());

    install(venv, &["rocm-sdk-device-gfx1030"], &[]);
    assert_eq!(&installed(venv), everything);
    rocm_sdk(venv, &["test"]);
    gpu_checks_name_what_is_missing(venv, None);
    assert!(same_inode(&libraries.join(gfx1030_file), &devel_root.join(gfx1030_file)));
}

/// `rocm-sdk doctor --json` on a recorded topology: (exit code, report).
fn doctor(venv: &Path, tree: &str) -> (Option<i32>, serde_json::Value) {
    let mut command = installed::venv_command(venv, "rocm-sdk");
    command.args(["doctor", "--json"]).env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology(tree));
    let output = support::output(&mut command).expect("run rocm-sdk doctor");
    assert!(output.stderr.is_empty(), "{}", stderr_of(&output));
    (output.status.code(), serde_json::from_slice(&output.stdout).expect("doctor --json prints JSON"))
}

/// On the machine with an MI210 and an RX 6800 XT (SPEC §4): `rocm-sdk doctor` names the
/// missing device wheel and its pip line, and exits 1; a console script and
/// `initialize_process` warn once about it; with everything installed, all is quiet.
fn gpu_checks_name_what_is_missing(venv: &Path, missing: Option<&str>) {
    let tree = "two_gpus_gfx90a_gfx1030";
    let (code, report) = doctor(venv, tree);
    let statuses: Vec<(u64, &str)> = report["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .map(|gpu| (gpu["node"].as_u64().unwrap_or(0), gpu["status"].as_str().unwrap_or_default()))
        .collect();
    let warn = [("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology(tree))];
    let mut version = installed::venv_command(venv, "rocm-sdk");
    version.arg("version").envs(warn.iter().map(|(key, value)| (*key, value.as_os_str())));
    let version = support::output(&mut version).expect("run rocm-sdk version");
    installed::assert_success(&version, "rocm-sdk version");
    let warnings: Vec<String> = stderr_of(&version).lines().map(str::to_owned).collect();
    let initialize = "import rocm_sdk, warnings\n\
        with warnings.catch_warnings(record=True) as caught:\n\
        \x20   warnings.simplefilter('always')\n\
        \x20   rocm_sdk.initialize_process(); rocm_sdk.initialize_process()\n\
        print(sum(issubclass(w.category, rocm_sdk.MissingDeviceCodeWarning) for w in caught))";
    let topology = support::kfd_topology(tree);
    let counted =
        installed::python(venv, initialize, &[], &[("ROCM_SDK_KFD_TOPOLOGY", topology.to_str().expect("UTF-8"))]);
    installed::assert_success(&counted, "initialize_process");
    let count = String::from_utf8_lossy(&counted.stdout).trim().to_owned();
    match missing {
        Some(target) => {
            assert_eq!((code, statuses), (Some(1), vec![(1, "covered"), (2, "missing")]), "{report:#}");
            let line = format!("pip install 'rocm[device-{target}]'");
            assert_eq!(report["install"], line.as_str());
            let [warning] = warnings.as_slice() else { panic!("one warning line: {warnings:?}") };
            assert!(warning.starts_with("rocm-sdk: warning: ") && warning.contains(&line), "{warning}");
            assert_eq!(count, "1", "initialize_process warns once per process");
        }
        None => {
            assert_eq!((code, statuses), (Some(0), vec![(1, "covered"), (2, "covered")]), "{report:#}");
            assert_eq!((warnings, count.as_str()), (Vec::new(), "0"));
        }
    }
}

/// What `rocm-sdk-device-{target}` added to the libraries platform dir, relative to it, as
/// its RECORD lists them; the bytecode pip compiled at install time is not the wheel's.
fn files_added_by(venv: &Path, target: &str) -> Vec<String> {
    let code = "import importlib.metadata as m, sys\n\
        for file in m.distribution('rocm-sdk-device-' + sys.argv[1]).files:\n\
        \x20   print(file.as_posix())";
    let output = installed::python(venv, code, &[Path::new(target)], &[]);
    installed::assert_success(&output, "reading a device wheel's RECORD");
    let added: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("_rocm_sdk_libraries/"))
        .filter(|file| !file.contains("__pycache__/"))
        .map(str::to_owned)
        .collect();
    assert!(added.len() > 2, "rocm-sdk-device-{target} added only {added:?}");
    added
}

#[test]
fn target_family_from_the_environment_is_a_base_target() {
    let temp = tempfile::tempdir().expect("temp dir");
    let venv = support::fresh_venv(&temp.path().join("venv"));
    let no_gpu = ("PATH", PATH_WITHOUT_GPU_TOOLS);

    let output = support::pip_install(
        &venv,
        &build(true).dist,
        &["rocm[device]"],
        &[("ROCM_SDK_TARGET_FAMILY", "gfx942"), no_gpu],
    );
    let stderr = stderr_of(&output);
    assert!(!output.status.success(), "gfx942 must be refused:\n{stderr}");
    assert!(stderr.contains("ROCM_SDK_TARGET_FAMILY=gfx942 is not available"), "{stderr}");
    assert!(stderr.contains("(available: gfx1030, gfx1250, gfx1250-strict, gfx90a)"), "{stderr}");
    assert_eq!(installed(&venv), BTreeSet::new());

    for value in ["gfx90a", "gfx90a:xnack+", "GFX90A"] {
        install(&venv, &["rocm[device]"], &[("ROCM_SDK_TARGET_FAMILY", value), no_gpu]);
        let offered = extras(&venv);
        assert!(offered.iter().any(|extra| extra == "device"), "{value}: {offered:?}");
        assert_eq!(
            installed(&venv),
            set(&["rocm", "rocm-sdk-core", "rocm-sdk-device-gfx90a", "rocm-sdk-libraries"]),
            "ROCM_SDK_TARGET_FAMILY={value}"
        );
        uninstall(&venv, &["rocm", "rocm-sdk-device-gfx90a"]);
    }

    // `device-{target}` is offered whatever the environment names.
    install(&venv, &["rocm[device-gfx1030]"], &[("ROCM_SDK_TARGET_FAMILY", "gfx90a"), no_gpu]);
    assert_eq!(installed(&venv), set(&["rocm", "rocm-sdk-core", "rocm-sdk-device-gfx1030", "rocm-sdk-libraries"]));
}

#[test]
fn without_a_target_the_device_extra_is_not_offered() {
    let temp = tempfile::tempdir().expect("temp dir");
    let venv = support::fresh_venv(&temp.path().join("venv"));
    let no_gpu = ("PATH", PATH_WITHOUT_GPU_TOOLS);
    for dir in PATH_WITHOUT_GPU_TOOLS.split(':') {
        assert!(!Path::new(dir).join("offload-arch").exists(), "this machine has an offload-arch in {dir}");
    }

    let warnings = install(&venv, &["rocm[device]"], &[no_gpu]);
    assert!(warnings.contains("does not provide the extra 'device'"), "{warnings}");
    assert_eq!(installed(&venv), set(&["rocm", "rocm-sdk-core"]));
    // With only `rocm` (and core) installed, doctor says what an MI210 needs (SPEC §4).
    let (code, report) = doctor(&venv, "mi210_gfx90a");
    assert_eq!((code, &report["install"]), (Some(1), &serde_json::json!("pip install 'rocm[device-gfx90a]'")));
    assert_eq!(doctor(&venv, "cpu_only").0, Some(0));
    // `rocm-sdk targets` lists the targets the build supplied, not their owners.
    assert_eq!(rocm_sdk(&venv, &["targets"]).trim(), "gfx1030;gfx1250;gfx1250-strict;gfx90a");
    // One extra per device wheel: gfx1250 and gfx1250-strict share `device-gfx1250` (SPEC §3).
    let offered = ["devel", "device-all", "device-gfx1030", "device-gfx1250", "device-gfx90a", "libraries", "profiler"];
    assert_eq!(extras(&venv), offered);

    // Core ships an `offload-arch` (the example's is a stub that names no GPU), and it is
    // now on PATH: what it prints is no detection, at install time or at run time.
    let bin = venv.join("bin");
    let stub = support::run(&mut Command::new(bin.join("offload-arch")));
    assert!(stub.starts_with("example:offload-arch"), "{stub}");
    let with_stub = format!("{}:{PATH_WITHOUT_GPU_TOOLS}", bin.display());
    uninstall(&venv, &["rocm"]);
    let log = pip_verbose(&venv, &["rocm[device]"], &[("PATH", &with_stub)]);
    assert!(log.contains("does not provide the extra 'device'"), "{log}");
    assert!(log.contains("rocm build backend: target family gfx1030 (from default)"), "{log}");
    let resolved = support::run(
        Command::new(venv.join("bin/python"))
            .args([
                "-c",
                "import rocm_sdk._dist_info as d; print(len(d._offload_arch_candidates()), d.resolve_target_family())",
            ])
            .env("PATH", &with_stub),
    );
    assert_eq!(resolved.trim(), "2 ('gfx1030', 'default')");

    uninstall(&venv, &["rocm"]);
    install(&venv, &["rocm[device-all]"], &[no_gpu]);
    let all = set(&[
        "rocm",
        "rocm-sdk-core",
        "rocm-sdk-device-gfx1030",
        "rocm-sdk-device-gfx1250",
        "rocm-sdk-device-gfx90a",
        "rocm-sdk-libraries",
    ]);
    assert_eq!(installed(&venv), all);

    // A GPU that `offload-arch` reports with a target id is matched by its base target.
    uninstall(&venv, &["rocm", "rocm-sdk-device-gfx1030", "rocm-sdk-device-gfx1250", "rocm-sdk-device-gfx90a"]);
    let gpu_bin = temp.path().join("gpu-bin");
    fs_err::create_dir(&gpu_bin).expect("create dir");
    let fake = gpu_bin.join("offload-arch");
    fs_err::write(&fake, "#!/bin/sh\necho gfx90a:sramecc+:xnack-\n").expect("write fake offload-arch");
    fs_err::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let with_gpu = format!("{}:{PATH_WITHOUT_GPU_TOOLS}", gpu_bin.display());
    install(&venv, &["rocm[device]"], &[("PATH", &with_gpu)]);
    assert_eq!(installed(&venv), set(&["rocm", "rocm-sdk-core", "rocm-sdk-device-gfx90a", "rocm-sdk-libraries"]));
}

/// `pip install -v` (no cache): stdout and stderr together, so the backend's log shows.
fn pip_verbose(venv: &Path, requirements: &[&str], envs: &[(&str, &str)]) -> String {
    let mut command = Command::new(venv.join("bin/python"));
    command.args(["-m", "pip", "install", "-v", "--no-cache-dir", "--no-index", "--find-links"]);
    command.arg(&build(true).dist).args(requirements);
    for (key, value) in envs {
        command.env(key, value);
    }
    let output = command.output().expect("run pip");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr_of(&output));
    assert!(output.status.success(), "pip install -v {requirements:?} failed:\n{text}");
    text
}
