//! Joining whole deflate streams (SPEC §5): libdeflate codes a chunk as a complete raw
//! deflate stream, whose last block carries BFINAL, and has no flush that would end on a
//! non-final block. [`unfinalize`] walks such a stream block by block (no output is
//! produced, only code lengths are read), clears the final block's BFINAL bit and ends
//! the stream on a byte boundary with an empty stored block, exactly as zlib's sync flush
//! leaves a stream: the next chunk's stream then continues it.
//!
//! Owns: reading deflate block structure. Does not own: coding (`deflate`), whose output
//! is the only input here; an invalid stream is an error, never a panic.
//!
//! The walk costs about a tenth of coding the chunk: the symbols of every block must be
//! decoded to find where it ends (deflate has no block lengths), so the hot loop keeps
//! its bit buffer in locals and takes a literal, or a length with its distance, per
//! table lookup.

use std::io;

/// Table bits for literal/length codes and for distance codes; longer codes (rare, at
/// most 15 bits) are decoded bit by bit.
const LITLEN_BITS: u32 = 11;
const DISTANCE_BITS: u32 = 10;
/// Table entries: the kind in the top two bits, the bits to consume (code plus extra bits)
/// in the low six.
const LITERAL: u8 = 0;
const LENGTH: u8 = 1 << 6;
const END_OF_BLOCK: u8 = 2 << 6;
const SLOW: u8 = 3 << 6;
/// The most bits one table step consumes: a length (11 + 5 extra) and a distance (10 + 13).
const MAX_STEP_BITS: u32 = 39;

