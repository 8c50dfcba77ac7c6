//! An output's sha256 and CRC-32, taken as it is written (SPEC §8): a rerun that copies
//! most of a wheel need not read it back to hash it, and one whose wheel comes out as the
//! old file, whose sums an earlier run recorded, need not hash it at all.
//!
//! Owns: [`HashingWriter`], what it saw ([`Hashed`], [`HashedSoFar`]), a file's sums
//! ([`FileSums`]). Does not own: staging and placing the file (`atomic`), where recorded
//! sums come from (`identity`).

use std::fs::File;
use std::io::{self, SeekFrom};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// A file's (or member's) length, sha256 and CRC-32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSums {
    pub len: u64,
    pub sha256: [u8; 32],
    pub crc: u32,
}

/// Hashes what passes through it, as long as it is written in order. The first seek stops
/// the hash there: a writer seeks before it writes what it will patch (`zip` does, before
/// a header completed later), so the bytes before stay final and only the rest is read
/// back ([`HashedSoFar::Prefix`]); a write into them after all drops the hash.
///
/// Given the file its output will replace, it also tells whether every byte written is
/// that file's byte at the same offset (then `AtomicFile::keep_previous` applies), and
/// while that holds it writes nothing: the bytes are the old file's, copied into the temp
/// file only once the output departs from it (or, at the end, if the old file cannot be
/// kept after all: [`Hashed::deferred`]). Given that file's recorded sums too, it computes
/// only the CRC-32 while that holds (a sixth of the sha256's time): an output that comes
/// out as the old file, with the recorded length and CRC-32, has the recorded sha256; one
/// that departs hashes the old bytes as it copies them.
pub struct HashingWriter<W: io::Write> {
    inner: W,
    /// The hash of the first `len` bytes; `None` once a write changed one of them.
    hasher: Option<Sha256>,
    /// The CRC-32 of the first `len` bytes, as long as `hasher` is kept.
    crc: crc32fast::Hasher,
    len: u64,
    /// Whether every byte so far was written in order (no seek yet): `len` then grows.
    in_order: bool,
    /// Where the next byte goes.
    position: u64,
    /// The file being replaced, while everything written so far equals its start.
    same_as: Option<Arc<File>>,
    /// Bytes written so far but not passed on to `inner`: the replaced file's first ones.
    deferred: u64,
    /// The replaced file's recorded sums, while its bytes written so far are not hashed.
    recorded: Option<FileSums>,
    scratch: Vec<u8>,
}

/// How much of a file its writer hashed.
pub enum HashedSoFar {
    Nothing,
    /// The sums of the first bytes, which are final, and how many they are.
    Prefix(Sha256, crc32fast::Hasher, u64),
    /// The sums of the whole file.
    Whole(FileSums),
}

/// What a [`HashingWriter`] saw: the sums of everything written if it never seeked, else
/// of what came before the first seek; and whether it is exactly the replaced file's content.
pub struct Hashed {
    pub digest: HashedSoFar,
    pub same_as_previous: bool,
    /// With `same_as_previous`: how many of the replaced file's bytes the temp file still
    /// lacks, and that file (`AtomicFile::fill_from` copies them before staging it).
    pub deferred: Option<(Arc<File>, u64)>,
}

impl<W: io::Write> HashingWriter<W> {
    /// A writer into `inner` of the output that replaces `replaced` (if any), whose sums
    /// an earlier run recorded as `recorded` (if it did).
    pub fn new(inner: W, replaced: Option<Arc<File>>, recorded: Option<FileSums>) -> HashingWriter<W> {
        HashingWriter {
            inner,
            hasher: Some(Sha256::new()),
            crc: crc32fast::Hasher::new(),
            len: 0,
            in_order: true,
            position: 0,
            recorded: recorded.filter(|_| replaced.is_some()),
            same_as: replaced,
            deferred: 0,
            scratch: Vec::new(),
        }
    }

    /// The inner writer, complete unless the output is exactly the replaced file.
    pub fn into_parts(mut self) -> io::Result<(W, Hashed)> {
        let len = self.len;
        let same_len = self.same_as.as_ref().and_then(|file| file.metadata().ok()).is_some_and(|old| old.len() == len);
        let same_as_previous = same_len && self.in_order && self.hasher.is_some();
        if !same_as_previous {
            self.write_deferred()?;
        }
        let digest = match (self.in_order, self.hasher.take()) {
            (true, Some(mut hasher)) => {
                let crc = self.crc.clone().finalize();
                let sha256 = match (self.recorded.take(), &self.same_as) {
                    (Some(recorded), _) if recorded.len == len && recorded.crc == crc => recorded.sha256,
                    // The old file's bytes, but not the recorded ones: hashed from it now.
                    (Some(_), Some(old)) => {
                        copy_start(old, len, &mut io::sink(), Some(&mut hasher))?;
                        hasher.finalize().into()
                    }
                    _ => hasher.finalize().into(),
                };
                HashedSoFar::Whole(FileSums { len, sha256, crc })
            }
            (false, Some(hasher)) => HashedSoFar::Prefix(hasher, self.crc.clone(), len),
            (_, None) => HashedSoFar::Nothing,
        };
        let deferred = match (same_as_previous, self.same_as.take()) {
            (true, Some(old)) => Some((old, self.deferred)),
            _ => None,
        };
        Ok((self.inner, Hashed { digest, same_as_previous, deferred }))
    }

