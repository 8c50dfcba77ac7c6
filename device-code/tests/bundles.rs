//! Offload bundles read from real fat binaries and compared byte for byte with what LLVM's
//! own `clang-offload-bundler` extracts: shared objects, a PIE, a fixed-address executable
//! and a `-fgpu-rdc` build compiled by clang++-15 in the test, and Debian's rocRAND and
//! rocSPARSE libraries (rocSPARSE's 1.3 GB `.hip_fatbin` scanned in a child process whose
//! peak memory is measured).

mod support;

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use device_code::{elf_headers::ElfHeaders, fatbin_section, FatBinary, Fatbin};
use support::run;

/// A kernel and a host function launching it; the HIP runtime is only declared, as no
/// ROCm is installed.
const KERNEL: &str = r#"#define __global__ __attribute__((global))
typedef struct { unsigned x, y, z; } dim3_t;
extern "C" int hipLaunchKernel(const void* f, dim3_t g, dim3_t b, void** args, unsigned long shm, void* stream);
__global__ void NAME(float *x, float a) { x[0] *= a; }
extern "C" int run_NAME(float *x) { float a = 2.0f; void* args[] = {&x, &a}; dim3_t one = {1,1,1};
  return hipLaunchKernel((const void*)&NAME, one, one, args, 0, 0); }
"#;
/// The HIP runtime's registration entry points, empty, so executables link.
const STUB: &str = "int __hipRegisterFatBinary(void) { return 0; }\nvoid __hipRegisterFunction(void) {}\n\
    void __hipUnregisterFatBinary(void) {}\nint __hipPopCallConfiguration(void) { return 0; }\n\
    int hipLaunchKernel(void) { return 0; }\n";
const MAIN: &str = "extern \"C\" int run_scale(float *x);\nint main() { float x = 1; return run_scale(&x); }\n";
const HIP: [&str; 4] = ["-x", "hip", "-nogpulib", "-nogpuinc"];

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write source");
    path
}

fn kernel(dir: &Path, name: &str) -> PathBuf {
    write(dir, &format!("{name}.hip"), &KERNEL.replace("NAME", name))
}

fn clang() -> Command {
    Command::new("clang++-15")
}

fn archs(targets: &[&str]) -> Vec<String> {
    targets.iter().map(|target| format!("--offload-arch={target}")).collect()
}

/// Every code object of `binary` extracted by us and by `clang-offload-bundler-15` from the
/// section bytes `objcopy` dumps, bundle by bundle (the bundler reads only the first of
/// several bundles back to back); returns each bundle's offset and target ids.
fn compare_with_bundler(binary: &Path) -> Vec<(u64, Vec<String>)> {
    let work = tempfile::tempdir().expect("work dir");
    let file = File::open(binary).expect("open");
    let fat = FatBinary::read(&file, binary).expect("read bundles").expect("a .hip_fatbin");
    let dumped = work.path().join("section.bin");
    run(Command::new("objcopy")
        .arg(format!("--dump-section=.hip_fatbin={}", dumped.display()))
        .arg(binary)
        .arg(work.path().join("copy.o")));
    let section = std::fs::read(&dumped).expect("read the dumped section");
    assert_eq!(section.len() as u64, fat.section().size);
    let mut summary = Vec::new();
    for (index, bundle) in fat.bundles().iter().enumerate() {
        let start = bundle.offset_in_section as usize;
        let input = work.path().join(format!("bundle{index}.bin"));
        std::fs::write(&input, &section[start..start + bundle.len as usize]).expect("write the bundle");
        let listed = run(Command::new("clang-offload-bundler-15")
            .args(["--list", "--type=o"])
            .arg(format!("--input={}", input.display())));
        let listed: BTreeSet<String> = String::from_utf8_lossy(&listed.stdout)
            .lines()
            .filter(|id| !id.starts_with("host-"))
            .map(str::to_owned)
            .collect();
        let ours: BTreeSet<String> = bundle.entries.iter().map(|code_object| code_object.entry_id.clone()).collect();
        assert_eq!(ours, listed, "{} bundle {index}", binary.display());
        for code_object in &bundle.entries {
            assert_eq!(code_object.repeat, 0, "the bundler names no repeats");
            let mut extracted = Vec::new();
            assert_eq!(fat.copy_code_object(code_object, &mut extracted).expect("copy"), code_object.size);
            let output = work.path().join("bundler.co");
            run(Command::new("clang-offload-bundler-15")
                .args(["--unbundle", "--type=o"])
                .arg(format!("--input={}", input.display()))
                .arg(format!("--targets={}", code_object.entry_id))
                .arg(format!("--output={}", output.display())));
            let expected = std::fs::read(&output).expect("read what the bundler wrote");
            assert!(
                extracted == expected,
                "{} bundle {index} {}: our bytes differ",
                binary.display(),
                code_object.entry_id
            );
            assert!(extracted.starts_with(b"\x7fELF"), "a code object is an ELF file");
        }
        let targets = bundle.entries.iter().map(|code_object| code_object.target.to_string()).collect();
        summary.push((bundle.offset_in_section, targets));
    }
    summary
}

