//! The Python unit tests of `packager/python/tests` (the code shipped inside the packages),
//! each reported as a test of its own: `cargo test -p packager-tests --test python` lists
//! and runs them as `test_dist_info::MatchingTest::test_families_match_case_insensitively`,
//! so `cargo xtask verify` counts every Python test and names each failing one.
//!
//! libtest-mimic gives this binary libtest's command line (filters, `--exact`, `--skip`,
//! `--list`, `--quiet`, `--test-threads`) and output. `python3 -m tests.runner list` (the
//! system `python3`) names the tests; the selected ones run in one Python process per test
//! module, up to `--test-threads` modules at once, each writing one result per test to a
//! report file (`packager/python/tests/runner.py`); each test then reports its own result,
//! with its traceback and what it printed when it failed. One more test, of the harness
//! itself, runs this binary on a copy of the tree with a failing Python test added.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};
use std::sync::{Arc, Condvar, Mutex};

use libtest_mimic::{Arguments, Failed, Trial};

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let names = match list_tests() {
        Ok(names) => names,
        // A named failure, not a panic: verify's closing lines then say what went wrong.
        Err(error) => {
            return libtest_mimic::run(&args, vec![Trial::test("runner::list", move || Err(error))]).exit_code()
        }
    };
    let trials: Vec<Trial> = names.iter().map(|name| Trial::test(name.clone(), || Ok(()))).collect();
    let self_test = Trial::test(SELF_TEST, a_failing_python_test_is_reported_by_name);
    let selected: Vec<&String> = names
        .iter()
        .zip(&trials)
        .filter(|(_, trial)| !args.list && !args.is_filtered_out(trial))
        .map(|(name, _)| name)
        .collect();
    let batches = start_batches(&selected, threads(&args));
    let mut trials: Vec<Trial> = names
        .into_iter()
        .map(|name| {
            let batch = batches.get(module_of(&name)).cloned();
            Trial::test(name.clone(), move || match batch {
                Some(batch) => batch.wait().outcome_of(&name),
                None => Err(format!("{name} was not run (not selected when the harness started)").into()),
            })
        })
        .collect();
    trials.push(self_test);
    libtest_mimic::run(&args, trials).exit_code()
}

/// Set on the harness's own run of itself: the Python tree to take the tests from.
const ROOT_VARIABLE: &str = "PACKAGER_PYTHON_ROOT";

/// `packager/python`, where the runner finds the tests (`tests/`) and their package root.
fn python_root() -> PathBuf {
    std::env::var_os(ROOT_VARIABLE)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../packager/python"))
}

/// `python3 -m tests.runner ARGS` in [`python_root`], its environment free of the ROCm
/// settings of the machine running it.
fn runner(args: &[&str]) -> Command {
    let mut command = Command::new("python3");
    command
        .args(["-m", "tests.runner"])
        .args(args)
        .current_dir(python_root())
        // Keep the source tree free of caches, and the tests away from any ROCm setup
        // of the machine running them.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("ROCM_SDK_TARGET_FAMILY")
        .env_remove("ROCM_SDK_PRELOAD_LIBRARIES")
        .env_remove("ROCM_SDK_VERBOSE");
    command
}

fn list_tests() -> Result<Vec<String>, Failed> {
    let output =
        runner(&["list"]).output().map_err(|error| format!("cannot run python3 (apt-get install python3): {error}"))?;
    if !output.status.success() {
        return Err(format!("listing the Python tests failed ({}):\n{}", output.status, both(&output)).into());
    }
    let names: Vec<String> = String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect();
    if names.is_empty() {
        return Err("the Python runner found no tests".into());
    }
    Ok(names)
}

/// `test_x` of `test_x::Class::test_y`: the module a test runs with.
fn module_of(name: &str) -> &str {
    name.split_once("::").map_or(name, |(module, _)| module)
}

/// The worker threads for batches: `--test-threads`, else one per core.
fn threads(args: &Arguments) -> usize {
    args.test_threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)).max(1)
}

/// One batch per module of `selected`, by module, run by `threads` workers from now on.
fn start_batches(selected: &[&String], threads: usize) -> BTreeMap<String, Arc<Batch>> {
    let mut by_module: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in selected {
        by_module.entry(module_of(name).to_owned()).or_default().push((*name).clone());
    }
    let batches: BTreeMap<String, Arc<Batch>> = by_module
        .into_iter()
        .map(|(module, names)| (module, Arc::new(Batch { names, result: Mutex::new(None), done: Condvar::new() })))
        .collect();
    let queue = Arc::new(Mutex::new(batches.values().cloned().collect::<VecDeque<_>>()));
    for _ in 0..threads.min(batches.len()) {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || loop {
            let next = queue.lock().map(|mut queue| queue.pop_front()).unwrap_or(None);
            let Some(batch) = next else { break };
            batch.finish(run_batch(&batch.names));
        });
    }
    batches
}

