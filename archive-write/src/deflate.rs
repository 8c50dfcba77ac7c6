//! Chunked parallel coding (SPEC §5): a member is cut into fixed chunks (`chunk`), each
//! coded on rayon's pool as a complete deflate stream, every one but the last made
//! continuable, so the pieces join into one standard deflate stream. CRC-32s are
//! combined. Small members are single chunks and code in parallel with each other.
//!
//! A member's first chunk decides its coding (deflated, or stored when deflate gains less
//! than 1 %); chunks read before that decision wait for it, queued, and are coded the same
//! way as soon as it is made, so no chunk is ever coded twice and nothing waits on a
//! thread.
//!
//! Owns: the pipeline and its bounded in-flight window (memory stays at a few chunks per
//! thread whatever the file sizes). Does not own: coding a chunk (`chunk`), reading
//! members (`wheel`, `source`) or the container (`zip`).
//!
//! Output does not depend on the number of threads: chunk boundaries are fixed, the
//! decision is the first chunk's, and the writer takes results in order. A member whose
//! coded bytes already exist (copied from the previous archive, SPEC §8) takes its place
//! in the same order.

use std::collections::VecDeque;
use std::io::{self, Seek, Write};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use super::chunk::{code_chunk, code_first_chunk, CodedChunk, Coding};
use super::zip::{EntryHeader, EntrySums, OpenEntry, ZipWriter};

/// Codes a small member whole, on the calling thread (RECORD, sdist-sized files); returns
/// its coded bytes, their sums, and the coding its bytes decided.
pub fn code_whole(bytes: Vec<u8>, policy: Coding) -> io::Result<(Vec<u8>, EntrySums, Coding)> {
    let chunk = code_first_chunk(bytes, policy, true)?;
    let sums = EntrySums {
        crc: chunk.crc.finalize(),
        uncompressed: chunk.input_len,
        compressed: chunk.data.len() as u64,
        compressed_crc: chunk.data_crc.finalize(),
    };
    Ok((chunk.data, sums, chunk.coding))
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
    /// The CRC-32 of its bytes.
    pub crc: u32,
}

/// A member's coded bytes that already exist: copied into the archive instead of coded.
pub trait CodedSource: Send {
    /// Passes exactly the coded bytes, in order, to `put`; fails if they are not the
    /// bytes that were checked when this source was made.
    fn copy_to(self: Box<Self>, put: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()>;
}

/// A chunk read before its member's first chunk decided the coding.
struct Queued {
    input: Vec<u8>,
    last: bool,
    sender: mpsc::SyncSender<io::Result<CodedChunk>>,
}

/// A member's coding, once its first chunk has decided it.
enum Decision {
    /// Not yet: the chunks read meanwhile, in order.
    Pending(Vec<Queued>),
    Made(Coding),
}

/// Codes `input` on the pool and sends the result; the receiver is gone only if writing
/// already failed, and there is nothing to report then.
fn spawn_coding(input: Vec<u8>, coding: Coding, last: bool, sender: mpsc::SyncSender<io::Result<CodedChunk>>) {
    rayon::spawn(move || {
        let _ = sender.send(code_chunk(input, coding, last));
    });
}

struct InFlight {
    header: EntryHeader,
    /// What the caller asked for; the first chunk decides what the member gets.
    policy: Coding,
    size_bound: u64,
    decision: Arc<Mutex<Decision>>,
    chunks: VecDeque<mpsc::Receiver<io::Result<CodedChunk>>>,
    n_pushed: usize,
    n_taken: usize,
    /// Set for a member copied rather than coded; its `sums` are then already final.
    copied: Option<Box<dyn CodedSource>>,
    digest: Option<MemberDigest>,
    open: Option<OpenEntry>,
    sums: EntrySums,
    crc: crc32fast::Hasher,
    data_crc: crc32fast::Hasher,
}

impl InFlight {
    fn new(header: EntryHeader, policy: Coding, size_bound: u64) -> InFlight {
        InFlight {
            header,
            policy,
            size_bound,
            decision: Arc::new(Mutex::new(Decision::Pending(Vec::new()))),
            chunks: VecDeque::new(),
            n_pushed: 0,
            n_taken: 0,
            copied: None,
            digest: None,
            open: None,
            sums: EntrySums::default(),
            crc: crc32fast::Hasher::new(),
            data_crc: crc32fast::Hasher::new(),
        }
    }

