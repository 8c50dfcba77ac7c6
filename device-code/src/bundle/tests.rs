//! Bundles read from section bytes written in the test: plain ones as clang's bundler lays
//! them out, a real one compiled by clang++-15 wrapped in compressed (`CCOB`) headers of
//! both versions around zstd and zlib, and hostile ones refused by name.

use std::path::Path;
use std::process::Command;

use super::compressed::Method;
use super::*;

const HOST: &str = "host-x86_64-unknown-linux-gnu-";
const GFX90A: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";
const GFX1030: &str = "hipv4-amdgcn-amd-amdhsa--gfx1030";

/// Section bytes in a file of their own, read as if they were `.hip_fatbin` at offset 0.
struct Section {
    _dir: tempfile::TempDir,
    path: PathBuf,
    file: File,
    len: u64,
}

fn section(bytes: &[u8]) -> Section {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("libfat.so");
    std::fs::write(&path, bytes).expect("write");
    let file = File::open(&path).expect("open");
    Section { _dir: dir, path, file, len: bytes.len() as u64 }
}

fn read(section: &Section) -> Result<(Vec<Bundle>, Spool), DeviceCodeError> {
    let mut spool = Spool::default();
    let place = FatbinSection { offset: 0, size: section.len, addr: 0 };
    read_bundles(&section.file, &section.path, place, &mut spool).map(|bundles| (bundles, spool))
}

/// Every code object's id, repeat and bytes.
fn contents(section: &Section, bundles: Vec<Bundle>, spool: Spool) -> Vec<(u64, String, u32, Vec<u8>)> {
    let file = section.file.try_clone().expect("clone");
    let section = FatbinSection { offset: 0, size: section.len, addr: 0 };
    let fat = FatBinary { path: PathBuf::from("x"), file, section, bundles, spool };
    let mut out = Vec::new();
    for bundle in fat.bundles() {
        for code_object in &bundle.entries {
            let mut bytes = Vec::new();
            assert_eq!(fat.copy_code_object(code_object, &mut bytes).expect("copy"), code_object.size);
            out.push((bundle.offset_in_section, code_object.entry_id.clone(), code_object.repeat, bytes));
        }
    }
    out
}

fn refused(bytes: &[u8], reason: &str) {
    let section = section(bytes);
    let error = read(&section).expect_err("refused").to_string();
    assert!(error.contains("libfat.so") && error.contains(reason), "wanted {reason:?}: {error}");
}

/// The `.hip_fatbin` bytes of a shared object compiled by clang++-15 for two targets.
fn real_fatbin() -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("k.hip");
    std::fs::write(
        &source,
        concat!(
            "#define __global__ __attribute__((global))\n",
            "typedef struct { unsigned x, y, z; } dim3_t;\n",
            "extern \"C\" int hipLaunchKernel(const void*, dim3_t, dim3_t, void**, unsigned long, void*);\n",
            "__global__ void scale(float *x, float a) { x[0] *= a; }\n",
        ),
    )
    .expect("write source");
    let library = dir.path().join("libk.so");
    let output = Command::new("clang++-15")
        .args(["-x", "hip", "--offload-arch=gfx90a:xnack+", "--offload-arch=gfx1030", "-nogpulib", "-nogpuinc"])
        .args(["-fPIC", "-shared", "-fuse-ld=lld", "-o"])
        .arg(&library)
        .arg(&source)
        .output()
        .expect("run clang++-15 (Debian packages clang-15 and lld-15)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let file = File::open(&library).expect("open");
    let headers = ElfHeaders::read(&file, &library).expect("headers");
    let Ok(Fatbin::Present(place)) = fatbin_section(&headers, Path::new("libk.so")) else {
        panic!("no .hip_fatbin in what clang++-15 built");
    };
    crate::elf_headers::read_range(&file, &library, headers.file_size, place.offset, place.size).expect("section")
}

#[test]
fn a_plain_bundle_gives_its_device_entries_in_order_with_repeats_numbered() {
    let bundle = plain::build(&[(HOST, b""), (GFX90A, b"first"), (GFX1030, b"second"), (GFX90A, b"third")], 8);
    let section = section(&bundle);
    let (bundles, spool) = read(&section).expect("reads");
    assert_eq!(bundles.len(), 1);
    assert_eq!((bundles[0].offset_in_section, bundles[0].len, bundles[0].compressed), (0, bundle.len() as u64, false));
    assert_eq!(bundles[0].entries[0].target.to_string(), "gfx90a:xnack+");
    let got = contents(&section, bundles, spool);
    let expect: Vec<(u64, String, u32, Vec<u8>)> = [(GFX90A, 0, "first"), (GFX1030, 0, "second"), (GFX90A, 1, "third")]
        .into_iter()
        .map(|(id, repeat, bytes)| (0, id.to_owned(), repeat, bytes.as_bytes().to_vec()))
        .collect();
    assert_eq!(got, expect);
}

