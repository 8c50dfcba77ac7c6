//! Joining whole deflate streams (SPEC §5): libdeflate codes a stream whole, its last
//! block carrying BFINAL, and has no flush that would end on a non-final block. The walk
//! ([`find_ends`]) reads a stream block by block (no output is produced,
//! only code lengths are read) to where its final block starts and ends;
//! [`extend_continuable`] then clears that block's BFINAL bit and ends the stream on a
//! byte boundary with an empty stored block, exactly as zlib's sync flush leaves a
//! stream: the next stream then continues it.
//!
//! Owns: reading deflate block structure. Does not own: coding (`chunk`), whose output is
//! the only input here; an invalid stream is an error, never a panic.
//!
//! The walk costs about a sixteenth of coding: the symbols of every block must be decoded
//! to find where it ends (deflate has no block lengths). A step is a chain of dependent
//! table lookups, so up to four streams are walked interleaved, which takes about half
//! the time of walking them one after the other (on real libraries; see `tables`).

use std::io;

mod tables;

use tables::Tables;

/// Where a complete stream's final block starts and where the stream ends, in bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamEnd {
    pub final_header_bit: u64,
    pub end_bit: u64,
}

/// Appends `stream`, whose end `end` is, to `out` as a continuable stream: the final
/// block's BFINAL cleared, the bits after its end dropped, then an empty stored block.
pub fn extend_continuable(out: &mut Vec<u8>, stream: &[u8], end: StreamEnd) {
    let start = out.len();
    let len = end.end_bit.div_ceil(8) as usize;
    out.extend_from_slice(&stream[..len.min(stream.len())]);
    out[start + (end.final_header_bit / 8) as usize] &= !(1u8 << (end.final_header_bit % 8));
    let used_bits = (end.end_bit % 8) as u32;
    if let (Some(last), true) = (out.last_mut(), used_bits != 0) {
        *last &= ((1u16 << used_bits) - 1) as u8;
    }
    // The stored block's three header bits (all zero) fit in the last byte when at least
    // three of its bits are free; its length fields start at the next byte boundary.
    if used_bits == 0 || used_bits > 5 {
        out.push(0);
    }
    out.extend_from_slice(&[0x00, 0x00, 0xFF, 0xFF]);
}

/// Walks `streams` to the end of each one's final block, up to [`tables::MAX_LANES`] at once.
/// One walk is a chain of dependent table lookups that leaves most of the core idle;
/// independent chains interleaved take little more time than one.
pub fn find_ends(streams: &[&[u8]]) -> io::Result<Vec<StreamEnd>> {
    let mut ends = vec![None; streams.len()];
    let mut queue = streams.iter().enumerate();
    let mut lanes: [Option<(usize, Walk)>; tables::MAX_LANES] = std::array::from_fn(|_| None);
    loop {
        for lane in &mut lanes {
            fill_lane(lane, &mut queue, &mut ends)?;
        }
        let live = lanes.iter().flatten().count();
        if live == 0 {
            break;
        }
        skip_live(&mut lanes, live);
        for (_, walk) in lanes.iter_mut().flatten() {
            walk.step()?;
        }
    }
    ends.into_iter().map(|end| end.ok_or_else(|| invalid("a walk that did not end"))).collect()
}

/// The hot loop over the live walks, in as few lanes as hold them: an idle lane costs
/// about as much as a live one.
fn skip_live(lanes: &mut [Option<(usize, Walk)>; tables::MAX_LANES], live: usize) {
    let mut walks = lanes.iter_mut().flatten().map(|(_, walk)| (&*walk.tables, &mut walk.bits));
    match live {
        1 => tables::skip_lanes::<1>(std::array::from_fn(|_| walks.next())),
        2 => tables::skip_lanes::<2>(std::array::from_fn(|_| walks.next())),
        _ => tables::skip_lanes::<{ tables::MAX_LANES }>(std::array::from_fn(|_| walks.next())),
    }
}

/// Records the lane's walk if it has ended and starts the next stream in it, until the
/// lane walks a stream that has not ended or no stream is left.
fn fill_lane<'a>(
    lane: &mut Option<(usize, Walk<'a>)>,
    queue: &mut impl Iterator<Item = (usize, &'a &'a [u8])>,
    ends: &mut [Option<StreamEnd>],
) -> io::Result<()> {
    loop {
        match lane {
            Some((index, walk)) => match walk.end {
                Some(end) => {
                    ends[*index] = Some(end);
                    *lane = None;
                }
                None => return Ok(()),
            },
            None => match queue.next() {
                Some((index, stream)) => *lane = Some((index, Walk::new(stream)?)),
                None => return Ok(()),
            },
        }
    }
}

/// One stream's walk: where it is, the current block's codes, and its end once reached.
struct Walk<'a> {
    bits: Bits<'a>,
    tables: Box<Tables>,
    /// The current block's header and whether it is the final block.
    header: u64,
    last: bool,
    end: Option<StreamEnd>,
}

