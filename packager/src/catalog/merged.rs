//! The merged namespace of some artifacts read from the disk while it is walked, one
//! directory at a time, for a tree too large to hold: the devel tree takes every path of
//! the build, once per family (SPEC §5: memory bounded whatever the build's size).
//!
//! It is the same namespace [`super::Catalog::select`] builds in memory: every entry of
//! every basedir, links never followed, the later basedir winning a clash, in the path
//! order of [`RelPath`]; only a directory's children are held at once.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::namespace::{entry_at, kind_clash};
use super::{ArtifactName, Catalog, CatalogError, Entry, EntryKind, Override};
use crate::relpath::RelPath;

/// The basedirs of the selected artifacts, in clash order (the last one wins).
#[derive(Debug, Default)]
pub struct MergedTree {
    basedirs: Vec<Basedir>,
    /// Artifact directory names by [`Entry::artifact`], for overrides.
    artifact_names: BTreeMap<usize, String>,
    /// The directories [`MergedTree::lookup`] listed last, least recent first.
    listings: Mutex<Vec<(RelPath, Arc<Listing>)>>,
}

/// Directories whose listings lookups keep.
const KEPT_LISTINGS: usize = 8;

type Listing = BTreeMap<OsString, Child>;

#[derive(Clone, Debug)]
struct Basedir {
    dir: PathBuf,
    artifact: usize,
}

/// One name of a directory in the merged namespace.
#[derive(Debug)]
struct Child {
    /// The entry of the last basedir that has the name.
    winner: Entry,
    /// Basedirs in which the name is a real directory (never a link to one): the walk goes
    /// on below it in each of them, as a walk of each artifact would.
    dir_in: Vec<usize>,
}

impl MergedTree {
    /// The artifacts `selected` picks, in the catalog's (name) order.
    pub fn new(catalog: &Catalog, selected: &dyn Fn(&ArtifactName) -> bool) -> MergedTree {
        let mut tree = MergedTree::default();
        for (index, artifact) in catalog.artifacts.iter().enumerate().filter(|(_, artifact)| selected(&artifact.name)) {
            tree.artifact_names.insert(index, artifact.name.dir_name());
            for dir in &artifact.basedirs {
                tree.basedirs.push(Basedir { dir: dir.clone(), artifact: index });
            }
        }
        tree
    }

    pub fn is_empty(&self) -> bool {
        self.basedirs.is_empty()
    }

