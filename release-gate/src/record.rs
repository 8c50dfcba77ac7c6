//! RECORD (PEP 376 / the binary distribution format): a CSV of `path,sha256=…,size` that
//! must list every member of a wheel with its real hash and size, and itself without one.
//!
//! Owns: parsing RECORD and comparing it with the digests measured while streaming.
//! Does not own: streaming the members (`archive`).

use std::collections::BTreeMap;

use base64::Engine;

use super::report::{Check, Findings};

/// What streaming measured for one wheel member.
#[derive(Clone, Debug)]
pub(crate) struct MemberDigest {
    pub size: u64,
    pub sha256: [u8; 32],
}

/// One CSV line; quotes and doubled quotes as Python's `csv` module writes them.
fn parse_csv_line(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// Compares RECORD with the members. `record_path` is `{dist-info}/RECORD`.
pub(crate) fn check_record(
    file: &str,
    record_path: &str,
    record: &str,
    members: &BTreeMap<String, MemberDigest>,
    findings: &mut Findings,
) {
    let mut listed: BTreeMap<String, (String, String)> = BTreeMap::new();
    for line in record.lines().filter(|line| !line.trim().is_empty()) {
        let fields = parse_csv_line(line);
        let [path, hash, size] = fields.as_slice() else {
            findings.violation(
                file,
                Some(record_path),
                Check::Record,
                format!("RECORD line `{line}` does not have 3 fields"),
            );
            continue;
        };
        if listed.insert(path.clone(), (hash.clone(), size.clone())).is_some() {
            findings.violation(file, Some(path), Check::Record, "listed twice in RECORD");
        }
    }
    for (path, digest) in members {
        let Some((hash, size)) = listed.get(path) else {
            findings.violation(file, Some(path), Check::Record, "not listed in RECORD");
            continue;
        };
        if path == record_path || is_signature(path, record_path) {
            if !hash.is_empty() || !size.is_empty() {
                findings.violation(file, Some(path), Check::Record, "RECORD lists itself with a hash or size");
            }
            continue;
        }
        check_entry(file, path, hash, size, digest, findings);
    }
    for path in listed.keys().filter(|path| !members.contains_key(*path)) {
        findings.violation(file, Some(path), Check::Record, "listed in RECORD but not in the wheel");
    }
}

fn is_signature(path: &str, record_path: &str) -> bool {
    path.strip_prefix(record_path).is_some_and(|suffix| suffix == ".jws" || suffix == ".p7s")
}

fn check_entry(file: &str, path: &str, hash: &str, size: &str, digest: &MemberDigest, findings: &mut Findings) {
    let actual = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.sha256);
    match hash.split_once('=') {
        Some(("sha256", recorded)) if recorded == actual => {}
        Some(("sha256", recorded)) => findings.violation(
            file,
            Some(path),
            Check::Record,
            format!("RECORD hash sha256={recorded} does not match the member's sha256={actual}"),
        ),
        _ => findings.violation(
            file,
            Some(path),
            Check::Record,
            format!("RECORD hash `{hash}` is not `sha256=<urlsafe base64>`"),
        ),
    }
    if size.parse::<u64>().ok() != Some(digest.size) {
        findings.violation(
            file,
            Some(path),
            Check::Record,
            format!("RECORD size `{size}` does not match the member's {} bytes", digest.size),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes() {
        assert_eq!(parse_csv_line("a,b,1"), ["a", "b", "1"]);
        assert_eq!(parse_csv_line("\"a,\"\"b\",sha256=x,2"), ["a,\"b", "sha256=x", "2"]);
        assert_eq!(parse_csv_line("x.dist-info/RECORD,,"), ["x.dist-info/RECORD", "", ""]);
    }
}
