//! Symlink resolution in the merged namespace (SPEC §2): a link whose target comes from
//! another artifact is not dangling. String work on `RelPath`s, so "escapes the tree" and
//! "loops" never depend on the disk; only looking paths up does (the devel tree's namespace
//! is read from the artifacts, the runtime packages' is in memory).

use std::borrow::Borrow;
use std::collections::VecDeque;

use crate::input::catalog::{Entry, EntryKind};
use crate::relpath::RelPath;

/// Hops before a chain counts as a loop (the kernel's limit is 40 as well).
const MAX_HOPS: usize = 40;

/// Why a symlink cannot be followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unresolved {
    Escapes {
        target: String,
    },
    Dangling {
        missing: RelPath,
    },
    Loop,
    /// A link to a directory holding it (`include/up` → `../include`): every walk of the
    /// tree that follows links loops through it, and the installed runtime refuses a devel
    /// tree that has one (SPEC §4).
    Ancestor {
        target: String,
        dir: RelPath,
    },
}

impl Unresolved {
    pub fn describe(&self) -> String {
        match self {
            Unresolved::Escapes { target } => format!("symlink to {target:?} leaves the artifacts tree"),
            Unresolved::Dangling { missing } => format!("dangling symlink: {missing} is not in the build"),
            Unresolved::Loop => "symlink loop".to_owned(),
            Unresolved::Ancestor { target, dir } if dir.is_root() => {
                format!("symlink to {target:?} points at the root of the tree, which holds the link itself (a loop)")
            }
            Unresolved::Ancestor { target, dir } => {
                format!("symlink to {target:?} points at {dir}, a directory holding the link itself (a loop)")
            }
        }
    }
}

/// Follows the link at `link` with text `target` to a non-link entry (file or directory),
/// looking each path up with `get` (a map of the namespace, or the artifacts on disk).
pub fn resolve<T: Borrow<Entry>>(
    mut get: impl FnMut(&RelPath) -> Option<T>,
    link: &RelPath,
    target: &str,
) -> Result<T, Unresolved> {
    let mut done: Vec<String> = link.components().map(str::to_owned).collect();
    done.pop();
    let mut todo: VecDeque<String> = VecDeque::new();
    push_front_text(&mut todo, target).map_err(|()| Unresolved::Escapes { target: target.to_owned() })?;
    let mut hops = 0;
    let mut last: Option<T> = None;
    while let Some(component) = todo.pop_front() {
        match component.as_str() {
            "." => continue,
            ".." => {
                done.pop().ok_or_else(|| Unresolved::Escapes { target: target.to_owned() })?;
                last = None;
                continue;
            }
            _ => done.push(component),
        }
        let path = RelPath::new(&done.join("/")).map_err(|_| Unresolved::Escapes { target: target.to_owned() })?;
        let entry = get(&path).ok_or(Unresolved::Dangling { missing: path.clone() })?;
        let next = match &entry.borrow().kind {
            EntryKind::Symlink { target: next } => Some(next.clone()),
            _ => None,
        };
        let is_file = matches!(entry.borrow().kind, EntryKind::File { .. });
        if let Some(next) = next {
            hops += 1;
            if hops > MAX_HOPS {
                return Err(Unresolved::Loop);
            }
            done.pop();
            push_front_text(&mut todo, &next).map_err(|()| Unresolved::Escapes { target: next })?;
            last = None;
        } else if is_file && !todo.is_empty() {
            return Err(Unresolved::Dangling { missing: path });
        } else {
            last = Some(entry);
        }
    }
    let found = match last {
        Some(found) => found,
        // Ended on `.` or `..`: the directory reached is `done`, already resolved, or the
        // tree's root, which holds every link.
        None if done.is_empty() => {
            return Err(Unresolved::Ancestor { target: target.to_owned(), dir: RelPath::root() });
        }
        None => {
            let path = RelPath::new(&done.join("/")).map_err(|_| Unresolved::Escapes { target: target.to_owned() })?;
            get(&path).ok_or(Unresolved::Dangling { missing: path })?
        }
    };
    let reached = found.borrow();
    if reached.kind == EntryKind::Dir && link.starts_with(&reached.rel) {
        return Err(Unresolved::Ancestor { target: target.to_owned(), dir: reached.rel.clone() });
    }
    Ok(found)
}

