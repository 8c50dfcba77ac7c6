//! The bundled example as a Windows build (SPEC §7): real PE files cross-compiled with
//! MinGW-w64 from the same C sources as the Linux example, laid out as TheRock lays out a
//! Windows build: DLLs and executables in `bin/`, import libraries in `lib/`, headers and
//! CMake files for devel, the build manifest. One family (`gfx110X-all`), legacy mode.
//!
//! Owns: that layout and its compilation. Does not own: the Linux example (`layout`,
//! `spec`), reading it back (`catalog`).

use std::path::Path;
use std::process::Command;

use super::{ExampleError, ExampleSummary};

/// The MinGW-w64 C compiler for 64-bit Windows (Debian `gcc-mingw-w64-x86-64`).
pub const MINGW_GCC: &str = "x86_64-w64-mingw32-gcc";

const LIBRARY_C: &str = include_str!("c/library.c");
const PROGRAM_C: &str = include_str!("c/program.c");
/// The Windows tools: the Linux example's program, exiting with the code `--exit=N` names,
/// so a test can see a console script pass its tool's exit code on (Windows has no exec).
const TOOL_C: &str = "#include <stdlib.h>\n#include <string.h>\n\
    #define main example_main\n#include \"program.c\"\n#undef main\n\
    int main(int argc, char **argv) {\n\
    int code = example_main(argc, argv);\n\
    if (argc > 1 && strncmp(argv[1], \"--exit=\", 7) == 0) code = atoi(argv[1] + 7);\n\
    return code;\n}\n";

/// One PE file to build.
struct Pe {
    /// Artifact directory and install prefix, then the path under it.
    artifact: &'static str,
    prefix: &'static str,
    path: String,
    text: String,
    /// For a DLL: the C identifier of its exported functions, and the import library
    /// written beside the headers (`lib/{name}.lib`), if any.
    library: Option<(String, Option<String>)>,
    /// A DLL this one imports: (C identifier, its path in the same build).
    calls: Option<(&'static str, &'static str)>,
}

const CORE_HIP: &str = "core/clr/stage";
const LLVM: &str = "compiler/amd-llvm/stage";
const HOST_BLAS: &str = "third-party/host-blas/stage";
const HIPBLAS: &str = "math-libs/BLAS/hipBLAS/stage";
const KPACK: &str = "core/kpack/stage";
const HIPINFO: &str = "core/hipInfo/stage";
const AMDHIP64: (&str, &str) = ("amdhip64", "core-hip_lib_generic/core/clr/stage/bin/amdhip64_7.dll");

/// DLLs named as real Windows builds name them (`amdhip64_7.dll`, `hiprtc0702.dll` beside
/// `hiprtc-builtins0702.dll`, `amd_comgr_3.dll`; hipBLAS and hipBLASLt `lib`-prefixed as
/// TheRock and HIP SDK 7.1 ship them, so `hipblas` must find `libhipblas.dll` and not
/// `libhipblaslt.dll`), every libraries DLL the runtime's table names on Windows (each
/// importing the HIP runtime from core's `bin/`), and an executable behind every console
/// script a Windows build has: the reference's Windows lists (`hipInfo`, no `roc-obj*`).
fn files() -> Vec<Pe> {
    let dll = |artifact, prefix, file: &str, id: &str, import_library: Option<&str>, calls| Pe {
        artifact,
        prefix,
        path: format!("bin/{file}"),
        text: id.to_owned(),
        library: Some((id.to_owned(), import_library.map(str::to_owned))),
        calls,
    };
    // Tools in `bin/` import the HIP runtime beside them (core's `bin/`, or the devel
    // tree's); the compilers in `lib/llvm/bin` import nothing of ROCm, as the real ones.
    let exe = |artifact, prefix, path: &str, text: &str| Pe {
        artifact,
        prefix,
        path: format!("{path}.exe"),
        text: text.to_owned(),
        library: None,
        calls: path.starts_with("bin/").then_some(AMDHIP64),
    };
    let mut files = vec![
        dll("core-hip_lib_generic", CORE_HIP, "amdhip64_7.dll", "amdhip64", Some("amdhip64.lib"), None),
        dll("core-hip_lib_generic", CORE_HIP, "hiprtc0702.dll", "hiprtc", Some("hiprtc.lib"), None),
        dll("core-hip_lib_generic", CORE_HIP, "hiprtc-builtins0702.dll", "hiprtc_builtins", None, None),
        dll("amd-llvm_lib_generic", LLVM, "amd_comgr_3.dll", "amd_comgr", Some("amd_comgr.lib"), None),
        dll("host-blas_lib_generic", HOST_BLAS, "rocm-openblas.dll", "rocm_openblas", None, None),
        dll("core-kpack_lib_generic", KPACK, "rocm_kpack.dll", "rocm_kpack", Some("rocm_kpack.lib"), None),
    ];
    for (file, id) in [
        ("libhipblas.dll", "hipblas"),
        ("libhipblaslt.dll", "hipblaslt"),
        ("origami.dll", "origami"),
        ("hipfft.dll", "hipfft"),
        ("hiprand.dll", "hiprand"),
        ("hipsparse.dll", "hipsparse"),
        ("hipsolver.dll", "hipsolver"),
        ("MIOpen.dll", "MIOpen"),
        ("hipdnn_backend.dll", "hipdnn_backend"),
    ] {
        let import_library = format!("{}.lib", file.trim_end_matches(".dll"));
        let mut pe = dll("blas_lib_gfx110X-all", HIPBLAS, file, id, None, Some(AMDHIP64));
        pe.library = Some((id.to_owned(), Some(import_library)));
        pe.text = format!("{id} gfx110X-all");
        files.push(pe);
    }
    for tool in ["amdclang", "amdclang++", "amdclang-cpp", "amdclang-cl", "amdflang", "amdlld", "offload-arch"] {
        files.push(exe("amd-llvm_lib_generic", LLVM, &format!("lib/llvm/bin/{tool}"), tool));
    }
    for tool in ["hipcc", "hipconfig", "hipify-clang"] {
        files.push(exe("core-hip_run_generic", CORE_HIP, &format!("bin/{tool}"), tool));
    }
    files.push(exe("core-hipinfo_run_generic", HIPINFO, "bin/hipInfo", "hipInfo"));
    files
}

