//! End to end (issues 5 and 6): the bundled example packaged, installed with real pip into
//! fresh venvs, and exercised the way users and the loader use it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support;

/// The legacy example, packaged once for this test binary: (tempdir, artifacts, dist).
fn legacy() -> &'static (tempfile::TempDir, PathBuf, PathBuf) {
    static LEGACY: OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> = OnceLock::new();
    LEGACY.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let dist = support::package_example(dir.path(), false);
        let artifacts = dir.path().join("artifacts");
        (dir, artifacts, dist)
    })
}

fn site_packages(venv: &Path) -> PathBuf {
    let lib = venv.join("lib");
    let python_dir = fs_err::read_dir(&lib)
        .expect("venv lib")
        .filter_map(Result::ok)
        .find(|entry| entry.file_name().to_string_lossy().starts_with("python"))
        .expect("lib/pythonX.Y");
    python_dir.path().join("site-packages")
}

fn python(venv: &Path, code: &str, args: &[&Path]) -> std::process::Output {
    Command::new(venv.join("bin/python"))
        .env_remove("LD_LIBRARY_PATH")
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .expect("run python")
}

fn assert_ok(output: &std::process::Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every file below `dir` (not following links), sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs_err::read_dir(&next).expect("read_dir").filter_map(Result::ok) {
            let path = entry.path();
            let file_type = entry.file_type().expect("file type");
            if file_type.is_dir() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

fn is_shared_library(path: &Path) -> bool {
    matches!(packager::elf::read_elf(path), Ok(Some(info)) if info.kind == packager::elf::ElfKind::SharedLibrary && info.is_patchable())
}

#[test]
fn legacy_example_installs_loads_and_runs() {
    let (_dir, _artifacts, dist) = legacy();
    let venv_dir = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&venv_dir.path().join("venv"));
    let output = support::pip_install(&venv, dist, &["rocm[libraries,devel,profiler]"], &[]);
    assert_ok(&output, "pip install rocm[libraries,devel,profiler]");
    let site = site_packages(&venv);

    // The installed self-tests pass (they expand the devel tree on the way).
    let output = Command::new(venv.join("bin/rocm-sdk"))
        .arg("test")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("rocm-sdk test");
    assert_ok(&output, "rocm-sdk test");
    let root = Command::new(venv.join("bin/rocm-sdk")).args(["path", "--root"]).output().expect("rocm-sdk path");
    assert_ok(&root, "rocm-sdk path --root");
    let devel_root = PathBuf::from(String::from_utf8_lossy(&root.stdout).trim());
    assert!(devel_root.starts_with(&site), "devel root {} is in site-packages", devel_root.display());

    // Every shared library of the runtime packages loads in a fresh process, alone.
    let runtime_files: Vec<PathBuf> = walk(&site)
        .into_iter()
        .filter(|path| {
            let top = path
                .strip_prefix(&site)
                .ok()
                .and_then(|rel| rel.components().next())
                .map(|c| c.as_os_str().to_string_lossy().into_owned());
            top.is_some_and(|top| top.starts_with("_rocm") && !top.starts_with("_rocm_sdk_devel"))
        })
        .collect();
    let libraries: Vec<&PathBuf> =
        runtime_files.iter().filter(|path| path.is_file() && is_shared_library(path)).collect();
    assert!(libraries.len() > 30, "found only {} libraries", libraries.len());
    for library in &libraries {
        let output = python(&venv, "import ctypes, sys; ctypes.CDLL(sys.argv[1])", &[library]);
        assert_ok(&output, &format!("loading {}", library.display()));
    }

    // No symlink anywhere outside the expanded devel tree.
    for path in walk(&site) {
        if path.is_symlink() {
            assert!(path.starts_with(&devel_root), "symlink outside the devel tree: {}", path.display());
        }
    }

    // Every launcher runs its target, which sees the launcher's own argv[0].
    let mut n_launchers = 0;
    for path in runtime_files.iter().filter(|path| path.is_file()) {
        let bytes = fs_err::read(path).expect("read");
        if !bytes.windows(25).any(|window| window == b"ROCM_SDK_LAUNCHER_TARGET=") || bytes.len() > 1 << 20 {
            continue;
        }
        n_launchers += 1;
        let output = Command::new(path).arg("--version").output().expect("run launcher");
        assert_ok(&output, &format!("launcher {}", path.display()));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("example:"), "{} printed {stdout:?}", path.display());
        if stdout.contains("argv0=") {
            assert!(
                stdout.contains(&format!("argv0={}", path.display())),
                "{} lost its argv[0]: {stdout}",
                path.display()
            );
        }
    }
    assert!(n_launchers >= 5, "found only {n_launchers} launchers");
    let smi = site.join("_rocm_sdk_core/bin/rocm-smi");
    let output = Command::new(&smi).output().expect("run rocm-smi");
    assert_ok(&output, "rocm-smi through its launcher");
    assert!(String::from_utf8_lossy(&output.stdout).contains("data-beside-the-real-script"));
}

