//! The archive writers, read back by the tools users have: pip, uv, check-wheel-contents,
//! twine, unzip, tar, and Python's zipfile.

mod devel;
mod faults;
mod install;
mod sdist;
mod zip64;

use std::path::{Path, PathBuf};

use packager::write::{EntryPoint, WheelSpec};

pub use packager_tests::wheels::{bytes, file, file_name, metadata, options};

/// A wheel with a Python package, a console script, a compiled executable, a multi-chunk
/// data file read from disk, and a multi-chunk archive of compressed code (as a kpack
/// archive is) that deflate cannot shrink, so the wheel stores it.
pub fn demo_spec(fixtures: &Path) -> WheelSpec {
    let hello = crate::support::executable(
        fixtures,
        "hello",
        "#include <stdio.h>\nint main(void) { puts(\"hello from C\"); return 0; }\n",
        &[],
    );
    let data = fixtures.join("table.bin");
    // Three and a half chunks of mixed data, so the member is split and joined.
    let content: Vec<u8> = (0..3_600_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 & 0x1F).collect();
    fs_err::write(&data, content).expect("write data");
    let kpack = fixtures.join("kernels.kpack");
    fs_err::write(&kpack, compressed_code()).expect("write the archive");
    WheelSpec {
        file_name: file_name("demo-pkg"),
        metadata: metadata("demo-pkg"),
        generator: packager::GENERATOR,
        root: packager::write::WheelRoot::Platlib,
        variant_json: None,
        entry_points: vec![EntryPoint { group: packager::write::CONSOLE_SCRIPTS.into(), name: "demo-hello".into(), target: "demo_pkg.cli:main".into() }],
        members: vec![
            bytes("demo_pkg/cli.py", "import subprocess, pathlib, sys\n\ndef main():\n    exe = pathlib.Path(__file__).parent / 'bin' / 'hello'\n    sys.exit(subprocess.call([str(exe)]))\n"),
            bytes("demo_pkg/__init__.py", "VALUE = 42\n"),
            file("demo_pkg/bin/hello", &hello, true),
            file("demo_pkg/data/table.bin", &data, false),
            file("demo_pkg/data/kernels.kpack", &kpack, false),
            bytes("demo_pkg/empty.txt", ""),
        ],
        inventory: None,
    }
}

/// About 2 MiB of compressed machine code: the test binary's first 8 MiB through xz
/// (gzip's output still deflates by about 1 %).
fn compressed_code() -> Vec<u8> {
    use std::io::Read;
    let mut code = Vec::new();
    let exe = fs_err::File::open(std::env::current_exe().expect("the test binary")).expect("open the test binary");
    exe.take(8 << 20).read_to_end(&mut code).expect("read the test binary");
    let mut compressed = Vec::new();
    liblzma::read::XzEncoder::new(code.as_slice(), 0).read_to_end(&mut compressed).expect("compress");
    assert!(compressed.len() > 3 << 19, "the test binary compresses to {} bytes: too few chunks", compressed.len());
    compressed
}

pub fn python(venv: &Path) -> PathBuf {
    venv.join("bin/python")
}

/// The only file in `dir` (asserts there is exactly one).
pub fn only_file(dir: &Path) -> PathBuf {
    let entries: Vec<PathBuf> = fs_err::read_dir(dir).expect("read dir").map(|e| e.expect("entry").path()).collect();
    assert_eq!(entries.len(), 1, "expected exactly one file in {}: {entries:?}", dir.display());
    entries.into_iter().next().expect("one entry")
}
