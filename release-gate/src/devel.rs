//! The devel tarball (`_devel.tar` / `_devel.tar.xz` inside the devel wheel, SPEC §2
//! "Devel population"): read as it decompresses, members checked to stay inside one
//! `_rocm_sdk_devel…` directory, ELF files inspected like wheel members.
//!
//! Owns: reading the tarball into a [`DevelTree`]. Does not own: whether its symlinks and
//! launchers resolve (`closure`, which sees the whole simulated install).

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
    let mut tree = DevelTree::default();
    let result = if xz {
        read_entries(liblzma::read::XzDecoder::new(reader), file, &mut tree, findings, elf_scope)
    } else {
        read_entries(reader, file, &mut tree, findings, elf_scope)
    };
    if let Err(error) = result {
        findings.violation(file, Some(member), Check::Devel, format!("the devel tarball is unreadable: {error}"));
    }
    tree
}

fn read_entries(
    reader: impl Read,
    file: &str,
    tree: &mut DevelTree,
    findings: &mut Findings,
    elf_scope: &mut ElfScope,
) -> io::Result<()> {
    let mut tar = tar::Archive::new(reader);
    let mut top: Option<String> = None;
    for entry in tar.entries()? {
        let mut entry = entry?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        // `tar -C dir .` writes `./` before every name and a `./` root entry: harmless.
        let name = raw.trim_start_matches("./");
        if name.is_empty() {
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
        let entry_type = entry.header().entry_type();
        let link =
            || entry.link_name_bytes().map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default();
        let kind = if entry_type.is_dir() {
            DevelKind::Dir
        } else if entry_type.is_symlink() {
            DevelKind::Symlink(link())
        } else if entry_type.is_hard_link() {
            DevelKind::HardLink(link().trim_start_matches("./").to_owned())
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
    Ok(())
}
