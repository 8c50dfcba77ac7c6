//! `verify --dist` on sets split into host and device wheels (SPEC §12): a correct split
//! passes and is counted; each test then breaks one thing and sees exactly its violations.
//!
//! Everything is real and built here: code objects compiled by Debian's `clang++-15` for
//! gfx90a, gfx90a:xnack+ and gfx1030; `.kpack` archives written by an independent Python
//! writer (`msgpack`, `zstandard`) from the documented format; host binaries compiled by
//! `cc` whose `.hipFatBinSegment` wrappers point at a `.rocm_kpack_ref` marker through a
//! real `R_X86_64_RELATIVE` relocation (a shared object) or in place (an executable).

use std::io::Write;
use std::path::{Path, PathBuf};

use release_gate::{verify_dist, Check, VerifyReport};

use super::{entry, fixture, record, sbom, Entry, Fixture, Wheel, TAG, VERSION};
use crate::support;

const HOST: &str = "torch-1.0-py3-none-linux_x86_64.whl";
const GFX90A: &str = "amd_torch_device_gfx90a-1.0-py3-none-linux_x86_64.whl";
const GFX1030: &str = "amd_torch_device_gfx1030-1.0-py3-none-linux_x86_64.whl";
const LIB: &str = "torch/lib/libk.so";
const TOOL: &str = "torch/bin/tool";
const SEARCH_PATH: &str = "../.kpack/torch_@GFXARCH@.kpack";

/// A kpack archive as rocm-kpack's `PackedKernelArchive.write` lays it out, written by a
/// reader of the format, not of our code: header, zero padding to 64, the blob, the table.
const PYTHON_WRITER: &str = r#"
import json, sys, msgpack, zstandard
spec = json.load(open(sys.argv[1]))
objects = [open(path, "rb").read() for (_, _, path) in spec["kernels"]]
out = bytearray(b"KPAK" + (1).to_bytes(4, "little") + bytes(8))
out += bytes(64 - len(out))
toc = {}
for ordinal, (key, arch, _) in enumerate(spec["kernels"]):
    toc.setdefault(key, {})[arch] = {"type": "hsaco", "ordinal": ordinal, "original_size": len(objects[ordinal])}
fields = {"format_version": 1, "group_name": "torch", "gfx_arch_family": spec["arches"][0],
          "gfx_arches": spec["arches"], "toc": toc}
if spec["zstd"]:
    compressor = zstandard.ZstdCompressor(level=3)
    blob = bytearray(len(objects).to_bytes(4, "little"))
    for code in objects:
        frame = compressor.compress(code)
        blob += len(frame).to_bytes(4, "little") + frame
    fields.update(compression_scheme="zstd-per-kernel", zstd_offset=64, zstd_size=len(blob))
    out += blob
else:
    blobs = []
    for code in objects:
        blobs.append({"offset": len(out), "size": len(code)})
        out += code
    fields.update(compression_scheme="none", blobs=blobs)
toc_offset = len(out)
out += msgpack.packb(fields, use_bin_type=True)
out[8:16] = toc_offset.to_bytes(8, "little")
open(spec["out"], "wb").write(out)
"#;

const KERNEL_HIP: &str = "#define __global__ __attribute__((global))\n\
    __global__ void scale(float *x, float a) { x[0] *= a; }\n";

