//! The content of the example build: which artifacts exist and which file stands for which
//! rule of SPEC §2. Paths and names follow a real TheRock build.
//!
//! Rules exercised (and where):
//! - SONAME chains `libamdhip64.so -> .so.7 -> .so.7.1.0` (core-hip), a SONAME alias
//!   `libhipblas.so.3` → real `libhipblas.so.3.0.0` (blas), files named after their
//!   SONAME (`librocblas.so.5`), unversioned links to recreate (`libprofiler-hub.so.1`).
//! - Executables behind symlinks: `lib/llvm/bin/amdclang -> clang`, and the cross-artifact
//!   chain `bin/amdclang -> ../lib/llvm/bin/amdclang` (core-hip run → amd-llvm); scripts
//!   found from their real location: `bin/rocm-smi -> ../libexec/rocm_smi/rocm_smi.py`.
//! - A dangling link (`lib/libamdhip64.so.6`), a directory link
//!   (`lib/llvm/lib/clang/current -> 22`), a read-only text file (`share/hip/version`,
//!   0o444) and a read-only library (`librocm_sysdeps_liblzma.so.5`, 0o555).
//! - RPATH: DT_RUNPATH libraries (`$ORIGIN`), an executable with DT_RPATH holding an absolute
//!   build path (`bin/hipInfo`: `/build/x/lib:$ORIGIN/../lib`), an absolute RUNPATH
//!   entry (`librocprof-sys.so.1.0.0`: `/opt/rocm/lib`), libraries packages whose
//!   DT_NEEDED is a core library (`libamdhip64.so.7`), which only load once the
//!   packager appends the core RPATH.
//! - Libraries in `lib/llvm/lib`, `lib/rocm_sysdeps/lib` and `lib/host-math/lib`.
//! - Excluded from core: `**/cmake/**`, `bin/rocprof-*` and rocprofiler-systems files found
//!   in a core artifact (rocprofiler-sdk); profiler files in their own artifacts.
//! - Devel-only artifacts (`prim_dev_generic`), a `test` component (`rand_test_generic`),
//!   several manifest prefixes, an empty manifest line and a prefix that was never built.
//! - Fat: a legacy build of one family ([`FAT_FAMILY`]) whose GPU libraries
//!   ([`FAT_LIBRARIES`]) carry real `.hip_fatbin` offload bundles for [`FAT_TARGET_IDS`],
//!   rocBLAS's kernel data by target (`TensileLibrary_lazy_gfx90a.dat`), and a HIP runtime
//!   exporting what they call (plus the kpack loader when asked).
//! - Legacy: libraries per family ([`LEGACY_FAMILIES`]) plus a generic one. Kpack-split:
//!   generic libraries plus per-target device artifacts ([`DEVICE_TARGET_IDS`]) with a
//!   per-arch `.so`, `.dat`, `.kdb`, `.co`, `.hsaco` and a `.kpack` file, and two targets
//!   sharing one owner's device wheel ([`OWNER_SHARED_TARGET_IDS`], `gfx1250` and
//!   `gfx1250-strict`), one with a deep device path ([`DEEP_DEVICE_FILE`]).

use super::spec::{ArtifactSpec, Elf};
use super::ExampleOptions;

/// The families of the legacy example, one libraries wheel each.
pub const LEGACY_FAMILIES: [&str; 2] = ["gfx110X-all", "gfx94X-dcgpu"];

/// The one family of the fat example (TheRock's name for gfx908 and gfx90a).
pub const FAT_FAMILY: &str = "gfx90X-dcgpu";

/// The offload targets of the fat example's GPU libraries: clang refuses `gfx90a` beside
/// `gfx90a:xnack+` (a feature is given for all of a processor's targets or none).
pub const FAT_TARGET_IDS: [&str; 3] = ["gfx908", "gfx90a:xnack-", "gfx90a:xnack+"];

