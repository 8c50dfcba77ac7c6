//! Layouts real builds have and `cc` does not make by default (SPEC §6): address
//! space holes left by the kpack splitter, program header tables moved by patchelf or by
//! our own grown layout. Every edit must leave the file as `eu-elflint` found it, grow it by
//! the edit plus less than a page, and take in-place edits wherever the strings fit.

use std::path::Path;

use anyhow::{ensure, Context};
use elf_rpath::EditStrategy;

use super::corpus::{corpus, elflint, long_relative_rpath, CorpusFile, Usage};
use super::{loads, readelf, requested_rpath, run_program, sibling_copy, write_spliced};

/// The page size the corpus is built for (x86_64).
const PAGE: u64 = 4096;

/// Plans `rpath` for `file`, writes the result into `work` beside copies of its siblings,
/// and checks that it reads back, behaves as the original, and needs no second edit.
fn edit_and_check(file: &CorpusFile, rpath: &str, work: &Path) -> anyhow::Result<(EditStrategy, u64)> {
    let edit = elf_rpath::plan_set_rpath(&file.path, rpath)?;
    let patched = sibling_copy(&file.path, work);
    write_spliced(&file.path, &edit, &patched);
    let after = elf_rpath::read_elf(&patched)?.context("the edited file is not ELF")?;
    ensure!(after.rpath.as_deref() == Some(rpath) && after.runpath.is_none(), "reads back {after:?}");
    match &file.usage {
        Usage::Library => ensure!(loads(&patched), "the edited library no longer loads"),
        Usage::Executable(args) => {
            let (want, got) = (run_program(&file.path, args), run_program(&patched, args));
            ensure!(want == got, "the program behaves differently: {want:?} before, {got:?} after");
        }
        Usage::Foreign => {}
    }
    let again = elf_rpath::plan_set_rpath(&patched, rpath)?;
    ensure!(again.is_unchanged(), "a second plan of the same edit is {:?}", again.strategy);
    let (was, is) = (elflint(&file.path)?, elflint(&patched)?);
    let new: Vec<&String> = is.difference(&was).collect();
    ensure!(new.is_empty(), "eu-elflint finds new problems: {new:?} (before the edit: {was:?})");
    Ok((edit.strategy, edit.new_len() - edit.original_len))
}

/// `eu-elflint --gnu-ld` on every corpus file before and after each kind of edit: adding
/// the packager's entries, setting a long path (grown), setting a short one. A file it
/// accepted must still pass; a file an earlier patchelf left with complaints gets no new one.
#[test]
fn every_edit_leaves_eu_elflint_no_new_complaint() {
    let corpus = corpus();
    let work = tempfile::tempdir().expect("work dir");
    let (mut failures, mut clean_before, mut clean_after, mut runs) = (Vec::new(), 0, 0, 0);
    for file in &corpus.files {
        let before = elf_rpath::read_elf(&file.path).expect("read").expect("ELF");
        let modes = [
            ("add", requested_rpath(before.search_path(), file.keep_absolute)),
            // `$ORIGIN` last: a library that needs a sibling must still load.
            ("set", format!("{}:$ORIGIN", long_relative_rpath())),
            ("shorten", "$ORIGIN".to_string()),
        ];
        for (mode, rpath) in modes {
            if file.keep_absolute && mode != "add" {
                continue; // the interpreter needs its absolute entry to run at all
            }
            runs += 1;
            let out = work.path().join(format!("{}-{mode}", file.name));
            match edit_and_check(file, &rpath, &out) {
                Ok(_) => {
                    let clean = |path: &Path| elflint(path).map(|complaints| complaints.is_empty()).unwrap_or(false);
                    clean_before += usize::from(clean(&file.path));
                    clean_after += usize::from(clean(&out.join(file.path.file_name().expect("name"))));
                }
                Err(error) => failures.push(format!("{} ({mode}): {error:#}", file.name)),
            }
        }
    }
    eprintln!("eu-elflint: {runs} edits; accepted before {clean_before}, after {clean_after}");
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
    assert!(clean_after >= clean_before, "fewer files pass eu-elflint after the edits");
}