#[test]
fn libraries_find_core_through_their_rpath_only() {
    let (_dir, artifacts, dist) = legacy();
    let venv_dir = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&venv_dir.path().join("venv"));
    assert_ok(&support::pip_install(&venv, dist, &["rocm[libraries]"], &[]), "pip install rocm[libraries]");
    let site = site_packages(&venv);
    let rocblas = site.join("_rocm_sdk_libraries_gfx110x_all/lib/librocblas.so.5");
    let load = "import ctypes, sys\n\
                lib = ctypes.CDLL(sys.argv[1])\n\
                f = lib.rocblas_example_dependency\n\
                f.restype = ctypes.c_char_p\n\
                print(f().decode())";
    // The decoy: a library with core's SONAME that LD_LIBRARY_PATH would find first if the
    // packaged search path were DT_RUNPATH.
    let decoy_dir = venv_dir.path().join("decoy");
    fs_err::create_dir_all(&decoy_dir).expect("mkdir");
    support::shared_lib(
        &decoy_dir,
        "libamdhip64.so.7",
        "const char *amdhip64_example_name(void) { return \"decoy\"; }\n",
        &[],
    );
    for ld_library_path in [None, Some(decoy_dir.as_path())] {
        let mut command = Command::new(venv.join("bin/python"));
        command.env_remove("LD_LIBRARY_PATH").arg("-c").arg(load).arg(&rocblas);
        if let Some(path) = ld_library_path {
            command.env("LD_LIBRARY_PATH", path);
        }
        let output = command.output().expect("python");
        assert_ok(&output, "loading librocblas");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim(),
            "example:amdhip64",
            "with LD_LIBRARY_PATH={ld_library_path:?}"
        );
    }
    // The same library as built (no packaged RPATH) does not find core at all.
    let original = walk(artifacts)
        .into_iter()
        .find(|path| path.ends_with("blas_lib_gfx110X-all/math-libs/BLAS/rocBLAS/stage/lib/librocblas.so.5"))
        .expect("original librocblas");
    let output = python(&venv, "import ctypes, sys; ctypes.CDLL(sys.argv[1])", &[&original]);
    assert!(!output.status.success(), "the unpatched library should not find libamdhip64.so.7");
}

