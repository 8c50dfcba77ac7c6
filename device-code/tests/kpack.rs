//! `.kpack` archives written by [`ArchiveWriter`] from the code objects of a fat binary
//! compiled by clang++-15, read back by our reader and by an independent reader written
//! here in Python from the format as KPACK.md §1 documents it (msgpack and zstandard, the
//! libraries rocm-kpack's own reader uses), for both compression schemes; written twice to
//! the same bytes; and hostile archives made in Python refused by name.

mod support;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use device_code::kpack::{KpackArchive, DEFAULT_ZSTD_LEVEL};
use device_code::{ArchiveSpec, ArchiveWriter, Compression, FatBinary};

/// The independent reader: header, table of contents from its offset to the end of the
/// file, every target in `gfx_arches`, frames (with their content size) or blobs giving
/// exactly `original_size` bytes, each code object written to `<out>/<ordinal>`.
const PYTHON_READER: &str = r#"
import json, os, struct, sys
import msgpack, zstandard
path, out = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
magic, version, toc_offset = struct.unpack_from("<4sIQ", data, 0)
assert magic == b"KPAK" and version == 1, (magic, version)
assert 16 <= toc_offset < len(data)
assert data[16:64] == bytes(48), "zero padding to 64"
toc = msgpack.unpackb(data[toc_offset:])
assert list(toc)[:6] == ["format_version", "group_name", "gfx_arch_family", "gfx_arches", "toc", "compression_scheme"], list(toc)
assert toc["format_version"] == 1
arches = toc["gfx_arches"]
scheme = toc.get("compression_scheme", "none")
if scheme == "zstd-per-kernel":
    assert list(toc)[6:] == ["zstd_offset", "zstd_size"], list(toc)
    offset, size = toc["zstd_offset"], toc["zstd_size"]
    assert offset == 64 and offset + size == toc_offset
    (count,) = struct.unpack_from("<I", data, offset)
    frames, at = [], offset + 4
    for _ in range(count):
        (length,) = struct.unpack_from("<I", data, at)
        frames.append(data[at + 4 : at + 4 + length])
        at += 4 + length
    assert at == offset + size, "frames fill the blob"
    def code_object(ordinal, original_size):
        frame = frames[ordinal]
        assert zstandard.get_frame_parameters(frame).content_size == original_size
        return zstandard.ZstdDecompressor().decompress(frame)
else:
    assert scheme == "none" and list(toc)[6:] == ["blobs"], list(toc)
    count = len(toc["blobs"])
    def code_object(ordinal, original_size):
        blob = toc["blobs"][ordinal]
        assert 64 <= blob["offset"] and blob["offset"] + blob["size"] <= toc_offset
        return data[blob["offset"] : blob["offset"] + blob["size"]]
entries = []
for key, targets in toc["toc"].items():
    for arch, entry in targets.items():
        assert arch in arches, (arch, arches)
        assert list(entry) == ["type", "ordinal", "original_size"] and entry["type"] == "hsaco"
        content = code_object(entry["ordinal"], entry["original_size"])
        assert len(content) == entry["original_size"]
        with open(os.path.join(out, str(entry["ordinal"])), "wb") as file:
            file.write(content)
        entries.append([key, arch, entry["ordinal"]])
print(json.dumps({"group": toc["group_name"], "family": toc["gfx_arch_family"], "arches": arches,
                  "scheme": scheme, "count": count, "entries": sorted(entries)}))
"#;

