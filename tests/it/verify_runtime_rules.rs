//! Every devel tarball the installed runtime refuses to expand fails `verify --dist`: one
//! test per rule of `rocm_sdk/_devel_tree.py` and `_devel_integrity.py` (SPEC §4, devel
//! expansion). Each builds a tarball of that shape, runs the runtime's own expansion code
//! on it (the shipped modules, under `python3`) to see it refused, then puts it in an
//! otherwise correct set and sees the gate report the devel wheel. (A path resolved
//! through an absolute link, the runtime's last link rule, cannot be reached: an absolute
//! link member is refused first, `an_absolute_symlink`.)

use std::path::Path;
use std::process::Command;

use super::*;

/// The shipped runtime modules that decide whether a tarball expands.
const RUNTIME_MODULES: [&str; 2] = ["_devel_tree.py", "_devel_integrity.py"];

/// Expands `tarball` with the runtime's `expand_tarball` into a fresh site-packages, as
/// `rocm-sdk init` does for the `rocm-sdk-devel` wheel, then checks what `ensure_expanded`
/// checks after it (the tree's `__init__.py`); returns the refusal, or `None` when it
/// expanded.
fn runtime_refusal(tarball: &[u8], xz: bool) -> Option<String> {
    let temp = tempfile::tempdir().expect("temp dir");
    let package = temp.path().join("runtime/rocm_sdk");
    fs_err::create_dir_all(&package).expect("mkdir");
    fs_err::write(package.join("__init__.py"), "").expect("write");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packager/python/meta/rocm_sdk");
    for module in RUNTIME_MODULES {
        fs_err::copy(shipped.join(module), package.join(module)).expect("copy a runtime module");
    }
    let path = temp.path().join(if xz { "_devel.tar.xz" } else { "_devel.tar" });
    fs_err::write(&path, tarball).expect("write tarball");
    let site = temp.path().join("site");
    fs_err::create_dir_all(&site).expect("mkdir");
    let script = "import sys\n\
                  sys.path.insert(0, sys.argv[1])\n\
                  from rocm_sdk._devel_tree import UnsafeTarballError, expand_tarball\n\
                  from rocm_sdk._devel_integrity import DamagedTarballError\n\
                  try:\n    expand_tarball(sys.argv[2], sys.argv[3], '_rocm_sdk_devel')\n\
                  except (UnsafeTarballError, DamagedTarballError) as error:\n    print('refused:', error)\n\
                  else:\n\
                  \x20   import os\n\
                  \x20   init = os.path.join(sys.argv[3], '_rocm_sdk_devel', '__init__.py')\n\
                  \x20   print('expanded' if os.path.isfile(init) else 'refused: did not produce __init__.py')\n";
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(temp.path().join("runtime"))
        .arg(&path)
        .arg(&site)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 is needed by this test (apt-get install python3)");
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(output.status.success(), "the runtime raised something else:\n{}", String::from_utf8_lossy(&output.stderr));
    stdout.strip_prefix("refused: ").map(str::to_owned)
}

/// The runtime refuses `tarball` with a message holding `runtime_says`, and the gate
/// reports a violation of the devel wheel holding `gate_says`.
fn refused_by_both(tarball: Vec<u8>, xz: bool, runtime_says: &str, gate_says: &str) {
    let refusal = runtime_refusal(&tarball, xz).expect("the runtime expanded it");
    assert!(refusal.contains(runtime_says), "runtime: {refusal}");
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let devel = position(&wheels, DEVEL_WHEEL);
    wheels[devel] = devel_wheel(if xz { "_devel.tar.xz" } else { "_devel.tar" }, tarball);
    let report = verify(&fixture, &wheels);
    let messages: Vec<String> = report
        .violations()
        .filter(|finding| finding.file == DEVEL_WHEEL)
        .map(|finding| format!("{:?} {}: {}", finding.check, finding.path.as_deref().unwrap_or("-"), finding.message))
        .collect();
    assert!(messages.iter().any(|message| message.contains(gate_says)), "gate: {messages:#?}");
    assert!(report.violations().all(|finding| finding.file == DEVEL_WHEEL), "{report:#?}");
}

const ROOT: (&str, TarMember<'static>) = ("_rocm_sdk_devel/", TarMember::Dir);

fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = liblzma::write::XzEncoder::new(Vec::new(), 1);
    encoder.write_all(bytes).expect("compress");
    encoder.finish().expect("finish xz")
}

/// The harness itself: the good set's tarball expands in the runtime and passes the gate.
#[test]
fn the_correct_tarball_expands_and_passes() {
    let tarball =
        tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/include/core.h", TarMember::File(b"int core(void);\n"))]);
    assert_eq!(runtime_refusal(&tarball, false), None);
    assert_eq!(runtime_refusal(&xz(&tarball), true), None);
    let fixture = fixture();
    assert_eq!(violations(&verify(&fixture, &default_wheels(&fixture))), []);
}

