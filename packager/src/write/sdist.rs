//! The `rocm` sdist: `{name}-{version}.tar.gz` holding `{name}-{version}/PKG-INFO` and the
//! given files, sorted, with fixed times, owners and modes, and a gzip header with no
//! name or time, so two runs give the same bytes.
//!
//! Owns: the sdist archive. Does not own: its files (the in-tree backend and sources come
//! from `python`/`plan`).

use std::io::{BufWriter, Write};
use std::path::Path;

use flate2::{Compression, GzBuilder};
use tar::{EntryType, Header};

use super::atomic::AtomicFile;
use super::metadata::{file_name_version, normalize_dist_name, render_core_metadata};
use super::source::from_io;
use super::wheel::check_member_name;
use super::{ArchiveOptions, SdistSpec, StagedFile, WriteError, WrittenFile};

/// Writes the sdist to a temp file in `dest_dir`, staged for `super::commit`.
pub fn stage_sdist(dest_dir: &Path, spec: &SdistSpec, options: &ArchiveOptions) -> Result<StagedFile, WriteError> {
    let pkg_info = render_core_metadata(&spec.metadata)?;
    // PEP 625: the sdist's file name and top directory use the normalised name.
    let stem = format!("{}-{}", normalize_dist_name(&spec.metadata.name), file_name_version(&spec.metadata.version));
    let file_name = format!("{stem}.tar.gz");

    let mut files: Vec<(&str, &[u8], bool)> = vec![("PKG-INFO", pkg_info.as_slice(), false)];
    files.extend(spec.files.iter().map(|file| (file.name.as_str(), file.bytes.as_slice(), file.executable)));
    files.sort_by(|a, b| a.0.cmp(b.0));
    for pair in files.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(WriteError::Invalid { reason: format!("the sdist lists {} twice", pair[0].0) });
        }
    }
    for (name, _, _) in &files {
        check_member_name(name)?;
    }

    let mut atomic = AtomicFile::create(dest_dir, &file_name)?;
    let dest = atomic.dest().to_path_buf();
    let write_error = |error| from_io(error, &dest, false);
    let gzip = GzBuilder::new().mtime(0).write(BufWriter::new(atomic.file()), Compression::best());
    let mut builder = tar::Builder::new(gzip);
    let mut uncompressed_bytes = 0;
    for (name, bytes, executable) in &files {
        let mut header = Header::new_ustar();
        header.set_entry_type(EntryType::Regular);
        header.set_size(bytes.len() as u64);
        header.set_mode(if *executable { 0o755 } else { 0o644 });
        header.set_mtime(options.build_time.0);
        header.set_uid(0);
        header.set_gid(0);
        builder.append_data(&mut header, format!("{stem}/{name}"), *bytes).map_err(write_error)?;
        uncompressed_bytes += bytes.len() as u64;
    }
    let gzip = builder.into_inner().map_err(write_error)?;
    let mut buffered = gzip.finish().map_err(write_error)?;
    buffered.flush().map_err(write_error)?;
    drop(buffered);

    let staged = atomic.stage()?;
    let written = WrittenFile {
        path: staged.dest().to_path_buf(),
        file_name,
        n_members: files.len(),
        uncompressed_bytes,
        compressed_bytes: staged.len,
        sha256: staged.sha256.clone(),
    };
    Ok(StagedFile { written, staged })
}
