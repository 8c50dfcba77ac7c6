//! Unit tests of the Python embedding and `_dist_info_data.py` rendering.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

fn python(args: &[&str]) -> String {
    let output = Command::new("python3")
        .args(args)
        .output()
        .expect("python3 is needed by these tests (apt-get install python3)");
    assert!(output.status.success(), "python3 {args:?} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("python3 printed UTF-8")
}

fn legacy_info(families: &[&str]) -> DistInfo {
    DistInfo {
        version: "7.12.0.dev0".to_owned(),
        nonce: String::new(),
        kpack_split: false,
        default_target_family: families.first().map(|f| (*f).to_owned()),
        available_target_families: families.iter().map(|f| (*f).to_owned()).collect(),
        linux_target_families: Vec::new(),
        windows_target_families: Vec::new(),
        device_targets: Vec::new(),
        devel_target_specific: families.len() > 1,
        windows: false,
    }
}

fn kpack_info(targets: &[&str], nonce: &str) -> DistInfo {
    DistInfo {
        version: "7.12.0".to_owned(),
        nonce: nonce.to_owned(),
        kpack_split: true,
        default_target_family: targets.first().map(|f| (*f).to_owned()),
        available_target_families: targets.iter().map(|f| (*f).to_owned()).collect(),
        linux_target_families: targets.iter().map(|f| (*f).to_owned()).collect(),
        windows_target_families: Vec::new(),
        device_targets: targets.iter().map(|f| (*f).to_owned()).collect(),
        devel_target_specific: false,
        windows: false,
    }
}

/// A package `shipped` under `dir` holding what a pure package of `role` carries of
/// `_dist_info`: the static module and its generated constants. Returns `dir`, the
/// directory to put on `sys.path`.
fn write_dist_info(dir: &Path, role: &PackageRole, info: &DistInfo) -> PathBuf {
    let package = dir.join("shipped");
    fs_err::create_dir_all(&package).expect("create the package");
    fs_err::write(package.join("__init__.py"), "").expect("write __init__.py");
    for file in dist_info_files("shipped", role, info) {
        fs_err::write(dir.join(&file.path), &file.bytes).expect("write the dist info");
    }
    dir.to_path_buf()
}

/// Imports `shipped._dist_info` from the directory `sys.argv[1]` and prints the named
/// attributes as JSON.
const EVALUATE: &str = "import json, sys\n\
    sys.path.insert(0, sys.argv[1])\n\
    import shipped._dist_info as d\n\
    print(json.dumps([getattr(d, name) for name in sys.argv[2:]]))\n";

fn evaluate(path: &Path, names: &[&str]) -> serde_json::Value {
    let mut args = vec!["-c", EVALUATE, path.to_str().expect("UTF-8 temp path")];
    args.extend_from_slice(names);
    serde_json::from_str(&python(&args)).expect("JSON from python")
}

/// A module file `path` on its own (a device module) evaluated, its named values as JSON.
fn evaluate_file(path: &Path, names: &[&str]) -> serde_json::Value {
    const EXEC: &str = "import ast, json, sys\n\
        source = open(sys.argv[1], encoding='utf-8').read()\n\
        ast.parse(source)\n\
        namespace = {'__name__': 'module'}\n\
        exec(compile(source, sys.argv[1], 'exec'), namespace)\n\
        print(json.dumps([namespace[name] for name in sys.argv[2:]]))\n";
    let mut args = vec!["-c", EXEC, path.to_str().expect("UTF-8 temp path")];
    args.extend_from_slice(names);
    serde_json::from_str(&python(&args)).expect("JSON from python")
}

#[test]
fn str_literal_escapes_what_could_break_out() {
    let check = |value: &str, expected: &str| assert_eq!(str_literal(value), expected, "for {value:?}");
    check("gfx110X-all", "'gfx110X-all'");
    check("it's", "'it\\'s'");
    check("back\\slash", "'back\\\\slash'");
    check("two\nlines\r\t", "'two\\nlines\\r\\t'");
    check("nul\0 del\x7f", "'nul\\x00 del\\x7f'");
    check("é€😀", "'\\xe9\\u20ac\\U0001f600'");
    check("\u{2028}", "'\\u2028'");
}

#[test]
fn injected_family_names_round_trip_through_python() {
    let evil = [
        "x\"; import os; os.system(\"echo pwned\") #",
        "x'; import os; os.system('echo pwned') #",
        "line\nimport os; os.system('echo pwned')",
        "\\'\\\"\u{2028}\u{85}\0é😀",
    ];
    let mut info = legacy_info(&evil);
    info.version = "1.0'\nraise SystemExit(3)\n#".to_owned();
    info.nonce = "_n'\"\\".to_owned();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_dist_info(dir.path(), &PackageRole::Libraries { family: Some(evil[2].to_owned()) }, &info);
    let values = evaluate(
        &path,
        &[
            "AVAILABLE_TARGET_FAMILIES",
            "DEFAULT_TARGET_FAMILY",
            "__version__",
            "PY_PACKAGE_SUFFIX_NONCE",
            "THIS_TARGET_FAMILY",
        ],
    );
    let mut sorted: Vec<&str> = evil.to_vec();
    sorted.sort_unstable();
    assert_eq!(values[0], serde_json::json!(sorted));
    assert_eq!(values[1], serde_json::json!(info.default_target_family));
    assert_eq!(values[2], serde_json::json!(info.version));
    assert_eq!(values[3], serde_json::json!(info.nonce));
    assert_eq!(values[4], serde_json::json!(evil[2]));
    let source = render_dist_info_data(&PackageRole::Core, &info);
    assert!(source.is_ascii(), "the generated module is plain ASCII");
}

/// The generated module defines exactly the names, with the types, that the static
/// module's type check reads from `_dist_info_data.pyi`: a constant added on one side only
/// fails here, not on a user's machine.
#[test]
fn generated_constants_match_their_declaration() {
    let stub = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/meta/rocm_sdk/_dist_info_data.pyi");
    let stub = fs_err::read_to_string(stub).expect("read the declaration");
    let declared: BTreeMap<&str, &str> = stub
        .lines()
        .filter_map(|line| line.split_once(": "))
        .filter(|(name, _)| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    const TYPES: &str = "import ast, json, sys\n\
        tree = ast.parse(open(sys.argv[1], encoding='utf-8').read())\n\
        kinds = {}\n\
        for node in tree.body:\n\
        \x20   if isinstance(node, ast.Assign):\n\
        \x20       value = ast.literal_eval(node.value)\n\
        \x20       kind = type(value).__name__\n\
        \x20       if isinstance(value, list):\n\
        \x20           kind = 'list[%s]' % ','.join(sorted({type(v).__name__ for v in value} or {'str'}))\n\
        \x20       if isinstance(value, dict):\n\
        \x20           kind = 'dict[str, str]' if all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()) else 'dict'\n\
        \x20       kinds[node.targets[0].id] = kind\n\
        print(json.dumps(kinds))\n";
    let dir = tempfile::tempdir().expect("temp dir");
    for (role, default) in [(PackageRole::Core, Some("gfx90a")), (PackageRole::Libraries { family: None }, None)] {
        let mut info = kpack_info(&["gfx1250-strict", "gfx90a"], "");
        info.default_target_family = default.map(str::to_owned);
        let path = dir.path().join("_dist_info_data.py");
        fs_err::write(&path, render_dist_info_data(&role, &info)).expect("write");
        let kinds: BTreeMap<String, String> =
            serde_json::from_str(&python(&["-c", TYPES, path.to_str().expect("UTF-8 temp path")])).expect("JSON");
        let names: Vec<&str> = kinds.keys().map(String::as_str).collect();
        let declared_names: Vec<&str> = declared.keys().copied().collect();
        assert_eq!(names, declared_names, "the names of _dist_info_data.py and its .pyi");
        for (name, kind) in &kinds {
            let wanted = declared[name.as_str()];
            let fits = wanted == kind || (wanted == "str | None" && (kind == "str" || kind == "NoneType"));
            assert!(fits, "{name} is a {kind}, declared {wanted}");
        }
    }
}

/// Rust and Python must name every package alike, or the wheels and the runtime disagree.
/// (A legacy build's `device` entry is the reference's name for a wheel it does not make.)
#[test]
fn python_computes_the_names_rust_gives_the_packages() {
    const NAMES: &str = "import json, sys\n\
        sys.path.insert(0, sys.argv[1])\n\
        import shipped._dist_info as d\n\
        result = {}\n\
        for logical, entry in d.ALL_PACKAGES.items():\n\
        \x20   if not entry.built:\n\
        \x20       continue\n\
        \x20   families = d.AVAILABLE_TARGET_FAMILIES if entry.is_target_specific else [None]\n\
        \x20   for family in families:\n\
        \x20       result['%s/%s' % (logical, family)] = [entry.get_dist_package_name(family),\n\
        \x20           entry.get_pure_py_package_name(family), entry.get_py_package_name(family)]\n\
        print(json.dumps(result))\n";
    let infos = [
        legacy_info(&["gfx110X-all"]),
        legacy_info(&["gfx110X-all", "gfx94X-dcgpu"]),
        kpack_info(&["gfx1030", "gfx90a"], "_n1"),
        kpack_info(&["gfx1030", "gfx1250", "gfx1250-strict", "gfx90a"], ""),
    ];
    for info in infos {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write_dist_info(dir.path(), &PackageRole::Core, &info);
        let from_python: BTreeMap<String, Vec<Option<String>>> =
            serde_json::from_str(&python(&["-c", NAMES, path.to_str().expect("UTF-8 temp path")]))
                .expect("JSON from python");
        let mut from_rust = BTreeMap::new();
        let families: Vec<&str> = info.available_target_families.iter().map(String::as_str).collect();
        let mut roles: Vec<(String, PackageRole)> = vec![
            ("meta/None".to_owned(), PackageRole::Meta),
            ("core/None".to_owned(), PackageRole::Core),
            ("profiler/None".to_owned(), PackageRole::Profiler),
        ];
        for family in &families {
            if !info.kpack_split {
                roles
                    .push((format!("libraries/{family}"), PackageRole::Libraries { family: Some(family.to_string()) }));
            } else {
                roles
                    .push((format!("device/{family}"), PackageRole::Device { target: Target::from_target_id(family) }));
            }
            if info.devel_target_specific {
                roles.push((format!("devel/{family}"), PackageRole::Devel { family: Some(family.to_string()) }));
            }
        }
        if info.kpack_split {
            roles.push(("libraries/None".to_owned(), PackageRole::Libraries { family: None }));
        }
        if !info.devel_target_specific {
            roles.push(("devel/None".to_owned(), PackageRole::Devel { family: None }));
        }
        for (key, role) in roles {
            let names = info.names(&role);
            let platform =
                names.platform_dir.map_or_else(|| format!("_rocm{}", info.nonce), |dir| dir.as_str().to_owned());
            from_rust.insert(key, vec![Some(names.distribution), names.pure_package, Some(platform)]);
        }
        assert_eq!(from_python, from_rust, "for {info:?}");
    }
}

/// A device wheel, its module and its `TARGET` are named after the owner (SPEC §2), and
/// every `_dist_info.py` carries the owner table as the JSON file has it.
#[test]
fn device_names_follow_the_owner() {
    let info = kpack_info(&["gfx1250", "gfx1250-strict"], "");
    for target in ["gfx1250", "gfx1250-strict"] {
        let role = PackageRole::Device { target: Target::from_target_id(target) };
        assert_eq!(info.names(&role).distribution, "rocm-sdk-device-gfx1250");
        assert_eq!(device_module_name(target), "_device_gfx1250");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_dist_info(dir.path(), &PackageRole::Core, &info);
    let table: serde_json::Value = serde_json::from_str(crate::owners::TABLE_JSON).expect("JSON");
    assert_eq!(evaluate(&path, &["TARGET_OWNERS"])[0], table["owners"]);
}

/// SPEC §6: no member path appears in two wheels of one build.
#[test]
fn no_two_packages_share_a_python_file() {
    let info = kpack_info(&["gfx1030", "gfx90a"], "");
    let roles = [
        PackageRole::Core,
        PackageRole::Libraries { family: None },
        PackageRole::Devel { family: None },
        PackageRole::Profiler,
        PackageRole::Device { target: Target::from_target_id("gfx1030") },
        PackageRole::Device { target: Target::from_target_id("gfx90a") },
    ];
    let mut owners = BTreeMap::new();
    for role in &roles {
        for file in python_part(role, &info).files {
            if let Some(previous) = owners.insert(file.path.clone(), role) {
                panic!("{} is in both {previous:?} and {role:?}", file.path);
            }
        }
    }
    let device: Vec<String> = python_part(&PackageRole::Device { target: Target::from_target_id("gfx90a") }, &info)
        .files
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(device, ["_rocm_sdk_libraries/_device_gfx90a.py"]);
    let devel = python_part(&PackageRole::Devel { family: None }, &info);
    let tree: Vec<&str> = devel.devel_tree_files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(tree, ["_rocm_sdk_devel/__init__.py"]);
    let wheel: Vec<&str> = devel.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        wheel,
        ["rocm_sdk_devel/__init__.py", "rocm_sdk_devel/_dist_info.py", "rocm_sdk_devel/_dist_info_data.py"]
    );
}

#[test]
fn device_module_names_are_identifiers_unique_per_target() {
    let check = |target: &str, expected: &str| assert_eq!(device_module_name(target), expected, "for {target:?}");
    check("gfx90a", "_device_gfx90a");
    check("gfx1030", "_device_gfx1030");
    check("GFX90A:xnack+", "_device_gfx90a");
    check("gfx+1", "_device_gfx_2b1");
    check("gfx-1", "_device_gfx_2d1");
    check("gfx_2b1", "_device_gfx_5f2b1");
    check("x\"; import os", "_device_x_22_3b_20import_20os");
}

/// SPEC §2: a device wheel's metadata names its target and the libraries package, as
/// Python literals whatever the target's name.
#[test]
fn device_module_evaluates_to_its_target() {
    let dir = tempfile::tempdir().expect("temp dir");
    let info = kpack_info(&["gfx90a"], "_v2");
    for (target, expected_target) in [("gfx90a:xnack+", "gfx90a"), ("x'\"\\\nimport os", "x'\"\\\nimport os")] {
        let files = python_part(&PackageRole::Device { target: Target::from_target_id(target) }, &info).files;
        let [module] = files.as_slice() else { panic!("one device module, got {files:?}") };
        assert_eq!(module.path, format!("_rocm_sdk_libraries_v2/{}.py", device_module_name(target)));
        let path = dir.path().join("device.py");
        fs_err::write(&path, &module.bytes).expect("write the device module");
        let values = evaluate_file(&path, &["__version__", "TARGET", "LIBRARIES_PY_PACKAGE_NAME"]);
        assert_eq!(values, serde_json::json!(["7.12.0", expected_target, "rocm_sdk_libraries"]), "{target:?}");
    }
}

#[test]
fn console_scripts_match_the_trampoline_modules() {
    const TOOLS: &str = "import json, sys\n\
        namespace = {}\n\
        exec(open(sys.argv[1], encoding='utf-8').read(), namespace)\n\
        print(json.dumps([[name, namespace['function_name'](name)] for name in namespace['TOOLS']]))\n";
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let info = legacy_info(&["gfx110X-all"]);
    for (role, file, module) in [
        (PackageRole::Core, "core/rocm_sdk_core/_cli.py", "rocm_sdk_core._cli"),
        (PackageRole::Profiler, "profiler/rocm_profiler/_cli.py", "rocm_profiler._cli"),
    ] {
        let source = root.join(file);
        let mut expected: Vec<(String, String)> =
            serde_json::from_str(&python(&["-c", TOOLS, source.to_str().expect("UTF-8 path")])).expect("JSON");
        // A Linux build leaves out the tools of the `# Windows only.` section.
        expected.retain(|(name, _)| name != "hipInfo");
        let actual: Vec<(String, String)> = python_part(&role, &info)
            .entry_points
            .into_iter()
            .map(|entry| {
                let function = entry.target.strip_prefix(&format!("{module}:")).expect("module prefix").to_owned();
                (entry.name, function)
            })
            .collect();
        assert_eq!(actual, expected);
    }
    let core = python_part(&PackageRole::Core, &info);
    assert!(core.entry_points.iter().any(|e| e.name == "amdclang++" && e.target == "rocm_sdk_core._cli:amdclangpp"));
    assert_eq!(core.entry_points.len(), 28);
    let windows = DistInfo { windows: true, ..info };
    let on_windows: Vec<String> =
        python_part(&PackageRole::Core, &windows).entry_points.into_iter().map(|entry| entry.name).collect();
    let every_platform =
        ["amdclang", "amdclang++", "amdclang-cpp", "amdclang-cl", "amdflang", "amdlld", "offload-arch"];
    let expected: Vec<&str> =
        every_platform.into_iter().chain(["hipcc", "hipconfig", "hipify-clang", "rocminfo", "hipInfo"]).collect();
    assert_eq!(on_windows, expected, "the reference's Windows lists: no roc-obj tools, hipInfo added");
}

#[test]
fn every_rocm_sdk_file_is_embedded() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/meta/rocm_sdk");
    let mut on_disk = Vec::new();
    let mut pending = vec![package.clone()];
    while let Some(dir) = pending.pop() {
        for entry in fs_err::read_dir(&dir).expect("read rocm_sdk") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                if path.file_name() != Some("__pycache__".as_ref()) {
                    pending.push(path);
                }
            } else if path.extension() == Some("py".as_ref()) {
                let relative = path.strip_prefix(&package).expect("under package");
                on_disk.push(relative.to_str().expect("UTF-8 name").replace('\\', "/"));
            }
        }
    }
    on_disk.sort();
    let embedded: Vec<&str> = embedded::META_PACKAGE.iter().map(|(path, _)| *path).collect();
    assert_eq!(embedded, on_disk, "packager/src/python/embedded.rs must list every rocm_sdk file");
}

