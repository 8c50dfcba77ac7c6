//! Malformed ELF: hand-made breakages and a proptest harness over mutated corpus
//! files. Reader and planner must return an error naming the file, never panic; an edit
//! planned on a mutated file must apply through `SplicedReader` and read back.

use std::path::Path;

use elf_rpath::ElfError;
use proptest::prelude::*;

use super::corpus::{corpus, ADDED_ENTRIES};
use super::write_spliced;

/// Runs reader and planner on `path`; every error must name it, and a planned edit must
/// apply and read back the requested RPATH. Returns the errors' texts for assertions.
fn exercise(path: &Path) -> Vec<String> {
    let rpath = ADDED_ENTRIES.join(":");
    let name = path.display().to_string();
    let mut errors = Vec::new();
    let mut note = |error: ElfError| {
        let text = error.to_string();
        assert!(text.contains(&name), "error does not name the file: {text}");
        errors.push(text);
    };
    if let Err(error) = elf_rpath::read_elf(path) {
        note(error);
    }
    match elf_rpath::plan_set_rpath(path, &rpath) {
        Ok(edit) if !edit.is_unchanged() => {
            let out = path.with_extension("patched");
            write_spliced(path, &edit, &out);
            let info = elf_rpath::read_elf(&out).expect("a planned edit reads back").expect("still ELF");
            assert_eq!(info.rpath.as_deref(), Some(rpath.as_str()));
            assert!(elf_rpath::plan_set_rpath(&out, &rpath).expect("plan again").is_unchanged());
        }
        Ok(_) => {}
        Err(error) => note(error),
    }
    errors
}

fn small_corpus_files() -> Vec<(String, Vec<u8>)> {
    corpus()
        .files
        .iter()
        .filter(|file| fs_err::metadata(&file.path).expect("stat").len() < 512 * 1024)
        .map(|file| (file.name.clone(), fs_err::read(&file.path).expect("read corpus file")))
        .collect()
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// `(offset of the program header, p_type)` for each entry.
fn program_headers(bytes: &[u8]) -> Vec<(usize, u32)> {
    let (phoff, phnum) = (le_u64(bytes, 32) as usize, u16::from_le_bytes([bytes[56], bytes[57]]) as usize);
    (0..phnum)
        .map(|index| {
            let at = phoff + index * 56;
            (at, u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")))
        })
        .collect()
}

/// Turns a good file's bytes into a broken one.
type Breakage = Box<dyn Fn(&mut Vec<u8>)>;

#[test]
fn hand_made_breakages_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plain = fs_err::read(&corpus().files.iter().find(|file| file.name == "plain").expect("plain").path)
        .expect("read plain");
    let loads: Vec<usize> =
        program_headers(&plain).into_iter().filter(|(_, p_type)| *p_type == 1).map(|(at, _)| at).collect();
    let dynamic = program_headers(&plain).into_iter().find(|(_, p_type)| *p_type == 2).expect("PT_DYNAMIC").0;
    let cases: Vec<(&str, Breakage, &str)> = vec![
        ("class", Box::new(|b| b[4] = 7), "unknown ELF class byte 7"),
        ("encoding", Box::new(|b| b[5] = 0), "unknown ELF data encoding"),
        ("phnum", Box::new(|b| b[56..58].copy_from_slice(&0xfffeu16.to_le_bytes())), "past the end"),
        ("phoff", Box::new(|b| b[32..40].copy_from_slice(&u64::MAX.to_le_bytes())), "overflows"),
        ("phentsize", Box::new(|b| b[54..56].copy_from_slice(&40u16.to_le_bytes())), "e_phentsize"),
        ("shnum", Box::new(|b| b[60..62].copy_from_slice(&0xffffu16.to_le_bytes())), "section header table"),
        (
            "dynamic past end",
            Box::new(move |b| b[dynamic + 8..dynamic + 16].copy_from_slice(&(1u64 << 40).to_le_bytes())),
            "dynamic section",
        ),
        (
            "overlapping loads",
            Box::new(move |b| {
                let first_vaddr = le_u64(b, loads[0] + 16);
                b[loads[1] + 16..loads[1] + 24].copy_from_slice(&first_vaddr.to_le_bytes());
            }),
            "overlaps",
        ),
        ("header only", Box::new(|b| b.truncate(40)), "past the end"),
    ];
    for (name, break_it, expected) in cases {
        let mut bytes = plain.clone();
        break_it(&mut bytes);
        let path = dir.path().join(name.replace(' ', "-"));
        fs_err::write(&path, &bytes).expect("write broken file");
        let errors = exercise(&path);
        assert!(errors.iter().any(|error| error.contains(expected)), "{name}: expected {expected:?} in {errors:?}");
    }
}

#[test]
fn truncation_at_many_offsets_is_an_error_never_a_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, bytes) in
        small_corpus_files().into_iter().filter(|(name, _)| ["plain", "nopie"].contains(&name.as_str()))
    {
        let step = (bytes.len() / 200).max(1);
        for cut in (4..bytes.len()).step_by(step) {
            let path = dir.path().join(format!("{name}-{cut}"));
            fs_err::write(&path, &bytes[..cut]).expect("write truncated file");
            exercise(&path);
        }
    }
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Set one byte (positions biased towards the headers).
    Byte {
        at: usize,
        value: u8,
    },
    /// Overwrite an aligned 8-byte word with an extreme value.
    Word {
        at: usize,
        value: u64,
    },
    Truncate {
        at: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let position = prop_oneof![0usize..128, 0usize..4096, any::<usize>()];
    let extreme = prop_oneof![Just(0u64), Just(u64::MAX), Just(1u64 << 40), Just(0xffffu64), any::<u64>()];
    prop_oneof![
        4 => (position.clone(), any::<u8>()).prop_map(|(at, value)| Mutation::Byte { at, value }),
        3 => (position.clone(), extreme).prop_map(|(at, value)| Mutation::Word { at: at & !7, value }),
        1 => position.prop_map(|at| Mutation::Truncate { at }),
    ]
}

fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    match *mutation {
        Mutation::Byte { at, value } => {
            let at = at % bytes.len();
            bytes[at] = value;
        }
        Mutation::Word { at, value } => {
            let at = at % bytes.len();
            let end = (at + 8).min(bytes.len());
            bytes[at..end].copy_from_slice(&value.to_le_bytes()[..end - at]);
        }
        Mutation::Truncate { at } => bytes.truncate(at % bytes.len()),
    }
}

proptest! {
    // Bounded so CI runs it on every push: proptest's default of 256 cases;
    // `PROPTEST_CASES=100000` runs more (the default config reads it; a literal would not).
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_corpus_files_never_panic(pick in any::<usize>(), mutations in prop::collection::vec(mutation(), 1..5)) {
        static FILES: std::sync::OnceLock<Vec<(String, Vec<u8>)>> = std::sync::OnceLock::new();
        let files = FILES.get_or_init(small_corpus_files);
        let (name, original) = &files[pick % files.len()];
        let mut bytes = original.clone();
        for mutation in &mutations {
            apply(&mut bytes, mutation);
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(name);
        fs_err::write(&path, &bytes).expect("write mutated file");
        exercise(&path);
    }
}
