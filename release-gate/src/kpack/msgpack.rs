//! The gate's own MessagePack reader, for the subset kpack archives' tables of contents
//! and host binaries' markers use (nil, booleans, integers, str, bin, arrays, maps):
//! bounded, so hostile bytes give an error and never a panic, a deep recursion or an
//! allocation larger than the input.
//!
//! Owns: decoding one value from bytes. Does not own: what the values mean (`archive_file`,
//! `host`). A deliberate second reader: the gate shares no code with the writer it judges.

/// Nesting deeper than this is refused: a table of contents is four levels deep, a marker
/// two, and a bound keeps a hostile `[[[[…` from exhausting the stack.
const MAX_DEPTH: usize = 32;

/// One decoded value. Floats and extension types are refused: the formats never write them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    Nil,
    Bool(bool),
    Int(i128),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }

    /// A non-negative integer that fits in a u64.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(value) => u64::try_from(*value).ok(),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Map(pairs) => Some(pairs),
            _ => None,
        }
    }

    /// The value under the str key `key` of a map (the first, if a hostile map repeats it).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_map()?.iter().find(|(name, _)| name.as_str() == Some(key)).map(|(_, value)| value)
    }

    /// What kind of value this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Str(_) => "a string",
            Value::Bin(_) => "binary data",
            Value::Array(_) => "an array",
            Value::Map(_) => "a map",
        }
    }
}