/// The provider plugin carries the doctor's KFD reader byte for byte (one source file in
/// the repository) and the owner table, and names its namespace's entry point.
#[test]
fn the_variant_provider_carries_the_doctors_detector() {
    let part = variant_provider_part("amd");
    let paths: Vec<&str> = part.files.iter().map(|file| file.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "rocm_sdk_variant_provider/__init__.py",
            "rocm_sdk_variant_provider/_kfd_topology.py",
            "rocm_sdk_variant_provider/target_owners.json"
        ]
    );
    let on_disk = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/meta/rocm_sdk/_kfd_topology.py");
    assert_eq!(part.files[1].bytes, fs_err::read(on_disk).expect("read the detector"));
    let doctors = python_part(&PackageRole::Meta, &kpack_info(&["gfx90a"], ""));
    let doctors = doctors.files.iter().find(|file| file.path == "rocm_sdk/_kfd_topology.py").expect("doctor's copy");
    assert_eq!(doctors.bytes, part.files[1].bytes);
    let entry = &part.entry_points[0];
    assert_eq!(
        (entry.group.as_str(), entry.name.as_str(), entry.target.as_str()),
        ("variant_plugins", "amd", "rocm_sdk_variant_provider")
    );
}

#[test]
fn sdist_has_the_backend_and_a_generated_dist_info() {
    let info = kpack_info(&["gfx90a"], "");
    let paths: Vec<String> = sdist_files(&info).into_iter().map(|f| f.path).collect();
    for expected in [
        "pyproject.toml",
        "_rocm_build_backend.py",
        "rocm_sdk/_dist_info.py",
        "rocm_sdk/_dist_info_data.py",
        "rocm_sdk/__main__.py",
        "rocm_sdk/tests/base_test.py",
    ] {
        assert!(paths.iter().any(|p| p == expected), "{expected} missing from {paths:?}");
    }
    assert!(!paths.iter().any(|p| p == "PKG-INFO"));
}