/// A code object for `target`, compiled by clang; checked to be an AMDGPU ELF file whose
/// `e_flags` name the processor (`mach`) and xnack setting (`xnack`, the V4 bits).
fn code_object(build: &Path, target: &str, mach: u32, xnack: u32) -> PathBuf {
    let source = build.join("k.hip");
    fs_err::write(&source, KERNEL_HIP).expect("write k.hip");
    let out = build.join(format!("k-{}.o", target.replace(':', "-")));
    support::run(
        support::tool("clang++-15")
            .args(["-x", "hip", "-nogpulib", "-nogpuinc", "--cuda-device-only", "--no-gpu-bundle-output", "-c"])
            .arg(format!("--offload-arch={target}"))
            .arg("-o")
            .arg(&out)
            .arg(&source),
    );
    let bytes = fs_err::read(&out).expect("read the code object");
    assert_eq!(&bytes[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 224, "EM_AMDGPU");
    let flags = u32::from_le_bytes(bytes[48..52].try_into().expect("4 bytes"));
    assert_eq!((flags & 0xff, flags & 0x300), (mach, xnack), "{target}: e_flags {flags:#x}");
    out
}

/// Runs the Python writer: `kernels` are (binary key, target, code object) in ordinal order.
fn write_archive(out: &Path, arches: &[&str], kernels: &[(&str, &str, &Path)], zstd: bool) {
    let spec = serde_json::json!({
        "out": out,
        "arches": arches,
        "zstd": zstd,
        "kernels": kernels.iter().map(|(key, arch, path)| serde_json::json!([key, arch, path])).collect::<Vec<_>>(),
    });
    let dir = out.parent().expect("archive dir");
    let spec_path = dir.join("spec.json");
    fs_err::write(&spec_path, spec.to_string()).expect("write spec");
    let writer = dir.join("write_kpack.py");
    fs_err::write(&writer, PYTHON_WRITER).expect("write the writer");
    support::run(std::process::Command::new(support::tools_venv().join("bin/python")).arg(&writer).arg(&spec_path));
}

/// MessagePack of the marker `{kpack_search_paths: [path], kernel_name: name}`, as C bytes.
fn marker_bytes(path: &str, name: &str) -> String {
    let mut bytes = vec![0x82];
    let text = |out: &mut Vec<u8>, value: &str| {
        out.extend_from_slice(&[0xd9, value.len() as u8]);
        out.extend_from_slice(value.as_bytes());
    };
    text(&mut bytes, "kpack_search_paths");
    bytes.push(0x91);
    text(&mut bytes, path);
    text(&mut bytes, "kernel_name");
    text(&mut bytes, name);
    bytes.iter().map(|byte| format!("{byte:#04x}")).collect::<Vec<_>>().join(", ")
}

/// C for a host binary: `magics` are the wrappers' magic numbers, in order, each pointing
/// at the marker (or at a `.hip_fatbin` section of file bytes when `fatbin`).
fn host_source(name: &str, magics: &[u32], fatbin: bool, main: bool) -> String {
    let target = if fatbin { "fatbin" } else { "marker" };
    let wrappers: Vec<String> =
        magics.iter().enumerate().map(|(index, magic)| format!("{{ {magic:#x}u, 1, {target}, {index} }}")).collect();
    let fatbin_section = if fatbin {
        "static const unsigned char fatbin[4096] __attribute__((section(\".hip_fatbin\"), used)) = \"__CLANG_OFFLOAD_BUNDLE__\";\n"
    } else {
        ""
    };
    let entry_point = if main { "int main(void)" } else { "int run(void)" };
    format!(
        "#include <stdint.h>\n\
         struct wrapper {{ uint32_t magic, version; const void *binary; uint64_t reserved; }};\n\
         static const unsigned char marker[] __attribute__((section(\".rocm_kpack_ref\"), used)) = {{ {} }};\n\
         {fatbin_section}\
         struct wrapper wrappers[{}] __attribute__((section(\".hipFatBinSegment\"), used)) = {{ {} }};\n\
         {entry_point} {{ return (int)wrappers[0].version; }}\n",
        marker_bytes(SEARCH_PATH, name),
        magics.len(),
        wrappers.join(", ")
    )
}

const HIPK: u32 = 0x4B50_4948;
const HIPF: u32 = 0x4849_5046;

/// What the tests build once per fixture: the code objects and the host binaries.
struct Parts {
    gfx90a: PathBuf,
    gfx90a_xnack: PathBuf,
    gfx1030: PathBuf,
    lib: Vec<u8>,
    tool: Vec<u8>,
    fat_lib: Vec<u8>,
}

fn parts(build: &Path) -> Parts {
    let lib = support::shared_lib(build, "libk.so", &host_source("lib/libk.so", &[HIPK, HIPK], false, false), &[]);
    let tool = build.join("tool");
    support::compile(build, "tool", &host_source("bin/tool", &[HIPK], false, true), &["-no-pie", "-fno-pic"], &tool);
    let fat_lib = support::shared_lib(build, "libfat.so", &host_source("lib/libfat.so", &[HIPF], true, false), &[]);
    Parts {
        gfx90a: code_object(build, "gfx90a", 0x3f, 0x100),
        gfx90a_xnack: code_object(build, "gfx90a:xnack+", 0x3f, 0x300),
        gfx1030: code_object(build, "gfx1030", 0x36, 0),
        lib: fs_err::read(lib).expect("read libk.so"),
        tool: fs_err::read(tool).expect("read tool"),
        fat_lib: fs_err::read(fat_lib).expect("read libfat.so"),
    }
}

/// A wheel whose METADATA carries `headers` lines (`Requires-Dist: …`, `Provides-Extra: …`).
fn wheel_with(dist_name: &str, files: Vec<Entry>, headers: &[String]) -> Wheel {
    let dist_info = format!("{dist_name}-{VERSION}.dist-info");
    let mut metadata = format!("Metadata-Version: 2.1\nName: {}\nVersion: {VERSION}\n", dist_name.replace('_', "-"));
    for header in headers {
        metadata.push_str(header);
        metadata.push('\n');
    }
    let wheel_text = format!("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {TAG}\n");
    let mut entries = files;
    entries.push(entry(&format!("{dist_info}/METADATA"), metadata, 0o644));
    entries.push(entry(&format!("{dist_info}/WHEEL"), wheel_text, 0o644));
    let file = format!("{dist_name}-{VERSION}-{TAG}.whl");
    entries.push(sbom(&dist_info, &file, &entries));
    entries.push(record(&dist_info, &entries));
    Wheel { file, entries }
}

/// How the split set is broken, one thing at a time.
#[derive(Default)]
struct Breaks {
    /// The gfx1030 archive lacks `lib/libk.so#1`.
    missing_key: bool,
    /// The gfx1030 device wheel requires `torch` without a version.
    unpinned: bool,
    /// The gfx90a archive files the gfx1030 code object as `lib/libk.so#1`.
    wrong_target: bool,
    /// The host wheel also carries a fat library (`HIPF`, `.hip_fatbin` bytes).
    fat_library: bool,
    /// The host offers no `device-gfx1030` extra.
    no_extra: bool,
    /// The gfx1030 archive is cut short.
    truncated: bool,
    /// The gfx1030 device wheel also carries a copy of the gfx90a archive.
    duplicated: bool,
}

/// The split set: torch (libk.so with two wrappers, an executable with one), a gfx90a
/// device wheel (a bare archive, zstd, and an xnack+ overlay with `#0` only) and a gfx1030
/// device wheel (an archive without compression).
fn split_set(fixture: &Fixture, parts: &Parts, breaks: &Breaks) -> Vec<Wheel> {
    let dir = fixture.build.join("kpack");
    fs_err::create_dir_all(&dir).expect("create the archive dir");
    let archive = |name: &str, arches: &[&str], kernels: &[(&str, &str, &Path)], zstd: bool| {
        let path = dir.join(name);
        write_archive(&path, arches, kernels, zstd);
        fs_err::read(&path).expect("read archive")
    };
    let second_90a: &Path = if breaks.wrong_target { &parts.gfx1030 } else { &parts.gfx90a };
    let gfx90a = archive(
        "torch_gfx90a.kpack",
        &["gfx90a"],
        &[
            ("lib/libk.so#0", "gfx90a", &parts.gfx90a),
            ("lib/libk.so#1", "gfx90a", second_90a),
            ("bin/tool#0", "gfx90a", &parts.gfx90a),
        ],
        true,
    );
    let xnack = archive(
        "torch_gfx90a_xnack.kpack",
        &["gfx90a:xnack+"],
        &[("lib/libk.so#0", "gfx90a:xnack+", &parts.gfx90a_xnack)],
        true,
    );
    let mut kernels_1030: Vec<(&str, &str, &Path)> =
        vec![("lib/libk.so#0", "gfx1030", &parts.gfx1030), ("bin/tool#0", "gfx1030", &parts.gfx1030)];
    if !breaks.missing_key {
        kernels_1030.push(("lib/libk.so#1", "gfx1030", &parts.gfx1030));
    }
    let mut gfx1030 = archive("torch_gfx1030.kpack", &["gfx1030"], &kernels_1030, false);
    if breaks.truncated {
        gfx1030.truncate(gfx1030.len() - 10);
    }
    let mut files_1030 = vec![entry("torch/.kpack/torch_gfx1030.kpack", gfx1030, 0o644)];
    if breaks.duplicated {
        files_1030.push(entry("torch/.kpack/torch_gfx90a_copy.kpack", gfx90a.clone(), 0o644));
    }
    let mut host_files = vec![
        entry("torch/__init__.py", "", 0o644),
        entry(LIB, parts.lib.clone(), 0o755),
        entry(TOOL, parts.tool.clone(), 0o755),
    ];
    if breaks.fat_library {
        host_files.push(entry("torch/lib/libfat.so", parts.fat_lib.clone(), 0o755));
    }
    let mut host_headers = Vec::new();
    for target in ["gfx90a", "gfx1030"] {
        if breaks.no_extra && target == "gfx1030" {
            continue;
        }
        host_headers.push(format!("Provides-Extra: device-{target}"));
        host_headers.push(format!("Requires-Dist: amd-torch-device-{target}=={VERSION}; extra == \"device-{target}\""));
    }
    host_headers.push("Provides-Extra: device-all".to_owned());
    for target in ["gfx90a", "gfx1030"] {
        host_headers.push(format!("Requires-Dist: amd-torch-device-{target}=={VERSION}; extra == \"device-all\""));
    }
    let pin = |unpinned: bool| {
        vec![if unpinned { "Requires-Dist: torch".to_owned() } else { format!("Requires-Dist: torch=={VERSION}") }]
    };
    vec![
        wheel_with("torch", host_files, &host_headers),
        wheel_with(
            "amd_torch_device_gfx90a",
            vec![
                entry("torch/.kpack/torch_gfx90a.kpack", gfx90a, 0o644),
                entry("torch/.kpack/torch_gfx90a:xnack+.kpack", xnack, 0o644),
            ],
            &pin(false),
        ),
        wheel_with("amd_torch_device_gfx1030", files_1030, &pin(breaks.unpinned)),
    ]
}

/// Writes the wheels, `.kpack` members stored (as the splitter writes them, so the gate
/// reads them by seeking) and the rest deflated, and verifies.
fn verify_split(fixture: &Fixture, wheels: &[Wheel]) -> VerifyReport {
    fs_err::create_dir_all(&fixture.dist).expect("create dist");
    for wheel in wheels {
        let file = fs_err::File::create(fixture.dist.join(&wheel.file)).expect("create wheel");
        let mut zip = zip::ZipWriter::new(file);
        for member in &wheel.entries {
            let method = if member.name.ends_with(".kpack") {
                zip::CompressionMethod::Stored
            } else {
                zip::CompressionMethod::Deflated
            };
            let options =
                zip::write::SimpleFileOptions::default().compression_method(method).unix_permissions(member.mode);
            zip.start_file(member.name.as_str(), options).expect("start member");
            zip.write_all(&member.bytes).expect("write member");
        }
        zip.finish().expect("finish wheel");
    }
    verify_dist(&fixture.dist).expect("dist is readable")
}

/// (file, member path, check, message) of every violation.
fn found(report: &VerifyReport) -> Vec<(String, Option<String>, Check, String)> {
    report
        .violations()
        .map(|finding| (finding.file.clone(), finding.path.clone(), finding.check, finding.message.clone()))
        .collect()
}

fn run_broken(breaks: Breaks) -> Vec<(String, Option<String>, Check, String)> {
    let fixture = fixture();
    let parts = parts(&fixture.build);
    found(&verify_split(&fixture, &split_set(&fixture, &parts, &breaks)))
}

#[test]
fn a_correct_split_set_passes_and_is_counted() {
    let fixture = fixture();
    let parts = parts(&fixture.build);
    let report = verify_split(&fixture, &split_set(&fixture, &parts, &Breaks::default()));
    assert_eq!(found(&report), [], "{report:#?}");
    let counts = |file: &str| {
        let package = report.packages.iter().find(|package| package.file == file).expect("package");
        let counts = &package.device_code;
        (counts.kpack_archives, counts.kpack_code_objects, counts.hipk_wrappers)
    };
    assert_eq!(counts(HOST), (0, 0, 3));
    assert_eq!(counts(GFX90A), (2, 4, 0));
    assert_eq!(counts(GFX1030), (1, 3, 0));
}

#[test]
fn a_key_missing_from_the_archive_is_a_miss_naming_the_paths_tried() {
    let found = run_broken(Breaks { missing_key: true, ..Breaks::default() });
    assert_eq!(
        found,
        [(
            HOST.to_owned(),
            Some(LIB.to_owned()),
            Check::DeviceCode,
            "wrapper 1 (`lib/libk.so#1`) finds no code object for gfx1030: tried `torch/.kpack/torch_gfx1030.kpack`, \
             `torch/.kpack/torch_gfx10-3-generic.kpack`"
                .to_owned()
        )]
    );
}

#[test]
fn a_device_wheel_without_its_host_pinned() {
    let found = run_broken(Breaks { unpinned: true, ..Breaks::default() });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].0.as_str(), found[0].1.as_deref(), found[0].2), (GFX1030, None, Check::DeviceCode));
    assert!(found[0].3.contains("`Requires-Dist: torch` does not pin its host"), "{found:#?}");
}

