//! `cargo xtask` as users run it, through the alias and `xtask-launch`: the timestamp is
//! a run-time input only. Two runs with two `SOURCE_DATE_EPOCH`s: the second compiles
//! nothing (the C libraries' build scripts would rebuild on a new value), and each run's
//! archives carry its own time.

mod common;

use std::path::Path;
use std::process::Command;

use common::{example, per_process_dir, run};

/// `cargo xtask package` of the sdist alone (the cheapest run that writes an archive) with
/// `SOURCE_DATE_EPOCH=epoch`; returns cargo's and the tool's stderr.
fn cargo_xtask_package(cwd: &Path, artifacts: &Path, dest: &Path, epoch: &str) -> String {
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(cwd)
        .args(["xtask", "-q", "package", "--only", "meta", "--version", "7.12.0.dev0", "--artifact-dir"])
        .arg(artifacts)
        .arg("--dest-dir")
        .arg(dest)
        .env("SOURCE_DATE_EPOCH", epoch);
    for key in ["GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE", "RUST_LOG"] {
        command.env_remove(key);
    }
    String::from_utf8_lossy(&run(&mut command).stderr).into_owned()
}

/// The modification times in the sdists under `dist`.
fn sdist_times(dist: &Path) -> Vec<u64> {
    let script = "import glob, json, sys, tarfile\n\
                  t = sorted({m.mtime for s in glob.glob(sys.argv[1] + '/*.tar.gz') for m in tarfile.open(s).getmembers()})\n\
                  print(json.dumps(t))";
    let output = run(Command::new("python3").args(["-c", script]).arg(dist));
    serde_json::from_slice(&output.stdout).expect("test step")
}

#[test]
fn a_new_source_date_epoch_compiles_nothing_and_reaches_the_archives() {
    let dir = per_process_dir("launch");
    fs_err::create_dir_all(&dir).expect("test step");
    let artifacts = example(&dir);
    // Run from inside the workspace, as a user types `cargo xtask` there.
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ is in the workspace");
    let first = cargo_xtask_package(workspace, &artifacts, &dir.join("first"), "1700000001");
    let second = cargo_xtask_package(workspace, &artifacts, &dir.join("second"), "1700000003");
    assert!(!second.contains("Compiling"), "a new SOURCE_DATE_EPOCH recompiled:\n{second}\n(first run:\n{first})");
    assert!(second.contains("Running"), "cargo ran the launcher:\n{second}");
    assert_eq!(sdist_times(&dir.join("first/dist")), [1700000001]);
    assert_eq!(sdist_times(&dir.join("second/dist")), [1700000003]);
}
