//! `rocm-sdk doctor` and `initialize_process` on a package split by `cargo xtask split`
//! (SPEC §4, §12): the fat fixture wheel split, its host installed by real pip beside the
//! kpack-split example SDK (every SDK device wheel, so the split package alone decides),
//! then judged on the recorded KFD topologies with and without its device wheels: the
//! missing wheel named with the exact pip line and doctor's exit status, `--json`, a
//! family wheel required by a target's extra, a GPU the package has no device code for,
//! and the runtime's warning once per process, gone once the line doctor printed is run.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::{fat_wheel, split_into};
use crate::installed;
use crate::support;

/// `rocm-sdk doctor {args}` on the recorded topology `topology`.
fn doctor(venv: &Path, topology: &str, args: &[&str]) -> Output {
    let mut command = installed::venv_command(venv, "rocm-sdk");
    command.arg("doctor").args(args).env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology(topology));
    support::output(&mut command).expect("run rocm-sdk doctor")
}

/// `doctor --json` on `topology`: the report, its exit status checked against `ok`.
fn report(venv: &Path, topology: &str) -> serde_json::Value {
    let output = doctor(venv, topology, &["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("doctor --json prints JSON");
    let ok = report["ok"].as_bool().expect("ok");
    assert_eq!(output.status.code(), Some(if ok { 0 } else { 1 }), "{report:#}");
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
    report
}

/// The report's entry for the split package `hipext`.
fn hipext(report: &serde_json::Value) -> &serde_json::Value {
    let packages = report["packages"].as_array().expect("packages");
    let found: Vec<&serde_json::Value> = packages.iter().filter(|package| package["name"] == "hipext").collect();
    assert_eq!(found.len(), 1, "{report:#}");
    found[0]
}

/// The text report's lines about `hipext`.
fn text_lines(venv: &Path, topology: &str, status: i32) -> Vec<String> {
    let output = doctor(venv, topology, &[]);
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(status), "{text}");
    text.lines().filter(|line| line.starts_with("hipext ")).map(str::to_owned).collect()
}

/// `initialize_process()` called twice from a module of the installed `hipext` (as
/// TheRock's `_rocm_init.py` calls it): the messages of our warning category per call.
fn warnings(venv: &Path, topology: &str) -> Vec<Vec<String>> {
    const CODE: &str = r#"import json, os, sys, sysconfig, warnings
import rocm_sdk
path = os.path.join(sysconfig.get_path("purelib"), "hipext", "_rocm_init.py")
caller = compile("import rocm_sdk\nrocm_sdk.initialize_process()\n", path, "exec")
seen = []
for _ in range(2):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(caller, {"__name__": "hipext._rocm_init", "__file__": path})
    seen.append([str(w.message) for w in caught if issubclass(w.category, rocm_sdk.MissingDeviceCodeWarning)])
print(json.dumps(seen))
"#;
    let topology = support::kfd_topology(topology);
    let output = installed::python(venv, CODE, &[], &[("ROCM_SDK_KFD_TOPOLOGY", topology.to_str().expect("UTF-8"))]);
    installed::assert_success(&output, "initialize_process");
    serde_json::from_slice(&output.stdout).expect("the warnings as JSON")
}

fn install(venv: &Path, dist: &Path, requirements: &[&str]) {
    let output = support::pip_install(venv, dist, requirements, &[]);
    support::assert_success(&output, &format!("pip install {requirements:?}"));
}

/// The split wheels of the fixture, in `dir/dist`.
fn split_dist(dir: &Path) -> PathBuf {
    split_into(&[fat_wheel().wheel.clone()], dir, &[]).expect("split the fat wheel");
    dir.join("dist")
}

#[test]
fn doctor_names_a_split_packages_missing_device_wheels_until_they_are_installed() {
    let temp = tempfile::tempdir().expect("temp dir");
    let dist = split_dist(temp.path());
    let venv = support::fresh_venv(&temp.path().join("venv"));
    install(&venv, &crate::targets::build(true).dist, &["rocm[libraries,device-all]"]);
    install(&venv, &dist, &["hipext"]);

    // An MI210 without hipext's gfx90a wheel: named, with the line that adds it.
    let mi210 = report(&venv, "mi210_gfx90a");
    assert_eq!(mi210["ok"], false, "{mi210:#}");
    assert_eq!(mi210["install"], "pip install 'hipext[device-gfx90a]'", "{mi210:#}");
    assert_eq!(mi210["missing"], serde_json::json!(["hipext-device-gfx90a"]));
    assert_eq!(mi210["gpus"][0]["status"], "covered", "the SDK's own device wheel is there: {mi210:#}");
    let package = hipext(&mi210);
    assert_eq!(package["version"], "1.0");
    let offered: Vec<&str> =
        package["offered_targets"].as_array().expect("offered").iter().filter_map(|target| target.as_str()).collect();
    for target in ["gfx1030", "gfx1100", "gfx1151", "gfx90a"] {
        assert!(offered.contains(&target), "{target} in {offered:?}");
    }
    assert_eq!(
        package["gpus"],
        serde_json::json!([{
            "node": 1, "target": "gfx90a", "extra": "device-gfx90a", "status": "missing", "covered_by": [],
            "missing": [{"name": "hipext-device-gfx90a", "requires": "==1.0", "installed": null}],
        }])
    );
    assert_eq!(
        text_lines(&venv, "mi210_gfx90a", 1),
        ["hipext 1.0 lacks the device code for the GPU gfx90a (KFD node 1) of this machine (missing: \
          hipext-device-gfx90a==1.0), so its kernels fail there with hipErrorInvalidImage; add it with: \
          pip install 'hipext[device-gfx90a]'"]
    );
    // The runtime says the same, once per process.
    let seen = warnings(&venv, "mi210_gfx90a");
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1], Vec::<String>::new(), "once per process");
    assert_eq!(seen[0].len(), 1, "{seen:?}");
    assert!(seen[0][0].starts_with("hipext 1.0 lacks the device code for the GPU gfx90a (KFD node 1)"), "{seen:?}");
    assert!(seen[0][0].ends_with("pip install 'hipext[device-gfx90a]' (`rocm-sdk doctor` says more)"), "{seen:?}");

    // A Strix Halo APU: its extra needs the gfx11 family wheel the AOTriton files went to.
    let strix = report(&venv, "strix_halo_gfx1151_apu");
    let gpu = &hipext(&strix)["gpus"][0];
    assert_eq!((gpu["status"].as_str(), gpu["extra"].as_str()), (Some("missing"), Some("device-gfx1151")), "{strix:#}");
    assert_eq!(gpu["missing"][0]["name"], "hipext-device-gfx11xx", "{strix:#}");
    // An MI300X: hipext was built for no gfx942, so there is nothing to install.
    let mi300 = report(&venv, "mi300x_gfx942");
    assert_eq!(hipext(&mi300)["gpus"][0]["status"], "unsupported", "{mi300:#}");
    assert_eq!((mi300["ok"].as_bool(), mi300["install"].as_str()), (Some(false), None), "{mi300:#}");
    let lines = text_lines(&venv, "mi300x_gfx942", 1);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("hipext 1.0 has no device code for gfx942 (KFD node 1): it offers "), "{lines:?}");
    assert_eq!(warnings(&venv, "mi300x_gfx942"), [Vec::<String>::new(), Vec::new()]);

    // The line doctor printed, run as printed: the GPU is covered, nothing is said.
    install(&venv, &dist, &["hipext[device-gfx90a]"]);
    let covered = report(&venv, "mi210_gfx90a");
    assert_eq!((covered["ok"].as_bool(), covered["install"].as_str()), (Some(true), None), "{covered:#}");
    assert_eq!(
        hipext(&covered)["gpus"][0]["covered_by"],
        serde_json::json!([{"name": "hipext-device-gfx90a", "version": "1.0"}])
    );
    assert_eq!(
        text_lines(&venv, "mi210_gfx90a", 0),
        ["hipext 1.0: GPU gfx90a (KFD node 1) covered by hipext-device-gfx90a 1.0"]
    );
    assert_eq!(warnings(&venv, "mi210_gfx90a"), [Vec::<String>::new(), Vec::new()]);
    // Two GPUs: the one without its wheel is still named, alone.
    let two = report(&venv, "two_gpus_gfx90a_gfx1030");
    assert_eq!(two["install"], "pip install 'hipext[device-gfx1030]'", "{two:#}");
    let statuses: Vec<(&str, &str)> = hipext(&two)["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .map(|gpu| (gpu["target"].as_str().expect("target"), gpu["status"].as_str().expect("status")))
        .collect();
    assert_eq!(statuses, [("gfx90a", "covered"), ("gfx1030", "missing")]);
}