#[test]
fn a_code_object_filed_under_another_target() {
    let found = run_broken(Breaks { wrong_target: true, ..Breaks::default() });
    let messages: Vec<(&str, Option<&str>, Check, &str)> = found
        .iter()
        .map(|(file, path, check, message)| (file.as_str(), path.as_deref(), *check, message.as_str()))
        .collect();
    assert_eq!(messages.len(), 3, "{found:#?}");
    assert_eq!(
        messages[0],
        (
            GFX90A,
            Some("torch/.kpack/torch_gfx90a.kpack"),
            Check::Kpack,
            "the code object of `lib/libk.so#1` for gfx90a (ordinal 1) is built for gfx1030 (e_flags 0x36), not gfx90a"
        )
    );
    // The runtime would not find it for a gfx90a device, with xnack on or off.
    assert_eq!(
        messages[1].3,
        "wrapper 1 (`lib/libk.so#1`) finds no code object for gfx90a:xnack+: tried \
         `torch/.kpack/torch_gfx90a:xnack+.kpack`, `torch/.kpack/torch_gfx90a.kpack`"
    );
    assert_eq!(
        messages[2].3,
        "wrapper 1 (`lib/libk.so#1`) finds no code object for gfx90a:xnack-: tried \
         `torch/.kpack/torch_gfx90a:xnack-.kpack`, `torch/.kpack/torch_gfx90a.kpack`"
    );
}

