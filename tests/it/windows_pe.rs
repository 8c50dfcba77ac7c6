//! Malformed PE files (SPEC §7): five shapes a Windows loader refuses, each made from the
//! Windows example's real MinGW-built `amdhip64_7.dll` by changing one field, are refused
//! by packaging (an error naming the file, with a hint) and are violations of
//! `verify --dist`; the unchanged DLL passes both.

use std::path::Path;
use std::process::Command;

use diagnostic::Diagnostic;

use crate::support;

const DLL: &str = "core-hip_lib_generic/core/clr/stage/bin/amdhip64_7.dll";
const IN_WHEEL: &str = "_rocm_sdk_core/bin/amdhip64_7.dll";

fn u32_at(bytes: &[u8], at: usize) -> usize {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize
}

fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Where the PE headers' fields are: (data directory table, section table, sections).
struct Fields {
    directories: usize,
    sections: usize,
    n_sections: usize,
}

fn fields(bytes: &[u8]) -> Fields {
    let lfanew = u32_at(bytes, 0x3c);
    assert_eq!(&bytes[lfanew..lfanew + 4], b"PE\0\0", "a PE file");
    let n_sections = u16::from_le_bytes([bytes[lfanew + 6], bytes[lfanew + 7]]) as usize;
    let optional_len = u16::from_le_bytes([bytes[lfanew + 20], bytes[lfanew + 21]]) as usize;
    let optional = lfanew + 24;
    assert_eq!(&bytes[optional..optional + 2], &[0x0b, 0x02], "PE32+, as MinGW-w64 x86_64 builds");
    Fields { directories: optional + 112, sections: optional + optional_len, n_sections }
}

/// The file offset of `rva`, through the section table.
fn offset_of(bytes: &[u8], rva: usize) -> usize {
    let fields = fields(bytes);
    (0..fields.n_sections)
        .map(|index| fields.sections + 40 * index)
        .find_map(|at| {
            let (address, raw_size, raw) = (u32_at(bytes, at + 12), u32_at(bytes, at + 16), u32_at(bytes, at + 20));
            (rva >= address && rva < address + raw_size).then(|| raw + rva - address)
        })
        .expect("the RVA is in a section")
}

/// The five shapes, each with a word its refusal must carry.
fn shapes(good: &[u8]) -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let f = fields(good);
    let directory = |index: usize| f.directories + 8 * index;
    let mut huge_import = good.to_vec();
    put_u32(&mut huge_import, directory(1) + 4, 0x7fff_0000);
    let mut self_thunk = good.to_vec();
    let descriptor = offset_of(good, u32_at(good, directory(1)));
    let lookup_rva = u32_at(good, descriptor);
    let lookup_rva = if lookup_rva != 0 { lookup_rva } else { u32_at(good, descriptor + 16) };
    // The first thunk points at the thunk array itself: 8 bytes, PE32+.
    self_thunk[offset_of(good, lookup_rva)..offset_of(good, lookup_rva) + 8]
        .copy_from_slice(&(lookup_rva as u64).to_le_bytes());
    let mut bogus_export = good.to_vec();
    assert_ne!(u32_at(good, directory(0)), 0, "the example DLL exports functions");
    put_u32(&mut bogus_export, directory(0), 0x7ff0_0000);
    let mut bogus_exception = good.to_vec();
    let pdata = offset_of(good, u32_at(good, directory(3)));
    // The first function's end far beyond the image.
    put_u32(&mut bogus_exception, pdata + 4, 0xffff_ff00);
    let mut huge_section = good.to_vec();
    put_u32(&mut huge_section, f.sections + 16, 0x7fff_0000);
    vec![
        ("huge import size", huge_import, "import directory"),
        ("self-referencing import thunk", self_thunk, "import thunk"),
        ("bogus export RVA", bogus_export, "export directory"),
        ("bogus exception directory", bogus_exception, "exception directory"),
        ("huge raw section size", huge_section, "past the end of the file"),
    ]
}

#[test]
fn five_malformed_dll_shapes_are_refused_by_packaging_and_by_verify() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = super::windows_example(temp.path());
    let dll = artifacts.join(DLL);
    let good = fs_err::read(&dll).expect("read the DLL");
    // The real DLL packages and verifies (the rest of the set is covered elsewhere).
    let dist = super::package(&artifacts, &temp.path().join("good")).expect("the real DLL packages");
    let core = dist.join("rocm_sdk_core-7.12.0.dev0-py3-none-win_amd64.whl");
    for (what, bytes, word) in shapes(&good) {
        fs_err::write(&dll, &bytes).expect("write the shape");
        let error = super::package(&artifacts, &temp.path().join("out")).expect_err(what);
        let text = error.to_string();
        assert!(text.contains("malformed PE file") && text.contains("amdhip64_7.dll"), "{what}: {text}");
        assert!(text.contains(word), "{what}: {text}");
        assert!(error.hint().is_some(), "{what}");
        verify_refuses(temp.path(), &core, &bytes, what, word);
    }
    fs_err::write(&dll, &good).expect("restore");
}

/// The core wheel with the DLL replaced by `bytes`, alone in a dist: a PE violation.
fn verify_refuses(dir: &Path, core: &Path, bytes: &[u8], what: &str, word: &str) {
    let gate = dir.join("gate");
    let _ = fs_err::remove_dir_all(&gate);
    fs_err::create_dir_all(&gate).expect("mkdir");
    let shape = dir.join("shape.dll");
    fs_err::write(&shape, bytes).expect("write");
    let wheel = gate.join(core.file_name().expect("name"));
    let rewrite = "import sys, zipfile\n\
                   src, dst, name, path = sys.argv[1:5]\n\
                   with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w') as zout:\n\
                   \x20   for item in zin.infolist():\n\
                   \x20       data = open(path, 'rb').read() if item.filename == name else zin.read(item)\n\
                   \x20       zout.writestr(item, data)\n";
    support::run(Command::new("python3").args(["-c", rewrite]).arg(core).arg(&wheel).arg(IN_WHEEL).arg(&shape));
    let report = release_gate::verify_dist(&gate).expect("verify");
    let found: Vec<String> = report
        .violations()
        .filter(|violation| violation.path.as_deref() == Some(IN_WHEEL))
        .map(|violation| violation.message.clone())
        .collect();
    assert!(
        found.iter().any(|message| message.contains("malformed PE file") && message.contains(word)),
        "{what}: {found:#?}"
    );
}
