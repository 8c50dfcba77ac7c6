//! The bytes of the `.rocm_kpack_ref` marker: one MessagePack map
//! `{kpack_search_paths: [str…], kernel_name: str}`, keys in that order, encoded as Python's
//! `msgpack.packb(…, use_bin_type=True)` does (the smallest str and array forms), which is
//! what the kpack runtime parses.
//!
//! Owns: that one encoding. Must not know: where the marker goes in the file, or what the
//! paths mean. A local encoder of the three forms the marker needs, kept apart so that it
//! can give way to the crate's MessagePack module without touching the transform.

use crate::host::KpackRef;

/// The marker's bytes for `reference`.
pub(crate) fn encode(reference: &KpackRef) -> Vec<u8> {
    let mut out = Vec::new();
    out.push(0x82); // a map of two entries
    string(&mut out, "kpack_search_paths");
    array_header(&mut out, reference.search_paths.len());
    for path in &reference.search_paths {
        string(&mut out, path);
    }
    string(&mut out, "kernel_name");
    string(&mut out, &reference.kernel_name);
    out
}

fn string(out: &mut Vec<u8>, text: &str) {
    let len = text.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if let Ok(len) = u8::try_from(len) {
        out.extend([0xd9, len]);
    } else if let Ok(len) = u16::try_from(len) {
        out.push(0xda);
        out.extend(len.to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend(u32::try_from(len).expect("a marker string is far below 4 GiB").to_be_bytes());
    }
    out.extend(text.as_bytes());
}

fn array_header(out: &mut Vec<u8>, len: usize) {
    if len < 16 {
        out.push(0x90 | len as u8);
    } else if let Ok(len) = u16::try_from(len) {
        out.push(0xdc);
        out.extend(len.to_be_bytes());
    } else {
        out.push(0xdd);
        out.extend(u32::try_from(len).expect("a marker has far fewer than 2^32 paths").to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    fn check(paths: &[&str], name: &str, expect: &str) {
        let reference = KpackRef {
            search_paths: paths.iter().map(|path| (*path).to_owned()).collect(),
            kernel_name: name.to_owned(),
        };
        assert_eq!(hex(&encode(&reference)), expect, "{reference:?}");
    }

    /// Expected bytes as `msgpack.packb(m, use_bin_type=True).hex()` prints them.
    #[test]
    fn encodes_as_python_msgpack_packb() {
        check(
            &["../.kpack/torch_@GFXARCH@.kpack"],
            "lib/libtorch_hip.so",
            "82b26b7061636b5f7365617263685f706174687391bf2e2e2f2e6b7061636b2f746f7263685f4047465841524348402e6b7061636b\
             ab6b65726e656c5f6e616d65b36c69622f6c6962746f7263685f6869702e736f",
        );
        check(&[], "", "82b26b7061636b5f7365617263685f706174687390ab6b65726e656c5f6e616d65a0");
    }

    /// Each form starts where Python's does: fixstr up to 31 bytes, str8 to 255, str16
    /// beyond; fixarray up to 15 entries, array16 beyond.
    #[test]
    fn switches_forms_at_msgpack_boundaries() {
        let prefix = "82b26b7061636b5f7365617263685f7061746873";
        let cases: Vec<(Vec<String>, &str)> = vec![
            (vec!["a".repeat(31)], "91bf61"),
            (vec!["a".repeat(32)], "91d92061"),
            (vec!["a".repeat(255)], "91d9ff61"),
            (vec!["a".repeat(256)], "91da010061"),
            (vec![String::new(); 15], "9fa0"),
            (vec![String::new(); 16], "dc0010a0"),
        ];
        for (paths, start) in cases {
            let reference = KpackRef { search_paths: paths, kernel_name: "k".to_owned() };
            let encoded = hex(&encode(&reference));
            assert!(encoded.starts_with(&format!("{prefix}{start}")), "{encoded}");
            assert!(encoded.ends_with("ab6b65726e656c5f6e616d65a16b"), "{encoded}");
        }
    }
}