/// (artifact, SONAME) of the fat example's libraries with a `.hip_fatbin`.
pub const FAT_LIBRARIES: [(&str, &str); 3] = [
    ("blas_lib_gfx90X-dcgpu", "librocblas.so.5"),
    ("blas_lib_gfx90X-dcgpu", "libhipblaslt.so.1"),
    ("rand_lib_generic", "librocrand.so.1"),
];

/// What a kpack-enabled HIP runtime exports (rocm-kpack's loader entry point), and what the
/// example's runtime exports when asked to be one.
pub const KPACK_LOADER_SYMBOL: &str = "kpack_load_code_object";

/// (artifact name, target id) of the kpack-split example's device artifacts.
pub const DEVICE_TARGET_IDS: [(&str, &str); 4] =
    [("blas", "gfx90a:xnack+"), ("blas", "gfx90a:xnack-"), ("blas", "gfx1030"), ("rand", "gfx90a:xnack+")];

/// (artifact name, target id) of the kpack-split example's device artifacts whose targets
/// share one owner's device wheel (SPEC §2: `gfx1250-strict` ships in `gfx1250`'s). Their
/// kernels are in `.kpack` archives only: LLVM before 20 cannot assemble gfx1250 code
/// objects, and a kpack-split build carries its kernels in those archives anyway.
pub const OWNER_SHARED_TARGET_IDS: [(&str, &str); 2] = [("blas", "gfx1250"), ("blas", "gfx1250-strict")];

/// A device file deep enough that a link target spelt with one `..` per component, joined
/// verbatim onto its place in the devel tree, passes Windows' 260-character MAX_PATH while
/// the file's own path stays well under it (TheRock #7537). In the kpack-split example's
/// `gfx1250` device artifact and the Windows example's libraries artifact.
pub const DEEP_DEVICE_FILE: &str = "lib/rocblas/library/kernels/tensile/assembly/solution-libraries/contractions/\
    TensileLibrary_Type_HH_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback.dat";

const HIPCC_SH: &str = include_str!("scripts/hipcc.sh");
const ROCM_SMI_PY: &str = include_str!("scripts/rocm_smi.py");
const HELLO_PY: &str = include_str!("scripts/hello.py");

/// A Python tool that prints `example:{name}` and its arguments.
fn python_tool(name: &str) -> String {
    HELLO_PY.replace("@NAME@", name)
}

pub(super) fn artifacts(options: &ExampleOptions) -> Vec<ArtifactSpec> {
    let mut artifacts = vec![
        base(options),
        core_runtime_lib(),
        core_runtime_run(),
        core_hip_lib(options),
        core_hip_dev(),
        core_hip_run(),
        core_hipinfo_run(),
        core_amdsmi_run(),
        amd_llvm_lib(),
        sysdeps_lib(),
        host_blas_lib(),
        rocprofiler_sdk_lib(),
        rocprofiler_systems_lib(),
        rocprofiler_systems_run(),
        rocprofiler_compute_run(),
        prim_dev(),
        rand_lib(options.fat),
        rand_test(),
    ];
    artifacts.extend(super::table::core_table_artifacts());
    if options.kpack_split {
        artifacts.extend(super::table::libraries_table_artifacts("generic"));
        artifacts.push(blas_lib("generic"));
        artifacts.push(blas_dev("generic"));
        for (name, target_id) in DEVICE_TARGET_IDS {
            artifacts.push(device_lib(name, target_id));
        }
        for (name, target_id) in OWNER_SHARED_TARGET_IDS {
            artifacts.push(kpack_device_lib(name, target_id));
        }
    } else if options.fat {
        artifacts.extend(super::table::libraries_table_artifacts(FAT_FAMILY));
        artifacts.push(fat_blas_lib());
        artifacts.push(blas_dev(FAT_FAMILY));
    } else {
        for family in LEGACY_FAMILIES {
            artifacts.extend(super::table::libraries_table_artifacts(family));
            artifacts.push(blas_lib(family));
            artifacts.push(blas_dev(family));
        }
    }
    artifacts
}

