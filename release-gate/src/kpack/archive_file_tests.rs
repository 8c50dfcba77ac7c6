//! Unit tests of `archive_file`: archives written here byte by byte from the documented
//! format (KPACK.md §1), one good, then each broken in one way; every break is a problem
//! in words, none a panic. tests/it/verify_kpack.rs holds them against archives written by
//! an independent Python writer and real code objects.

use super::*;
use crate::kpack::source::InMemory;

/// A value to encode, the writer's way (smallest integer forms, str keys).
pub(crate) enum M {
    Int(u64),
    Str(String),
    Arr(Vec<M>),
    Map(Vec<(String, M)>),
}

pub(crate) fn s(text: &str) -> M {
    M::Str(text.to_owned())
}

pub(crate) fn map(pairs: Vec<(&str, M)>) -> M {
    M::Map(pairs.into_iter().map(|(key, value)| (key.to_owned(), value)).collect())
}

pub(crate) fn encode(value: &M, out: &mut Vec<u8>) {
    match value {
        M::Int(n) if *n < 0x80 => out.push(*n as u8),
        M::Int(n) if *n <= 0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(*n as u16).to_be_bytes());
        }
        M::Int(n) => {
            out.push(0xcf);
            out.extend_from_slice(&n.to_be_bytes());
        }
        M::Str(text) => {
            assert!(text.len() < 256);
            if text.len() < 32 {
                out.push(0xa0 | text.len() as u8);
            } else {
                out.extend_from_slice(&[0xd9, text.len() as u8]);
            }
            out.extend_from_slice(text.as_bytes());
        }
        M::Arr(items) => {
            out.push(0xdc);
            out.extend_from_slice(&(items.len() as u16).to_be_bytes());
            items.iter().for_each(|item| encode(item, out));
        }
        M::Map(pairs) => {
            out.push(0xde);
            out.extend_from_slice(&(pairs.len() as u16).to_be_bytes());
            for (key, value) in pairs {
                encode(&M::Str(key.clone()), out);
                encode(value, out);
            }
        }
    }
}

/// A code object's stand-in: a 64-byte AMDGPU ELF header with `flags` (code object v5),
/// then `extra` bytes.
pub(crate) fn code_object(flags: u32, extra: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; 64 + extra];
    bytes[..4].copy_from_slice(b"\x7fELF");
    bytes[4] = 2;
    bytes[5] = 1;
    bytes[6] = 1;
    bytes[7] = 64;
    bytes[8] = 3;
    bytes[18..20].copy_from_slice(&224u16.to_le_bytes());
    bytes[48..52].copy_from_slice(&flags.to_le_bytes());
    for (at, byte) in bytes.iter_mut().enumerate().skip(64) {
        *byte = (at % 7) as u8;
    }
    bytes
}

/// (binary key, target, code object) in ordinal order.
pub(crate) type Kernels = Vec<(String, String, Vec<u8>)>;

/// An archive as the reference writes it: header, zero padding to 64, the blob, the table.
pub(crate) fn write_archive(kernels: &Kernels, arches: &[&str], zstd: bool) -> Vec<u8> {
    let mut out = vec![0u8; 64];
    out[..4].copy_from_slice(b"KPAK");
    out[4..8].copy_from_slice(&1u32.to_le_bytes());
    let mut scheme = Vec::new();
    if zstd {
        out.extend_from_slice(&(kernels.len() as u32).to_le_bytes());
        for (_, _, bytes) in kernels {
            let frame = zstd::bulk::compress(bytes, 3).expect("compress");
            out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
            out.extend_from_slice(&frame);
        }
        scheme.push(("compression_scheme", s("zstd-per-kernel")));
        scheme.push(("zstd_offset", M::Int(64)));
        scheme.push(("zstd_size", M::Int(out.len() as u64 - 64)));
    } else {
        let mut blobs = Vec::new();
        for (_, _, bytes) in kernels {
            blobs.push(map(vec![("offset", M::Int(out.len() as u64)), ("size", M::Int(bytes.len() as u64))]));
            out.extend_from_slice(bytes);
        }
        scheme.push(("compression_scheme", s("none")));
        scheme.push(("blobs", M::Arr(blobs)));
    }
    let mut toc: Vec<(String, M)> = Vec::new();
    for (ordinal, (key, arch, bytes)) in kernels.iter().enumerate() {
        let entry = map(vec![
            ("type", s("hsaco")),
            ("ordinal", M::Int(ordinal as u64)),
            ("original_size", M::Int(bytes.len() as u64)),
        ]);
        match toc.iter_mut().find(|(name, _)| name == key) {
            Some((_, M::Map(by_arch))) => by_arch.push((arch.clone(), entry)),
            _ => toc.push((key.clone(), M::Map(vec![(arch.clone(), entry)]))),
        }
    }
    let mut fields = vec![
        ("format_version", M::Int(1)),
        ("group_name", s("torch")),
        ("gfx_arch_family", s(arches[0])),
        ("gfx_arches", M::Arr(arches.iter().map(|arch| s(arch)).collect())),
        ("toc", M::Map(toc)),
    ];
    fields.extend(scheme);
    let toc_offset = out.len() as u64;
    encode(&map(fields), &mut out);
    out[8..16].copy_from_slice(&toc_offset.to_le_bytes());
    out
}

