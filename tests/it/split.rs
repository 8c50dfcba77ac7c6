//! `cargo xtask split` (SPEC §12) on a fat wheel made the way HIP projects make them: a
//! shared library of two translation units and a position-independent executable,
//! compiled for three GPU targets (`gfx90a:xnack-`, `gfx90a:xnack+`, `gfx1030`: clang takes a feature on all of a processor's targets or none) by LLVM 15's clang
//! and linked by its lld, against a stub HIP runtime compiled here and shipped beside them; rocBLAS-style and
//! AOTriton-style kernel database files beside them; packed by real `pip wheel` with a
//! manylinux platform tag.
//!
//! The stub runtime's `__hipRegisterFatBinary` reads, when the library loads, each
//! wrapper as the real runtime does (magic, version, index, pointer), decodes the kpack
//! marker the pointer points at, and resolves its search path against the library's
//! directory for the GPU named by `STUB_GFXARCH`: so the relocations and the marker are
//! checked as the runtime will see them, with no GPU.
//!
//! Children: `install` (pip and uv install the host with its device extras; every marker
//! resolves to an archive holding the code objects clang's offload bundler extracts from
//! the fat input), `refusals` (wheels with nothing to split, Windows wheels, split wheels),
//! `doctor` (`rocm-sdk doctor` and `initialize_process` on the installed host, with and
//! without its device wheels).

#[path = "split_doctor.rs"]
mod doctor;
#[path = "split_install.rs"]
pub(crate) mod install;
#[path = "split_refusals.rs"]
mod refusals;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use packager::split::{split, SplitError, SplitReport, SplitRequest};

pub use crate::repair::{member_names, member_text};
use crate::support;

/// The stub HIP runtime. A wrapper is `{u32 magic, u32 version, u64 pointer, u64 reserved}`;
/// a split wrapper's pointer is a MessagePack map `{kpack_search_paths: [str], kernel_name:
/// str}`, decoded here with the subset the marker uses.
pub const STUB_HIP_C: &str = r#"#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct wrapper { uint32_t magic; uint32_t version; const unsigned char *pointer; uint64_t reserved; };

static const unsigned char *str(const unsigned char *p, char *out) {
    size_t n;
    if ((*p & 0xe0) == 0xa0) { n = *p & 0x1f; p += 1; }
    else if (*p == 0xd9) { n = p[1]; p += 2; }
    else if (*p == 0xda) { n = ((size_t)p[1] << 8) | p[2]; p += 3; }
    else { printf("bad-string %02x\n", *p); exit(3); }
    memcpy(out, p, n); out[n] = 0; return p + n;
}

static void *registered[64];
static int count;

