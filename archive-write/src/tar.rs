//! Tarball members of a wheel (`.tar` or `.tar.xz`): entries sorted by name, real
//! directories, files and symlinks, GNU long-name records for long paths, fixed times and
//! owners; xz multi-threaded with a memory budget. Produced on its own thread into a
//! bounded pipe while the wheel writer consumes it, so it never exists on disk.
//!
//! Owns: the tar layout and xz settings. Does not own: what is in the tarball (the caller's).

use std::io::{self, Read, Write};
use std::path::Path;
use std::thread::{Scope, ScopedJoinHandle};

use liblzma::stream::{Check, Filters, LzmaOptions, MtStreamBuilder, Stream};
use liblzma::write::XzEncoder;
use tar::{EntryType, Header};

use super::member::{from_io, known_len, open_member};
use super::pipe::{pipe, PipeReader};
use super::{Progress, TarballCompression};
use super::{TarEntry, TarEntryKind, TarTotals, TarballSpec, WriteAction, WriteError};

/// The xz encoder may use this much memory; threads are reduced to fit (SPEC §5: the
/// process stays under 256 MiB). The rest of the process (the plan, a second wheel
/// writer's window) needs most of another 128 MiB on a large build.
const XZ_MEMORY_BUDGET: u64 = 128 << 20;

/// Uncompressed bytes per xz block. Blocks are compressed independently: that is what lets
/// every core work on the stream, and what makes its bytes independent of the thread
/// count. A dictionary larger than a block is never used, so it is capped at the block
/// size; at preset 6 a thread then needs about 60 MiB instead of 140 MiB, and two threads
/// fit the budget (liblzma's default, 24 MiB blocks, allowed one). On a large tree
/// (the packager's bench) two threads at 4 MiB take 18 s where one thread at the default takes 44 s, for an
/// output 0.1 % smaller.
const XZ_BLOCK_SIZE: u32 = 4 << 20;

/// Held while an xz encoder exists: wheels may be written concurrently, and two encoders
/// of [`XZ_MEMORY_BUDGET`] each would break the process's memory bound.
static XZ_ENCODER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Calls `each` with every entry in archive order: the listed ones sorted, merged
/// with the streamed ones. A name twice (a planning bug) or unusable in an archive is an
/// error naming it.
pub fn for_each_entry(
    spec: &TarballSpec,
    each: &mut dyn FnMut(&TarEntry) -> Result<(), WriteError>,
) -> Result<(), WriteError> {
    let mut listed: Vec<&TarEntry> = spec.entries.iter().collect();
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    let mut listed = listed.into_iter().peekable();
    let mut previous = String::new();
    let mut visit = |entry: &TarEntry| {
        if !previous.is_empty() && entry.name <= previous {
            let reason = if entry.name == previous {
                format!("tarball lists {} twice", entry.name)
            } else {
                format!("tarball entries out of order: {} after {previous}", entry.name)
            };
            return Err(WriteError::Invalid { reason });
        }
        super::member::check_member_name(&entry.name)?;
        previous.clear();
        previous.push_str(&entry.name);
        each(entry)
    };
    if let Some(streamed) = &spec.streamed {
        streamed.for_each_entry(&mut |entry| {
            while let Some(before) = listed.next_if(|before| before.name < entry.name) {
                visit(before)?;
            }
            visit(&entry)
        })?;
    }
    listed.try_for_each(visit)
}

/// Sums over every entry, listed and streamed (the streamed ones say theirs).
fn totals(spec: &TarballSpec) -> TarTotals {
    let streamed = spec.streamed.as_ref().map(|streamed| streamed.totals()).unwrap_or_default();
    streamed.with(&spec.entries)
}

/// Bytes of payload the tarball reads, for progress.
pub fn input_len(spec: &TarballSpec) -> u64 {
    totals(spec).file_bytes
}

/// An upper bound of the finished (possibly compressed) tarball's size, which decides
/// whether its wheel member needs a ZIP64 header before its size is known.
pub fn size_bound(spec: &TarballSpec) -> u64 {
    let totals = totals(spec);
    // Per entry a header and up to two long-name records (name, link target), its data
    // rounded up to whole blocks; two end blocks.
    let tar_bound = 1024u64
        .saturating_add(totals.entries.saturating_mul(3 * 512 + 511))
        .saturating_add(totals.name_bytes.saturating_mul(2))
        .saturating_add(totals.file_bytes);
    // xz of incompressible data grows by well under 1 %.
    tar_bound.saturating_add(tar_bound / 64).saturating_add(1 << 20)
}

