//! An sdist: `{name}-{version}.tar.gz` holding `{name}-{version}/PKG-INFO` and the
//! given files, sorted, with fixed times, owners and modes, and a gzip header with no
//! name or time, so two runs give the same bytes.
//!
//! Owns: the sdist archive. Does not own: its files (the caller's).

use std::io::{BufWriter, Write};
use std::path::Path;

use flate2::{Compression, GzBuilder};
use tar::{EntryType, Header};

use super::atomic::AtomicFile;
use super::member::check_member_name;
use super::member::from_io;
use super::metadata::render_core_metadata;
use super::names::{file_name_form, file_name_version};
use super::{ArchiveOptions, ReuseCounts, SdistFile, SdistSpec, StagedFile, WriteError, WrittenFile};

/// The sdist's top directory, `{name}-{version}` (PEP 625: the normalised name), and every
/// file under it, PKG-INFO included, sorted and checked: what the archive holds, and what
/// a tree lays out as a directory.
pub fn sdist_layout(spec: &SdistSpec) -> Result<(String, Vec<SdistFile>), WriteError> {
    let stem = format!("{}-{}", file_name_form(&spec.metadata.name), file_name_version(&spec.metadata.version));
    let pkg_info = render_core_metadata(&spec.metadata)?;
    let mut files = vec![SdistFile { name: "PKG-INFO".to_owned(), bytes: pkg_info, executable: false }];
    files.extend(spec.files.iter().cloned());
    files.sort_by(|a, b| a.name.cmp(&b.name));
    for pair in files.windows(2) {
        if pair[0].name == pair[1].name {
            return Err(WriteError::Invalid { reason: format!("the sdist lists {} twice", pair[0].name) });
        }
    }
    for file in &files {
        check_member_name(&file.name)?;
    }
    Ok((stem, files))
}

/// Writes the sdist to a temp file in `dest_dir`, staged for `super::commit`.
pub fn stage_sdist(dest_dir: &Path, spec: &SdistSpec, options: &ArchiveOptions) -> Result<StagedFile, WriteError> {
    let (stem, files) = sdist_layout(spec)?;
    let file_name = format!("{stem}.tar.gz");

    let mut atomic = AtomicFile::create(dest_dir, &file_name)?;
    let dest = atomic.dest().to_path_buf();
    let write_error = |error| from_io(error, &dest, false);
    let gzip = GzBuilder::new().mtime(0).write(BufWriter::new(atomic.file()), Compression::best());
    let mut builder = tar::Builder::new(gzip);
    let mut uncompressed_bytes = 0;
    for file in &files {
        let mut header = Header::new_ustar();
        header.set_entry_type(EntryType::Regular);
        header.set_size(file.bytes.len() as u64);
        header.set_mode(if file.executable { 0o755 } else { 0o644 });
        header.set_mtime(options.build_time.0);
        header.set_uid(0);
        header.set_gid(0);
        builder
            .append_data(&mut header, format!("{stem}/{}", file.name), file.bytes.as_slice())
            .map_err(write_error)?;
        uncompressed_bytes += file.bytes.len() as u64;
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
        // An sdist is small and always compressed anew.
        reuse: ReuseCounts {
            compressed_members: files.len() as u64,
            compressed_bytes: uncompressed_bytes,
            ..ReuseCounts::default()
        },
    };
    Ok(StagedFile { written, staged })
}
