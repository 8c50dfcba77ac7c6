//! What `package` tells the user about its decisions, as a user sees it: the built `xtask`
//! binary run as a child on the bundled example. Links that leave the tree or loop are
//! warned about at default verbosity, once each, and not with `-q`; `-v`
//! explains every kind of decision in the words of `--plan`.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

mod common;
use common::{example, run, xtask};

const VERSION: &str = "7.12.0.dev0";

/// `xtask {global} package {flags}` of `artifacts` into `dir/{dest}`; returns stdout and
/// stderr.
fn package(dir: &Path, artifacts: &Path, dest: &str, global: &[&str], flags: &[&str]) -> (String, String) {
    let mut command = xtask(dir);
    command.args(global).arg("package").args(flags).args(["--version", VERSION, "--artifact-dir"]).arg(artifacts);
    let output = run(command.arg("--dest-dir").arg(dir.join(dest)));
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The install tree of a core artifact: its files go into `rocm-sdk-core` and the devel trees.
fn core_stage(artifacts: &Path) -> PathBuf {
    artifacts.join("core-runtime_lib_generic/core/ROCR-Runtime/stage")
}

#[test]
fn links_that_escape_or_loop_are_warned_about_once_each_unless_quiet() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = example(temp.path());
    let bin = core_stage(&artifacts).join("bin");
    fs_err::create_dir_all(&bin).expect("mkdir bin");
    // Core and both devel packages select these links; each is named once.
    let links = [
        ("escape-absolute", "/etc/passwd", "leaves the artifacts tree"),
        ("escape-relative", "../../../../../../../../outside", "leaves the artifacts tree"),
        ("loop-a", "loop-b", "symlink loop"),
        ("loop-b", "loop-a", "symlink loop"),
    ];
    for (name, target, _) in links {
        symlink(target, bin.join(name)).expect("symlink");
    }

    let (_, stderr) = package(temp.path(), &artifacts, "dist", &[], &[]);
    let warnings: Vec<&str> = stderr.lines().filter(|line| line.starts_with("warning: ")).collect();
    for (name, _, reason) in links {
        let on_disk = bin.join(name).display().to_string();
        let naming: Vec<&&str> = warnings.iter().filter(|line| line.contains(&format!("({on_disk})"))).collect();
        assert_eq!(naming.len(), 1, "one warning names {on_disk}: {stderr}");
        assert!(naming[0].contains(&format!("bin/{name}")) && naming[0].contains(reason), "{}", naming[0]);
    }
    // The example's dangling link (`lib/libamdhip64.so.6`) is counted and explained at -v only.
    assert_eq!(warnings.len(), links.len(), "{stderr}");

    let (_, quiet_stderr) = package(temp.path(), &artifacts, "dist-quiet", &["-q"], &[]);
    assert_eq!(quiet_stderr, "", "-q prints nothing but errors");
}

#[test]
fn verbose_explains_every_kind_of_decision_in_the_words_of_the_plan() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = example(temp.path());
    // The example has no path two artifacts provide; this adds one (core-runtime_run sorts
    // after core-runtime_lib, so it wins).
    for artifact in ["core-runtime_lib_generic", "core-runtime_run_generic"] {
        let manifest =
            fs_err::read_to_string(artifacts.join(artifact).join("artifact_manifest.txt")).expect("manifest");
        let basedir = manifest.lines().find(|line| !line.trim().is_empty()).expect("a basedir");
        let share = artifacts.join(artifact).join(basedir.trim()).join("share");
        fs_err::create_dir_all(&share).expect("mkdir share");
        fs_err::write(share.join("provided-twice.txt"), artifact).expect("write");
    }

    let (_, explained) = package(temp.path(), &artifacts, "dist", &["-v"], &[]);
    let (plan, _) = package(temp.path(), &artifacts, "dist-plan", &[], &["--plan"]);
    let plan_lines: Vec<&str> = plan.lines().map(str::trim).collect();
    let kinds = [
        ("a launcher", " becomes a launcher of "),
        ("a SONAME alias", " is an alias of "),
        ("an RPATH entry removed", ": removed absolute RPATH entries /"),
        ("a drop", ": dropped "),
        ("an override", "override share/provided-twice.txt: core-runtime_run_generic wins over"),
    ];
    for (kind, words) in kinds {
        let line = explained.lines().find(|line| line.contains(words));
        let line = line.unwrap_or_else(|| panic!("-v explains no {kind} ({words:?}):\n{explained}"));
        assert!(plan_lines.contains(&line), "-v says {line:?}, which --plan does not:\n{plan}");
    }
}
