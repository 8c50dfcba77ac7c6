//! `package --split-device` (CONTRACT §12 "A fat build, split per target") on the fat
//! example (`example --fat --kpack-runtime`: rocBLAS, hipBLASLt and rocRAND with real
//! `.hip_fatbin` bundles compiled by clang++-15 for gfx908, gfx90a:xnack-, gfx90a:xnack+):
//! the packages are the kpack-split mode's (`rocm-sdk-libraries`, `rocm-sdk-device-<owner>`
//! with TheRock's archive names and the kernel databases), the gate passes them, pip and uv
//! install `rocm[libraries,device-…]`, `rocm-sdk test` passes, the host code loads and
//! launches through the runtime, and every marker of every installed library resolves to
//! archives holding, for each target, the code object clang's offload bundler extracts
//! from the fat input (read by the independent Python reader). A runtime without the kpack
//! loader is refused by name, and accepted with the override.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use diagnostic::Diagnostic;
use example_artifacts::{write_example, ExampleOptions};
use packager::plan::device_code::FatLibrary;
use packager::plan::kpack_runtime::KpackRuntime;
use packager::split::{split_build, SplitBuild, SplitError};

use crate::installed;
use crate::split::install::{bundler_code_objects_for, read_archives};
use crate::support;

/// The fat example split-packaged into `dir/dest/dist`, with what the split found.
fn split_packaged(dir: &Path) -> (PathBuf, SplitBuild) {
    let artifacts = dir.join("artifacts");
    write_example(&artifacts, &ExampleOptions { fat: true, kpack_runtime: true, ..Default::default() })
        .expect("the fat example");
    let dest = dir.join("dest");
    let split = split_build(&artifacts, &dest, false, 3).expect("split the fat build");
    let config = support::package_config(&split.artifacts_dir, &dest);
    packager::package(&config, &packager::Silent).expect("package the split view");
    (config.output_dir(), split)
}

/// The marker's search paths of the binary at `path` (its `.rocm_kpack_ref` section,
/// decoded with Python's msgpack) and its kernel name.
fn marker(path: &Path, work: &Path) -> (Vec<String>, String) {
    fs_err::create_dir_all(work).expect("create the work directory");
    let dump = work.join(format!("{}.ref", path.file_name().and_then(|name| name.to_str()).unwrap_or("x")));
    support::run(
        support::tool("objcopy")
            .arg("--dump-section")
            .arg(format!(".rocm_kpack_ref={}", dump.display()))
            .arg(path)
            .arg(work.join("copy")),
    );
    let code = "import msgpack, sys\nm = msgpack.unpackb(open(sys.argv[1], 'rb').read(), raw=False)\n\
                print(m['kernel_name'])\nfor p in m['kpack_search_paths']: print(p)\n";
    let text = support::run(Command::new(support::tools_venv().join("bin/python")).arg("-c").arg(code).arg(&dump));
    let mut lines = text.lines().map(str::to_owned);
    let kernel_name = lines.next().expect("a kernel name");
    (lines.collect(), kernel_name)
}

/// For each fat library of the split, installed in `venv`: its marker resolves, for each
/// of `targets`, to an archive holding `<rel>#0` with the bundler's code object.
fn check_markers(venv: &Path, split: &SplitBuild, targets: &[&str], work: &Path) {
    for library in &split.plan.libraries {
        check_library_markers(venv, library, targets, work);
    }
}

/// [`check_markers`] for one library.
fn check_library_markers(venv: &Path, library: &FatLibrary, targets: &[&str], work: &Path) {
    let platform_dir = installed::site_packages(venv).join("_rocm_sdk_libraries");
    let installed_path = platform_dir.join(&library.rel);
    let (search_paths, kernel_name) = marker(&installed_path, work);
    assert_eq!(kernel_name, library.rel);
    assert_eq!(search_paths, std::slice::from_ref(&library.search_path), "{}", library.rel);
    let reference = bundler_code_objects_for(&library.source, &work.join(library.rel.replace('/', "_")), targets);
    let directory = installed_path.parent().expect("in a directory");
    for target in targets {
        let archive = directory.join(search_paths[0].replace("@GFXARCH@", target));
        assert!(archive.is_file(), "{} finds no {}", library.rel, archive.display());
        let code = read_archives(std::slice::from_ref(&archive));
        let key = (format!("{}#0", library.rel), target.to_string());
        assert_eq!(code.get(&key), Some(&reference[&(0, target.to_string())]), "{key:?} in {}", archive.display());
    }
}

