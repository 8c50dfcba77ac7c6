//! Renaming a needed library (`DynamicRequest::replace_needed`, patchelf's
//! `--replace-needed`) on real files from `cc`: an auditwheel-style grafted copy
//! (`libdep-1a2b3c4d.so.1`, symbols with a version node) is renamed to its plain SONAME,
//! in place when the name fits and in a grown layout with a search path too. The result
//! runs against the plain library (ld.so's version check finds it by the renamed
//! `.gnu.version_r` file name), reads back, needs no second edit and gives eu-elflint
//! nothing new to say.

use std::path::{Path, PathBuf};
use std::process::Command;

use packager::elf::{self, DynamicRequest, EditStrategy};

use super::corpus::elflint;
use super::write_spliced;
use crate::support;

const DEP_C: &str = "int dep_value(void) { return 42; }\n";
const DEP_MAP: &str = "DEP_1 { global: dep_value; local: *; };\n";
const USER_C: &str =
    "#include <stdio.h>\nint dep_value(void);\nint main(void) { printf(\"%d\\n\", dep_value()); return 0; }\n";
const GRAFTED: &str = "libdep-1a2b3c4d.so.1";
const PLAIN: &str = "libdep.so.1";

/// A program linked against the grafted copy, and the plain library in `dir/sdk`.
fn program_on_a_grafted_copy(dir: &Path) -> PathBuf {
    let map = dir.join("dep.map");
    fs_err::write(&map, DEP_MAP).expect("write version script");
    let script = format!("-Wl,--version-script={}", map.display());
    let libs = dir.join("libs");
    let sdk = dir.join("sdk");
    for (place, soname) in [(&libs, GRAFTED), (&sdk, PLAIN)] {
        fs_err::create_dir_all(place).expect("mkdir");
        support::shared_lib(place, soname, DEP_C, &[script.as_str()]);
    }
    // The library after the source, so an `--as-needed` linker keeps it.
    let source = dir.join("user.c");
    fs_err::write(&source, USER_C).expect("write C source");
    let program = dir.join("user");
    let mut cc = support::c_compiler();
    cc.arg("-o").arg(&program).arg(&source).arg(libs.join(GRAFTED)).arg("-Wl,-rpath,$ORIGIN/libs");
    support::run(&mut cc);
    assert_eq!(run(&program), "42\n", "the program runs as linked");
    program
}

fn run(program: &Path) -> String {
    let output = support::output(&mut Command::new(program)).expect("run the program");
    support::assert_success(&output, &program.display().to_string());
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `readelf -V`'s version needs, as `File: NAME` lines.
fn version_need_files(path: &Path) -> Vec<String> {
    let text = support::run(support::tool("readelf").arg("-VW").arg(path));
    text.lines()
        .filter_map(|line| line.split_once("File: "))
        .map(|(_, rest)| rest.split_whitespace().next().unwrap_or("").to_owned())
        .collect()
}

/// Edits `program` as `request` asks into `out`; checks the read-back, the second plan and
/// eu-elflint; returns the strategy.
fn edit(program: &Path, request: &DynamicRequest, out: &Path) -> EditStrategy {
    let edit = elf::plan_edit(program, request).expect("plan");
    assert_eq!(edit, elf::plan_edit(program, request).expect("plan again"), "planning is deterministic");
    write_spliced(program, &edit, out);
    let after = elf::read_elf(out).expect("read").expect("ELF");
    assert!(after.needed.iter().any(|name| name == PLAIN), "{after:?}");
    assert!(!after.needed.iter().any(|name| name == GRAFTED), "{after:?}");
    if let Some(rpath) = &request.rpath {
        assert_eq!(after.rpath.as_deref(), Some(rpath.as_str()));
    }
    let files = version_need_files(out);
    assert!(files.contains(&PLAIN.to_owned()) && !files.contains(&GRAFTED.to_owned()), "version needs: {files:?}");
    assert!(elf::plan_edit(out, request).expect("plan on the result").is_unchanged(), "a second edit changes it");
    let (was, is) = (elflint(program).expect("eu-elflint"), elflint(out).expect("eu-elflint"));
    assert!(is.is_subset(&was), "eu-elflint finds {:?} (before: {was:?})", is.difference(&was));
    edit.strategy
}

#[test]
fn a_grafted_copy_is_renamed_in_place_and_the_program_runs_on_the_plain_library() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = program_on_a_grafted_copy(dir.path());
    let out = dir.path().join("renamed");
    let request = DynamicRequest {
        rpath: Some("$ORIGIN/sdk".to_owned()),
        replace_needed: vec![(GRAFTED.to_owned(), PLAIN.to_owned())],
    };
    assert_eq!(edit(&program, &request, &out), EditStrategy::InPlace, "both names fit where they were");
    fs_err::remove_dir_all(dir.path().join("libs")).expect("remove the grafted copy");
    assert_eq!(run(&out), "42\n", "it runs on the plain library, found by its SONAME");
}

