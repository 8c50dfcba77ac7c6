//! The codes of one deflate block, as lookup tables made for skipping: an entry says how
//! many bits a symbol takes (its code, and a length's extra bits), never which symbol it
//! is, so the walk produces no output and one step skips a literal or a whole match.
//!
//! Owns: reading a block's code description and skipping its symbols. Does not own: the
//! block sequence and the stream's end (`deflate_join`).

use std::io;

use super::{invalid, Bits};

/// Table bits for literal/length codes and for distance codes. A longer code (at most 15
/// bits; about one symbol in 500 of libdeflate's output on real libraries) leaves the hot
/// loop and is decoded bit by bit.
const LITLEN_BITS: u32 = 12;
const DISTANCE_BITS: u32 = 10;
/// Precode codes are at most 7 bits, so their table holds every code.
const PRECODE_BITS: u32 = 7;

/// A literal/length entry (u16): the bits one step consumes in the low six bits, [`EXIT`]
/// when the hot loop must stop before it (end of block, a long code, a bad symbol), and
/// in the high byte the mask applied to the distance entry that follows: all ones for a
/// length, zero for a literal, whose step then adds nothing.
const STEP_BITS: u16 = 63;
const EXIT: u16 = 1 << 6;
const WITH_DISTANCE: u16 = 0x7F << 8;
/// With [`EXIT`] on the end-of-block code, whose step is then its code length.
const END: u16 = 1 << 7;
/// A distance entry (u8): the bits of its code and extra bits, or [`EXIT`] alone.
const DISTANCE_EXIT: u8 = EXIT as u8;
/// After a refill at least this many bits are buffered; a step takes at most a 12-bit
/// length code with 5 extra bits and a 10-bit distance code with 13.
const MIN_REFILLED_BITS: u32 = 56;

