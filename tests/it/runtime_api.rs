//! The runtime API of SPEC §4 on the real installed packages: small Python
//! programs run in one venv holding only `rocm` and core (installed from the kpack-split
//! example), so every library the API finds is core's and every libraries-package library
//! is missing, as it is for a user who has not installed `rocm[libraries]`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::installed::{self, assert_success, PATH_WITHOUT_GPU_TOOLS};
use crate::support;
use crate::targets::{build, VERSION};

/// The venv with `rocm` and `rocm-sdk-core` only, installed once per test binary under
/// `target/tmp/runtime-api/` (wiped first). Tests only run programs in it.
fn core_venv() -> &'static Path {
    static VENV: OnceLock<PathBuf> = OnceLock::new();
    VENV.get_or_init(|| {
        let root = support::target_tmp().join("runtime-api");
        if root.exists() {
            fs_err::remove_dir_all(&root).expect("remove the previous run's venv");
        }
        fs_err::create_dir_all(&root).expect("create the venv dir");
        let venv = support::fresh_venv(&root.join("venv"));
        let output = support::pip_install(&venv, &build(true).dist, &["rocm"], &[("PATH", PATH_WITHOUT_GPU_TOOLS)]);
        assert_success(&output, "pip install rocm");
        let dists: Vec<String> = installed::rocm_dists(&venv).into_iter().collect();
        assert_eq!(dists, ["rocm", "rocm-sdk-core"]);
        venv
    })
    .as_path()
}

/// Runs `code` in the core venv with `envs` (on top of a clean runtime environment); it
/// must succeed and print nothing on stderr. Returns its stdout parsed as JSON.
fn run_json(code: &str, envs: &[(&str, &str)]) -> serde_json::Value {
    let output = installed::python(core_venv(), code, &[], envs);
    assert_success(&output, code);
    assert!(output.stderr.is_empty(), "{code} printed on stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{code} printed no JSON ({error}): {}", String::from_utf8_lossy(&output.stdout)))
}

fn core_lib() -> PathBuf {
    installed::site_packages(core_venv()).join("_rocm_sdk_core/lib")
}

/// Python that prints, as JSON, `[exception type, message]` of `call` or null.
fn outcome_of(call: &str) -> String {
    format!(
        "import json, rocm_sdk\n\
         try:\n\
         \x20   {call}\n\
         \x20   print('null')\n\
         except Exception as error:\n\
         \x20   print(json.dumps([type(error).__name__, str(error)]))"
    )
}

#[test]
fn targets_and_version_are_the_builds() {
    let artifacts = &build(true).artifacts;
    let dist_info = installed::walk(artifacts)
        .into_iter()
        .find(|path| path.ends_with("share/therock/dist_info.json"))
        .expect("the base artifact's dist_info.json");
    let dist_info: serde_json::Value =
        serde_json::from_slice(&fs_err::read(&dist_info).expect("read dist_info.json")).expect("JSON");
    let targets = dist_info["dist_amdgpu_targets"].as_str().expect("dist_amdgpu_targets");
    assert_eq!(installed::rocm_sdk(core_venv(), &["targets"], &[]), format!("{targets}\n"));
    assert_eq!(installed::rocm_sdk(core_venv(), &["version"], &[]), format!("{VERSION}\n"));
}

#[test]
fn find_libraries_returns_installed_core_files() {
    let code = "import json, rocm_sdk\n\
                print(json.dumps([str(path) for path in rocm_sdk.find_libraries('amdhip64', 'rocdxg', 'hiprtc')]))";
    let paths = run_json(code, &[]);
    let core_lib = core_lib();
    // `rocdxg` is optional and the example's core has none: it is left out, not an error.
    assert_eq!(
        paths,
        serde_json::json!([core_lib.join("libamdhip64.so.7"), core_lib.join("libhiprtc.so.7")]),
        "in {}",
        core_lib.display()
    );
    for path in paths.as_array().expect("a list") {
        let path = Path::new(path.as_str().expect("a path"));
        let info = elf_rpath::read_elf(path).expect("read").expect("an ELF file");
        assert_eq!(info.kind, elf_rpath::ElfKind::SharedLibrary, "{}", path.display());
    }
}

