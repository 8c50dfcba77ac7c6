//! Opening a file whose path came from the file system, never blocking on what it turns
//! out to be: a FIFO opened for reading waits for a writer for ever, a device may never
//! end. The type is checked before the open (`stat`, or `lstat` when links are refused),
//! and the open itself is non-blocking with the type checked again on the descriptor,
//! so a FIFO swapped in between still cannot hang the caller.
//!
//! Owns: that open and the words for a file type. Does not own: what callers read, or how
//! they name the file in their own errors (the `io::Error`s here carry only the reason).

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Whether a symlink at the path itself is followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Followed, to a regular file.
    Follow,
    /// Refused: the path must name the regular file itself.
    Refuse,
}

/// Opens `path` for reading if it is (or, with [`Links::Follow`], leads to) a regular file.
/// Anything else is an [`io::ErrorKind::InvalidData`] error whose text says what it is
/// (`is a FIFO, not a regular file`); a missing file stays [`io::ErrorKind::NotFound`].
pub fn open_regular(path: &Path, links: Links) -> io::Result<File> {
    let before = match links {
        Links::Follow => std::fs::metadata(path)?,
        Links::Refuse => std::fs::symlink_metadata(path)?,
    };
    check_regular(&before)?;
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = OpenOptions::new().read(true).custom_flags(flags).open(path).map_err(|error| {
        // With O_NOFOLLOW, a symlink put in the file's place since the check.
        if error.raw_os_error() == Some(libc::ELOOP) && links == Links::Refuse {
            not_regular("a symlink")
        } else {
            error
        }
    })?;
    // O_NONBLOCK changes nothing for a regular file, which is all this returns.
    check_regular(&file.metadata()?)?;
    Ok(file)
}

fn check_regular(metadata: &Metadata) -> io::Result<()> {
    match metadata.is_file() {
        true => Ok(()),
        false => Err(not_regular(kind_of(&metadata.file_type()))),
    }
}

fn not_regular(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("is {what}, not a regular file"))
}

/// A file type in words, for messages: `a FIFO`, `a directory`, `a symlink`, ...
pub fn kind_of(file_type: &FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symlink"
    } else {
        "a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL");
        // SAFETY: a valid NUL-terminated path; mkfifo touches no memory of ours.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn fifos_devices_directories_and_refused_links_are_not_opened() {
        let temp = tempfile::tempdir().expect("tempdir");
        let (file, fifo) = (temp.path().join("file"), temp.path().join("fifo"));
        std::fs::write(&file, b"bytes").expect("write");
        mkfifo(&fifo);
        let (to_file, to_fifo) = (temp.path().join("to-file"), temp.path().join("to-fifo"));
        std::os::unix::fs::symlink(&file, &to_file).expect("symlink");
        std::os::unix::fs::symlink(&fifo, &to_fifo).expect("symlink");
        let reason = |path: &Path, links| open_regular(path, links).expect_err("refused").to_string();
        assert!(open_regular(&file, Links::Refuse).is_ok());
        assert!(open_regular(&to_file, Links::Follow).is_ok());
        assert_eq!(reason(&to_file, Links::Refuse), "is a symlink, not a regular file");
        for links in [Links::Follow, Links::Refuse] {
            assert_eq!(reason(&fifo, links), "is a FIFO, not a regular file");
            assert_eq!(reason(temp.path(), links), "is a directory, not a regular file");
        }
        assert_eq!(reason(&to_fifo, Links::Follow), "is a FIFO, not a regular file");
        assert_eq!(reason(Path::new("/dev/zero"), Links::Follow), "is a character device, not a regular file");
        let missing = open_regular(&temp.path().join("missing"), Links::Follow).expect_err("missing");
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
