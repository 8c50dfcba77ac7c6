//! Coding one chunk of a member (SPEC §5): raw deflate by libdeflate, which gives smaller
//! output than zlib at its level in well under zlib's time, or the bytes as they are.
//!
//! A member's coding is decided by its first chunk: a member whose first chunk deflate
//! cannot shrink by at least 1 % ([`MIN_GAIN_DIVISOR`]) is stored whole (ZIP method 0),
//! which costs no deflate time and is faster to install. Chunks are coded independently
//! (libdeflate has no preset dictionary), each as four complete streams of a quarter
//! chunk; every stream but a member's last is then made continuable (`deflate_join`), so
//! the member is one standard deflate stream that pip, uv, zipfile and unzip read. Four
//! streams because the walk that makes them continuable runs four at once in about half
//! the time of walking them one by one (a walk is a chain of dependent lookups; four
//! fifths of the time two by two took, on real libraries); streams of 512 KiB cost
//! 0.4 % of size against streams of 1 MiB.
//!
//! Owns: the encoder, its settings and the store rule. Does not own: the order chunks are
//! written in (`deflate`), reading members (`wheel`).

use std::cell::RefCell;
use std::io;

use super::deflate_join::{extend_continuable, find_ends};
use super::zip::Method;

/// Input bytes per chunk. Fixed, so output is the same on every machine.
pub const CHUNK_SIZE: usize = 4 * STREAM_SIZE;
/// Input bytes of each of a chunk's streams (its last may be shorter).
const STREAM_SIZE: usize = 512 << 10;
/// A member is deflated only if its first chunk shrinks by at least 1/this of its size.
pub const MIN_GAIN_DIVISOR: usize = 100;

/// How one member is coded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Stored,
    /// Deflate at `level` (0-9, as zlib's), or stored when the first chunk says so.
    Deflate {
        level: u32,
    },
}

impl Coding {
    pub fn method(self) -> Method {
        match self {
            Coding::Stored => Method::Stored,
            Coding::Deflate { .. } => Method::Deflated,
        }
    }
}

/// One chunk after coding.
pub struct CodedChunk {
    pub data: Vec<u8>,
    pub crc: crc32fast::Hasher,
    /// CRC-32 of `data`, recorded so a later run can check bytes it copies (`zip`).
    pub data_crc: crc32fast::Hasher,
    pub input_len: u64,
    /// How the chunk was coded: for a member's first chunk, how the whole member is.
    pub coding: Coding,
}

fn crc_of(bytes: &[u8]) -> crc32fast::Hasher {
    let mut crc = crc32fast::Hasher::new();
    crc.update(bytes);
    crc
}

/// Codes a member's first chunk under `policy` and so decides the member's coding, which
/// the chunk carries. `last`: the chunk ends its member.
pub fn code_first_chunk(input: Vec<u8>, policy: Coding, last: bool) -> io::Result<CodedChunk> {
    let Coding::Deflate { level } = policy else { return Ok(stored(input)) };
    let data = deflate(&input, level, last)?;
    if !worth_deflating(input.len(), data.len()) {
        return Ok(stored(input));
    }
    Ok(deflated(input, data, level))
}

/// Codes a later chunk of a member whose first chunk decided `coding`.
pub fn code_chunk(input: Vec<u8>, coding: Coding, last: bool) -> io::Result<CodedChunk> {
    match coding {
        Coding::Stored => Ok(stored(input)),
        Coding::Deflate { level } => {
            let data = deflate(&input, level, last)?;
            Ok(deflated(input, data, level))
        }
    }
}

/// Whether deflating `input_len` bytes to `coded_len` saves at least 1 %.
fn worth_deflating(input_len: usize, coded_len: usize) -> bool {
    coded_len < input_len && input_len - coded_len >= input_len.div_ceil(MIN_GAIN_DIVISOR)
}

fn stored(input: Vec<u8>) -> CodedChunk {
    let crc = crc_of(&input);
    CodedChunk { data_crc: crc.clone(), crc, input_len: input.len() as u64, data: input, coding: Coding::Stored }
}

fn deflated(input: Vec<u8>, data: Vec<u8>, level: u32) -> CodedChunk {
    CodedChunk {
        crc: crc_of(&input),
        data_crc: crc_of(&data),
        input_len: input.len() as u64,
        data,
        coding: Coding::Deflate { level },
    }
}

