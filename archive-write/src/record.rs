//! RECORD (PEP 376 / the binary distribution format): one CSV line per member with its
//! sha256 (urlsafe base64, no padding) and size; RECORD itself last with empty fields.
//!
//! Owns: RECORD's spelling. Does not own: hashing the bytes (the writers do it while
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
}