    /// Starts coding the next chunk: the first decides the coding and then releases the
    /// chunks queued behind it; a later one is coded at once if the decision is made.
    fn push(&mut self, input: Vec<u8>, last: bool) -> io::Result<()> {
        let (sender, receiver) = mpsc::sync_channel(1);
        self.chunks.push_back(receiver);
        self.n_pushed += 1;
        if self.n_pushed == 1 {
            let (policy, decision) = (self.policy, Arc::clone(&self.decision));
            rayon::spawn(move || {
                let result = code_first_chunk(input, policy, last);
                // A failed first chunk leaves the member's coding as asked; the writer
                // stops at the error before any later chunk is written.
                let coding = result.as_ref().map_or(policy, |chunk| chunk.coding);
                let queued = match decision.lock() {
                    Ok(mut decision) => match std::mem::replace(&mut *decision, Decision::Made(coding)) {
                        Decision::Pending(queued) => queued,
                        Decision::Made(_) => Vec::new(),
                    },
                    Err(_) => Vec::new(),
                };
                for chunk in queued {
                    spawn_coding(chunk.input, coding, chunk.last, chunk.sender);
                }
                let _ = sender.send(result);
            });
            return Ok(());
        }
        let mut decision = self.decision.lock().map_err(|_| io::Error::other("a compression worker panicked"))?;
        match &mut *decision {
            Decision::Made(coding) => spawn_coding(input, *coding, last, sender),
            Decision::Pending(queued) => queued.push(Queued { input, last, sender }),
        }
        Ok(())
    }

    /// Takes a coded chunk into the member's sums; the first sets the member's method.
    fn add(&mut self, chunk: &CodedChunk) {
        if self.n_taken == 0 {
            self.header.method = chunk.coding.method();
        }
        self.n_taken += 1;
        self.crc.combine(&chunk.crc);
        self.data_crc.combine(&chunk.data_crc);
        self.sums.uncompressed += chunk.input_len;
        self.sums.compressed += chunk.data.len() as u64;
    }

    fn finish_sums(&mut self) {
        self.sums.crc = self.crc.clone().finalize();
        self.sums.compressed_crc = self.data_crc.clone().finalize();
    }
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
        // the cap keeps memory bounded on many-core machines (about 4 MiB per chunk).
        let window = (2 * rayon::current_num_threads()).clamp(4, 32);
        Pipeline { window, queue: VecDeque::new(), n_chunks: 0, finished: Vec::new() }
    }

    /// Starts a member coded as `policy` asks; its chunks follow with
    /// [`Pipeline::push_chunk`], at least one (empty for an empty member).
    pub fn begin(&mut self, header: EntryHeader, policy: Coding, size_bound: u64) {
        self.queue.push_back(InFlight::new(header, policy, size_bound));
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
        let mut member = InFlight::new(header, Coding::Stored, size_bound);
        (member.copied, member.digest, member.sums) = (Some(source), Some(digest), sums);
        self.queue.push_back(member);
        self.n_chunks += 1;
        while self.n_chunks > self.window {
            self.write_front(zip)?;
        }
        Ok(())
    }

    /// Queues one chunk of the current member (`last`: it ends the member); writes older
    /// results when the window is full.
    pub fn push_chunk<W: Write + Seek>(
        &mut self,
        input: Vec<u8>,
        last: bool,
        zip: &mut ZipWriter<W>,
    ) -> io::Result<()> {
        let member = self.queue.back_mut().ok_or_else(|| io::Error::other("chunk without a member"))?;
        member.push(input, last)?;
        self.n_chunks += 1;
        while self.n_chunks > self.window {
            self.write_front(zip)?;
        }
        Ok(())
    }

