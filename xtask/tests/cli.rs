//! The command line as CI sees it: the built `xtask` binary run as a child with its output
//! piped (so not a terminal), on the bundled example.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod common;
use common::{example, per_process_dir, run, visible_files, xtask};

/// The example, generated once per test process under `target/tmp/cli-shared-example/{pid}`
/// (directories of ended processes are removed) for the tests that only read it.
fn shared_example() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = per_process_dir("cli-shared-example");
        fs_err::create_dir_all(&dir).expect("test step");
        example(&dir)
    })
}

fn package(dir: &Path, artifacts: &Path, extra: &[&str]) -> Command {
    let mut command = xtask(dir);
    command.args(extra).arg("package").arg("--artifact-dir").arg(artifacts);
    command.arg("--dest-dir").arg(dir).args(["--version", "7.12.0.dev0"]);
    command
}

fn dist_files(dir: &Path) -> Vec<String> {
    visible_files(&dir.join("dist"))
}

#[test]
fn ci_logs_get_one_line_per_output_and_the_step_summary_the_table() {
    let temp = tempfile::tempdir().expect("test step");
    let artifacts = shared_example();
    let summary = temp.path().join("step-summary.md");
    fs_err::write(&summary, "earlier step\n").expect("test step");
    let output = run(package(temp.path(), artifacts, &[]).env("GITHUB_STEP_SUMMARY", &summary));
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
    // A package or stage done in under 0.1 s shows milliseconds, never a bare `0.0s`.
    assert!(!stdout.contains(" 0.0s"), "{stdout}");
    for line in stdout.lines().skip(1).filter(|line| line.starts_with("rocm")) {
        let time = line.split_whitespace().last().unwrap_or_default();
        let number = time.strip_suffix("ms").or_else(|| time.strip_suffix('s')).unwrap_or_default();
        assert!(number.parse::<f64>().is_ok(), "{line}");
    }

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
    let artifacts = shared_example();
    let quiet = run(&mut package(temp.path(), artifacts, &["-q"]));
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
    assert_eq!(String::from_utf8_lossy(&quiet.stdout), "");
    assert_eq!(dist_files(temp.path()).len(), 7);

    let verbose = run(&mut package(temp.path(), artifacts, &["-v"]));
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    for stage in ["] catalog", "] plan", "] write"] {
        assert!(stderr.contains(stage), "{stage} missing:\n{stderr}");
    }
    // The example's dangling symlink is dropped, and -v says so with the reason, in the
    // same words as --plan.
    let dropped = "rocm-sdk-core: dropped lib/libamdhip64.so.6: dangling symlink";
    assert!(stderr.contains(dropped), "{stderr}");
    let plan = run(package(temp.path(), artifacts, &["-q"]).arg("--plan"));
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.lines().any(|line| line.trim_start().starts_with(dropped)), "{plan}");
    // Words, not the Rust names of the plan's enums.
    assert!(plan.contains("(file shipped by a runtime package)"), "{plan}");
    assert!(plan.contains("(fits in place") || plan.contains("(file grown by a new segment"), "{plan}");
    for rust_name in ["(RuntimePackage)", "(SonameAlias)", "(Source)", "(Grown", "(InPlace", "(Unchanged"] {
        assert!(!plan.contains(rust_name), "{rust_name} in the plan:\n{plan}");
    }
}

