//! Chunked parallel deflate (SPEC §5): a member is cut into fixed 1 MiB chunks, each
//! compressed on rayon's pool as raw deflate primed with the previous chunk's last 32 KiB
//! (so the ratio is that of one stream) and ended with a sync flush (so the pieces join
//! into one standard deflate stream, as pigz does). CRC-32s are combined. Small members
//! are single chunks and compress in parallel with each other.
//!
//! Owns: the compression pipeline and its bounded in-flight window (memory stays at a few
//! chunks per thread whatever the file sizes). Does not own: reading members (`wheel`,
//! `source`) or the container (`zip`).
//!
//! Output does not depend on the number of threads: chunk boundaries are fixed, and the
//! writer takes results in order. A member whose coded bytes already exist (copied from
//! the previous archive, SPEC §8) takes its place in the same order.

use std::collections::VecDeque;
use std::io::{self, Seek, Write};
use std::sync::mpsc;
use std::time::Duration;

use flate2::{Compress, Compression, FlushCompress};

use super::zip::{EntryHeader, EntrySums, Method, OpenEntry, ZipWriter};

/// Input bytes per chunk. Fixed, so output is the same on every machine.
pub const CHUNK_SIZE: usize = 1 << 20;
/// Deflate's window: what a chunk is primed with from its predecessor.
pub const DICTIONARY_SIZE: usize = 32 * 1024;
/// Ends a deflate stream made of sync-flushed pieces: an empty final block with fixed
/// Huffman codes (BFINAL=1, BTYPE=01, end-of-block).
const FINAL_EMPTY_BLOCK: [u8; 2] = [0x03, 0x00];

/// How one member's chunks are coded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Stored,
    Deflate { level: u32 },
}

impl Coding {
    pub fn method(self) -> Method {
        match self {
            Coding::Stored => Method::Stored,
            Coding::Deflate { .. } => Method::Deflated,
        }
    }
}

/// One chunk after compression.
pub struct CodedChunk {
    pub data: Vec<u8>,
    pub crc: crc32fast::Hasher,
    /// CRC-32 of `data`, recorded so a later run can check bytes it copies (`zip`).
    pub data_crc: crc32fast::Hasher,
    pub input_len: u64,
}

fn crc_of(bytes: &[u8]) -> crc32fast::Hasher {
    let mut crc = crc32fast::Hasher::new();
    crc.update(bytes);
    crc
}

/// Codes one chunk. `dictionary` is the end of the previous chunk of the same member.
pub fn code_chunk(input: Vec<u8>, dictionary: &[u8], coding: Coding) -> io::Result<CodedChunk> {
    let crc = crc_of(&input);
    let input_len = input.len() as u64;
    let level = match coding {
        Coding::Stored => return Ok(CodedChunk { data_crc: crc.clone(), data: input, crc, input_len }),
        Coding::Deflate { level } => level,
    };
    let data = deflate_chunk(&input, dictionary, level)?;
    Ok(CodedChunk { data_crc: crc_of(&data), data, crc, input_len })
}

/// Raw deflate of `input` primed with `dictionary`, ended with a sync flush. A new
/// compressor per chunk: one reused after `reset` codes a chunk differently depending on
/// the chunk before it (zlib-rs), which is a different chunk on each run. It costs ~3 µs a
/// chunk (measured on 20,000 small files).
fn deflate_chunk(input: &[u8], dictionary: &[u8], level: u32) -> io::Result<Vec<u8>> {
    let mut compress = Compress::new(Compression::new(level), false);
    if !dictionary.is_empty() {
        compress.set_dictionary(dictionary).map_err(io::Error::other)?;
    }
    let mut out = Vec::with_capacity(input.len() + input.len() / 1000 + 64);
    let mut consumed = 0usize;
    loop {
        let before = compress.total_in();
        compress.compress_vec(&input[consumed..], &mut out, FlushCompress::Sync).map_err(io::Error::other)?;
        consumed += (compress.total_in() - before) as usize;
        // The flush is complete once all input is taken and zlib left output room unused.
        if consumed == input.len() && out.len() < out.capacity() {
            return Ok(out);
        }
        out.reserve(64 * 1024);
    }
}