#[test]
fn a_member_under_a_symlink_member() {
    // A directory in one artifact, a link at its name in a later one: the link won, the
    // directory's children stayed (the shape packaging now refuses).
    let tarball = tar_bytes(&[
        ROOT,
        DEVEL_INIT,
        ("_rocm_sdk_devel/include/h3real/", TarMember::Dir),
        ("_rocm_sdk_devel/include/h3clash", TarMember::Symlink("h3real")),
        ("_rocm_sdk_devel/include/h3clash/a.h", TarMember::File(b"int a;\n")),
    ]);
    refused_by_both(
        tarball,
        false,
        "lies under the symlink",
        "lies under the symlink member `_rocm_sdk_devel/include/h3clash`",
    );
}

#[test]
fn a_member_under_a_file_member() {
    let tarball = tar_bytes(&[
        ROOT,
        DEVEL_INIT,
        ("_rocm_sdk_devel/share/doc", TarMember::File(b"a file\n")),
        ("_rocm_sdk_devel/share/doc/readme", TarMember::File(b"below it\n")),
    ]);
    refused_by_both(tarball, false, "lies under the file", "lies under the file member `_rocm_sdk_devel/share/doc`");
}

#[test]
fn a_symlink_to_a_directory_holding_it() {
    let tarball = tar_bytes(&[
        ROOT,
        DEVEL_INIT,
        ("_rocm_sdk_devel/include/", TarMember::Dir),
        ("_rocm_sdk_devel/include/up", TarMember::Symlink("../include")),
    ]);
    refused_by_both(tarball, false, "to a directory holding itself", "holding the link itself");
}

#[test]
fn a_symlink_with_an_empty_target() {
    let tarball = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/lib/libnothing.so", TarMember::Symlink(""))]);
    refused_by_both(tarball, false, "empty target", "symlink to `` is empty");
}

#[test]
fn an_absolute_symlink() {
    let tarball =
        tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/lib/libc.so", TarMember::Symlink("/usr/lib/libc.so.6"))]);
    refused_by_both(tarball, false, "is an absolute symlink", "leaves site-packages");
}

#[test]
fn a_symlink_leaving_site_packages() {
    let tarball = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/etc", TarMember::Symlink("../../etc"))]);
    refused_by_both(tarball, false, "leads outside site-packages", "leaves site-packages");
}

#[test]
fn a_symlink_loop() {
    let tarball = tar_bytes(&[
        ROOT,
        DEVEL_INIT,
        ("_rocm_sdk_devel/lib/a", TarMember::Symlink("b")),
        ("_rocm_sdk_devel/lib/b", TarMember::Symlink("a")),
    ]);
    refused_by_both(tarball, false, "symlink loop", "loops");
}

#[test]
fn a_member_climbing_out_with_dot_dot() {
    let tarball = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/../evil.pth", TarMember::File(b"import os\n"))]);
    refused_by_both(tarball, false, "contains '..'", "MemberPath _rocm_sdk_devel/../evil.pth: member path has a `..`");
}

#[test]
fn an_absolute_member() {
    let tarball = tar_bytes(&[ROOT, DEVEL_INIT, ("/_rocm_sdk_devel/x", TarMember::File(b"x\n"))]);
    refused_by_both(tarball, false, "is an absolute path", "member path is an absolute path");
}

#[test]
fn a_member_with_an_empty_name() {
    // `tar -C dir .` writes this root entry first.
    let tarball = tar_bytes(&[("./", TarMember::Dir), ROOT, DEVEL_INIT]);
    refused_by_both(tarball, false, "has an empty name", "member has an empty name");
}

#[test]
fn a_member_outside_the_platform_directory() {
    let tarball =
        tar_bytes(&[("_rocm_sdk_devel_other/", TarMember::Dir), ("_rocm_sdk_devel_other/x", TarMember::File(b"x"))]);
    refused_by_both(
        tarball,
        false,
        "is not under _rocm_sdk_devel/",
        "is not the package's platform directory `_rocm_sdk_devel`",
    );
}

#[test]
fn a_hard_link_member() {
    let tarball = tar_bytes(&[
        ROOT,
        DEVEL_INIT,
        ("_rocm_sdk_devel/a.h", TarMember::File(b"int a;\n")),
        ("_rocm_sdk_devel/b.h", TarMember::HardLink("_rocm_sdk_devel/a.h")),
    ]);
    refused_by_both(tarball, false, "neither a file, a directory nor a symlink", "is a hard link");
}

#[test]
fn a_fifo_member() {
    let tarball = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/pipe", TarMember::Fifo)]);
    refused_by_both(tarball, false, "neither a file, a directory nor a symlink", "unsupported type");
}

#[test]
fn a_member_twice() {
    let tarball = tar_bytes(&[
        ROOT,
        DEVEL_INIT,
        ("_rocm_sdk_devel/a.h", TarMember::File(b"one\n")),
        ("_rocm_sdk_devel/a.h", TarMember::File(b"two\n")),
    ]);
    refused_by_both(tarball, false, "appears twice", "member appears twice");
}

/// Cut where a header belongs (tarfile itself stops there quietly), and after only one of
/// the two end-of-archive blocks.
#[test]
fn a_tarball_cut_short_at_a_block_boundary() {
    let whole = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/a.h", TarMember::File(b"int a;\n"))]);
    for kept in [whole.len() - 1024, whole.len() - 512] {
        refused_by_both(
            whole[..kept].to_vec(),
            false,
            "ends before its end-of-archive marker",
            "end-of-archive marker",
        );
    }
}

