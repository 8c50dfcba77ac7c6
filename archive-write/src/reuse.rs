//! Per member, whether the previous wheel's coded bytes can stand in for coding it again
//! (SPEC §8). The new bytes are read and hashed in full first (a changed byte is never
//! missed, whatever the file's size or time stamp says); only a member whose digest is the
//! old one is copied, any other is read again and coded. Nothing of a member is held: a
//! miss costs one extra read and hash, about a twentieth of deflating it.
//!
//! Owns: that decision and the counts of what was reused and what was coded. Does not
//! own: what is trustworthy in an old wheel (`previous`), the pipeline (`deflate`).

use std::io::Read;

use sha2::{Digest, Sha256};

use super::deflate::{CodedSource, MemberDigest, CHUNK_SIZE};
use super::previous::Previous;
use super::zip::{EntryHeader, EntrySums};

/// Bytes of a wheel's members whose coded form was copied, and bytes coded by this run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReuseCounts {
    pub reused_members: u64,
    pub reused_bytes: u64,
    pub compressed_members: u64,
    pub compressed_bytes: u64,
}

impl ReuseCounts {
    pub fn add_reused(&mut self, bytes: u64) {
        self.reused_members += 1;
        self.reused_bytes += bytes;
    }

    pub fn add_compressed(&mut self, bytes: u64) {
        self.compressed_members += 1;
        self.compressed_bytes += bytes;
    }

    /// These counts plus `other`'s.
    pub fn plus(self, other: ReuseCounts) -> ReuseCounts {
        ReuseCounts {
            reused_members: self.reused_members + other.reused_members,
            reused_bytes: self.reused_bytes + other.reused_bytes,
            compressed_members: self.compressed_members + other.compressed_members,
            compressed_bytes: self.compressed_bytes + other.compressed_bytes,
        }
    }
}

/// A member to copy: its final sums, where its coded bytes come from, and its digest.
pub struct Copy {
    pub sums: EntrySums,
    pub source: Box<dyn CodedSource>,
    pub digest: MemberDigest,
}

/// Decides whether `header`'s member can be copied from `previous`. `open` yields the new
/// bytes (called only when the old wheel has a candidate, so a cold run reads nothing
/// twice); its errors are the caller's to map. `Ok(None)` means: code it.
pub fn try_copy<'a, E>(
    previous: Option<&Previous>,
    header: &EntryHeader,
    known_len: Option<u64>,
    open: impl FnOnce() -> Result<Box<dyn Read + Send + 'a>, E>,
    read_error: impl Fn(std::io::Error) -> E,
) -> Result<Option<Copy>, E> {
    let Some(previous) = previous else { return Ok(None) };
    let Some(candidate) = previous.candidate(&header.name, header.fingerprint, header.method) else { return Ok(None) };
    if known_len.is_some_and(|len| len != candidate.size()) {
        return Ok(None);
    }
    let (digest, crc) = hash_all(open()?, candidate.size()).map_err(read_error)?;
    if !candidate.matches(&digest, crc) {
        return Ok(None);
    }
    Ok(previous.verified_copy(&candidate).map(|(sums, source)| Copy { sums, source, digest }))
}

/// Reads `reader` to its end: its RECORD digest and CRC-32. `expected` sizes the buffer,
/// so thousands of small members do not each get a chunk-sized one.
fn hash_all(mut reader: impl Read, expected: u64) -> std::io::Result<(MemberDigest, u32)> {
    let mut sha256 = Sha256::new();
    let mut crc = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; usize::try_from(expected.saturating_add(1)).unwrap_or(CHUNK_SIZE).min(CHUNK_SIZE)];
    let mut len = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        sha256.update(&buffer[..n]);
        crc.update(&buffer[..n]);
        len += n as u64;
    }
    Ok((MemberDigest { sha256: sha256.finalize().into(), len }, crc.finalize()))
}
