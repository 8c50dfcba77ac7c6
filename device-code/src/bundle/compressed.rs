//! Compressed offload bundles (`CCOB`, KPACK.md §3): a header (magic, u16 version, u16
//! method, then for version 2 a u32 total size and u32 uncompressed size, for version 3
//! u64 ones, then a u64 hash) and one zstd (method 1) or zlib (method 0) stream whose
//! payload is one or more plain bundles.
//!
//! Owns: the header and the decompression into the spool. The header's sizes are claims:
//! they are checked against the section and against what decompression gives, and never
//! used to size an allocation. The hash (a truncated MD5 of the payload) is not checked,
//! as neither LLVM's bundler nor rocm-kpack checks it: the exact size and a stream that
//! decodes are what a reader relies on. Must not know: the plain bundles inside.

use std::io::{self, BufRead, BufReader, Read, Write};

use super::spool::{Region, RegionReader, Spool};

pub(super) const MAGIC: &[u8; 4] = b"CCOB";
/// The most one compressed bundle may inflate to: far more than any real one (ROCm's
/// largest libraries carry a few GiB of device code in all), and a bound on the disk a
/// hostile claim can make the spool take.
pub(super) const MAX_PAYLOAD: u64 = 16 << 30;
/// The most all compressed bundles of one file may inflate to.
pub(super) const MAX_SPOOL: u64 = 64 << 30;
/// Bytes decompressed per step.
const CHUNK: usize = 1 << 17;

/// The compression a bundle names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Zlib,
    Zstd,
}

/// A compressed bundle's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CcobHeader {
    pub version: u16,
    pub method: Method,
    pub header_len: u64,
    /// The whole bundle, header included.
    pub total: u64,
    pub uncompressed: u64,
}

/// Reads the header at `start` and checks its total size against the region.
pub(super) fn read_header(region: &dyn Region, start: u64) -> Result<CcobHeader, String> {
    let available = region.len() - start;
    let mut fixed = [0u8; 8];
    if available < 8 {
        return Err(format!("truncated: {available} bytes left, a compressed bundle header takes at least 24"));
    }
    read(region, &mut fixed, start)?;
    let version = u16::from_le_bytes([fixed[4], fixed[5]]);
    let method = match u16::from_le_bytes([fixed[6], fixed[7]]) {
        0 => Method::Zlib,
        1 => Method::Zstd,
        other => return Err(format!("compression method {other} is neither zlib (0) nor zstd (1)")),
    };
    let header_len: u64 = match version {
        2 => 24,
        3 => 32,
        other => {
            return Err(format!(
                "compressed bundle format version {other}; versions 2 and 3 are read (version 1 has no total size, so where it ends is unknown)"
            ))
        }
    };
    if available < header_len {
        return Err(format!("truncated: {available} bytes left, a version {version} header takes {header_len}"));
    }
    let mut sizes = [0u8; 16];
    let sizes = &mut sizes[..(header_len - 16) as usize];
    read(region, sizes, start + 8)?;
    let (total, uncompressed) = if version == 2 {
        (u64::from(u32_le(&sizes[0..4])), u64::from(u32_le(&sizes[4..8])))
    } else {
        (u64_le(&sizes[0..8]), u64_le(&sizes[8..16]))
    };
    if total < header_len || total > available {
        return Err(format!(
            "the header claims a total of {total} bytes, but {available} bytes are left in the section and the header alone takes {header_len}"
        ));
    }
    Ok(CcobHeader { version, method, header_len, total, uncompressed })
}

