//! Building the fat HIP binaries and the stub HIP runtime the tests load them against.
//!
//! The stub `libamdhip64.so` exports the five symbols clang's HIP host code calls. Its
//! `__hipRegisterFatBinary` prints, at run time, what the real runtime reads from each wrapper:
//! its magic, version and reserved index, and either the bundle magic its pointer reaches or
//! the kpack marker decoded (MessagePack's fixmap, fixstr/str8/str16, fixarray/array16).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::run;

const STUB: &str = r#"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct { uint32_t magic, version; const unsigned char *binary; uint64_t reserved; } wrapper_t;
static const unsigned char *at;
static void *handles[64];

static long length(unsigned fix_mask, unsigned fix_tag, unsigned one, unsigned two) {
    unsigned byte = *at++;
    if ((byte & ~fix_mask) == fix_tag) return byte & fix_mask;
    if (byte == one) return *at++;
    if (byte == two) { long n = (at[0] << 8) | at[1]; at += 2; return n; }
    return -1;
}
static int string(char *out, size_t capacity) {
    long n = length(0x1f, 0xa0, 0xd9, 0xda);
    if (n < 0 || (size_t)n >= capacity) return -1;
    memcpy(out, at, n); out[n] = 0; at += n; return 0;
}

void **__hipRegisterFatBinary(const void *pointer) {
    const wrapper_t *w = pointer;
    const char *magic = w->magic == 0x48495046 ? "HIPF" : w->magic == 0x4B504948 ? "HIPK" : "unknown";
    printf("wrapper at=%p magic=%s version=%u index=%u\n", pointer, magic, w->version, (unsigned)(w->reserved & 0xffffffff));
    if (w->magic == 0x48495046) {
        printf("  bundle=%.24s\n", (const char *)w->binary);
    } else {
        at = w->binary;
        long entries = length(0x0f, 0x80, 0x100, 0x100);
        for (long e = 0; e < entries; e++) {
            static char key[64], value[16384];
            if (string(key, sizeof key)) { printf("  bad key\n"); break; }
            if (!strcmp(key, "kpack_search_paths")) {
                long n = length(0x0f, 0x90, 0x100, 0xdc);
                for (long i = 0; i < n; i++) {
                    if (string(value, sizeof value)) { printf("  bad path\n"); break; }
                    printf("  path=%s\n", value);
                }
            } else if (!strcmp(key, "kernel_name")) {
                if (string(value, sizeof value)) { printf("  bad name\n"); break; }
                printf("  kernel=%s\n", value);
            } else {
                printf("  unexpected key %s\n", key);
                break;
            }
        }
    }
    fflush(stdout);
    return handles;
}
void __hipUnregisterFatBinary(void **handle) { (void)handle; }
void __hipRegisterFunction(void **h, const void *f, char *d, const char *n, int t, void *a, void *b, void *c, void *e, int *s) {
    (void)h; (void)f; (void)d; (void)n; (void)t; (void)a; (void)b; (void)c; (void)e; (void)s;
}
int __hipPopCallConfiguration(void *a, void *b, void *c, void *d) { (void)a; (void)b; (void)c; (void)d; return 0; }
typedef struct { unsigned x, y, z; } dim3_t;
int hipLaunchKernel(const void *f, dim3_t g, dim3_t b, void **a, unsigned long m, void *s) {
    (void)f; (void)g; (void)b; (void)a; (void)m; (void)s; return 0;
}
"#;

const LOADER: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *library = dlopen(argv[1], RTLD_NOW);
    if (!library) { printf("dlopen: %s\n", dlerror()); return 1; }
    int (*entry)(float *) = (int (*)(float *))dlsym(library, "run");
    float x = 1.0f;
    printf("run=%d\n", entry ? entry(&x) : -1);
    return 0;
}
"#;

/// A kernel and its launcher, `n` standing for the translation unit.
fn kernel_source(n: usize) -> String {
    format!(
        r#"#define __global__ __attribute__((global))
typedef struct {{ unsigned x, y, z; }} dim3_t;
extern "C" int hipLaunchKernel(const void* f, dim3_t g, dim3_t b, void** args, unsigned long shm, void* stream);
__global__ void scale{n}(float *x, float a) {{ x[0] *= a; }}
extern "C" int run{n}(float *x) {{ float a = 2.0f; void* args[] = {{&x, &a}}; dim3_t one = {{1,1,1}};
  return hipLaunchKernel((const void*)&scale{n}, one, one, args, 0, 0); }}
"#
    )
}