#[test]
fn a_code_object_in_two_device_wheels() {
    let found = run_broken(Breaks { duplicated: true, ..Breaks::default() });
    let messages: Vec<(&str, &str)> =
        found.iter().map(|(file, _, _, message)| (file.as_str(), message.as_str())).collect();
    assert_eq!(
        messages,
        [
            (
                GFX90A,
                "holds 3 code objects amd_torch_device_gfx1030-1.0-py3-none-linux_x86_64.whl holds too (`bin/tool#0` \
                 first): every code object belongs to exactly one device wheel"
            ),
            (
                HOST,
                "offers no extra `device-gfx90a` installing amd-torch-device-gfx1030 1.0: it needs `Provides-Extra: \
                 device-gfx90a` and `Requires-Dist: amd-torch-device-gfx1030 == 1.0; extra == \"device-gfx90a\"`"
            ),
        ]
    );
}

#[test]
fn fat_code_left_in_the_host_wheel() {
    let found = run_broken(Breaks { fat_library: true, ..Breaks::default() });
    let messages: Vec<&str> = found.iter().map(|(_, _, _, message)| message.as_str()).collect();
    assert!(found.iter().all(|(file, path, check, _)| file == HOST
        && path.as_deref() == Some("torch/lib/libfat.so")
        && *check == Check::DeviceCode));
    assert_eq!(
        messages,
        [
            "keeps 4096 bytes of `.hip_fatbin` in the file; a split binary's `.hip_fatbin` is SHT_NOBITS",
            "still has 1 HIPF wrappers (device code in the file) in a wheel of a split set",
        ]
    );
}