/// `elf` compiled as HIP for [`FAT_TARGET_IDS`] when `fat`.
fn maybe_fat(elf: Elf, fat: bool) -> Elf {
    if fat {
        elf.offload(&FAT_TARGET_IDS)
    } else {
        elf
    }
}

fn base(options: &ExampleOptions) -> ArtifactSpec {
    let kpack_split = options.kpack_split;
    let build_manifest = format!(
        "{{\n  \"the_rock_commit\": \"0000000000000000000000000000000000000000\",\n  \"submodules\": [],\n  \"flags\": {{\"KPACK_SPLIT_ARTIFACTS\": {kpack_split}}}\n}}\n"
    );
    let dist_targets = match (kpack_split, options.fat) {
        (true, _) => "gfx1030;gfx1250;gfx1250-strict;gfx90a",
        (false, true) => "gfx908;gfx90a",
        (false, false) => "gfx1100;gfx1101;gfx942",
    };
    let dist_info = format!("{{\"dist_amdgpu_targets\": \"{dist_targets}\"}}\n");
    // An empty line and a prefix that was never built: both are skipped (SPEC §1).
    let mut a = ArtifactSpec::new(
        "base_lib_generic",
        &["base/aux-overlay/stage", "", "base/rocm-core/stage", "base/not-built/stage"],
    );
    a.text("share/therock/therock_manifest.json", &build_manifest)
        .text("share/therock/dist_info.json", &dist_info)
        .prefix("base/rocm-core/stage")
        .elf("lib/librocm-core.so.1.0.0", Elf::library("librocm-core.so.1", "rocm-core"))
        .link("lib/librocm-core.so.1", "librocm-core.so.1.0.0")
        .link("lib/librocm-core.so", "librocm-core.so.1");
    a
}

fn core_runtime_lib() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("core-runtime_lib_generic", &["core/ROCR-Runtime/stage"]);
    let hsa = Elf::library("libhsa-runtime64.so.1", "hsa-runtime64")
        .calls("librocm_sysdeps_liblzma.so.5")
        .rpath(&["$ORIGIN/rocm_sysdeps/lib"], true);
    a.elf("lib/libhsa-runtime64.so.1.15.0", hsa)
        .link("lib/libhsa-runtime64.so.1", "libhsa-runtime64.so.1.15.0")
        .link("lib/libhsa-runtime64.so", "libhsa-runtime64.so.1");
    a
}

fn core_runtime_run() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("core-runtime_run_generic", &["core/rocminfo/stage"]);
    let rocminfo = Elf::program("rocminfo").calls("libhsa-runtime64.so.1").rpath(&["$ORIGIN/../lib"], true);
    a.elf("bin/rocminfo", rocminfo)
        .script("bin/rocm_agent_enumerator", &python_tool("rocm_agent_enumerator"))
        .script("bin/roccoremerge", &python_tool("roccoremerge"));
    a
}

fn core_hip_lib(options: &ExampleOptions) -> ArtifactSpec {
    let mut a = ArtifactSpec::new("core-hip_lib_generic", &["core/clr/stage"]);
    let mut amdhip =
        Elf::library("libamdhip64.so.7", "amdhip64").calls("libhsa-runtime64.so.1").rpath(&["$ORIGIN"], true);
    if options.fat {
        amdhip = amdhip.define("EXAMPLE_HIP_RUNTIME");
    }
    if options.kpack_runtime {
        amdhip = amdhip.define("EXAMPLE_KPACK_LOADER");
    }
    let hiprtc = Elf::library("libhiprtc.so.7", "hiprtc").calls("libamdhip64.so.7").rpath(&["$ORIGIN"], true);
    a.elf("lib/libamdhip64.so.7.1.0", amdhip)
        .link("lib/libamdhip64.so.7", "libamdhip64.so.7.1.0")
        .link("lib/libamdhip64.so", "libamdhip64.so.7")
        // A compatibility link to a library this build did not make: dangling.
        .link("lib/libamdhip64.so.6", "libamdhip64.so.6.4.0")
        .elf("lib/libhiprtc.so.7.1.0", hiprtc)
        .link("lib/libhiprtc.so.7", "libhiprtc.so.7.1.0")
        .link("lib/libhiprtc.so", "libhiprtc.so.7")
        .text_mode("share/hip/version", "HIP_VERSION=7.1.0\n", 0o444)
        .text("lib/cmake/hip/hip-config.cmake", "# example hip-config.cmake\nset(hip_FOUND TRUE)\n");
    a
}