#[test]
fn target_family_selects_the_libraries_wheel() {
    let (_dir, _artifacts, dist) = legacy();
    for (family, wheel) in
        [("gfx110X-all", "rocm-sdk-libraries-gfx110x-all"), ("gfx94X-dcgpu", "rocm-sdk-libraries-gfx94x-dcgpu")]
    {
        let venv_dir = tempfile::tempdir().expect("tempdir");
        let venv = support::fresh_venv(&venv_dir.path().join("venv"));
        let output = support::pip_install(&venv, dist, &["rocm[libraries]"], &[("ROCM_SDK_TARGET_FAMILY", family)]);
        assert_ok(&output, &format!("pip install with ROCM_SDK_TARGET_FAMILY={family}"));
        let list = Command::new(venv.join("bin/python"))
            .args(["-m", "pip", "list", "--format=freeze"])
            .output()
            .expect("pip list");
        let list = String::from_utf8_lossy(&list.stdout).to_lowercase();
        assert!(list.contains(&format!("{wheel}==7.12.0.dev0")), "{family}: {list}");
        let other = if family == "gfx110X-all" { "gfx94x" } else { "gfx110x" };
        assert!(!list.contains(other), "{family} also installed {other}: {list}");
    }
    let venv_dir = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&venv_dir.path().join("venv"));
    let output = support::pip_install(&venv, dist, &["rocm[libraries]"], &[("ROCM_SDK_TARGET_FAMILY", "gfx1200")]);
    assert!(!output.status.success(), "an unavailable family must fail");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("gfx110X-all") && stderr.contains("gfx94X-dcgpu"), "error lists the families: {stderr}");
}

#[test]
fn devel_tree_links_into_runtime_packages() {
    let (_dir, artifacts, dist) = legacy();
    let venv_dir = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&venv_dir.path().join("venv"));
    assert_ok(&support::pip_install(&venv, dist, &["rocm[libraries,devel]"], &[]), "pip install");
    let root = Command::new(venv.join("bin/rocm-sdk")).args(["path", "--root"]).output().expect("rocm-sdk path");
    assert_ok(&root, "rocm-sdk path --root");
    let devel_root = PathBuf::from(String::from_utf8_lossy(&root.stdout).trim());
    let site = site_packages(&venv);

    // The plan says what each devel entry is; the expanded tree must agree.
    let config = support::package_config(artifacts, &venv_dir.path().join("unused"));
    let plan = packager::plan(&config, &packager::Silent).expect("plan");
    let devel =
        plan.packages.iter().find(|package| package.dist_name == "rocm-sdk-devel-gfx110x-all").expect("devel plan");
    let mut n_runtime = 0;
    for (rel, entry) in &devel.devel_tree {
        let path = devel_root.join(rel.as_str());
        assert!(path.symlink_metadata().is_ok(), "{rel} missing from the expanded devel tree");
        if let packager::plan::DevelEntry::Symlink { target, why } = entry {
            assert!(path.exists(), "{rel} -> {target} does not resolve");
            if *why == packager::plan::LinkReason::RuntimePackage {
                n_runtime += 1;
                let runtime = path.parent().expect("parent").join(target);
                let runtime = std::fs::canonicalize(runtime).expect("runtime file");
                assert!(
                    runtime.starts_with(&site) && !runtime.starts_with(&devel_root),
                    "{rel} reaches {}",
                    runtime.display()
                );
                use std::os::unix::fs::MetadataExt;
                let (a, b) = (fs_err::metadata(&path).expect("stat"), fs_err::metadata(&runtime).expect("stat"));
                assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "{rel} is the installed runtime file");
            }
        }
    }
    assert!(n_runtime > 20, "only {n_runtime} runtime links");
    let clang = devel_root.join("bin/amdclang");
    assert!(clang.symlink_metadata().expect("amdclang").file_type().is_symlink(), "compiler drivers stay symlinks");
}