const LENGTH_EXTRA: [u8; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DISTANCE_EXTRA: [u8; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/// The order code length code lengths are sent in (RFC 1951, 3.2.7).
const PRECODE_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/// Where a complete stream's final block starts and where the stream ends, in bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamEnd {
    pub final_header_bit: u64,
    pub end_bit: u64,
}

/// Makes a complete raw deflate stream continuable: its final block becomes non-final and
/// an empty stored block aligns it to a byte boundary.
pub fn unfinalize(stream: &mut Vec<u8>) -> io::Result<()> {
    let end = find_end(stream)?;
    let header_byte = (end.final_header_bit / 8) as usize;
    stream[header_byte] &= !(1u8 << (end.final_header_bit % 8));
    stream.truncate(end.end_bit.div_ceil(8) as usize);
    let used_bits = (end.end_bit % 8) as u32;
    if let (Some(last), true) = (stream.last_mut(), used_bits != 0) {
        *last &= ((1u16 << used_bits) - 1) as u8;
    }
    // The stored block's three header bits (all zero) fit in the last byte when at least
    // three of its bits are free; its length fields start at the next byte boundary.
    if used_bits == 0 || used_bits > 5 {
        stream.push(0);
    }
    stream.extend_from_slice(&[0x00, 0x00, 0xFF, 0xFF]);
    Ok(())
}

/// Walks `stream` to the end of its final block.
pub fn find_end(stream: &[u8]) -> io::Result<StreamEnd> {
    let mut bits = Bits { data: stream, next: 0, buffer: 0, count: 0, overread: 0 };
    let mut fixed: Option<Box<Tables>> = None;
    loop {
        let header = bits.position()?;
        let last = bits.take(1) == 1;
        match bits.take(2) {
            0 => bits.skip_stored()?,
            1 => fixed.get_or_insert_with(Tables::fixed).skip_symbols(&mut bits)?,
            2 => Tables::dynamic(&mut bits)?.skip_symbols(&mut bits)?,
            _ => return Err(invalid("a block of the reserved type 3")),
        }
        if last {
            return Ok(StreamEnd { final_header_bit: header, end_bit: bits.position()? });
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

/// A canonical Huffman code, for decoding its codes bit by bit.
struct Code {
    /// Codes of each length.
    counts: [u16; 16],
    /// Symbols in code order.
    symbols: [u16; 288],
}

impl Code {
    fn new(lengths: &[u8]) -> io::Result<Code> {
        let mut counts = [0u16; 16];
        for &len in lengths {
            counts[usize::from(len)] += 1;
        }
        counts[0] = 0;
        let mut left: i32 = 1;
        for &count in &counts[1..] {
            left = (left << 1) - i32::from(count);
            if left < 0 {
                return Err(invalid("an over-subscribed Huffman code"));
            }
        }
        let mut offsets = [0u16; 16];
        for len in 1..15 {
            offsets[len + 1] = offsets[len] + counts[len];
        }
        let mut symbols = [0u16; 288];
        for (symbol, &len) in lengths.iter().enumerate() {
            if len != 0 {
                symbols[usize::from(offsets[usize::from(len)])] = symbol as u16;
                offsets[usize::from(len)] += 1;
            }
        }
        Ok(Code { counts, symbols })
    }

    /// Fills `table` (2^`bits` entries, indexed by the next bits of the stream) with
    /// `entry(symbol, code length)` for every code up to `bits` long; the rest stay SLOW.
    fn fill(&self, table: &mut [u8], bits: u32, entry: impl Fn(u16, u32) -> u8) {
        table.fill(SLOW);
        let (mut code, mut index) = (0u32, 0usize);
        for len in 1..=bits {
            for _ in 0..self.counts[len as usize] {
                let value = entry(self.symbols[index], len);
                index += 1;
                // Codes are sent most significant bit first, the table is indexed by the
                // stream's bits least significant first.
                let mut at = (code.reverse_bits() >> (32 - len)) as usize;
                while at < table.len() {
                    table[at] = value;
                    at += 1 << len;
                }
                code += 1;
            }
            code <<= 1;
        }
    }

    /// Decodes one symbol bit by bit: codes longer than the tables, and the precode.
    fn decode_slow(&self, bits: &mut Bits) -> io::Result<u16> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..16 {
            code |= bits.take(1) as i32;
            let count = i32::from(self.counts[len]);
            if code - count < first {
                return Ok(self.symbols[(index + code - first) as usize]);
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err(invalid("a code that is not in its Huffman code"))
    }
}

/// The codes of one block and their tables.
struct Tables {
    litlen: Code,
    distance: Code,
    litlen_table: [u8; 1 << LITLEN_BITS],
    distance_table: [u8; 1 << DISTANCE_BITS],
}

impl Tables {
    fn new(litlen_lengths: &[u8], distance_lengths: &[u8]) -> io::Result<Box<Tables>> {
        let mut tables = Box::new(Tables {
            litlen: Code::new(litlen_lengths)?,
            distance: Code::new(distance_lengths)?,
            litlen_table: [SLOW; 1 << LITLEN_BITS],
            distance_table: [SLOW; 1 << DISTANCE_BITS],
        });
        let Tables { litlen, distance, litlen_table, distance_table } = &mut *tables;
        litlen.fill(litlen_table, LITLEN_BITS, |symbol, len| match symbol {
            0..=255 => LITERAL | len as u8,
            256 => END_OF_BLOCK | len as u8,
            257..=285 => LENGTH | (len as u8 + LENGTH_EXTRA[usize::from(symbol) - 257]),
            _ => SLOW,
        });
        distance.fill(distance_table, DISTANCE_BITS, |symbol, len| match symbol {
            0..=29 => len as u8 + DISTANCE_EXTRA[usize::from(symbol)],
            _ => SLOW,
        });
        Ok(tables)
    }

    /// The fixed codes of block type 1 (RFC 1951, 3.2.6).
    fn fixed() -> Box<Tables> {
        let mut lengths = [0u8; 288];
        lengths[..144].fill(8);
        lengths[144..256].fill(9);
        lengths[256..280].fill(7);
        lengths[280..].fill(8);
        // Neither code is over-subscribed, so this cannot fail; a failure would only make
        // every fixed block take the slow path.
        Tables::new(&lengths, &[5u8; 30]).unwrap_or_else(|_| {
            Box::new(Tables {
                litlen: Code { counts: [0; 16], symbols: [0; 288] },
                distance: Code { counts: [0; 16], symbols: [0; 288] },
                litlen_table: [SLOW; 1 << LITLEN_BITS],
                distance_table: [SLOW; 1 << DISTANCE_BITS],
            })
        })
    }

    /// Reads a dynamic block's code descriptions (RFC 1951, 3.2.7).
    fn dynamic(bits: &mut Bits) -> io::Result<Box<Tables>> {
        let n_litlen = bits.take(5) as usize + 257;
        let n_distance = bits.take(5) as usize + 1;
        let n_precode = bits.take(4) as usize + 4;
        let mut precode_lengths = [0u8; 19];
        for &symbol in &PRECODE_ORDER[..n_precode] {
            precode_lengths[symbol] = bits.take(3) as u8;
        }
        let precode = Code::new(&precode_lengths)?;
        let mut lengths = [0u8; 286 + 30];
        let total = n_litlen + n_distance;
        if total > lengths.len() {
            return Err(invalid("too many codes in a block"));
        }
        let mut n = 0;
        while n < total {
            let (repeat, value) = match precode.decode_slow(bits)? {
                symbol @ 0..=15 => (1, symbol as u8),
                16 if n > 0 => (3 + bits.take(2) as usize, lengths[n - 1]),
                17 => (3 + bits.take(3) as usize, 0),
                18 => (11 + bits.take(7) as usize, 0),
                _ => return Err(invalid("a bad code length repeat")),
            };
            if n + repeat > total {
                return Err(invalid("code lengths past the codes"));
            }
            lengths[n..n + repeat].fill(value);
            n += repeat;
        }
        if lengths[256] == 0 {
            return Err(invalid("a block without an end-of-block code"));
        }
        Tables::new(&lengths[..n_litlen], &lengths[n_litlen..total])
    }

    /// Skips a block's symbols up to and including its end-of-block code.
    fn skip_symbols(&self, bits: &mut Bits) -> io::Result<()> {
        loop {
            self.skip_table_symbols(bits);
            // Now an end-of-block, a long code, or the last bytes of the data are next.
            if bits.count < MAX_STEP_BITS {
                bits.refill();
            }
            if bits.overread > 8 {
                return Err(invalid("it is cut off"));
            }
            let entry = self.litlen_table[(bits.buffer & ((1 << LITLEN_BITS) - 1)) as usize];
            match entry & SLOW {
                END_OF_BLOCK => {
                    bits.consume(u32::from(entry & 63));
                    return Ok(());
                }
                LITERAL => bits.consume(u32::from(entry & 63)),
                LENGTH => {
                    bits.consume(u32::from(entry & 63));
                    self.skip_distance(bits)?;
                }
                _ => match self.litlen.decode_slow(bits)? {
                    0..=255 => {}
                    256 => return Ok(()),
                    symbol @ 257..=285 => {
                        bits.take(u32::from(LENGTH_EXTRA[usize::from(symbol) - 257]));
                        self.skip_distance(bits)?;
                    }
                    _ => return Err(invalid("a length code past 285")),
                },
            }
        }
    }

    /// The hot loop: skips literals and matches whose codes are in the tables while a
    /// whole refill of data is left; stops, consuming nothing of it, before any other
    /// symbol.
    #[inline(always)]
    fn skip_table_symbols(&self, bits: &mut Bits) {
        let data = bits.data;
        let (mut buffer, mut count, mut next) = (bits.buffer, bits.count, bits.next);
        while let Some(word) = data.get(next..next + 8) {
            if count < MAX_STEP_BITS {
                buffer |= u64::from_le_bytes(word.try_into().unwrap_or_default()) << count;
                let taken = (63 - count) >> 3;
                next += taken as usize;
                count += taken << 3;
            }
            let entry = self.litlen_table[(buffer & ((1 << LITLEN_BITS) - 1)) as usize];
            if entry >= END_OF_BLOCK {
                break;
            }
            let code_bits = u32::from(entry & 63);
            // A literal's step must not wait for a distance lookup: the branch costs less
            // than the load would (measured: a quarter less time on large shared libraries).
            if entry < LENGTH {
                buffer >>= code_bits;
                count -= code_bits;
                continue;
            }
            let distance = self.distance_table[((buffer >> code_bits) & ((1 << DISTANCE_BITS) - 1)) as usize];
            if distance == SLOW {
                break;
            }
            let step = code_bits + u32::from(distance & 63);
            buffer >>= step;
            count -= step;
        }
        (bits.buffer, bits.count, bits.next) = (buffer, count, next);
    }

    fn skip_distance(&self, bits: &mut Bits) -> io::Result<()> {
        if bits.count < MAX_STEP_BITS {
            bits.refill();
        }
        let entry = self.distance_table[(bits.buffer & ((1 << DISTANCE_BITS) - 1)) as usize];
        if entry != SLOW {
            bits.consume(u32::from(entry));
            return Ok(());
        }
        match self.distance.decode_slow(bits)? {
            symbol @ 0..=29 => {
                bits.take(u32::from(DISTANCE_EXTRA[usize::from(symbol)]));
                Ok(())
            }
            _ => Err(invalid("a distance code past 29")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

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
                assert_eq!(complete.end_bit.div_ceil(8), joined.len() as u64, "level {level}, {len} bytes");
                unfinalize(&mut joined).expect("unfinalize");
                joined.extend_from_slice(&libdeflate(&second, level));
                let expected = [first, second].concat();
                assert!(inflate(&joined) == expected, "level {level}, {len} bytes");
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
        }
    }
}