/// Starts the producer thread; the reader yields the tarball, the handle its result.
pub fn spawn_tarball<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    spec: &'env TarballSpec,
    member_name: &'env str,
    progress: &'env dyn Progress,
    progress_name: &'env str,
) -> (PipeReader, ScopedJoinHandle<'scope, Result<(), WriteError>>) {
    let (writer, reader) = pipe();
    let handle = scope.spawn(move || {
        let output = Path::new(member_name);
        let mut writer = write_tarball(spec, writer, progress, progress_name, output)?;
        writer.flush().map_err(|source| WriteError::io(WriteAction::Write, output, source))
    });
    (reader, handle)
}

/// Writes the tarball, compressed as `spec` says, to `out`; returns `out`.
pub fn write_tarball<W: Write>(
    spec: &TarballSpec,
    out: W,
    progress: &dyn Progress,
    progress_name: &str,
    output: &Path,
) -> Result<W, WriteError> {
    match spec.compression {
        TarballCompression::None => write_tar(spec, out, progress, progress_name, output),
        TarballCompression::Xz { preset } => {
            // A panic elsewhere while holding the lock leaves nothing to repair.
            let _one_encoder = XZ_ENCODER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let encoder = XzEncoder::new_stream(out, xz_stream(preset, output)?);
            let encoder = write_tar(spec, encoder, progress, progress_name, output)?;
            encoder.finish().map_err(|source| WriteError::io(WriteAction::Write, output, source))
        }
    }
}

/// A multi-threaded xz encoder with as many threads as cores, fewer if memory says so.
/// The stream does not depend on the thread count (the block size is fixed). Public so
/// the bench's floor compresses with exactly these settings; `output` names errors.
pub fn xz_stream(preset: u32, output: &Path) -> Result<Stream, WriteError> {
    let lzma_error = |error: liblzma::stream::Error| WriteError::io(WriteAction::Write, output, error.into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let mut threads = cores;
    let mut builder = xz_builder(preset, threads).map_err(lzma_error)?;
    while threads > 1 && builder.memusage() > XZ_MEMORY_BUDGET {
        threads -= 1;
        builder.threads(threads);
    }
    builder.encoder().map_err(lzma_error)
}

fn xz_builder(preset: u32, threads: u32) -> Result<MtStreamBuilder, liblzma::stream::Error> {
    let mut options = LzmaOptions::new_preset(preset)?;
    options.dict_size(xz_preset_dict_size(preset).min(XZ_BLOCK_SIZE));
    let mut filters = Filters::new();
    filters.lzma2(&options);
    let mut builder = MtStreamBuilder::new();
    builder.filters(filters).block_size(u64::from(XZ_BLOCK_SIZE)).check(Check::Crc64).threads(threads);
    Ok(builder)
}

/// The LZMA2 dictionary size of an xz preset (xz(1), "Presets").
fn xz_preset_dict_size(preset: u32) -> u32 {
    match preset {
        0 => 256 << 10,
        1 => 1 << 20,
        2 => 2 << 20,
        3 | 4 => 4 << 20,
        5 | 6 => 8 << 20,
        7 => 16 << 20,
        8 => 32 << 20,
        _ => 64 << 20,
    }
}

fn write_tar<W: Write>(
    spec: &TarballSpec,
    out: W,
    progress: &dyn Progress,
    progress_name: &str,
    output: &Path,
) -> Result<W, WriteError> {
    let mut builder = tar::Builder::new(out);
    for_each_entry(spec, &mut |entry| {
        let path = Path::new(&entry.name);
        let mut header = Header::new_gnu();
        header.set_mtime(spec.build_time.0);
        header.set_uid(0);
        header.set_gid(0);
        let result = match &entry.kind {
            TarEntryKind::Dir => {
                header.set_entry_type(EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, path, io::empty())
            }
            TarEntryKind::Symlink { target } => {
                header.set_entry_type(EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder.append_link(&mut header, path, target)
            }
            TarEntryKind::File { data, executable } => {
                let len = known_len(data).ok_or_else(|| WriteError::Invalid {
                    reason: format!("{} in a tarball member cannot itself be a tarball", entry.name),
                })?;
                header.set_entry_type(EntryType::Regular);
                header.set_mode(if *executable { 0o755 } else { 0o644 });
                header.set_size(len);
                let reader = ProgressReader { inner: open_member(data)?, progress, name: progress_name };
                builder.append_data(&mut header, path, reader)
            }
        };
        result.map_err(|error| from_io(error, output, false))
    })?;
    builder.into_inner().map_err(|error| from_io(error, output, false))
}

/// Bump when the tar bytes this writer makes of the same entries change in a way the
/// probe below would not show.
const LAYOUT_VERSION: u32 = 1;

/// The sha256 of a fixed tarball as this build writes it (a directory, a file under a
/// name too long for a plain header, an executable, a symlink with a long target), with
/// [`LAYOUT_VERSION`]: part of every tarball's identity (`identity`), so a tarball made by
/// another `tar` crate or header rule is never taken for this one's.
pub fn layout_probe() -> &'static [u8; 32] {
    static PROBE: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    PROBE.get_or_init(|| {
        use sha2::{Digest, Sha256};
        let long = format!("probe/{}/file.txt", "long-directory-name".repeat(8));
        let file = |bytes: &[u8], executable| TarEntryKind::File {
            data: super::MemberData::Bytes(std::sync::Arc::new(bytes.to_vec())),
            executable,
        };
        let entries = vec![
            TarEntry { name: "probe".to_owned(), kind: TarEntryKind::Dir },
            TarEntry { name: long.clone(), kind: file(b"text\n", false) },
            TarEntry { name: "probe/run".to_owned(), kind: file(b"#!/bin/sh\n", true) },
            TarEntry { name: "probe/zlink".to_owned(), kind: TarEntryKind::Symlink { target: long } },
        ];
        let spec = TarballSpec {
            entries,
            streamed: None,
            compression: TarballCompression::None,
            build_time: super::BuildTime::DEFAULT,
        };
        let mut hasher = Sha256::new();
        hasher.update(LAYOUT_VERSION.to_le_bytes());
        match write_tar(&spec, Vec::new(), &super::Silent, "", Path::new("probe.tar")) {
            Ok(bytes) => hasher.update(&bytes),
            Err(error) => hasher.update(error.to_string().as_bytes()),
        }
        hasher.finalize().into()
    })
}

/// Reports consumed input as it passes.
pub struct ProgressReader<'a, R> {
    pub inner: R,
    pub progress: &'a dyn Progress,
    pub name: &'a str,
}

