//! The RPATH of a packaged ELF file (SPEC §2 "RPATH dependencies"): existing `$ORIGIN`
//! entries stay, absolute (and other cwd-relative) entries go and are reported, then the
//! package's dependencies are appended relative to the file's depth.

use elf_rpath::RpathEdit;
use sha2::{Digest, Sha256};

use crate::config::AbsoluteRpath;
use crate::relpath::RelPath;

/// The new search path of one file and what was removed from the old one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpathDecision {
    pub rpath: String,
    pub removed: Vec<String>,
}

/// `existing` is the file's current DT_RUNPATH or DT_RPATH; `deps` are directories inside
/// `dep_platform_dir` (core's platform dir), reached from the file at `rel` inside its own
/// platform dir; `absolute` says what happens to absolute entries (`--keep-absolute-rpath`).
pub fn decide_rpath(
    rel: &RelPath,
    existing: Option<&str>,
    dep_platform_dir: &str,
    deps: &[&str],
    absolute: AbsoluteRpath,
) -> RpathDecision {
    let mut entries: Vec<String> = Vec::new();
    let mut removed = Vec::new();
    for entry in existing.unwrap_or("").split(':').filter(|entry| !entry.is_empty()) {
        let origin_relative = entry.starts_with("$ORIGIN") || entry.starts_with("${ORIGIN}");
        // A DT_RPATH is searched before everything else: an entry that is not relative to
        // the file lets whoever controls that directory on a user's machine inject a library.
        if !origin_relative && absolute == AbsoluteRpath::Remove {
            removed.push(entry.to_owned());
        } else if !entries.iter().any(|seen| seen == entry) {
            entries.push(entry.to_owned());
        }
    }
    // From `{platform}/{rel}`'s directory up to site-packages.
    let up = "../".repeat(rel.depth() + 1);
    for dep in deps {
        let entry = format!("$ORIGIN/{up}{dep_platform_dir}/{dep}");
        if !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    RpathDecision { rpath: entries.join(":"), removed }
}

/// What an RPATH edit does to a file's bytes, as a digest: the length it starts from, each
/// patch's place and bytes, and what it appends. Two edits of one file with the same
/// digest make the same bytes, whatever planned them.
pub fn edit_digest(edit: &RpathEdit) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(edit.original_len.to_le_bytes());
    hasher.update((edit.patches.len() as u64).to_le_bytes());
    for patch in &edit.patches {
        hasher.update(patch.offset.to_le_bytes());
        hasher.update((patch.bytes.len() as u64).to_le_bytes());
        hasher.update(&patch.bytes);
    }
    hasher.update((edit.appended.len() as u64).to_le_bytes());
    hasher.update(&edit.appended);
    hasher.finalize().into()
}

/// The planned RPATH edit of a file: its search path, the member's length after it and
/// the edit's digest ([`edit_digest`]).
pub struct PlannedRpath {
    pub rpath: String,
    pub new_len: u64,
    pub edit_digest: [u8; 32],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(rel: &str, existing: Option<&str>, deps: &[&str], expect_rpath: &str, expect_removed: &[&str]) {
        let rel = RelPath::new(rel).expect("rel");
        let decision = decide_rpath(&rel, existing, "_rocm_sdk_core", deps, AbsoluteRpath::Remove);
        assert_eq!(decision.rpath, expect_rpath);
        assert_eq!(decision.removed, expect_removed);
    }

    #[test]
    fn appends_deps_by_depth() {
        check("lib/libx.so", None, &["lib"], "$ORIGIN/../../_rocm_sdk_core/lib", &[]);
        check(
            "lib/llvm/bin/clang",
            Some("$ORIGIN/../lib"),
            &["lib/llvm/lib"],
            "$ORIGIN/../lib:$ORIGIN/../../../../_rocm_sdk_core/lib/llvm/lib",
            &[],
        );
    }

    #[test]
    fn removes_absolute_and_keeps_origin() {
        check(
            "bin/x",
            Some("/build/lib:$ORIGIN/../lib::/opt/rocm/lib"),
            &[],
            "$ORIGIN/../lib",
            &["/build/lib", "/opt/rocm/lib"],
        );
    }

    #[test]
    fn is_idempotent() {
        let rel = RelPath::new("lib/libx.so").expect("rel");
        let first =
            decide_rpath(&rel, Some("$ORIGIN"), "_rocm_sdk_core", &["lib", "lib/llvm/lib"], AbsoluteRpath::Remove);
        let second =
            decide_rpath(&rel, Some(&first.rpath), "_rocm_sdk_core", &["lib", "lib/llvm/lib"], AbsoluteRpath::Remove);
        assert_eq!(first.rpath, second.rpath);
    }

    #[test]
    fn keep_absolute_keeps_them() {
        let rel = RelPath::new("bin/x").expect("rel");
        assert_eq!(decide_rpath(&rel, Some("/opt/rocm/lib"), "_c", &[], AbsoluteRpath::Keep).rpath, "/opt/rocm/lib");
    }
}
