//! Artifacts that complete the example so every entry of the runtime's library table
//! (SPEC §4) and every console script has a real file behind it: `rocm-sdk test` on the
//! installed example then checks each one for real.

use super::spec::{ArtifactSpec, Elf};

/// A library that needs the HIP runtime, so it loads only through the packaged RPATH.
fn hip_library(soname: &str, text: &str) -> Elf {
    Elf::library(soname, text).calls("libamdhip64.so.7").rpath(&["$ORIGIN"], true)
}

/// Core artifacts holding the remaining core libraries and tools.
pub(super) fn core_table_artifacts() -> Vec<ArtifactSpec> {
    let mut amdsmi = ArtifactSpec::new("core-amdsmi_lib_generic", &["core/amdsmi/stage"]);
    amdsmi
        .library("lib", Elf::library("libamd_smi.so.26", "amd_smi"))
        .link("lib/libamd_smi.so", "libamd_smi.so.26")
        .library("lib", Elf::library("librocm_smi64.so.7", "rocm_smi64"))
        .link("lib/librocm_smi64.so", "librocm_smi64.so.7");
    let mut kpack = ArtifactSpec::new("core-kpack_lib_generic", &["core/kpack/stage"]);
    kpack.library("lib", Elf::library("librocm_kpack.so.1", "rocm_kpack"));
    let mut rocdecode = ArtifactSpec::new("rocdecode_lib_generic", &["media/rocDecode/stage"]);
    rocdecode.library("lib", hip_library("librocdecode.so.1", "rocdecode"));
    let mut rocjpeg = ArtifactSpec::new("rocjpeg_lib_generic", &["media/rocJPEG/stage"]);
    rocjpeg.library("lib", hip_library("librocjpeg.so.1", "rocjpeg"));
    let mut hipfile = ArtifactSpec::new("hipfile_lib_generic", &["core/hipFile/stage"]);
    hipfile.library("lib", hip_library("libhipfile.so.0", "hipfile"));
    let mut hipify = ArtifactSpec::new("hipify_run_generic", &["compiler/hipify/stage"]);
    hipify
        .elf("bin/hipify-clang", Elf::program("hipify-clang"))
        .script("bin/hipify-perl", "#!/usr/bin/env perl\nprint \"example:hipify-perl @ARGV\\n\";\n");
    let mut rocgdb = ArtifactSpec::new("rocgdb_run_generic", &["debug-tools/rocgdb/stage"]);
    rocgdb.elf("bin/rocgdb", Elf::program("rocgdb"));
    let mut rocpd = ArtifactSpec::new("rocprofiler-sdk_run_generic", &["profiler/rocprofiler-sdk/stage"]);
    for tool in
        ["rocprofv3-attach", "rocprofv3-avail", "rocpd", "rocpd2csv", "rocpd2otf2", "rocpd2pftrace", "rocpd2summary"]
    {
        rocpd.script(&format!("bin/{tool}"), &format!("#!/bin/sh\necho \"example:{tool} $*\"\n"));
    }
    vec![amdsmi, kpack, rocdecode, rocjpeg, hipfile, hipify, rocgdb, rocpd]
}

/// Libraries-package artifacts of one family (or `generic`) beyond blas and rand.
pub(super) fn libraries_table_artifacts(family: &str) -> Vec<ArtifactSpec> {
    let specs: [(&str, &str, &str, &str); 5] = [
        ("fft", "math-libs/hipFFT/stage", "libhipfft.so.0", "hipfft"),
        ("rccl", "comm-libs/rccl/stage", "librccl.so.1", "rccl"),
        ("miopen", "ml-libs/MIOpen/stage", "libMIOpen.so.1", "miopen"),
        ("hipdnn", "ml-libs/hipDNN/stage", "libhipdnn_backend.so.1", "hipdnn"),
        ("rpp", "ml-libs/rpp/stage", "librpp.so.2", "rpp"),
    ];
    specs
        .into_iter()
        .map(|(name, prefix, soname, text)| {
            let mut artifact = ArtifactSpec::new(&format!("{name}_lib_{family}"), &[prefix]);
            artifact.library("lib", hip_library(soname, &format!("{text} {family}")));
            artifact
        })
        .collect()
}