/// Codes a small member whole, on the calling thread (RECORD, sdist-sized files).
pub fn code_whole(bytes: Vec<u8>, coding: Coding) -> io::Result<(Vec<Vec<u8>>, EntrySums)> {
    let chunk = code_chunk(bytes, &[], coding)?;
    let mut data_crc = chunk.data_crc;
    let mut sums = EntrySums {
        crc: chunk.crc.finalize(),
        uncompressed: chunk.input_len,
        compressed: chunk.data.len() as u64,
        compressed_crc: 0,
    };
    let mut parts = vec![chunk.data];
    if coding != Coding::Stored {
        parts.push(FINAL_EMPTY_BLOCK.to_vec());
        data_crc.update(&FINAL_EMPTY_BLOCK);
        sums.compressed += FINAL_EMPTY_BLOCK.len() as u64;
    }
    sums.compressed_crc = data_crc.finalize();
    Ok((parts, sums))
}

/// An upper bound of a member's compressed and uncompressed size from its input size.
pub fn size_bound(input_len: u64) -> u64 {
    input_len + input_len / 1024 + 4096
}

/// What the reader knew about a member once it was read.
#[derive(Clone, Debug)]
pub struct MemberDigest {
    pub sha256: [u8; 32],
    pub len: u64,
}

/// A member written to the archive, in archive order.
pub struct FinishedMember {
    pub name: String,
    pub digest: MemberDigest,
}

/// A member's coded bytes that already exist: copied into the archive instead of coded.
pub trait CodedSource: Send {
    /// Passes exactly the coded bytes, in order, to `put`; fails if they are not the
    /// bytes that were checked when this source was made.
    fn copy_to(self: Box<Self>, put: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()>;
}

struct InFlight {
    header: EntryHeader,
    coding: Coding,
    size_bound: u64,
    chunks: VecDeque<mpsc::Receiver<io::Result<CodedChunk>>>,
    /// Set for a member copied rather than coded; its `sums` are then already final.
    copied: Option<Box<dyn CodedSource>>,
    digest: Option<MemberDigest>,
    open: Option<OpenEntry>,
    sums: EntrySums,
    crc: crc32fast::Hasher,
    data_crc: crc32fast::Hasher,
}

/// Members being read on the calling thread, coded on rayon's pool, and written in order.
pub struct Pipeline {
    window: usize,
    queue: VecDeque<InFlight>,
    n_chunks: usize,
    finished: Vec<FinishedMember>,
}

impl Pipeline {
    pub fn new() -> Pipeline {
        // Two chunks per thread keep every core busy while the writer waits on the oldest;
        // the cap keeps memory bounded on many-core machines (about 2 MiB per chunk).
        let window = (2 * rayon::current_num_threads()).clamp(4, 32);
        Pipeline { window, queue: VecDeque::new(), n_chunks: 0, finished: Vec::new() }
    }

    /// Starts a member; its chunks follow with [`Pipeline::push_chunk`].
    pub fn begin(&mut self, header: EntryHeader, coding: Coding, size_bound: u64) {
        self.queue.push_back(InFlight {
            header,
            coding,
            size_bound,
            chunks: VecDeque::new(),
            copied: None,
            digest: None,
            open: None,
            sums: EntrySums::default(),
            crc: crc32fast::Hasher::new(),
            data_crc: crc32fast::Hasher::new(),
        });
    }

    /// Queues a whole member whose coded bytes come from `source`, with their final sums.
    /// It counts as one chunk of the window, so copies are written as they reach the front.
    pub fn push_copied<W: Write + Seek>(
        &mut self,
        header: EntryHeader,
        size_bound: u64,
        sums: EntrySums,
        source: Box<dyn CodedSource>,
        digest: MemberDigest,
        zip: &mut ZipWriter<W>,
    ) -> io::Result<()> {
        self.queue.push_back(InFlight {
            header,
            coding: Coding::Stored,
            size_bound,
            chunks: VecDeque::new(),
            copied: Some(source),
            digest: Some(digest),
            open: None,
            sums,
            crc: crc32fast::Hasher::new(),
            data_crc: crc32fast::Hasher::new(),
        });
        self.n_chunks += 1;
        while self.n_chunks > self.window {
            self.write_front(zip)?;
        }
        Ok(())
    }