fn sorted(targets: &[String]) -> Vec<&str> {
    let mut targets: Vec<&str> = targets.iter().map(String::as_str).collect();
    targets.sort();
    targets
}

#[test]
fn shared_objects_extract_as_the_bundler_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scale = kernel(dir.path(), "scale");
    let shift = kernel(dir.path(), "shift");
    for (name, targets) in [("libk.so", ["gfx90a", "gfx1030"]), ("libx.so", ["gfx90a:xnack+", "gfx1030"])] {
        let library = dir.path().join(name);
        run(clang()
            .args(HIP)
            .args(archs(&targets))
            .args(["-fPIC", "-shared", "-fuse-ld=lld", "-o"])
            .arg(&library)
            .arg(&scale));
        let summary = compare_with_bundler(&library);
        assert_eq!(summary.len(), 1, "{name}");
        assert_eq!(summary[0].0, 0);
        let mut expected = targets.to_vec();
        expected.sort();
        assert_eq!(sorted(&summary[0].1), expected, "{name}");
    }
    // Two translation units without -fgpu-rdc: two bundles back to back, page-aligned.
    let library = dir.path().join("libtwo.so");
    run(clang()
        .args(HIP)
        .args(archs(&["gfx90a", "gfx1030"]))
        .args(["-fPIC", "-shared", "-fuse-ld=lld", "-o"])
        .arg(&library)
        .arg(&scale)
        .arg(&shift));
    let summary = compare_with_bundler(&library);
    assert_eq!(summary.len(), 2);
    assert!(summary[1].0 > 0 && summary[1].0 % 4096 == 0, "{summary:?}");
}

#[test]
fn executables_extract_as_the_bundler_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scale = kernel(dir.path(), "scale");
    let main = write(dir.path(), "main.hip", MAIN);
    let stub = write(dir.path(), "stub.c", STUB);
    for (name, flags) in [("pie", ["-fPIE", "-pie"]), ("fixed", ["-fno-pic", "-no-pie"])] {
        let program = dir.path().join(name);
        run(clang()
            .args(HIP)
            .args(archs(&["gfx90a", "gfx1030"]))
            .args(flags)
            .args(["-fuse-ld=lld", "-o"])
            .arg(&program)
            .arg(&scale)
            .arg(&main)
            .args(["-x", "c"])
            .arg(&stub));
        let headers = ElfHeaders::read(&File::open(&program).expect("open"), &program).expect("headers");
        assert_eq!(headers.header.kind, if name == "pie" { 3 } else { 2 }, "{name}");
        let Ok(Fatbin::Present(section)) = fatbin_section(&headers, &program) else { panic!("{name}: no .hip_fatbin") };
        if name == "fixed" {
            assert!(section.addr >= 0x20_0000, "{name} is linked at a fixed address: {section:?}");
        }
        let summary = compare_with_bundler(&program);
        assert_eq!(summary.len(), 1, "{name}");
        assert_eq!(sorted(&summary[0].1), ["gfx1030", "gfx90a"], "{name}");
    }
}

#[test]
fn an_rdc_build_extracts_as_the_bundler_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut objects = Vec::new();
    for name in ["scale", "shift"] {
        let object = dir.path().join(format!("{name}.o"));
        run(clang()
            .args(HIP)
            .args(archs(&["gfx90a", "gfx1030"]))
            .args(["-fgpu-rdc", "-fPIC", "-c", "-o"])
            .arg(&object)
            .arg(kernel(dir.path(), name)));
        objects.push(object);
    }
    let library = dir.path().join("librdc.so");
    // `-B` makes clang++-15 link device code with LLVM 15's lld (a `/usr/bin/lld` of another
    // version cannot read its bitcode); `-no-hip-rt` leaves out libamdhip64, not installed.
    run(clang()
        .args([
            "--hip-link",
            "-fgpu-rdc",
            "-nogpulib",
            "-no-hip-rt",
            "-fuse-ld=lld",
            "-B/usr/lib/llvm-15/bin",
            "-shared",
        ])
        .args(archs(&["gfx90a", "gfx1030"]))
        .arg("-o")
        .arg(&library)
        .args(&objects));
    let summary = compare_with_bundler(&library);
    assert_eq!(summary.len(), 1, "one device link, one bundle: {summary:?}");
    assert_eq!(sorted(&summary[0].1), ["gfx1030", "gfx90a"]);
}

#[test]
fn debian_rocrand_extracts_as_the_bundler_does() {
    let library = support::debian_rocm_library("librocrand.so.1.1");
    let summary = compare_with_bundler(&library);
    assert_eq!(summary.len(), 1);
    let targets = sorted(&summary[0].1);
    assert_eq!(
        targets,
        ["gfx1030", "gfx803", "gfx900:xnack-", "gfx906:xnack-", "gfx908:xnack-", "gfx90a:xnack+", "gfx90a:xnack-"]
    );
    let processors: BTreeSet<&str> = targets.iter().map(|target| target.split(':').next().unwrap_or(target)).collect();
    assert_eq!(processors.len(), 6, "{processors:?}");
}

