//! The MessagePack subset the kpack formats use (KPACK.md §1 and §2): nil, booleans,
//! integers, floats, strings, binary, arrays and maps with string keys. The encoder writes
//! what Python's `msgpack.packb(obj, use_bin_type=True)` writes for the same object
//! (integers and lengths in their smallest form, map entries in insertion order); the
//! decoder reads untrusted bytes under bounds (a depth limit, lengths checked against the
//! bytes left before anything is allocated).
//!
//! Owns: the wire form. Must not know: what any map means (that is `kpack` and the host
//! transform's marker).

use std::fmt;

/// Deeper nesting than either format has (the TOC is four maps deep): a bound, so a
/// hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 32;
/// The most elements reserved up front for an array or map; more grow as they are read,
/// so a claimed count costs memory only once its elements are really there.
const MAX_RESERVE: usize = 1024;

/// One MessagePack value. Maps keep their entries in order and have string keys.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    /// A negative integer (non-negative ones are [`Value::UInt`]; the decoder always gives
    /// those, and the encoder writes a non-negative `Int` as the same `UInt`).
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl Value {
    /// A string value.
    pub fn str(text: &str) -> Value {
        Value::Str(text.to_owned())
    }

    /// A map with `entries` in this order.
    pub fn map<'a>(entries: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
        Value::Map(entries.into_iter().map(|(key, value)| (key.to_owned(), value)).collect())
    }

    /// The value of `key` in a map (the first, should a hostile map name it twice).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries.iter().find(|(name, _)| name == key).map(|(_, value)| value),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::UInt(number) => Some(*number),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }
}

/// A string, binary, array or map too long for MessagePack's 32-bit lengths.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a MessagePack {kind} of {len} elements is longer than the format's 32-bit lengths")]
pub struct EncodeError {
    pub kind: &'static str,
    pub len: usize,
}

/// Appends the encoding of `value` to `out`.
pub fn encode(value: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match value {
        Value::Nil => out.push(0xc0),
        Value::Bool(false) => out.push(0xc2),
        Value::Bool(true) => out.push(0xc3),
        Value::UInt(number) => encode_uint(*number, out),
        Value::Int(number) => match u64::try_from(*number) {
            Ok(number) => encode_uint(number, out),
            Err(_) => encode_negative(*number, out),
        },
        Value::Float(number) => {
            out.push(0xcb);
            out.extend_from_slice(&number.to_bits().to_be_bytes());
        }
        Value::Str(text) => {
            encode_len(out, "string", text.len(), Some(0xa0), 31, [0xd9, 0xda, 0xdb])?;
            out.extend_from_slice(text.as_bytes());
        }
        Value::Bin(bytes) => {
            encode_len(out, "binary", bytes.len(), None, 0, [0xc4, 0xc5, 0xc6])?;
            out.extend_from_slice(bytes);
        }
        Value::Array(items) => {
            encode_len(out, "array", items.len(), Some(0x90), 15, [0, 0xdc, 0xdd])?;
            for item in items {
                encode(item, out)?;
            }
        }
        Value::Map(entries) => {
            encode_len(out, "map", entries.len(), Some(0x80), 15, [0, 0xde, 0xdf])?;
            for (key, item) in entries {
                encode(&Value::Str(key.clone()), out)?;
                encode(item, out)?;
            }
        }
    }
    Ok(())
}

fn encode_uint(number: u64, out: &mut Vec<u8>) {
    if number < 0x80 {
        out.push(number as u8);
    } else if let Ok(number) = u8::try_from(number) {
        out.extend_from_slice(&[0xcc, number]);
    } else if let Ok(number) = u16::try_from(number) {
        out.push(0xcd);
        out.extend_from_slice(&number.to_be_bytes());
    } else if let Ok(number) = u32::try_from(number) {
        out.push(0xce);
        out.extend_from_slice(&number.to_be_bytes());
    } else {
        out.push(0xcf);
        out.extend_from_slice(&number.to_be_bytes());
    }
}

fn encode_negative(number: i64, out: &mut Vec<u8>) {
    if number >= -32 {
        out.push(number as i8 as u8);
    } else if let Ok(number) = i8::try_from(number) {
        out.extend_from_slice(&[0xd0, number as u8]);
    } else if let Ok(number) = i16::try_from(number) {
        out.push(0xd1);
        out.extend_from_slice(&number.to_be_bytes());
    } else if let Ok(number) = i32::try_from(number) {
        out.push(0xd2);
        out.extend_from_slice(&number.to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&number.to_be_bytes());
    }
}