/// The selected tests of one module, run in one Python process.
struct Batch {
    names: Vec<String>,
    result: Mutex<Option<Arc<BatchResult>>>,
    done: Condvar,
}

impl Batch {
    fn finish(&self, result: BatchResult) {
        let mut slot = self.result.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *slot = Some(Arc::new(result));
        self.done.notify_all();
    }

    fn wait(&self) -> Arc<BatchResult> {
        let mut slot = self.result.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if let Some(result) = slot.as_ref() {
                return Arc::clone(result);
            }
            slot = self.done.wait(slot).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// What the runner said about each test of a batch, and how the process ended.
struct BatchResult {
    module: String,
    outcomes: BTreeMap<String, (bool, String)>,
    /// The process's exit and output, for tests it did not report on.
    ending: String,
}

impl BatchResult {
    fn outcome_of(&self, name: &str) -> Result<(), Failed> {
        match self.outcomes.get(name) {
            Some((true, _)) => Ok(()),
            Some((false, details)) => Err(details.clone().into()),
            None => {
                let set_up = self.outcomes.get(&format!("{}::<set-up>", self.module));
                let set_up = set_up.map(|(_, details)| format!("\nits module's set-up failed:\n{details}"));
                Err(format!("the Python runner gave no result for it{}\n{}", set_up.unwrap_or_default(), self.ending)
                    .into())
            }
        }
    }
}

fn run_batch(names: &[String]) -> BatchResult {
    let module = names.first().map_or("", |name| module_of(name)).to_owned();
    let mut result = BatchResult { module, outcomes: BTreeMap::new(), ending: String::new() };
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            result.ending = format!("cannot make a temp dir for the report: {error}");
            return result;
        }
    };
    let report = dir.path().join("report.jsonl");
    let mut args = vec!["run", report.to_str().unwrap_or_default()];
    args.extend(names.iter().map(String::as_str));
    let output = match runner(&args).output() {
        Ok(output) => output,
        Err(error) => {
            result.ending = format!("cannot run python3: {error}");
            return result;
        }
    };
    result.ending = format!("the runner exited with {}:\n{}", output.status, both(&output));
    for line in std::fs::read_to_string(&report).unwrap_or_default().lines() {
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(entry) => {
                let name = entry["name"].as_str().unwrap_or_default().to_owned();
                let passed = entry["outcome"] == "passed";
                result.outcomes.insert(name, (passed, entry["details"].as_str().unwrap_or_default().to_owned()));
            }
            Err(error) => result.ending.push_str(&format!("\nunreadable report line {line:?}: {error}")),
        }
    }
    result
}

fn both(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

const SELF_TEST: &str = "harness::a_failing_python_test_is_reported_by_name";

/// This binary, on a copy of the Python tree with a module of one passing and one failing
/// test, reports each under its name and the failure as libtest does, which is what
/// `cargo xtask verify` reads for its `failed test:` lines (`failures:`, the names indented
/// by four spaces, `test result: FAILED.`), with the traceback and the test's output.
fn a_failing_python_test_is_reported_by_name() -> Result<(), Failed> {
    let scratch = tempfile::tempdir().map_err(|error| format!("temp dir: {error}"))?;
    let copy = scratch.path().join("python");
    copy_tree(&python_root(), &copy).map_err(|error| format!("copying the Python tree: {error}"))?;
    let module = "\"\"\"Injected by the harness's own test.\"\"\"\n\nimport unittest\n\n\n\
        class Injected(unittest.TestCase):\n    def test_passes(self) -> None:\n        pass\n\n\
        \x20   def test_fails(self) -> None:\n        print(\"said before failing\")\n        self.assertEqual(1, 2)\n";
    std::fs::write(copy.join("tests/test_zz_injected.py"), module).map_err(|error| format!("write: {error}"))?;
    let exe = std::env::current_exe().map_err(|error| format!("this binary: {error}"))?;
    let output = Command::new(exe)
        .arg("test_zz_injected::")
        .env(ROOT_VARIABLE, &copy)
        .output()
        .map_err(|error| format!("running the harness: {error}"))?;
    let text = both(&output);
    let expect = |wanted: &str| if text.contains(wanted) { Ok(()) } else { Err(format!("no {wanted:?} in:\n{text}")) };
    expect("test test_zz_injected::Injected::test_passes ... ok")?;
    expect("\nfailures:\n    test_zz_injected::Injected::test_fails\n")?;
    expect("test result: FAILED. 1 passed; 1 failed;")?;
    expect("AssertionError: 1 != 2")?;
    expect("said before failing")?;
    if output.status.success() {
        return Err(format!("the harness passed a failing test:\n{text}").into());
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || name == "__pycache__" {
            continue;
        }
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &to.join(&name))?;
        } else {
            std::fs::copy(entry.path(), to.join(&name))?;
        }
    }
    Ok(())
}