thread_local! {
    /// Where each of a chunk's streams is coded before it is copied out at its size: kept
    /// per thread, so no chunk pays for zeroing a buffer of the compressor's bound.
    static STREAMS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// `input` as deflate: raw streams of [`STREAM_SIZE`] joined, each continuable but a
/// member's last. A new compressor per chunk: its output then cannot depend on what the
/// thread coded before (the pool schedules chunks differently on every run), and
/// allocating one costs microseconds.
fn deflate(input: &[u8], level: u32, last: bool) -> io::Result<Vec<u8>> {
    let level = libdeflater::CompressionLvl::new(level.min(9) as i32)
        .map_err(|_| io::Error::other(format!("deflate level {level} is not one libdeflate has")))?;
    let mut compressor = libdeflater::Compressor::new(level);
    let pieces: Vec<&[u8]> = match input.is_empty() {
        true => vec![input],
        false => input.chunks(STREAM_SIZE).collect(),
    };
    STREAMS.with_borrow_mut(|buffers| {
        if buffers.len() < pieces.len() {
            buffers.resize_with(pieces.len(), Vec::new);
        }
        let streams = pieces
            .iter()
            .zip(buffers.iter_mut())
            .map(|(piece, buffer)| compress(&mut compressor, piece, buffer))
            .collect::<io::Result<Vec<&[u8]>>>()?;
        let (continued, kept) = match last {
            true => streams.split_at(streams.len() - 1),
            false => (&streams[..], &[][..]),
        };
        let ends = find_ends(continued)?;
        let mut out = Vec::with_capacity(streams.iter().map(|stream| stream.len() + 6).sum());
        for (stream, end) in continued.iter().zip(ends) {
            extend_continuable(&mut out, stream, end);
        }
        for stream in kept {
            out.extend_from_slice(stream);
        }
        Ok(out)
    })
}

/// `input` as one complete raw deflate stream, coded into `buffer`.
fn compress<'b>(
    compressor: &mut libdeflater::Compressor,
    input: &[u8],
    buffer: &'b mut Vec<u8>,
) -> io::Result<&'b [u8]> {
    let bound = compressor.deflate_compress_bound(input.len());
    if buffer.len() < bound {
        buffer.resize(bound, 0);
    }
    let len = compressor
        .deflate_compress(input, &mut buffer[..bound])
        .map_err(|error| io::Error::other(format!("deflate failed: {error:?}")))?;
    Ok(&buffer[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_rule_needs_one_percent() {
        assert!(worth_deflating(1000, 990));
        assert!(!worth_deflating(1000, 991));
        assert!(!worth_deflating(1001, 991), "1 % of 1001 bytes rounds up");
        assert!(!worth_deflating(0, 2), "nothing cannot shrink");
        assert!(!worth_deflating(10, 12));
    }

    /// A chunk of any size, ending its member or not, inflates to its input; one that does
    /// not end its member is continued by the next chunk's stream.
    #[test]
    fn chunks_of_every_size_join_into_one_stream() {
        use std::io::Read;
        let text: Vec<u8> =
            (0..CHUNK_SIZE as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 29) as u8 | b'a').collect();
        for len in [0, 1, 5000, STREAM_SIZE - 1, STREAM_SIZE, STREAM_SIZE + 1, 3 * STREAM_SIZE + 7, CHUNK_SIZE] {
            for last in [true, false] {
                let mut stream = deflate(&text[..len], 6, last).expect("deflate");
                if !last {
                    stream.extend(deflate(b"the next chunk", 6, true).expect("deflate"));
                }
                let mut inflated = Vec::new();
                flate2::read::DeflateDecoder::new(stream.as_slice()).read_to_end(&mut inflated).expect("inflate");
                let expected = [&text[..len], if last { &b""[..] } else { &b"the next chunk"[..] }].concat();
                assert!(inflated == expected, "{len} bytes, last {last}");
            }
        }
    }

    /// Noise is stored (its chunks as they are); text is deflated.
    #[test]
    fn a_first_chunk_decides_the_coding() {
        let mut state = 0x5EEDu64;
        let noise: Vec<u8> = (0..CHUNK_SIZE)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 56) as u8
            })
            .collect();
        let policy = Coding::Deflate { level: 6 };
        let chunk = code_first_chunk(noise.clone(), policy, false).expect("code");
        assert_eq!(chunk.coding, Coding::Stored);
        assert!(chunk.data == noise);
        let text = b"hipModuleLaunchKernel rocblas_gemm ".repeat(1000);
        let chunk = code_first_chunk(text.clone(), policy, true).expect("code");
        assert_eq!(chunk.coding, policy);
        assert!(chunk.data.len() < text.len() / 10);
        assert_eq!(code_first_chunk(Vec::new(), policy, true).expect("code").coding, Coding::Stored);
        assert_eq!(code_first_chunk(text, Coding::Stored, true).expect("code").coding, Coding::Stored);
    }
}