/// The installed rocBLAS loads (its fat-binary registration runs against the runtime) and
/// its kernel launches.
fn check_host_code(venv: &Path) {
    let code = "import ctypes, os, sys\nlib = ctypes.CDLL(os.path.join(sys.argv[1], 'lib', 'librocblas.so.5'))\n\
                lib.rocblas_example_name.restype = ctypes.c_char_p\nprint(lib.rocblas_example_name().decode())\n\
                x = ctypes.c_float(1.0)\nprint('launch', lib.rocblas_example_launch(ctypes.byref(x)))\n";
    let platform_dir = installed::site_packages(venv).join("_rocm_sdk_libraries");
    let output = installed::python(venv, code, &[&platform_dir], &[]);
    support::assert_success(&output, "load librocblas.so.5");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "example:rocblas gfx90X-dcgpu\nlaunch 0\n");
}

#[test]
fn a_fat_build_split_packaged_installs_and_resolves_every_marker() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (dist, split) = split_packaged(dir.path());
    assert!(matches!(split.runtime, KpackRuntime::Loads { .. }), "{:?}", split.runtime);
    let names = support::dist_names(&dist);
    let version = "7.12.0.dev0-py3-none";
    for prefix in ["rocm_sdk_libraries-", "rocm_sdk_device_gfx908-", "rocm_sdk_device_gfx90a-", "rocm_sdk_core-"] {
        assert!(names.iter().any(|name| name.starts_with(&format!("{prefix}{version}"))), "{prefix}: {names:?}");
    }
    assert!(!names.iter().any(|name| name.contains("gfx90x_dcgpu")), "no family wheel: {names:?}");
    let gfx90a = dist.join(names.iter().find(|name| name.starts_with("rocm_sdk_device_gfx90a-")).expect("listed"));
    let members = crate::split::member_names(&gfx90a);
    for member in [
        "_rocm_sdk_libraries/.kpack/blas_lib_gfx90a:xnack+.kpack",
        "_rocm_sdk_libraries/.kpack/blas_lib_gfx90a:xnack-.kpack",
        "_rocm_sdk_libraries/.kpack/rand_lib_gfx90a:xnack+.kpack",
        "_rocm_sdk_libraries/lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat",
        "_rocm_sdk_libraries/_device_gfx90a.py",
    ] {
        assert!(members.iter().any(|name| name == member), "{member} not in {members:?}");
    }
    let report = release_gate::verify_dist(&dist).expect("verify reads the dist");
    let violations: Vec<String> = report
        .packages
        .iter()
        .flat_map(|package| package.violations.iter().map(move |finding| format!("{}: {finding:?}", package.file)))
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");
    let libraries =
        report.packages.iter().find(|package| package.file.starts_with("rocm_sdk_libraries-")).expect("host");
    assert_eq!(libraries.device_code.hipk_wrappers, 3);

    for (installer, extra, targets) in
        [("pip", "device-gfx90a", &["gfx90a:xnack+", "gfx90a:xnack-"][..]), ("uv", "device-gfx908", &["gfx908"][..])]
    {
        let venv = support::fresh_venv(&dir.path().join(format!("venv-{installer}")));
        let requirement = format!("rocm[libraries,{extra}]");
        let output = match installer {
            "pip" => support::pip_install(&venv, &dist, &[requirement.as_str()], &[]),
            _ => Command::new(support::tools_venv().join("bin/uv"))
                .args(["pip", "install", "--no-index", "--no-cache", "--offline", "--python"])
                .arg(venv.join("bin/python"))
                .arg("--find-links")
                .arg(&dist)
                .arg(&requirement)
                .env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology("cpu_only"))
                .output()
                .expect("run uv"),
        };
        support::assert_success(&output, &format!("{installer} install {requirement}"));
        installed::rocm_sdk(&venv, &["test"], &[]);
        check_host_code(&venv);
        check_markers(&venv, &split, targets, &dir.path().join(format!("work-{installer}")));
    }
}