/// Runs `script` with `args` under the Python that has msgpack and zstandard.
fn python(script: &str, args: &[&Path]) -> String {
    let mut child = Command::new(support::python())
        .arg("-")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    child.stdin.take().expect("piped").write_all(script.as_bytes()).expect("write the script");
    let output = child.wait_with_output().expect("wait for python3");
    assert!(output.status.success(), "python: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The code objects (target, bytes) of a fat binary clang++-15 builds for gfx90a:xnack+,
/// gfx906 and gfx1030.
fn real_code_objects(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let source = dir.join("k.hip");
    std::fs::write(
        &source,
        "#define __global__ __attribute__((global))\n\
         typedef struct { unsigned x, y, z; } dim3_t;\n\
         extern \"C\" int hipLaunchKernel(const void*, dim3_t, dim3_t, void**, unsigned long, void*);\n\
         __global__ void scale(float *x, float a) { x[0] *= a; }\n\
         __global__ void shift(float *x, float a) { x[0] += a; }\n",
    )
    .expect("write source");
    let library = dir.join("libk.so");
    support::run(
        Command::new("clang++-15")
            .args(["-x", "hip", "-nogpulib", "-nogpuinc", "--offload-arch=gfx90a:xnack+", "--offload-arch=gfx906"])
            .args(["--offload-arch=gfx1030", "-fPIC", "-shared", "-fuse-ld=lld", "-o"])
            .arg(&library)
            .arg(&source),
    );
    let fat = FatBinary::read(&File::open(&library).expect("open"), &library).expect("read").expect("a .hip_fatbin");
    let mut code_objects = Vec::new();
    for code_object in &fat.bundles()[0].entries {
        let mut bytes = Vec::new();
        fat.copy_code_object(code_object, &mut bytes).expect("copy");
        code_objects.push((code_object.target.to_string(), bytes));
    }
    code_objects
}

fn spec(compression: Compression) -> ArchiveSpec {
    ArchiveSpec {
        group_name: "torch".to_owned(),
        gfx_arch_family: "gfx90a".to_owned(),
        gfx_arches: ["gfx90a", "gfx90a:xnack+", "gfx906", "gfx1030"].map(str::to_owned).to_vec(),
        compression,
    }
}

/// An archive of `code_objects` under two keys (the second an alias), as bytes.
fn write_archive(code_objects: &[(String, Vec<u8>)], compression: Compression, path: &Path) -> Vec<u8> {
    let mut writer = ArchiveWriter::new(spec(compression)).expect("writer");
    for (ordinal, (target, bytes)) in code_objects.iter().enumerate() {
        let got = writer
            .add("lib/libk.so#0", target, bytes.len() as u64, |out| {
                out.write_all(bytes)
                    .map_err(|source| device_code::DeviceCodeError::Io { path: path.to_path_buf(), source })
            })
            .expect("add");
        assert_eq!(got as usize, ordinal);
        writer.alias("bin/app#1", target, got).expect("alias");
    }
    let mut archive = Vec::new();
    let summary = writer.finish(&mut archive).expect("finish");
    assert_eq!(
        (summary.len, summary.code_objects as usize, summary.entries),
        (archive.len() as u64, code_objects.len(), 2 * code_objects.len())
    );
    archive
}

#[test]
fn archives_read_back_by_us_and_by_an_independent_python_reader() {
    let dir = tempfile::tempdir().expect("temp dir");
    let code_objects = real_code_objects(dir.path());
    assert_eq!(code_objects.len(), 3);
    for (compression, scheme) in
        [(Compression::Zstd { level: DEFAULT_ZSTD_LEVEL }, "zstd-per-kernel"), (Compression::None, "none")]
    {
        let path = dir.path().join(format!("torch_{scheme}.kpack"));
        let archive = write_archive(&code_objects, compression, &path);
        assert_eq!(
            archive,
            write_archive(&code_objects, compression, &path),
            "{scheme}: a second write gives the same bytes"
        );
        std::fs::write(&path, &archive).expect("write the archive");

        let ours = KpackArchive::open(File::open(&path).expect("open"), &path).expect("open the archive");
        let check = ours.check_all().expect("check");
        assert_eq!((check.code_objects, check.entries), (3, 6));
        assert_eq!(ours.toc().compression_scheme, scheme);
        for (target, bytes) in &code_objects {
            for key in ["lib/libk.so#0", "bin/app#1"] {
                assert_eq!(
                    ours.code_object(key, target).expect("read").as_ref(),
                    Some(bytes),
                    "{scheme} {key} {target}"
                );
            }
        }
        assert_eq!(ours.code_object("lib/libk.so#1", "gfx90a").expect("read"), None);

        let out = dir.path().join(format!("python_{scheme}"));
        std::fs::create_dir(&out).expect("output dir");
        let report = python(PYTHON_READER, &[&path, &out]);
        let mut expected_entries = Vec::new();
        for (ordinal, (target, bytes)) in code_objects.iter().enumerate() {
            assert_eq!(
                &std::fs::read(out.join(ordinal.to_string())).expect("python's code object"),
                bytes,
                "{scheme} {target}"
            );
            for key in ["bin/app#1", "lib/libk.so#0"] {
                expected_entries.push(format!("[\"{key}\", \"{target}\", {ordinal}]"));
            }
        }
        expected_entries.sort();
        let expected = format!(
            "{{\"group\": \"torch\", \"family\": \"gfx90a\", \"arches\": [\"gfx90a\", \"gfx90a:xnack+\", \"gfx906\", \"gfx1030\"], \"scheme\": \"{scheme}\", \"count\": 3, \"entries\": [{}]}}",
            expected_entries.join(", ")
        );
        assert_eq!(report.trim(), expected, "{scheme}");
    }
}

#[test]
fn the_writer_refuses_what_the_readers_would_not_find_and_stays_usable() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("torch_gfx90a.kpack");
    let mut writer = ArchiveWriter::new(spec(Compression::Zstd { level: 3 })).expect("writer");
    let fill = |bytes: &'static [u8]| {
        move |out: &mut dyn Write| {
            out.write_all(bytes).map_err(|source| device_code::DeviceCodeError::Io { path: PathBuf::from("x"), source })
        }
    };
    let refused = |error: device_code::DeviceCodeError, reason: &str| {
        let text = error.to_string();
        assert!(text.contains("cannot write this kpack archive") && text.contains(reason), "wanted {reason:?}: {text}");
    };
    refused(writer.add("a#0", "gfx942", 3, fill(b"abc")).expect_err("not listed"), "gfx942 is not in gfx_arches");
    refused(writer.add("a#0", "gfx90a", 4, fill(b"abc")).expect_err("short"), "3 bytes written, 4 declared");
    refused(writer.add("a#0", "gfx90a", 2, fill(b"abc")).expect_err("long"), "more than the 2 bytes declared");
    assert_eq!(writer.add("a#0", "gfx90a", 3, fill(b"abc")).expect("add"), 0);
    refused(writer.add("a#0", "gfx90a", 3, fill(b"abc")).expect_err("twice"), "already has a code object for gfx90a");
    refused(writer.alias("b#0", "gfx1030", 7).expect_err("no such ordinal"), "no code object has ordinal 7");
    refused(writer.alias("b#0", "gfx11-generic", 0).expect_err("not listed"), "not in gfx_arches");
    assert_eq!(writer.add("b#0", "gfx1030", 5, fill(b"hello")).expect("add"), 1);
    let mut archive = Vec::new();
    writer.finish(&mut archive).expect("finish");
    std::fs::write(&path, &archive).expect("write");
    let read = KpackArchive::open(File::open(&path).expect("open"), &path).expect("open the archive");
    assert_eq!(read.check_all().expect("check").code_objects, 2);
    assert_eq!(read.code_object("b#0", "gfx1030").expect("read").as_deref(), Some(&b"hello"[..]));
    let bad_spec = ArchiveSpec { gfx_arches: Vec::new(), ..spec(Compression::None) };
    refused(ArchiveWriter::new(bad_spec).err().expect("no targets"), "gfx_arches lists no target");
}

