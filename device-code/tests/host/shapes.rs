//! Every shape of fat binary clang writes (shared object, PIE, fixed-address executable,
//! several units, `-fgpu-rdc`), split, judged by eu-elflint, readelf, objcopy and Python's
//! msgpack, and loaded against the stub runtime before and after.

use std::fs::File;
use std::path::Path;

use device_code::elf_headers::ElfHeaders;
use device_code::host::{self, FatState, HostTransform, MAGIC_KPACK};
use device_code::DeviceCodeError;

use crate::fat::{self, RuntimeAbi, Shape};
use crate::support::{self, assert_no_new_complaints, reference, run, stdout};

const PAGE: u64 = 4096;

#[test]
fn every_shape_splits_and_registers_its_marker() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = fat::build_runtime(dir.path(), &RuntimeAbi::default());
    for shape in Shape::ALL {
        let work = dir.path().join(format!("{shape:?}"));
        std::fs::create_dir(&work).expect("mkdir");
        let input = fat::build(shape, &work, &runtime);
        let wanted = reference(&format!("lib/{shape:?}.so"));
        let file = File::open(&input).expect("open");
        let binary = host::inspect(&file, &input).expect("inspect");
        assert_eq!(binary.state(), FatState::Fat, "{shape:?}");
        let units = binary.wrappers().len();
        let expected_units = match shape {
            Shape::ThreeUnits => 3,
            Shape::Relocatable => 2,
            _ => 1,
        };
        assert_eq!(units, expected_units, "{shape:?}");
        let fatbin_size = binary.fatbin().expect(".hip_fatbin").size;
        let mut offsets: Vec<u64> =
            binary.wrappers().iter().map(|wrapper| wrapper.fatbin_offset.expect("inside")).collect();
        offsets.dedup();
        // Each unit registers its own bundle, except under `-fgpu-rdc`: one device link, one
        // bundle at the section's start, registered by every unit's wrapper.
        if shape == Shape::Relocatable {
            assert_eq!(offsets, [0], "{shape:?}");
        } else {
            assert_eq!(offsets.len(), units, "{shape:?}: each wrapper registers a bundle of its own");
        }

        let (before, ran) = fat::registrations(&fat::run_against_stub(&input, shape, &runtime));
        assert!(ran, "{shape:?} does not run before the split");
        // Under `-fgpu-rdc` the units share one handle: the first constructor registers.
        let registered = if shape == Shape::Relocatable { 1 } else { units };
        assert_eq!(before.len(), registered, "{shape:?}: {before:?}");
        for registration in &before {
            assert_eq!((registration.magic.as_str(), registration.version, registration.index), ("HIPF", 1, 0));
            assert_eq!(registration.details, ["bundle=__CLANG_OFFLOAD_BUNDLE__"], "{shape:?}");
        }

        let output = work.join("split");
        let plan = support::transform(&input, &output, &wanted);
        let (after, ran) = fat::registrations(&fat::run_against_stub(&output, shape, &runtime));
        assert!(ran, "{shape:?} does not run after the split");
        assert_eq!(after.len(), registered, "{shape:?}: {after:?}");
        let mut expected_details: Vec<String> = wanted.search_paths.iter().map(|path| format!("path={path}")).collect();
        expected_details.push(format!("kernel={}", wanted.kernel_name));
        for (index, registration) in after.iter().enumerate() {
            assert_eq!((registration.magic.as_str(), registration.version), ("HIPK", 1), "{shape:?}");
            if shape == Shape::Relocatable {
                assert!((registration.index as usize) < units, "{shape:?}: {registration:?}");
            } else {
                assert_eq!(registration.index as usize, index, "{shape:?}: indexes follow the segment's order");
            }
            assert_eq!(registration.details, expected_details, "{shape:?}");
        }

        assert_no_new_complaints(&input, &output);
        assert_no_bundle_left(&output);
        check_readelf(&output, shape);
        assert_eq!(marker_with_objcopy(&output, &work), support::marker_json(&wanted), "{shape:?}");
        let input_len = std::fs::metadata(&input).expect("stat").len();
        assert!(plan.removed_len() > 0 && plan.removed_len() % PAGE == 0, "{shape:?}");
        assert!(plan.removed_len() + 3 * PAGE > fatbin_size, "{shape:?}: removed {}", plan.removed_len());
        assert!(plan.output_len() + plan.removed_len() < input_len + PAGE, "{shape:?}");
        assert_split(&output, units, &wanted);
        let read = |path: &Path| {
            let headers = ElfHeaders::read(&File::open(path).expect("open"), path).expect("headers");
            (headers.header.phoff, headers.segments.len())
        };
        let (was, is) = (read(&input), read(&output));
        if shape == Shape::LastInSegment {
            assert_eq!(is, was, "{shape:?}: the program headers stay where they were");
        } else {
            assert_eq!(is.1, was.1 + 1, "{shape:?}: one segment more");
        }
    }
}

/// No offload bundle is left in the file: its pages are gone and the rest zeroed.
fn assert_no_bundle_left(output: &Path) {
    let bytes = std::fs::read(output).expect("read");
    let magic = b"__CLANG_OFFLOAD_BUNDLE__";
    assert!(!bytes.windows(magic.len()).any(|window| window == magic), "{}", output.display());
}

