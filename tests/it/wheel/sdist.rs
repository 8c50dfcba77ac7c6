//! The sdist: well-formed enough that pip builds it offline through an in-tree PEP 517
//! backend (a stand-in written here with the stdlib only; the real backend is the
//! Python runtime's), reproducible, with a gzip header that carries no time or name.

use std::process::Command;

use archive_write::{write_sdist, SdistFile, SdistSpec};

use super::{metadata, only_file, options, python};
use crate::support::{fresh_venv, run};

const PYPROJECT: &str = r#"[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]

[project]
name = "rocm-demo"
version = "1.2.0.dev0"
dynamic = ["dependencies"]
"#;

/// A minimal stdlib-only PEP 517 backend: the wheel holds `rocm_demo/` and a dist-info
/// made from PKG-INFO.
const BACKEND: &str = r#"import base64, hashlib, os, pathlib, tarfile, zipfile

HERE = pathlib.Path(__file__).parent
STEM = "rocm_demo-1.2.0.dev0"
DIST_INFO = STEM + ".dist-info"

def get_requires_for_build_wheel(config_settings=None):
    return []

def get_requires_for_build_sdist(config_settings=None):
    return []

def _metadata():
    return (HERE / "PKG-INFO").read_bytes()

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    target = pathlib.Path(metadata_directory) / DIST_INFO
    target.mkdir(parents=True, exist_ok=True)
    (target / "METADATA").write_bytes(_metadata())
    return DIST_INFO

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = STEM + "-py3-none-any.whl"
    files = {}
    for path in sorted((HERE / "rocm_demo").rglob("*.py")):
        files[path.relative_to(HERE).as_posix()] = path.read_bytes()
    files[DIST_INFO + "/METADATA"] = _metadata()
    files[DIST_INFO + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test-backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for member, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{member},sha256={digest},{len(data)}")
    record.append(DIST_INFO + "/RECORD,,")
    files[DIST_INFO + "/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return name

def build_sdist(sdist_directory, config_settings=None):
    name = STEM + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as archive:
        archive.add(HERE, arcname=STEM)
    return name
"#;

fn sdist_spec() -> SdistSpec {
    let file =
        |name: &str, text: &str| SdistFile { name: name.into(), bytes: text.as_bytes().to_vec(), executable: false };
    SdistSpec {
        metadata: metadata("rocm-demo"),
        files: vec![
            file("pyproject.toml", PYPROJECT),
            file("backend.py", BACKEND),
            file("rocm_demo/__init__.py", "__version__ = '1.2.0.dev0'\n"),
            SdistFile { name: "bin/tool.sh".into(), bytes: b"#!/bin/sh\necho tool\n".to_vec(), executable: true },
        ],
    }
}

#[test]
fn sdist_installs_offline_through_its_in_tree_backend() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (dist_a, dist_b) = (tmp.path().join("dist-a"), tmp.path().join("dist-b"));
    let written = write_sdist(&dist_a, &sdist_spec(), &options()).expect("write sdist");
    write_sdist(&dist_b, &sdist_spec(), &options()).expect("write sdist again");
    assert_eq!(written.file_name, "rocm_demo-1.2.0.dev0.tar.gz");
    assert_eq!(written.n_members, 5);
    let a = fs_err::read(&written.path).expect("read");
    assert!(a == fs_err::read(only_file(&dist_b)).expect("read"), "two builds differ");
    // gzip header: no FNAME flag, MTIME 0.
    assert_eq!(a[3] & 0x08, 0, "gzip header carries a file name");
    assert_eq!(&a[4..8], &[0, 0, 0, 0], "gzip header carries a time");

    let listing = run(Command::new("tar").args(["-tvzf"]).arg(&written.path).env("TZ", "UTC"));
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 5, "{listing}");
    assert!(lines[0].starts_with("-rw-r--r-- 0/0") && lines[0].ends_with("rocm_demo-1.2.0.dev0/PKG-INFO"), "{listing}");
    assert!(lines.iter().any(|l| l.starts_with("-rwxr-xr-x 0/0") && l.ends_with("/bin/tool.sh")), "{listing}");
    assert!(lines.iter().all(|l| l.contains("2020-01-01 00:00")), "{listing}");

    let venv = fresh_venv(&tmp.path().join("venv"));
    run(Command::new(python(&venv)).args(["-m", "pip", "install", "-q", "--no-index"]).arg(&written.path));
    let out = run(Command::new(python(&venv)).args(["-c", "import rocm_demo; print(rocm_demo.__version__)"]));
    assert_eq!(out.trim(), "1.2.0.dev0");
    let tools = crate::support::tools_venv();
    run(Command::new(tools.join("bin/twine")).arg("check").arg("--strict").arg(&written.path));
}