const LENGTH_EXTRA: [u8; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DISTANCE_EXTRA: [u8; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/// The order code length code lengths are sent in (RFC 1951, 3.2.7).
const PRECODE_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/// A canonical Huffman code, for decoding its codes bit by bit.
struct Code {
    /// Codes of each length.
    counts: [u16; 16],
    /// Symbols in code order.
    symbols: [u16; 288],
}

impl Code {
    const EMPTY: Code = Code { counts: [0; 16], symbols: [0; 288] };

    /// Builds the code in place, so a block's code costs no allocation.
    fn build(&mut self, lengths: &[u8]) -> io::Result<()> {
        let mut counts = [0u16; 16];
        for &len in lengths {
            counts[usize::from(len & 15)] += 1;
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
        for (symbol, &len) in lengths.iter().enumerate() {
            if len != 0 {
                let at = &mut offsets[usize::from(len & 15)];
                self.symbols[usize::from(*at)] = symbol as u16;
                *at += 1;
            }
        }
        self.counts = counts;
        Ok(())
    }

    /// Fills `table` (2^`bits` entries, indexed by the next bits of the stream) with
    /// `entry(symbol, code length)` for every code up to `bits` long, `slow` elsewhere.
    /// The table grows by doubling: once every code of length `len` is in its first
    /// 2^`len` entries, copying them above is what the longer indexes need (cheaper than
    /// writing each short code at every index it prefixes).
    fn fill<T: Copy>(&self, table: &mut [T], bits: u32, slow: T, entry: impl Fn(u16, u32) -> T) {
        table[0] = slow;
        let (mut code, mut index, mut filled) = (0u32, 0usize, 1usize);
        for len in 1..=bits {
            table.copy_within(..filled, filled);
            filled *= 2;
            for _ in 0..self.counts[len as usize] {
                // Codes are sent most significant bit first, the table is indexed by the
                // stream's bits least significant first.
                table[(code.reverse_bits() >> (32 - len)) as usize] = entry(self.symbols[index], len);
                index += 1;
                code += 1;
            }
            code <<= 1;
        }
    }

    /// Decodes one symbol bit by bit: codes longer than the tables.
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

/// The codes of one block and their tables; one value serves every block of a stream.
pub(super) struct Tables {
    litlen: Code,
    distance: Code,
    litlen_table: [u16; 1 << LITLEN_BITS],
    distance_table: [u8; 1 << DISTANCE_BITS],
}

impl Tables {
    pub(super) fn empty() -> Box<Tables> {
        Box::new(Tables {
            litlen: Code::EMPTY,
            distance: Code::EMPTY,
            litlen_table: [EXIT; 1 << LITLEN_BITS],
            distance_table: [DISTANCE_EXIT; 1 << DISTANCE_BITS],
        })
    }

    fn build(&mut self, litlen_lengths: &[u8], distance_lengths: &[u8]) -> io::Result<()> {
        self.litlen.build(litlen_lengths)?;
        self.distance.build(distance_lengths)?;
        self.litlen.fill(&mut self.litlen_table, LITLEN_BITS, EXIT, |symbol, len| match symbol {
            0..=255 => len as u16,
            256 => EXIT | END | len as u16,
            257..=285 => WITH_DISTANCE | (len as u16 + u16::from(LENGTH_EXTRA[usize::from(symbol) - 257])),
            _ => EXIT,
        });
        self.distance.fill(&mut self.distance_table, DISTANCE_BITS, DISTANCE_EXIT, |symbol, len| match symbol {
            0..=29 => len as u8 + DISTANCE_EXTRA[usize::from(symbol)],
            _ => DISTANCE_EXIT,
        });
        Ok(())
    }

    /// The fixed codes of block type 1 (RFC 1951, 3.2.6).
    pub(super) fn build_fixed(&mut self) -> io::Result<()> {
        let mut lengths = [0u8; 288];
        lengths[..144].fill(8);
        lengths[144..256].fill(9);
        lengths[256..280].fill(7);
        lengths[280..].fill(8);
        self.build(&lengths, &[5u8; 30])
    }

    /// Reads a dynamic block's code descriptions (RFC 1951, 3.2.7).
    pub(super) fn build_dynamic(&mut self, bits: &mut Bits) -> io::Result<()> {
        let n_litlen = bits.take(5) as usize + 257;
        let n_distance = bits.take(5) as usize + 1;
        let n_precode = bits.take(4) as usize + 4;
        let mut precode_lengths = [0u8; 19];
        for &symbol in &PRECODE_ORDER[..n_precode] {
            precode_lengths[symbol] = bits.take(3) as u8;
        }
        let precode = Precode::new(&precode_lengths)?;
        let mut lengths = [0u8; 286 + 30];
        let total = n_litlen + n_distance;
        if total > lengths.len() {
            return Err(invalid("too many codes in a block"));
        }
        let mut n = 0;
        while n < total {
            let (repeat, value) = match precode.decode(bits)? {
                symbol @ 0..=15 => (1, symbol),
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
        self.build(&lengths[..n_litlen], &lengths[n_litlen..total])
    }

    /// Skips one symbol, of any kind; true when it ended the block.
    pub(super) fn skip_one(&self, bits: &mut Bits) -> io::Result<bool> {
        if bits.count < MIN_REFILLED_BITS {
            bits.refill();
        }
        if bits.overread > 8 {
            return Err(invalid("it is cut off"));
        }
        let entry = self.litlen_table[(bits.buffer & ((1 << LITLEN_BITS) - 1)) as usize];
        let step = u32::from(entry & STEP_BITS);
        if entry & (EXIT | END) != EXIT {
            bits.consume(step);
            if entry & WITH_DISTANCE != 0 {
                self.skip_distance(bits)?;
            }
            return Ok(entry & END != 0);
        }
        match self.litlen.decode_slow(bits)? {
            0..=255 => Ok(false),
            256 => Ok(true),
            symbol @ 257..=285 => {
                bits.take(u32::from(LENGTH_EXTRA[usize::from(symbol) - 257]));
                self.skip_distance(bits)?;
                Ok(false)
            }
            _ => Err(invalid("a length code past 285")),
        }
    }

    fn skip_distance(&self, bits: &mut Bits) -> io::Result<()> {
        if bits.count < MIN_REFILLED_BITS {
            bits.refill();
        }
        let entry = self.distance_table[(bits.buffer & ((1 << DISTANCE_BITS) - 1)) as usize];
        if entry != DISTANCE_EXIT {
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

/// The code lengths' own code: at most 7 bits a code, so one lookup decodes any symbol.
struct Precode {
    /// The symbol in the high byte, the code length in the low; 0 for bits no code starts.
    table: [u16; 1 << PRECODE_BITS],
}

impl Precode {
    fn new(lengths: &[u8; 19]) -> io::Result<Precode> {
        let mut code = Code::EMPTY;
        code.build(lengths)?;
        let mut table = [0u16; 1 << PRECODE_BITS];
        code.fill(&mut table, PRECODE_BITS, 0, |symbol, len| symbol << 8 | len as u16);
        Ok(Precode { table })
    }

    fn decode(&self, bits: &mut Bits) -> io::Result<u8> {
        if bits.count < PRECODE_BITS {
            bits.refill();
        }
        let entry = self.table[(bits.buffer & ((1 << PRECODE_BITS) - 1)) as usize];
        if entry == 0 {
            return Err(invalid("a code length code that is not in its Huffman code"));
        }
        bits.consume(u32::from(entry & 0xFF));
        Ok((entry >> 8) as u8)
    }
}

/// Streams one hot loop walks at most at once.
pub(super) const MAX_LANES: usize = 4;

/// A lane with no stream: its table's every entry is a literal of no bits, so it never
/// stops the loop and never moves.
static IDLE_TABLES: Tables = Tables {
    litlen: Code::EMPTY,
    distance: Code::EMPTY,
    litlen_table: [0; 1 << LITLEN_BITS],
    distance_table: [0; 1 << DISTANCE_BITS],
};
static IDLE_DATA: [u8; 16] = [0; 16];

/// The hot loop over up to `N` streams, interleaved (`None`: an idle lane): stops,
/// consuming nothing of any stream at that step, when one needs more than the tables give.
#[inline(never)]
pub(super) fn skip_lanes<const N: usize>(walks: [Option<(&Tables, &mut Bits)>; N]) {
    let tables = walks.each_ref().map(|walk| walk.as_ref().map_or(&IDLE_TABLES, |(tables, _)| *tables));
    let mut lanes = walks.each_ref().map(|walk| match walk {
        Some((_, bits)) => Lane::of(bits),
        None => Lane { data: &IDLE_DATA, buffer: 0, count: 0, next: 0 },
    });
    loop {
        let refilled = lanes.iter_mut().fold(true, |all, lane| lane.refill() & all);
        if !refilled {
            break;
        }
        let steps: [Step; N] = std::array::from_fn(|i| lanes[i].look(tables[i]));
        if steps.iter().fold(false, |any, step| any | step.exit()) {
            break;
        }
        for (lane, step) in lanes.iter_mut().zip(steps) {
            lane.take(step);
        }
    }
    for (lane, walk) in lanes.into_iter().zip(walks) {
        if let Some((_, bits)) = walk {
            lane.store(bits);
        }
    }
}

/// A walk's bit buffer in locals, for the hot loops.
struct Lane<'a> {
    data: &'a [u8],
    buffer: u64,
    count: u32,
    next: usize,
}

/// What the next step would take: a literal, or a length with its distance.
#[derive(Clone, Copy)]
struct Step {
    entry: u16,
    /// The distance entry, masked to nothing after a literal.
    distance: u8,
}

impl Step {
    #[inline(always)]
    fn exit(self) -> bool {
        (self.entry as u8 | self.distance) & DISTANCE_EXIT != 0
    }
}

impl<'a> Lane<'a> {
    #[inline(always)]
    fn of(bits: &Bits<'a>) -> Lane<'a> {
        Lane { data: bits.data, buffer: bits.buffer, count: bits.count, next: bits.next }
    }

    #[inline(always)]
    fn store(self, bits: &mut Bits) {
        (bits.buffer, bits.count, bits.next) = (self.buffer, self.count, self.next);
    }

    /// Tops the buffer up to 56-63 bits; false when fewer than eight bytes are left. The
    /// bytes above `count` are loaded again by the next refill: the same bits, in place.
    #[inline(always)]
    fn refill(&mut self) -> bool {
        let Some(word) = self.data.get(self.next..self.next + 8) else { return false };
        self.buffer |= u64::from_le_bytes(word.try_into().unwrap_or_default()) << self.count;
        self.next += ((63 - self.count) >> 3) as usize;
        self.count |= MIN_REFILLED_BITS;
        true
    }

    /// Branch-free: a literal takes the distance lookup too, masked to nothing, which
    /// costs less than mispredicting literal against match.
    #[inline(always)]
    fn look(&self, tables: &Tables) -> Step {
        let entry = tables.litlen_table[(self.buffer & ((1 << LITLEN_BITS) - 1)) as usize];
        let rest = self.buffer >> (entry & STEP_BITS);
        let distance = tables.distance_table[(rest & ((1 << DISTANCE_BITS) - 1)) as usize] & (entry >> 8) as u8;
        Step { entry, distance }
    }

    #[inline(always)]
    fn take(&mut self, step: Step) {
        let bits = u32::from(step.entry & STEP_BITS) + u32::from(step.distance);
        self.buffer >>= bits;
        self.count -= bits;
    }
}
