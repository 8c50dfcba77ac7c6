//! Downstream code against the real installs (SPEC §4, "Downstream API"): the replays of
//! `packager/python/installed_tests/test_downstream.py` (real call sites of PyTorch,
//! TheRock's PyTorch build, Triton, TransformerEngine, TensileLite and others, one test
//! each) run by the venv's own interpreter in a legacy and a kpack-split install.

use std::path::{Path, PathBuf};

use crate::installed::{self, assert_success};
use crate::support;
use crate::targets::build;

/// The test methods of the replay module: the run must report exactly this many, so a
/// module that stopped finding its tests cannot pass.
fn replay_count(module: &Path) -> usize {
    let text = fs_err::read_to_string(module).expect("read the replay module");
    text.lines().filter(|line| line.trim_start().starts_with("def test_")).count()
}

fn python_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../packager/python")
}

/// Installs `requirements` from the mode's example into a fresh venv and runs the replays
/// there; `family` is the legacy family installed, as TheRock spells it.
fn replay(kpack_split: bool, requirements: &[&str], family: &str) {
    let build = build(kpack_split);
    let temp = tempfile::tempdir().expect("temp dir");
    let venv = support::fresh_venv(&temp.path().join("venv"));
    let envs: &[(&str, &str)] = if family.is_empty() { &[] } else { &[("ROCM_SDK_TARGET_FAMILY", family)] };
    let output = support::pip_install(&venv, &build.dist, requirements, envs);
    assert_success(&output, &format!("pip install {requirements:?}"));

    let root = python_root();
    let module = root.join("installed_tests/test_downstream.py");
    let expected = replay_count(&module);
    assert!(expected >= 14, "the replay module lost tests: {expected}");
    let output = installed::venv_command(&venv, "python")
        .args(["-m", "unittest", "-v", "installed_tests.test_downstream"])
        .current_dir(&root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("ROCM_DOWNSTREAM_FAMILY", family)
        .output()
        .expect("run the replays");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "downstream replays failed:\n{stderr}");
    assert!(stderr.contains(&format!("\nRan {expected} tests in ")), "not every replay ran:\n{stderr}");
    assert!(stderr.trim_end().ends_with("OK"), "{stderr}");
}

#[test]
fn legacy_install_serves_downstream_callers() {
    replay(false, &["rocm[libraries,devel]"], "gfx110X-all");
}

#[test]
fn kpack_split_install_serves_downstream_callers() {
    replay(true, &["rocm[libraries,devel,device-all]"], "");
}
