//! Reading the small metadata files of a build (`artifact_manifest.txt`,
//! `therock_manifest.json`, `dist_info.json`, the checkout's `version.json`): only regular
//! files, and only up to a size limit. A FIFO in their place hung the run
//! forever and a link to `/dev/zero` ate memory until it ran out.
//!
//! Owns: the open, the type check and the bounded read. Does not own: what the files mean
//! (`catalog`), or which errors callers turn a missing file into.

use std::io::{self, Read};
use std::path::Path;

/// No metadata file of a build comes near this; a larger one is not what it claims to be.
pub const METADATA_LIMIT: u64 = 16 << 20;

/// The text of `path`, a regular file of at most [`METADATA_LIMIT`] bytes. Symlinks are
/// followed (to a regular file). A FIFO, device, socket or directory, a larger file, or
/// invalid UTF-8 is an `InvalidData` error saying which; a missing file stays `NotFound`.
pub fn read_metadata_file(path: &Path) -> io::Result<String> {
    // Never blocks: a FIFO or device is refused before and after a non-blocking open.
    let file = archive_write::open_regular(path, archive_write::Links::Follow)?;
    let metadata = file.metadata()?;
    if metadata.len() > METADATA_LIMIT {
        return Err(invalid(format!(
            "is {} bytes, more than a metadata file may be ({METADATA_LIMIT})",
            metadata.len()
        )));
    }
    let mut bytes = Vec::new();
    // The limit holds even for a file that grows while it is read.
    file.take(METADATA_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > METADATA_LIMIT {
        return Err(invalid(format!("grew past {METADATA_LIMIT} bytes while it was read")));
    }
    String::from_utf8(bytes).map_err(|_| invalid("is not UTF-8 text".to_owned()))
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_regular_files_are_read() {
        let temp = tempfile::tempdir().expect("tempdir");
        let text = temp.path().join("a.json");
        fs_err::write(&text, "{}").expect("write");
        assert_eq!(read_metadata_file(&text).expect("read"), "{}");
        let error = read_metadata_file(Path::new("/dev/zero")).expect_err("a device");
        assert!(error.to_string().contains("character device"), "{error}");
        let error = read_metadata_file(temp.path()).expect_err("a directory");
        assert!(error.to_string().contains("directory"), "{error}");
        let missing = read_metadata_file(&temp.path().join("nope")).expect_err("missing");
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let big = temp.path().join("big");
        fs_err::File::create(&big).expect("create").set_len(METADATA_LIMIT + 1).expect("grow");
        assert!(read_metadata_file(&big).expect_err("too big").to_string().contains("more than"));
    }
}
