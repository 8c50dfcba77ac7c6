//! Atomic placement in the destination (SPEC §5): each output is written to a hidden temp
//! file beside its final name, synced, and renamed into place, then the directory is
//! synced. On any error the temp file is removed (tempfile's drop), so `dist/` never
//! holds a partial archive under a package name.
//!
//! Owns: temp naming, fsync, rename, the final hash of the file. Does not own: content.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::record::hex;
use super::WriteError;

/// A temp file in the destination directory that becomes `file_name` on [`commit`].
///
/// [`commit`]: AtomicFile::commit
pub struct AtomicFile {
    temp: tempfile::NamedTempFile,
    dest: PathBuf,
}

/// A file renamed into place.
pub struct Committed {
    pub path: PathBuf,
    pub len: u64,
    pub sha256: String,
}

impl AtomicFile {
    pub fn create(dest_dir: &Path, file_name: &str) -> Result<AtomicFile, WriteError> {
        std::fs::create_dir_all(dest_dir).map_err(|source| WriteError::Write { path: dest_dir.into(), source })?;
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{file_name}.tmp-"))
            .tempfile_in(dest_dir)
            .map_err(|source| WriteError::Write { path: dest_dir.into(), source })?;
        Ok(AtomicFile { temp, dest: dest_dir.join(file_name) })
    }

    /// The path errors should name: the temp file is an implementation detail.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    pub fn file(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// Syncs, hashes, and renames the file into place, replacing an older one.
    pub fn commit(mut self) -> Result<Committed, WriteError> {
        let dest = self.dest.clone();
        let write_error = |source| WriteError::Write { path: dest.clone(), source };
        let file = self.temp.as_file_mut();
        file.sync_all().map_err(write_error)?;
        // Read back what reached the disk: cheap next to compressing it, and the hash is
        // then that of the real file.
        file.seek(SeekFrom::Start(0)).map_err(write_error)?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 1 << 20];
        let mut len = 0u64;
        loop {
            let n = file.read(&mut buffer).map_err(write_error)?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            len += n as u64;
        }
        // tempfile creates 0600; a package is readable by all, whoever's umask ran the build.
        file.set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(write_error)?;
        self.temp.persist(&dest).map_err(|error| write_error(error.error))?;
        if let Some(dir) = dest.parent() {
            File::open(dir)
                .and_then(|dir| dir.sync_all())
                .map_err(|source| WriteError::Write { path: dir.into(), source })?;
        }
        Ok(Committed { path: dest.clone(), len, sha256: hex(&hasher.finalize()) })
    }
}
