//! The simulated install: every wheel's members plus the expanded devel tarball under one
//! site-packages, with symlinks resolved the way the kernel would. In it, every DT_NEEDED
//! of every host ELF file is looked up through its RPATH (`$ORIGIN` = the file's
//! directory), every devel symlink must reach something, and every launcher its target.
//!
//! Owns: path resolution in the simulated tree and the closure, devel-link and launcher
//! checks. Does not own: reading archives (`archive`, `devel`).

use std::collections::BTreeMap;

use super::archive::Archive;
use super::devel::DevelKind;
use super::elf_checks::{origin_rest, search_path_entries};
use super::member_check::ElfMember;
use super::report::{Check, Findings};
use super::sdk_names::SdkNames;
use elf_audit::is_system_library;

/// ld.so and the kernel give up after this many symlinks in one lookup.
const MAX_SYMLINKS: usize = 40;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir,
    File,
    Symlink(String),
}

/// Why a path does not resolve.
#[derive(Debug, PartialEq, Eq)]
enum Unresolved {
    Missing,
    Escapes,
    Loop,
    NotADirectory,
}

impl Unresolved {
    fn describe(&self) -> &'static str {
        match self {
            Unresolved::Missing => "does not exist",
            Unresolved::Escapes => "leaves site-packages",
            Unresolved::Loop => "loops",
            Unresolved::NotADirectory => "goes through a file as if it were a directory",
        }
    }
}

/// site-packages as the wheels and the devel tarball would lay it out.
#[derive(Default)]
pub(crate) struct Install {
    nodes: BTreeMap<String, Node>,
    /// File name → the paths carrying it, to say where a missing library actually is.
    by_file_name: BTreeMap<String, Vec<String>>,
    /// The SDK's libraries placed under their SONAME → its release, to tell a library
    /// needed at another version (`libamdhip64.so.5` where the set has `.so.7`).
    sdk_sonames: BTreeMap<String, String>,
}

impl Install {
    fn insert(&mut self, path: &str, node: Node) {
        let mut parent = path;
        while let Some((dir, _)) = parent.rsplit_once('/') {
            self.nodes.entry(dir.to_owned()).or_insert(Node::Dir);
            parent = dir;
        }
        if node != Node::Dir {
            let file_name = path.rsplit('/').next().unwrap_or(path);
            self.by_file_name.entry(file_name.to_owned()).or_default().push(path.to_owned());
        }
        // A later real entry wins over a directory implied by a child.
        self.nodes.insert(path.to_owned(), node);
    }

    /// Follows symlinks component by component; `..` applies to the resolved directory.
    fn resolve(&self, path: &str) -> Result<(String, bool), Unresolved> {
        let mut pending: Vec<String> = path.rsplit('/').map(str::to_owned).collect();
        let mut resolved: Vec<String> = Vec::new();
        let mut hops = 0;
        let mut is_dir = true;
        while let Some(component) = pending.pop() {
            match component.as_str() {
                "" | "." => continue,
                ".." => {
                    resolved.pop().ok_or(Unresolved::Escapes)?;
                    is_dir = true;
                    continue;
                }
                _ => {}
            }
            if !is_dir {
                return Err(Unresolved::NotADirectory);
            }
            resolved.push(component);
            let key = resolved.join("/");
            match self.nodes.get(&key) {
                None => return Err(Unresolved::Missing),
                Some(Node::Dir) => is_dir = true,
                Some(Node::File) => is_dir = false,
                Some(Node::Symlink(target)) => {
                    hops += 1;
                    if hops > MAX_SYMLINKS {
                        return Err(Unresolved::Loop);
                    }
                    if target.starts_with('/') {
                        return Err(Unresolved::Escapes);
                    }
                    resolved.pop();
                    pending.extend(target.rsplit('/').map(str::to_owned));
                    is_dir = true;
                }
            }
        }
        Ok((resolved.join("/"), is_dir))
    }

    /// The real path of the regular file `path` leads to, symlinks followed.
    pub(crate) fn real_file(&self, path: &str) -> Option<String> {
        self.resolve_file(path).ok()
    }

    fn resolve_file(&self, path: &str) -> Result<String, Unresolved> {
        match self.resolve(path)? {
            (real, false) => Ok(real),
            (_, true) => Err(Unresolved::Missing),
        }
    }
}