    /// Queues one chunk of the current member; writes older results when the window is full.
    pub fn push_chunk<W: Write + Seek>(
        &mut self,
        input: Vec<u8>,
        dictionary: Vec<u8>,
        zip: &mut ZipWriter<W>,
    ) -> io::Result<()> {
        let member = self.queue.back_mut().ok_or_else(|| io::Error::other("chunk without a member"))?;
        let coding = member.coding;
        let (sender, receiver) = mpsc::sync_channel(1);
        rayon::spawn(move || {
            // The receiver is gone only if writing already failed; nothing to report then.
            let _ = sender.send(code_chunk(input, &dictionary, coding));
        });
        member.chunks.push_back(receiver);
        self.n_chunks += 1;
        while self.n_chunks > self.window {
            self.write_front(zip)?;
        }
        Ok(())
    }

    /// Marks the current member as completely read.
    pub fn end(&mut self, digest: MemberDigest) -> io::Result<()> {
        let member = self.queue.back_mut().ok_or_else(|| io::Error::other("end without a member"))?;
        member.digest = Some(digest);
        Ok(())
    }

    /// Writes everything still queued; returns every member in archive order.
    pub fn finish<W: Write + Seek>(mut self, zip: &mut ZipWriter<W>) -> io::Result<Vec<FinishedMember>> {
        while !self.queue.is_empty() {
            self.write_front(zip)?;
        }
        Ok(self.finished)
    }

    /// Makes progress on the oldest member: writes it whole if it was read completely,
    /// else writes its oldest chunk behind a header to be patched later.
    fn write_front<W: Write + Seek>(&mut self, zip: &mut ZipWriter<W>) -> io::Result<()> {
        let Some(front) = self.queue.front_mut() else { return Ok(()) };
        if front.copied.is_some() {
            let mut member = self.queue.pop_front().expect("front exists");
            let source = member.copied.take().expect("checked above");
            self.n_chunks -= 1;
            let known = zip.begin_known_entry(member.header.clone(), member.sums, member.size_bound)?;
            source.copy_to(&mut |bytes| zip.write_data(bytes))?;
            zip.end_known_entry(known);
            return self.retire(member);
        }
        if front.open.is_none() && front.digest.is_some() {
            let mut member = self.queue.pop_front().expect("front exists");
            let mut parts = Vec::with_capacity(member.chunks.len() + 1);
            while let Some(receiver) = member.chunks.pop_front() {
                let chunk = wait_for(&receiver)?;
                self.n_chunks -= 1;
                member.crc.combine(&chunk.crc);
                member.data_crc.combine(&chunk.data_crc);
                member.sums.uncompressed += chunk.input_len;
                member.sums.compressed += chunk.data.len() as u64;
                parts.push(chunk.data);
            }
            if member.coding != Coding::Stored {
                parts.push(FINAL_EMPTY_BLOCK.to_vec());
                member.data_crc.update(&FINAL_EMPTY_BLOCK);
                member.sums.compressed += FINAL_EMPTY_BLOCK.len() as u64;
            }
            member.sums.crc = member.crc.clone().finalize();
            member.sums.compressed_crc = member.data_crc.clone().finalize();
            zip.write_entry(member.header.clone(), member.sums, member.size_bound, &parts)?;
            return self.retire(member);
        }
        if front.open.is_none() {
            front.open = Some(zip.begin_entry(front.header.clone(), front.size_bound)?);
        }
        if let Some(receiver) = front.chunks.pop_front() {
            let chunk = wait_for(&receiver)?;
            self.n_chunks -= 1;
            front.crc.combine(&chunk.crc);
            front.data_crc.combine(&chunk.data_crc);
            front.sums.uncompressed += chunk.input_len;
            front.sums.compressed += chunk.data.len() as u64;
            zip.write_data(&chunk.data)?;
        } else if front.digest.is_none() {
            return Err(io::Error::other("the writer overtook the reader"));
        }
        if front.chunks.is_empty() && front.digest.is_some() {
            let mut member = self.queue.pop_front().expect("front exists");
            if member.coding != Coding::Stored {
                zip.write_data(&FINAL_EMPTY_BLOCK)?;
                member.data_crc.update(&FINAL_EMPTY_BLOCK);
                member.sums.compressed += FINAL_EMPTY_BLOCK.len() as u64;
            }
            member.sums.crc = member.crc.clone().finalize();
            member.sums.compressed_crc = member.data_crc.clone().finalize();
            let open = member.open.take().expect("opened above");
            zip.end_entry(open, member.sums)?;
            return self.retire(member);
        }
        Ok(())
    }

