//! `repair --against SITE_PACKAGES` whose installed SDK files are not regular files
//! (SPEC §11): a `rocm_sdk_core-*.dist-info/METADATA` that is a FIFO (which blocked the
//! run for ever) and a RECORD that is a symlink to `/dev/zero` (read without bound) are
//! refused in words naming the file, as every input of the packager is opened.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use diagnostic::Diagnostic;
use packager::repair::{RepairError, RepairReport};

use super::{ext_wheel, repair_into, sdk};

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL");
    // SAFETY: a valid NUL-terminated path; mkfifo touches no memory of ours.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0, "{}", std::io::Error::last_os_error());
}

/// The repair, run on a thread the test waits for with a deadline: one that blocks fails
/// the test instead of hanging the suite.
fn repair_within_a_minute(wheel: &Path, against: &Path, dest: &Path) -> Result<RepairReport, RepairError> {
    let (sender, receiver) = mpsc::channel();
    let (wheel, against, dest) = (wheel.to_path_buf(), against.to_path_buf(), dest.to_path_buf());
    std::thread::spawn(move || {
        let _ = sender.send(repair_into(&[wheel], &against, &dest, &[]));
    });
    receiver.recv_timeout(Duration::from_secs(60)).expect("the repair blocked on a file of the SDK")
}

/// A copy of the SDK's packages installed in its site-packages, in `dir`.
fn copied_site_packages(dir: &Path) -> std::path::PathBuf {
    let site = dir.join("site-packages");
    fs_err::create_dir_all(&site).expect("mkdir");
    let ours: Vec<std::path::PathBuf> = fs_err::read_dir(&sdk().site_packages)
        .expect("list")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            path.file_name().is_some_and(|name| name.to_string_lossy().trim_start_matches('_').starts_with("rocm"))
        })
        .collect();
    crate::support::run(std::process::Command::new("cp").arg("-a").args(ours).arg(&site));
    site
}

#[test]
fn installed_metadata_that_is_a_fifo_or_dev_zero_is_refused_without_blocking() {
    let work = tempfile::tempdir().expect("temp dir");
    let wheel = ext_wheel(work.path());
    let site = copied_site_packages(work.path());
    let core = fs_err::read_dir(&site)
        .expect("list")
        .map(|entry| entry.expect("entry").path())
        .find(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with("rocm_sdk_core-")))
        .expect("the core's dist-info");
    let metadata = core.join("METADATA");
    let original = fs_err::read(&metadata).expect("read");
    fs_err::remove_file(&metadata).expect("rm");
    mkfifo(&metadata);
    let error = repair_within_a_minute(&wheel, &site, &work.path().join("out")).expect_err("refused");
    assert!(matches!(error, RepairError::SdkFile { .. }), "{error}");
    assert!(error.to_string().contains("METADATA of the SDK: is a FIFO, not a regular file"), "{error}");
    assert_eq!(error.path(), Some(metadata.as_path()));

    fs_err::remove_file(&metadata).expect("rm");
    fs_err::write(&metadata, original).expect("restore");
    let record = core.join("RECORD");
    fs_err::remove_file(&record).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", &record).expect("symlink");
    let error = repair_within_a_minute(&wheel, &site, &work.path().join("out")).expect_err("refused");
    assert!(error.to_string().contains("RECORD of the SDK: is a character device, not a regular file"), "{error}");
    assert_eq!(error.path(), Some(record.as_path()));
    assert!(error.hint().is_some_and(|hint| hint.contains("--force-reinstall")));
}
