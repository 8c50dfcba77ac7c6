//! RECORD (PEP 376 / the binary distribution format): one CSV line per member with its
//! sha256 (urlsafe base64, no padding) and size; RECORD itself last with empty fields.
//!
//! Owns: RECORD's spelling, and reading it back from an earlier wheel (`previous`). Does not own: hashing the bytes (the writers do it while
//! streaming) or member order (`wheel`).

use base64::Engine;

/// `sha256=<urlsafe base64 without padding>` of a digest.
pub fn record_hash(digest: &[u8]) -> String {
    format!("sha256={}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest))
}

/// Lowercase hex of a digest, for `WrittenFile::sha256`.
pub fn hex(digest: &[u8]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Quotes a CSV field the way Python's `csv` module reads it back.
fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

/// RECORD lines in archive order.
#[derive(Default)]
pub struct Record {
    text: String,
}

impl Record {
    pub fn add(&mut self, name: &str, digest: &[u8], size: u64) {
        self.text.push_str(&format!("{},{},{size}\n", csv_field(name), record_hash(digest)));
    }

    /// The final text, with the line for RECORD itself at `record_name`.
    pub fn finish(mut self, record_name: &str) -> Vec<u8> {
        self.text.push_str(&format!("{},,\n", csv_field(record_name)));
        self.text.into_bytes()
    }
}

/// One RECORD line read back: the member's sha256 and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLine {
    pub sha256: [u8; 32],
    pub size: u64,
}

/// Reads RECORD text back, name → line. Lines without a sha256 or size (RECORD's own,
/// or another tool's) are left out; `None` when the text is not RECORD at all (bad
/// quoting, a name twice), so the wheel it came from is not trusted.
pub fn parse_record(text: &str) -> Option<std::collections::BTreeMap<String, RecordLine>> {
    let mut lines = std::collections::BTreeMap::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (fields, after) = csv_line(rest)?;
        rest = after;
        let [name, hash, size] = <[String; 3]>::try_from(fields).ok()?;
        let Some(encoded) = hash.strip_prefix("sha256=") else { continue };
        let Ok(size) = size.parse::<u64>() else { continue };
        let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded).ok()?;
        let sha256 = <[u8; 32]>::try_from(decoded).ok()?;
        if lines.insert(name, RecordLine { sha256, size }).is_some() {
            return None;
        }
    }
    Some(lines)
}

/// The fields of the first CSV line of `text` (Python's `csv` dialect as [`csv_field`]
/// writes it) and the text after it.
fn csv_line(text: &str) -> Option<(Vec<String>, &str)> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = text.char_indices().peekable();
    let mut quoted = false;
    let mut at_field_start = true;
    while let Some((at, c)) = chars.next() {
        match c {
            '"' if quoted => {
                if chars.peek().map(|&(_, next)| next) == Some('"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            }
            '"' if at_field_start => quoted = true,
            ',' if !quoted => {
                fields.push(std::mem::take(&mut field));
                at_field_start = true;
                continue;
            }
            '\n' if !quoted => {
                fields.push(field);
                return Some((fields, &text[at + 1..]));
            }
            '\r' if !quoted && chars.peek().map(|&(_, next)| next) == Some('\n') => {}
            _ => field.push(c),
        }
        at_field_start = false;
    }
    if quoted {
        return None;
    }
    fields.push(field);
    Some((fields, ""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    #[test]
    fn spells_hashes_and_quotes_commas() {
        let mut record = Record::default();
        record.add("a,b.txt", &sha2::Sha256::digest(b""), 0);
        let text = String::from_utf8(record.finish("x-1.dist-info/RECORD")).expect("utf-8");
        assert_eq!(text, "\"a,b.txt\",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\nx-1.dist-info/RECORD,,\n");
    }

    #[test]
    fn reads_back_what_it_writes() {
        let mut record = Record::default();
        let names = ["plain.py", "a,b.txt", "say \"hi\".txt", "dir/ünï.so"];
        for (size, name) in names.iter().enumerate() {
            record.add(name, &sha2::Sha256::digest(name.as_bytes()), size as u64);
        }
        let text = String::from_utf8(record.finish("x-1.dist-info/RECORD")).expect("utf-8");
        let lines = parse_record(&text).expect("parses");
        assert_eq!(lines.len(), names.len(), "{lines:?}");
        for (size, name) in names.iter().enumerate() {
            let line = lines[*name];
            assert_eq!(
                (line.sha256, line.size),
                (<[u8; 32]>::from(sha2::Sha256::digest(name.as_bytes())), size as u64)
            );
        }
    }

    #[test]
    fn refuses_what_is_not_record() {
        assert_eq!(parse_record("\"open quote,sha256=x,1\n"), None);
        assert_eq!(parse_record("a,sha256=!!,1\n"), None);
        let twice = "a,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n";
        assert_eq!(parse_record(&format!("{twice}{twice}")), None);
        assert_eq!(parse_record("a,b\n"), None);
    }
}
