//! A wheel installs with pip and uv, passes check-wheel-contents and twine, is the same
//! bytes twice, and shows its exec bits to unzip.

use std::process::Command;

use archive_write::write_wheel;
use packager::progress::Silent;

use super::{demo_spec, only_file, options, python};
use crate::support::{fresh_venv, run, tools_venv};

#[test]
fn wheel_installs_with_pip_and_uv_and_passes_the_checkers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = demo_spec(tmp.path());
    let (dist_a, dist_b) = (tmp.path().join("dist-a"), tmp.path().join("dist-b"));
    let written = write_wheel(&dist_a, &spec, &options(), &Silent).expect("write wheel");
    write_wheel(&dist_b, &spec, &options(), &Silent).expect("write wheel again");
    assert_eq!(written.file_name, "demo_pkg-1.2.0.dev0-py3-none-linux_x86_64.whl");
    assert_eq!(only_file(&dist_a), written.path);
    assert_eq!(written.n_members, 10);

    // Reproducible: same inputs, same bytes.
    let a = fs_err::read(&written.path).expect("read a");
    let b = fs_err::read(only_file(&dist_b)).expect("read b");
    assert!(a == b, "two builds differ");
    // Small wheels stay plain zip: no ZIP64 end record.
    assert!(!a.windows(4).any(|w| w == b"PK\x06\x06"), "a small wheel used ZIP64");

    let tools = tools_venv();
    run(Command::new(tools.join("bin/check-wheel-contents")).arg(&written.path));
    run(Command::new(tools.join("bin/twine")).arg("check").arg("--strict").arg(&written.path));
    run(Command::new(python(tools)).args(["-m", "zipfile", "-t"]).arg(&written.path));
    run(Command::new("unzip").arg("-t").arg(&written.path));

    let listing = run(Command::new("zipinfo").arg(&written.path));
    let line = |name: &str| {
        listing.lines().find(|l| l.ends_with(name)).unwrap_or_else(|| panic!("{name} in {listing}")).to_owned()
    };
    assert!(line("demo_pkg/bin/hello").starts_with("-rwxr-xr-x  2.0 unx"), "{listing}");
    assert!(line("demo_pkg/__init__.py").starts_with("-rw-r--r--  2.0 unx"), "{listing}");
    assert!(line("demo_pkg/__init__.py").contains("20-Jan-01 00:00"), "{listing}");
    // Deflate cannot shrink compressed code by 1 %: stored, in all its chunks; the data
    // file deflates. Members too small to gain are stored too.
    assert!(line("demo_pkg/data/kernels.kpack").contains(" stor "), "{listing}");
    assert!(
        line("demo_pkg/data/table.bin").contains(" defX ") || line("demo_pkg/data/table.bin").contains(" defN "),
        "{listing}"
    );
    assert!(line("demo_pkg/empty.txt").contains(" stor "), "{listing}");
    let names: Vec<&str> = listing
        .lines()
        .filter(|l| l.contains(" unx "))
        .filter_map(|l| l.split_whitespace().last())
        .filter(|n| n.contains('/'))
        .collect();
    assert_eq!(
        names,
        [
            "demo_pkg/__init__.py",
            "demo_pkg/bin/hello",
            "demo_pkg/cli.py",
            "demo_pkg/data/kernels.kpack",
            "demo_pkg/data/table.bin",
            "demo_pkg/empty.txt",
            "demo_pkg-1.2.0.dev0.dist-info/METADATA",
            "demo_pkg-1.2.0.dev0.dist-info/WHEEL",
            "demo_pkg-1.2.0.dev0.dist-info/entry_points.txt",
            "demo_pkg-1.2.0.dev0.dist-info/RECORD",
        ]
    );

    // pip and uv, offline, from the dist directory.
    let pip_venv = fresh_venv(&tmp.path().join("venv-pip"));
    run(Command::new(python(&pip_venv))
        .args(["-m", "pip", "install", "-q", "--no-index", "--find-links"])
        .arg(&dist_a)
        .arg("demo-pkg"));
    let uv_venv = fresh_venv(&tmp.path().join("venv-uv"));
    run(Command::new(tools.join("bin/uv"))
        .args(["pip", "install", "--offline", "--no-index", "--python"])
        .arg(python(&uv_venv))
        .arg("--find-links")
        .arg(&dist_a)
        .arg("demo-pkg"));
    for venv in [&pip_venv, &uv_venv] {
        assert_eq!(run(&mut Command::new(venv.join("bin/demo-hello"))), "hello from C\n");
        let check = "import demo_pkg, pathlib, hashlib; p = pathlib.Path(demo_pkg.__file__).parent; \
                     print(demo_pkg.VALUE, hashlib.sha256((p / 'data/table.bin').read_bytes()).hexdigest())";
        let out = run(Command::new(python(venv)).args(["-c", check]));
        let expected = sha256_hex(&fs_err::read(tmp.path().join("table.bin")).expect("read data"));
        assert_eq!(out.trim(), format!("42 {expected}"));
    }
    // Uninstall goes by RECORD: nothing of the package may stay behind.
    run(Command::new(python(&pip_venv)).args(["-m", "pip", "uninstall", "-y", "-q", "demo-pkg"]));
    let gone =
        run(Command::new(python(&pip_venv)).args(["-c", "import importlib.util as u; print(u.find_spec('demo_pkg'))"]));
    assert_eq!(gone.trim(), "None");
}

#[test]
fn stored_wheels_store() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = demo_spec(tmp.path());
    let mut stored = options();
    stored.compression = packager::config::WheelCompression::Stored;
    let written = write_wheel(&tmp.path().join("dist"), &spec, &stored, &Silent).expect("write wheel");
    assert!(written.compressed_bytes > written.uncompressed_bytes);
    let listing = run(Command::new("zipinfo").arg(&written.path));
    assert!(listing.lines().filter(|l| l.contains(" unx ")).all(|l| l.contains(" stor ")), "{listing}");
    run(Command::new(python(crate::support::tools_venv())).args(["-m", "zipfile", "-t"]).arg(&written.path));
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Output does not depend on the number of threads, and writing from inside a rayon pool
/// (even a one-thread pool, where the waiting thread must run the chunks itself) works.
#[test]
fn output_is_the_same_whatever_the_thread_count() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = demo_spec(tmp.path());
    let reference = write_wheel(&tmp.path().join("global"), &spec, &options(), &Silent).expect("write wheel");
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        let dest = tmp.path().join(format!("pool-{threads}"));
        let written = pool.install(|| write_wheel(&dest, &spec, &options(), &Silent)).expect("write wheel in pool");
        assert_eq!(written.sha256, reference.sha256, "{threads} threads");
    }
}