/// Hostile archives, each made by a few lines of Python around a valid zstd archive.
const PYTHON_HOSTILE: &str = r#"
import struct, sys
import msgpack, zstandard
out = sys.argv[1]
def archive(name, frames, toc_extra=None, count=None, version=1, magic=b"KPAK", toc_offset=None, sizes=None):
    blob = struct.pack("<I", len(frames) if count is None else count)
    for frame in frames:
        blob += struct.pack("<I", len(frame)) + frame
    sizes = sizes or [3] * len(frames)
    toc = {"format_version": 1, "group_name": "g", "gfx_arch_family": "gfx90a", "gfx_arches": ["gfx90a"],
           "toc": {"k#%d" % i: {"gfx90a": {"type": "hsaco", "ordinal": i, "original_size": sizes[i]}} for i in range(len(frames))},
           "compression_scheme": "zstd-per-kernel", "zstd_offset": 64, "zstd_size": len(blob)}
    toc.update(toc_extra or {})
    packed = msgpack.packb(toc, use_bin_type=True)
    offset = 64 + len(blob) if toc_offset is None else toc_offset
    with open(out + "/" + name, "wb") as file:
        file.write(struct.pack("<4sIQ", magic, version, offset) + bytes(48) + blob + packed)
frame = zstandard.ZstdCompressor(level=3).compress(b"abc")
big = zstandard.ZstdCompressor(level=3).compress(b"x" * 100000)
archive("good.kpack", [frame])
archive("magic.kpack", [frame], magic=b"KPAQ")
archive("version.kpack", [frame], version=2)
archive("toc_offset.kpack", [frame], toc_offset=1 << 40)
archive("inflates.kpack", [big], sizes=[10])
archive("count.kpack", [frame], count=(1 << 20) + 1)
archive("frame_past.kpack", [frame], toc_extra={"zstd_size": 9})
archive("arch.kpack", [frame], toc_extra={"gfx_arches": ["gfx1030"]})
archive("scheme.kpack", [frame], toc_extra={"compression_scheme": "lz4"})
"#;