/// The shapes of fat binary the tests build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    SharedObject,
    Pie,
    FixedAddress,
    /// A shared object of three translation units, so three wrappers.
    ThreeUnits,
    /// A shared object of two units compiled with `-fgpu-rdc` (one device link).
    Relocatable,
    /// A shared object linked with `.hip_fatbin` last in its segment, so that no segment
    /// has to be added after the split.
    LastInSegment,
    /// A shared object linked with `.hip_fatbin` and then more read-only data after `.text`,
    /// in a segment whose address − offset differs from the first segment's.
    FatbinAfterText,
    /// A shared object linked by GNU ld with packed relative relocations (`DT_RELR`), so
    /// that the wrapper's pointer has no RELA entry.
    GnuLdPacked,
    /// The same layout in a PIE: the moved program header table would be where kernels
    /// before Linux 5.18 do not look, so the split is refused.
    PieWithFatbinAfterText,
}

impl Shape {
    pub const ALL: [Shape; 8] = [
        Shape::SharedObject,
        Shape::Pie,
        Shape::FixedAddress,
        Shape::ThreeUnits,
        Shape::Relocatable,
        Shape::LastInSegment,
        Shape::FatbinAfterText,
        Shape::GnuLdPacked,
    ];

    pub fn is_library(self) -> bool {
        !matches!(self, Shape::Pie | Shape::FixedAddress | Shape::PieWithFatbinAfterText)
    }
}

/// The stub runtime `libamdhip64.so` and the loader program, built in `dir`.
pub struct Runtime {
    pub dir: PathBuf,
    pub loader: PathBuf,
}

/// How the stub must look to satisfy a library linked against a real HIP runtime: its
/// SONAME, the symbol version its imports carry, and the further functions it imports.
#[derive(Debug, Default)]
pub struct RuntimeAbi {
    pub soname: Option<String>,
    pub version: Option<String>,
    pub functions: Vec<String>,
}

/// The ABI `library` expects of `libamdhip64`, as `readelf` shows its imports.
pub fn runtime_abi(library: &Path) -> RuntimeAbi {
    let dynamic = crate::support::stdout(&run(Command::new("readelf").arg("-dW").arg(library), "binutils"));
    let soname = dynamic
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(|line| line.split('[').nth(1)?.split(']').next())
        .find(|name| name.starts_with("libamdhip64"))
        .map(str::to_owned);
    let symbols =
        crate::support::stdout(&run(Command::new("readelf").arg("--dyn-syms").arg("-W").arg(library), "binutils"));
    let mut abi = RuntimeAbi { soname, ..RuntimeAbi::default() };
    for line in symbols.lines().filter(|line| line.contains(" UND ")) {
        let Some(name) = line.split_whitespace().nth(7) else { continue };
        let Some((function, version)) = name.split_once('@') else { continue };
        if !(function.starts_with("hip") || function.starts_with("__hip")) || !version.starts_with("hip") {
            continue;
        }
        abi.version = Some(version.to_owned());
        if !STUB.contains(&format!("{function}(")) && !abi.functions.iter().any(|known| known == function) {
            abi.functions.push(function.to_owned());
        }
    }
    abi
}

pub fn build_runtime(dir: &Path, abi: &RuntimeAbi) -> Runtime {
    let stub = dir.join("stub.c");
    let extra: String =
        abi.functions.iter().map(|function| format!("int {function}(void) {{ return 0; }}\n")).collect();
    std::fs::write(&stub, format!("{STUB}{extra}")).expect("write stub");
    let library = dir.join("libamdhip64.so");
    let mut command = Command::new("cc");
    command.args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"]).arg(&library).arg(&stub);
    if let Some(soname) = &abi.soname {
        command.arg(format!("-Wl,-soname,{soname}"));
    }
    if let Some(version) = &abi.version {
        let script = dir.join("stub.map");
        std::fs::write(&script, format!("{version} {{ global: *; }};\n")).expect("write version script");
        command.arg(format!("-Wl,--version-script={}", script.display()));
    }
    run(&mut command, "gcc");
    if let Some(soname) = &abi.soname {
        std::fs::copy(&library, dir.join(soname)).expect("install the stub by its SONAME");
    }
    let loader_source = dir.join("loader.c");
    std::fs::write(&loader_source, LOADER).expect("write loader");
    let loader = dir.join("loader");
    run(Command::new("cc").args(["-o"]).arg(&loader).arg(&loader_source).arg("-ldl"), "gcc");
    Runtime { dir: dir.to_path_buf(), loader }
}

/// One wrapper as the stub saw it registered.
#[derive(Debug, PartialEq, Eq)]
pub struct Registration {
    pub address: u64,
    pub magic: String,
    pub version: u32,
    pub index: u32,
    /// `bundle=` (HIPF) or the decoded marker's `path=`/`kernel=` lines (HIPK).
    pub details: Vec<String>,
}

