//! Damage everywhere: every byte the transform reads of a fat binary's headers and
//! relocations, changed in turn, is split or refused by name, never a panic.

use std::fs::File;
use std::os::unix::fs::FileExt;

use device_code::elf_headers::{ElfHeaders, SHDR_SIZE};
use device_code::host::{self, HostTransform};

use crate::fat::{self, RuntimeAbi, Shape};
use crate::hostile::{relocation_of, section};
use crate::support::reference;

/// Every byte of the header tables, of the first wrapper and of what relocates its pointer
/// (its RELA entry, or the packed relocations) set to 0x00, 0x01 and 0xff in turn: each copy
/// is split or refused, never a panic (the tests run with overflow checks), and a split one
/// is written in full.
#[test]
fn no_header_byte_makes_the_transform_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = fat::build_runtime(dir.path(), &RuntimeAbi::default());
    for shape in [Shape::SharedObject, Shape::GnuLdPacked] {
        let work = dir.path().join(format!("{shape:?}"));
        std::fs::create_dir(&work).expect("mkdir");
        let input = fat::build(shape, &work, &runtime);
        let original = std::fs::read(&input).expect("read");
        let headers = ElfHeaders::read(&File::open(&input).expect("open"), &input).expect("headers");
        let (_, segment) = section(&headers, ".hipFatBinSegment");
        let relocation = match shape {
            Shape::GnuLdPacked => {
                let (_, packed) = section(&headers, ".relr.dyn");
                (packed.offset, packed.offset + packed.size)
            }
            _ => {
                let pointer = relocation_of(&input, &headers, segment.addr + 8);
                (pointer, pointer + 24)
            }
        };
        let header = &headers.header;
        let ranges = [
            (0, 64),
            (header.phoff, header.phoff + headers.segments.len() as u64 * 56),
            (header.shoff, header.shoff + headers.sections.len() as u64 * SHDR_SIZE as u64),
            (segment.offset, segment.offset + 24),
            relocation,
        ];
        let path = work.join("mutant.so");
        std::fs::write(&path, &original).expect("write");
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).expect("open");
        let (mut split, mut refused) = (0, 0);
        for (start, end) in ranges {
            for offset in start..end {
                for value in [0x00, 0x01, 0xff] {
                    file.write_all_at(&[value], offset).expect("mutate");
                    let plan = host::inspect(&file, &path)
                        .and_then(|binary| HostTransform::plan(&binary, &reference("k")))
                        .and_then(|plan| plan.write_to(&file, &mut std::io::sink()));
                    match plan {
                        Ok(()) => split += 1,
                        Err(error) => {
                            assert!(error.to_string().contains(&path.display().to_string()), "{error}");
                            refused += 1;
                        }
                    }
                    file.write_all_at(&original[offset as usize..offset as usize + 1], offset).expect("restore");
                }
            }
        }
        eprintln!("{shape:?} mutants split: {split}, refused: {refused}");
        assert!(split > 0 && refused > 0, "{shape:?}");
    }
}
