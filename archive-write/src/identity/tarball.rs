//! The identity of a tarball member without producing it (SPEC §8): a digest of
//! everything its bytes follow from: the tar layout this build writes (the bytes of a
//! fixed probe tarball, so another `tar` crate or header rule gets another identity),
//! the time stamped on its entries, and every entry in archive order, with its name,
//! kind, mode, link target and, for a file, its source's identity (or a generated file's
//! sha256). A tarball with any file the cache cannot know, or one not settled, has none.
//!
//! Owns: that digest. Does not own: the layout (`tar`), sources' identities (`identity`).

use sha2::{Digest, Sha256};

use super::{IdentityCache, SourceIdentity};
use crate::tar::{for_each_entry, layout_probe};
use crate::{MemberData, TarEntryKind, TarballCompression, TarballSpec, WriteError};

/// The identity of `spec`'s bytes, if every file in it has a settled one. Only plain tar
/// (an xz tarball is stored, and never copied: `wheel`).
pub(crate) fn tarball_identity(cache: &IdentityCache, spec: &TarballSpec) -> Option<[u8; 32]> {
    if spec.compression != TarballCompression::None {
        return None;
    }
    let mut hasher = Sha256::new();
    hasher.update(layout_probe());
    hasher.update(spec.build_time.0.to_le_bytes());
    let field = |hasher: &mut Sha256, bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    let walked = for_each_entry(spec, &mut |entry| {
        field(&mut hasher, entry.name.as_bytes());
        match &entry.kind {
            TarEntryKind::Dir => field(&mut hasher, b"dir"),
            TarEntryKind::Symlink { target } => {
                field(&mut hasher, b"symlink");
                field(&mut hasher, target.as_bytes());
            }
            TarEntryKind::File { data, executable } => {
                field(&mut hasher, if *executable { b"executable" } else { b"file" });
                match data {
                    MemberData::Source(source) => {
                        let identity = source.identity().filter(|identity| identity.settled(cache.started));
                        let identity = identity.ok_or_else(unknown)?;
                        field(&mut hasher, &identity_bytes(&identity));
                    }
                    MemberData::Bytes(bytes) => field(&mut hasher, &Sha256::digest(bytes.as_slice())),
                    MemberData::Tarball(_) => return Err(unknown()),
                }
            }
        }
        Ok(())
    });
    walked.ok().map(|()| hasher.finalize().into())
}

fn unknown() -> WriteError {
    WriteError::Invalid { reason: "a file the identity cache cannot know".to_owned() }
}

fn identity_bytes(identity: &SourceIdentity) -> Vec<u8> {
    let SourceIdentity { device, inode, size, modified, changed, recipe } = identity;
    let mut out = Vec::with_capacity(80);
    for value in [device, inode, size] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    for stamp in [modified, changed] {
        out.extend_from_slice(&stamp.seconds.to_le_bytes());
        out.extend_from_slice(&stamp.nanoseconds.to_le_bytes());
    }
    out.extend_from_slice(recipe);
    out
}