#[test]
fn under_github_actions_an_error_is_an_annotation_naming_the_file() {
    let temp = tempfile::tempdir().expect("test step");
    // An artifacts directory without the build manifest.
    let artifacts = temp.path().join("artifacts");
    fs_err::create_dir_all(artifacts.join("core-hip_lib_generic")).expect("test step");
    fs_err::write(artifacts.join("core-hip_lib_generic/artifact_manifest.txt"), "core/stage\n").expect("test step");
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
    let artifacts = shared_example();
    run(package(temp.path(), artifacts, &["-q"]).args(["--only", "meta,core"]));
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

#[test]
fn help_lists_every_subcommand_and_each_has_its_own() {
    let temp = tempfile::tempdir().expect("test step");
    let output = run(xtask(temp.path()).arg("--help"));
    let help = String::from_utf8_lossy(&output.stdout);
    let subcommands = ["package", "verify", "index", "example", "elf", "bench", "repair"];
    for subcommand in subcommands {
        assert!(help.lines().any(|line| line.trim_start().starts_with(&format!("{subcommand} "))), "{help}");
    }
    for subcommand in subcommands {
        let output = run(xtask(temp.path()).args([subcommand, "--help"]));
        let help = String::from_utf8_lossy(&output.stdout);
        let usage = help.lines().find(|line| line.starts_with("Usage: ")).unwrap_or_else(|| panic!("{help}"));
        assert!(usage.contains(&format!(" {subcommand} ")), "{help}");
    }
}

/// `--json PATH`: the report in a file (the table still on stdout).
#[test]
fn json_path_writes_the_report_to_a_file() {
    let temp = tempfile::tempdir().expect("test step");
    let report = temp.path().join("report.json");
    let output = run(package(temp.path(), shared_example(), &[]).args(["--only", "meta,core", "--json"]).arg(&report));
    assert!(String::from_utf8_lossy(&output.stdout).contains("rocm_sdk_core-7.12.0.dev0"));
    let report: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&report).expect("test step")).expect("the report is JSON");
    assert_eq!(report["version"], "7.12.0.dev0");
    let outputs = report["outputs"].as_array().expect("an outputs list");
    let mut listed: Vec<&str> = outputs.iter().map(|output| output["file_name"].as_str().unwrap_or("")).collect();
    listed.sort();
    assert_eq!(listed, dist_files(temp.path()));
    assert_eq!(listed, ["rocm-7.12.0.dev0.tar.gz", "rocm_sdk_core-7.12.0.dev0-py3-none-linux_x86_64.whl"]);
}

/// `compress_type` of every member of each wheel in `dist`, read back with Python.
fn compress_types(dist: &Path) -> Vec<u64> {
    let script = "import glob, json, sys, zipfile\n\
                  print(json.dumps(sorted({i.compress_type for w in glob.glob(sys.argv[1] + '/*.whl') \
                  for i in zipfile.ZipFile(w).infolist()})))";
    let output = run(Command::new("python3").args(["-c", script]).arg(dist));
    serde_json::from_slice(&output.stdout).expect("test step")
}

/// Reference compatibility: `--wheel-compression` and `--build-packages` undo
/// their `--no-` forms; the last one given wins.
#[test]
fn positive_flags_undo_their_negative_forms() {
    let temp = tempfile::tempdir().expect("test step");
    let package_into = |dest: &str, flags: &[&str]| {
        let mut command = xtask(temp.path());
        command.args(["-q", "package", "--only", "core", "--version", "7.12.0.dev0", "--artifact-dir"]);
        run(command.arg(shared_example()).args(["--dest-dir", dest]).args(flags));
        temp.path().join(dest)
    };
    const STORED: u64 = 0;
    const DEFLATED: u64 = 8;
    // Deflated, but for the members deflate cannot shrink by 1 % (tiny files), stored.
    let dest = package_into("deflated", &["--no-wheel-compression", "--wheel-compression"]);
    assert_eq!(compress_types(&dest.join("dist")), [STORED, DEFLATED]);
    let dest = package_into("stored", &["--wheel-compression", "--no-wheel-compression"]);
    assert_eq!(compress_types(&dest.join("dist")), [STORED]);

    // As the reference lays them out: archives in DIR/dist/, trees in DIR.
    let archives = package_into("archives", &["--no-build-packages", "--build-packages"]);
    assert_eq!(visible_files(&archives), ["dist"]);
    assert_eq!(visible_files(&archives.join("dist")), ["rocm_sdk_core-7.12.0.dev0-py3-none-linux_x86_64.whl"]);
    let trees = package_into("trees", &["--build-packages", "--no-build-packages"]);
    let entries = visible_files(&trees);
    assert!(!entries.is_empty() && entries.iter().all(|entry| trees.join(entry).is_dir()), "{entries:?}");
}