pub(crate) fn build_install(archives: &[Archive]) -> Install {
    let mut install = Install::default();
    let names = SdkNames::of(archives);
    for archive in archives.iter().filter(|archive| archive.name.as_deref().is_some_and(|name| names.contains(name))) {
        for member in &archive.elf_files {
            let file_name = member.path.rsplit('/').next().unwrap_or(&member.path);
            if member.elf.soname.as_deref() == Some(file_name) {
                let version = archive.version.clone().unwrap_or_default();
                install.sdk_sonames.entry(file_name.to_owned()).or_insert(version);
            }
        }
    }
    for archive in archives {
        for path in &archive.installed {
            install.insert(path, Node::File);
        }
        for tree in &archive.devel {
            for entry in &tree.entries {
                let node = match &entry.kind {
                    DevelKind::Dir => Node::Dir,
                    DevelKind::File => Node::File,
                    DevelKind::Symlink(target) => Node::Symlink(target.clone()),
                    // A hard link shares its target's inode: the same file, wherever it sits.
                    DevelKind::HardLink(_) => Node::File,
                };
                install.insert(&entry.path, node);
            }
        }
    }
    install
}

/// Runs the closure, devel-link and launcher checks over the whole set.
pub(crate) fn check_closure(archives: &[Archive], install: &Install, findings: &mut Findings) {
    for archive in archives {
        let file = archive.file.as_str();
        let devel_elves = archive.devel.iter().flat_map(|tree| tree.elf_files.iter());
        for member in archive.elf_files.iter().chain(devel_elves) {
            check_needed(install, file, member, findings);
            check_launcher(install, file, member, findings);
        }
        for tree in &archive.devel {
            for entry in &tree.entries {
                check_devel_link(install, file, &entry.path, &entry.kind, findings);
            }
        }
    }
}

pub(crate) fn parent_dir(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

pub(crate) fn join(dir: &str, rest: &str) -> String {
    match (dir.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_owned(),
        (_, true) => dir.to_owned(),
        _ => format!("{dir}/{rest}"),
    }
}

/// `a/b/../c` → `a/c`, for messages only (lookups resolve `..` after symlinks, like the kernel).
pub(crate) fn lexical(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return path.to_owned();
                }
            }
            name => parts.push(name),
        }
    }
    parts.join("/")
}

/// The directories `member`'s `$ORIGIN` entries search, in the install.
fn search_dirs(member: &ElfMember) -> Vec<String> {
    let origin = parent_dir(&member.path);
    search_path_entries(&member.elf)
        .filter_map(origin_rest)
        .map(|rest| join(origin, rest.trim_start_matches('/')))
        .collect()
}

/// Where each DT_NEEDED of `member` resolves through its search path, as ld.so looks:
/// the real path of the first file found, or `None`.
pub(crate) fn resolve_needed<'a>(install: &Install, member: &'a ElfMember) -> Vec<(&'a str, Option<String>)> {
    let dirs = search_dirs(member);
    member
        .elf
        .needed
        .iter()
        .map(|needed| {
            let found = (!needed.contains('/'))
                .then(|| dirs.iter().find_map(|dir| install.resolve_file(&join(dir, needed)).ok()))
                .flatten();
            (needed.as_str(), found)
        })
        .collect()
}

fn check_needed(install: &Install, file: &str, member: &ElfMember, findings: &mut Findings) {
    let search_dirs = search_dirs(member);
    for (needed, found) in resolve_needed(install, member) {
        if is_system_library(needed) || found.is_some() {
            continue;
        }
        let searched = if search_dirs.is_empty() {
            "it has no $ORIGIN RPATH entries".to_owned()
        } else {
            let shown: Vec<String> = search_dirs.iter().map(|dir| format!("`{}`", lexical(dir))).collect();
            format!("searched {}", shown.join(", "))
        };
        let elsewhere = install
            .by_file_name
            .get(needed)
            .and_then(|paths| paths.first())
            .map(|path| format!("; a file of that name is at `{path}`"))
            .or_else(|| other_major(install, needed))
            .unwrap_or_default();
        findings.violation(
            file,
            Some(&member.path),
            Check::Closure,
            format!(
                "needs `{needed}`, which resolves nowhere in the install and is not a manylinux system library ({searched}{elsewhere})"
            ),
        );
    }
}

