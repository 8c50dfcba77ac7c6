//! Damaged and unusual fat binaries: each is refused with an error naming the file and the
//! problem, before anything is written.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use device_code::elf_headers::{ElfHeaders, SectionHeader, SHDR_SIZE};
use device_code::host::{self, FatState, HostTransform};
use device_code::DeviceCodeError;

use crate::fat::{self, RuntimeAbi, Shape};
use crate::support::{reference, run};

/// Inspects and plans `path`; on success writes nothing either, returning the plan's error.
fn refusal(path: &Path) -> DeviceCodeError {
    let file = File::open(path).expect("open");
    let error = match host::inspect(&file, path) {
        Ok(binary) => HostTransform::plan(&binary, &reference("lib/libk.so")).expect_err("refused"),
        Err(error) => error,
    };
    assert!(error.to_string().contains(&path.display().to_string()), "the error names the file: {error}");
    error
}

/// A copy of `input` named `name`, with `edit` applied to its bytes at `offset`.
fn damaged(input: &Path, name: &str, offset: u64, edit: &[u8]) -> PathBuf {
    let path = input.with_file_name(name);
    std::fs::copy(input, &path).expect("copy");
    let file = std::fs::OpenOptions::new().write(true).open(&path).expect("open for writing");
    file.write_all_at(edit, offset).expect("edit");
    path
}

pub fn section<'a>(headers: &'a ElfHeaders, name: &str) -> (usize, &'a SectionHeader) {
    headers.sections.iter().enumerate().find(|(_, section)| section.name == name.as_bytes()).expect(name)
}

/// File offset of the `.rela.dyn` entry whose target is `address`.
pub fn relocation_of(path: &Path, headers: &ElfHeaders, address: u64) -> u64 {
    let (_, table) = section(headers, ".rela.dyn");
    let bytes = std::fs::read(path).expect("read");
    (0..table.size / 24)
        .map(|entry| table.offset + entry * 24)
        .find(|&at| bytes[at as usize..at as usize + 8] == address.to_le_bytes())
        .expect("a relocation of the address")
}

#[test]
fn damaged_binaries_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = fat::build_runtime(dir.path(), &RuntimeAbi::default());
    let work = dir.path().join("three");
    std::fs::create_dir(&work).expect("mkdir");
    let input = fat::build(Shape::ThreeUnits, &work, &runtime);
    let headers = ElfHeaders::read(&File::open(&input).expect("open"), &input).expect("headers");
    let (segment_index, segment) = section(&headers, ".hipFatBinSegment");
    let segment_header = headers.header.shoff + segment_index as u64 * SHDR_SIZE as u64;

    let odd = damaged(&input, "odd-size.so", segment_header + 32, &(segment.size - 1).to_le_bytes());
    let error = refusal(&odd);
    assert!(matches!(error, DeviceCodeError::WrapperSegment { size, .. } if size == segment.size - 1), "{error}");

    let magic = damaged(&input, "magic.so", segment.offset + 24, b"XXXX");
    let error = refusal(&magic);
    assert!(
        matches!(error, DeviceCodeError::WrapperMagic { index: 1, magic: [b'X', b'X', b'X', b'X'], .. }),
        "{error}"
    );

    let partly = damaged(&input, "partly.so", segment.offset + 48, b"HIPK");
    let error = refusal(&partly);
    assert!(matches!(error, DeviceCodeError::PartlySplit { split: 1, total: 3, .. }), "{error}");

    let pointer = relocation_of(&input, &headers, segment.addr + 24 + 8);
    let outside = damaged(&input, "outside.so", pointer + 16, &0x10u64.to_le_bytes());
    let error = refusal(&outside);
    assert!(matches!(error, DeviceCodeError::WrapperPointer { index: 1, pointer: 0x10, .. }), "{error}");

    let absolute = damaged(&input, "absolute.so", pointer + 8, &1u64.to_le_bytes());
    let error = refusal(&absolute);
    assert!(matches!(error, DeviceCodeError::Relocation { .. }), "{error}");
    assert!(error.to_string().contains("wrapper 1 carries a relocation of type 1"), "{error}");

    // Another relocation (the first of `.init_array`) aimed into `.hip_fatbin`.
    let (_, init) = section(&headers, ".init_array");
    let fatbin = section(&headers, ".hip_fatbin").1.addr;
    let entry = relocation_of(&input, &headers, init.addr);
    let stray = damaged(&input, "stray.so", entry + 16, &(fatbin + 64).to_le_bytes());
    let error = refusal(&stray);
    assert!(error.to_string().contains("resolves into `.hip_fatbin`"), "{error}");

    let version = damaged(&input, "version.so", segment.offset + 4, &2u32.to_le_bytes());
    let error = refusal(&version);
    assert!(matches!(error, DeviceCodeError::WrapperVersion { index: 0, version: 2, .. }), "{error}");

    let bytes = std::fs::read(&input).expect("read");
    for (name, len) in [("truncated.so", bytes.len() / 2), ("stub.so", 10)] {
        let truncated = input.with_file_name(name);
        std::fs::write(&truncated, &bytes[..len]).expect("write");
        let error = refusal(&truncated);
        assert!(matches!(error, DeviceCodeError::Elf { .. }), "{error}");
    }

    let fatbin = section(&headers, ".hip_fatbin").1.size as usize;
    assert!(fatbin < 60_000, "{fatbin}");
    let error = refusal_with(&input, "k".repeat(60_000));
    assert!(error.to_string().contains("no room for the"), "{error}");
    let error = refusal_with(&input, "k".repeat(64 << 10));
    assert!(error.to_string().contains("the kpack runtime reads at most 65536"), "{error}");
}

