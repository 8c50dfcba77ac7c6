//! `cargo xtask elf --show-device` and `--unbundle DIR` as a user runs them (SPEC §12): a
//! fat shared library of two translation units compiled by LLVM 15's clang for two
//! targets, listed (its wrappers, both bundles, each entry with its size) and unbundled,
//! every code object equal to what `clang-offload-bundler` extracts from the same bundle;
//! a file with no device code says so; a file that is no ELF fails by name with exit 2.

use std::path::Path;
use std::process::Command;

mod common;
use common::{output, run, xtask};

const KERNEL: &str = "#define __global__ __attribute__((global))\n\
    typedef struct { unsigned x, y, z; } dim3_t;\n\
    extern \"C\" int hipLaunchKernel(const void *f, dim3_t g, dim3_t b, void **a, unsigned long s, void *t);\n\
    __global__ void KERNEL_NAME(float *x) { x[0] *= 2.0f; }\n\
    extern \"C\" int run_KERNEL_NAME(float *x) { void *args[] = {&x}; dim3_t one = {1, 1, 1};\n\
      return hipLaunchKernel((const void *)&KERNEL_NAME, one, one, args, 0, 0); }\n";

const ARCHS: [&str; 2] = ["gfx90a", "gfx1030"];

/// `libfat.so` of two translation units (two bundles), undefined HIP symbols allowed.
fn fat_library(dir: &Path) -> std::path::PathBuf {
    for name in ["first", "second"] {
        fs_err::write(dir.join(format!("{name}.hip")), KERNEL.replace("KERNEL_NAME", name)).expect("write source");
    }
    let library = dir.join("libfat.so");
    let mut clang = Command::new("clang++-15");
    clang.current_dir(dir).args(["-x", "hip", "-nogpulib", "-nogpuinc", "-fuse-ld=lld", "-fPIC", "-shared"]);
    for arch in ARCHS {
        clang.arg(format!("--offload-arch={arch}"));
    }
    run(clang.args(["first.hip", "second.hip", "-Wl,--allow-shlib-undefined", "-o"]).arg(&library));
    library
}

#[test]
fn show_device_lists_and_unbundle_writes_what_the_bundler_extracts() {
    let temp = tempfile::tempdir().expect("temp dir");
    let library = fat_library(temp.path());
    let shown = run(xtask(temp.path()).args(["elf", "--show-device"]).arg(&library));
    let text = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(text.contains("libfat.so: fat, 2 fat-binary wrappers"), "{text}");
    assert_eq!(text.matches("  bundle ").count(), 2, "{text}");
    for arch in ARCHS {
        assert_eq!(text.matches(&format!("hipv4-amdgcn-amd-amdhsa--{arch} ")).count(), 2, "{text}");
    }
    let out = temp.path().join("code");
    run(xtask(temp.path()).args(["elf", "--unbundle"]).arg(&out).arg(&library));
    // The bundler reads the first bundle of its input: hand it each bundle on its own.
    let section = temp.path().join("fatbin");
    run(Command::new("objcopy")
        .arg("--dump-section")
        .arg(format!(".hip_fatbin={}", section.display()))
        .arg(&library)
        .arg(temp.path().join("copy")));
    let bytes = fs_err::read(&section).expect("read the section");
    let magic = b"__CLANG_OFFLOAD_BUNDLE__";
    let starts: Vec<usize> =
        (0..bytes.len().saturating_sub(magic.len())).filter(|&at| &bytes[at..at + magic.len()] == magic).collect();
    assert_eq!(starts.len(), 2);
    for (index, start) in starts.iter().enumerate() {
        let end = starts.get(index + 1).copied().unwrap_or(bytes.len());
        let slice = temp.path().join(format!("bundle-{index}"));
        fs_err::write(&slice, &bytes[*start..end]).expect("write a bundle");
        for arch in ARCHS {
            let reference = temp.path().join(format!("reference-{index}-{arch}"));
            run(Command::new("clang-offload-bundler-15")
                .args(["--type=o", "--unbundle"])
                .arg(format!("--input={}", slice.display()))
                .arg(format!("--targets=hipv4-amdgcn-amd-amdhsa--{arch}"))
                .arg(format!("--output={}", reference.display())));
            let ours = out.join(format!("{index}-hipv4-amdgcn-amd-amdhsa--{arch}.hsaco"));
            assert_eq!(
                fs_err::read(&ours).expect("ours"),
                fs_err::read(&reference).expect("the bundler's"),
                "{arch} of bundle {index}"
            );
        }
    }
}

#[test]
fn a_file_without_device_code_says_so_and_a_non_elf_fails_by_name() {
    let temp = tempfile::tempdir().expect("temp dir");
    let plain = temp.path().join("libplain.so");
    fs_err::write(temp.path().join("plain.c"), "int plain(void) { return 1; }\n").expect("write");
    run(Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&plain).arg(temp.path().join("plain.c")));
    let shown = run(xtask(temp.path()).args(["elf", "--show-device"]).arg(&plain));
    assert!(String::from_utf8_lossy(&shown.stdout).contains("libplain.so: no device code, 0 fat-binary wrappers"));
    let text = temp.path().join("notes.txt");
    fs_err::write(&text, "not an ELF file\n").expect("write");
    let failed = output(xtask(temp.path()).args(["elf", "--show-device"]).arg(&text));
    assert_eq!(failed.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("notes.txt") && stderr.contains("hint:"), "{stderr}");
}
