//! A truncated devel tarball in a real install: the legacy example installed
//! with pip, its `_devel.tar` cut to 8 KiB. `rocm-sdk path --root` used to exit 0 with
//! most of the tree missing and delete the tarball; now it fails with one line naming the
//! tarball and the family's devel package to reinstall, writes nothing and keeps the
//! tarball, and succeeds once the tarball's bytes are right again.

use crate::installed::{self, assert_success};
use crate::support;
use crate::targets::build;

#[test]
fn a_truncated_devel_tarball_is_refused_and_kept() {
    let build = build(false);
    let temp = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&temp.path().join("venv"));
    let envs = [("ROCM_SDK_TARGET_FAMILY", "gfx110X-all")];
    assert_success(&support::pip_install(&venv, &build.dist, &["rocm[devel]"], &envs), "pip install rocm[devel]");
    let site = installed::site_packages(&venv);
    let tarball = site.join("rocm_sdk_devel_gfx110x_all/_devel.tar");
    let whole = fs_err::read(&tarball).expect("the installed devel tarball");
    assert!(whole.len() > 8 << 10, "{} bytes", whole.len());
    fs_err::write(&tarball, &whole[..8 << 10]).expect("truncate");

    let output = installed::venv_command(&venv, "rocm-sdk").args(["path", "--root"]).output().expect("run rocm-sdk");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("Traceback") && stderr.trim().lines().count() == 1, "{stderr}");
    assert!(stderr.contains(&tarball.display().to_string()) && stderr.contains("is damaged"), "{stderr}");
    assert!(stderr.contains("--force-reinstall --no-cache-dir rocm-sdk-devel-gfx110X-all"), "{stderr}");
    assert!(tarball.exists(), "the damaged tarball is kept");
    assert!(!site.join("_rocm_sdk_devel_gfx110X_all").exists(), "nothing of the tree was written");

    fs_err::write(&tarball, &whole).expect("restore");
    let root = installed::devel_root(&venv);
    assert!(root.join("include").is_dir(), "{}", root.display());
    assert!(!tarball.exists(), "expanded, the tarball is deleted");
}