fn kernels() -> Kernels {
    vec![
        ("lib/libk.so#0".to_owned(), "gfx90a".to_owned(), code_object(0x53f, 300)),
        ("lib/libk.so#1".to_owned(), "gfx90a".to_owned(), code_object(0x53f, 5000)),
        ("bin/tool#0".to_owned(), "gfx90a".to_owned(), code_object(0x53f, 10)),
    ]
}

fn read(bytes: &[u8]) -> (KpackArchive, Vec<String>) {
    read_kpack(&mut InMemory(bytes), "torch/.kpack/torch_gfx90a.kpack")
}

/// The one problem reading `bytes` gives contains `expected`.
fn check_one(bytes: &[u8], expected: &str) {
    let (_, problems) = read(bytes);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains(expected), "`{}` should contain `{expected}`", problems[0]);
}

#[test]
fn good_archives_read_back_whole() {
    for zstd in [true, false] {
        let (archive, problems) = read(&write_archive(&kernels(), &["gfx90a"], zstd));
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(archive.gfx_arches, ["gfx90a"]);
        assert_eq!(archive.n_listed, 3);
        let keys: Vec<&str> = archive.entries.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, ["bin/tool#0", "lib/libk.so#0", "lib/libk.so#1"]);
    }
}

#[test]
fn broken_headers() {
    let good = write_archive(&kernels(), &["gfx90a"], true);
    check_one(&good[..10], "shorter than the 16-byte kpack header");
    let mut magic = good.clone();
    magic[0] = b'X';
    check_one(&magic, "does not start with `KPAK`");
    let mut version = good.clone();
    version[4] = 2;
    check_one(&version, "format version 2");
    let mut past = good.clone();
    past[8..16].copy_from_slice(&(good.len() as u64 + 5).to_le_bytes());
    check_one(&past, "outside the file's");
    // Truncated: the table of contents loses its end.
    check_one(&good[..good.len() - 3], "ends inside a value");
    let mut trailing = good.clone();
    trailing.push(0xc0);
    check_one(&trailing, "1 bytes after its table of contents");
}

