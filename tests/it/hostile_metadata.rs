//! Never block or read without bound: a metadata file of the build that is a
//! FIFO or a link to `/dev/zero` is an error naming it, and `verify --dist` reports a
//! `.whl` that is a FIFO instead of waiting on it. A hang here is the bug, so none of these
//! tests has a timeout of its own: the test harness would show it as never finishing.

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use release_gate::Check;

use super::{fails_leaving_dist_intact, full_text, Example};

const THEROCK: &str = "base_lib_generic/base/aux-overlay/stage/share/therock";

fn mkfifo(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL");
    // SAFETY: a valid NUL-terminated path; mkfifo touches no memory of ours.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

fn metadata_files(example: &Example) -> Vec<PathBuf> {
    vec![
        example.artifacts.join("core-runtime_lib_generic/artifact_manifest.txt"),
        example.artifacts.join(THEROCK).join("therock_manifest.json"),
        example.artifacts.join(THEROCK).join("dist_info.json"),
    ]
}

#[test]
fn a_metadata_file_that_is_a_fifo_is_an_error_naming_it() {
    for index in 0..3 {
        let example = Example::new();
        let path = metadata_files(&example).swap_remove(index);
        assert!(path.is_file(), "the example has {}", path.display());
        let error = fails_leaving_dist_intact(&example, |_| {
            fs_err::remove_file(&path).expect("rm");
            mkfifo(&path);
        });
        let text = full_text(&error);
        assert!(text.contains(&path.display().to_string()) && text.contains("a FIFO, not a regular file"), "{text}");
        assert!(text.contains("hint: "), "{text}");
    }
}

#[test]
fn a_build_manifest_linked_to_dev_zero_is_refused_without_reading_it() {
    let example = Example::new();
    let path = example.artifacts.join(THEROCK).join("therock_manifest.json");
    let error = fails_leaving_dist_intact(&example, |_| {
        fs_err::remove_file(&path).expect("rm");
        symlink("/dev/zero", &path).expect("symlink");
    });
    let text = full_text(&error);
    assert!(text.contains(&path.display().to_string()) && text.contains("character device"), "{text}");
}

#[test]
fn verify_reports_a_wheel_that_is_a_fifo() {
    let example = Example::new();
    example.package().expect("packages");
    let fifo = example.dist().join("rocm_sdk_extra-7.12.0.dev0-py3-none-linux_x86_64.whl");
    mkfifo(&fifo);
    let report = release_gate::verify_dist(&example.dist()).expect("verify runs");
    let package = report.packages.iter().find(|package| package.file == fifo_name(&fifo)).expect("the FIFO is listed");
    assert!(
        package
            .violations
            .iter()
            .any(|v| v.check == Check::Archive && v.message.contains("a FIFO, not a regular file")),
        "{package:?}"
    );
}

fn fifo_name(path: &std::path::Path) -> String {
    path.file_name().expect("name").to_string_lossy().into_owned()
}