#[test]
fn compressed_bundles_of_both_versions_and_methods_read_as_the_plain_one() {
    let fatbin = real_fatbin();
    let plain_section = section(&fatbin);
    let (bundles, spool) = read(&plain_section).expect("reads the real bundle");
    let expect: Vec<(String, u32, Vec<u8>)> = contents(&plain_section, bundles, spool)
        .into_iter()
        .map(|(_, id, repeat, bytes)| (id, repeat, bytes))
        .collect();
    assert_eq!(expect.iter().map(|entry| entry.0.as_str()).collect::<Vec<_>>(), [GFX1030, GFX90A]);
    assert!(expect.iter().all(|entry| entry.2.starts_with(b"\x7fELF")));
    for version in [2, 3] {
        for method in [Method::Zstd, Method::Zlib] {
            let ccob = compressed::build(version, method, &fatbin, None);
            let section = section(&ccob);
            let (bundles, spool) = read(&section).expect("reads the compressed bundle");
            assert_eq!((bundles.len(), bundles[0].compressed, bundles[0].len), (1, true, ccob.len() as u64));
            let got: Vec<(String, u32, Vec<u8>)> = contents(&section, bundles, spool)
                .into_iter()
                .map(|(_, id, repeat, bytes)| (id, repeat, bytes))
                .collect();
            assert_eq!(got, expect, "version {version}, {method:?}");
        }
    }
}

#[test]
fn bundles_back_to_back_with_padding_keep_their_offsets() {
    let first = plain::build(&[(HOST, b""), (GFX1030, b"one")], 4096);
    let second = compressed::build(3, Method::Zstd, &plain::build(&[(GFX90A, b"two"), (GFX90A, b"again")], 4096), None);
    // A compressed payload may itself hold two plain bundles back to back.
    let mut payload = plain::build(&[(GFX1030, b"three")], 64);
    payload.resize(payload.len().next_multiple_of(64), 0);
    payload.extend(plain::build(&[(GFX1030, b"four")], 64));
    let third = compressed::build(2, Method::Zlib, &payload, None);
    let mut bytes = first.clone();
    bytes.resize(8192, 0);
    bytes.extend(&second);
    let third_at = (bytes.len() as u64).next_multiple_of(4096);
    bytes.resize(third_at as usize, 0);
    bytes.extend(&third);
    bytes.resize(bytes.len() + 100, 0);
    let section = section(&bytes);
    let (bundles, spool) = read(&section).expect("reads");
    let layout: Vec<(u64, u64, bool)> =
        bundles.iter().map(|bundle| (bundle.offset_in_section, bundle.len, bundle.compressed)).collect();
    assert_eq!(
        layout,
        [(0, first.len() as u64, false), (8192, second.len() as u64, true), (third_at, third.len() as u64, true)]
    );
    let got: Vec<(u64, u32, String)> = contents(&section, bundles, spool)
        .into_iter()
        .map(|(offset, _, repeat, bytes)| (offset, repeat, String::from_utf8(bytes).expect("text")))
        .collect();
    let expect = [(0, 0, "one"), (8192, 0, "two"), (8192, 1, "again"), (third_at, 0, "three"), (third_at, 1, "four")];
    assert_eq!(got, expect.map(|(offset, repeat, text)| (offset, repeat, text.to_owned())));
}

