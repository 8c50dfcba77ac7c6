//! The devel tarball (`_devel.tar` / `_devel.tar.xz` inside the devel wheel, SPEC §2
//! "Devel population"): read as it decompresses, members checked to stay inside one
//! `_rocm_sdk_devel…` directory, ELF files inspected like wheel members.
//!
//! Every rule the installed runtime applies before it expands the tarball (SPEC §4, devel
//! expansion: `rocm_sdk/_devel_integrity.py` and `_devel_tree.py`) is a rule here too, in
//! this crate's own code, so a tarball the runtime would refuse never passes the gate:
//! the tar whole (its end-of-archive blocks, a compressed stream to its end), each member
//! a directory, a file or a symlink with a name, once, under the package's own platform
//! directory (its `__init__.py` among them), never below a file or a symlink member. Where each symlink leads (an empty or
//! absolute target, out of site-packages, around a loop, to a directory holding it) is
//! `closure`'s, which resolves it in the whole simulated install.
//!
//! Owns: reading the tarball into a [`DevelTree`] and those member rules. Does not own:
//! whether its symlinks and launchers resolve (`closure`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};

use super::member::{check_member_path, inspect_elf, stream_member, ElfMember, ElfScope};
use super::report::{Check, Findings};

#[derive(Debug)]
pub(crate) enum DevelKind {
    Dir,
    File,
    Symlink(String),
    /// A tar hard link to another member (the path is the archive path of the target).
    HardLink(String),
}

#[derive(Debug)]
pub(crate) struct DevelEntry {
    /// The member path, which is also where it lands in site-packages.
    pub path: String,
    pub kind: DevelKind,
}

#[derive(Debug, Default)]
pub(crate) struct DevelTree {
    pub entries: Vec<DevelEntry>,
    pub elf_files: Vec<ElfMember>,
    /// The tarball's one top-level directory, which must be the devel package's platform
    /// directory ([`check_platform_dir`]).
    pub top: Option<String>,
    /// The wheel member the tarball is (`rocm_sdk_devel/_devel.tar`).
    pub member: String,
}

/// Reads the tarball from `reader` (the raw wheel member bytes). Problems become findings.
pub(crate) fn read_devel_tar(
    reader: &mut dyn Read,
    xz: bool,
    file: &str,
    member: &str,
    findings: &mut Findings,
    elf_scope: &mut ElfScope,
) -> DevelTree {
    let mut tree = DevelTree { member: member.to_owned(), ..DevelTree::default() };
    let result = if xz {
        read_entries(liblzma::read::XzDecoder::new(reader), file, &mut tree, findings, elf_scope)
    } else {
        read_entries(reader, file, &mut tree, findings, elf_scope)
    };
    match result {
        Err(error) => {
            findings.violation(file, Some(member), Check::Devel, format!("the devel tarball is unreadable: {error}"))
        }
        Ok(Ending::Cut) => findings.violation(
            file,
            Some(member),
            Check::Devel,
            "the devel tarball ends before its end-of-archive marker (two zero blocks): it is cut short, \
             and the runtime refuses it",
        ),
        Ok(Ending::Whole) => check_shape(file, &tree, findings),
    }
    tree
}

/// How the tar stream ended after its last member.
enum Ending {
    /// Two zero blocks, then the stream's own end (a compressed stream decoded to its end).
    Whole,
    /// The data stopped where a header or the end-of-archive blocks belong.
    Cut,
}

fn read_entries(
    reader: impl Read,
    file: &str,
    tree: &mut DevelTree,
    findings: &mut Findings,
    elf_scope: &mut ElfScope,
) -> io::Result<Ending> {
    let mut tar = tar::Archive::new(reader);
    let mut top: Option<String> = None;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for entry in tar.entries()? {
        let mut entry = entry?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        // `tar -C dir .` writes `./` before every name: harmless, the runtime drops it.
        let name = raw.trim_start_matches("./");
        if name.trim_end_matches('/').is_empty() {
            // The runtime refuses a member with no name, `./` included (the root entry
            // `tar -C dir .` writes).
            let shown = crate::escape::escape(&raw);
            findings.violation(file, Some(&shown), Check::Devel, "devel tarball member has an empty name");
            continue;
        }
        let path = name.trim_end_matches('/').to_owned();
        if !check_member_path(file, name, findings) {
            continue;
        }
        let first = path.split('/').next().unwrap_or_default().to_owned();
        if !first.starts_with("_rocm_sdk_devel") {
            findings.violation(
                file,
                Some(&path),
                Check::Devel,
                "devel tarball member is outside a `_rocm_sdk_devel…` top-level directory",
            );
            continue;
        }
        match &top {
            None => top = Some(first),
            Some(top) if *top != first => {
                findings.violation(
                    file,
                    Some(&path),
                    Check::Devel,
                    format!("devel tarball has a second top-level directory (first was `{top}`)"),
                );
                continue;
            }
            Some(_) => {}
        }
        if !seen.insert(path.clone()) {
            findings.violation(file, Some(&path), Check::Devel, "devel tarball member appears twice");
            continue;
        }
        let entry_type = entry.header().entry_type();
        let link =
            || entry.link_name_bytes().map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default();
        let kind = if entry_type.is_dir() {
            DevelKind::Dir
        } else if entry_type.is_symlink() {
            DevelKind::Symlink(link())
        } else if entry_type.is_hard_link() {
            // The runtime expands files, directories and symlinks only.
            let target = link().trim_start_matches("./").to_owned();
            let message = format!(
                "devel tarball member is a hard link (to `{}`), which the runtime refuses",
                crate::escape::escape(&target)
            );
            findings.violation(file, Some(&path), Check::Devel, message);
            DevelKind::HardLink(target)
        } else if entry_type.is_file() {
            let streamed = stream_member(&mut entry, false, false)?;
            if let Some(window) = streamed.window {
                if let Some(member) = inspect_elf(file, &path, &window, elf_scope, findings) {
                    tree.elf_files.push(member);
                }
            }
            DevelKind::File
        } else {
            findings.violation(
                file,
                Some(&path),
                Check::Devel,
                format!("devel tarball member has unsupported type {:?}", entry_type),
            );
            continue;
        };
        tree.entries.push(DevelEntry { path, kind });
    }
    tree.top = top;
    let mut rest = tar.into_inner();
    Ok(if has_end_marker(&mut rest)? { Ending::Whole } else { Ending::Cut })
}