/// `PT_LOAD` lines of `readelf -lW` as (offset, vaddr).
fn loads_of(readelf_text: &str) -> Vec<(u64, u64)> {
    let hex = |field: &str| u64::from_str_radix(field.trim_start_matches("0x"), 16).expect("readelf prints hex");
    readelf_text
        .lines()
        .map(str::split_whitespace)
        .filter_map(|mut fields| (fields.next() == Some("LOAD")).then(|| fields.collect::<Vec<_>>()))
        .map(|fields| (hex(fields[0]), hex(fields[1])))
        .collect()
}

/// A 1 GiB hole in the address space with no file bytes behind it (the kpack split's shape)
/// costs nothing: the grown file is at most 64 KiB larger, still loads or runs, and every
/// `PT_LOAD` keeps offset ≡ address modulo the page size.
#[test]
fn a_hole_in_the_address_space_costs_no_padding() {
    let corpus = corpus();
    let work = tempfile::tempdir().expect("work dir");
    let holes: Vec<&CorpusFile> = corpus.files.iter().filter(|file| file.name.contains("hole")).collect();
    assert!(holes.len() >= 6, "the corpus lost its hole-shaped files: {}", holes.len());
    let mut report = Vec::new();
    for file in holes {
        let text = readelf(&file.path).expect("readelf the original");
        let starts: Vec<u64> = loads_of(&text).iter().map(|(_, vaddr)| *vaddr).collect();
        let widest = starts.windows(2).map(|pair| pair[1] - pair[0]).max().unwrap_or(0);
        assert!(widest > 1 << 30, "{} has no 1 GiB hole:\n{text}", file.name);
        let out = work.path().join(&file.name);
        // Longer than any path the corpus files carry (patchelf set `long_relative_rpath`).
        let rpath = format!("{}:$ORIGIN/../lib", long_relative_rpath());
        let (strategy, growth) =
            edit_and_check(file, &rpath, &out).unwrap_or_else(|error| panic!("{}: {error:#}", file.name));
        assert_eq!(strategy, EditStrategy::Grown, "{}", file.name);
        assert!(growth <= 64 << 10, "{} grew by {growth} bytes", file.name);
        let edited = readelf(&out.join(file.path.file_name().expect("name"))).expect("readelf the edited file");
        for (offset, vaddr) in loads_of(&edited) {
            assert_eq!(offset % PAGE, vaddr % PAGE, "{}: LOAD at {offset:#x} maps {vaddr:#x}\n{edited}", file.name);
        }
        report.push(format!("{} +{growth}", file.name));
    }
    eprintln!("hole-shaped files grown by: {}", report.join(", "));
}

/// A search path of the same length, a shorter one, or the same one (only RUNPATH becomes
/// RPATH) is written in place on every layout: tables moved by patchelf or by our grown
/// layout, holes in the address space. Never refused, never grown, idempotent.
#[test]
fn moved_tables_and_holes_take_every_in_place_edit() {
    let corpus = corpus();
    let work = tempfile::tempdir().expect("work dir");
    let odd = |file: &&CorpusFile| {
        file.name.ends_with("-moved") || file.name.ends_with("-patchelfed") || file.name.contains("hole")
    };
    let (mut failures, mut done, mut retagged) = (Vec::new(), 0, 0);
    for file in corpus.files.iter().filter(odd) {
        let before = elf_rpath::read_elf(&file.path).expect("read").expect("ELF");
        let Some(current) = before.search_path().map(str::to_owned) else { continue };
        let same_length = format!("$ORIGIN{}", "/".repeat(current.len().saturating_sub(7)));
        for (label, rpath) in [("shorter", "$ORIGIN".to_string()), ("same length", same_length), ("retag", current)] {
            let out = work.path().join(format!("{}-{}", file.name, label.replace(' ', "-")));
            match edit_and_check(file, &rpath, &out) {
                Ok((EditStrategy::Grown, _)) => failures.push(format!("{} ({label}): grew", file.name)),
                Ok((strategy, _)) => {
                    done += 1;
                    retagged += usize::from(label == "retag" && strategy == EditStrategy::InPlace);
                }
                Err(error) => failures.push(format!("{} ({label}): {error:#}", file.name)),
            }
        }
    }
    eprintln!("in-place edits on moved or hole-shaped layouts: {done}, RUNPATH retagged: {retagged}");
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
    assert!(done >= 15 && retagged >= 2, "too few edits exercised: {done}, retagged {retagged}");
}

