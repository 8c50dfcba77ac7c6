//! The command line as CI sees it: the built `xtask` binary run as a child with its output
//! piped (so not a terminal), on the bundled example.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn xtask(cwd: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    // A temp dir as cwd: no TheRock checkout is found by walking up from it.
    command.current_dir(cwd);
    for key in ["GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE", "RUST_LOG", "SOURCE_DATE_EPOCH"] {
        command.env_remove(key);
    }
    command
}

fn run(command: &mut Command) -> Output {
    let output = command.output().expect("run xtask");
    assert!(
        output.status.success(),
        "{command:?} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The example's artifacts in `dir/artifacts`, written by `xtask example`.
fn example(dir: &Path) -> PathBuf {
    let artifacts = dir.join("artifacts");
    run(xtask(dir).args(["-q", "example", "--out"]).arg(&artifacts));
    artifacts
}

fn package(dir: &Path, artifacts: &Path, extra: &[&str]) -> Command {
    let mut command = xtask(dir);
    command.args(extra).arg("package").arg("--artifact-dir").arg(artifacts);
    command.arg("--dest-dir").arg(dir.join("dist")).args(["--version", "7.12.0.dev0"]);
    command
}

fn dist_files(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = fs_err::read_dir(dir.join("dist"))
        .expect("test step")
        .map(|entry| entry.expect("test step").file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    files.sort();
    files
}

#[test]
fn ci_logs_get_one_line_per_output_and_the_step_summary_the_table() {
    let temp = tempfile::tempdir().expect("test step");
    let artifacts = example(temp.path());
    let summary = temp.path().join("step-summary.md");
    fs_err::write(&summary, "earlier step\n").expect("test step");
    let output = run(package(temp.path(), &artifacts, &[]).env("GITHUB_STEP_SUMMARY", &summary));
    let stderr = String::from_utf8(output.stderr).expect("test step");
    let stdout = String::from_utf8(output.stdout).expect("test step");
    let files = dist_files(temp.path());
    assert_eq!(files.len(), 7, "{files:?}");

    // stderr: exactly one `[  t.ts] wrote FILE` line per output, and nothing else.
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), files.len(), "{stderr}");
    for file in &files {
        let line = lines.iter().find(|line| line.contains(&format!("] wrote {file}"))).unwrap_or_else(|| {
            panic!("no progress line for {file}:\n{stderr}");
        });
        assert!(line.starts_with('[') && !line.contains('\x1b'), "{line:?}");
    }

    // stdout: the table, a row per output, then the stage times.
    let header = stdout.lines().next().expect("test step");
    for column in ["package", "file", "files", "size", "compressed", "time"] {
        assert!(header.contains(column), "{header}");
    }
    for file in &files {
        assert!(stdout.lines().any(|line| line.contains(file.as_str())), "{file} missing from\n{stdout}");
    }
    assert!(stdout.contains("\nstages: catalog+plan "), "{stdout}");

    // The step summary: appended, as a Markdown table with every output.
    let markdown = fs_err::read_to_string(&summary).expect("test step");
    assert!(markdown.starts_with("earlier step\n### ROCm Python packages 7.12.0.dev0 (legacy)\n"), "{markdown}");
    assert!(markdown.contains("| package | file | files | size | compressed | time |"), "{markdown}");
    for file in &files {
        assert!(markdown.contains(&format!("| `{file}` |")), "{file} missing from\n{markdown}");
    }
}

#[test]
fn quiet_prints_nothing_and_verbose_explains() {
    let temp = tempfile::tempdir().expect("test step");
    let artifacts = example(temp.path());
    let quiet = run(&mut package(temp.path(), &artifacts, &["-q"]));
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
    assert_eq!(String::from_utf8_lossy(&quiet.stdout), "");
    assert_eq!(dist_files(temp.path()).len(), 7);

    let verbose = run(&mut package(temp.path(), &artifacts, &["-v"]));
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    for stage in ["] catalog", "] plan", "] write"] {
        assert!(stderr.contains(stage), "{stage} missing:\n{stderr}");
    }
    // The example's dangling symlink is dropped, and -v says so with the reason, in the
    // same words as --plan.
    let dropped = "rocm-sdk-core: dropped lib/libamdhip64.so.6: dangling symlink";
    assert!(stderr.contains(dropped), "{stderr}");
    let plan = run(package(temp.path(), &artifacts, &["-q"]).arg("--plan"));
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.lines().any(|line| line.trim_start().starts_with(dropped)), "{plan}");
}

#[test]
fn under_github_actions_an_error_is_an_annotation_naming_the_file() {
    let temp = tempfile::tempdir().expect("test step");
    let artifacts = temp.path().join("artifacts");
    fs_err::create_dir(&artifacts).expect("test step");
    let output = package(temp.path(), &artifacts, &[])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", temp.path())
        .output()
        .expect("run xtask");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: packaging "), "{stderr}");
    let annotation = stderr.lines().find(|line| line.starts_with("::error ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        annotation.starts_with(
            "::error file=artifacts/base_lib_generic/base/aux-overlay/stage/share/therock/therock_manifest.json,\
             title=cargo xtask::packaging "
        ),
        "{annotation}"
    );
    assert!(annotation.contains("build manifest not found"), "{annotation}");

    // Outside GitHub Actions: no workflow commands in the log.
    let plain = package(temp.path(), &artifacts, &[]).output().expect("run xtask");
    assert!(!String::from_utf8_lossy(&plain.stderr).contains("::error"));
}

#[test]
fn index_writes_both_pages() {
    let temp = tempfile::tempdir().expect("test step");
    let artifacts = example(temp.path());
    run(package(temp.path(), &artifacts, &["-q"]).args(["--only", "meta,core"]));
    let output = run(xtask(temp.path()).args(["index", "dist"]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("indexed 2 files of 2 projects"), "{stderr}");
    let root = fs_err::read_to_string(temp.path().join("dist/simple/index.html")).expect("test step");
    assert!(root.contains("<a href=\"rocm/\">rocm</a>") && root.contains("<a href=\"rocm-sdk-core/\">"), "{root}");
    assert!(temp.path().join("dist/index.html").is_file());
}

/// `cargo xtask example --out art` with a relative path: the compiler runs elsewhere, the
/// files must still land under the current directory.
#[test]
fn example_takes_a_relative_output_dir() {
    let temp = tempfile::tempdir().expect("temp dir");
    run(xtask(temp.path()).args(["-q", "example", "--out", "art"]));
    assert!(temp.path().join("art/base_lib_generic/artifact_manifest.txt").is_file());
}