fn core_hip_dev() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("core-hip_dev_generic", &["core/clr/stage"]);
    a.text("include/hip/hip_runtime.h", "#pragma once\n#include <hip/hip_version.h>\n")
        .text("include/hip/hip_version.h", "#pragma once\n#define HIP_VERSION_MAJOR 7\n")
        .text("include/hip/amd_detail/amd_hip_runtime.h", "#pragma once\n")
        // Directories are entries too, even empty ones (SPEC §1).
        .dir("include/hip/nvidia_detail")
        .text("lib/cmake/hip-lang/hip-lang-config.cmake", "# example hip-lang-config.cmake\n");
    a
}

fn core_hip_run() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("core-hip_run_generic", &["core/hipcc/stage"]);
    // `bin/amdclang` resolves through amd-llvm's `lib/llvm/bin/amdclang -> clang`: a chain
    // across two artifacts, as in /opt/rocm/bin.
    a.script("bin/hipcc", HIPCC_SH).link("bin/amdclang", "../lib/llvm/bin/amdclang");
    for tool in ["hipconfig", "roc-obj", "roc-obj-extract", "roc-obj-ls"] {
        a.script(&format!("bin/{tool}"), &python_tool(tool));
    }
    a
}

fn core_hipinfo_run() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("core-hipinfo_run_generic", &["core/hipInfo/stage"]);
    // DT_RPATH with a build machine's absolute path, which the packager must remove.
    let hipinfo = Elf::program("hipInfo").calls("libamdhip64.so.7").rpath(&["/build/x/lib", "$ORIGIN/../lib"], false);
    a.elf("bin/hipInfo", hipinfo);
    a
}

fn core_amdsmi_run() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("core-amdsmi_run_generic", &["core/amdsmi/stage"]);
    a.script("bin/amd-smi", &python_tool("amd-smi"))
        .link("bin/rocm-smi", "../libexec/rocm_smi/rocm_smi.py")
        .script("libexec/rocm_smi/rocm_smi.py", ROCM_SMI_PY)
        .text("libexec/rocm_smi/rocm_smi_data.txt", "data-beside-the-real-script\n");
    a
}

