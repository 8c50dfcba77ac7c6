//! A TheRock developer swaps the reference's command for ours and runs the next
//! lines of the seeds' instructions unchanged (SPEC §2 "Where outputs land"): `--dest-dir=P`,
//! a fresh venv, `pip install 'rocm[libraries,devel]' --pre --no-cache-dir
//! --find-links=P/dist`, `rocm-sdk test`. The CMake target's variant is in `cmake`.

use std::path::Path;
use std::process::Command;

use crate::support;
use crate::targets::cli::xtask;

/// The seeds' steps 2 to 4 as a shell script, word for word but for the packaging command:
/// `python ./build_tools/build_python_packages.py` becomes `$XTASK package`.
const SEEDS_SEQUENCE: &str = r#"set -eu
# 2. Build Python packages from the fetched artifacts
"$XTASK" package \
--artifact-dir=${ARTIFACTS_DIR} \
--dest-dir=${PACKAGES_DIR}
python3 -m venv .venv && . .venv/bin/activate
pip install 'rocm[libraries,devel]' --pre --no-cache-dir \
--find-links=${PACKAGES_DIR}/dist
# Run sanity tests to verify the installation
rocm-sdk test
"#;

/// A minimal TheRock checkout at `dir`: what `package` reads from one (the seeds run the
/// reference from a checkout's root, which gives it the version).
fn checkout(dir: &Path) {
    fs_err::create_dir_all(dir.join("cmake")).expect("mkdir");
    fs_err::write(dir.join("version.json"), "{\n  \"rocm-version\": \"7.12.0\"\n}\n").expect("write version.json");
    fs_err::write(
        dir.join("cmake/therock_amdgpu_targets.cmake"),
        "therock_add_amdgpu_target(gfx1100 \"AMD RX 7900 XTX\" FAMILY dgpu-all gfx110X-all gfx110X-dgpu)\n\
         therock_add_amdgpu_target(gfx942 \"MI300X\" FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu)\n",
    )
    .expect("write the target table");
}

#[test]
fn the_seeds_sequence_runs_verbatim_with_our_command() {
    let temp = tempfile::tempdir().expect("temp dir");
    let therock = temp.path().join("TheRock");
    checkout(&therock);
    let artifacts = support::write_example(temp.path(), false);
    let packages = temp.path().join("packages");
    let output = support::output(
        Command::new("bash")
            .args(["-c", SEEDS_SEQUENCE])
            .current_dir(&therock)
            .env("XTASK", xtask())
            .env("ARTIFACTS_DIR", &artifacts)
            .env("PACKAGES_DIR", &packages)
            // Hermetic: `--find-links` alone also asks PyPI, where another `rocm` lives.
            .env("PIP_NO_INDEX", "1")
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env_remove("ROCM_SDK_WHEEL_PLATFORM_TAG")
            .env_remove("ROCM_SDK_TARGET_FAMILY")
            // This machine's GPUs choose nothing (SPEC §3).
            .env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology("cpu_only"))
            .env_remove("VIRTUAL_ENV"),
    )
    .expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout);
    support::assert_success(&output, "the seeds' sequence");

    // The archives are where the seeds look for them, and nothing else is in `dist/`.
    assert_eq!(support::dist_names(&packages.join("dist")), support::legacy_example_archives());
    // `rocm-sdk test` ran the installed self-tests, the reference's mismatch checks among them.
    for test in [
        "test_initialize_process_check_version_mismatch ",
        "test_initialize_process_check_version_mismatch_warning ",
        "libraries_test",
        "devel_test",
    ] {
        assert!(stdout.contains(test), "{test} did not run:\n{stdout}");
    }
    assert!(stdout.contains("\nOK"), "{stdout}");
}
