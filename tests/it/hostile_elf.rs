//! Corrupt ELF files inside a core artifact: packaging fails with an error naming the file
//! and a hint, never a panic, and `dist/` keeps what the last good run wrote.

use super::{dist_snapshot, full_text, Example};

fn put_u16(bytes: &mut [u8], at: usize, value: u16) {
    bytes[at..at + 2].copy_from_slice(&value.to_le_bytes());
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

fn get_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

fn get_u16(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().expect("2 bytes"))
}

/// Offset of the first program header of type `p_type` in a 64-bit little-endian file.
fn program_header(bytes: &[u8], p_type: u32) -> usize {
    let (phoff, phnum) = (get_u64(bytes, 0x20) as usize, get_u16(bytes, 0x38) as usize);
    (0..phnum)
        .map(|index| phoff + index * 56)
        .find(|&at| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) == p_type)
        .expect("program header present")
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;

/// Broken variants of a real 64-bit shared library, each with what it breaks.
fn variants(good: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    let mut add = |what: &'static str, edit: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = good.to_vec();
        edit(&mut bytes);
        out.push((what, bytes));
    };
    add("truncated inside the file header", &|b| b.truncate(40));
    add("truncated after the header", &|b| b.truncate(64));
    add("truncated in the middle", &|b| b.truncate(good.len() / 2));
    add("32-bit class on 64-bit contents", &|b| b[4] = 1);
    add("unknown class", &|b| b[4] = 7);
    add("unknown byte order", &|b| b[5] = 9);
    add("huge e_shnum", &|b| put_u16(b, 0x3c, 0xffff));
    add("section headers past the end", &|b| put_u64(b, 0x28, good.len() as u64 + 4096));
    add("section header offset overflows", &|b| put_u64(b, 0x28, u64::MAX - 8));
    add("huge e_phnum", &|b| put_u16(b, 0x38, 0xffff));
    add("program headers past the end", &|b| put_u64(b, 0x20, good.len() as u64 + 64));
    add("program header offset overflows", &|b| put_u64(b, 0x20, u64::MAX - 16));
    add("dynamic segment past the end", &|b| {
        let at = program_header(b, PT_DYNAMIC);
        put_u64(b, at + 8, good.len() as u64 * 4);
    });
    add("dynamic segment size huge", &|b| {
        let at = program_header(b, PT_DYNAMIC);
        put_u64(b, at + 32, u64::MAX / 2);
        put_u64(b, at + 40, u64::MAX / 2);
    });
    add("overlapping loadable segments", &|b| {
        // Every PT_LOAD claims the whole address space from 0.
        let (phoff, phnum) = (get_u64(b, 0x20) as usize, get_u16(b, 0x38) as usize);
        for at in (0..phnum).map(|index| phoff + index * 56) {
            if u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes")) == PT_LOAD {
                put_u64(b, at + 16, 0);
                put_u64(b, at + 40, u64::MAX / 4);
            }
        }
    });
    add("string table past the end", &|b| {
        // DT_STRTAB (5) in the dynamic array → far past the end of the file.
        let dynamic = program_header(b, PT_DYNAMIC);
        let (offset, size) = (get_u64(b, dynamic + 8) as usize, get_u64(b, dynamic + 32) as usize);
        for entry in (offset..offset + size).step_by(16) {
            if get_u64(b, entry) == 5 {
                put_u64(b, entry + 8, 1 << 40);
            }
        }
    });
    out
}

#[test]
fn corrupt_elf_files_fail_the_run_naming_them() {
    let example = Example::new();
    let scratch = example.temp.path().join("scratch");
    fs_err::create_dir_all(&scratch).expect("mkdir");
    let good = crate::support::shared_lib(&scratch, "libbroken.so.1", "int broken(void) { return 1; }\n", &[]);
    let good = fs_err::read(good).expect("read the compiled library");

    example.package().expect("the unbroken example packages");
    let before = dist_snapshot(&example.dist());
    let broken = example.core_stage().join("lib/libbroken.so.1");
    let mut outcomes = Vec::new();
    for (what, bytes) in variants(&good) {
        fs_err::write(&broken, &bytes).expect("write the broken library");
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| example.package()));
        let error = match result {
            Err(_) => panic!("{what}: packaging panicked"),
            Ok(Ok(_)) => {
                // Accepted: then the file must be shipped exactly as it was (not a
                // half-edited copy), and dist must hold a complete set.
                outcomes.push(format!("{what}: packaged"));
                let wheel = example.core_wheel();
                let member = wheel
                    .iter()
                    .find(|(name, _)| name.ends_with("/lib/libbroken.so.1"))
                    .unwrap_or_else(|| panic!("{what}: accepted but not shipped"));
                assert_eq!(member.1, &bytes, "{what}: accepted but changed");
                let report = release_gate::verify_dist(&example.dist()).expect("dist verifies");
                assert_eq!(report.n_violations(), 0, "{what}: {report:?}");
                fs_err::remove_file(&broken).expect("rm");
                example.package().expect("repackage without it");
                continue;
            }
            Ok(Err(error)) => error,
        };
        let text = full_text(&error);
        outcomes.push(format!("{what}: {}", error));
        assert!(text.contains(&broken.display().to_string()), "{what}: {text}");
        assert!(text.contains("hint: "), "{what}: {text}");
        let after = dist_snapshot(&example.dist());
        assert!(before == after, "{what}: dist changed by a failed run");
    }
    println!("{}", outcomes.join("\n"));
}