#[test]
fn hostile_plain_bundles_are_refused_naming_the_file_and_offset() {
    let good = plain::build(&[(HOST, b""), (GFX1030, b"code object")], 16);
    refused(&good[..good.len() - 3], "runs past the end");
    refused(&good[..40], "truncated");
    let mut padded = vec![0u8; 256];
    padded.extend(&good[..20]);
    refused(&padded, "no offload bundle");
    // Entry 1's offset moved past the end of the section.
    let mut past = good.clone();
    let entry1 = 32 + 24 + HOST.len();
    past[entry1..entry1 + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    refused(&past, "runs past the end");
    let mut wrapped = good.clone();
    wrapped[entry1..entry1 + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    refused(&wrapped, "runs past the end");
    let overlapping = plain::build(&[(GFX1030, b"0123456789"), (GFX90A, b"abcdefghij")], 1);
    let mut overlapping = overlapping;
    let second = 32 + 24 + GFX1030.len();
    let first_offset = u64::from_le_bytes(overlapping[32..40].try_into().expect("8 bytes"));
    overlapping[second..second + 8].copy_from_slice(&(first_offset + 5).to_le_bytes());
    refused(&overlapping, "overlap");
    let mut into_table = good.clone();
    into_table[entry1..entry1 + 8].copy_from_slice(&8u64.to_le_bytes());
    refused(&into_table, "inside the bundle's table");
    refused(&plain::build(&[(HOST, b"")], 16), "no device code");
    let mut many = good.clone();
    many[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    refused(&many, "claims 18446744073709551615 entries");
    refused(&plain::build(&[("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack", b"x")], 16), "must end in + or -");
    refused(&plain::build(&[("openmp-x86_64-pc-linux-gnu", b"x")], 16), "no target");
    let mut offset_named = vec![0u8; 4096];
    offset_named.extend(plain::build(&[(HOST, b"")], 16));
    refused(&offset_named, "offset 4096 of .hip_fatbin");
}

#[test]
fn hostile_compressed_bundles_are_refused_without_trusting_their_claims() {
    let payload = plain::build(&[(HOST, b""), (GFX1030, &[7u8; 5000])], 16);
    refused(
        &compressed::build(3, Method::Zstd, &payload, Some(1 << 63)),
        "claims 9223372036854775808 bytes uncompressed",
    );
    refused(&compressed::build(3, Method::Zstd, &payload, Some(100)), "inflates past the 100 bytes");
    refused(&compressed::build(2, Method::Zlib, &payload, Some(100)), "inflates past the 100 bytes");
    refused(&compressed::build(2, Method::Zstd, &payload, Some(payload.len() as u64 + 1)), "inflates to");
    let good = compressed::build(3, Method::Zstd, &payload, None);
    refused(&good[..good.len() - 1], "claims a total of");
    let mut cut = good.clone();
    let total = (good.len() - 1) as u64;
    cut[8..16].copy_from_slice(&total.to_le_bytes());
    refused(&cut, "does not decode");
    let mut trailing = good.clone();
    trailing[8..16].copy_from_slice(&(total + 2).to_le_bytes());
    trailing.extend([1, 2]);
    refused(&trailing, "bytes follow the compressed stream");
    let mut v1 = good.clone();
    v1[4] = 1;
    refused(&v1, "format version 1");
    let mut method = good.clone();
    method[6] = 5;
    refused(&method, "method 5");
    refused(
        &compressed::build(3, Method::Zstd, b"not a bundle at all", None),
        "in the decompressed payload: no offload bundle",
    );
    let nested = compressed::build(3, Method::Zstd, &good, None);
    refused(&nested, "inside a compressed bundle");
    refused(&compressed::build(2, Method::Zlib, &plain::build(&[(HOST, b"")], 16), None), "no device code");
    refused(&good[..20], "truncated");
}

/// rocm-kpack's own header vector (its prototype's `test_ccob_parser.py`) reads the same
/// here: version 3, zstd, the sizes where LLVM's `V3Header` puts them.
#[test]
fn the_reference_header_vector_reads_as_rocm_kpack_reads_it() {
    let mut bytes = b"CCOB\x03\x00\x01\x00\x0c\x8b\x12\x00\x00\x00\x00\x00\x38\x7f\xc6\x00\x00\x00\x00\x00\xde\x30\xdc\xec\xea\x03\x74\xc3".to_vec();
    bytes.resize(1_215_244, 0);
    let mut spool = Spool::default();
    spool.write_all(&bytes).expect("write");
    let header = compressed::read_header(&spool, 0).expect("reads");
    assert_eq!(
        header,
        compressed::CcobHeader {
            version: 3,
            method: Method::Zstd,
            header_len: 32,
            total: 1_215_244,
            uncompressed: 13_008_696
        }
    );
    let short = SubRegion { inner: &spool, base: 0, len: 1_215_243 };
    assert!(compressed::read_header(&short, 0)
        .expect_err("one byte short")
        .contains("claims a total of 1215244 bytes"));
}