/// Every wheel carries its bill of materials, unless `--no-sbom` (SPEC §10).
#[test]
fn no_sbom_leaves_the_bill_of_materials_out() {
    let temp = tempfile::tempdir().expect("test step");
    let script = "import glob, json, sys, zipfile\n\
                  print(json.dumps(sorted(n for w in glob.glob(sys.argv[1] + '/*.whl') \
                  for n in zipfile.ZipFile(w).namelist() if '/sboms/' in n)))";
    let documents = |dest: &str, flags: &[&str]| -> Vec<String> {
        let mut command = xtask(temp.path());
        command.args(["-q", "package", "--only", "core", "--version", "7.12.0.dev0", "--artifact-dir"]);
        run(command.arg(shared_example()).args(["--dest-dir", dest]).args(flags));
        let output = run(Command::new("python3").args(["-c", script]).arg(temp.path().join(dest).join("dist")));
        serde_json::from_slice(&output.stdout).expect("test step")
    };
    assert_eq!(documents("with", &[]), ["rocm_sdk_core-7.12.0.dev0.dist-info/sboms/rocm-packager.cdx.json"]);
    assert_eq!(documents("without", &["--no-sbom"]), Vec::<String>::new());
}

/// The devel tarball members (`…/_devel.tar` or `…/_devel.tar.xz`) of the wheels in `dist`.
fn devel_tarballs(dist: &Path) -> Vec<String> {
    let script = "import glob, json, sys, zipfile\n\
                  print(json.dumps(sorted({n.rsplit('/', 1)[1] for w in glob.glob(sys.argv[1] + '/*.whl') \
                  for n in zipfile.ZipFile(w).namelist() if '_devel.tar' in n})))";
    let output = run(Command::new("python3").args(["-c", script]).arg(dist));
    serde_json::from_slice(&output.stdout).expect("test step")
}

/// The reference's command line works unchanged. `--devel-tarball-compression`
/// alone (argparse's BooleanOptionalAction) turns xz on and `--no-…` turns it off, the
/// last one winning; `true`/`false` values still work; empty family lists, as TheRock's
/// CI passes them for a single-platform build, are no lists.
#[test]
fn the_reference_spellings_of_the_flags_are_accepted() {
    let temp = tempfile::tempdir().expect("test step");
    let package_into = |dest: &str, flags: &[&str]| {
        let mut command = xtask(temp.path());
        command.args(["-q", "package", "--only", "devel", "--version", "7.12.0.dev0", "--artifact-dir"]);
        run(command.arg(shared_example()).arg(format!("--dest-dir={dest}")).args(flags));
        devel_tarballs(&temp.path().join(dest).join("dist"))
    };
    let empty_lists = ["--linux-amdgpu-families=", "--windows-amdgpu-families="];
    assert_eq!(package_into("bare", &["--devel-tarball-compression"]), ["_devel.tar.xz"]);
    assert_eq!(
        package_into("lists", &[&["--devel-tarball-compression"][..], &empty_lists].concat()),
        ["_devel.tar.xz"]
    );
    assert_eq!(
        package_into("undone", &["--devel-tarball-compression", "--no-devel-tarball-compression"]),
        ["_devel.tar"]
    );
    assert_eq!(
        package_into("redone", &["--no-devel-tarball-compression", "--devel-tarball-compression"]),
        ["_devel.tar.xz"]
    );
    assert_eq!(package_into("valued", &["--devel-tarball-compression", "true"]), ["_devel.tar.xz"]);
    assert_eq!(package_into("default", &[]), ["_devel.tar"]);
}

/// `(date_time of every wheel member, mtime of every sdist member)`, each de-duplicated.
fn archive_times(dist: &Path) -> (Vec<Vec<u64>>, Vec<u64>) {
    let script = "import glob, json, sys, tarfile, zipfile\n\
                  d = sys.argv[1]\n\
                  z = sorted({i.date_time for w in glob.glob(d + '/*.whl') for i in zipfile.ZipFile(w).infolist()})\n\
                  t = sorted({m.mtime for s in glob.glob(d + '/*.tar.gz') for m in tarfile.open(s).getmembers()})\n\
                  print(json.dumps([z, t]))";
    let output = run(Command::new("python3").args(["-c", script]).arg(dist));
    serde_json::from_slice(&output.stdout).expect("test step")
}