#[test]
fn a_member_cut_short() {
    let whole = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/big.bin", TarMember::File(&[7u8; 4096]))]);
    // The header and half the data: the member claims more than the tarball holds.
    assert_eq!(whole.len(), 512 * 3 + 4096 + 1024);
    refused_by_both(whole[..512 * 3 + 2048].to_vec(), false, "damaged", "the devel tarball is unreadable");
}

#[test]
fn a_compressed_tarball_whose_stream_is_cut() {
    let tarball = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/a.h", TarMember::File(b"int a;\n"))]);
    let compressed = xz(&tarball);
    // The tar inside is whole; the xz stream lacks its index and footer.
    refused_by_both(compressed[..compressed.len() - 24].to_vec(), true, "damaged", "the devel tarball is unreadable");
}

#[test]
fn a_tarball_without_the_package_init() {
    let tarball = tar_bytes(&[ROOT, ("_rocm_sdk_devel/include/a.h", TarMember::File(b"int a;\n"))]);
    refused_by_both(tarball, false, "did not produce __init__.py", "has no file `_rocm_sdk_devel/__init__.py`");
}

#[test]
fn not_a_tarball() {
    refused_by_both(
        b"not a tarball at all, just some bytes".repeat(20),
        false,
        "damaged",
        "the devel tarball is unreadable",
    );
}

/// The runtime's RECORD check of the tarball (`check_tarball`, before it expands): the
/// refusal when `tarball` sits in a devel wheel whose RECORD lists `recorded` for it.
fn runtime_record_refusal(tarball: &[u8], recorded: &[u8]) -> Option<String> {
    let temp = tempfile::tempdir().expect("temp dir");
    let package = temp.path().join("runtime/rocm_sdk");
    fs_err::create_dir_all(&package).expect("mkdir");
    fs_err::write(package.join("__init__.py"), "").expect("write");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packager/python/meta/rocm_sdk");
    fs_err::copy(shipped.join("_devel_integrity.py"), package.join("_devel_integrity.py")).expect("copy");
    let site = temp.path().join("site");
    let devel = site.join("rocm_sdk_devel");
    let dist_info = site.join("rocm_sdk_devel-1.0.dist-info");
    fs_err::create_dir_all(&devel).expect("mkdir");
    fs_err::create_dir_all(&dist_info).expect("mkdir");
    fs_err::write(devel.join("_devel.tar"), tarball).expect("write tarball");
    let hash = support::record_hash(recorded);
    let record = format!("rocm_sdk_devel/_devel.tar,{hash},{}\n", recorded.len());
    fs_err::write(dist_info.join("RECORD"), record).expect("write RECORD");
    let script = "import sys\n\
                  sys.path.insert(0, sys.argv[1])\n\
                  from rocm_sdk._devel_integrity import DamagedTarballError, check_tarball\n\
                  try:\n    check_tarball(sys.argv[2], sys.argv[3], 'rocm-sdk-devel')\n\
                  except DamagedTarballError as error:\n    print('refused:', error)\n\
                  else:\n    print('accepted')\n";
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(temp.path().join("runtime"))
        .arg(devel.join("_devel.tar"))
        .arg(dist_info.join("RECORD"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 is needed by this test (apt-get install python3)");
    assert!(output.status.success(), "the runtime raised something else:\n{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().strip_prefix("refused: ").map(str::to_owned)
}

/// The tarball the runtime finds is not the one RECORD lists (changed after install, or a
/// wheel whose RECORD was never right): refused by its size, and by its hash alone.
#[test]
fn a_tarball_not_matching_record() {
    let listed = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/a.h", TarMember::File(b"int a;\n"))]);
    let longer = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/a.h", TarMember::File(&[b'b'; 600]))]);
    let same_size = tar_bytes(&[ROOT, DEVEL_INIT, ("_rocm_sdk_devel/a.h", TarMember::File(b"int b;\n"))]);
    assert_eq!(runtime_record_refusal(&listed, &listed), None);
    for (found, says) in [(&longer, "RECORD says"), (&same_size, "does not match the devel package's RECORD")] {
        let refusal = runtime_record_refusal(found, &listed).expect("the runtime accepted it");
        assert!(refusal.contains(says), "runtime: {refusal}");
        let fixture = fixture();
        let mut wheels = default_wheels(&fixture);
        let devel = position(&wheels, DEVEL_WHEEL);
        wheels[devel] = devel_wheel("_devel.tar", listed.clone());
        let member = wheels[devel].entries.iter_mut().find(|entry| entry.name == "rocm_sdk_devel/_devel.tar");
        member.expect("tarball member").bytes = found.clone();
        let report = verify(&fixture, &wheels);
        let found_record = report.violations().any(|finding| {
            finding.file == DEVEL_WHEEL
                && finding.path.as_deref() == Some("rocm_sdk_devel/_devel.tar")
                && finding.check == Check::Record
        });
        assert!(found_record, "{report:#?}");
    }
}