/// Decompresses the bundle at `start` to the end of `spool`, returning where its payload
/// starts there. The payload must be exactly the claimed size: a stream that inflates past
/// it is stopped there, never followed.
pub(super) fn decompress(
    region: &dyn Region,
    start: u64,
    header: &CcobHeader,
    spool: &mut Spool,
) -> Result<u64, DecompressError> {
    let claim = header.uncompressed;
    if claim > MAX_PAYLOAD || spool.len().saturating_add(claim) > MAX_SPOOL {
        return Err(DecompressError::Format(format!(
            "the header claims {claim} bytes uncompressed, more than the {MAX_PAYLOAD} bytes a compressed bundle may hold here ({MAX_SPOOL} for all of a file's)"
        )));
    }
    let input = RegionReader { region, at: start + header.header_len, end: start + header.total };
    let mut input = BufReader::with_capacity(CHUNK, input);
    let base = spool.len();
    let written = match header.method {
        Method::Zstd => {
            // zstd's default window limit (128 MiB, LLVM's long-distance window) bounds
            // what a hostile frame header can make the decoder allocate.
            let decoder = zstd::stream::read::Decoder::with_buffer(&mut input)
                .map_err(|error| DecompressError::Format(format!("zstd: {error}")))?
                .single_frame();
            copy_bounded(decoder, spool, claim)?
        }
        Method::Zlib => copy_bounded(flate2::bufread::ZlibDecoder::new(&mut input), spool, claim)?,
    };
    if written != claim {
        return Err(DecompressError::Format(format!(
            "the payload inflates to {written} bytes, but the header claims {claim}"
        )));
    }
    let left = input.fill_buf().map_err(|error| DecompressError::Format(format!("reading the stream: {error}")))?.len();
    if left > 0 {
        return Err(DecompressError::Format(format!(
            "bytes follow the compressed stream inside the bundle's {} bytes",
            header.total
        )));
    }
    Ok(base)
}

/// Copies `decoder` into `spool`, failing as soon as it gives more than `claim` bytes.
fn copy_bounded(mut decoder: impl Read, spool: &mut Spool, claim: u64) -> Result<u64, DecompressError> {
    let mut buf = vec![0u8; CHUNK];
    let mut written = 0u64;
    loop {
        let len = match decoder.read(&mut buf) {
            Ok(0) => return Ok(written),
            Ok(len) => len,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                return Err(DecompressError::Format(format!("the compressed stream does not decode: {error}")))
            }
        };
        if written + len as u64 > claim {
            return Err(DecompressError::Format(format!(
                "the payload inflates past the {claim} bytes the header claims"
            )));
        }
        spool.write_all(&buf[..len]).map_err(DecompressError::Spool)?;
        written += len as u64;
    }
}

/// Why a compressed bundle did not decompress: its bytes, or the spool's disk.
#[derive(Debug)]
pub(super) enum DecompressError {
    Format(String),
    Spool(io::Error),
}

fn read(region: &dyn Region, buf: &mut [u8], at: u64) -> Result<(), String> {
    region.read_exact_at(buf, at).map_err(|error| format!("reading at {at}: {error}"))
}

fn u32_le(bytes: &[u8]) -> u32 {
    let mut raw = [0u8; 4];
    raw.copy_from_slice(bytes);
    u32::from_le_bytes(raw)
}

fn u64_le(bytes: &[u8]) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(bytes);
    u64::from_le_bytes(raw)
}

/// A compressed bundle of `payload` as LLVM's bundler writes it (the hash is not checked
/// by readers, so any value does), for tests of this reader.
#[cfg(test)]
pub(crate) fn build(version: u16, method: Method, payload: &[u8], claim: Option<u64>) -> Vec<u8> {
    let compressed = match method {
        Method::Zstd => zstd::bulk::compress(payload, 3).expect("zstd compresses"),
        Method::Zlib => {
            let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(payload).expect("zlib compresses");
            encoder.finish().expect("zlib finishes")
        }
    };
    let header_len = if version == 3 { 32 } else { 24 };
    let total = (header_len + compressed.len()) as u64;
    let uncompressed = claim.unwrap_or(payload.len() as u64);
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&version.to_le_bytes());
    bytes.extend_from_slice(&(if method == Method::Zstd { 1u16 } else { 0 }).to_le_bytes());
    if version == 3 {
        bytes.extend_from_slice(&total.to_le_bytes());
        bytes.extend_from_slice(&uncompressed.to_le_bytes());
    } else {
        bytes.extend_from_slice(&(total as u32).to_le_bytes());
        bytes.extend_from_slice(&(uncompressed as u32).to_le_bytes());
    }
    bytes.extend_from_slice(&0x0123_4567_89ab_cdefu64.to_le_bytes());
    bytes.extend_from_slice(&compressed);
    bytes
}
