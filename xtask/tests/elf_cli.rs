//! `cargo xtask elf` as a user runs it: a real shared library and executable compiled with
//! `cc`, the built binary's print flags compared with `readelf -d`, `--set-rpath` and
//! `--replace-needed` read back and the edited executable run, and failures (a non-ELF file among several, a write cut
//! short as on a full disk, no action at all) reported by file name with a hint and exit
//! code 2, while every other file stays correct.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{output, run};

const LIB_C: &str = "const char *greeting(void) { return \"hello from libgreet\"; }\n";
const APP_C: &str = "#include <stdio.h>\nconst char *greeting(void);\n\
                     int main(void) { puts(greeting()); return 0; }\n";
/// Long enough that no layout has room for it: the edit must append a new PT_LOAD.
const LONG_RPATH: &str = "$ORIGIN/../lib:$ORIGIN/../lib/llvm/lib:$ORIGIN/../lib/rocm_sysdeps/lib:\
                          $ORIGIN/../lib/host-math/lib:$ORIGIN/../../_rocm_sdk_core/lib";

/// `lib/libgreet.so.1` (SONAME `libgreet.so.1`, DT_RUNPATH `$ORIGIN:/opt/vendor/lib`) with a
/// `lib/libgreet.so` symlink to it, and `bin/app` linked against it with a DT_RUNPATH that
/// does not find it.
struct Build {
    temp: tempfile::TempDir,
    lib: PathBuf,
    app: PathBuf,
}

impl Build {
    fn new() -> Build {
        let temp = tempfile::tempdir().expect("temp dir");
        let (lib_dir, bin_dir) = (temp.path().join("lib"), temp.path().join("bin"));
        fs_err::create_dir_all(&lib_dir).expect("create lib dir");
        fs_err::create_dir_all(&bin_dir).expect("create bin dir");
        let lib = lib_dir.join("libgreet.so.1");
        let runpath = ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN:/opt/vendor/lib"];
        compile(temp.path(), "greet", LIB_C, &[&["-shared", "-fPIC", "-Wl,-soname,libgreet.so.1"], &runpath[..]], &lib);
        std::os::unix::fs::symlink("libgreet.so.1", lib_dir.join("libgreet.so")).expect("symlink");
        let app = bin_dir.join("app");
        let link = ["-L", lib_dir.to_str().expect("utf-8 temp dir"), "-l:libgreet.so.1"];
        let runpath = ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../nowhere"];
        compile(temp.path(), "app", APP_C, &[&link[..], &runpath[..]], &app);
        Build { temp, lib, app }
    }