#[test]
fn a_host_without_the_extra() {
    let found = run_broken(Breaks { no_extra: true, ..Breaks::default() });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].0.as_str(), found[0].2), (HOST, Check::DeviceCode));
    assert!(
        found[0].3.starts_with("offers no extra `device-gfx1030` installing amd-torch-device-gfx1030 1.0"),
        "{found:#?}"
    );
}

#[test]
fn a_truncated_archive_names_the_archive() {
    let found = run_broken(Breaks { truncated: true, ..Breaks::default() });
    let kpack: Vec<_> = found.iter().filter(|(_, _, check, _)| *check == Check::Kpack).collect();
    assert_eq!(kpack.len(), 1, "{found:#?}");
    assert_eq!((kpack[0].0.as_str(), kpack[0].1.as_deref()), (GFX1030, Some("torch/.kpack/torch_gfx1030.kpack")));
    assert!(kpack[0].3.contains("table of contents"), "{found:#?}");
    // An archive that does not read offers no target: the search has nothing to report
    // beyond the archive itself.
    assert_eq!(found.len(), 1, "{found:#?}");
}

/// A fat HIP library as clang and lld build it: `.hip_fatbin` (offload bundles for gfx90a
/// and gfx1030) and one `HIPF` wrapper relocated to it.
fn clang_fat_library(build: &Path) -> Vec<u8> {
    let source = build.join("fat.hip");
    fs_err::write(
        &source,
        "#define __global__ __attribute__((global))\n\
         typedef struct { unsigned x, y, z; } dim3_t;\n\
         extern \"C\" int hipLaunchKernel(const void* f, dim3_t g, dim3_t b, void** args, unsigned long shm, void* stream);\n\
         __global__ void scale(float *x, float a) { x[0] *= a; }\n\
         extern \"C\" int run(float *x) { float a = 2.0f; void* args[] = {&x, &a}; dim3_t one = {1,1,1};\n\
           return hipLaunchKernel((const void*)&scale, one, one, args, 0, 0); }\n",
    )
    .expect("write fat.hip");
    let out = build.join("libfat_hip.so");
    support::tool("ld.lld-15");
    support::run(
        support::tool("clang++-15")
            .args(["-x", "hip", "--offload-arch=gfx90a", "--offload-arch=gfx1030", "-nogpulib", "-nogpuinc"])
            .args(["-fPIC", "-shared", "-fuse-ld=lld", "-o"])
            .arg(&out)
            .arg(&source),
    );
    fs_err::read(&out).expect("read the fat library")
}

