//! The codec fingerprint (SPEC §8): a 32-bit name for "these bytes coded this way give
//! exactly these coded bytes", stored with every wheel member (`zip`'s extra field). A
//! later run copies a member's coded bytes only when its own fingerprint for the member's
//! coding is the same, so the output stays what a cold run writes.
//!
//! Owns: what goes into the fingerprint: the coding and level, the chunking constants and
//! the store rule, the versions of the deflate crates linked (libdeflate, from Cargo.lock,
//! `build.rs`), and the bytes the compressor actually makes of a fixed probe, as a chunk
//! that ends its member and as one made continuable (a compressor that codes differently
//! under the same version numbers still gets another fingerprint). Does not own: where
//! the fingerprint is written (`zip`) or read back (`previous`).

use std::sync::OnceLock;

use super::chunk::{code_first_chunk, Coding, CHUNK_SIZE, MIN_GAIN_DIVISOR};

/// Bump when the way members are cut, coded, joined or ended changes.
const LAYOUT_VERSION: u32 = 3;
/// The deflate crates linked, as `build.rs` read them from Cargo.lock.
const CODEC_VERSIONS: &str = env!("ARCHIVE_WRITE_CODEC");
/// Bytes of the probe coded once per level per process (about a millisecond at level 9).
const PROBE_LEN: usize = 64 * 1024;

/// The fingerprint of `coding` in this build, for wheels of `generator` (its name). Computed
/// once per coding and process (a process has one generator; another one's is computed anew).
pub fn fingerprint(coding: Coding, generator: &str) -> u32 {
    static STORED: OnceLock<(String, u32)> = OnceLock::new();
    static DEFLATE: [OnceLock<(String, u32)>; 10] = [const { OnceLock::new() }; 10];
    let coding = match coding {
        Coding::Stored => Coding::Stored,
        Coding::Deflate { level } => Coding::Deflate { level: level.min(9) },
    };
    let slot = match coding {
        Coding::Stored => &STORED,
        Coding::Deflate { level } => &DEFLATE[level as usize],
    };
    let (first_generator, value) = slot.get_or_init(|| (generator.to_owned(), compute(coding, generator)));
    if first_generator == generator {
        *value
    } else {
        compute(coding, generator)
    }
}

/// The fingerprint of a member whose coded bytes another writer made and a rewrite copied
/// (`existing`): no coding of this writer has it, so a later run never takes those bytes
/// for its own coding's.
pub fn foreign_fingerprint(generator: &str) -> u32 {
    crc32fast::hash(format!("{generator} archive-write: coded bytes copied from another writer's archive").as_bytes())
}

fn compute(coding: Coding, generator: &str) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    let settings = format!(
        "{generator} archive-write layout {LAYOUT_VERSION}, chunk {CHUNK_SIZE}, stored below 1/{MIN_GAIN_DIVISOR}, \
         {CODEC_VERSIONS}, {coding:?}"
    );
    crc.update(settings.as_bytes());
    // A probe that cannot be coded gives a fingerprint no coded member can have.
    for last in [true, false] {
        match code_first_chunk(probe(), coding, last) {
            Ok(chunk) => crc.update(&chunk.data),
            Err(error) => crc.update(error.to_string().as_bytes()),
        }
    }
    crc.finalize()
}

/// Text and noise in alternating runs, like a library's string tables and code, so the
/// probe exercises literals, matches and the dictionary.
fn probe() -> Vec<u8> {
    let mut state: u64 = 0x5EED_C0DE;
    let mut out = Vec::with_capacity(PROBE_LEN);
    while out.len() < PROBE_LEN {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let noise = state >> 61 == 0;
        for i in 0..(64 + (state >> 54) as usize).min(PROBE_LEN - out.len()) {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            out.push(if noise { (state >> 56) as u8 } else { b"hipModuleLaunchKernel rocblas_gemm_ex "[i % 38] });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_coding_has_its_own_fingerprint_and_keeps_it() {
        let mut seen = std::collections::BTreeSet::new();
        assert!(seen.insert(fingerprint(Coding::Stored, "a")));
        for level in 0..=9 {
            assert!(seen.insert(fingerprint(Coding::Deflate { level }, "a")), "level {level} repeats a fingerprint");
            assert_eq!(fingerprint(Coding::Deflate { level }, "a"), compute(Coding::Deflate { level }, "a"));
        }
        assert!(seen.insert(fingerprint(Coding::Stored, "b")), "another generator, another fingerprint");
    }

    #[test]
    fn the_codec_versions_were_found_in_the_lock_file() {
        assert!(!CODEC_VERSIONS.contains("unknown"), "{CODEC_VERSIONS}");
        assert!(
            CODEC_VERSIONS.starts_with("libdeflater 1.") && CODEC_VERSIONS.contains("libdeflate-sys 1."),
            "{CODEC_VERSIONS}"
        );
    }
}