void **__hipRegisterFatBinary(const void *data) {
    const struct wrapper *w = data;
    Dl_info info;
    dladdr(data, &info);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    char magic[5] = {0};
    memcpy(magic, &w->magic, 4);
    if (w->magic == 0x48495046u) {
        printf("wrapper %s version=%u bundle=%d\n", magic, w->version,
               memcmp(w->pointer, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0);
    } else {
        const unsigned char *p = w->pointer;
        char key[256], value[4096], name[4096];
        int n = *p++ & 0x0f;
        unsigned index = (unsigned)(w->reserved & 0xffffffffu);
        for (int i = 0; i < n; i++) {
            p = str(p, key);
            if (strcmp(key, "kernel_name") == 0) { p = str(p, name); continue; }
            int paths = (*p & 0xf0) == 0x90 ? (*p++ & 0x0f) : (p += 3, (p[-2] << 8) | p[-1]);
            for (int j = 0; j < paths; j++) {
                p = str(p, value);
                char expanded[8192] = {0};
                const char *arch = getenv("STUB_GFXARCH");
                char *at = strstr(value, "@GFXARCH@");
                if (at && arch) { *at = 0; snprintf(expanded, sizeof expanded, "%s/%s%s%s", dir, value, arch, at + 9); }
                else snprintf(expanded, sizeof expanded, "%s/%s", dir, value);
                printf("path %s exists=%d\n", expanded, access(expanded, R_OK) == 0);
            }
        }
        printf("wrapper %s version=%u index=%u key=%s#%u\n", magic, w->version, index, name, index);
    }
    fflush(stdout);
    registered[count] = (void *)data;
    return &registered[count++];
}
void __hipRegisterFunction(void **m, const void *f, char *a, const char *b, int c, void *d, void *e, void *g, void *h, int *i) {}
void __hipUnregisterFatBinary(void **m) {}
int __hipPushCallConfiguration(uint64_t a, uint32_t b, uint64_t c, uint32_t d, size_t e, void *f) { return 0; }
int __hipPopCallConfiguration(void *a, void *b, size_t *c, void **d) { return 0; }
int hipLaunchKernel(const void *f, uint64_t a, uint32_t b, uint64_t c, uint32_t d, void **args, size_t s, void *st) { return 0; }
"#;

/// The kernels: two translation units, so the library has two wrappers and two bundles.
pub const KERNEL_A: &str = r#"#define __global__ __attribute__((global))
typedef struct { unsigned x, y, z; } dim3_t;
extern "C" int hipLaunchKernel(const void *f, dim3_t g, dim3_t b, void **args, unsigned long shm, void *stream);
__global__ void scale(float *x, float a) { x[0] *= a; }
extern "C" int run_scale(float *x) { float a = 2.0f; void *args[] = {&x, &a}; dim3_t one = {1, 1, 1};
  return hipLaunchKernel((const void *)&scale, one, one, args, 0, 0); }
"#;
const KERNEL_B: &str = r#"#define __global__ __attribute__((global))
typedef struct { unsigned x, y, z; } dim3_t;
extern "C" int hipLaunchKernel(const void *f, dim3_t g, dim3_t b, void **args, unsigned long shm, void *stream);
__global__ void offset(int *x, int b) { x[0] += b * 3 + 1; }
extern "C" int run_offset(int *x) { int b = 5; void *args[] = {&x, &b}; dim3_t one = {1, 1, 1};
  return hipLaunchKernel((const void *)&offset, one, one, args, 0, 0); }
extern "C" int run_scale(float *x);
int main(void) { float f = 1; int i = 0; return run_scale(&f) + run_offset(&i); }
"#;

/// The offload targets of the fixture.
pub const OFFLOAD_ARCHS: &[&str] = &["gfx90a:xnack-", "gfx90a:xnack+", "gfx1030"];

/// A PEP 517 backend of the standard library only: packs every file under `tree/` (with
/// its mode) and a `.dist-info` into a wheel tagged with `TAG`.
const BACKEND_PY: &str = r#"import base64, hashlib, os

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    import zipfile
    here = os.path.dirname(os.path.abspath(__file__))
    tag = open(os.path.join(here, "TAG")).read().strip()
    dist_info = "hipext-1.0.dist-info"
    tree = os.path.join(here, "tree")
    files = {}
    for root, dirs, names in os.walk(tree):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            files[os.path.relpath(path, tree)] = (open(path, "rb").read(), os.stat(path).st_mode & 0o777)
    files[f"{dist_info}/METADATA"] = (b"Metadata-Version: 2.1\nName: hipext\nVersion: 1.0\nSummary: A HIP extension\nDescription-Content-Type: text/markdown\nRequires-Dist: packaging; extra == 'x'\n\nThe description.\n", 0o644)
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: backend\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(), 0o644)
    record = []
    for member, (data, mode) in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{member},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = (("\n".join(record) + "\n").encode(), 0o644)
    wheel = f"hipext-1.0-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as archive:
        for member, (data, mode) in files.items():
            info = zipfile.ZipInfo(member, (2020, 1, 1, 0, 0, 0))
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return wheel
"#;

/// The package's Python: loads the library (registering its fat binaries) and runs both
/// kernels' host code.
const INIT_PY: &str = r#""""A HIP extension's Python side."""
import ctypes, os
_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib", "libhipext.so"))
def run():
    value = ctypes.c_float(1.0)
    number = ctypes.c_int(0)
    return _lib.run_scale(ctypes.byref(value)) + _lib.run_offset(ctypes.byref(number))
"#;

/// The fat wheel and what it was made of, built once per test process.
pub struct FatWheel {
    pub wheel: PathBuf,
    /// The fat library and executable as packed.
    pub library: PathBuf,
    pub executable: PathBuf,
}

/// The platform tag the fixture's wheel carries: a split keeps it (rocm-kpack's splitter
/// wrote the WHEEL file's first tag instead).
pub const TAG: &str = "py3-none-manylinux_2_34_x86_64";