/// A table of contents rewritten: `edit` gets the writer's fields.
fn with_toc(zstd: bool, edit: impl Fn(&mut Vec<(&'static str, M)>)) -> Vec<u8> {
    let good = write_archive(&kernels(), &["gfx90a"], zstd);
    let toc_offset = u64::from_le_bytes(good[8..16].try_into().expect("8 bytes")) as usize;
    let (toc, _) = read_value(&good[toc_offset..]).expect("toc");
    let mut fields: Vec<(&'static str, M)> = Vec::new();
    for name in [
        "group_name",
        "gfx_arch_family",
        "gfx_arches",
        "toc",
        "compression_scheme",
        "zstd_offset",
        "zstd_size",
        "blobs",
    ] {
        if let Some(value) = toc.get(name) {
            fields.push((name, to_m(value)));
        }
    }
    edit(&mut fields);
    let mut out = good[..toc_offset].to_vec();
    encode(&map(fields), &mut out);
    out
}

fn to_m(value: &Value) -> M {
    match value {
        Value::Int(n) => M::Int(*n as u64),
        Value::Str(text) => M::Str(text.clone()),
        Value::Array(items) => M::Arr(items.iter().map(to_m).collect()),
        Value::Map(pairs) => {
            M::Map(pairs.iter().map(|(key, value)| (key.as_str().unwrap_or("?").to_owned(), to_m(value))).collect())
        }
        _ => M::Int(0),
    }
}

fn set(fields: &mut [(&'static str, M)], name: &str, value: M) {
    let slot = fields.iter_mut().find(|(field, _)| *field == name).expect("field");
    slot.1 = value;
}

#[test]
fn broken_tables_of_contents() {
    // A target used as a key that `gfx_arches` does not list.
    check_one(
        &with_toc(true, |fields| set(fields, "gfx_arches", M::Arr(vec![s("gfx942")]))),
        "which its `gfx_arches` (gfx942) does not list",
    );
    check_one(
        &with_toc(true, |fields| fields.retain(|(name, _)| *name != "compression_scheme")),
        "names no `compression_scheme`",
    );
    check_one(&with_toc(true, |fields| set(fields, "compression_scheme", s("lz4"))), "compression scheme `lz4`");
    check_one(
        &with_toc(true, |fields| set(fields, "zstd_size", M::Int(1 << 20))),
        "outside the bytes between the header",
    );
    check_one(&with_toc(true, |fields| fields.retain(|(name, _)| *name != "group_name")), "no string `group_name`");
    let one_blob_short = with_toc(false, |fields| {
        if let Some((_, M::Arr(blobs))) = fields.iter_mut().find(|(name, _)| *name == "blobs") {
            blobs.pop();
        }
    });
    check_one(&one_blob_short, "refers to ordinal 2, but `blobs` has 2 entries");
}

#[test]
fn a_frame_inflating_past_its_size() {
    // The second code object's size in the table is one byte short of what its frame holds.
    let bytes = with_toc(true, |fields| {
        let slot = fields.iter_mut().find(|(name, _)| *name == "toc").expect("toc");
        if let M::Map(keys) = &mut slot.1 {
            if let Some((_, M::Map(by_arch))) = keys.iter_mut().find(|(key, _)| key == "lib/libk.so#1") {
                if let M::Map(entry) = &mut by_arch[0].1 {
                    entry[2].1 = M::Int(5063);
                }
            }
        }
    });
    let (archive, problems) = read(&bytes);
    assert_eq!(problems, ["has frame 1 that records a content size of 5064, not its original_size 5063"]);
    assert!(!archive.entries.contains(&("lib/libk.so#1".to_owned(), "gfx90a".to_owned())));
    assert_eq!(archive.entries.len(), 2);
}

/// A zstd archive of one code object under `k#0` for gfx90a, with `frame` as its frame
/// and `original_size` in the table.
fn archive_with_frame(frame: &[u8], original_size: u64) -> Vec<u8> {
    let mut out = vec![0u8; 64];
    out[..4].copy_from_slice(b"KPAK");
    out[4..8].copy_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    out.extend_from_slice(frame);
    let toc_offset = out.len() as u64;
    let entry = map(vec![("type", s("hsaco")), ("ordinal", M::Int(0)), ("original_size", M::Int(original_size))]);
    let toc = map(vec![
        ("group_name", s("torch")),
        ("gfx_arch_family", s("gfx90a")),
        ("gfx_arches", M::Arr(vec![s("gfx90a")])),
        ("toc", map(vec![("k#0", map(vec![("gfx90a", entry)]))])),
        ("compression_scheme", s("zstd-per-kernel")),
        ("zstd_offset", M::Int(64)),
        ("zstd_size", M::Int(toc_offset - 64)),
    ]);
    encode(&toc, &mut out);
    out[8..16].copy_from_slice(&toc_offset.to_le_bytes());
    out
}

#[test]
fn frames_without_content_size_or_past_their_claim() {
    let object = code_object(0x53f, 4000);
    let good = zstd::bulk::compress(&object, 3).expect("compress");
    assert_eq!(read(&archive_with_frame(&good, object.len() as u64)).1, Vec::<String>::new());
    // A streamed frame records no content size: rocm-kpack's Python reader cannot inflate it.
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).expect("encoder");
    io::Write::write_all(&mut encoder, &object).expect("compress");
    let streamed = encoder.finish().expect("finish");
    check_one(&archive_with_frame(&streamed, object.len() as u64), "records no content size");
    // A frame whose recorded content size is forged to the table's (smaller) size: caught
    // while inflating, never trusted. Frame header: magic, descriptor (FCS flag 01: a
    // 2-byte size, stored minus 256), a window byte unless single-segment.
    let mut forged = good.clone();
    assert_eq!(forged[4] >> 6, 1, "{:02x?}", &forged[..8]);
    let fcs_at = if forged[4] & 0x20 != 0 { 5 } else { 6 };
    forged[fcs_at..fcs_at + 2].copy_from_slice(&(1000u16 - 256).to_le_bytes());
    let (archive, problems) = read(&archive_with_frame(&forged, 1000));
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].contains("inflates past its original_size 1000") || problems[0].contains("does not decompress"),
        "{problems:#?}"
    );
    assert!(archive.entries.is_empty());
    // Bytes after the frame inside its length.
    let mut padded = good.clone();
    padded.extend_from_slice(&[0, 0, 0]);
    check_one(&archive_with_frame(&padded, object.len() as u64), "3 bytes after the end of its zstd frame");
    // The streamed frame with its content cut short.
    check_one(&archive_with_frame(&good[..good.len() - 5], object.len() as u64), "frame 0 that");
}

#[test]
fn a_code_object_for_another_target() {
    let mut kernels = kernels();
    kernels[1].2 = code_object(0x36, 100);
    let (archive, problems) = read(&write_archive(&kernels, &["gfx90a"], true));
    assert_eq!(
        problems,
        ["the code object of `lib/libk.so#1` for gfx90a (ordinal 1) is built for gfx1030 (e_flags 0x36), not gfx90a"]
    );
    assert_eq!(archive.entries.len(), 2);
    kernels[1].2 = b"not an ELF file".to_vec();
    let (_, problems) = read(&write_archive(&kernels, &["gfx90a"], false));
    assert_eq!(problems, ["the code object of `lib/libk.so#1` for gfx90a (ordinal 1) is not an ELF file"]);
}

proptest::proptest! {
    /// Any byte of a good archive changed, or the archive cut anywhere: problems in words,
    /// never a panic.
    #[test]
    fn mutations_never_panic(at in 0usize..2000, byte in proptest::num::u8::ANY, cut in 0usize..2000, zstd in proptest::bool::ANY) {
        let mut bytes = write_archive(&kernels(), &["gfx90a"], zstd);
        let at = at % bytes.len();
        bytes[at] = byte;
        let _ = read(&bytes);
        bytes.truncate(cut % bytes.len());
        let _ = read(&bytes);
    }
}