#[test]
fn a_clang_built_fat_library_left_in_the_host_wheel() {
    let fixture = fixture();
    let parts = parts(&fixture.build);
    let fat = clang_fat_library(&fixture.build);
    let elf = goblin::elf::Elf::parse(&fat).expect("clang's output parses");
    let fatbin_size = elf
        .section_headers
        .iter()
        .find(|header| elf.shdr_strtab.get_at(header.sh_name) == Some(".hip_fatbin"))
        .expect("a .hip_fatbin section")
        .sh_size;
    let mut wheels = split_set(&fixture, &parts, &Breaks::default());
    super::rewrite_member(&mut wheels, HOST, "torch/lib/libfat_hip.so", fat);
    let found = found(&verify_split(&fixture, &wheels));
    // Its imports of the HIP runtime bind nowhere in this set: the symbol rules say so.
    let device_code: Vec<(&str, Option<&str>, &str)> = found
        .iter()
        .filter(|(_, _, check, _)| *check == Check::DeviceCode)
        .map(|(file, path, _, message)| (file.as_str(), path.as_deref(), message.as_str()))
        .collect();
    let keeps =
        format!("keeps {fatbin_size} bytes of `.hip_fatbin` in the file; a split binary's `.hip_fatbin` is SHT_NOBITS");
    assert_eq!(
        device_code,
        [
            (HOST, Some("torch/lib/libfat_hip.so"), keeps.as_str()),
            (
                HOST,
                Some("torch/lib/libfat_hip.so"),
                "still has 1 HIPF wrappers (device code in the file) in a wheel of a split set"
            ),
        ]
    );
}

/// A well-formed archive of no code objects for `arch`, the bytes written here by hand:
/// for tests about something else that need a `.kpack` member the gate accepts.
pub(super) fn empty_archive(arch: &str) -> Vec<u8> {
    let text = |out: &mut Vec<u8>, value: &str| {
        out.extend_from_slice(&[0xd9, value.len() as u8]);
        out.extend_from_slice(value.as_bytes());
    };
    let mut out = b"KPAK\x01\x00\x00\x00".to_vec();
    out.extend_from_slice(&64u64.to_le_bytes());
    out.resize(64, 0);
    out.push(0x86);
    text(&mut out, "group_name");
    text(&mut out, "test");
    text(&mut out, "gfx_arch_family");
    text(&mut out, arch);
    text(&mut out, "gfx_arches");
    out.push(0x91);
    text(&mut out, arch);
    text(&mut out, "toc");
    out.push(0x80);
    text(&mut out, "compression_scheme");
    text(&mut out, "none");
    text(&mut out, "blobs");
    out.push(0x90);
    out
}