    /// Passes the deferred bytes (the replaced file's start) on to `inner`, hashing them
    /// now if their hashing was left to the recorded sums.
    fn write_deferred(&mut self) -> io::Result<()> {
        let hasher = match self.recorded.take() {
            Some(_) => self.hasher.as_mut(),
            None => None,
        };
        if self.deferred == 0 {
            return Ok(());
        }
        let Some(old) = self.same_as.clone() else {
            return Err(io::Error::other("deferred bytes without the file they are from"));
        };
        copy_start(&old, self.deferred, &mut self.inner, hasher)?;
        self.deferred = 0;
        Ok(())
    }
}

/// Copies the first `len` bytes of `from` to `to`, and into `hasher` if given.
pub fn copy_start(from: &File, len: u64, to: &mut impl io::Write, mut hasher: Option<&mut Sha256>) -> io::Result<()> {
    let mut buffer = vec![0u8; (1 << 20).min(len as usize)];
    let mut at = 0u64;
    while at < len {
        let n = (len - at).min(buffer.len() as u64) as usize;
        from.read_exact_at(&mut buffer[..n], at)?;
        if let Some(hasher) = hasher.as_mut() {
            hasher.update(&buffer[..n]);
        }
        to.write_all(&buffer[..n])?;
        at += n as u64;
    }
    Ok(())
}

impl<W: io::Write> io::Write for HashingWriter<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if let Some(old) = &self.same_as {
            self.scratch.resize(bytes.len(), 0);
            let same = old.read_exact_at(&mut self.scratch, self.len).is_ok() && self.scratch[..] == bytes[..];
            if same {
                if let Some(hasher) = &mut self.hasher {
                    if self.recorded.is_none() {
                        hasher.update(bytes);
                    }
                    self.crc.update(bytes);
                }
                self.deferred += bytes.len() as u64;
                self.len += bytes.len() as u64;
                self.position = self.len;
                return Ok(bytes.len());
            }
            self.write_deferred()?;
            self.same_as = None;
        }
        let n = self.inner.write(bytes)?;
        if self.in_order {
            if let Some(hasher) = &mut self.hasher {
                hasher.update(&bytes[..n]);
                self.crc.update(&bytes[..n]);
            }
            self.len += n as u64;
        } else if self.position < self.len {
            self.hasher = None;
        }
        self.position += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: io::Write + io::Seek> io::Seek for HashingWriter<W> {
    fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        self.write_deferred()?;
        self.in_order = false;
        self.same_as = None;
        self.position = self.inner.seek(position)?;
        Ok(self.position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The sums an output written over `old` reports, given `recorded` sums of `old`.
    fn sums_over(old: &[u8], recorded: FileSums, new: &[u8]) -> FileSums {
        let temp = tempfile::tempdir().expect("tempdir");
        std::fs::write(temp.path().join("out.whl"), old).expect("write");
        let old = Arc::new(File::open(temp.path().join("out.whl")).expect("open"));
        let mut writer = HashingWriter::new(Vec::new(), Some(old), Some(recorded));
        for piece in new.chunks(7_000) {
            writer.write_all(piece).expect("write");
        }
        match writer.into_parts().expect("parts").1.digest {
            HashedSoFar::Whole(sums) => sums,
            _ => panic!("written in order, hashed whole"),
        }
    }

    fn sums_of(bytes: &[u8]) -> FileSums {
        FileSums { len: bytes.len() as u64, sha256: Sha256::digest(bytes).into(), crc: crc32fast::hash(bytes) }
    }

    #[test]
    fn recorded_sums_stand_only_for_the_bytes_they_were_recorded_for() {
        let old: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        let recorded = sums_of(&old);
        // A recorded sha256 no byte was hashed for: taken only when length and CRC agree.
        let marked = FileSums { sha256: [7; 32], ..recorded };
        assert_eq!(sums_over(&old, marked, &old), marked, "the old file, as recorded: the recorded sums");
        let mut departing = old.clone();
        departing[150_000] ^= 1;
        assert_eq!(sums_over(&old, marked, &departing), sums_of(&departing), "departing bytes are hashed");
        assert_eq!(sums_over(&old, marked, &old[..100_000]), sums_of(&old[..100_000]), "a prefix of the old file");
        // The old file changed since its sums were recorded: its CRC-32 tells, and it is hashed.
        let stale = FileSums { crc: recorded.crc ^ 1, ..marked };
        assert_eq!(sums_over(&old, stale, &old), recorded, "recorded sums of other bytes are not taken");
    }
}