/// `--plan --json` for the example, checked against the SPEC §2 rules (not against a stored
/// copy of itself).
#[test]
fn plan_json_follows_the_rules() {
    let (_dir, artifacts, _dist) = legacy();
    let config = support::package_config(artifacts, Path::new("/nonexistent-dest"));
    let plan = packager::plan(&config, &packager::Silent).expect("plan");
    let json = serde_json::to_value(&plan).expect("json");
    let packages: BTreeMap<String, &serde_json::Value> = json["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| (package["dist_name"].as_str().expect("name").to_owned(), package))
        .collect();
    let names: Vec<&str> = packages.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "rocm-profiler",
            "rocm-sdk-core",
            "rocm-sdk-devel-gfx110x-all",
            "rocm-sdk-devel-gfx94x-dcgpu",
            "rocm-sdk-libraries-gfx110x-all",
            "rocm-sdk-libraries-gfx94x-dcgpu"
        ]
    );
    let core = &packages["rocm-sdk-core"]["files"];
    let core_files = core.as_object().expect("core files");
    for path in core_files.keys() {
        assert!(
            !path.contains("/cmake/") && !path.starts_with("bin/rocprof-") && !path.contains("rocprofiler-systems"),
            "core ships {path}"
        );
    }
    // SONAME rule: only SONAME-named libraries, aliases and dangling links reported.
    for package in packages.values() {
        for (path, file) in package["files"].as_object().expect("files") {
            if let Some(source) = file["source"].as_str() {
                if let Ok(Some(info)) = packager::elf::read_elf(Path::new(source)) {
                    if let (Some(soname), packager::elf::ElfKind::SharedLibrary) = (&info.soname, info.kind) {
                        // The profiler's unversioned names are recreated on purpose (SPEC §2).
                        let recreated =
                            path.starts_with("lib/librocprof-sys") || path.starts_with("lib/libprofiler-hub");
                        assert!(
                            path.ends_with(soname.as_str()) || recreated,
                            "{path} is not named after its SONAME {soname}"
                        );
                    }
                }
            }
        }
    }
    assert_eq!(core["lib/libamdhip64.so.7"]["action"], "patch-rpath");
    assert!(core.get("lib/libamdhip64.so").is_none() && core.get("lib/libamdhip64.so.7.1.0").is_none());
    assert_eq!(
        core["bin/rocm-smi"],
        serde_json::json!({"action": "launcher", "target": "../libexec/rocm_smi/rocm_smi.py", "link": core["bin/rocm-smi"]["link"]})
    );
    assert_eq!(core["lib/llvm/bin/amdclang"]["target"], "clang");
    assert_eq!(core["bin/amdclang"]["target"], "../lib/llvm/bin/clang");
    let hipinfo_rpath = core["bin/hipInfo"]["rpath"].as_str().expect("hipInfo rpath");
    assert_eq!(
        hipinfo_rpath,
        "$ORIGIN/../lib:$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib:$ORIGIN/../../_rocm_sdk_core/lib/rocm_sysdeps/lib"
    );
    assert_eq!(core["bin/hipInfo"]["removed"], serde_json::json!(["/build/x/lib"]));
    let rocblas = &packages["rocm-sdk-libraries-gfx110x-all"]["files"]["lib/librocblas.so.5"];
    assert!(rocblas["rpath"]
        .as_str()
        .expect("rpath")
        .split(':')
        .any(|entry| entry == "$ORIGIN/../../_rocm_sdk_core/lib"));
    let profiler = &packages["rocm-profiler"]["files"];
    assert_eq!(profiler["bin/rocprof-compute"]["action"], "launcher");
    assert_eq!(profiler["lib/librocprof-sys.so"]["action"], "patch-rpath");
    let devel = &packages["rocm-sdk-devel-gfx110x-all"]["devel_tree"];
    assert_eq!(
        devel["lib/libamdhip64.so"],
        serde_json::json!({"kind": "symlink", "target": "libamdhip64.so.7", "why": "soname-alias"})
    );
    assert_eq!(devel["lib/libamdhip64.so.7"]["target"], "../../_rocm_sdk_core/lib/libamdhip64.so.7");
    assert_eq!(
        devel["lib/llvm/lib/clang/current"],
        serde_json::json!({"kind": "symlink", "target": "22", "why": "source"})
    );
    assert!(devel.get("lib/libamdhip64.so.6").is_none(), "the dangling link is dropped");
    let findings = json["findings"].as_array().expect("findings");
    assert!(
        findings.iter().any(|f| f["path"] == "lib/libamdhip64.so.6" && f["finding"] == "dropped"),
        "dangling link reported"
    );
}