fn refusal_with(path: &Path, kernel_name: String) -> DeviceCodeError {
    let file = File::open(path).expect("open");
    let binary = host::inspect(&file, path).expect("inspect");
    let mut wanted = reference("");
    wanted.kernel_name = kernel_name;
    let error = HostTransform::plan(&binary, &wanted).expect_err("refused");
    assert!(matches!(error, DeviceCodeError::HostLayout { .. }), "{error}");
    assert!(error.to_string().contains(&path.display().to_string()), "{error}");
    error
}

/// An executable whose `.hip_fatbin` is in a segment with another address − offset than
/// the first one's is refused: Linux before 5.18 would compute AT_PHDR from the first
/// segment and miss the moved program header table (the same layout in a shared object
/// splits, `shapes`).
#[test]
fn an_executable_whose_table_old_kernels_would_miss_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = fat::build_runtime(dir.path(), &RuntimeAbi::default());
    let input = fat::build(Shape::PieWithFatbinAfterText, dir.path(), &runtime);
    let error = refusal(&input);
    assert!(matches!(error, DeviceCodeError::HostLayout { .. }), "{error}");
    assert!(error.to_string().contains("Linux before 5.18"), "{error}");
}

/// A relocation naming a symbol defined in `.hip_fatbin` (`-fgpu-rdc` exports
/// `__hip_fatbin`) resolves into it as surely as a RELATIVE one: refused.
#[test]
fn a_relocation_naming_a_fatbin_symbol_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = fat::build_runtime(dir.path(), &RuntimeAbi::default());
    let input = fat::build(Shape::Relocatable, dir.path(), &runtime);
    let headers = ElfHeaders::read(&File::open(&input).expect("open"), &input).expect("headers");
    let symbols =
        crate::support::stdout(&run(Command::new("readelf").args(["--dyn-syms", "-W"]).arg(&input), "binutils"));
    let index: u64 = symbols
        .lines()
        .find(|line| line.ends_with(" __hip_fatbin"))
        .and_then(|line| line.split(':').next()?.trim().parse().ok())
        .expect("__hip_fatbin in .dynsym");
    let (_, table) = section(&headers, ".rela.dyn");
    let bytes = std::fs::read(&input).expect("read");
    let absolute = (0..table.size / 24)
        .map(|entry| (table.offset + entry * 24) as usize)
        .find(|&at| bytes[at + 8..at + 12] == 1u32.to_le_bytes())
        .expect("an R_X86_64_64 relocation");
    let named = damaged(&input, "named.so", absolute as u64 + 8, &((index << 32) | 1).to_le_bytes());
    let error = refusal(&named);
    assert!(error.to_string().contains("resolves into `.hip_fatbin`"), "{error}");
}

/// A library without device code is not fat; a file that changes between the plan and the
/// write is refused before a byte is written.
#[test]
fn plain_and_changed_files_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("plain.c");
    std::fs::write(&source, "int answer(void) { return 42; }\n").expect("write");
    let plain = dir.path().join("libplain.so");
    run(Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&plain).arg(&source), "gcc");
    let binary = host::inspect(&File::open(&plain).expect("open"), &plain).expect("inspect");
    assert_eq!((binary.state(), binary.wrappers().len(), binary.fatbin().is_none()), (FatState::NotFat, 0, true));
    let error = refusal(&plain);
    assert!(matches!(error, DeviceCodeError::NotFat { .. }), "{error}");

    let runtime = fat::build_runtime(dir.path(), &RuntimeAbi::default());
    let input = fat::build(Shape::SharedObject, dir.path(), &runtime);
    let file = File::open(&input).expect("open");
    let plan = HostTransform::plan(&host::inspect(&file, &input).expect("inspect"), &reference("k")).expect("plan");
    std::fs::OpenOptions::new().append(true).open(&input).expect("open").write_all(b"more").expect("append");
    let mut out = Vec::new();
    let error = plan.write_to(&file, &mut out).expect_err("changed");
    assert!(matches!(error, DeviceCodeError::InputChanged { .. }), "{error}");
    assert!(out.is_empty() && plan.reader(&file).is_err());
}