fn amd_llvm_lib() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("amd-llvm_lib_generic", &["compiler/amd-llvm/stage"]);
    let clang = Elf::program("clang").calls("libLLVM.so.22.0git").rpath(&["$ORIGIN/../lib"], true);
    a.elf("lib/llvm/bin/clang", clang)
        .link("lib/llvm/bin/clang++", "clang")
        .link("lib/llvm/bin/amdclang", "clang")
        .link("lib/llvm/bin/amdclang++", "clang")
        .link("lib/llvm/bin/amdclang-cl", "clang")
        .link("lib/llvm/bin/amdclang-cpp", "clang")
        .elf("lib/llvm/bin/flang", Elf::program("flang").calls("libLLVM.so.22.0git").rpath(&["$ORIGIN/../lib"], true))
        .link("lib/llvm/bin/amdflang", "flang")
        .elf("lib/llvm/bin/lld", Elf::program("lld").calls("libLLVM.so.22.0git").rpath(&["$ORIGIN/../lib"], true))
        .link("lib/llvm/bin/amdlld", "lld")
        .elf("lib/llvm/bin/offload-arch", Elf::program("offload-arch"))
        .library("lib", Elf::library("libamd_comgr.so.3", "amd_comgr"))
        .link("lib/libamd_comgr.so", "libamd_comgr.so.3")
        .library("lib/llvm/lib", Elf::library("libLLVM.so.22.0git", "LLVM"))
        .link("lib/llvm/lib/libLLVM.so", "libLLVM.so.22.0git")
        .text("lib/llvm/lib/clang/22/include/stddef.h", "#pragma once\n")
        .link("lib/llvm/lib/clang/current", "22")
        // The device libraries, where PyTorch's build points `HIP_DEVICE_LIB_PATH`
        // (`{rocm-sdk path --root}/lib/llvm/amdgcn/bitcode`).
        .bitcode("lib/llvm/amdgcn/bitcode/ocml.bc", "__ocml_example")
        .bitcode("lib/llvm/amdgcn/bitcode/ockl.bc", "__ockl_example");
    a
}

fn sysdeps_lib() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("sysdeps_lib_generic", &["third-party/sysdeps/linux/xz/stage"]);
    a.library("lib/rocm_sysdeps/lib", Elf::library("librocm_sysdeps_liblzma.so.5", "rocm_sysdeps_liblzma").mode(0o555))
        .link("lib/rocm_sysdeps/lib/librocm_sysdeps_liblzma.so", "librocm_sysdeps_liblzma.so.5");
    a
}

fn host_blas_lib() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("host-blas_lib_generic", &["third-party/host-blas/stage"]);
    a.library("lib/host-math/lib", Elf::library("librocm-openblas.so.0", "rocm-openblas"))
        .link("lib/host-math/lib/librocm-openblas.so", "librocm-openblas.so.0");
    a
}

fn rocprofiler_sdk_lib() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("rocprofiler-sdk_lib_generic", &["profiler/rocprofiler-sdk/stage"]);
    let sdk = Elf::library("librocprofiler-sdk.so.1", "rocprofiler-sdk")
        .calls("libhsa-runtime64.so.1")
        .rpath(&["$ORIGIN"], true);
    a.elf("lib/librocprofiler-sdk.so.1.0.0", sdk)
        .link("lib/librocprofiler-sdk.so.1", "librocprofiler-sdk.so.1.0.0")
        .link("lib/librocprofiler-sdk.so", "librocprofiler-sdk.so.1")
        .script("bin/rocprofv3", &python_tool("rocprofv3"))
        .library("lib", Elf::library("libroctx64.so.4", "roctx64"))
        .library(
            "lib",
            Elf::library("libroctracer64.so.4", "roctracer64").calls("libamdhip64.so.7").rpath(&["$ORIGIN"], true),
        )
        .library("lib", Elf::library("librocprofiler-sdk-roctx.so.1", "rocprofiler-sdk-roctx"))
        // rocprofiler-systems files in a core artifact: core leaves them out (SPEC §2).
        .script("bin/rocprof-sys-stray", &python_tool("rocprof-sys-stray (stray in rocprofiler-sdk)"))
        .text("share/doc/rocprofiler-systems/NOTICE", "stray rocprofiler-systems file in a core artifact\n");
    a
}

