//! The `rocm` sdist picks ROCm from the KFD topology on a machine with no ROCm and no
//! `offload-arch` (SPEC §3): real `pip install` and `uv pip install` from a local PEP 503
//! index, with each recorded topology set for the build (`ROCM_SDK_KFD_TOPOLOGY`) and the
//! installers' caches off, install what `rocm-sdk doctor` then names for those GPUs: in
//! the kpack-split example every GPU's owner's device wheel, in the legacy example the
//! first GPU's family (the default when no GPU has one on offer).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use super::build;
use crate::installed::{self, PATH_WITHOUT_GPU_TOOLS};
use crate::support;

#[derive(Clone, Copy, Debug)]
enum Installer {
    Pip,
    Uv,
}

/// A copy of `dist` with its simple index (`cargo xtask index`), and the index's URL.
fn local_index(dist: &Path, dir: &Path) -> String {
    let copy = dir.join("dist");
    fs_err::create_dir_all(&copy).expect("create the index dir");
    for entry in fs_err::read_dir(dist).expect("read dist") {
        let path = entry.expect("dist entry").path();
        if path.is_file() {
            fs_err::copy(&path, copy.join(path.file_name().expect("a name"))).expect("copy a package");
        }
    }
    packager::index::write_index(&copy).expect("index the dist");
    format!("file://{}", copy.join("simple").display())
}

/// Installs `requirement` into `venv` from the index at `url`, no cache, no GPU tool on
/// `PATH`, the GPUs of the recorded `topology`; returns the installer's output (pip's
/// verbose log holds the build backend's).
fn install(installer: Installer, venv: &Path, url: &str, requirement: &str, topology: &str) -> Output {
    let mut command = match installer {
        Installer::Pip => {
            let mut command = Command::new(venv.join("bin/python"));
            command.args(["-m", "pip", "install", "-v", "--no-cache-dir", "--disable-pip-version-check"]);
            command.args(["--index-url", url]);
            command
        }
        Installer::Uv => {
            let mut command = Command::new(support::tools_venv().join("bin/uv"));
            command.args(["pip", "install", "--no-cache", "--offline", "--index-url", url, "--python"]);
            command.arg(venv.join("bin/python"));
            command
        }
    };
    command.arg(requirement).env("PATH", PATH_WITHOUT_GPU_TOOLS).env_remove("ROCM_SDK_TARGET_FAMILY");
    command.env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology(topology));
    let output = command.output().expect("run the installer");
    let log = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{installer:?} install {requirement} on {topology} failed:\n{log}");
    output
}

fn uninstall_everything(venv: &Path) {
    let names: Vec<String> = installed::rocm_dists(venv).into_iter().collect();
    if !names.is_empty() {
        support::run(
            Command::new(venv.join("bin/python")).args(["-m", "pip", "uninstall", "--quiet", "-y"]).args(&names),
        );
    }
}

/// `rocm-sdk doctor --json` on `topology`: each GPU it can cover must be covered by what
/// was installed, and what covers them must be every target-specific package installed.
fn assert_doctor_names_what_was_installed(venv: &Path, topology: &str, target_specific: &BTreeSet<String>) {
    let mut command = installed::venv_command(venv, "rocm-sdk");
    command.args(["doctor", "--json"]).env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology(topology));
    let output = support::output(&mut command).expect("run rocm-sdk doctor");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("doctor --json prints JSON");
    let gpus = report["gpus"].as_array().expect("gpus");
    let mut covering = BTreeSet::new();
    for gpu in gpus {
        let status = gpu["status"].as_str().expect("a status");
        assert!(status == "covered" || status == "unsupported", "{topology}: {gpu:#}");
        for package in gpu["covered_by"].as_array().expect("covered_by") {
            covering.insert(package["name"].as_str().expect("a name").to_owned());
        }
    }
    if gpus.iter().any(|gpu| gpu["status"] == "covered") {
        assert_eq!(&covering, target_specific, "{topology}: {report:#}");
    }
}

/// One recorded topology: the target-specific packages `rocm[...]` must install with it,
/// and whether its GPUs decide (else nothing on the machine does, and the default holds).
struct Case {
    topology: &'static str,
    target_specific: &'static [&'static str],
    decided_by_gpus: bool,
}

