//! The destination apart from the artifacts (SPEC §5): a run reads the artifacts directory
//! and writes its destination, so the two must not overlap. A `--dest-dir` inside an
//! artifact's install tree changes the build while it is read (every run then fails as if
//! the build were still running), one equal to the artifacts directory lays package trees
//! among the artifacts (the next run reads them as input), and an artifacts directory
//! inside the output directory is one the run's cleanup and commits walk. Each is refused
//! before anything is written, with the paths as given and, when links or mounts made
//! them meet, as they really are.
//!
//! Paths are compared as the file system sees them: each is resolved through its symlinks
//! (a destination not yet created through its longest existing ancestor), and directories
//! are told apart by device and inode, so a bind mount of the artifacts is seen too.
//!
//! Owns: that comparison and its error. Does not own: where the outputs go (`config`),
//! creating or locking the destination (`dest_lock`).

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use diagnostic::Diagnostic;

use crate::config::Destination;

#[derive(Debug, thiserror::Error)]
pub enum OverlapError {
    #[error(
        "--dest-dir {} is the artifacts directory {}: the run would write its packages among the artifacts it reads",
        shown(dest_dir, real_dest),
        shown(artifacts_dir, real_artifacts)
    )]
    Same { dest_dir: PathBuf, real_dest: PathBuf, artifacts_dir: PathBuf, real_artifacts: PathBuf },
    #[error(
        "--dest-dir {} is inside the artifacts directory {}: the run would write into the build it reads",
        shown(dest_dir, real_dest),
        shown(artifacts_dir, real_artifacts)
    )]
    DestInsideArtifacts { dest_dir: PathBuf, real_dest: PathBuf, artifacts_dir: PathBuf, real_artifacts: PathBuf },
    #[error(
        "the artifacts directory {} is inside {}, where this run writes its {what}: the outputs would land among the artifacts",
        shown(artifacts_dir, real_artifacts),
        shown(output_dir, real_output)
    )]
    ArtifactsInsideOutput {
        artifacts_dir: PathBuf,
        real_artifacts: PathBuf,
        output_dir: PathBuf,
        real_output: PathBuf,
        what: &'static str,
    },
    #[error(
        "cannot tell where {} is, to keep the destination apart from the artifacts",
        crate::escape::escape_path(path)
    )]
    Unresolvable {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Diagnostic for OverlapError {
    fn hint(&self) -> Option<&'static str> {
        match self {
            OverlapError::Unresolvable { .. } => {
                Some("check that each directory on the way to that path may be read (and is not a symlink loop)")
            }
            _ => Some(
                "pass a --dest-dir outside the artifacts directory and not above it, for example beside it \
                 (TheRock writes packages to build/python-packages, next to build/artifacts); nothing was written",
            ),
        }
    }

    /// The destination the error is about: what the user can change.
    fn path(&self) -> Option<&Path> {
        Some(match self {
            OverlapError::Same { dest_dir, .. } | OverlapError::DestInsideArtifacts { dest_dir, .. } => dest_dir,
            OverlapError::ArtifactsInsideOutput { output_dir, .. } => output_dir,
            OverlapError::Unresolvable { path, .. } => path,
        })
    }
}

/// `path`, and where it really is when links made that another place.
fn shown(given: &Path, real: &Path) -> String {
    let given_text = crate::escape::escape_path(given);
    if given == real {
        given_text
    } else {
        format!("{given_text} (really {})", crate::escape::escape_path(real))
    }
}

/// Refuses a destination that overlaps the artifacts directory (see the module docs).
/// `trees` says what the output directory receives, for the message.
/// An artifacts directory that cannot be resolved is left to the catalog, whose error
/// says what is wrong with it.
pub fn check_apart(artifacts_dir: &Path, destination: &Destination, trees: bool) -> Result<(), OverlapError> {
    let Ok(real_artifacts) = std::fs::canonicalize(artifacts_dir) else { return Ok(()) };
    let artifacts_id = identity(&real_artifacts).map_err(unresolvable(artifacts_dir))?;
    let real_dest = real_location(&destination.dest_dir).map_err(unresolvable(&destination.dest_dir))?;
    let real_output = real_location(&destination.output_dir).map_err(unresolvable(&destination.output_dir))?;
    let paths = || (destination.dest_dir.clone(), real_dest.clone(), artifacts_dir.to_owned(), real_artifacts.clone());
    if is_same(&real_dest, artifacts_id) {
        let (dest_dir, real_dest, artifacts_dir, real_artifacts) = paths();
        return Err(OverlapError::Same { dest_dir, real_dest, artifacts_dir, real_artifacts });
    }
    if has_ancestor(&real_dest, artifacts_id) {
        let (dest_dir, real_dest, artifacts_dir, real_artifacts) = paths();
        return Err(OverlapError::DestInsideArtifacts { dest_dir, real_dest, artifacts_dir, real_artifacts });
    }
    if let Ok(output_id) = identity(&real_output) {
        if is_same(&real_artifacts, output_id) || has_ancestor(&real_artifacts, output_id) {
            return Err(OverlapError::ArtifactsInsideOutput {
                artifacts_dir: artifacts_dir.to_owned(),
                real_artifacts,
                output_dir: destination.output_dir.clone(),
                real_output,
                what: if trees { "package trees" } else { "archives" },
            });
        }
    }
    Ok(())
}

