//! `RelPath`: the one path type used inside packages.
//!
//! Owns: turning on-disk paths into portable, '/'-separated UTF-8 member paths, and the
//! string operations the plan needs on them (join, parent, depth, symlink resolution).
//! Does not own: reading the disk (`catalog`).

use std::fmt;
use std::path::{Component, Path};
use std::sync::Arc;

/// A '/'-separated, normalised, UTF-8 path inside a package. Never absolute, never
/// contains `.` or `..` components, never empty components. The empty path is the root.
///
/// Shared, not owned: one path is a key in the catalog, in its package's plan and in each
/// devel tree, and a clone costs a reference count instead of a copy of the text. The plan
/// of a ROCm build holds hundreds of thousands of them (SPEC §5: bounded memory).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(Arc<str>);

impl serde::Serialize for RelPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// Why a string or path could not become a [`RelPath`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelPathError {
    #[error("name is not valid UTF-8")]
    NonUtf8,
    #[error("path is absolute")]
    Absolute,
    #[error("path has a `..` component")]
    ParentComponent,
    #[error("path has an empty or `.` component")]
    EmptyComponent,
    #[error("path has a backslash or a control character (NUL, newline, escape, ...) in a component")]
    BadCharacter,
}

impl RelPath {
    /// The root of a tree (no components).
    pub fn root() -> RelPath {
        RelPath(Arc::from(""))
    }

    /// Parses a '/'-separated relative path, rejecting anything that could escape a tree.
    pub fn new(text: &str) -> Result<RelPath, RelPathError> {
        if text.is_empty() {
            return Ok(RelPath::root());
        }
        if text.starts_with('/') {
            return Err(RelPathError::Absolute);
        }
        for component in text.split('/') {
            check_component(component)?;
        }
        Ok(RelPath(Arc::from(text)))
    }