#[test]
fn missing_packages_and_unknown_names_raise_module_not_found() {
    for call in ["rocm_sdk.preload_libraries('hipblas')", "rocm_sdk.find_libraries('amdhip64', 'miopen')"] {
        let outcome = run_json(&outcome_of(call), &[]);
        assert_eq!(outcome[0], "ModuleNotFoundError", "{call}: {outcome}");
        let message = outcome[1].as_str().expect("message");
        assert!(message.contains("pip install \"rocm[libraries]\""), "{call}: {message}");
    }
    let outcome = run_json(&outcome_of("rocm_sdk.preload_libraries('no-such-library')"), &[]);
    assert_eq!(outcome[0], "ModuleNotFoundError", "{outcome}");
    assert!(outcome[1].as_str().expect("message").starts_with("unknown ROCm library 'no-such-library'"), "{outcome}");
}

/// `ROCM_SDK_PRELOAD_LIBRARIES` is a comma or semicolon list with blanks ignored; each
/// named library is then mapped into the process and kept in `rocm_sdk._ALL_CDLLS`.
#[test]
fn preload_environment_variable_loads_each_named_library() {
    let code = "import json, rocm_sdk\n\
                def mapped():\n\
                \x20   return sorted(line.split()[-1] for line in open('/proc/self/maps') if '_rocm_sdk_core' in line)\n\
                before = mapped()\n\
                rocm_sdk.initialize_process()\n\
                loaded = {name: library._name for name, library in rocm_sdk._ALL_CDLLS.items()}\n\
                print(json.dumps([before, loaded, sorted(set(mapped()))]))";
    let result = run_json(code, &[("ROCM_SDK_PRELOAD_LIBRARIES", " amdhip64 ; ,hiprtc")]);
    let core_lib = core_lib();
    let (amdhip64, hiprtc) = (core_lib.join("libamdhip64.so.7"), core_lib.join("libhiprtc.so.7"));
    assert_eq!(result[0], serde_json::json!([]), "importing rocm_sdk loads nothing");
    assert_eq!(result[1], serde_json::json!({"amdhip64": amdhip64, "hiprtc": hiprtc}));
    let mapped: Vec<PathBuf> = serde_json::from_value(result[2].clone()).expect("paths");
    for library in [&amdhip64, &hiprtc] {
        assert!(mapped.contains(library), "{} is not mapped: {mapped:?}", library.display());
    }

    // A bad name is an error naming the variable, unless the caller turned it off.
    let code = "import json, rocm_sdk\n\
                rocm_sdk.initialize_process(env_override=False)\n\
                ignored = sorted(rocm_sdk._ALL_CDLLS)\n\
                try:\n\
                \x20   rocm_sdk.initialize_process()\n\
                \x20   error = None\n\
                except Exception as caught:\n\
                \x20   error = [type(caught).__name__, str(caught), type(caught.__cause__).__name__]\n\
                print(json.dumps([ignored, error]))";
    let result = run_json(code, &[("ROCM_SDK_PRELOAD_LIBRARIES", "amdhip64;bogus")]);
    assert_eq!(result[0], serde_json::json!([]), "env_override=False reads the variable");
    assert_eq!(result[1][0], "RuntimeError", "{result}");
    assert_eq!(result[1][2], "ModuleNotFoundError", "{result}");
    let message = result[1][1].as_str().expect("message");
    assert!(
        message.contains("ROCM_SDK_PRELOAD_LIBRARIES='amdhip64;bogus'") && message.contains("'bogus'"),
        "{message}"
    );
}