/// Real ROCm libraries as Debian ships them (HIP runtime, rocRAND with its `.hip_fatbin`),
/// downloaded once into `target/tmp/debian-rocm`: edited the way the packager edits a
/// libraries wheel, they read back, need no second edit, grow by the block plus less than a
/// page, and leave `eu-elflint` nothing new to say.
#[test]
fn real_rocm_libraries_from_debian_edit_cleanly() {
    let libraries = debian_rocm_libraries().unwrap_or_else(|error| panic!("{error:#}"));
    assert!(libraries.len() >= 2, "found {libraries:?}");
    let work = tempfile::tempdir().expect("work dir");
    for (index, path) in libraries.iter().enumerate() {
        let before = elf_rpath::read_elf(path).expect("read").expect("ELF");
        let rpath = requested_rpath(before.search_path(), false);
        let edit =
            elf_rpath::plan_set_rpath(path, &rpath).unwrap_or_else(|error| panic!("{}: {error:#}", path.display()));
        let out = work.path().join(format!("{index}.so"));
        write_spliced(path, &edit, &out);
        let after = elf_rpath::read_elf(&out).expect("read").expect("ELF");
        assert_eq!((after.rpath.as_deref(), &after.needed), (Some(rpath.as_str()), &before.needed), "{path:?}");
        assert!(elf_rpath::plan_set_rpath(&out, &rpath).expect("plan again").is_unchanged(), "{path:?}");
        // The block holds the table, `.dynamic` and `.dynstr`, a few KiB to a few tens.
        let growth = edit.new_len() - edit.original_len;
        assert!(growth <= 64 << 10, "{path:?} grew by {growth} bytes");
        let (was, is) = (elflint(path).expect("eu-elflint"), elflint(&out).expect("eu-elflint"));
        assert!(is.is_subset(&was), "{path:?}: eu-elflint finds {:?} (before: {was:?})", is.difference(&was));
        eprintln!("{}: {:?}, +{growth} bytes", path.display(), edit.strategy);
    }
}

/// The shared libraries of Debian's `libamdhip64-5` and `librocrand1`, fetched with
/// `apt-get download` (after `apt-get update` when the lists are empty) and unpacked with
/// `dpkg-deb`; kept across runs.
pub(crate) fn debian_rocm_libraries() -> anyhow::Result<Vec<std::path::PathBuf>> {
    let unpacked = debian_packages("debian-rocm", &["libamdhip64-5", "librocrand1"])?;
    let lib = unpacked.join("usr/lib/x86_64-linux-gnu");
    let mut libraries = Vec::new();
    for entry in fs_err::read_dir(&lib)? {
        let entry = entry?;
        if entry.file_type()?.is_file() && entry.file_name().to_string_lossy().contains(".so.") {
            libraries.push(entry.path());
        }
    }
    libraries.sort();
    Ok(libraries)
}

/// Debian's `packages`, fetched with `apt-get download` into `target/tmp/{dir_name}` (after
/// `apt-get update` when the lists are empty) and unpacked there with `dpkg-deb`, once:
/// the root they unpack into.
pub(crate) fn debian_packages(dir_name: &str, packages: &[&str]) -> anyhow::Result<std::path::PathBuf> {
    use std::process::Command;
    let dir = crate::support::target_tmp().join(dir_name);
    let unpacked = dir.join("root");
    if unpacked.join("usr/lib").exists() {
        return Ok(unpacked);
    }
    fs_err::create_dir_all(&dir)?;
    let download = || {
        Command::new("apt-get")
            .arg("download")
            .args(packages)
            .current_dir(&dir)
            .output()
            .context("apt-get is needed to fetch real ROCm binaries (a Debian or Ubuntu machine)")
    };
    let mut output = download()?;
    if !output.status.success() {
        let update = Command::new("apt-get").args(["update", "-qq"]).output().context("run apt-get update")?;
        ensure!(update.status.success(), "apt-get update failed: {}", String::from_utf8_lossy(&update.stderr));
        output = download()?;
    }
    ensure!(
        output.status.success(),
        "apt-get download {} failed (needs Debian bookworm's archive): {}",
        packages.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    for entry in fs_err::read_dir(&dir)? {
        let deb = entry?.path();
        if deb.extension().is_some_and(|extension| extension == "deb") {
            crate::support::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked));
        }
    }
    Ok(unpacked)
}