    fn retire(&mut self, member: InFlight) -> io::Result<()> {
        let digest = member.digest.expect("only complete members retire");
        if digest.len != member.sums.uncompressed {
            return Err(io::Error::other(format!("{}: read and coded sizes differ", member.header.name)));
        }
        self.finished.push(FinishedMember { name: member.header.name, digest });
        Ok(())
    }
}

/// Waits for a chunk. On a rayon worker (a caller writing several wheels from a parallel
/// iterator), blocking would starve the pool of the thread that must run the chunk, so
/// the wait runs other pool jobs instead.
fn wait_for(receiver: &mpsc::Receiver<io::Result<CodedChunk>>) -> io::Result<CodedChunk> {
    loop {
        match rayon::yield_now() {
            None => return receiver.recv().map_err(|_| io::Error::other("a compression worker panicked"))?,
            Some(rayon::Yield::Executed) => match receiver.try_recv() {
                Ok(result) => return result,
                Err(mpsc::TryRecvError::Empty) => {}
                Err(mpsc::TryRecvError::Disconnected) => return Err(io::Error::other("a compression worker panicked")),
            },
            Some(rayon::Yield::Idle) => match receiver.recv_timeout(Duration::from_millis(1)) {
                Ok(result) => return result,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other("a compression worker panicked"))
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Chunks primed and flushed this way join into one stream any inflater reads.
    #[test]
    fn chunks_join_into_one_deflate_stream() {
        let input: Vec<u8> = (0..3 * CHUNK_SIZE + 1234).map(|i| (i % 251) as u8 ^ (i / 7919) as u8).collect();
        let mut joined = Vec::new();
        let mut crc = crc32fast::Hasher::new();
        let mut previous: &[u8] = &[];
        for piece in input.chunks(CHUNK_SIZE) {
            let dictionary = &previous[previous.len().saturating_sub(DICTIONARY_SIZE)..];
            let chunk = code_chunk(piece.to_vec(), dictionary, Coding::Deflate { level: 6 }).expect("code");
            crc.combine(&chunk.crc);
            joined.extend_from_slice(&chunk.data);
            previous = piece;
        }
        joined.extend_from_slice(&FINAL_EMPTY_BLOCK);
        let mut output = Vec::new();
        flate2::read::DeflateDecoder::new(joined.as_slice()).read_to_end(&mut output).expect("inflate");
        assert!(output == input, "round trip differs");
        assert_eq!(crc.finalize(), crc32fast::hash(&input));
    }

    /// Pseudo-random bytes and runs of text in alternating regions, like a library's code
    /// and string tables: the mixture that exposed state left over between chunks.
    fn mixed(seed: u64, len: usize) -> Vec<u8> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let region = 256 + (state >> 52) as usize;
            let random = (state >> 33) % 3 == 0;
            for i in 0..region.min(len - out.len()) {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                out.push(if random {
                    (state >> 56) as u8
                } else {
                    b"hipModuleLaunchKernel rocblas_gemm "[(i + (state >> 62) as usize) % 35]
                });
            }
        }
        out
    }

    /// A chunk's bytes must not depend on what its worker thread coded before: the pool
    /// schedules chunks differently on every run. A zlib-rs compressor reused after
    /// `reset` made them depend on it (a wheel changed by a few bytes between runs).
    #[test]
    fn a_chunk_codes_the_same_whatever_its_thread_coded_before() {
        let chunks: Vec<Vec<u8>> = (0..6).map(|seed| mixed(seed, CHUNK_SIZE)).collect();
        let dictionary = |k: usize| &chunks[k - 1][CHUNK_SIZE - DICTIONARY_SIZE..];
        let code = |k: usize| code_chunk(chunks[k].clone(), dictionary(k), Coding::Deflate { level: 6 }).expect("code");
        for k in 1..chunks.len() {
            let alone = std::thread::scope(|scope| scope.spawn(|| code(k).data).join()).expect("coding thread");
            for before in 1..chunks.len() {
                code(before);
                assert!(code(k).data == alone, "chunk {k} coded after chunk {before} differs");
            }
        }
    }

    #[test]
    fn an_empty_member_is_one_final_block() {
        let mut output = Vec::new();
        flate2::read::DeflateDecoder::new(&FINAL_EMPTY_BLOCK[..]).read_to_end(&mut output).expect("inflate");
        assert!(output.is_empty());
    }
}
