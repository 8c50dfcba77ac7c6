//! Per member, whether the previous wheel's coded bytes can stand in for coding it again
//! (SPEC §8). The new bytes are known first: from the identity cache when their source
//! file is, by its identity, the one an earlier run read (`identity`: nothing is read
//! then), else by reading and hashing them in full (a changed byte is never missed,
//! whatever the file's size or time stamp says). Only a member whose digest is the old
//! one is copied; any other is read again and coded. Nothing of a member is held: a miss
//! costs one extra read and hash, about a twentieth of deflating it.
//!
//! Owns: that decision and the counts of what was reused and what was coded. Does not
//! own: what is trustworthy in an old wheel (`previous`), identities and their cache
//! (`identity`), the pipeline (`deflate`).

use std::io::Read;

use sha2::{Digest, Sha256};

use super::chunk::CHUNK_SIZE;
use super::deflate::{CodedSource, FinishedMember, MemberDigest};
use super::identity::{identity_of, read_from, tarball_identity, IdentityCache, ReadFrom};
use super::member_source::{known_len, open_member, to_io};
use super::output_hash::FileSums;
use super::previous::Previous;
use super::zip::{EntryHeader, EntrySums, Method};
use super::{Member, MemberData, TarballSpec};

/// Bytes of a wheel's members whose coded form was copied, and bytes coded by this run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReuseCounts {
    pub reused_members: u64,
    pub reused_bytes: u64,
    /// Of the members copied, those whose new bytes were not read at all: their source
    /// files had the identity an earlier run recorded (`identity`).
    pub unread_members: u64,
    pub unread_bytes: u64,
    pub compressed_members: u64,
    pub compressed_bytes: u64,
}

impl ReuseCounts {
    /// A member of `bytes` copied; `unread`: without reading its new bytes.
    pub fn add_reused(&mut self, bytes: u64, unread: bool) {
        self.reused_members += 1;
        self.reused_bytes += bytes;
        if unread {
            self.unread_members += 1;
            self.unread_bytes += bytes;
        }
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
            unread_members: self.unread_members + other.unread_members,
            unread_bytes: self.unread_bytes + other.unread_bytes,
            compressed_members: self.compressed_members + other.compressed_members,
            compressed_bytes: self.compressed_bytes + other.compressed_bytes,
        }
    }
}

/// A member to copy: its method, final sums, where its coded bytes come from, its
/// digest, and whether its new bytes went unread.
pub struct Copy {
    pub method: Method,
    pub sums: EntrySums,
    pub source: Box<dyn CodedSource>,
    pub digest: MemberDigest,
    pub unread: bool,
    /// The codec fingerprint the archive copied from gives its bytes, when our extra field
    /// there says so and its CRC-32 of the coded bytes is theirs: a member a rewrite copies
    /// from our own wheel keeps the coding it names, so rewriting a rewrite changes no byte.
    pub fingerprint: Option<u32>,
}

/// Decides whether the tarball member `header` of `spec` can be copied from `previous`:
/// known from the identity cache when every file in it is as an earlier run read it
/// (nothing is produced then), else produced by `open` (called only when the old wheel has
/// a candidate, so a cold run produces nothing twice) and hashed, and remembered. Its
/// errors are the caller's to map. `Ok(None)` means: code it.
pub fn try_copy_tarball<'a, E>(
    previous: Option<&Previous>,
    identities: Option<&IdentityCache>,
    header: &EntryHeader,
    spec: &TarballSpec,
    open: impl FnOnce() -> Result<Box<dyn Read + Send + 'a>, E>,
    read_error: impl Fn(std::io::Error) -> E,
) -> Result<Option<Copy>, E> {
    let Some(previous) = previous else { return Ok(None) };
    let Some(candidate) = previous.candidate(&header.name, header.fingerprint, methods(header)) else {
        return Ok(None);
    };
    let before = identities.and_then(|cache| tarball_identity(cache, spec));
    if let Some(known) = identities.zip(before.as_ref()).and_then(|(cache, before)| cache.lookup_tarball(before)) {
        return Ok(try_copy_hashed(Some(previous), header, Prehashed { known, unread: true }));
    }
    let known = hash_all(open()?, candidate.size()).map_err(read_error)?;
    // What was hashed is the whole tarball only if its producer succeeds, which the caller
    // checks before anything is committed (and the cache is saved only after the commit).
    if let (Some(cache), Some(before)) = (identities, before) {
        let after = tarball_identity(cache, spec).map(ReadFrom::Tarball);
        cache.learn_read(ReadFrom::Tarball(before), after, known);
    }
    Ok(try_copy_hashed(Some(previous), header, Prehashed { known, unread: false }))
}

/// The methods a member coded as `header` asks may have: a deflated member is stored
/// when deflate cannot shrink it (`chunk`).
fn methods(header: &EntryHeader) -> &'static [Method] {
    match header.method {
        Method::Stored => &[Method::Stored],
        Method::Deflated => &[Method::Deflated, Method::Stored],
    }
}