/// `check_version` (SPEC §4): a mismatch warns, attributed to the caller, or raises with
/// `fail_on_version_mismatch`; a matching `*` pattern or compiled regex is silent.
#[test]
fn version_check_warns_raises_or_passes() {
    let code = "import json, re, warnings, rocm_sdk\n\
        def attempt(**kwargs):\n\
        \x20   with warnings.catch_warnings(record=True) as caught:\n\
        \x20       warnings.simplefilter('always')\n\
        \x20       try:\n\
        \x20           rocm_sdk.initialize_process(**kwargs)\n\
        \x20           raised = None\n\
        \x20       except Exception as error:\n\
        \x20           raised = [type(error).__name__, str(error)]\n\
        \x20   return [raised, [[w.category.__name__, str(w.message), w.filename] for w in caught]]\n\
        print(json.dumps({\n\
        \x20   'fails': attempt(check_version='0.0.1', fail_on_version_mismatch=True),\n\
        \x20   'warns': attempt(check_version='0.0.1'),\n\
        \x20   'regex': attempt(check_version=re.compile(r'7\\.12\\.\\d+\\.dev\\d+')),\n\
        \x20   'regex_fails': attempt(check_version=re.compile(r'6\\.'), fail_on_version_mismatch=True),\n\
        \x20   'wildcard': attempt(check_version='7.12.*', fail_on_version_mismatch=True),\n\
        \x20   'version': rocm_sdk.__version__,\n\
        }))";
    let result = run_json(code, &[]);
    // Both messages begin with the reference's sentence, word for word (SPEC §4): code
    // outside this project, the reference's own tests among it, matches on it.
    let mismatch = |pattern: &str| {
        format!(
            "The program was compiled against a ROCm version matching '{pattern}' but the installed ROCm version \
             in this Python environment is {VERSION}."
        )
    };
    let raised = format!(
        "{} Install the ROCm packages the program was built for (pip install --force-reinstall 'rocm==VERSION'), \
         or rebuild it against {VERSION}.",
        mismatch("0.0.1")
    );
    assert_eq!(result["fails"], serde_json::json!([["RuntimeError", raised], []]));
    let warned = format!("{} This incompatibility may result in unexpected behavior.", mismatch("0.0.1"));
    assert_eq!(result["warns"], serde_json::json!([null, [["UserWarning", warned, "<string>"]]]));
    assert_eq!(result["regex"], serde_json::json!([null, []]));
    assert_eq!(result["regex_fails"][0][0], "RuntimeError", "{result}");
    let regex_message = result["regex_fails"][0][1].as_str().expect("a message");
    assert!(regex_message.starts_with(&mismatch("6\\.")), "{regex_message}");
    assert_eq!(result["wildcard"], serde_json::json!([null, []]));
    assert_eq!(result["version"], VERSION);
}

/// Everything the runtime does on a normal start prints nothing, unless
/// `ROCM_SDK_VERBOSE=1` (SPEC §4, Environment). Its logging itself is seen by
/// `installed::init_concurrently`.
#[test]
fn the_runtime_prints_nothing_unless_verbose() {
    let code = "import rocm_sdk, rocm_sdk._dist_info as di\n\
                di.determine_target_family()\n\
                rocm_sdk.find_libraries('amdhip64', 'rocdxg')\n\
                rocm_sdk.initialize_process(preload_shortnames=['hiprtc'], check_version='7.12.*')\n\
                try:\n\
                \x20   rocm_sdk.preload_libraries('hipblas')\n\
                except ModuleNotFoundError:\n\
                \x20   pass";
    for verbose in [None, Some("0")] {
        let mut envs = vec![("ROCM_SDK_PRELOAD_LIBRARIES", "amdhip64")];
        envs.extend(verbose.map(|value| ("ROCM_SDK_VERBOSE", value)));
        let output = installed::python(core_venv(), code, &[], &envs);
        assert_success(&output, "the runtime's normal start");
        assert!(
            output.stdout.is_empty() && output.stderr.is_empty(),
            "ROCM_SDK_VERBOSE={verbose:?}: printed {:?} {:?}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
