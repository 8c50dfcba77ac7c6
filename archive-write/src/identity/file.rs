//! The identity cache's file: a header line, one line per source (`source`, its identity
//! and the sums of the member bytes it gave), per tarball (`tarball`, its identity's digest
//! and sums) and per output left in place (`output`, its name and sums), sorted, then the sha256 of everything before. Text, so a user can see
//! what a destination remembers.
//!
//! It is input like an old wheel: opened only as a regular file of the name (never
//! through a symlink, never blocking), not read at all when larger than the run can use,
//! and ignored whole when a line does not parse or the closing sha256 does not match.
//!
//! Owns: the format and those checks. Does not own: what the entries mean (`identity`).

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{FileSums, Known, SourceIdentity, Stamp, MAX_NAME};
use crate::previous::{open_input, Ignored};
use crate::record::hex;

/// The first line of a cache file; a file of another format is not read.
pub(super) const HEADER: &str = "archive-write identity cache 1\n";
/// The header and the closing digest line's bytes, and some to spare.
const FRAME: u64 = 128;
/// A cache line's most bytes: an output's name and, for either kind, eleven fields of at
/// most 64 characters, their spaces and the newline.
const MAX_LINE: u64 = MAX_NAME as u64 + 160;

/// The file's text for what `known` holds.
pub(super) fn render(known: &Known) -> String {
    use std::fmt::Write as _;
    let mut text = String::from(HEADER);
    for (identity, sums) in &known.sources {
        let SourceIdentity { device, inode, size, modified, changed, recipe } = identity;
        let recipe = hex(recipe);
        let _ = writeln!(text, "source {device} {inode} {size} {modified} {changed} {recipe} {}", render_sums(sums));
    }
    for (identity, sums) in &known.tarballs {
        let _ = writeln!(text, "tarball {} {}", hex(identity), render_sums(sums));
    }
    for (name, sums) in &known.outputs {
        let _ = writeln!(text, "output {name} {}", render_sums(sums));
    }
    let digest = hex(&Sha256::digest(text.as_bytes()));
    let _ = writeln!(text, "sha256 {digest}");
    text
}

fn render_sums(sums: &FileSums) -> String {
    format!("{} {} {:08x}", sums.len, hex(&sums.sha256), sums.crc)
}

/// What the cache file at `path` knows, and the sha256 of the whole file; `None` when
/// there is none.
pub(super) fn read(path: &Path, max_entries: u64) -> Result<Option<(Known, [u8; 32])>, Ignored> {
    let untrusted = |reason: String| Ignored::Untrusted(reason);
    let Some(file) = open_input(path)? else { return Ok(None) };
    let bound = max_entries.saturating_mul(MAX_LINE).saturating_add(FRAME);
    let len = file.metadata().map_err(|error| untrusted(format!("cannot read it: {error}")))?.len();
    if len > bound {
        return Err(Ignored::TooLarge(format!("it is {len} bytes, more than the {bound} this run can use")));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(bound + 1).read_to_end(&mut bytes).map_err(|error| untrusted(format!("cannot read it: {error}")))?;
    let damaged = || untrusted("it is damaged (its lines or closing digest do not check out)".into());
    let text = std::str::from_utf8(&bytes).map_err(|_| damaged())?;
    let body_end = text.trim_end_matches('\n').rfind('\n').map(|at| at + 1).ok_or_else(damaged)?;
    let (body, closing) = text.split_at(body_end);
    let expected = closing.strip_prefix("sha256 ").and_then(|rest| rest.strip_suffix('\n')).ok_or_else(damaged)?;
    if hex(&Sha256::digest(body.as_bytes())) != expected {
        return Err(damaged());
    }
    let lines = body.strip_prefix(HEADER).ok_or_else(|| untrusted("it is of another format".into()))?;
    let mut known = Known::default();
    for line in lines.lines() {
        let fresh = match line.split_once(' ') {
            Some(("source", rest)) => {
                parse_source(rest).is_some_and(|(identity, sums)| known.sources.insert(identity, sums).is_none())
            }
            Some(("tarball", rest)) => {
                parse_tarball(rest).is_some_and(|(identity, sums)| known.tarballs.insert(identity, sums).is_none())
            }
            Some(("output", rest)) => {
                parse_output(rest).is_some_and(|(name, sums)| known.outputs.insert(name, sums).is_none())
            }
            _ => false,
        };
        if !fresh || known.len() as u64 > max_entries {
            return Err(damaged());
        }
    }
    Ok(Some((known, Sha256::digest(&bytes).into())))
}

fn parse_source(line: &str) -> Option<(SourceIdentity, FileSums)> {
    let fields: Vec<&str> = line.split(' ').collect();
    let [device, inode, size, modified, changed, recipe, sums @ ..] = fields.as_slice() else { return None };
    let identity = SourceIdentity {
        device: device.parse().ok()?,
        inode: inode.parse().ok()?,
        size: size.parse().ok()?,
        modified: Stamp::parse(modified)?,
        changed: Stamp::parse(changed)?,
        recipe: parse_hex(recipe)?,
    };
    Some((identity, parse_sums(sums)?))
}

fn parse_tarball(line: &str) -> Option<([u8; 32], FileSums)> {
    let fields: Vec<&str> = line.split(' ').collect();
    let [identity, sums @ ..] = fields.as_slice() else { return None };
    Some((parse_hex(identity)?, parse_sums(sums)?))
}

fn parse_output(line: &str) -> Option<(String, FileSums)> {
    let fields: Vec<&str> = line.split(' ').collect();
    let [name, sums @ ..] = fields.as_slice() else { return None };
    super::is_plain_name(name).then_some(())?;
    Some(((*name).to_owned(), parse_sums(sums)?))
}

fn parse_sums(fields: &[&str]) -> Option<FileSums> {
    let [len, sha256, crc] = fields else { return None };
    let crc = (crc.len() == 8).then(|| u32::from_str_radix(crc, 16).ok()).flatten()?;
    Some(FileSums { len: len.parse().ok()?, sha256: parse_hex(sha256)?, crc })
}

/// 32 bytes from 64 lower-case hex digits.
fn parse_hex(text: &str) -> Option<[u8; 32]> {
    let digits = text.as_bytes();
    if digits.len() != 64 || !digits.iter().all(|digit| matches!(digit, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}