impl<'a> Walk<'a> {
    fn new(stream: &'a [u8]) -> io::Result<Walk<'a>> {
        let bits = Bits { data: stream, next: 0, buffer: 0, count: 0, overread: 0 };
        let mut walk = Walk { bits, tables: Tables::empty(), header: 0, last: false, end: None };
        walk.next_block()?;
        Ok(walk)
    }

    /// Reads block headers until a block with symbols begins (stored blocks are skipped
    /// whole) or the final block has ended.
    fn next_block(&mut self) -> io::Result<()> {
        loop {
            self.header = self.bits.position()?;
            self.last = self.bits.take(1) == 1;
            match self.bits.take(2) {
                0 => self.bits.skip_stored()?,
                1 => return self.tables.build_fixed(),
                2 => return self.tables.build_dynamic(&mut self.bits),
                _ => return Err(invalid("a block of the reserved type 3")),
            }
            if self.last {
                return self.ended();
            }
        }
    }

    fn ended(&mut self) -> io::Result<()> {
        self.end = Some(StreamEnd { final_header_bit: self.header, end_bit: self.bits.position()? });
        Ok(())
    }

    /// Skips one symbol the careful way (whatever stopped the hot loop); after a block's
    /// last symbol, on to the next block.
    fn step(&mut self) -> io::Result<()> {
        match self.tables.skip_one(&mut self.bits)? {
            false => Ok(()),
            true if self.last => self.ended(),
            true => self.next_block(),
        }
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("not a complete deflate stream: {what}"))
}

/// Bits read least significant first, as deflate packs them.
struct Bits<'a> {
    data: &'a [u8],
    /// The next byte to load into `buffer`.
    next: usize,
    buffer: u64,
    /// Valid bits in `buffer`; bits above them are the next bytes or zero.
    count: u32,
    /// Zero bytes loaded past the end; an error only once they are consumed.
    overread: u32,
}

