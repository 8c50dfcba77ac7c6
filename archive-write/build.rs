//! Records the versions of the deflate crates this build links (libdeflater and the
//! libdeflate C library its `libdeflate-sys` builds), read from the workspace's Cargo.lock: they are part of the codec
//! fingerprint stored in every wheel (`codec`), so wheels written by another compressor
//! version are never taken as copies of what this one would write (SPEC §8).

use std::path::Path;

fn main() {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let version = |name: &str| -> String {
        let needle = format!("name = \"{name}\"\nversion = \"");
        text.find(&needle)
            .and_then(|at| {
                let rest = &text[at + needle.len()..];
                rest.find('"').map(|end| rest[..end].to_owned())
            })
            // Unknown versions give a fingerprint of their own ("unknown" plus the probe in
            // `codec`); the probe still tells compressors apart.
            .unwrap_or_else(|| "unknown".to_owned())
    };
    println!(
        "cargo:rustc-env=ARCHIVE_WRITE_CODEC=libdeflater {} libdeflate-sys {}",
        version("libdeflater"),
        version("libdeflate-sys")
    );
}
