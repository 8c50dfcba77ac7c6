//! The bytes of an edit to the dynamic tables: the dynamic array with its search path
//! entry set, encoded; the smallest patches that turn old bytes into new; and the check
//! that patches never overlap. Both layouts (`rpath`'s in-place edit, `grow`) build on it.
//!
//! Owns: encoding and patch arithmetic. Does not own: choosing a layout (`rpath`, `grow`).

use super::parse::{DynEntry, DT_RPATH, DT_RUNPATH};
use super::source::Source;
use super::splice::BytePatch;
use super::ElfError;

/// The dynamic entries with exactly one DT_RPATH pointing at `rpath_offset`: the first
/// RPATH/RUNPATH entry is retagged in its place, the others dropped; with none, it is added
/// last.
pub(crate) fn with_rpath(entries: &[DynEntry], rpath_offset: u64) -> Vec<DynEntry> {
    let rpath = DynEntry { tag: DT_RPATH, value: rpath_offset };
    let mut out = Vec::with_capacity(entries.len() + 1);
    let mut placed = false;
    for entry in entries {
        if entry.tag == DT_RPATH || entry.tag == DT_RUNPATH {
            if !placed {
                out.push(rpath);
                placed = true;
            }
        } else {
            out.push(*entry);
        }
    }
    if !placed {
        out.push(rpath);
    }
    out
}

/// 64-bit little-endian dynamic entries, padded with DT_NULL to `slots` entries.
pub(crate) fn encode_dynamic(entries: &[DynEntry], slots: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(slots as usize * 16);
    for entry in entries {
        out.extend_from_slice(&entry.tag.to_le_bytes());
        out.extend_from_slice(&entry.value.to_le_bytes());
    }
    out.resize((slots as usize * 16).max(out.len() + 16), 0);
    out
}

/// The smallest patch turning `old` (at `offset`) into `new`, or `None` when they agree.
pub(crate) fn diff_patch(offset: u64, old: &[u8], new: &[u8]) -> Option<BytePatch> {
    let first = old.iter().zip(new).position(|(a, b)| a != b)?;
    let last = old.iter().zip(new).rposition(|(a, b)| a != b)?;
    Some(BytePatch { offset: offset + first as u64, bytes: new[first..=last].to_vec() })
}

/// Sorts patches by offset and refuses overlapping ones (two tables sharing bytes).
pub(crate) fn sorted_patches(source: &dyn Source, mut patches: Vec<BytePatch>) -> Result<Vec<BytePatch>, ElfError> {
    patches.sort_by_key(|patch| patch.offset);
    for pair in patches.windows(2) {
        if pair[0].offset + pair[0].bytes.len() as u64 > pair[1].offset {
            return Err(source.malformed(format!("tables to be edited overlap at byte {}", pair[1].offset)));
        }
    }
    if let Some(last) = patches.last() {
        if last.offset + last.bytes.len() as u64 > source.len() {
            return Err(source.malformed("a table to be edited lies past the end of the file".into()));
        }
    }
    Ok(patches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{DT_NEEDED, DT_SONAME};

    fn entry(tag: u64, value: u64) -> DynEntry {
        DynEntry { tag, value }
    }

    fn check_with_rpath(entries: &[DynEntry], expect: &[DynEntry]) {
        assert_eq!(with_rpath(entries, 99), expect);
    }

    #[test]
    fn a_runpath_is_retagged_in_its_place() {
        check_with_rpath(
            &[entry(DT_NEEDED, 1), entry(DT_RUNPATH, 5), entry(DT_SONAME, 9)],
            &[entry(DT_NEEDED, 1), entry(DT_RPATH, 99), entry(DT_SONAME, 9)],
        );
    }

    #[test]
    fn rpath_and_runpath_become_one_rpath() {
        check_with_rpath(
            &[entry(DT_RPATH, 5), entry(DT_NEEDED, 1), entry(DT_RUNPATH, 5)],
            &[entry(DT_RPATH, 99), entry(DT_NEEDED, 1)],
        );
    }

    #[test]
    fn a_missing_rpath_is_added_last() {
        check_with_rpath(&[entry(DT_NEEDED, 1)], &[entry(DT_NEEDED, 1), entry(DT_RPATH, 99)]);
    }

    #[test]
    fn diff_patch_covers_only_changed_bytes() {
        let patch = diff_patch(100, b"abcdef", b"abXdYf").expect("they differ");
        assert_eq!((patch.offset, patch.bytes.as_slice()), (102, &b"XdY"[..]));
        assert_eq!(diff_patch(0, b"same", b"same"), None);
    }

    #[test]
    fn encoded_dynamic_keeps_its_slot_count_and_a_terminator() {
        assert_eq!(encode_dynamic(&[entry(DT_NEEDED, 1)], 3).len(), 48);
        assert_eq!(encode_dynamic(&[entry(DT_NEEDED, 1), entry(DT_SONAME, 2)], 2).len(), 48);
    }
}