    /// Names in `dir`, sorted: an edit leaves no temp file behind.
    fn names(&self, dir: &str) -> Vec<String> {
        let mut names: Vec<String> = fs_err::read_dir(self.temp.path().join(dir))
            .expect("read dir")
            .map(|entry| entry.expect("dir entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// Compiles `source` with `args` (groups, flattened; sources before libraries) into `out`.
fn compile(dir: &Path, name: &str, source: &str, args: &[&[&str]], out: &Path) {
    let src = dir.join(format!("{name}.c"));
    fs_err::write(&src, source).expect("write C source");
    let output = Command::new("cc")
        .arg("-o")
        .arg(out)
        .arg(&src)
        .args(args.iter().flat_map(|group| group.iter()))
        .output()
        .expect("a C compiler is needed for the tests (apt-get install gcc)");
    assert!(output.status.success(), "cc failed for {name}: {}", String::from_utf8_lossy(&output.stderr));
}

fn stdout_of(command: &mut Command) -> String {
    String::from_utf8(run(command).stdout).expect("utf-8 output")
}

fn xtask_elf(args: &[&str], files: &[&Path]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command.arg("elf").args(args).args(files).env_remove("RUST_LOG").env_remove("GITHUB_ACTIONS");
    command
}

/// `(TAG, value)` of each `readelf -d` entry that names a string, in file order, e.g.
/// `("NEEDED", "libc.so.6")` from `0x1 (NEEDED)  Shared library: [libc.so.6]`.
fn readelf_strings(file: &Path) -> Vec<(String, String)> {
    let text = stdout_of(Command::new("readelf").arg("-d").arg(file));
    text.lines()
        .filter_map(|line| {
            let tag = line.split_once('(')?.1.split_once(')')?.0;
            let value = line.split_once('[')?.1.rsplit_once(']')?.0;
            Some((tag.to_owned(), value.to_owned()))
        })
        .collect()
}

fn readelf_values(file: &Path, tag: &str) -> Vec<String> {
    readelf_strings(file).into_iter().filter(|(found, _)| found == tag).map(|(_, value)| value).collect()
}

/// What `--print-rpath` must print: DT_RUNPATH if present, else DT_RPATH, else an empty line.
fn readelf_search_path(file: &Path) -> String {
    let runpath = readelf_values(file, "RUNPATH");
    let rpath = readelf_values(file, "RPATH");
    runpath.first().or(rpath.first()).cloned().unwrap_or_default()
}

fn run_app(app: &Path) -> Output {
    output(Command::new(app).env_remove("LD_LIBRARY_PATH"))
}

#[test]
fn print_flags_agree_with_readelf() {
    let build = Build::new();
    let files = [build.lib.as_path(), build.app.as_path()];

    let soname = stdout_of(&mut xtask_elf(&["--print-soname"], &files));
    let expected: Vec<String> =
        files.iter().map(|file| readelf_values(file, "SONAME").first().cloned().unwrap_or_default()).collect();
    assert_eq!(soname.lines().collect::<Vec<_>>(), expected);
    assert_eq!(expected[0], "libgreet.so.1");

    let needed = stdout_of(&mut xtask_elf(&["--print-needed"], &files));
    let expected: Vec<String> = files.iter().flat_map(|file| readelf_values(file, "NEEDED")).collect();
    assert_eq!(needed.lines().collect::<Vec<_>>(), expected);
    assert!(expected.iter().any(|name| name == "libgreet.so.1"), "{expected:?}");

    let rpath = stdout_of(&mut xtask_elf(&["--print-rpath"], &files));
    let expected: Vec<String> = files.iter().map(|file| readelf_search_path(file)).collect();
    assert_eq!(rpath.lines().collect::<Vec<_>>(), expected);
    assert_eq!(expected, ["$ORIGIN:/opt/vendor/lib", "$ORIGIN/../nowhere"]);

    let kind = stdout_of(&mut xtask_elf(&["--print-kind"], &files));
    assert_eq!(kind, "shared-library\nexecutable\n");
}

#[test]
fn set_rpath_is_read_back_and_the_executable_runs() {
    let build = Build::new();
    let before = run_app(&build.app);
    assert!(!before.status.success(), "the DT_RUNPATH points nowhere, so it should not run yet");
    assert!(String::from_utf8_lossy(&before.stderr).contains("libgreet.so.1"));
    let mode = fs_err::metadata(&build.app).expect("stat app").permissions().mode();

    // A short search path fits where the old one was.
    stdout_of(&mut xtask_elf(&["--set-rpath", "$ORIGIN/../lib"], &[&build.app]));
    assert_eq!(readelf_values(&build.app, "RPATH"), ["$ORIGIN/../lib"]);
    assert_eq!(readelf_values(&build.app, "RUNPATH"), Vec::<String>::new());
    let printed = stdout_of(&mut xtask_elf(&["--print-rpath"], &[&build.app]));
    assert_eq!(printed, "$ORIGIN/../lib\n");
    assert_eq!(String::from_utf8_lossy(&run_app(&build.app).stdout), "hello from libgreet\n");
    assert_eq!(fs_err::metadata(&build.app).expect("stat app").permissions().mode(), mode);

    // A long one needs a grown layout; --force-rpath is accepted and changes nothing.
    let printed =
        stdout_of(&mut xtask_elf(&["--force-rpath", "--set-rpath", LONG_RPATH, "--print-rpath"], &[&build.app]));
    assert_eq!(printed, format!("{LONG_RPATH}\n"));
    assert_eq!(readelf_values(&build.app, "RPATH"), [LONG_RPATH]);
    let ran = run_app(&build.app);
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "hello from libgreet\n");
    assert_eq!(fs_err::metadata(&build.app).expect("stat app").permissions().mode(), mode);

    // Through a symlink: the link stays a link and its target is edited.
    let link = build.temp.path().join("lib/libgreet.so");
    stdout_of(&mut xtask_elf(&["--add-rpath", "$ORIGIN/extra"], &[&link]));
    assert!(fs_err::symlink_metadata(&link).expect("stat link").file_type().is_symlink());
    assert_eq!(readelf_values(&build.lib, "RPATH"), ["$ORIGIN:/opt/vendor/lib:$ORIGIN/extra"]);
    assert_eq!(readelf_values(&build.lib, "SONAME"), ["libgreet.so.1"]);
    assert_eq!(String::from_utf8_lossy(&run_app(&build.app).stdout), "hello from libgreet\n");

    assert_eq!(build.names("bin"), ["app"]);
    assert_eq!(build.names("lib"), ["libgreet.so", "libgreet.so.1"]);
}

#[test]
fn a_file_that_is_not_elf_fails_the_run_and_the_others_are_edited() {
    let build = Build::new();
    let notes = build.temp.path().join("lib/notes.txt");
    fs_err::write(&notes, "not an ELF file\n").expect("write notes");
    let result = output(&mut xtask_elf(&["--set-rpath", "$ORIGIN/x"], &[&build.lib, &notes, &build.app]));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: {}: not an ELF file\n\nhint: only ELF files (executables, shared libraries, objects) can be \
             read or edited: check the path\n",
            notes.display()
        )
    );
    assert_eq!(fs_err::read_to_string(&notes).expect("read notes"), "not an ELF file\n");
    for file in [&build.lib, &build.app] {
        assert_eq!(readelf_values(file, "RPATH"), ["$ORIGIN/x"], "{}", file.display());
        assert_eq!(readelf_values(file, "RUNPATH"), Vec::<String>::new(), "{}", file.display());
    }
    assert_eq!(build.names("lib"), ["libgreet.so", "libgreet.so.1", "notes.txt"]);
}

/// A file size limit below the executable's size stands in for a full disk: the write of
/// the edited copy fails midway, and the original must be exactly as it was.
#[test]
fn a_write_cut_short_leaves_the_file_untouched() {
    let build = Build::new();
    let original = fs_err::read(&build.app).expect("read app");
    let blocks = original.len() / 2 / 512;
    // The shell ignores SIGXFSZ so the write fails with EFBIG instead of killing xtask;
    // an ignored signal stays ignored across exec.
    let script = format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\"");
    let mut command = Command::new("sh");
    command.args(["-c", &script, env!("CARGO_BIN_EXE_xtask"), "elf", "--set-rpath", LONG_RPATH]);
    let result = output(command.arg(&build.app).env_remove("RUST_LOG"));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with(&format!("error: {}: cannot write: ", build.app.display())), "{stderr}");
    assert!(stderr.contains("File too large"), "{stderr}");
    assert!(stderr.contains("hint: the file is unchanged"), "{stderr}");
    assert!(fs_err::read(&build.app).expect("read app") == original, "the file changed");
    assert_eq!(build.names("bin"), ["app"]);
    assert_eq!(readelf_search_path(&build.app), "$ORIGIN/../nowhere");
}