#[test]
fn a_runtime_without_the_loader_is_refused_by_name_and_the_override_accepted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let artifacts = dir.path().join("artifacts");
    write_example(&artifacts, &ExampleOptions { fat: true, ..Default::default() }).expect("the fat example");
    let dest = dir.path().join("dest");
    let error = split_build(&artifacts, &dest, false, 3).expect_err("refused");
    assert!(matches!(error, SplitError::Plan(_)), "{error:?}");
    let runtime = artifacts.join("core-hip_lib_generic/core/clr/stage/lib/libamdhip64.so.7.1.0");
    assert_eq!(error.path(), Some(runtime.as_path()));
    assert!(error.to_string().starts_with(&format!("the HIP runtime {} cannot load", runtime.display())), "{error}");
    assert!(error.hint().expect("a hint").contains("--allow-runtime-without-kpack"));
    assert!(!dest.exists(), "a refused split writes nothing");
    let split = split_build(&artifacts, &dest, true, 3).expect("the override is accepted");
    assert_eq!(split.runtime, KpackRuntime::Allowed { path: runtime });
    let view = split.artifacts_dir.clone();
    assert!(view.join("blas_lib_gfx90a:xnack+/artifact_manifest.txt").is_file());
    drop(split);
    assert!(!view.exists(), "the view is removed with the split");
    let left: BTreeMap<String, ()> = fs_err::read_dir(&dest)
        .expect("dest exists")
        .map(|entry| (entry.expect("entry").file_name().to_string_lossy().into_owned(), ()))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The command line: `package --split-device` says in its summary and its `--json` how the
/// targets the bundles hold compare with those `dist_info.json` declares, and refuses a
/// runtime without the loader naming it and the flag.
#[test]
fn the_command_reports_declared_and_undeclared_targets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let artifacts = dir.path().join("artifacts");
    write_example(&artifacts, &ExampleOptions { fat: true, ..Default::default() }).expect("the fat example");
    let dist_info = artifacts.join("base_lib_generic/base/aux-overlay/stage/share/therock/dist_info.json");
    fs_err::write(&dist_info, "{\"dist_amdgpu_targets\": \"gfx906;gfx908\"}\n").expect("rewrite dist_info.json");
    let package = |dest: &str, extra: &[&str]| {
        let mut command = Command::new(crate::targets::cli::xtask());
        command.args(["package", "--version", "7.12.0.dev0", "--split-device", "--artifact-dir"]).arg(&artifacts);
        command.arg("--dest-dir").arg(dir.path().join(dest)).args(extra);
        support::output(&mut command).expect("run xtask package")
    };
    let refused = package("refused", &[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("libamdhip64.so.7.1.0 cannot load device code from kpack archives"), "{stderr}");
    assert!(stderr.contains("hint: ") && stderr.contains("--allow-runtime-without-kpack"), "{stderr}");
    assert!(!dir.path().join("refused/dist").exists());

    let json = dir.path().join("report.json");
    let json_arg = json.to_string_lossy().into_owned();
    let output = package("dest", &["--allow-runtime-without-kpack", "--json", &json_arg]);
    support::assert_success(&output, "package --split-device");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("split-device: 3 fat files, 6 archives for gfx908, gfx90a:xnack+, gfx90a:xnack-"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "split-device: declared in dist_info.json without code objects: gfx906; code objects not declared: \
             gfx90a:xnack+, gfx90a:xnack-"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("(allowed by --allow-runtime-without-kpack)"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&json).expect("read the report")).expect("JSON");
    let plan = &report["split_device"]["plan"];
    assert_eq!(plan["declared_without_code"], serde_json::json!(["gfx906"]));
    assert_eq!(plan["undeclared"], serde_json::json!(["gfx90a:xnack+", "gfx90a:xnack-"]));
    assert_eq!(report["split_device"]["runtime"]["verdict"], "allowed");
    let dist = dir.path().join("dest/dist");
    let names = support::dist_names(&dist);
    assert!(names.iter().any(|name| name.starts_with("rocm_sdk_device_gfx908-")), "{names:?}");
    // The gate judges the runtime of the set as the split did, with the same override.
    for allow in [false, true] {
        let options = release_gate::VerifyOptions { allow_runtime_without_kpack: allow, ..Default::default() };
        let report = release_gate::verify_dist_with_options(&dist, &options).expect("verify reads the dist");
        let core = report.packages.iter().find(|package| package.file.starts_with("rocm_sdk_core-")).expect("core");
        let is_runtime = |finding: &&release_gate::Finding| finding.check == release_gate::Check::KpackRuntime;
        let (violations, warnings) =
            (core.violations.iter().filter(is_runtime).count(), core.warnings.iter().filter(is_runtime).count());
        assert_eq!((violations, warnings), if allow { (0, 1) } else { (1, 0) }, "allow={allow}: {core:?}");
    }
}