pub fn fat_wheel() -> &'static FatWheel {
    static WHEEL: OnceLock<FatWheel> = OnceLock::new();
    WHEEL.get_or_init(|| {
        let root = support::target_tmp().join("split-fixture");
        if root.exists() {
            fs_err::remove_dir_all(&root).expect("remove the previous run's fixture");
        }
        let project = root.join("project");
        let lib = project.join("tree/hipext/lib");
        let bin = project.join("tree/hipext/bin");
        for dir in [&lib, &bin] {
            fs_err::create_dir_all(dir).expect("create the tree");
        }
        fs_err::write(root.join("a.hip"), KERNEL_A).expect("write a.hip");
        fs_err::write(root.join("b.hip"), KERNEL_B.replace("int main(void)", "static int unused(void)"))
            .expect("write b.hip");
        fs_err::write(root.join("main.hip"), KERNEL_B).expect("write main.hip");
        // The stub runtime travels in the wheel, found through each binary's RPATH, so the
        // installed package runs as it is (and its closure holds in `verify --dist`).
        support::shared_lib(&lib, "libhipstub.so", STUB_HIP_C, &["-ldl"]);
        let library = lib.join("libhipext.so");
        hip_compile(&root, &["-fPIC", "-shared", "a.hip", "b.hip", "-Wl,-rpath,$ORIGIN"], &library, &lib);
        let executable = bin.join("hipprobe");
        hip_compile(&root, &["-fPIE", "-pie", "a.hip", "main.hip", "-Wl,-rpath,$ORIGIN/../lib"], &executable, &lib);
        fs_err::remove_file(lib.join("libhipstub.so.c")).ok();
        fs_err::write(project.join("tree/hipext/__init__.py"), INIT_PY).expect("write __init__.py");
        let library_dir = lib.join("rocblas/library");
        fs_err::create_dir_all(&library_dir).expect("create library/");
        fs_err::write(library_dir.join("TensileLibrary_gfx90a.dat"), b"tensile gfx90a".repeat(40)).expect("write");
        fs_err::write(library_dir.join("Kernels.so-000-gfx1030.hsaco"), b"tensile gfx1030".repeat(40)).expect("write");
        fs_err::write(library_dir.join("TensileManifest.txt"), b"manifest\n").expect("write");
        let aotriton = lib.join("aotriton.images/amd-gfx11xx");
        fs_err::create_dir_all(&aotriton).expect("create aotriton.images");
        fs_err::write(aotriton.join("attn_fwd.aks2"), b"aotriton gfx11".repeat(40)).expect("write");
        fs_err::write(project.join("backend.py"), BACKEND_PY).expect("write the backend");
        fs_err::write(project.join("TAG"), TAG).expect("write the tag");
        fs_err::write(
            project.join("pyproject.toml"),
            "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n",
        )
        .expect("write pyproject.toml");
        let wheels = root.join("wheels");
        support::run(
            Command::new(support::tools_venv().join("bin/python"))
                .args(["-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w"])
                .arg(&wheels)
                .arg(&project),
        );
        let wheel = wheels.join(format!("hipext-1.0-{TAG}.whl"));
        assert!(wheel.is_file(), "pip wheel made {:?}", support::dist_names(&wheels));
        FatWheel { wheel, library, executable }
    })
}

/// Compiles HIP sources for [`OFFLOAD_ARCHS`] with LLVM 15, linking the stub runtime in
/// `runtime_dir`.
fn hip_compile(dir: &Path, args: &[&str], out: &Path, runtime_dir: &Path) {
    let mut command = support::tool("clang++-15");
    // DT_RPATH, as the SDK's own files have (§2): LD_LIBRARY_PATH cannot override it.
    command.current_dir(dir).args([
        "-x",
        "hip",
        "-nogpulib",
        "-nogpuinc",
        "-fuse-ld=lld",
        "-O1",
        "-Wl,--disable-new-dtags",
    ]);
    for arch in OFFLOAD_ARCHS {
        command.arg(format!("--offload-arch={arch}"));
    }
    command.args(args).arg("-o").arg(out).arg("-L").arg(runtime_dir).arg("-lhipstub");
    support::run(&mut command);
}

/// Splits `wheels` into `dest/dist` with the test's settings.
pub fn split_into(wheels: &[PathBuf], dest: &Path, device_requires: &[&str]) -> Result<SplitReport, SplitError> {
    let request = SplitRequest {
        wheels: wheels.to_vec(),
        device_prefix: None,
        device_requires: device_requires.iter().map(|requirement| requirement.to_string()).collect(),
        dest_dir: dest.to_path_buf(),
        build_time: packager::BuildTime::DEFAULT,
        compression_level: 6,
        zstd_level: 3,
    };
    split(&request, &packager::Silent)
}