/// Shipped code must run on Python 3.9: parse it with the 3.9 grammar and refuse
/// `X | Y` annotations, which 3.9 evaluates and rejects at import time.
#[test]
fn shipped_python_parses_as_python_3_9() {
    const CHECK: &str = "import ast, sys\n\
        for path in sys.argv[1:]:\n\
        \x20   tree = ast.parse(open(path, encoding='utf-8').read(), path, feature_version=(3, 9))\n\
        \x20   for node in ast.walk(tree):\n\
        \x20       notes = [getattr(node, 'returns', None)] + [a.annotation for a in getattr(getattr(node, 'args', None), 'args', [])]\n\
        \x20       if isinstance(node, ast.AnnAssign):\n\
        \x20           notes.append(node.annotation)\n\
        \x20       for note in notes:\n\
        \x20           if note is not None and any(isinstance(n, ast.BinOp) for n in ast.walk(note)):\n\
        \x20               sys.exit('%s:%d: X | Y annotation' % (path, note.lineno))\n";
    let dir = tempfile::tempdir().expect("temp dir");
    let info = kpack_info(&["gfx90a"], "");
    let mut paths = Vec::new();
    let roles = [
        PackageRole::Core,
        PackageRole::Profiler,
        PackageRole::Libraries { family: None },
        PackageRole::Devel { family: None },
    ];
    for (index, file) in sdist_files(&info)
        .into_iter()
        .chain(roles.into_iter().flat_map(|role| python_part(&role, &info).files))
        .chain(variant_provider_part("amd").files)
        .filter(|file| file.path.ends_with(".py"))
        .enumerate()
    {
        let path = dir.path().join(format!("{index}.py"));
        fs_err::write(&path, &file.bytes).expect("write");
        paths.push(path.to_str().expect("UTF-8 temp path").to_owned());
    }
    let mut args = vec!["-c", CHECK];
    args.extend(paths.iter().map(String::as_str));
    python(&args);
}