    /// Marks the current member as completely read.
    pub fn end(&mut self, digest: MemberDigest) -> io::Result<()> {
        let member = self.queue.back_mut().ok_or_else(|| io::Error::other("end without a member"))?;
        if member.n_pushed == 0 {
            return Err(io::Error::other(format!("{} ended without a chunk", member.header.name)));
        }
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
    /// else writes its oldest chunk behind a header to be patched later. The header waits
    /// for the first chunk, which decides the member's method.
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
            let mut parts = Vec::with_capacity(member.chunks.len());
            while let Some(receiver) = member.chunks.pop_front() {
                let chunk = wait_for(&receiver)?;
                self.n_chunks -= 1;
                member.add(&chunk);
                parts.push(chunk.data);
            }
            member.finish_sums();
            zip.write_entry(member.header.clone(), member.sums, member.size_bound, &parts)?;
            return self.retire(member);
        }
        if let Some(receiver) = front.chunks.pop_front() {
            let chunk = wait_for(&receiver)?;
            self.n_chunks -= 1;
            front.add(&chunk);
            if front.open.is_none() {
                front.open = Some(zip.begin_entry(front.header.clone(), front.size_bound)?);
            }
            zip.write_data(&chunk.data)?;
        } else if front.digest.is_none() {
            return Err(io::Error::other("the writer overtook the reader"));
        }
        if front.chunks.is_empty() && front.digest.is_some() {
            let mut member = self.queue.pop_front().expect("front exists");
            member.finish_sums();
            let open = member.open.take().ok_or_else(|| io::Error::other("a member without chunks"))?;
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
        self.finished.push(FinishedMember { name: member.header.name, digest, crc: member.sums.crc });
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
    use super::super::chunk::CHUNK_SIZE;
    use super::*;
    use std::io::Read;

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

    /// A member's chunks, coded as the pipeline codes them, join into one stream any
    /// inflater reads, with the member's CRC.
    #[test]
    fn chunks_join_into_one_deflate_stream() {
        let input = mixed(1, 3 * CHUNK_SIZE + 1234);
        let policy = Coding::Deflate { level: 6 };
        let pieces: Vec<&[u8]> = input.chunks(CHUNK_SIZE).collect();
        let mut joined = Vec::new();
        let mut crc = crc32fast::Hasher::new();
        let first = code_first_chunk(pieces[0].to_vec(), policy, false).expect("code");
        assert_eq!(first.coding, policy);
        for (k, piece) in pieces.iter().enumerate() {
            let last = k + 1 == pieces.len();
            let chunk = match k {
                0 => code_first_chunk(piece.to_vec(), policy, last),
                _ => code_chunk(piece.to_vec(), first.coding, last),
            };
            let chunk = chunk.expect("code");
            crc.combine(&chunk.crc);
            joined.extend_from_slice(&chunk.data);
        }
        let mut output = Vec::new();
        flate2::read::DeflateDecoder::new(joined.as_slice()).read_to_end(&mut output).expect("inflate");
        assert!(output == input, "round trip differs");
        assert_eq!(crc.finalize(), crc32fast::hash(&input));
    }

    /// A chunk's bytes must not depend on what its worker thread coded before: the pool
    /// schedules chunks differently on every run.
    #[test]
    fn a_chunk_codes_the_same_whatever_its_thread_coded_before() {
        let chunks: Vec<Vec<u8>> = (0..6).map(|seed| mixed(seed, CHUNK_SIZE)).collect();
        let code = |k: usize| code_chunk(chunks[k].clone(), Coding::Deflate { level: 6 }, k == 5).expect("code");
        for k in 1..chunks.len() {
            let alone = std::thread::scope(|scope| scope.spawn(|| code(k).data).join()).expect("coding thread");
            for before in 1..chunks.len() {
                code(before);
                assert!(code(k).data == alone, "chunk {k} coded after chunk {before} differs");
            }
        }
    }
}