/// `SOURCE_DATE_EPOCH` reaches the archives: zip stores UTC date and time to 2 seconds,
/// from 1980 on (earlier times clamp to 1980-01-01); tar stores the seconds.
#[test]
fn source_date_epoch_sets_the_archive_times() {
    let temp = tempfile::tempdir().expect("test step");
    // 1700000001 is 2023-11-14T22:13:21Z; 86400 is 1970-01-02, before zip's range.
    let cases = [("1700000001", vec![2023, 11, 14, 22, 13, 20]), ("86400", vec![1980, 1, 1, 0, 0, 0])];
    for (epoch, zip_time) in cases {
        let dist = temp.path().join(epoch);
        let mut command = xtask(temp.path());
        command.args(["-q", "package", "--only", "meta,core", "--version", "7.12.0.dev0", "--artifact-dir"]);
        run(command.arg(shared_example()).arg("--dest-dir").arg(&dist).env("SOURCE_DATE_EPOCH", epoch));
        let (zip_times, tar_times) = archive_times(&dist.join("dist"));
        assert_eq!(zip_times, [zip_time], "SOURCE_DATE_EPOCH={epoch}");
        assert_eq!(tar_times, [epoch.parse::<u64>().expect("test step")], "SOURCE_DATE_EPOCH={epoch}");
    }
}

/// On a terminal (a pty from util-linux's `script`), each stage shows a spinner with its
/// elapsed time and each output a bar with bytes done and total; the summary follows.
#[test]
fn a_terminal_gets_stage_spinners_and_output_bars() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = shared_example();
    let dist = temp.path().join("dist");
    let log = temp.path().join("terminal.log");
    let inner = format!(
        "{} package --artifact-dir '{}' --dest-dir '{}' --version 7.12.0.dev0",
        env!("CARGO_BIN_EXE_xtask"),
        artifacts.display(),
        dist.display()
    );
    let mut command = Command::new("script");
    command.args(["-qec", &inner]).arg(&log).current_dir(temp.path()).env("TERM", "xterm");
    for key in ["GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "RUST_LOG", "SOURCE_DATE_EPOCH"] {
        command.env_remove(key);
    }
    let output = command.output().expect("run `script` (util-linux; apt-get install bsdutils)");
    let screen = String::from_utf8_lossy(&fs_err::read(&log).expect("terminal log")).into_owned();
    assert!(output.status.success(), "{screen}");
    for stage in ["catalog (", "plan (", "write ("] {
        assert!(screen.contains(stage), "no {stage:?} spinner:\n{screen}");
    }
    assert!(screen.contains("rocm_sdk_core-7.12.0.dev0") && screen.contains("KiB/"), "no output bar:\n{screen}");
    assert!(screen.contains("compressed"), "no summary table:\n{screen}");
}

#[test]
fn a_windows_build_is_said_in_one_line_naming_the_file_that_told() {
    let temp = tempfile::tempdir().expect("test step");
    let artifacts = temp.path().join("windows");
    run(xtask(temp.path()).args(["example", "--windows", "--out"]).arg(&artifacts));
    let output = run(&mut package(temp.path(), &artifacts, &[]));
    let stderr = String::from_utf8(output.stderr).expect("test step");
    let said: Vec<&str> = stderr.lines().filter(|line| line.starts_with("note: a Windows build: ")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("bin/amd_comgr_3.dll is a PE file") && said[0].contains("win_amd64"), "{stderr}");
    assert!(dist_files(temp.path()).iter().all(|file| !file.ends_with(".whl") || file.ends_with("-win_amd64.whl")));

    let quiet = run(&mut package(temp.path(), &artifacts, &["-q"]));
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("Windows"), "-q prints only errors");
    let plan = run(package(temp.path(), &artifacts, &[]).arg("--plan"));
    let stdout = String::from_utf8(plan.stdout).expect("test step");
    assert!(stdout.lines().nth(1).is_some_and(|line| line.starts_with("a Windows build: ")), "{stdout}");
}
