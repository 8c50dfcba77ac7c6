//! The output floor: compressing exactly the bytes the outputs carry, with the packager's
//! codecs and settings, on all cores, with no packaging logic. Read from the run's plan
//! (`package --plan --json`): every wheel member's source is deflated (libdeflate, chunked,
//! as the libdeflate floor does), and every devel tree is either deflated too (an uncompressed
//! `_devel.tar` is a deflated wheel member) or xz-compressed as one stream with the
//! packager's own encoder settings. Unlike the input floor, a file that goes into two
//! outputs (a generic library in each family's libraries wheel, a header in each family's
//! devel tarball) is counted twice, as the packager must compress it twice; so our time
//! over this floor is the overhead we own.
//!
//! Owns: that measurement. Does not own: the plan's format (`packager::plan`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::floor::{measure_files, process_cpu_seconds, Codec, Floor};
use anyhow::Context;

/// The payload of every output, as the plan names it.
#[derive(Debug, Default)]
pub struct OutputPayload {
    /// Files deflated into wheels (with repeats when two outputs carry one file).
    pub deflated: Vec<(PathBuf, u64)>,
    /// One list per devel tarball compressed with xz.
    pub xz_streams: Vec<Vec<(PathBuf, u64)>>,
}

/// Reads the plan JSON written by `package --plan --json`; relative sources are resolved
/// against `base`, the directory the plan was made in.
pub fn read_output_payload(plan_json: &Path, base: &Path, devel_xz: bool) -> anyhow::Result<OutputPayload> {
    let text = fs_err::read_to_string(plan_json)?;
    let plan: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing the plan {}", plan_json.display()))?;
    let packages = plan["packages"].as_array().context("the plan has no packages")?;
    let mut payload = OutputPayload::default();
    for package in packages {
        if let Some(files) = package["files"].as_object() {
            payload.deflated.extend(files.values().filter_map(|file| source_of(file, base)));
        }
        if let Some(tree) = package["devel_tree"].as_object() {
            let sources = tree.values().filter_map(|entry| source_of(&entry["file"], base));
            if devel_xz {
                payload.xz_streams.push(sources.collect());
            } else {
                payload.deflated.extend(sources);
            }
        }
    }
    Ok(payload)
}

/// The source file and length of a planned file that streams payload (not launchers).
fn source_of(file: &serde_json::Value, base: &Path) -> Option<(PathBuf, u64)> {
    let source = file["source"].as_str()?;
    let len = file["len"].as_u64()?;
    Some((base.join(source), len))
}

/// Compresses `payload` as the outputs do: libdeflate at `level` in chunks on all cores,
/// then each xz stream with the packager's encoder (its threads, block size and memory
/// budget) at `xz_preset`.
pub fn measure_output_floor(payload: &OutputPayload, level: u32, xz_preset: u32) -> anyhow::Result<Floor> {
    let started = Instant::now();
    let cpu_before = process_cpu_seconds();
    let deflated = measure_files(&payload.deflated, Codec::Libdeflate { level })?;
    let mut compressed_bytes = deflated.compressed_bytes;
    for stream in &payload.xz_streams {
        compressed_bytes += xz_stream_len(stream, xz_preset)?;
    }
    let input_bytes = payload.deflated.iter().chain(payload.xz_streams.iter().flatten()).map(|(_, len)| len).sum();
    Ok(Floor {
        codec: format!("{}; xz preset {xz_preset} for an xz devel tarball", deflated.codec),
        wall_seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: process_cpu_seconds() - cpu_before,
        n_files: (payload.deflated.len() + payload.xz_streams.iter().map(Vec::len).sum::<usize>()) as u64,
        input_bytes,
        compressed_bytes,
        threads: rayon::current_num_threads(),
    })
}

fn xz_stream_len(files: &[(PathBuf, u64)], preset: u32) -> anyhow::Result<u64> {
    let stream = archive_write::xz_stream(preset, Path::new("floor.tar.xz"))?;
    let mut encoder = liblzma::write::XzEncoder::new_stream(CountingSink(0), stream);
    for (path, _) in files {
        let mut file = fs_err::File::open(path)?;
        io::copy(&mut file, &mut encoder).with_context(|| format!("compressing {}", path.display()))?;
    }
    Ok(encoder.finish().context("finishing the xz stream")?.0)
}

/// Counts the bytes written to it and drops them.
struct CountingSink(u64);

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