    /// The directory names of the selected artifacts, sorted.
    pub fn artifact_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.artifact_names.values().cloned().collect();
        names.sort();
        names
    }

    /// Calls `each` with every entry in path order, and `clash` with every path two
    /// basedirs provide (other than a directory in both).
    pub fn walk<E: From<CatalogError>>(
        &self,
        each: &mut dyn FnMut(Entry) -> Result<(), E>,
        clash: &mut dyn FnMut(Override),
    ) -> Result<(), E> {
        let all: Vec<usize> = (0..self.basedirs.len()).collect();
        self.walk_below(&RelPath::root(), &all, each, clash)
    }

    fn walk_below<E: From<CatalogError>>(
        &self,
        dir: &RelPath,
        dir_in: &[usize],
        each: &mut dyn FnMut(Entry) -> Result<(), E>,
        clash: &mut dyn FnMut(Override),
    ) -> Result<(), E> {
        let children = self.children(dir, dir_in, clash)?;
        // A directory's own entry sorts by its name, what lies below it by its name and a
        // '/': that is where its paths fall among its siblings' in string order ("a",
        // "a.b", "a/x").
        let mut order: Vec<(Vec<u8>, bool)> = Vec::with_capacity(children.len() * 2);
        for (name, child) in &children {
            order.push((name.as_bytes().to_vec(), false));
            if !child.dir_in.is_empty() {
                order.push(([name.as_bytes(), b"/"].concat(), true));
            }
        }
        order.sort();
        let mut children = children;
        for (key, below) in order {
            if below {
                let name = OsString::from_vec(key[..key.len() - 1].to_vec());
                // A name's own entry sorts before what lies below it, so it was given already.
                let Some(child) = children.remove(&name) else { continue };
                self.walk_below(&child.winner.rel, &child.dir_in, each, clash)?;
            } else if let Some(child) = children.get(&OsString::from_vec(key)) {
                each(child.winner.clone())?;
            }
        }
        Ok(())
    }

    /// The children of `dir`, merged across the basedirs it is a directory in.
    fn children(
        &self,
        dir: &RelPath,
        dir_in: &[usize],
        clash: &mut dyn FnMut(Override),
    ) -> Result<Listing, CatalogError> {
        let mut children: BTreeMap<OsString, Child> = BTreeMap::new();
        for &index in dir_in {
            let basedir = &self.basedirs[index];
            let path = basedir.dir.join(dir.as_str());
            let read_error = |source| CatalogError::Read { path: path.clone(), source };
            let mut names: Vec<OsString> = std::fs::read_dir(&path)
                .map_err(read_error)?
                .map(|entry| entry.map(|entry| entry.file_name()))
                .collect::<Result<_, _>>()
                .map_err(read_error)?;
            names.sort();
            for name in names {
                let entry = entry_at(&basedir.dir, path.join(&name), basedir.artifact)?;
                let is_dir = entry.kind == EntryKind::Dir;
                match children.get_mut(&name) {
                    Some(child) => {
                        if let Some(clash) = kind_clash(&child.winner, &entry, &|artifact| self.artifact_name(artifact))
                        {
                            return Err(clash);
                        }
                        if !(child.winner.kind == EntryKind::Dir && is_dir) {
                            clash(Override {
                                rel: entry.rel.clone(),
                                winner: self.artifact_name(entry.artifact),
                                loser: self.artifact_name(child.winner.artifact),
                            });
                        }
                        child.winner = entry;
                        if is_dir {
                            child.dir_in.push(index);
                        }
                    }
                    None => {
                        let dir_in = if is_dir { vec![index] } else { Vec::new() };
                        children.insert(name, Child { winner: entry, dir_in });
                    }
                }
            }
        }
        Ok(children)
    }

    /// The entry at `rel`, as [`MergedTree::walk`] would give it. The listings of the
    /// directories looked up last are kept: links mostly point into a few directories.
    pub fn lookup(&self, rel: &RelPath) -> Result<Option<Entry>, CatalogError> {
        let Some(parent) = rel.parent() else { return Ok(None) };
        let listing = self.listing(&parent)?;
        Ok(listing.get(std::ffi::OsStr::new(rel.file_name())).map(|child| child.winner.clone()))
    }

    /// Forgets the listings [`MergedTree::lookup`] kept.
    pub(crate) fn forget_listings(&self) {
        self.listings.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }

    fn listing(&self, dir: &RelPath) -> Result<Arc<Listing>, CatalogError> {
        {
            let mut listings = self.listings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(at) = listings.iter().position(|(cached, _)| cached == dir) {
                let hit = listings.remove(at);
                let listing = Arc::clone(&hit.1);
                listings.push(hit);
                return Ok(listing);
            }
        }
        let dir_in: Vec<usize> = match dir.parent() {
            None => (0..self.basedirs.len()).collect(),
            Some(parent) => match self.listing(&parent)?.get(std::ffi::OsStr::new(dir.file_name())) {
                Some(child) => child.dir_in.clone(),
                None => Vec::new(),
            },
        };
        let listing = Arc::new(self.children(dir, &dir_in, &mut |_| {})?);
        let mut listings = self.listings.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if listings.len() == KEPT_LISTINGS {
            listings.remove(0);
        }
        listings.push((dir.clone(), Arc::clone(&listing)));
        Ok(listing)
    }

    fn artifact_name(&self, artifact: usize) -> String {
        self.artifact_names.get(&artifact).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Selection;
    use diagnostic::Diagnostic;
    use std::os::unix::fs::symlink;

    fn artifact(root: &std::path::Path, name: &str, files: &[&str], links: &[(&str, &str)]) {
        let stage = root.join(name).join("stage");
        std::fs::create_dir_all(&stage).expect("stage");
        std::fs::write(root.join(name).join("artifact_manifest.txt"), "stage\n").expect("manifest");
        for file in files {
            let path = stage.join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(&path, file.as_bytes()).expect("file");
        }
        for (link, target) in links {
            let path = stage.join(link);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            symlink(target, &path).expect("link");
        }
    }

    #[test]
    fn walks_what_select_builds_in_the_same_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let manifest = root.join(crate::catalog::BUILD_MANIFEST);
        std::fs::create_dir_all(manifest.parent().expect("parent")).expect("dirs");
        std::fs::write(&manifest, "{}").expect("manifest");
        std::fs::write(root.join("base_lib_generic/artifact_manifest.txt"), "base/aux-overlay/stage\n").expect("m");
        artifact(root, "a_dev_generic", &["a/x", "a.b", "a-c/y", "lib/libz.so.1", "clash"], &[("lib64", "lib")]);
        artifact(root, "b_dev_generic", &["a/z", "clash", "lib32/w", "a.b.c/q"], &[("lib/libz.so", "libz.so.1")]);
        let catalog = Catalog::read(root).expect("catalog");
        let selected = |name: &ArtifactName| name.name != "base";
        let in_memory = catalog
            .select(&Selection { artifacts: &selected, include: Vec::new(), exclude: Vec::new() })
            .expect("select");
        let merged = MergedTree::new(&catalog, &selected);
        let mut walked = Vec::new();
        let mut clashes = Vec::new();
        merged
            .walk::<CatalogError>(
                &mut |entry| {
                    walked.push(entry);
                    Ok(())
                },
                &mut |clash| clashes.push(clash),
            )
            .expect("walk");
        let expected: Vec<(&RelPath, &Entry)> = in_memory.entries().collect();
        assert_eq!(walked.len(), expected.len());
        for (got, (rel, want)) in walked.iter().zip(&expected) {
            assert_eq!(&got.rel, *rel);
            assert_eq!(got.kind, want.kind, "{rel}");
            assert_eq!(got.source, want.source, "{rel}");
            let looked_up = merged.lookup(rel).expect("lookup").expect("found");
            assert_eq!(looked_up.source, want.source, "{rel}");
        }
        assert_eq!(clashes, in_memory.overridden);
        assert!(merged.lookup(&RelPath::new("lib64/libz.so.1").expect("rel")).expect("lookup").is_none());
        assert!(merged.lookup(&RelPath::new("nothing/here").expect("rel")).expect("lookup").is_none());
    }

    /// A directory in one artifact and a file or symlink at its path in another: both the
    /// walk and the in-memory namespace refuse it, naming both artifacts, in either order.
    #[test]
    fn a_directory_clashing_with_a_file_or_symlink_is_refused_both_ways() {
        type Files = &'static [&'static str];
        type Links = &'static [(&'static str, &'static str)];
        let cases: [(Files, Links, Files, Links, &str); 4] = [
            (
                &["inc/h/a.h"],
                &[],
                &[],
                &[("inc/h", "real")],
                "inc/h is a directory in a_dev_generic and a symlink in b_dev_generic",
            ),
            (&["inc/h/a.h"], &[], &["inc/h"], &[], "inc/h is a directory in a_dev_generic and a file in b_dev_generic"),
            (
                &[],
                &[("inc/h", "real")],
                &["inc/h/a.h"],
                &[],
                "inc/h is a symlink in a_dev_generic and a directory in b_dev_generic",
            ),
            (&["inc/h"], &[], &["inc/h/a.h"], &[], "inc/h is a file in a_dev_generic and a directory in b_dev_generic"),
        ];
        for (a_files, a_links, b_files, b_links, expect) in cases {
            let dir = tempfile::tempdir().expect("tempdir");
            let root = dir.path();
            let manifest = root.join(crate::catalog::BUILD_MANIFEST);
            std::fs::create_dir_all(manifest.parent().expect("parent")).expect("dirs");
            std::fs::write(&manifest, "{}").expect("manifest");
            std::fs::write(root.join("base_lib_generic/artifact_manifest.txt"), "missing\n").expect("m");
            artifact(root, "a_dev_generic", a_files, a_links);
            artifact(root, "b_dev_generic", b_files, b_links);
            let catalog = Catalog::read(root).expect("catalog");
            let selected = |name: &ArtifactName| name.name != "base";
            let in_memory = catalog
                .select(&Selection { artifacts: &selected, include: Vec::new(), exclude: Vec::new() })
                .expect_err("refused in memory");
            let walked = MergedTree::new(&catalog, &selected)
                .walk::<CatalogError>(&mut |_| Ok(()), &mut |_| {})
                .expect_err("refused while walking");
            for error in [in_memory, walked] {
                assert!(matches!(error, CatalogError::KindClash(_)), "{error:?}");
                assert!(error.to_string().starts_with(expect), "{error}");
                assert!(error.hint().is_some_and(|hint| hint.contains("nothing was written")), "{error:?}");
            }
        }
    }
}