fn rocprofiler_systems_lib() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("rocprofiler-systems_lib_generic", &["profiler/rocprofiler-systems/stage"]);
    let sys = Elf::library("librocprof-sys.so.1", "rocprof-sys")
        .calls("libamdhip64.so.7")
        .rpath(&["$ORIGIN", "/opt/rocm/lib"], true);
    // No unversioned `.so` links: the profiler package recreates them (SPEC §2).
    a.elf("lib/librocprof-sys.so.1.0.0", sys)
        .link("lib/librocprof-sys.so.1", "librocprof-sys.so.1.0.0")
        .library("lib", Elf::library("libprofiler-hub.so.1", "profiler-hub"))
        .text("include/rocprofiler-systems/rocprofsys.h", "#pragma once\n")
        .text("lib/python/site-packages/rocprofsys/__init__.py", "\"\"\"Example rocprofsys module.\"\"\"\n")
        .text("lib/rocprofiler-systems/rocprof-sys.cfg", "ROCPROFSYS_EXAMPLE=1\n")
        .text("share/doc/rocprofiler-systems/README.md", "# rocprofiler-systems (example)\n");
    a
}

fn rocprofiler_systems_run() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("rocprofiler-systems_run_generic", &["profiler/rocprofiler-systems/stage"]);
    let run = Elf::program("rocprof-sys-run").calls("librocprof-sys.so.1").rpath(&["$ORIGIN/../lib"], true);
    a.elf("bin/rocprof-sys-run", run);
    for tool in ["attach", "avail", "causal", "instrument", "sample", "python"] {
        a.script(&format!("bin/rocprof-sys-{tool}"), &python_tool(&format!("rocprof-sys-{tool}")));
    }
    a
}

fn rocprofiler_compute_run() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("rocprofiler-compute_run_generic", &["profiler/rocprofiler-compute/stage"]);
    // No `bin/rocprof-compute`: the profiler package links it to this script (SPEC §2).
    a.script("libexec/rocprofiler-compute/rocprof-compute", &python_tool("rocprof-compute"))
        .text("libexec/rocprofiler-compute/VERSION", "3.2.0\n")
        .text("share/doc/rocprofiler-compute/LICENSE", "example license text\n");
    a
}

fn prim_dev() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("prim_dev_generic", &["math-libs/rocPRIM/stage"]);
    a.text("include/rocprim/rocprim.hpp", "#pragma once\n")
        .text("lib/cmake/rocprim/rocprim-config.cmake", "# example rocprim-config.cmake\n");
    a
}

/// rand is generic in both modes, so a legacy libraries wheel takes its family's
/// artifacts plus `generic` ones (SPEC §2).
fn rand_lib(fat: bool) -> ArtifactSpec {
    let mut a = ArtifactSpec::new("rand_lib_generic", &["math-libs/rocRAND/stage", "math-libs/hipRAND/stage"]);
    let rocrand = Elf::library("librocrand.so.1", "rocrand").calls("libamdhip64.so.7").rpath(&["$ORIGIN"], true);
    let rocrand = maybe_fat(rocrand, fat);
    let hiprand = Elf::library("libhiprand.so.1", "hiprand").calls("librocrand.so.1").rpath(&["$ORIGIN"], true);
    a.library("lib", rocrand)
        .link("lib/librocrand.so", "librocrand.so.1")
        .prefix("math-libs/hipRAND/stage")
        .elf("lib/libhiprand.so.1.1.0", hiprand)
        .link("lib/libhiprand.so.1", "libhiprand.so.1.1.0")
        .link("lib/libhiprand.so", "libhiprand.so.1");
    a
}

fn rand_test() -> ArtifactSpec {
    let mut a = ArtifactSpec::new("rand_test_generic", &["math-libs/rocRAND/stage"]);
    a.script("bin/rocRAND/test_rocrand", "#!/bin/sh\necho example:test_rocrand\n");
    a
}

/// Where the writable segment of the kpack-split example's hipSPARSE starts: 1.125 GiB up,
/// with nothing mapped below it but the first few pages.
pub const KPACK_HOLE_END: u64 = 0x4800_0000;

