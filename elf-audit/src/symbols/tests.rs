//! The reader and the binding rule on real files from `cc`: a library with version nodes,
//! one without, and programs referencing them.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::parse::parse_elf;

fn cc(dir: &Path, name: &str, source: &str, args: &[String]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    fs_err::write(&src, source).expect("write source");
    let out = dir.join(name);
    let output = Command::new("cc")
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .args(args)
        .output()
        .expect("a C compiler is needed for these tests (apt-get install gcc)");
    assert!(output.status.success(), "cc: {}", String::from_utf8_lossy(&output.stderr));
    out
}

fn symbols_of(path: &Path) -> DynamicSymbols {
    let window = ElfWindow::read_file(path).expect("read").expect("ELF");
    let elf = parse_elf(&window).expect("parse");
    let symbols = read_dynamic_symbols(&window, &elf);
    assert!(symbols.is_complete(), "{:?} {:?}", symbols.unchecked, symbols.problems);
    symbols
}

const LIB_C: &str = "int a(void) { return 1; }\nint b(void) { return 2; }\nint c(void) { return 3; }\n";
const USER_C: &str = "int a(void); int c(void); int w(void) __attribute__((weak));\n\
                      int main(void) { return a() + c() + (w ? w() : 0); }\n";

/// `libv.so.1` with `a`, `b` at `V_1` and `c` at `V_2`, and a program using `a` and `c`.
fn versioned(dir: &Path) -> (PathBuf, PathBuf) {
    let map = dir.join("v.map");
    fs_err::write(&map, "V_1 { global: a; b; local: *; };\nV_2 { global: c; } V_1;\n").expect("write map");
    let lib = cc(
        dir,
        "libv.so.1",
        LIB_C,
        &[
            "-shared".into(),
            "-fPIC".into(),
            "-Wl,-soname,libv.so.1".into(),
            format!("-Wl,--version-script={}", map.display()),
        ],
    );
    let user = cc(dir, "user", USER_C, &[lib.display().to_string()]);
    (lib, user)
}

#[test]
fn definitions_carry_their_version_nodes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (lib, _) = versioned(dir.path());
    let exports = symbols_of(&lib).exports;
    assert!(exports.has_versions() && exports.defines_version("V_1") && exports.defines_version("V_2"));
    assert!(!exports.defines_version("libv.so.1"), "the base node is the file's name, not a version");
    assert!(exports.binds("a", Some("V_1")) && exports.binds("c", Some("V_2")) && exports.binds("c", None));
    assert!(!exports.binds("a", Some("V_2")), "a versioned reference binds only to its version");
    assert!(!exports.binds("missing", None));
}

#[test]
fn imports_name_the_version_and_library_they_ask_for() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, user) = versioned(dir.path());
    let symbols = symbols_of(&user);
    let import = |name: &str| symbols.imports.iter().find(|import| import.name == name).cloned();
    let need = |version: &str| NeededVersion { library: "libv.so.1".into(), version: version.into(), weak: false };
    assert_eq!(import("a").and_then(|import| import.version), Some(need("V_1")));
    assert_eq!(import("c").and_then(|import| import.version), Some(need("V_2")));
    assert!(import("w").is_some_and(|import| import.weak && import.version.is_none()));
    assert!(symbols.needed_versions.contains(&need("V_2")));
    assert!(symbols.needed_versions.iter().any(|need| need.library == "libc.so.6"));
}

#[test]
fn a_library_without_a_version_or_symbol_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, user) = versioned(dir.path());
    let symbols = symbols_of(&user);
    let system = ("libc.so.6".to_owned(), Provider::VersionedSystem);
    // An older library: `V_1` only, no `c`.
    let mut older = Exports::default();
    older.define("a", Some("V_1"), false);
    older.define("b", Some("V_1"), false);
    let providers = [("libv.so.1".to_owned(), Provider::Known(&older)), system.clone()];
    assert_eq!(
        unresolved_imports(&symbols, &providers),
        [Unresolved::Version { library: "libv.so.1".into(), version: "V_2".into(), symbols: vec!["c".into()] }]
    );
    // The version is there, the symbol is not.
    let mut broken = Exports::default();
    broken.define("c", Some("V_2"), false);
    broken.define("b", Some("V_1"), false);
    let providers = [("libv.so.1".to_owned(), Provider::Known(&broken)), system.clone()];
    let need = NeededVersion { library: "libv.so.1".into(), version: "V_1".into(), weak: false };
    assert_eq!(
        unresolved_imports(&symbols, &providers),
        [Unresolved::Symbol { name: "a".into(), version: Some(need) }]
    );
    // A library without version nodes satisfies versioned references by name, as glibc does.
    let mut plain = Exports::default();
    plain.define("a", None, false);
    plain.define("c", None, false);
    let providers = [("libv.so.1".to_owned(), Provider::Known(&plain)), system];
    assert_eq!(unresolved_imports(&symbols, &providers), []);
}

#[test]
fn an_unversioned_import_is_judged_only_in_a_closed_world() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = cc(dir.path(), "libu.so.1", LIB_C, &["-shared".into(), "-fPIC".into(), "-Wl,-soname,libu.so.1".into()]);
    let user = cc(dir.path(), "user", USER_C, &[lib.display().to_string()]);
    let symbols = symbols_of(&user);
    assert!(symbols.imports.iter().any(|import| import.name == "a" && import.version.is_none()));
    let mut without_c = Exports::default();
    without_c.define("a", None, false);
    let known = ("libu.so.1".to_owned(), Provider::Known(&without_c));
    let closed = [known.clone(), ("libc.so.6".to_owned(), Provider::VersionedSystem)];
    assert_eq!(unresolved_imports(&symbols, &closed), [Unresolved::Symbol { name: "c".into(), version: None }]);
    let open = [known, ("libfoo.so.1".to_owned(), Provider::Unknown)];
    assert_eq!(unresolved_imports(&symbols, &open), [], "an unknown library may define it");
    assert_eq!(symbols_of(&lib).exports.len(), 3);
}

proptest::proptest! {
    /// Corrupt tables are reported, never a panic or an endless loop.
    #[test]
    fn arbitrary_tables_never_panic(
        class in 1u8..=2,
        data in 1u8..=2,
        body in proptest::collection::vec(proptest::num::u8::ANY, 0..4096),
    ) {
        let mut bytes = vec![0x7f, b'E', b'L', b'F', class, data];
        bytes.extend(body);
        let mut window = ElfWindow::default();
        window.push(&bytes);
        if let Ok(elf) = parse_elf(&window) {
            let _ = read_dynamic_symbols(&window, &elf);
        }
    }
}