/// When the SDK ships `needed` under another version of its name (`libamdhip64.so.7` for
/// `libamdhip64.so.5`): the file was built for another ROCm major, which no search path mends.
fn other_major(install: &Install, needed: &str) -> Option<String> {
    let (stem, _) = needed.split_once(".so")?;
    let prefix = format!("{stem}.so");
    let (soname, version) =
        install.sdk_sonames.range(prefix.clone()..).take_while(|(name, _)| name.starts_with(&prefix)).find(
            |(name, _)| {
                name.as_str() != needed && (name.len() == prefix.len() || name[prefix.len()..].starts_with('.'))
            },
        )?;
    Some(format!("; the SDK has {soname} (ROCm {version}); this wheel was built for another ROCm major"))
}

fn check_launcher(install: &Install, file: &str, member: &ElfMember, findings: &mut Findings) {
    let Some(target) = &member.launcher_target else { return };
    let message = if target.is_empty() {
        Some("launcher has an empty target".to_owned())
    } else if target.starts_with('/') {
        Some(format!("launcher target `{target}` is absolute"))
    } else {
        install
            .resolve_file(&join(parent_dir(&member.path), target))
            .err()
            .map(|why| format!("launcher target `{target}` {}", why.describe()))
    };
    if let Some(message) = message {
        findings.violation(file, Some(&member.path), Check::Launcher, message);
    }
}

fn check_devel_link(install: &Install, file: &str, path: &str, kind: &DevelKind, findings: &mut Findings) {
    match kind {
        DevelKind::Symlink(target) => {
            // An empty target, or one that resolves to a directory holding the link (`..`,
            // `.`, a SONAME of `..`), makes a tree that anything walking it loops in.
            let message = match install.resolve(path) {
                Err(why) => Some(why.describe()),
                Ok(_) if target.is_empty() => Some("is empty"),
                Ok((real, _)) if path.starts_with(&format!("{real}/")) || real.is_empty() => {
                    Some("points at a directory holding the link itself (a loop)")
                }
                Ok(_) => None,
            };
            if let Some(why) = message {
                findings.violation(
                    file,
                    Some(path),
                    Check::Devel,
                    format!("symlink to `{}` {why} in the simulated install", crate::escape::escape(target)),
                );
            }
        }
        DevelKind::HardLink(target) => {
            if !install.nodes.contains_key(target.trim_end_matches('/')) {
                findings.violation(
                    file,
                    Some(path),
                    Check::Devel,
                    format!("hard link to `{target}`, which is not in the tarball"),
                );
            }
        }
        DevelKind::Dir | DevelKind::File => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install(entries: &[(&str, Node)]) -> Install {
        let mut install = Install::default();
        for (path, node) in entries {
            install.insert(path, node.clone());
        }
        install
    }

    #[test]
    fn resolves_through_links() {
        let tree = install(&[
            ("_core/lib/libx.so.1", Node::File),
            ("_devel/lib/libx.so.1", Node::Symlink("../../_core/lib/libx.so.1".into())),
            ("_devel/lib/libx.so", Node::Symlink("libx.so.1".into())),
            ("_devel/core", Node::Symlink("../_core".into())),
            ("_devel/loop", Node::Symlink("loop".into())),
            ("_devel/out", Node::Symlink("../../x".into())),
        ]);
        assert_eq!(tree.resolve_file("_devel/lib/libx.so"), Ok("_core/lib/libx.so.1".to_owned()));
        assert_eq!(tree.resolve_file("_devel/core/lib/../lib/libx.so.1"), Ok("_core/lib/libx.so.1".to_owned()));
        assert_eq!(tree.resolve("_devel/loop"), Err(Unresolved::Loop));
        assert_eq!(tree.resolve("_devel/out"), Err(Unresolved::Escapes));
        assert_eq!(tree.resolve("_devel/lib/nothing"), Err(Unresolved::Missing));
        assert_eq!(tree.resolve("_core/lib/libx.so.1/x"), Err(Unresolved::NotADirectory));
    }
}