    /// Strips `base` from `path` and joins the remaining components with '/'.
    pub fn from_fs(base: &Path, path: &Path) -> Result<RelPath, RelPathError> {
        let rest = path.strip_prefix(base).map_err(|_| RelPathError::Absolute)?;
        let mut parts: Vec<&str> = Vec::new();
        for component in rest.components() {
            match component {
                Component::Normal(name) => {
                    let name = name.to_str().ok_or(RelPathError::NonUtf8)?;
                    check_component(name)?;
                    parts.push(name);
                }
                Component::CurDir => {}
                Component::ParentDir => return Err(RelPathError::ParentComponent),
                Component::RootDir | Component::Prefix(_) => return Err(RelPathError::Absolute),
            }
        }
        Ok(RelPath(parts.join("/").into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// Appends one or more '/'-separated components.
    pub fn join(&self, rest: &str) -> Result<RelPath, RelPathError> {
        let rest = RelPath::new(rest)?;
        Ok(self.join_rel(&rest))
    }

    pub fn join_rel(&self, rest: &RelPath) -> RelPath {
        match (self.is_root(), rest.is_root()) {
            (true, _) => rest.clone(),
            (_, true) => self.clone(),
            _ => RelPath(format!("{}/{}", self.0, rest.0).into()),
        }
    }

    /// The containing directory; the root's parent is `None`.
    pub fn parent(&self) -> Option<RelPath> {
        if self.is_root() {
            return None;
        }
        Some(match self.0.rfind('/') {
            Some(index) => RelPath(Arc::from(&self.0[..index])),
            None => RelPath::root(),
        })
    }

    /// The last component ("" for the root).
    pub fn file_name(&self) -> &str {
        match self.0.rfind('/') {
            Some(index) => &self.0[index + 1..],
            None => &self.0,
        }
    }

    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|part| !part.is_empty())
    }

    /// Number of directories between this path and the tree root: `lib/x.so` → 1.
    pub fn depth(&self) -> usize {
        self.components().count().saturating_sub(1)
    }

    pub fn starts_with(&self, prefix: &RelPath) -> bool {
        prefix.is_root()
            || self.0 == prefix.0
            || (self.0.starts_with(&*prefix.0) && self.0.as_bytes().get(prefix.0.len()) == Some(&b'/'))
    }

    /// Resolves a symlink target written in the link `self` (relative to its directory)
    /// without touching the disk. `None` when the target is absolute or climbs above the root.
    pub fn resolve_link_target(&self, target: &str) -> Option<RelPath> {
        if target.starts_with('/') {
            return None;
        }
        let mut parts: Vec<&str> = self.components().collect();
        parts.pop()?;
        for component in target.split('/') {
            match component {
                "" | "." => {}
                ".." => {
                    parts.pop()?;
                }
                name => {
                    check_component(name).ok()?;
                    parts.push(name);
                }
            }
        }
        Some(RelPath(parts.join("/").into()))
    }

    /// The relative text that reaches `target` from the directory holding `self`.
    pub fn relative_link_to(&self, target: &RelPath) -> String {
        let mut from_dir: Vec<&str> = self.components().collect();
        from_dir.pop();
        let to: Vec<&str> = target.components().collect();
        let common = from_dir.iter().zip(to.iter()).take_while(|(a, b)| a == b).count();
        let mut parts: Vec<&str> = vec![".."; from_dir.len() - common];
        parts.extend(&to[common..]);
        if parts.is_empty() {
            ".".to_owned()
        } else {
            parts.join("/")
        }
    }
}

fn check_component(component: &str) -> Result<(), RelPathError> {
    match component {
        "" | "." => Err(RelPathError::EmptyComponent),
        ".." => Err(RelPathError::ParentComponent),
        // Any control character, not only those that split lines: an escape sequence in a
        // name rewrites the terminal of whoever lists the package.
        name if name.contains('\\') || name.chars().any(char::is_control) => Err(RelPathError::BadCharacter),
        _ => Ok(()),
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(text: &str) -> RelPath {
        RelPath::new(text).expect("valid test path")
    }

    #[test]
    fn rejects_escapes() {
        assert_eq!(RelPath::new("/etc/passwd"), Err(RelPathError::Absolute));
        assert_eq!(RelPath::new("a/../b"), Err(RelPathError::ParentComponent));
        assert_eq!(RelPath::new("a//b"), Err(RelPathError::EmptyComponent));
        assert_eq!(RelPath::new("a/./b"), Err(RelPathError::EmptyComponent));
    }

    #[test]
    fn depth_and_parent() {
        assert_eq!(rel("lib/libx.so").depth(), 1);
        assert_eq!(rel("libx.so").depth(), 0);
        assert_eq!(rel("lib/llvm/bin/clang").parent(), Some(rel("lib/llvm/bin")));
        assert_eq!(rel("x").parent(), Some(RelPath::root()));
    }

    #[test]
    fn resolves_links_in_the_namespace() {
        assert_eq!(rel("lib/libx.so").resolve_link_target("libx.so.1"), Some(rel("lib/libx.so.1")));
        assert_eq!(rel("bin/tool").resolve_link_target("../libexec/t/tool.py"), Some(rel("libexec/t/tool.py")));
        assert_eq!(rel("bin/tool").resolve_link_target("../../outside"), None);
        assert_eq!(rel("bin/tool").resolve_link_target("/usr/bin/env"), None);
    }

    #[test]
    fn relative_links() {
        assert_eq!(rel("bin/tool").relative_link_to(&rel("libexec/t/tool.py")), "../libexec/t/tool.py");
        assert_eq!(rel("lib/libx.so").relative_link_to(&rel("lib/libx.so.1")), "libx.so.1");
        assert_eq!(rel("a").relative_link_to(&rel("b/c")), "b/c");
    }

    #[test]
    fn starts_with_whole_components() {
        assert!(rel("lib/llvm/bin").starts_with(&rel("lib/llvm")));
        assert!(!rel("lib/llvmx").starts_with(&rel("lib/llvm")));
    }
}