/// One member's new bytes as [`prehash`] came to know them.
#[derive(Clone, Copy, Debug)]
pub struct Prehashed {
    known: FileSums,
    /// Known from the identity cache, without reading them.
    unread: bool,
}

/// What [`prehash`] found of one member: `None` when the old wheel has no candidate for
/// it, else its new bytes' digest or the read error (reported when the member is
/// written, as a cold run would).
pub type Prehash = Option<std::io::Result<Prehashed>>;

/// Learns, on all cores, the new bytes of every member the old wheel holds a candidate
/// for, so a rerun that changes little reads its inputs in parallel instead of one member
/// after another; a source the identity cache knows is not read at all, and one read is
/// remembered there. A tarball member is hashed its own way (it is produced while read).
pub fn prehash(
    previous: Option<&Previous>,
    identities: Option<&IdentityCache>,
    members: &[Member],
    headers: &[EntryHeader],
) -> Vec<Prehash> {
    use rayon::prelude::*;
    let Some(previous) = previous else { return members.iter().map(|_| None).collect() };
    members
        .par_iter()
        .zip(headers)
        .map(|(member, header)| {
            if matches!(member.data, MemberData::Tarball(_)) {
                return None;
            }
            let candidate = previous.candidate(&header.name, header.fingerprint, methods(header))?;
            let expected = known_len(&member.data);
            if expected.is_some_and(|len| len != candidate.size()) {
                return None;
            }
            let before = identities.and_then(|_| identity_of(&member.data));
            let remembered = identities.zip(before.as_ref()).and_then(|(cache, before)| cache.lookup(before));
            if let Some(known) = remembered.filter(|known| Some(known.len) == expected) {
                return Some(Ok(Prehashed { known, unread: true }));
            }
            let reader = open_member(&member.data).map_err(to_io);
            let hashed = reader.and_then(|reader| hash_all(reader, candidate.size()));
            if let (Some(cache), Some(before), Ok(known)) = (identities, before, &hashed) {
                cache.learn(before, identity_of(&member.data), *known);
            }
            Some(hashed.map(|known| Prehashed { known, unread: false }))
        })
        .collect()
}

/// Whether a member whose new bytes are known (by [`prehash`], or a tarball's) can be
/// copied from `previous`.
pub fn try_copy_hashed(previous: Option<&Previous>, header: &EntryHeader, hashed: Prehashed) -> Option<Copy> {
    let previous = previous?;
    let candidate = previous.candidate(&header.name, header.fingerprint, methods(header))?;
    let Prehashed { known, unread } = hashed;
    let digest = MemberDigest { sha256: known.sha256, len: known.len };
    if !candidate.matches(&digest, known.crc) {
        return None;
    }
    previous.verified_copy(&candidate).map(|(sums, source)| Copy {
        method: candidate.method(),
        sums,
        source,
        digest,
        unread,
        fingerprint: None,
    })
}

/// Remembers what the sources read to code them turned out to be (`identity`), now that
/// all of them have been read: `finished` holds every member in `members`' order.
pub fn learn_read_sources(
    cache: &IdentityCache,
    members: &[Member],
    finished: &[FinishedMember],
    read_sources: Vec<(usize, ReadFrom)>,
) {
    for (index, before) in read_sources {
        let (Some(member), Some(done)) = (members.get(index), finished.get(index)) else { continue };
        if member.name != done.name {
            continue;
        }
        let known = FileSums { len: done.digest.len, sha256: done.digest.sha256, crc: done.crc };
        cache.learn_read(before, read_from(cache, &member.data), known);
    }
}

