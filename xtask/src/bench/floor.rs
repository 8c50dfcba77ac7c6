//! The floor: deflating the payload's bytes with the packager's codec (flate2 on zlib-rs)
//! and level, on all cores, with no packaging logic. Each regular file is read once (hard
//! links counted once) in 1 MiB chunks, and every chunk is compressed independently on
//! rayon's pool. Our packaging time divided by this is the overhead we own.
//!
//! Owns: that measurement. Does not own: the packager's real pipeline (`write::deflate`).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use flate2::{Compress, Compression, FlushCompress};
use rayon::prelude::*;

/// What compressing the payload took.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Floor {
    pub wall_seconds: f64,
    /// User + system CPU of this process while compressing.
    pub cpu_seconds: f64,
    pub n_files: u64,
    pub input_bytes: u64,
    pub compressed_bytes: u64,
    pub threads: usize,
}

const CHUNK: u64 = 1 << 20;

thread_local! {
    static COMPRESSOR: RefCell<Option<Compress>> = const { RefCell::new(None) };
}

/// Compresses every regular file under `dir` at deflate `level`.
pub fn measure_floor(dir: &Path, level: u32) -> anyhow::Result<Floor> {
    let files = regular_files(dir)?;
    let chunks: Vec<(usize, u64, u64)> = files
        .iter()
        .enumerate()
        .flat_map(|(index, (_, len))| {
            let n_chunks = len.div_ceil(CHUNK).max(1);
            (0..n_chunks).map(move |chunk| (index, chunk * CHUNK, (*len - chunk * CHUNK).min(CHUNK)))
        })
        .collect();
    let started = Instant::now();
    let cpu_before = process_cpu_seconds();
    let compressed_bytes = chunks
        .par_iter()
        // One task per chunk: rayon splits a slice by count, and a run of a large file's
        // chunks would otherwise land on one thread while the other finishes small files.
        .with_max_len(1)
        .map(|&(index, offset, len)| compress_chunk(&files[index].0, offset, len, level))
        .try_reduce(|| 0, |a, b| Ok(a + b))?;
    Ok(Floor {
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

pub(super) fn compress_chunk(path: &Path, offset: u64, len: u64, level: u32) -> anyhow::Result<u64> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut input = vec![0u8; len as usize];
    file.read_exact_at(&mut input, offset).with_context(|| format!("reading {}", path.display()))?;
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let compress = slot.get_or_insert_with(|| Compress::new(Compression::new(level), false));
        compress.reset();
        let mut out = Vec::with_capacity(input.len() + input.len() / 1000 + 64);
        loop {
            let consumed = compress.total_in() as usize;
            compress.compress_vec(&input[consumed..], &mut out, FlushCompress::Finish).context("deflate failed")?;
            if compress.total_in() as usize == input.len() && out.len() < out.capacity() {
                return Ok(out.len() as u64);
            }
            out.reserve(64 * 1024);
        }
    })
}

/// Regular files under `dir` and their sizes, each inode once, sorted by path.
fn regular_files(dir: &Path) -> anyhow::Result<Vec<(PathBuf, u64)>> {
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