impl Bits<'_> {
    #[inline(always)]
    fn refill(&mut self) {
        match self.data.get(self.next..self.next + 8) {
            Some(word) => {
                let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
                self.buffer |= word << self.count;
                let taken = (63 - self.count) >> 3;
                self.next += taken as usize;
                self.count += taken << 3;
            }
            None => self.refill_at_end(),
        }
    }

    #[cold]
    fn refill_at_end(&mut self) {
        while self.count <= 56 {
            match self.data.get(self.next) {
                Some(&byte) => {
                    self.buffer |= u64::from(byte) << self.count;
                    self.next += 1;
                }
                None => self.overread += 1,
            }
            self.count += 8;
        }
    }

    #[inline(always)]
    fn consume(&mut self, n: u32) {
        self.buffer >>= n;
        self.count -= n;
    }

    fn take(&mut self, n: u32) -> u32 {
        if self.count < n {
            self.refill();
        }
        let value = (self.buffer & ((1u64 << n) - 1)) as u32;
        self.consume(n);
        value
    }

    /// Bits consumed so far; an error once more were consumed than the data holds.
    fn position(&self) -> io::Result<u64> {
        let consumed = (self.next as u64 + u64::from(self.overread)) * 8 - u64::from(self.count);
        match consumed <= self.data.len() as u64 * 8 {
            true => Ok(consumed),
            false => Err(invalid("it is cut off")),
        }
    }

    /// Skips a stored block after its header: to the byte boundary, the lengths, the bytes.
    fn skip_stored(&mut self) -> io::Result<()> {
        let pad = self.count % 8;
        self.consume(pad);
        let len = self.take(16);
        let nlen = self.take(16);
        if len != !nlen & 0xFFFF {
            return Err(invalid("a stored block's lengths disagree"));
        }
        let end = (self.position()? / 8) as usize + len as usize;
        if end > self.data.len() {
            return Err(invalid("a stored block is cut off"));
        }
        (self.next, self.buffer, self.count, self.overread) = (end, 0, 0, 0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn find_end(stream: &[u8]) -> io::Result<StreamEnd> {
        Ok(find_ends(&[stream])?[0])
    }

    /// Makes a complete raw deflate stream continuable: its final block becomes non-final and
    /// an empty stored block aligns it to a byte boundary.
    fn unfinalize(stream: &mut Vec<u8>) -> io::Result<()> {
        let end = find_end(stream)?;
        let complete = std::mem::take(stream);
        extend_continuable(stream, &complete, end);
        Ok(())
    }

    /// Text, noise and runs in alternating regions: literals, matches, long and short
    /// codes, and stored blocks where the noise is long enough.
    fn mixed(seed: u64, len: usize) -> Vec<u8> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let region = 64 + (state >> 47) as usize;
            let kind = (state >> 33) % 4;
            for i in 0..region.min(len - out.len()) {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                out.push(match kind {
                    0 => (state >> 56) as u8,
                    1 => b"hipModuleLaunchKernel rocblas_gemm "[(i + (state >> 62) as usize) % 35],
                    2 => 0,
                    _ => (i as u8).wrapping_mul(7) ^ (state >> 60) as u8,
                });
            }
        }
        out
    }

    fn libdeflate(input: &[u8], level: i32) -> Vec<u8> {
        let level = libdeflater::CompressionLvl::new(level).expect("a valid level");
        let mut compressor = libdeflater::Compressor::new(level);
        let mut out = vec![0u8; compressor.deflate_compress_bound(input.len())];
        let n = compressor.deflate_compress(input, &mut out).expect("fits its bound");
        out.truncate(n);
        out
    }

    fn inflate(stream: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(stream).read_to_end(&mut out).expect("inflates");
        out
    }

    /// Every level's streams, unfinalized and followed by another stream, inflate to both
    /// inputs in turn: stored, fixed and dynamic blocks and every end alignment.
    #[test]
    fn unfinalized_streams_join_with_the_next_at_every_level() {
        for level in 0..=12 {
            for (seed, len) in [(1, 0), (2, 1), (3, 100), (4, 70_000), (5, 300_000)] {
                let first = mixed(seed + level as u64, len);
                let second = mixed(seed * 31, 5000);
                let mut joined = libdeflate(&first, level);
                let complete = find_end(&joined).expect("a complete stream");
                let other = libdeflate(&mixed(seed * 7 + level as u64, len / 2 + 9000), level);
                let pair = find_ends(&[&joined, &other]).expect("two complete streams");
                assert_eq!(pair, [complete, find_end(&other).expect("complete")], "level {level}, {len} bytes");
                assert_eq!(complete.end_bit.div_ceil(8), joined.len() as u64, "level {level}, {len} bytes");
                unfinalize(&mut joined).expect("unfinalize");
                joined.extend_from_slice(&libdeflate(&second, level));
                let expected = [first, second].concat();
                assert!(inflate(&joined) == expected, "level {level}, {len} bytes");
            }
        }
    }

    /// Any number of streams, of every kind and length, walked together end where each
    /// ends walked alone: more streams than lanes wait for a lane, and a lane whose
    /// stream ends early takes the next while the others go on.
    #[test]
    fn streams_walked_together_end_where_each_ends_alone() {
        let lengths = [300_000, 0, 1, 70_000, 5000, 200_000, 12, 130_000, 90_000];
        let streams: Vec<Vec<u8>> = lengths
            .iter()
            .enumerate()
            .map(|(i, &len)| libdeflate(&mixed(40 + i as u64, len), [6, 1, 0, 9][i % 4]))
            .collect();
        let alone: Vec<StreamEnd> = streams.iter().map(|stream| find_end(stream).expect("complete")).collect();
        for count in 0..=streams.len() {
            for start in 0..=streams.len() - count {
                let group: Vec<&[u8]> = streams[start..start + count].iter().map(Vec::as_slice).collect();
                assert_eq!(find_ends(&group).expect("complete"), alone[start..start + count], "{count} from {start}");
            }
        }
    }

    /// zlib's own output (the other encoder of the crate's users) walks the same way.
    #[test]
    fn streams_of_another_encoder_walk_to_their_end() {
        let input = mixed(9, 200_000);
        for level in [0, 1, 6, 9] {
            let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
            std::io::Write::write_all(&mut encoder, &input).expect("compress");
            let mut stream = encoder.finish().expect("finish");
            unfinalize(&mut stream).expect("unfinalize");
            stream.extend_from_slice(&libdeflate(b"tail", 6));
            assert!(inflate(&stream) == [input.as_slice(), b"tail"].concat(), "level {level}");
        }
    }

    /// Cut, corrupted or foreign bytes are errors, never a panic or a wrong answer that
    /// inflates to something else.
    #[test]
    fn damaged_streams_are_errors() {
        let input = mixed(7, 100_000);
        let stream = libdeflate(&input, 6);
        for cut in [0, 1, 2, 10, stream.len() / 2, stream.len() - 1] {
            assert!(find_end(&stream[..cut]).is_err(), "cut at {cut}");
            assert!(find_ends(&[&stream, &stream[..cut]]).is_err(), "second cut at {cut}");
            assert!(find_ends(&[&stream[..cut], &stream]).is_err(), "first cut at {cut}");
            let queued = [&stream[..], &stream, &stream, &stream, &stream[..cut], &stream];
            assert!(find_ends(&queued).is_err(), "a queued stream cut at {cut}");
        }
        assert!(find_end(&[0x07]).is_err(), "block type 3");
        assert!(find_end(&[0x01, 0x05, 0x00, 0x00, 0x00]).is_err(), "stored lengths that disagree");
        let mut state = 0x1234_5678u64;
        for round in 0..2000 {
            let noise: Vec<u8> = (0..(round % 300))
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (state >> 56) as u8
                })
                .collect();
            let _ = find_end(&noise);
            let mut flipped = stream.clone();
            let at = (state as usize) % flipped.len();
            flipped[at] ^= 1 << (round % 8);
            let _ = find_end(&flipped);
            let _ = find_ends(&[&flipped, &noise]);
            let _ = find_ends(&[&stream, &flipped]);
        }
    }
}