/// The split file is recognised as such and not transformed again.
fn assert_split(output: &Path, units: usize, wanted: &device_code::host::KpackRef) {
    let file = File::open(output).expect("open");
    let again = host::inspect(&file, output).expect("inspect the split file");
    assert_eq!(again.state(), FatState::AlreadySplit);
    assert_eq!(again.wrappers().len(), units);
    for (index, wrapper) in again.wrappers().iter().enumerate() {
        assert_eq!(
            (wrapper.magic, wrapper.version, wrapper.reserved, wrapper.fatbin_offset),
            (MAGIC_KPACK, 1, index as u64, None)
        );
    }
    let refused = HostTransform::plan(&again, wanted).expect_err("a split file is not split again");
    assert!(matches!(refused, DeviceCodeError::AlreadySplit { .. }), "{refused}");
    assert!(refused.to_string().contains(&output.display().to_string()), "{refused}");
}

/// `readelf -lSW`: `.hip_fatbin` is NOBITS, `.rocm_kpack_ref` is allocated and only in
/// read-only `PT_LOAD`s.
fn check_readelf(output: &Path, shape: Shape) {
    let text = stdout(&run(std::process::Command::new("readelf").arg("-lSW").arg(output), "binutils"));
    let section = |name: &str| {
        text.lines()
            .find(|line| line.contains(&format!("] {name} ")))
            .unwrap_or_else(|| panic!("{shape:?}: no {name} in\n{text}"))
            .to_owned()
    };
    assert!(section(".hip_fatbin").contains(" NOBITS "), "{shape:?}: {}", section(".hip_fatbin"));
    let marker = section(".rocm_kpack_ref");
    assert!(marker.contains(" PROGBITS ") && marker.trim_end().contains("  A  "), "{shape:?}: {marker}");
    let segments: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.trim_start().starts_with("Type"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| !line.trim_start().starts_with('['))
        .collect();
    let mapping: Vec<&str> =
        text.lines().skip_while(|line| !line.contains("Section to Segment mapping")).skip(2).collect();
    let holders: Vec<usize> = mapping
        .iter()
        .filter(|line| line.split_whitespace().any(|name| name == ".rocm_kpack_ref"))
        .filter_map(|line| line.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(!holders.is_empty(), "{shape:?}: no segment holds the marker\n{text}");
    for holder in holders {
        let line = segments[holder];
        let kind = line.split_whitespace().next().expect("type");
        assert!(matches!(kind, "LOAD" | "PHDR"), "{shape:?}: {line}");
        if kind == "LOAD" {
            assert!(line.contains(" R   0x") && !line.contains(" RW ") && !line.contains(" E "), "{shape:?}: {line}");
        }
    }
}

/// The marker section's bytes as `objcopy -O binary --only-section` dumps them, decoded by
/// Python's msgpack into JSON.
fn marker_with_objcopy(output: &Path, work: &Path) -> String {
    let dumped = work.join("marker.bin");
    let copy = work.join("copy");
    std::fs::copy(output, &copy).expect("copy");
    run(
        std::process::Command::new("objcopy")
            .args(["-O", "binary", "--only-section=.rocm_kpack_ref"])
            .arg(&copy)
            .arg(&dumped),
        "binutils",
    );
    support::decode_marker(&std::fs::read(&dumped).expect("read the dump"))
}

/// A marker too large to leave a whole page of `.hip_fatbin` behind it: nothing leaves the
/// file, the section keeps its bytes as zeros after the marker, and the binary still loads
/// and registers the marker (a 9000-byte kernel name, MessagePack's str16). The reader gives
/// the same bytes as `write_to`.
#[test]
fn a_marker_filling_the_section_removes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = fat::build_runtime(dir.path(), &RuntimeAbi::default());
    let input = fat::build(Shape::SharedObject, dir.path(), &runtime);
    let mut wanted = reference("");
    wanted.kernel_name = "k".repeat(9000);
    let output = dir.path().join("split.so");
    let plan = support::transform(&input, &output, &wanted);
    assert_eq!(plan.removed_len(), 0);
    let mut read = Vec::new();
    let file = File::open(&input).expect("open");
    std::io::copy(&mut plan.reader(&file).expect("reader"), &mut read).expect("read");
    assert_eq!(read, std::fs::read(&output).expect("read output"));

    let (after, ran) = fat::registrations(&fat::run_against_stub(&output, Shape::SharedObject, &runtime));
    assert!(ran);
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].details.last(), Some(&format!("kernel={}", wanted.kernel_name)));
    assert_no_new_complaints(&input, &output);
    let text = stdout(&run(std::process::Command::new("readelf").arg("-SW").arg(&output), "binutils"));
    let fatbin = text.lines().find(|line| line.contains("] .hip_fatbin ")).expect(".hip_fatbin");
    assert!(fatbin.contains(" PROGBITS "), "{fatbin}");
    assert_no_bundle_left(&output);
    assert_eq!(marker_with_objcopy(&output, dir.path()), support::marker_json(&wanted));
    assert_split(&output, 1, &wanted);
}