#[test]
fn a_longer_name_and_search_path_grow_the_layout_and_still_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = program_on_a_grafted_copy(dir.path());
    // First the grafted copy becomes the plain name (in place), then the plain name a
    // longer one, which only the grown layout holds.
    let plain = dir.path().join("plain");
    let to_plain = DynamicRequest { rpath: None, replace_needed: vec![(GRAFTED.to_owned(), PLAIN.to_owned())] };
    assert_eq!(edit(&program, &to_plain, &plain), EditStrategy::InPlace);
    assert_eq!(elf::read_elf(&plain).expect("read").expect("ELF").search_path(), Some("$ORIGIN/libs"), "kept");
    let longer = "libdep-with-a-much-longer-name.so.1";
    let sdk = dir.path().join("sdk/a/rather/deep/directory/for/the/library");
    fs_err::create_dir_all(&sdk).expect("mkdir");
    let map = dir.path().join("dep.map");
    support::shared_lib(&sdk, longer, DEP_C, &[&format!("-Wl,--version-script={}", map.display())]);
    let request = DynamicRequest {
        rpath: Some("$ORIGIN/sdk/a/rather/deep/directory/for/the/library".to_owned()),
        replace_needed: vec![(PLAIN.to_owned(), longer.to_owned())],
    };
    let grown = dir.path().join("grown");
    let edit = elf::plan_edit(&plain, &request).expect("plan");
    assert_eq!(edit.strategy, EditStrategy::Grown);
    write_spliced(&plain, &edit, &grown);
    let after = elf::read_elf(&grown).expect("read").expect("ELF");
    assert!(after.needed.iter().any(|name| name == longer), "{after:?}");
    assert_eq!(version_need_files(&grown).iter().filter(|file| *file == longer).count(), 1);
    assert!(elf::plan_edit(&grown, &request).expect("plan again").is_unchanged());
    let (was, is) = (elflint(&plain).expect("eu-elflint"), elflint(&grown).expect("eu-elflint"));
    assert!(is.is_subset(&was), "eu-elflint finds {:?} (before: {was:?})", is.difference(&was));
    fs_err::remove_dir_all(dir.path().join("libs")).expect("remove the grafted copy");
    assert_eq!(run(&grown), "42\n");
}

/// A request that renames one library two ways is refused before anything is planned.
#[test]
fn a_library_renamed_two_ways_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = program_on_a_grafted_copy(dir.path());
    let request = DynamicRequest {
        rpath: None,
        replace_needed: vec![(GRAFTED.to_owned(), PLAIN.to_owned()), (GRAFTED.to_owned(), "libother.so.1".to_owned())],
    };
    let error = elf::plan_edit(&program, &request).expect_err("refused");
    assert!(error.to_string().contains("replaced by both"), "{error}");
}