/// Without an action the command once printed nothing and exited 0, as if it had worked.
#[test]
fn no_action_is_an_error_with_a_hint() {
    let build = Build::new();
    let original = fs_err::read(&build.lib).expect("read lib");
    let result = output(&mut xtask_elf(&[], &[&build.lib]));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "error: nothing to do: no action given\n\nhint: add --print-rpath, --print-soname, --print-needed, \
         --print-kind, --set-rpath LIST, --add-rpath LIST, --replace-needed OLD NEW, --show-device or --unbundle DIR \
         (see `cargo xtask elf --help`)\n"
    );
    assert_eq!(String::from_utf8_lossy(&result.stdout), "");
    assert!(fs_err::read(&build.lib).expect("read lib") == original, "the file changed");
}

/// `--replace-needed OLD NEW` with `--set-rpath`, patchelf's spelling: the program needs
/// the library under its new name, finds it through the new search path, and runs.
#[test]
fn replace_needed_renames_a_library_and_the_program_runs() {
    let build = Build::new();
    let renamed = build.lib.with_file_name("libhello.so.1");
    fs_err::copy(&build.lib, &renamed).expect("copy the library under its new name");
    fs_err::remove_file(&build.lib).expect("the old name is gone");
    let edit =
        ["--set-rpath", "$ORIGIN/../lib", "--replace-needed", "libgreet.so.1", "libhello.so.1", "--print-needed"];
    let needed = stdout_of(&mut xtask_elf(&edit, &[&build.app]));
    assert_eq!(needed, "libhello.so.1\nlibc.so.6\n");
    assert_eq!(stdout_of(&mut Command::new(&build.app)), "hello from libgreet\n");
    assert_eq!(build.names("bin"), ["app"], "no temp file left");
}
