//! The bytes of the `.rocm_kpack_ref` marker: one MessagePack map
//! `{kpack_search_paths: [str…], kernel_name: str}`, keys in that order, encoded as Python's
//! `msgpack.packb(…, use_bin_type=True)` does (the crate's `msgpack`), which is what the
//! kpack runtime parses.
//!
//! Owns: the marker's shape. Must not know: where the marker goes in the file, or what the
//! paths mean.

use crate::host::KpackRef;
use crate::msgpack::{self, EncodeError, Value};

/// The marker's bytes for `reference`.
pub(crate) fn encode(reference: &KpackRef) -> Result<Vec<u8>, EncodeError> {
    let paths = reference.search_paths.iter().map(|path| Value::str(path)).collect();
    let marker =
        Value::map([("kpack_search_paths", Value::Array(paths)), ("kernel_name", Value::str(&reference.kernel_name))]);
    let mut out = Vec::new();
    msgpack::encode(&marker, &mut out)?;
    Ok(out)
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
        assert_eq!(hex(&encode(&reference).expect("encode")), expect, "{reference:?}");
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
            let encoded = hex(&encode(&reference).expect("encode"));
            assert!(encoded.starts_with(&format!("{prefix}{start}")), "{encoded}");
            assert!(encoded.ends_with("ab6b65726e656c5f6e616d65a16b"), "{encoded}");
        }
    }
}