/// `blas_lib_{family}`: rocBLAS and hipBLAS, two prefixes of one artifact. Both need the
/// core's `libamdhip64.so.7`, found only through the RPATH the packager appends.
fn blas_lib(family: &str) -> ArtifactSpec {
    let mut a = ArtifactSpec::new(
        &format!("blas_lib_{family}"),
        &["math-libs/BLAS/rocBLAS/stage", "math-libs/BLAS/hipBLAS/stage"],
    );
    let rocblas = Elf::library("librocblas.so.5", &format!("rocblas {family}"))
        .calls("libamdhip64.so.7")
        .rpath(&["$ORIGIN"], true);
    let hipblas = Elf::library("libhipblas.so.3", &format!("hipblas {family}"))
        .calls("libamdhip64.so.7")
        .rpath(&["$ORIGIN"], true);
    a.library("lib", rocblas)
        .link("lib/librocblas.so", "librocblas.so.5")
        .text(&format!("lib/rocblas/library/TensileLibrary_{family}.dat"), &format!("tensile data for {family}\n"))
        .prefix("math-libs/BLAS/hipBLAS/stage")
        .elf("lib/libhipblas.so.3.0.0", hipblas)
        .link("lib/libhipblas.so.3", "libhipblas.so.3.0.0")
        .link("lib/libhipblas.so", "libhipblas.so.3");
    for (soname, text) in [
        ("libhipblaslt.so.1", "hipblaslt"),
        ("liborigami.so.1", "origami"),
        ("libhipsparse.so.4", "hipsparse"),
        ("libhipsparselt.so.0", "hipsparselt"),
        ("libhipsolver.so.1", "hipsolver"),
    ] {
        let mut library =
            Elf::library(soname, &format!("{text} {family}")).calls("libamdhip64.so.7").rpath(&["$ORIGIN"], true);
        if family == "generic" && soname == "libhipsparse.so.4" {
            // A kpack-split build's libraries keep the addresses of the device code cut out
            // of them: a 1 GiB hole, as in rocSPARSE (SPEC §6, the grown layout).
            library = library.address_hole_to(KPACK_HOLE_END);
        }
        a.library("lib", library);
    }
    a
}

/// The fat example's `blas_lib_{FAT_FAMILY}`: as [`blas_lib`], with rocBLAS and hipBLASLt
/// fat, and rocBLAS's kernel data by target instead of by family, as a fat build installs
/// it (`library/TensileLibrary_lazy_gfx90a.dat`).
fn fat_blas_lib() -> ArtifactSpec {
    let mut a = blas_lib(FAT_FAMILY);
    let family_data = format!("math-libs/BLAS/rocBLAS/stage/lib/rocblas/library/TensileLibrary_{FAT_FAMILY}.dat");
    a.items.retain(|item| item.path != family_data);
    for item in &mut a.items {
        if let super::spec::ItemKind::Elf(elf) = &mut item.kind {
            if FAT_LIBRARIES.iter().any(|(_, soname)| elf.soname.as_deref() == Some(soname)) {
                elf.offload_archs = FAT_TARGET_IDS.iter().map(|id| id.to_string()).collect();
            }
        }
    }
    a.prefix("math-libs/BLAS/rocBLAS/stage");
    for target in ["gfx908", "gfx90a"] {
        a.text(
            &format!("lib/rocblas/library/TensileLibrary_lazy_{target}.dat"),
            &format!("tensile data for {target}\n"),
        );
    }
    a.text("lib/rocblas/library/TensileManifest.txt", "every target's kernels\n");
    a
}

fn blas_dev(family: &str) -> ArtifactSpec {
    let mut a = ArtifactSpec::new(&format!("blas_dev_{family}"), &["math-libs/BLAS/rocBLAS/stage"]);
    a.text("include/rocblas/rocblas.h", "#pragma once\n")
        .text("lib/cmake/rocblas/rocblas-config.cmake", &format!("# example rocblas-config.cmake ({family})\n"));
    a
}