/// The registrations in `printed`, in the order of their wrappers' addresses, and whether the
/// program's `run` (launching every kernel) returned 0.
pub fn registrations(printed: &str) -> (Vec<Registration>, bool) {
    let mut found: Vec<Registration> = Vec::new();
    for line in printed.lines() {
        if let Some(rest) = line.strip_prefix("wrapper ") {
            let field = |key: &str| {
                rest.split_whitespace()
                    .find_map(|word| word.strip_prefix(key))
                    .unwrap_or_else(|| panic!("no {key} in {line}"))
                    .to_owned()
            };
            found.push(Registration {
                address: u64::from_str_radix(field("at=").trim_start_matches("0x"), 16).expect("address"),
                magic: field("magic="),
                version: field("version=").parse().expect("version"),
                index: field("index=").parse().expect("index"),
                details: Vec::new(),
            });
        } else if let Some(detail) = line.strip_prefix("  ") {
            found.last_mut().expect("a detail follows its wrapper").details.push(detail.to_owned());
        }
    }
    found.sort_by_key(|registration| registration.address);
    (found, printed.lines().any(|line| line == "run=0"))
}

/// Compiles `shape` in `dir` against the stub in `runtime.dir`; returns the binary's path.
pub fn build(shape: Shape, dir: &Path, runtime: &Runtime) -> PathBuf {
    let units = match shape {
        Shape::ThreeUnits => 3,
        Shape::Relocatable => 2,
        _ => 1,
    };
    let mut sources = Vec::new();
    for n in 0..units {
        let source = dir.join(format!("k{n}.hip"));
        std::fs::write(&source, kernel_source(n)).expect("write source");
        sources.push(source);
    }
    // Every shape exports `run`, calling each unit's launcher.
    let calls: String = (0..units).map(|n| format!("r |= run{n}(x); ")).collect();
    let declarations: String = (0..units).map(|n| format!("extern \"C\" int run{n}(float*); ")).collect();
    let mut entry = format!("{declarations}\nextern \"C\" int run(float* x) {{ int r = 0; {calls} return r; }}\n");
    if !shape.is_library() {
        entry += "#include <stdio.h>\nint main() { float x = 1.0f; printf(\"run=%d\\n\", run(&x)); return 0; }\n";
    }
    if matches!(shape, Shape::FatbinAfterText | Shape::PieWithFatbinAfterText) {
        entry += "__attribute__((section(\".kept_after\"), used)) static const char kept_after[64] = {1};\n";
    }
    let entry_source = dir.join("entry.cpp");
    std::fs::write(&entry_source, entry).expect("write entry");
    let output = dir.join(if shape.is_library() { "libk.so" } else { "k" });
    let mut command = Command::new("clang++-15");
    command.args([
        "-x",
        "hip",
        "--offload-arch=gfx90a",
        "--offload-arch=gfx1030",
        "-nogpulib",
        "-nogpuinc",
        "-fuse-ld=lld",
    ]);
    // The device link of `-fgpu-rdc` runs `lld` as found by the driver: LLVM 15's, not the
    // first on PATH.
    command.arg("-B/usr/lib/llvm-15/bin");
    command.args(&sources).args(["-x", "c++"]).arg(&entry_source);
    match shape {
        Shape::SharedObject | Shape::ThreeUnits => command.args(["-fPIC", "-shared"]),
        Shape::Relocatable => command.args(["-fPIC", "-shared", "-fgpu-rdc"]),
        Shape::Pie => command.args(["-fPIE", "-pie"]),
        Shape::FixedAddress => command.args(["-fno-pic", "-no-pie"]),
        Shape::LastInSegment => command.args(["-fPIC", "-shared"]).arg(linker_script(dir, ".eh_frame")),
        Shape::FatbinAfterText => command.args(["-fPIC", "-shared"]).arg(linker_script(dir, ".text")),
        Shape::GnuLdPacked => command.args(["-fPIC", "-shared", "-fuse-ld=bfd", "-Wl,-z,pack-relative-relocs"]),
        Shape::PieWithFatbinAfterText => command.args(["-fPIE", "-pie"]).arg(linker_script(dir, ".text")),
    };
    command.arg("-L").arg(&runtime.dir).arg("-lamdhip64").arg("-o").arg(&output);
    run(&mut command, "clang-15 and lld-15");
    output
}

/// The flag linking `.hip_fatbin` (and the entry's `.kept_after`, when it has one) right
/// after the output section `after`.
fn linker_script(dir: &Path, after: &str) -> String {
    let script = dir.join("fatbin.ld");
    let text = format!(
        "SECTIONS {{ .hip_fatbin : {{ *(.hip_fatbin) }} .kept_after : {{ KEEP(*(.kept_after)) }} }} INSERT AFTER {after};\n"
    );
    std::fs::write(&script, text).expect("write linker script");
    format!("-Wl,-T,{}", script.display())
}

/// Runs `binary` (a program, or a library through the loader) against the stub runtime and
/// returns what it printed.
pub fn run_against_stub(binary: &Path, shape: Shape, runtime: &Runtime) -> String {
    let mut command = if shape.is_library() {
        let mut command = Command::new(&runtime.loader);
        command.arg(binary);
        command
    } else {
        Command::new(binary)
    };
    command.env("LD_LIBRARY_PATH", &runtime.dir);
    crate::support::stdout(&run(&mut command, "gcc"))
}