#[test]
fn hostile_archives_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    python(PYTHON_HOSTILE, &[dir.path()]);
    let open = |name: &str| {
        let path = dir.path().join(name);
        KpackArchive::open(File::open(&path).expect("open"), &path)
    };
    let good = open("good.kpack").expect("the unchanged archive opens");
    assert_eq!(good.code_object("k#0", "gfx90a").expect("read").as_deref(), Some(&b"abc"[..]));
    good.check_all().expect("and checks");
    for (name, reason) in [
        ("magic.kpack", "no KPAK magic"),
        ("version.kpack", "format version 2"),
        ("toc_offset.kpack", "offset 1099511627776 is outside the file"),
        ("count.kpack", "claims 1048577 frames"),
        ("frame_past.kpack", "runs past the end of the zstd blob"),
        ("scheme.kpack", "compression_scheme"),
    ] {
        let error = open(name).expect_err(name).to_string();
        assert!(error.contains(name) && error.contains(reason), "{name}: wanted {reason:?}: {error}");
    }
    for (name, reason) in
        [("inflates.kpack", "inflates past its original_size of 10 bytes"), ("arch.kpack", "gfx_arches does not list")]
    {
        let archive = open(name).expect(name);
        let error = archive.check_all().expect_err(name).to_string();
        assert!(error.contains(name) && error.contains(reason), "{name}: wanted {reason:?}: {error}");
    }
    let error = open("inflates.kpack").expect("opens").code_object("k#0", "gfx90a").expect_err("inflates").to_string();
    assert!(error.contains("inflates past"), "{error}");
}

/// One of rocm-kpack's own test archives (`runtime/tests/test_assets/` of its prototype,
/// written by `generate_test_data.py`), known here by its inputs, size and SHA-256.
struct ReferenceArchive {
    name: &'static str,
    compression: Compression,
    family: &'static str,
    arches: [&'static str; 2],
    kernels: [(&'static str, &'static str, Vec<u8>); 3],
    len: u64,
    sha256: &'static str,
}

/// The same additions through our writer give the reference's bytes (its zstd frames too,
/// at level 3 with the libzstd the zstd crate bundles).
#[test]
fn the_reference_test_archives_are_written_byte_for_byte() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = [
        ReferenceArchive {
            name: "test_noop.kpack",
            compression: Compression::None,
            family: "gfx900X",
            arches: ["gfx900", "gfx906"],
            kernels: [
                ("lib/libtest.so", "gfx900", [&b"KERNEL1_GFX900_DATA"[..], &[0; 100]].concat()),
                ("lib/libtest.so", "gfx906", [&b"KERNEL2_GFX906_DATA"[..], &[0; 200]].concat()),
                ("bin/testapp", "gfx900", [&b"KERNEL3_APP_GFX900"[..], &[0xff; 150]].concat()),
            ],
            len: 899,
            sha256: "4a49b39c6ee335434d3822a8a399ea302d848cc1b5e63e8391325d4d554bd6cc",
        },
        ReferenceArchive {
            name: "test_zstd.kpack",
            compression: Compression::Zstd { level: 3 },
            family: "gfx110X",
            arches: ["gfx1100", "gfx1101"],
            kernels: [
                ("lib/libhip.so", "gfx1100", [&b"HIP_KERNEL_GFX1100_"[..], &[b'A'; 500], &[b'B'; 500]].concat()),
                ("lib/libhip.so", "gfx1101", [&b"HIP_KERNEL_GFX1101_"[..], &[b'X'; 300], &[b'Y'; 300]].concat()),
                ("bin/hiptest", "gfx1100", [&b"TEST_APP_KERNEL___"[..], &[0x42; 1000]].concat()),
            ],
            len: 514,
            sha256: "856f4a9001dc234e835ce6e640f1c22544aef0a63682550f99e18be8ec4d40e7",
        },
    ];
    for case in cases {
        let path = dir.path().join(case.name);
        let spec = ArchiveSpec {
            group_name: "test".to_owned(),
            gfx_arch_family: case.family.to_owned(),
            gfx_arches: case.arches.map(str::to_owned).to_vec(),
            compression: case.compression,
        };
        let mut writer = ArchiveWriter::new(spec).expect("writer");
        for (key, arch, bytes) in &case.kernels {
            writer
                .add(key, arch, bytes.len() as u64, |out| {
                    out.write_all(bytes)
                        .map_err(|source| device_code::DeviceCodeError::Io { path: path.clone(), source })
                })
                .expect("add");
        }
        let mut archive = Vec::new();
        writer.finish(&mut archive).expect("finish");
        std::fs::write(&path, &archive).expect("write");
        let digest =
            python("import hashlib, sys\nprint(hashlib.sha256(open(sys.argv[1], 'rb').read()).hexdigest())", &[&path]);
        assert_eq!((archive.len() as u64, digest.trim()), (case.len, case.sha256), "{}", case.name);
    }
}