/// Reads `reader` to its end: its length, RECORD digest and CRC-32. `expected` sizes the
/// buffer, so thousands of small members do not each get a chunk-sized one.
fn hash_all(mut reader: impl Read, expected: u64) -> std::io::Result<FileSums> {
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
    Ok(FileSums { len, sha256: sha256.finalize().into(), crc: crc.finalize() })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use crate::{
        write_wheel, ArchiveOptions, BuildTime, Member, MemberData, Reuse, Silent, WheelCompression, WheelSpec,
        WrittenFile,
    };

    /// Noise and text in runs, several chunks long, so the member streams and its
    /// dictionary matters.
    fn mixed(seed: u64, len: usize) -> Vec<u8> {
        let mut state = seed;
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let noise = state >> 62 == 0;
            for i in 0..(64 + (state >> 54) as usize).min(len - out.len()) {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                out.push(if noise { (state >> 56) as u8 } else { b"rocblas_gemm hipLaunch "[i % 23] });
            }
        }
        out
    }

    fn spec(big: Vec<u8>) -> WheelSpec {
        let member = |name: &str, bytes: Vec<u8>| Member {
            name: name.to_owned(),
            data: MemberData::Bytes(Arc::new(bytes)),
            executable: false,
        };
        crate::demo_wheel_spec(vec![member("demo/__init__.py", b"x = 1\n".to_vec()), member("demo/big.bin", big)])
    }

    fn write(dir: &Path, spec: &WheelSpec, level: u32, reuse: Reuse) -> (WrittenFile, Vec<u8>) {
        let options = ArchiveOptions {
            compression: WheelCompression::Deflate { level },
            build_time: BuildTime::DEFAULT,
            reuse,
            identities: None,
        };
        let written = write_wheel(dir, spec, &options, &Silent).expect("writes");
        let bytes = std::fs::read(&written.path).expect("read back");
        // Hashed while written when nothing was patched, read back otherwise: the same.
        assert_eq!(written.sha256, crate::record::hex(&<sha2::Sha256 as sha2::Digest>::digest(&bytes)));
        (written, bytes)
    }

    /// Writes `spec` again into `dir` and checks it against a cold write; returns the counts.
    fn rerun(dir: &Path, spec: &WheelSpec, level: u32) -> super::ReuseCounts {
        let (written, bytes) = write(dir, spec, level, Reuse::FromPrevious);
        let cold = tempfile::tempdir().expect("tempdir");
        let (cold_written, cold_bytes) = write(cold.path(), spec, level, Reuse::Never);
        assert!(bytes == cold_bytes, "a rerun differs from a cold write");
        assert_eq!(cold_written.reuse.reused_bytes, 0);
        written.reuse
    }

    #[test]
    fn a_rerun_copies_what_did_not_change_and_writes_a_cold_writes_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = mixed(7, 9 * (1 << 20) + 4321);
        let (first, _) = write(dir.path(), &spec(big.clone()), 6, Reuse::FromPrevious);
        assert_eq!((first.reuse.reused_members, first.reuse.compressed_members), (0, 5));

        // Everything but RECORD is copied: __init__.py, big.bin, METADATA, WHEEL; and the
        // wheel, the same bytes, stays the file it was (no temp file is left either).
        use std::os::unix::fs::MetadataExt;
        let inode = || std::fs::metadata(&first.path).expect("stat").ino();
        let before = inode();
        let unchanged = rerun(dir.path(), &spec(big.clone()), 6);
        assert_eq!((unchanged.reused_members, unchanged.compressed_members), (4, 1), "{unchanged:?}");
        assert!(unchanged.reused_bytes > big.len() as u64);
        assert_eq!(inode(), before, "an unchanged wheel is left in place");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1, "only the wheel");

        // One byte changed, the size kept: big.bin is compressed again, the rest copied.
        let mut changed = big.clone();
        changed[2 << 20] ^= 1;
        let counts = rerun(dir.path(), &spec(changed.clone()), 6);
        assert_eq!((counts.reused_members, counts.compressed_members), (3, 2), "{counts:?}");
        assert!(counts.compressed_bytes > big.len() as u64);
        assert_ne!(inode(), before, "a changed wheel replaces the old one");

        // Another level: nothing is copied.
        let counts = rerun(dir.path(), &spec(changed), 1);
        assert_eq!(counts.reused_members, 0, "{counts:?}");
    }

    /// An unchanged wheel that cannot be kept as it is (its mode is not a cold run's) is
    /// written out after all: the bytes the writer held back, being the old file's, are
    /// copied into the new file, which comes out as a cold write's, mode 0644.
    #[test]
    fn an_unchanged_wheel_that_cannot_be_kept_is_written_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let big = mixed(11, 5 * (1 << 20) + 17);
        let (first, _) = write(dir.path(), &spec(big.clone()), 6, Reuse::FromPrevious);
        std::fs::set_permissions(&first.path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let unchanged = rerun(dir.path(), &spec(big), 6);
        assert_eq!(unchanged.compressed_members, 1, "{unchanged:?}");
        let mode = std::fs::metadata(&first.path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "the wheel was written anew, as a cold run writes it");
    }

    #[test]
    fn coded_bytes_that_no_longer_have_their_crc_are_coded_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = mixed(11, 2 * (1 << 20));
        let (first, mut bytes) = write(dir.path(), &spec(big.clone()), 6, Reuse::FromPrevious);
        // The local header of big.bin is the first place its name appears; its data follows.
        let name = b"demo/big.bin";
        let at = bytes.windows(name.len()).position(|window| window == name).expect("local header");
        bytes[at + name.len() + 100_000] ^= 0x20;
        std::fs::write(&first.path, &bytes).expect("flip");
        let counts = rerun(dir.path(), &spec(big), 6);
        assert_eq!((counts.reused_members, counts.compressed_members), (3, 2), "{counts:?}");
    }

    #[test]
    fn a_truncated_or_foreign_file_is_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = mixed(13, 1 << 20);
        let (first, bytes) = write(dir.path(), &spec(big.clone()), 6, Reuse::FromPrevious);
        for (what, damaged) in [
            ("truncated", bytes[..bytes.len() - 30].to_vec()),
            ("trailing bytes", [bytes.as_slice(), b"junk"].concat()),
            ("not a zip", b"PK\x05\x06 but not really".to_vec()),
        ] {
            std::fs::write(&first.path, &damaged).expect("damage");
            let counts = rerun(dir.path(), &spec(big.clone()), 6);
            assert_eq!(counts.reused_members, 0, "{what}: {counts:?}");
        }
    }
}