/// Debian's real fat rocRAND (`librocrand1`: one bundle, code objects for six GPUs, gfx803
/// to gfx1030) in the fat example's place: split, packaged, the gate's archive rules pass,
/// installed with pip, and its marker resolves for gfx90a's targets to the code objects
/// the bundler extracts. Debian's real HIP runtime (`libamdhip64-5`, no kpack loader) in
/// the core's place is refused by name.
#[test]
fn debian_s_fat_rocrand_splits_and_its_runtime_is_refused() {
    let debian = crate::elf::layouts::debian_rocm_libraries().unwrap_or_else(|error| panic!("{error:#}"));
    let find = |prefix: &str| {
        debian
            .iter()
            .find(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with(prefix)))
            .unwrap_or_else(|| panic!("no {prefix} in {debian:?}"))
            .clone()
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let artifacts = dir.path().join("artifacts");
    write_example(&artifacts, &ExampleOptions { fat: true, kpack_runtime: true, ..Default::default() })
        .expect("the fat example");
    let rocrand = artifacts.join("rand_lib_generic/math-libs/rocRAND/stage/lib/librocrand.so.1");
    fs_err::remove_file(&rocrand).expect("remove the example's rocRAND");
    fs_err::copy(find("librocrand.so.1."), &rocrand).expect("copy Debian's rocRAND");
    let dest = dir.path().join("dest");
    let split = split_build(&artifacts, &dest, false, 3).expect("split");
    let library =
        split.plan.libraries.iter().find(|library| library.rel == "lib/librocrand.so.1").expect("rocRAND is fat");
    assert!(library.targets.len() >= 6, "{:?}", library.targets);
    assert_eq!(library.search_path, "../.kpack/rand_lib_@GFXARCH@.kpack");
    assert!(split.plan.undeclared.iter().any(|target| target == "gfx1030"), "{:?}", split.plan.undeclared);
    let gfx90a: Vec<&str> =
        library.targets.iter().map(String::as_str).filter(|target| target.starts_with("gfx90a")).collect();
    assert!(!gfx90a.is_empty(), "{:?}", library.targets);
    let venv = package_and_install_gfx90a(&split, &dest, &dir.path().join("venv"));
    check_library_markers(&venv, library, &gfx90a, &dir.path().join("work"));

    let runtime = artifacts.join("core-hip_lib_generic/core/clr/stage/lib/libamdhip64.so.7.1.0");
    fs_err::remove_file(&runtime).expect("remove the example's runtime");
    fs_err::copy(find("libamdhip64.so.5."), &runtime).expect("copy Debian's runtime");
    let error = split_build(&artifacts, &dir.path().join("refused"), false, 3).expect_err("refused");
    assert_eq!(error.path(), Some(runtime.as_path()), "{error}");
    assert!(error.to_string().contains("cannot load device code from kpack archives"), "{error}");
}