/// Queues the components of a link text; absolute texts are refused.
fn push_front_text(todo: &mut VecDeque<String>, text: &str) -> Result<(), ()> {
    if text.starts_with('/') || text.is_empty() {
        return Err(());
    }
    for component in text.split('/').filter(|part| !part.is_empty()).rev() {
        todo.push_front(component.to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn namespace(items: &[(&str, Option<&str>, bool)]) -> BTreeMap<RelPath, Entry> {
        items
            .iter()
            .map(|(path, link, is_dir)| {
                let rel = RelPath::new(path).expect("rel");
                let kind = match (link, is_dir) {
                    (Some(target), _) => EntryKind::Symlink { target: (*target).to_owned() },
                    (None, true) => EntryKind::Dir,
                    (None, false) => EntryKind::File { len: 1, mode: 0o644, stamp: Default::default() },
                };
                (rel.clone(), Entry { rel, source: PathBuf::from(path).into(), artifact: 0, kind })
            })
            .collect()
    }

    fn check(items: &[(&str, Option<&str>, bool)], link: &str, expect: Result<&str, Unresolved>) {
        let all = namespace(items);
        let rel = RelPath::new(link).expect("rel");
        let EntryKind::Symlink { target } = &all[&rel].kind else { panic!("not a link") };
        let got = resolve(|path: &RelPath| all.get(path), &rel, target).map(|entry| entry.rel.as_str().to_owned());
        assert_eq!(got, expect.map(str::to_owned));
    }

    #[test]
    fn follows_chains() {
        let items = [
            ("lib", None, true),
            ("lib/libx.so", Some("libx.so.1"), false),
            ("lib/libx.so.1", Some("libx.so.1.0"), false),
            ("lib/libx.so.1.0", None, false),
        ];
        check(&items, "lib/libx.so", Ok("lib/libx.so.1.0"));
    }

    #[test]
    fn follows_directory_links_in_the_middle() {
        let items = [
            ("lib", None, true),
            ("lib64", Some("lib"), false),
            ("lib/x", None, false),
            ("bin/y", Some("../lib64/x"), false),
        ];
        check(&items, "bin/y", Ok("lib/x"));
    }

    #[test]
    fn refuses_escapes_loops_and_dangling() {
        let items = [
            ("bin/out", Some("../../etc/passwd"), false),
            ("bin/abs", Some("/usr/bin/env"), false),
            ("bin/a", Some("b"), false),
            ("bin/b", Some("a"), false),
            ("bin/d", Some("missing"), false),
        ];
        check(&items, "bin/out", Err(Unresolved::Escapes { target: "../../etc/passwd".to_owned() }));
        check(&items, "bin/abs", Err(Unresolved::Escapes { target: "/usr/bin/env".to_owned() }));
        check(&items, "bin/a", Err(Unresolved::Loop));
        check(&items, "bin/d", Err(Unresolved::Dangling { missing: RelPath::new("bin/missing").expect("rel") }));
    }

    #[test]
    fn links_to_a_directory_holding_them_are_loops() {
        let items = [
            ("include", None, true),
            ("include/a", None, true),
            ("include/a/up", Some("../../include"), false),
            ("include/a/self", Some("."), false),
            ("include/a/via", Some("../b"), false),
            ("include/b", Some("a"), false),
            ("include/a/sibling", Some("../c"), false),
            ("include/c", None, true),
        ];
        let ancestor = |target: &str, dir: &str| {
            Err(Unresolved::Ancestor { target: target.to_owned(), dir: RelPath::new(dir).expect("rel") })
        };
        check(&items, "include/a/up", ancestor("../../include", "include"));
        check(&items, "include/a/self", ancestor(".", "include/a"));
        check(&items, "include/a/via", ancestor("../b", "include/a"));
        check(&items, "include/a/sibling", Ok("include/c"));
        let root = [("include", None, true), ("include/top", Some(".."), false)];
        check(&root, "include/top", Err(Unresolved::Ancestor { target: "..".to_owned(), dir: RelPath::root() }));
    }

    #[test]
    fn directories_resolve() {
        let items = [("include", None, true), ("inc", Some("include"), false)];
        check(&items, "inc", Ok("include"));
    }
}
