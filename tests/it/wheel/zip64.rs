//! A 5 GiB (sparse) member round-trips through a wheel as ZIP64 while the writing process
//! stays under 256 MiB (SPEC §5). The write runs in a child process (the tests' helper
//! program, `fault-child zip64`) so its peak RSS is its own.

use std::process::Command;

use packager::progress::Silent;
use packager::write::{write_wheel, WheelSpec};

use super::{bytes, file_name, metadata, options, python};
use crate::support::{run, tools_venv};

#[test]
fn a_5_gib_member_round_trips_as_zip64_in_bounded_memory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = run(Command::new(env!("CARGO_BIN_EXE_fault-child")).arg("zip64").arg(tmp.path()));
    let peak_kib: u64 = out
        .lines()
        .find_map(|l| l.split("PEAK ").nth(1))
        .unwrap_or_else(|| panic!("child printed no peak: {out}"))
        .trim()
        .parse()
        .expect("a number");
    eprintln!("peak RSS writing a 5 GiB member: {} MiB", peak_kib / 1024);
    assert!(peak_kib < 256 * 1024, "peak RSS {peak_kib} KiB");

    let wheel = tmp.path().join("dist/big-1.2.0.dev0-py3-none-linux_x86_64.whl");
    // zipfile checks the CRC at the end of the stream; the sha256 is compared with RECORD.
    let script = r#"
import base64, hashlib, sys, zipfile
archive = zipfile.ZipFile(sys.argv[1])
info = archive.getinfo("big/sparse.bin")
assert info.file_size == 5 << 30, info.file_size
digest = hashlib.sha256()
with archive.open(info) as stream:
    while chunk := stream.read(1 << 22):
        digest.update(chunk)
expected = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
record = archive.read("big-1.2.0.dev0.dist-info/RECORD").decode()
assert f"big/sparse.bin,sha256={expected},{5 << 30}" in record, record
assert archive.read("big/z.txt") == b"after\n"
print("ok", info.compress_size)
"#;
    let checked = run(Command::new(python(tools_venv())).args(["-c", script]).arg(&wheel));
    assert!(checked.starts_with("ok "), "{checked}");
    run(Command::new("unzip").arg("-l").arg(&wheel));
}

/// More than 65,535 members need the ZIP64 end record, even when every size is small.
#[test]
fn many_members_use_the_zip64_end_record() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let members = (0..70_000).map(|i| bytes(&format!("many/m{i:05}.txt"), &format!("{i}\n"))).collect();
    let spec = WheelSpec {
        file_name: file_name("many"),
        metadata: metadata("many"),
        generator: packager::GENERATOR,
        root: packager::write::WheelRoot::Platlib,
        variant_json: None,
        entry_points: Vec::new(),
        members,
        inventory: None,
    };
    let written = write_wheel(tmp.path(), &spec, &options(), &Silent).expect("write wheel");
    assert_eq!(written.n_members, 70_003);
    let script = "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; \
                  print(len(z.namelist()), z.read('many/m69999.txt'))";
    let out = run(Command::new(python(tools_venv())).args(["-c", script]).arg(&written.path));
    assert_eq!(out.trim(), "70003 b'69999\\n'");
    run(Command::new("unzip").arg("-tq").arg(&written.path));
}