/// Set on the child that scans rocSPARSE, so its peak memory is its own.
const SCAN_CHILD: &str = "DEVICE_CODE_TEST_SCAN";

/// rocSPARSE's 1.3 GB of device code in 111 bundles: every code object streamed through in
/// a child process (this test run again), whose peak resident memory stays far below the
/// section's size.
#[test]
fn debian_rocsparse_streams_in_bounded_memory() {
    if let Some(path) = std::env::var_os(SCAN_CHILD) {
        let path = PathBuf::from(path);
        let file = File::open(&path).expect("open");
        let fat = FatBinary::read(&file, &path).expect("read bundles").expect("a .hip_fatbin");
        let (mut code_objects, mut bytes) = (0u64, 0u64);
        for bundle in fat.bundles() {
            for code_object in &bundle.entries {
                bytes += fat.copy_code_object(code_object, &mut std::io::sink()).expect("copy");
                code_objects += 1;
            }
        }
        let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
        let peak = status.lines().find(|line| line.starts_with("VmHWM:")).expect("VmHWM");
        println!(
            "scan: {} bundles {code_objects} code objects {bytes} bytes {} section",
            fat.bundles().len(),
            fat.section().size
        );
        println!("scan: {peak}");
        return;
    }
    let library = support::debian_rocm_library("librocsparse.so.0.1");
    let output = run(Command::new(std::env::current_exe().expect("this test's path"))
        .args(["--exact", "debian_rocsparse_streams_in_bounded_memory", "--nocapture", "--test-threads=1"])
        .env(SCAN_CHILD, &library));
    let stdout = String::from_utf8_lossy(&output.stdout);
    // libtest prints the test's name on the line the child's first line continues.
    let reported = |what: &str| {
        stdout
            .lines()
            .find_map(|line| line.split_once("scan: ").map(|(_, rest)| rest).filter(|rest| rest.contains(what)))
            .unwrap_or_else(|| panic!("no {what} line from the child:\n{stdout}"))
    };
    let scan = reported("bundles");
    let numbers: Vec<u64> = scan.split_whitespace().filter_map(|word| word.parse().ok()).collect();
    let [bundles, code_objects, bytes, section] = numbers[..] else { panic!("{scan}") };
    assert_eq!(bundles, 111, "{scan}");
    assert!(code_objects >= 111 && bytes > 1_000_000_000 && bytes < section, "{scan}");
    let peak = reported("VmHWM:").trim_start_matches("VmHWM:");
    let peak_kib: u64 = peak.trim().trim_end_matches("kB").trim().parse().expect("VmHWM in kB");
    assert!(peak_kib < 64 << 10, "reading {bytes} bytes of code objects peaked at {peak_kib} KiB");
}

/// A file without `.hip_fatbin` and one whose `.hip_fatbin` is `SHT_NOBITS` (as a kpack
/// split leaves it) have no bundles to read, and say which of the two they are.
#[test]
fn files_without_device_code_bytes_read_as_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plain = dir.path().join("libplain.so");
    run(clang().args(["-x", "c", "-fPIC", "-shared", "-fuse-ld=lld", "-o"]).arg(&plain).arg(write(
        dir.path(),
        "plain.c",
        "int answer(void) { return 42; }\n",
    )));
    let file = File::open(&plain).expect("open");
    assert_eq!(
        fatbin_section(&ElfHeaders::read(&file, &plain).expect("headers"), &plain).expect("reads"),
        Fatbin::Absent
    );
    assert!(FatBinary::read(&file, &plain).expect("reads").is_none());

    let library = dir.path().join("libk.so");
    run(clang()
        .args(HIP)
        .args(archs(&["gfx1030"]))
        .args(["-fPIC", "-shared", "-fuse-ld=lld", "-o"])
        .arg(&library)
        .arg(kernel(dir.path(), "scale")));
    let headers = ElfHeaders::read(&File::open(&library).expect("open"), &library).expect("headers");
    let Ok(Fatbin::Present(section)) = fatbin_section(&headers, &library) else { panic!("no .hip_fatbin") };
    let index = headers.sections.iter().position(|section| section.name == b".hip_fatbin").expect("index");
    let mut bytes = std::fs::read(&library).expect("read");
    let sh_type = headers.header.shoff as usize + index * 64 + 4;
    bytes[sh_type..sh_type + 4].copy_from_slice(&8u32.to_le_bytes());
    let split = dir.path().join("libsplit.so");
    std::fs::write(&split, &bytes).expect("write");
    let file = File::open(&split).expect("open");
    let state = fatbin_section(&ElfHeaders::read(&file, &split).expect("headers"), &split).expect("reads");
    assert_eq!(state, Fatbin::Split { addr: section.addr, size: section.size });
    assert!(FatBinary::read(&file, &split).expect("reads").is_none());
}