/// Whether the stream, where the tar reader stopped, holds the end-of-archive marker, then
/// reads it to its end (so a compressed stream must decode whole). The reader stops at the
/// first zero block (the marker's first half, consumed) or where the data ends (nothing
/// consumed): either way one more whole zero block must follow.
fn has_end_marker(rest: &mut impl Read) -> io::Result<bool> {
    let mut block = [0u8; 512];
    let mut filled = 0;
    while filled < block.len() {
        match rest.read(&mut block[filled..])? {
            0 => break,
            read => filled += read,
        }
    }
    io::copy(rest, &mut io::sink())?;
    Ok(filled == block.len() && block.iter().all(|&byte| byte == 0))
}

/// The member rules that depend on other members: the platform directory's `__init__.py`
/// is there, and nothing lies below a file member or a symlink member (the runtime would
/// write through the link, or fail mid-way on the file).
fn check_shape(file: &str, tree: &DevelTree, findings: &mut Findings) {
    let kinds: BTreeMap<&str, &DevelKind> =
        tree.entries.iter().map(|entry| (entry.path.as_str(), &entry.kind)).collect();
    if let Some(top) = &tree.top {
        // The runtime checks the expanded tree for it and refuses the expansion without it.
        let init = format!("{top}/__init__.py");
        if !matches!(kinds.get(init.as_str()), Some(DevelKind::File)) {
            let message = format!(
                "devel tarball has no file `{}`, without which the runtime refuses the expanded tree",
                crate::escape::escape(&init)
            );
            findings.violation(file, Some(&tree.member), Check::Devel, message);
        }
    }
    for entry in &tree.entries {
        let mut ancestor = entry.path.as_str();
        while let Some((parent, _)) = ancestor.rsplit_once('/') {
            ancestor = parent;
            let what = match kinds.get(parent) {
                Some(DevelKind::File | DevelKind::HardLink(_)) => "file",
                Some(DevelKind::Symlink(_)) => "symlink",
                _ => continue,
            };
            let message =
                format!("devel tarball member lies under the {what} member `{parent}`, which the runtime refuses");
            findings.violation(file, Some(&entry.path), Check::Devel, message);
            break;
        }
    }
}

/// The tarball's top-level directory must be the platform directory the runtime expands
/// into: `_` + the devel wheel's distribution name as METADATA spells it, with `-` and `.`
/// as `_`, + the build's nonce (SPEC §2, the `--version-suffix`), read from the wheel's own
/// `_dist_info_data.py` when it has one.
pub(crate) fn check_platform_dir(
    file: &str,
    distribution: &str,
    dist_info_data: Option<&str>,
    tree: &DevelTree,
    findings: &mut Findings,
) {
    let Some(top) = &tree.top else { return };
    let expected = platform_dir_name(distribution, dist_info_data);
    if *top != expected {
        let message = format!(
            "devel tarball's top-level directory `{}` is not the package's platform directory `{expected}`, \
             where the runtime expands it",
            crate::escape::escape(top)
        );
        findings.violation(file, Some(&tree.member), Check::Devel, message);
    }
}

/// `_` + a distribution name as METADATA spells it, with `-` and `.` as `_`, + the nonce of
/// the package's `_dist_info_data.py` (SPEC §2, platform directory).
pub(crate) fn platform_dir_name(distribution: &str, dist_info_data: Option<&str>) -> String {
    let nonce = dist_info_data.and_then(nonce_of).unwrap_or_default();
    format!("_{}{nonce}", distribution.replace(['-', '.'], "_"))
}

/// `PY_PACKAGE_SUFFIX_NONCE` of a `_dist_info_data.py`: a quoted string of letters, digits and
/// `_` (anything else is no nonce this reader trusts).
fn nonce_of(text: &str) -> Option<String> {
    let line = text.lines().find_map(|line| line.strip_prefix("PY_PACKAGE_SUFFIX_NONCE"))?;
    let value = line.trim_start().strip_prefix('=')?.trim();
    let quote = value.chars().next().filter(|quote| matches!(quote, '"' | '\''))?;
    let inner = value.strip_prefix(quote)?.strip_suffix(quote)?;
    inner.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_').then(|| inner.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_read_from_dist_info() {
        assert_eq!(nonce_of("x = 1\nPY_PACKAGE_SUFFIX_NONCE = \"_abc1\"\n").as_deref(), Some("_abc1"));
        assert_eq!(nonce_of("PY_PACKAGE_SUFFIX_NONCE = ''").as_deref(), Some(""));
        assert_eq!(nonce_of("PY_PACKAGE_SUFFIX_NONCE = \"../x\"").as_deref(), None);
        assert_eq!(nonce_of("OTHER = 1").as_deref(), None);
    }
}
