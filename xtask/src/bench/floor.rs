//! The floors: deflating the payload's bytes with no packaging logic, on all cores, each
//! regular file read once (hard links counted once) in fixed chunks, every chunk a task
//! of its own on rayon's pool. Three codecs are measured on the same bytes:
//!
//! - libdeflate at the packager's level in independent 4 MiB chunks: the floor our time
//!   is held to (the packager's own codec, without its joining, hashing or archives);
//! - zlib-rs (about zlib-ng) at that level in independent 1 MiB chunks: the floor of the
//!   packager's earlier codec, kept so figures stay comparable over time;
//! - stock zlib at level 6, each file as one stream (chunks primed with the previous
//!   32 KiB, as pigz does): the reference packager's encoder, the size `dist/` is held to.
//!
//! Owns: those measurements. Does not own: the packager's real pipeline.

use std::collections::BTreeSet;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use flate2::{Compress, Compression, FlushCompress};
use rayon::prelude::*;

use super::zlib;

/// What compressing the payload took.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Floor {
    /// Which codec, level and chunking.
    pub codec: String,
    pub wall_seconds: f64,
    /// User + system CPU of this process while compressing.
    pub cpu_seconds: f64,
    pub n_files: u64,
    pub input_bytes: u64,
    pub compressed_bytes: u64,
    pub threads: usize,
}

/// A codec of a floor.
#[derive(Clone, Copy, Debug)]
pub enum Codec {
    /// libdeflate, independent chunks.
    Libdeflate { level: u32 },
    /// zlib-rs through flate2, independent chunks.
    ZlibRs { level: u32 },
    /// Stock zlib, chunks primed with the previous 32 KiB so a file is one stream.
    Zlib { level: u32 },
}

impl Codec {
    /// The chunk size this codec's floor uses.
    pub fn chunk_size(self) -> u64 {
        match self {
            Codec::Libdeflate { .. } => 4 << 20,
            Codec::ZlibRs { .. } | Codec::Zlib { .. } => 1 << 20,
        }
    }

    fn label(self) -> String {
        match self {
            Codec::Libdeflate { level } => format!("libdeflate {level}, independent 4 MiB chunks"),
            Codec::ZlibRs { level } => format!("zlib-rs {level}, independent 1 MiB chunks"),
            Codec::Zlib { level } => format!("zlib {level}, one stream per file"),
        }
    }
}

/// A chunk of a file: (file, offset, length, whether it ends the file).
type Chunk<'a> = (&'a Path, u64, u64, bool);

/// Compresses every regular file under `dir` with `codec`.
pub fn measure_floor(dir: &Path, codec: Codec) -> anyhow::Result<Floor> {
    let files = regular_files(dir)?;
    measure_files(&files, codec)
}

/// Compresses `files` (path, length; repeats allowed) with `codec`.
pub fn measure_files(files: &[(PathBuf, u64)], codec: Codec) -> anyhow::Result<Floor> {
    let size = codec.chunk_size();
    let chunks: Vec<Chunk> = files
        .iter()
        .flat_map(|(path, len)| {
            let n_chunks = len.div_ceil(size).max(1);
            (0..n_chunks).map(move |k| (path.as_path(), k * size, (*len - k * size).min(size), k + 1 == n_chunks))
        })
        .collect();
    let started = Instant::now();
    let cpu_before = process_cpu_seconds();
    let compressed_bytes = chunks
        .par_iter()
        // One task per chunk: rayon splits a slice by count, and a run of a large file's
        // chunks would otherwise land on one thread while the other finishes small files.
        .with_max_len(1)
        .map(|&chunk| compress_chunk(chunk, codec))
        .try_reduce(|| 0, |a, b| Ok(a + b))?;
    Ok(Floor {
        codec: codec.label(),
        wall_seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: process_cpu_seconds() - cpu_before,
        n_files: files.len() as u64,
        input_bytes: files.iter().map(|(_, len)| len).sum(),
        compressed_bytes,
        threads: rayon::current_num_threads(),
    })
}

/// User + system CPU this process used so far.
pub(super) fn process_cpu_seconds() -> f64 {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: usage is a live local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Bytes a chunk compresses to; a primed chunk reads the 32 KiB before it too.
fn compress_chunk((path, offset, len, last): Chunk, codec: Codec) -> anyhow::Result<u64> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let primed = match codec {
        Codec::Zlib { .. } => offset.min(32 << 10),
        _ => 0,
    };
    let mut input = vec![0u8; (primed + len) as usize];
    file.read_exact_at(&mut input, offset - primed).with_context(|| format!("reading {}", path.display()))?;
    let (dictionary, input) = input.split_at(primed as usize);
    match codec {
        Codec::Libdeflate { level } => libdeflate(input, level),
        Codec::ZlibRs { level } => zlib_rs(input, level),
        Codec::Zlib { level } => zlib::deflate_len(input, dictionary, level, last),
    }
}

fn libdeflate(input: &[u8], level: u32) -> anyhow::Result<u64> {
    let level = libdeflater::CompressionLvl::new(level as i32).map_err(|_| anyhow::anyhow!("bad level {level}"))?;
    let mut compressor = libdeflater::Compressor::new(level);
    let mut out = vec![0u8; compressor.deflate_compress_bound(input.len())];
    let len = compressor.deflate_compress(input, &mut out).map_err(|error| anyhow::anyhow!("{error:?}"))?;
    Ok(len as u64)
}

fn zlib_rs(input: &[u8], level: u32) -> anyhow::Result<u64> {
    let mut compress = Compress::new(Compression::new(level), false);
    let mut out = Vec::with_capacity(input.len() + input.len() / 1000 + 64);
    loop {
        let consumed = compress.total_in() as usize;
        compress.compress_vec(&input[consumed..], &mut out, FlushCompress::Finish).context("deflate failed")?;
        if compress.total_in() as usize == input.len() && out.len() < out.capacity() {
            return Ok(out.len() as u64);
        }
        out.reserve(64 * 1024);
    }
}

/// Regular files under `dir` and their sizes, each inode once, sorted by path.
pub fn regular_files(dir: &Path) -> anyhow::Result<Vec<(PathBuf, u64)>> {
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs_err::read_dir(&dir)? {
            let entry = entry?;
            let metadata = fs_err::symlink_metadata(entry.path())?;
            if metadata.is_dir() {
                pending.push(entry.path());
            } else if metadata.is_file() && seen.insert((metadata.dev(), metadata.ino())) {
                files.push((entry.path(), metadata.len()));
            }
        }
    }
    files.sort();
    Ok(files)
}