/// A kpack-split device artifact `{name}_lib_{target_id}`: per-target kernels and data.
/// File names spell the target id with `-` for `:` (distinct per xnack variant), except
/// the `.kpack` archive, named after the artifact as the build does.
fn device_lib(name: &str, target_id: &str) -> ArtifactSpec {
    let (prefix, library_dir) = match name {
        "blas" => ("math-libs/BLAS/rocBLAS/stage", "lib/rocblas/library"),
        _ => ("math-libs/rocRAND/stage", "lib/rocrand/library"),
    };
    let file_id = target_id.replace(':', "-");
    let kernels_so = format!("lib{name}_kernels_{file_id}.so");
    let kernels = Elf::library(&kernels_so, &format!("{name} kernels {target_id}"))
        .calls("libamdhip64.so.7")
        .rpath(&["$ORIGIN/../.."], true);
    let artifact_name = format!("{name}_lib_{target_id}");
    let mut a = ArtifactSpec::new(&artifact_name, &[prefix]);
    a.library(library_dir, kernels)
        .text(&format!("{library_dir}/TensileLibrary_{file_id}.dat"), &format!("tensile data for {target_id}\n"))
        .text(&format!("{library_dir}/{file_id}.kdb"), &format!("kernel database for {target_id}\n"))
        .code_object(&format!("{library_dir}/Kernels_{file_id}.co"), target_id)
        .code_object(&format!("{library_dir}/extop_{file_id}.hsaco"), target_id)
        .bytes(&format!(".kpack/{artifact_name}.kpack"), empty_kpack_archive(&artifact_name, target_id));
    a
}

/// A real kpack archive (format version 1, as rocm-kpack writes it: `KPAK`, the version,
/// the table of contents' offset, zeros to 64, then the table as one MessagePack map) that
/// holds no code object: the example's libraries carry no device code, and a release gate
/// reads every archive it ships.
fn empty_kpack_archive(group: &str, target_id: &str) -> Vec<u8> {
    fn string(out: &mut Vec<u8>, text: &str) {
        match text.len() {
            // fixstr, str 8: the example's names are short.
            len @ 0..32 => out.push(0xa0 | len as u8),
            len => out.extend([0xd9, u8::try_from(len).unwrap_or(u8::MAX)]),
        }
        out.extend(text.as_bytes());
    }
    let mut archive = b"KPAK".to_vec();
    archive.extend(1u32.to_le_bytes());
    archive.extend(64u64.to_le_bytes());
    archive.resize(64, 0);
    archive.push(0x87);
    string(&mut archive, "format_version");
    archive.push(1);
    string(&mut archive, "group_name");
    string(&mut archive, group);
    string(&mut archive, "gfx_arch_family");
    string(&mut archive, target_id);
    string(&mut archive, "gfx_arches");
    archive.push(0x91);
    string(&mut archive, target_id);
    string(&mut archive, "toc");
    archive.push(0x80);
    string(&mut archive, "compression_scheme");
    string(&mut archive, "none");
    string(&mut archive, "blobs");
    archive.push(0x90);
    archive
}

/// A kpack-split device artifact whose kernels are in its `.kpack` archive only (see
/// [`OWNER_SHARED_TARGET_IDS`]): the archive, named after the artifact as the build names
/// it, and per-target data. The `gfx1250` one also holds [`DEEP_DEVICE_FILE`].
fn kpack_device_lib(name: &str, target_id: &str) -> ArtifactSpec {
    let artifact_name = format!("{name}_lib_{target_id}");
    let mut a = ArtifactSpec::new(&artifact_name, &["math-libs/BLAS/rocBLAS/stage"]);
    a.text(&format!("lib/rocblas/library/TensileLibrary_{target_id}.dat"), &format!("tensile data for {target_id}\n"))
        .bytes(&format!(".kpack/{artifact_name}.kpack"), empty_kpack_archive(&artifact_name, target_id));
    if target_id == "gfx1250" {
        a.text(DEEP_DEVICE_FILE, "a device file deep in the tree\n");
    }
    a
}