/// Decodes the value at the start of `bytes`; returns it and how many bytes it took.
pub(crate) fn read_value(bytes: &[u8]) -> Result<(Value, usize), String> {
    let mut reader = Reader { bytes, at: 0 };
    let value = reader.value(0)?;
    Ok((value, reader.at))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|end| *end <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!(
                "ends inside a value (needs {n} bytes at offset {}, has {})",
                self.at,
                self.remaining()
            ));
        };
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn uint(&mut self, n: usize) -> Result<u64, String> {
        Ok(self.take(n)?.iter().fold(0u64, |value, byte| (value << 8) | u64::from(*byte)))
    }

    fn int(&mut self, n: usize) -> Result<i128, String> {
        let raw = self.uint(n)?;
        let bits = 8 * n as u32;
        // Sign-extend the big-endian n-byte value.
        let shift = 128 - bits;
        Ok(((i128::from(raw)) << shift) >> shift)
    }

    /// A length read from the input, bounded by what is left: every element takes at
    /// least `min_each` bytes, so no claimed count can allocate past the input's size.
    fn count(&mut self, n: usize, min_each: usize) -> Result<usize, String> {
        let count = self.uint(n)?;
        let fits = usize::try_from(count).ok().filter(|count| count.saturating_mul(min_each) <= self.remaining());
        fits.ok_or_else(|| {
            format!("claims {count} items at offset {}, more than the {} bytes left hold", self.at, self.remaining())
        })
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("nests deeper than {MAX_DEPTH} levels"));
        }
        let at = self.at;
        let marker = self.take(1)?[0];
        match marker {
            0x00..=0x7f => Ok(Value::Int(i128::from(marker))),
            0x80..=0x8f => self.map(usize::from(marker & 0x0f), depth),
            0x90..=0x9f => self.array(usize::from(marker & 0x0f), depth),
            0xa0..=0xbf => self.text(usize::from(marker & 0x1f)),
            0xc0 => Ok(Value::Nil),
            0xc2 => Ok(Value::Bool(false)),
            0xc3 => Ok(Value::Bool(true)),
            0xc4..=0xc6 => {
                let n = self.count(1 << (marker - 0xc4), 1)?;
                Ok(Value::Bin(self.take(n)?.to_vec()))
            }
            0xcc..=0xcf => Ok(Value::Int(i128::from(self.uint(1 << (marker - 0xcc))?))),
            0xd0..=0xd3 => Ok(Value::Int(self.int(1 << (marker - 0xd0))?)),
            0xd9..=0xdb => {
                let n = self.count(1 << (marker - 0xd9), 1)?;
                self.text(n)
            }
            0xdc | 0xdd => {
                let n = self.count(if marker == 0xdc { 2 } else { 4 }, 1)?;
                self.array(n, depth)
            }
            0xde | 0xdf => {
                let n = self.count(if marker == 0xde { 2 } else { 4 }, 2)?;
                self.map(n, depth)
            }
            0xe0..=0xff => Ok(Value::Int(i128::from(marker as i8))),
            0xca | 0xcb => Err(format!("has a float at offset {at}, which the format never writes")),
            0xc7..=0xc9 | 0xd4..=0xd8 => {
                Err(format!("has an extension type at offset {at}, which the format never writes"))
            }
            _ => Err(format!("has the reserved byte {marker:#04x} at offset {at}")),
        }
    }

    fn text(&mut self, n: usize) -> Result<Value, String> {
        let at = self.at;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec())
            .map(Value::Str)
            .map_err(|_| format!("has a string at offset {at} that is not UTF-8"))
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value, String> {
        if n > self.remaining() {
            return Err(format!("claims {n} items at offset {}, more than the bytes left hold", self.at));
        }
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value, String> {
        if n.saturating_mul(2) > self.remaining() {
            return Err(format!("claims {n} pairs at offset {}, more than the bytes left hold", self.at));
        }
        let mut pairs: Vec<(Value, Value)> = Vec::with_capacity(n);
        for _ in 0..n {
            let at = self.at;
            let key = self.value(depth + 1)?;
            // Readers disagree on a repeated key (the first or the last wins): refused.
            if pairs.iter().any(|(seen, _)| *seen == key) {
                return Err(format!("repeats a map key at offset {at}"));
            }
            let value = self.value(depth + 1)?;
            pairs.push((key, value));
        }
        Ok(Value::Map(pairs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bytes: &[u8], expect: Result<(Value, usize), &str>) {
        match (read_value(bytes), expect) {
            (Ok(found), Ok(expected)) => assert_eq!(found, expected),
            (Err(found), Err(expected)) => assert!(found.contains(expected), "`{found}` should contain `{expected}`"),
            (found, expected) => panic!("{bytes:02x?}: {found:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn decodes_the_subset() {
        check(&[0x05], Ok((Value::Int(5), 1)));
        check(&[0xff], Ok((Value::Int(-1), 1)));
        check(&[0xcd, 0x01, 0x00], Ok((Value::Int(256), 3)));
        check(&[0xd1, 0xff, 0x00], Ok((Value::Int(-256), 3)));
        check(&[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], Ok((Value::Int(u64::MAX.into()), 9)));
        check(&[0xa2, b'h', b'i', 0x00], Ok((Value::Str("hi".into()), 3)));
        check(&[0xc4, 0x01, 0x07], Ok((Value::Bin(vec![7]), 3)));
        check(&[0x92, 0xc0, 0xc3], Ok((Value::Array(vec![Value::Nil, Value::Bool(true)]), 3)));
        check(&[0x81, 0xa1, b'k', 0x01], Ok((Value::Map(vec![(Value::Str("k".into()), Value::Int(1))]), 4)));
    }

    #[test]
    fn refuses_hostile_input() {
        check(&[], Err("ends inside a value"));
        check(&[0xa5, b'a'], Err("ends inside a value"));
        // 4 billion items claimed in a few bytes: refused before any allocation.
        check(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0], Err("claims 4294967295 items"));
        check(&[0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0], Err("claims 4294967295 items"));
        check(&[0xdb, 0xff, 0xff, 0xff, 0xff], Err("claims 4294967295 items"));
        check(&[0x91; 40], Err("nests deeper"));
        check(&[0xcb, 0, 0, 0, 0, 0, 0, 0, 0], Err("float"));
        check(&[0xc1], Err("reserved byte 0xc1"));
        check(&[0xa1, 0xff], Err("not UTF-8"));
        check(&[0x82, 0xa1, b'k', 0x01, 0xa1, b'k', 0x02], Err("repeats a map key"));
    }

    proptest::proptest! {
        /// Any bytes decode or fail in words; none panics.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = read_value(&bytes);
        }
    }
}