fn unresolvable(path: &Path) -> impl FnOnce(io::Error) -> OverlapError + '_ {
    move |source| OverlapError::Unresolvable { path: path.to_owned(), source }
}

/// A directory as the file system tells it apart from every other: device and inode.
type DirId = (u64, u64);

fn identity(path: &Path) -> io::Result<DirId> {
    let metadata = std::fs::metadata(path)?;
    Ok((metadata.dev(), metadata.ino()))
}

fn is_same(path: &Path, id: DirId) -> bool {
    identity(path).is_ok_and(|found| found == id)
}

/// Whether a strict ancestor of `path` (each resolved, so a bind mount counts) is `id`.
fn has_ancestor(path: &Path, id: DirId) -> bool {
    path.ancestors().skip(1).any(|ancestor| is_same(ancestor, id))
}

/// Where `path` is or will be: its longest existing ancestor resolved through symlinks,
/// then the rest, which does not exist yet and so holds no link (a `..` there steps back
/// lexically, as creating the directories would).
fn real_location(path: &Path) -> io::Result<PathBuf> {
    let mut existing = path;
    let mut rest: Vec<Component<'_>> = Vec::new();
    loop {
        match std::fs::canonicalize(existing) {
            Ok(mut real) => {
                for component in rest.into_iter().rev() {
                    match component {
                        Component::ParentDir => {
                            real.pop();
                        }
                        Component::CurDir => {}
                        other => real.push(other),
                    }
                }
                return Ok(real);
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        let Some(last) = existing.components().next_back() else {
            return std::fs::canonicalize(".");
        };
        rest.push(last);
        existing = match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn destination(dest_dir: &Path, trees: bool) -> Destination {
        let output_dir = if trees { dest_dir.to_owned() } else { dest_dir.join(crate::config::DIST_DIR) };
        Destination { dest_dir: dest_dir.to_owned(), output_dir }
    }

    /// (dest relative to the temp dir, trees) → the error's variant name, or "apart".
    fn check(make: impl FnOnce(&Path), dest: &str, trees: bool, expect: &str) {
        let temp = tempfile::tempdir().expect("tempdir");
        let root = temp.path();
        std::fs::create_dir_all(root.join("build/artifacts/blas_lib_generic/stage")).expect("mkdir");
        make(root);
        let outcome = match check_apart(&root.join("build/artifacts"), &destination(&root.join(dest), trees), trees) {
            Ok(()) => "apart",
            Err(OverlapError::Same { .. }) => "same",
            Err(OverlapError::DestInsideArtifacts { .. }) => "dest inside",
            Err(OverlapError::ArtifactsInsideOutput { .. }) => "artifacts inside",
            Err(OverlapError::Unresolvable { .. }) => "unresolvable",
        };
        assert_eq!(outcome, expect, "{dest} (trees: {trees})");
    }

    #[test]
    fn overlapping_destinations_are_told_apart() {
        let nothing = |_: &Path| {};
        check(nothing, "build/python-packages", false, "apart");
        check(nothing, "build/python-packages", true, "apart");
        check(nothing, "build", false, "apart");
        check(nothing, "build/artifacts", false, "same");
        check(nothing, "build/artifacts", true, "same");
        check(nothing, "build/artifacts/", true, "same");
        check(nothing, "build/artifacts/blas_lib_generic/stage/out", false, "dest inside");
        check(nothing, "build/artifacts/not-yet/../out", false, "dest inside");
        check(nothing, "build/elsewhere/../artifacts/new", false, "dest inside");
        check(nothing, "build", true, "artifacts inside");
        check(nothing, ".", true, "artifacts inside");
        check(nothing, "build/artifacts/..", true, "artifacts inside");
    }

    #[test]
    fn links_and_bind_like_aliases_are_seen_through() {
        let linked = |root: &Path| symlink("build/artifacts/blas_lib_generic", root.join("alias")).expect("symlink");
        check(linked, "alias/stage/out", false, "dest inside");
        let linked = |root: &Path| symlink("build/artifacts", root.join("alias")).expect("symlink");
        check(linked, "alias", true, "same");
        let linked = |root: &Path| symlink("build", root.join("alias")).expect("symlink");
        check(linked, "alias", true, "artifacts inside");
        check(linked, "alias/python-packages", true, "apart");
    }
}