impl<R: Read> Read for ProgressReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.advance(self.name, n as u64);
        Ok(n)
    }
}

/// Lays the entries out under `root` as real directories, files and symlinks (trees).
pub fn expand_tarball_entries(spec: &TarballSpec, root: &Path) -> Result<(), WriteError> {
    for_each_entry(spec, &mut |entry| {
        let path = root.join(&entry.name);
        let write_error = |source| WriteError::io(WriteAction::Write, path.clone(), source);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| WriteError::io(WriteAction::CreateDir, parent, source))?;
        }
        match &entry.kind {
            TarEntryKind::Dir => std::fs::create_dir_all(&path).map_err(write_error)?,
            TarEntryKind::Symlink { target } => std::os::unix::fs::symlink(target, &path).map_err(write_error)?,
            TarEntryKind::File { data, executable } => {
                super::member::write_file(data, *executable, &path)?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_xz_threads_fit_the_budget_at_every_preset() {
        for preset in 0..=9 {
            let builder = xz_builder(preset, 2).expect("xz builder");
            assert!(builder.memusage() <= XZ_MEMORY_BUDGET, "preset {preset}: {} bytes", builder.memusage());
        }
    }

    #[test]
    fn xz_output_does_not_depend_on_the_thread_count() {
        // Three blocks of text that compresses, so every thread gets work.
        let input: Vec<u8> =
            (0..3 * XZ_BLOCK_SIZE as usize).map(|i| b"archive-write "[i % 14] ^ (i / 7919) as u8).collect();
        let compress = |threads: u32| {
            let stream = xz_builder(6, threads).expect("builder").encoder().expect("encoder");
            let mut encoder = XzEncoder::new_stream(Vec::new(), stream);
            encoder.write_all(&input).expect("compress");
            encoder.finish().expect("finish")
        };
        let one = compress(1);
        assert_eq!(one, compress(2));
        let mut decoded = Vec::new();
        liblzma::read::XzDecoder::new(one.as_slice()).read_to_end(&mut decoded).expect("decode");
        assert!(decoded == input, "xz round trip changed the bytes");
    }
}