/// Debian's fat rocSPARSE (`librocsparse0`: 1.3 GB of code objects, 111 wrappers), fetched
/// once and kept in `target/tmp/debian-rocsparse`.
fn debian_rocsparse() -> PathBuf {
    let root = crate::elf::layouts::debian_packages("debian-rocsparse", &["librocsparse0"])
        .unwrap_or_else(|error| panic!("{error:#}"));
    let library = root.join("usr/lib/x86_64-linux-gnu/librocsparse.so.0.1");
    assert!(library.is_file(), "{} is not in librocsparse0", library.display());
    library
}

/// Debian's 1.3 GB rocSPARSE beside the fat example's rocBLAS: split and packaged, the gate
/// reads every archive and inflates every frame of the set; once installed with pip the library's marker
/// finds, for gfx90a, an archive holding a code object for every one of its 111 wrappers.
#[test]
fn debian_s_fat_rocsparse_splits_installs_and_every_wrapper_resolves() {
    let dir = tempfile::tempdir().expect("temp dir");
    let artifacts = dir.path().join("artifacts");
    write_example(&artifacts, &ExampleOptions { fat: true, kpack_runtime: true, ..Default::default() })
        .expect("the fat example");
    let lib = artifacts.join(format!("blas_lib_{}/math-libs/BLAS/rocBLAS/stage/lib", example_artifacts::FAT_FAMILY));
    assert!(lib.join("librocblas.so.5").exists(), "the example's rocBLAS moved");
    let rocsparse = lib.join("librocsparse.so.0");
    if fs_err::hard_link(debian_rocsparse(), &rocsparse).is_err() {
        fs_err::copy(debian_rocsparse(), &rocsparse).expect("copy Debian's rocSPARSE");
    }
    let dest = dir.path().join("dest");
    let split = split_build(&artifacts, &dest, false, 3).expect("split");
    let library =
        split.plan.libraries.iter().find(|library| library.rel == "lib/librocsparse.so.0").expect("rocSPARSE is fat");
    assert!(library.targets.iter().any(|target| target.starts_with("gfx90a")), "{:?}", library.targets);
    let venv = package_and_install_gfx90a(&split, &dest, &dir.path().join("venv"));
    let installed = installed::site_packages(&venv).join("_rocm_sdk_libraries").join(&library.rel);
    assert!(fs_err::metadata(&installed).expect("installed").len() < 64 << 20, "the device code left the library");
    let (search_paths, kernel_name) = marker(&installed, &dir.path().join("work"));
    assert_eq!(kernel_name, library.rel);
    for target in library.targets.iter().filter(|target| target.starts_with("gfx90a")) {
        let archive = installed.parent().expect("a directory").join(search_paths[0].replace("@GFXARCH@", target));
        let code = read_archives(std::slice::from_ref(&archive));
        for index in 0..111 {
            let key = (format!("{}#{index}", library.rel), target.clone());
            assert!(code.contains_key(&key), "{key:?} in {}", archive.display());
        }
    }
}

/// The split view of a fat build with a Debian library in it packaged into `dest`, its
/// archives read by the gate (the example's libraries are built for other targets than
/// Debian's, so the gate rightly finds devices one serves and the other does not; what
/// must hold whatever the mix is every archive and frame), and `rocm[libraries,
/// device-gfx90a]` installed from it into a new venv at `venv`.
fn package_and_install_gfx90a(split: &SplitBuild, dest: &Path, venv: &Path) -> PathBuf {
    let config = support::package_config(&split.artifacts_dir, dest);
    packager::package(&config, &packager::Silent).expect("package the split view");
    let dist = config.output_dir();
    let report = release_gate::verify_dist(&dist).expect("verify reads the dist");
    let kpack: Vec<String> = report
        .packages
        .iter()
        .flat_map(|package| package.violations.iter())
        .filter(|finding| finding.check == release_gate::Check::Kpack)
        .map(|finding| format!("{finding:?}"))
        .collect();
    assert!(kpack.is_empty(), "every archive reads as rocm-kpack's readers read it: {kpack:#?}");
    let venv = support::fresh_venv(venv);
    let output = support::pip_install(&venv, &dist, &["rocm[libraries,device-gfx90a]"], &[]);
    support::assert_success(&output, "pip install rocm[libraries,device-gfx90a]");
    venv
}