/// Text files: (artifact, prefix, path, contents).
const TEXTS: &[(&str, &str, &str, &str)] = &[
    ("core-hip_dev_generic", CORE_HIP, "include/hip/hip_runtime.h", "#pragma once\n"),
    ("core-hip_dev_generic", CORE_HIP, "lib/cmake/hip/hip-config.cmake", "# example hip-config.cmake (Windows)\n"),
    ("blas_dev_gfx110X-all", HIPBLAS, "include/hipblas/hipblas.h", "#pragma once\n"),
    ("blas_dev_gfx110X-all", HIPBLAS, "lib/cmake/hipblas/hipblas-config.cmake", "# example hipblas-config.cmake\n"),
    // Linked into the devel tree across a long `..` chain (TheRock #7537).
    ("blas_lib_gfx110X-all", HIPBLAS, super::layout::DEEP_DEVICE_FILE, "a device file deep in the tree\n"),
];

const BUILD_MANIFEST: &str = "{\n  \"the_rock_commit\": \"0000000000000000000000000000000000000000\",\n  \"submodules\": [],\n  \"flags\": {\"KPACK_SPLIT_ARTIFACTS\": false}\n}\n";

/// Writes the Windows example under `out` (which must be empty or missing).
pub(super) fn write_windows_example(out: &Path) -> Result<ExampleSummary, ExampleError> {
    let scratch = tempfile::tempdir().map_err(|source| ExampleError::Io { path: std::env::temp_dir(), source })?;
    for (name, source) in [("library.c", LIBRARY_C), ("program.c", PROGRAM_C), ("tool.c", TOOL_C)] {
        write(&scratch.path().join(name), source)?;
    }
    let mut summary = ExampleSummary::default();
    let base = out.join("base_lib_generic");
    write(&base.join("artifact_manifest.txt"), "base/aux-overlay/stage\n")?;
    let aux = base.join("base/aux-overlay/stage/share/therock");
    write(&aux.join("therock_manifest.json"), BUILD_MANIFEST)?;
    write(&aux.join("dist_info.json"), "{\"dist_amdgpu_targets\": \"gfx1100;gfx1101\"}\n")?;
    summary.n_files += 2;
    let files = files();
    let mut artifacts: Vec<(&str, &str)> = vec![("base_lib_generic", "base/aux-overlay/stage")];
    artifacts.extend(files.iter().map(|file| (file.artifact, file.prefix)));
    artifacts.extend(TEXTS.iter().map(|(artifact, prefix, _, _)| (*artifact, *prefix)));
    artifacts.sort();
    artifacts.dedup();
    for (artifact, prefix) in &artifacts {
        write(&out.join(artifact).join("artifact_manifest.txt"), &format!("{prefix}\n"))?;
    }
    for (artifact, prefix, path, text) in TEXTS {
        write(&out.join(artifact).join(prefix).join(path), text)?;
        summary.n_files += 1;
    }
    for file in &files {
        compile(scratch.path(), out, file)?;
        summary.n_elf += 1;
    }
    summary.artifacts = artifacts.iter().map(|(artifact, _)| artifact.to_string()).collect();
    summary.artifacts.dedup();
    Ok(summary)
}

fn compile(scratch: &Path, out: &Path, file: &Pe) -> Result<(), ExampleError> {
    let stage = out.join(file.artifact).join(file.prefix);
    let target = stage.join(&file.path);
    create_parent(&target)?;
    let mut command = Command::new(MINGW_GCC);
    // Relative source names and no timestamp in the PE header: the same bytes on every run.
    command.current_dir(scratch).args(["-O1", "-s", "-Wl,--no-insert-timestamp"]);
    command.arg(format!("-DEXAMPLE_TEXT=\"{}\"", file.text));
    match &file.library {
        Some((id, import_library)) => {
            command.args(["-shared", &format!("-DEXAMPLE_ID={id}"), "library.c"]);
            if let Some(import_library) = import_library {
                let lib = stage.join("lib").join(import_library);
                create_parent(&lib)?;
                command.arg(format!("-Wl,--out-implib,{}", lib.display()));
            }
        }
        None => {
            command.arg("tool.c");
        }
    }
    if let Some((id, dll)) = file.calls {
        // MinGW's ld links against a DLL directly: the import goes into the new file by name.
        command.arg(format!("-DEXAMPLE_CALLS={id}")).arg(out.join(dll));
    }
    command.arg("-o").arg(&target);
    match super::toolchain::run(command, &target) {
        Err(ExampleError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Err(ExampleError::NoCompiler {
                message: format!(
                    "{MINGW_GCC} not found: the Windows example needs MinGW-w64 (apt-get install gcc-mingw-w64-x86-64)"
                ),
            })
        }
        other => other,
    }
}

fn write(path: &Path, text: &str) -> Result<(), ExampleError> {
    create_parent(path)?;
    std::fs::write(path, text).map_err(|source| ExampleError::Io { path: path.to_owned(), source })
}

fn create_parent(path: &Path) -> Result<(), ExampleError> {
    let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
    std::fs::create_dir_all(&parent).map_err(|source| ExampleError::Io { path: parent, source })
}
