//! A package index for a `dist/` directory: a PEP 503 "simple" index
//! (`simple/index.html`, `simple/{project}/index.html`) and a flat `index.html` for pip's
//! `--find-links`, so a build can be installed with `--index-url file://…/simple` or served
//! by any static web server.
//!
//! Owns: finding the distributions under `dist/` (family subdirectories too, and the
//! variant index files beside variant wheels, SPEC §9), reading each
//! one's project name and `Requires-Python` from its own metadata, hashing, the HTML, and
//! placing the pages atomically. Does not own: checking the packages (`verify`), writing
//! them (`write`).

mod html;
mod scan;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

pub use html::{render_flat_page, render_project_page, render_root_page};

/// One distribution file found under `dist/`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IndexedFile {
    /// The path relative to `dist/`, '/'-separated (`gfx110X-all/rocm-7.1.0.tar.gz`).
    pub rel: String,
    pub file_name: String,
    /// The project name as its metadata spells it.
    pub name: String,
    pub sha256: String,
    pub len: u64,
    pub requires_python: Option<String>,
}

/// Every distribution of a `dist/`, grouped by PEP 503 normalised project name.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Index {
    pub projects: BTreeMap<String, Vec<IndexedFile>>,
}

impl Index {
    pub fn n_files(&self) -> usize {
        self.projects.values().map(Vec::len).sum()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("not a directory: {}", path.display())]
    NotADirectory { path: PathBuf },
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no package metadata in {}: {reason}", path.display())]
    BadMetadata { path: PathBuf, reason: String },
    #[error("file name is not valid UTF-8: {}", path.display())]
    NonUtf8Name { path: PathBuf },
    #[error("two different files are both named {file_name}: {} and {}", first.display(), second.display())]
    DuplicateName { file_name: String, first: PathBuf, second: PathBuf },
}

impl Diagnostic for IndexError {
    /// The file the error is about, for CI annotations.
    fn path(&self) -> Option<&Path> {
        Some(match self {
            IndexError::NotADirectory { path }
            | IndexError::Read { path, .. }
            | IndexError::Write { path, .. }
            | IndexError::BadMetadata { path, .. }
            | IndexError::NonUtf8Name { path } => path,
            IndexError::DuplicateName { second, .. } => second,
        })
    }

    /// What the user can do next.
    fn hint(&self) -> Option<&'static str> {
        match self {
            IndexError::NotADirectory { .. } => {
                Some("pass the dist/ directory under the --dest-dir of `cargo xtask package`")
            }
            IndexError::BadMetadata { .. } => Some("check the file with `cargo xtask verify --dist`, or remove it"),
            IndexError::DuplicateName { .. } => {
                Some("one index cannot offer two files of the same name; index each directory on its own")
            }
            IndexError::NonUtf8Name { .. } => Some("rename or remove the file"),
            IndexError::Read { .. } | IndexError::Write { .. } => None,
        }
    }
}

/// Reads every distribution in `dist` and its direct subdirectories (wheels, `.tar.gz`
/// sdists, and `{name}-{version}-variants.json` files, which PEP 825 links beside variant
/// wheels on their project's page; family subdirectories like the reference's `dist/{family}/`; hidden entries
/// and `simple/` are skipped).
pub fn scan_dist(dist: &Path) -> Result<Index, IndexError> {
    scan::scan(dist)
}

/// Scans `dist` and writes `dist/simple/index.html`, `dist/simple/{project}/index.html` and
/// `dist/index.html`. Each page replaces the old one atomically; project pages of projects
/// no longer present are removed, so the index always describes exactly what `dist/` holds.
pub fn write_index(dist: &Path) -> Result<Index, IndexError> {
    let index = scan_dist(dist)?;
    let simple = dist.join("simple");
    for (project, files) in &index.projects {
        write_atomically(&simple.join(project), "index.html", &render_project_page(project, files))?;
    }
    write_atomically(&simple, "index.html", &render_root_page(&index))?;
    write_atomically(dist, "index.html", &render_flat_page(&index))?;
    remove_stale_projects(&simple, &index)?;
    Ok(index)
}

/// Temp file beside the page, then rename: a web server or pip reading the index while it
/// is rebuilt sees the old page or the new one, never half of one.
fn write_atomically(dir: &Path, file_name: &str, text: &str) -> Result<(), IndexError> {
    let dest = dir.join(file_name);
    let write_error = |source| IndexError::Write { path: dest.clone(), source };
    fs_err::create_dir_all(dir).map_err(write_error)?;
    let mut temp =
        tempfile::Builder::new().prefix(&format!(".{file_name}.tmp-")).tempfile_in(dir).map_err(write_error)?;
    temp.write_all(text.as_bytes()).map_err(write_error)?;
    temp.as_file().sync_all().map_err(write_error)?;
    // tempfile creates 0600; a web server must be able to read the page.
    std::fs::set_permissions(temp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o644)).map_err(write_error)?;
    temp.persist(&dest).map_err(|error| write_error(error.error))?;
    Ok(())
}

/// Removes `simple/{project}/` directories of projects `dist/` no longer holds, but only
/// those that hold nothing except our `index.html` (never someone else's files).
fn remove_stale_projects(simple: &Path, index: &Index) -> Result<(), IndexError> {
    let read_error = |source| IndexError::Read { path: simple.to_path_buf(), source };
    for entry in fs_err::read_dir(simple).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if index.projects.contains_key(&name) || !path.is_dir() {
            continue;
        }
        let children: Vec<_> = fs_err::read_dir(&path)
            .map_err(|source| IndexError::Read { path: path.clone(), source })?
            .filter_map(Result::ok)
            .map(|child| child.file_name())
            .collect();
        if children.iter().all(|child| child == "index.html") {
            fs_err::remove_dir_all(&path).map_err(|source| IndexError::Write { path: path.clone(), source })?;
        }
    }
    Ok(())
}