fn case(topology: &'static str, target_specific: &'static [&'static str], decided_by_gpus: bool) -> Case {
    Case { topology, target_specific, decided_by_gpus }
}

/// For every case (the cases are the recorded topologies, each once) and both installers:
/// what `rocm[...]` installs, checked against the case and against `rocm-sdk doctor`;
/// pip's log says whether the KFD topology decided.
fn check_each_topology(kpack_split: bool, requirement: &str, cases: &[Case], always: &[&str]) {
    let recorded = fs_err::read_dir(support::kfd_topology("."))
        .expect("list the recorded topologies")
        .map(|entry| entry.expect("a topology").path())
        .filter(|path| path.is_dir())
        .map(|path| path.file_name().expect("a name").to_string_lossy().into_owned())
        .collect::<BTreeSet<String>>();
    let tried = cases.iter().map(|case| case.topology.to_owned()).collect::<BTreeSet<String>>();
    assert_eq!(tried, recorded, "every recorded topology is installed with, once");
    assert_eq!(tried.len(), cases.len(), "every recorded topology is installed with, once");
    let temp = tempfile::tempdir().expect("tempdir");
    let url = local_index(&build(kpack_split).dist, temp.path());
    for dir in PATH_WITHOUT_GPU_TOOLS.split(':') {
        assert!(!Path::new(dir).join("offload-arch").exists(), "this machine has an offload-arch in {dir}");
    }
    for installer in [Installer::Pip, Installer::Uv] {
        let venv = support::fresh_venv(&temp.path().join(format!("{installer:?}")));
        for case in cases {
            let output = install(installer, &venv, &url, requirement, case.topology);
            let target_specific: BTreeSet<String> = case.target_specific.iter().map(|name| name.to_string()).collect();
            let expected: BTreeSet<String> =
                always.iter().map(|name| name.to_string()).chain(target_specific.clone()).collect();
            assert_eq!(installed::rocm_dists(&venv), expected, "{installer:?} on {}", case.topology);
            assert_doctor_names_what_was_installed(&venv, case.topology, &target_specific);
            if let Installer::Pip = installer {
                let log =
                    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
                let topology = support::kfd_topology(case.topology);
                let from_gpus = format!("(from kfd topology): the KFD topology at {} lists ", topology.display());
                assert_eq!(log.contains(&from_gpus), case.decided_by_gpus, "{}:\n{log}", case.topology);
                if !case.decided_by_gpus {
                    assert!(log.contains("no offload-arch in core, on PATH or beside the interpreter"), "{log}");
                    assert!(log.contains("(from default)"), "{log}");
                }
            }
            uninstall_everything(&venv);
        }
    }
}

#[test]
fn kpack_split_installs_the_device_wheels_of_every_gpu_the_topology_lists() {
    let cases = [
        case("mi210_gfx90a", &["rocm-sdk-device-gfx90a"], true),
        case("rx6800xt_gfx1030", &["rocm-sdk-device-gfx1030"], true),
        case("two_gpus_gfx90a_gfx1030", &["rocm-sdk-device-gfx1030", "rocm-sdk-device-gfx90a"], true),
        // GPUs the build has no device code for: no device wheel, and nothing else decides.
        case("strix_halo_gfx1151_apu", &[], false),
        case("mi300x_gfx942", &[], false),
        case("cpu_only", &[], false),
    ];
    check_each_topology(true, "rocm[libraries,device]", &cases, &["rocm", "rocm-sdk-core", "rocm-sdk-libraries"]);
}

#[test]
fn legacy_installs_the_family_of_the_first_gpu_the_topology_lists() {
    let cases = [
        case("mi300x_gfx942", &["rocm-sdk-libraries-gfx94X-dcgpu"], true),
        // No GPU with a family in the build: the default family, which no GPU needs.
        case("mi210_gfx90a", &["rocm-sdk-libraries-gfx110X-all"], false),
        case("rx6800xt_gfx1030", &["rocm-sdk-libraries-gfx110X-all"], false),
        case("two_gpus_gfx90a_gfx1030", &["rocm-sdk-libraries-gfx110X-all"], false),
        case("strix_halo_gfx1151_apu", &["rocm-sdk-libraries-gfx110X-all"], false),
        case("cpu_only", &["rocm-sdk-libraries-gfx110X-all"], false),
    ];
    check_each_topology(false, "rocm[libraries]", &cases, &["rocm", "rocm-sdk-core"]);
}