/// Issue 7: the example's own packages pass `verify --dist`, and the glibc floor it reports
/// is the one `auditwheel show` finds.
#[test]
fn verify_passes_on_the_example_and_agrees_with_auditwheel() {
    let (_dir, _artifacts, dist) = legacy();
    let report = packager::verify::verify_dist(dist).expect("verify");
    assert_eq!(report.n_violations(), 0, "{:#?}", report.violations().collect::<Vec<_>>());
    let auditwheel = support::tools_venv().join("bin/auditwheel");
    let mut compared = 0;
    for package in &report.packages {
        let Some(tag) = package.portability.as_ref().and_then(|portability| portability.manylinux_tag.clone()) else {
            continue;
        };
        if !package.file.contains("rocm_sdk_core") && !package.file.contains("rocm_profiler") {
            continue;
        }
        let output = support::run(Command::new(&auditwheel).arg("show").arg(dist.join(&package.file)));
        assert!(
            output.contains(&format!("\"{tag}\"")),
            "{}: verify says {tag}, auditwheel says:\n{output}",
            package.file
        );
        compared += 1;
    }
    assert_eq!(compared, 2);
}

/// Issue 6: `pip uninstall` of every package (after the devel tree was expanded) leaves
/// site-packages exactly as before the install.
#[test]
fn uninstall_leaves_site_packages_as_before() {
    let (_dir, _artifacts, dist) = legacy();
    let venv_dir = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&venv_dir.path().join("venv"));
    let site = site_packages(&venv);
    let before = walk(&site);
    assert_ok(&support::pip_install(&venv, dist, &["rocm[libraries,devel,profiler]"], &[]), "pip install");
    assert_ok(
        &Command::new(venv.join("bin/rocm-sdk")).args(["init", "--quiet"]).output().expect("init"),
        "rocm-sdk init",
    );
    let freeze = Command::new(venv.join("bin/python")).args(["-m", "pip", "freeze"]).output().expect("pip freeze");
    let packages: Vec<String> = String::from_utf8_lossy(&freeze.stdout)
        .lines()
        .filter_map(|line| line.split("==").next())
        .filter(|name| name.starts_with("rocm"))
        .map(str::to_owned)
        .collect();
    assert_eq!(packages.len(), 5, "{packages:?}");
    let mut uninstall = Command::new(venv.join("bin/python"));
    uninstall.args(["-m", "pip", "uninstall", "-y", "-q"]).args(&packages);
    assert_ok(&uninstall.output().expect("pip uninstall"), "pip uninstall");
    let after = walk(&site);
    let added: Vec<&PathBuf> = after.iter().filter(|path| !before.contains(path)).collect();
    assert!(added.is_empty(), "left behind after uninstall: {added:#?}");
}

/// Issue 6: the packages install and pass their self-test with `uv pip install` too.
#[test]
fn uv_installs_the_example() {
    let (_dir, _artifacts, dist) = legacy();
    let venv_dir = tempfile::tempdir().expect("tempdir");
    let venv = support::fresh_venv(&venv_dir.path().join("venv"));
    let uv = support::tools_venv().join("bin/uv");
    let output = Command::new(uv)
        .args(["pip", "install", "--no-cache", "--offline", "--no-index", "--python"])
        .arg(venv.join("bin/python"))
        .arg("--find-links")
        .arg(dist)
        .arg("rocm[libraries,devel]")
        .output()
        .expect("uv");
    assert_ok(&output, "uv pip install");
    let output = Command::new(venv.join("bin/rocm-sdk"))
        .arg("test")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("rocm-sdk test");
    assert_ok(&output, "rocm-sdk test after uv install");
}