/// Writes a length in the smallest form: the fix form (`fix` | len, up to `fix_max`) when
/// the type has one, else the 8-, 16- or 32-bit form (`wide`; 0 where the type has none).
fn encode_len(
    out: &mut Vec<u8>,
    kind: &'static str,
    len: usize,
    fix: Option<u8>,
    fix_max: usize,
    wide: [u8; 3],
) -> Result<(), EncodeError> {
    match (fix, len) {
        (Some(fix), len) if len <= fix_max => out.push(fix | len as u8),
        (_, len) if wide[0] != 0 && len <= 0xff => out.extend_from_slice(&[wide[0], len as u8]),
        (_, len) if len <= 0xffff => {
            out.push(wide[1]);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        (_, len) => {
            let len32 = u32::try_from(len).map_err(|_| EncodeError { kind, len })?;
            out.push(wide[2]);
            out.extend_from_slice(&len32.to_be_bytes());
        }
    }
    Ok(())
}

/// Why bytes did not decode, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub at: usize,
    pub reason: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "MessagePack at byte {}: {}", self.at, self.reason)
    }
}

/// Decodes `bytes` as exactly one value, with nothing after it.
pub fn decode(bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut reader = Reader { bytes, at: 0 };
    let value = reader.value(0)?;
    if reader.at != bytes.len() {
        return Err(DecodeError { at: reader.at, reason: "bytes follow the value" });
    }
    Ok(value)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn fail<T>(&self, reason: &'static str) -> Result<T, DecodeError> {
        Err(DecodeError { at: self.at, reason })
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        if len > self.bytes.len() - self.at {
            return self.fail("a length runs past the end of the input");
        }
        let taken = &self.bytes[self.at..self.at + len];
        self.at += len;
        Ok(taken)
    }

    fn uint(&mut self, width: usize) -> Result<u64, DecodeError> {
        Ok(self.take(width)?.iter().fold(0u64, |number, &byte| (number << 8) | u64::from(byte)))
    }

    fn len(&mut self, width: usize) -> Result<usize, DecodeError> {
        let len = self.uint(width)?;
        usize::try_from(len).or_else(|_| self.fail("a length beyond this machine's memory"))
    }

    fn value(&mut self, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return self.fail("nested deeper than the formats allow");
        }
        let marker = self.take(1)?[0];
        match marker {
            0x00..=0x7f => Ok(Value::UInt(u64::from(marker))),
            0x80..=0x8f => self.map(usize::from(marker & 0x0f), depth),
            0x90..=0x9f => self.array(usize::from(marker & 0x0f), depth),
            0xa0..=0xbf => self.string(usize::from(marker & 0x1f)),
            0xc0 => Ok(Value::Nil),
            0xc2 => Ok(Value::Bool(false)),
            0xc3 => Ok(Value::Bool(true)),
            0xc4..=0xc6 => {
                let len = self.len(1 << (marker - 0xc4))?;
                Ok(Value::Bin(self.take(len)?.to_vec()))
            }
            0xca => Ok(Value::Float(f64::from(f32::from_bits(self.uint(4)? as u32)))),
            0xcb => Ok(Value::Float(f64::from_bits(self.uint(8)?))),
            0xcc..=0xcf => Ok(Value::UInt(self.uint(1 << (marker - 0xcc))?)),
            0xd0..=0xd3 => {
                let width = 1 << (marker - 0xd0);
                let raw = self.uint(width)?;
                let shift = 64 - 8 * width as u32;
                let number = ((raw << shift) as i64) >> shift;
                Ok(match u64::try_from(number) {
                    Ok(number) => Value::UInt(number),
                    Err(_) => Value::Int(number),
                })
            }
            0xd9..=0xdb => {
                let len = self.len(1 << (marker - 0xd9))?;
                self.string(len)
            }
            0xdc | 0xdd => {
                let len = self.len(2 << (marker - 0xdc))?;
                self.array(len, depth)
            }
            0xde | 0xdf => {
                let len = self.len(2 << (marker - 0xde))?;
                self.map(len, depth)
            }
            0xe0..=0xff => Ok(Value::Int(i64::from(marker as i8))),
            _ => self.fail("an extension type or reserved marker, which the formats do not use"),
        }
    }

    fn string(&mut self, len: usize) -> Result<Value, DecodeError> {
        let at = self.at;
        let bytes = self.take(len)?;
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(Value::Str(text.to_owned())),
            Err(_) => Err(DecodeError { at, reason: "a string that is not UTF-8" }),
        }
    }

    fn array(&mut self, len: usize, depth: usize) -> Result<Value, DecodeError> {
        // Every element takes at least one byte.
        if len > self.bytes.len() - self.at {
            return self.fail("an array claims more elements than bytes follow");
        }
        let mut items = Vec::with_capacity(len.min(MAX_RESERVE));
        for _ in 0..len {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, len: usize, depth: usize) -> Result<Value, DecodeError> {
        // Every entry takes at least two bytes.
        if len > (self.bytes.len() - self.at) / 2 {
            return self.fail("a map claims more entries than bytes follow");
        }
        let mut entries = Vec::with_capacity(len.min(MAX_RESERVE));
        for _ in 0..len {
            let key = match self.value(depth + 1)? {
                Value::Str(key) => key,
                _ => return self.fail("a map key that is not a string"),
            };
            entries.push((key, self.value(depth + 1)?));
        }
        Ok(Value::Map(entries))
    }
}

#[cfg(test)]
mod tests;
