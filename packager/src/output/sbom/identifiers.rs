//! The identifiers a bill of materials gives: package URLs (purl spec: `pkg:pypi/…`,
//! `pkg:generic/…`, percent-encoded), requirements read back into a name and an exact
//! version, and a serial number derived from the document's own bytes.
//!
//! Owns: their spelling. Does not own: which component gets which (`document`).

use sha2::{Digest, Sha256};

use archive_write::normalize;

/// Percent-encodes what the purl spec does not let stand in a name, version or qualifier
/// value: everything but ASCII letters, digits and `.-_~`.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// `pkg:pypi/{name}@{version}`: the purl spec's pypi names are PEP 503 normalised (lower
/// case, `-` for every run of `-_.`), whatever spelling METADATA's `Name` keeps.
pub fn pypi_purl(name: &str, version: Option<&str>, file_name: Option<&str>) -> String {
    let mut purl = format!("pkg:pypi/{}", percent_encode(&normalize(name)));
    if let Some(version) = version {
        purl.push('@');
        purl.push_str(&percent_encode(version));
    }
    if let Some(file_name) = file_name {
        purl.push_str("?file_name=");
        purl.push_str(&percent_encode(file_name));
    }
    purl
}

/// `pkg:generic/{name}@{version}`: a project known by the name and version of its source
/// archive, in no package registry.
pub fn generic_purl(name: &str, version: &str) -> String {
    format!("pkg:generic/{}@{}", percent_encode(name), percent_encode(version))
}

/// A `Requires-Dist` line read back: the distribution, and its version when the line pins
/// exactly one (`==7.12.0.dev0`; not `>=7.12.0,<7.12.0.0.1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub name: String,
    pub exact_version: Option<String>,
}

pub fn parse_requirement(line: &str) -> Requirement {
    let line = line.trim();
    let end = line.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))).unwrap_or(line.len());
    let (name, rest) = line.split_at(end);
    let rest = rest.trim();
    let exact_version = rest
        .strip_prefix("==")
        .map(str::trim)
        .filter(|version| !version.is_empty() && !version.contains(['*', ',', ';', ' ', '[', '=']))
        .map(str::to_owned);
    Requirement { name: name.to_owned(), exact_version }
}

/// A UUID made from the SHA-256 of `content` (version 8, RFC 9562's custom form, with its
/// variant bits), as `urn:uuid:…`, all lower case: the same document always gets the same
/// serial number, and another document another one.
pub fn serial_number(content: &[u8]) -> String {
    let digest = Sha256::digest(content);
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("urn:uuid:{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purls() {
        let file = "rocm_sdk_libraries_gfx110x_all-7.12.0.dev0+local-py3-none-linux_x86_64.whl";
        assert_eq!(
            pypi_purl("rocm-sdk-libraries-gfx110X-all", Some("7.12.0.dev0+local"), Some(file)),
            "pkg:pypi/rocm-sdk-libraries-gfx110x-all@7.12.0.dev0%2Blocal?file_name=\
             rocm_sdk_libraries_gfx110x_all-7.12.0.dev0%2Blocal-py3-none-linux_x86_64.whl"
        );
        assert_eq!(pypi_purl("Rocm_SDK.core", None, None), "pkg:pypi/rocm-sdk-core");
        assert_eq!(generic_purl("util-linux", "2.42.1"), "pkg:generic/util-linux@2.42.1");
        assert_eq!(percent_encode("a b/c:d"), "a%20b%2Fc%3Ad");
    }

    #[test]
    fn requirements() {
        let check = |line: &str, name: &str, version: Option<&str>| {
            assert_eq!(
                parse_requirement(line),
                Requirement { name: name.into(), exact_version: version.map(Into::into) }
            );
        };
        check("rocm-sdk-core==7.12.0.dev0", "rocm-sdk-core", Some("7.12.0.dev0"));
        check("rocm-sdk-libraries>=7.12.0,<7.12.0.0.1", "rocm-sdk-libraries", None);
        check("rocm-sdk-libraries==7.12.*", "rocm-sdk-libraries", None);
        check("numpy", "numpy", None);
        check("torch == 2.9.0 ; sys_platform == 'linux'", "torch", None);
    }

    #[test]
    fn serial_numbers_come_from_the_content() {
        let serial = serial_number(b"{}");
        assert_eq!(serial, serial_number(b"{}"));
        assert_ne!(serial, serial_number(b"{ }"));
        let uuid = serial.strip_prefix("urn:uuid:").expect("a urn");
        let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        assert!(uuid.bytes().all(|byte| byte == b'-' || byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)));
        assert_eq!(&uuid[14..15], "8", "version 8");
        assert!(matches!(&uuid[19..20], "8" | "9" | "a" | "b"), "the RFC variant");
    }
}
