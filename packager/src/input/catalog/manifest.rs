//! The files that describe an artifacts directory: each artifact's `artifact_manifest.txt`
//! (its basedirs), the build manifest (kpack-split flag) and `dist_info.json`.

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::input::metadata_file::read_metadata_file;

use super::{Artifact, ArtifactName, BuildManifest, Catalog, CatalogError, BUILD_MANIFEST};

/// Every artifact lists its install prefixes here, one per line.
pub const ARTIFACT_MANIFEST: &str = "artifact_manifest.txt";

/// Relative to a basedir of the `base` artifact.
pub const DIST_INFO: &str = "share/therock/dist_info.json";

/// Checks that `artifacts_dir` is a directory holding at least one artifact directory
/// (`{name}_{component}_{family}/`). A user who pointed at the wrong place learns that
/// first, before the build manifest or the version are looked for.
pub fn check_artifacts_dir(artifacts_dir: &Path) -> Result<(), CatalogError> {
    let path = || artifacts_dir.to_owned();
    match std::fs::metadata(artifacts_dir) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => return Err(CatalogError::ArtifactsDirIsAFile { path: path() }),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(CatalogError::MissingArtifactsDir { path: path() })
        }
        Err(source) => return Err(CatalogError::Read { path: path(), source }),
    }
    let read_dir_error = |source| CatalogError::Read { path: path(), source };
    for dir_entry in std::fs::read_dir(artifacts_dir).map_err(read_dir_error)? {
        let dir_entry = dir_entry.map_err(read_dir_error)?;
        let is_dir = dir_entry.file_type().map_err(read_dir_error)?.is_dir();
        if is_dir && dir_entry.file_name().to_str().and_then(ArtifactName::parse).is_some() {
            return Ok(());
        }
    }
    Err(CatalogError::NotAnArtifactsDir { path: path() })
}

pub(super) fn read_catalog(artifacts_dir: &Path) -> Result<Catalog, CatalogError> {
    check_artifacts_dir(artifacts_dir)?;
    let build_manifest = read_build_manifest(&artifacts_dir.join(BUILD_MANIFEST))?;

    let read_dir_error = |source| CatalogError::Read { path: artifacts_dir.to_owned(), source };
    let mut found: Vec<(ArtifactName, PathBuf)> = Vec::new();
    let mut ignored = Vec::new();
    let mut symlinked = Vec::new();
    for dir_entry in std::fs::read_dir(artifacts_dir).map_err(read_dir_error)? {
        let dir_entry = dir_entry.map_err(read_dir_error)?;
        let file_name = dir_entry.file_name();
        // A symlinked artifact dir could point anywhere, so only real directories count;
        // one named like an artifact is reported (`Catalog::symlinked`), not dropped quietly.
        let file_type = dir_entry.file_type().map_err(read_dir_error)?;
        match (file_type.is_dir(), file_name.to_str().and_then(ArtifactName::parse)) {
            (true, Some(name)) => found.push((name, dir_entry.path())),
            (false, Some(_)) if file_type.is_symlink() => symlinked.push(dir_entry.path()),
            _ => ignored.push(file_name.to_string_lossy().into_owned()),
        }
    }
    // Byte order of the directory name, so "last one wins" does not depend on readdir order.
    found.sort_by_key(|(name, _)| name.dir_name());
    ignored.sort();
    symlinked.sort();
    super::names::check_names(&found, build_manifest.kpack_split)?;

    let artifacts = found
        .into_iter()
        .map(|(name, dir)| {
            let basedirs = read_artifact_manifest(&dir)?;
            Ok(Artifact { name, dir, basedirs })
        })
        .collect::<Result<Vec<_>, CatalogError>>()?;
    let dist_amdgpu_targets = read_dist_amdgpu_targets(&artifacts)?;
    Ok(Catalog {
        artifacts_dir: artifacts_dir.to_owned(),
        artifacts,
        build_manifest,
        dist_amdgpu_targets,
        ignored,
        symlinked,
    })
}

pub(super) fn read_build_manifest(path: &Path) -> Result<BuildManifest, CatalogError> {
    let text = match read_metadata_file(path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(CatalogError::MissingBuildManifest { path: path.to_owned() })
        }
        Err(source) => return Err(CatalogError::Read { path: path.to_owned(), source }),
    };
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| CatalogError::BadBuildManifest { path: path.to_owned(), message: error.to_string() })?;
    if !json.is_object() {
        let message = "expected a JSON object".to_owned();
        return Err(CatalogError::BadBuildManifest { path: path.to_owned(), message });
    }
    // Only a literal `true` selects kpack-split mode, as in the reference; a value that is
    // neither a boolean nor absent (`"true"`, `1`) is a mistake that would silently mean
    // legacy mode, so it is refused.
    let kpack_split = match json.pointer("/flags/KPACK_SPLIT_ARTIFACTS") {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(flag)) => *flag,
        Some(other) => {
            let message = format!("`flags.KPACK_SPLIT_ARTIFACTS` must be true or false, not {other}");
            return Err(CatalogError::BadBuildManifest { path: path.to_owned(), message });
        }
    };
    Ok(BuildManifest { path: path.to_owned(), kpack_split })
}

/// The existing prefixes of `artifact_dir/artifact_manifest.txt`, in manifest order.
pub(super) fn read_artifact_manifest(artifact_dir: &Path) -> Result<Vec<PathBuf>, CatalogError> {
    let path = artifact_dir.join(ARTIFACT_MANIFEST);
    check_manifest_location(artifact_dir, &path)?;
    let text = read_metadata_file(&path).map_err(|source| CatalogError::Read { path: path.clone(), source })?;
    let mut basedirs = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let prefix = line.trim();
        if prefix.is_empty() {
            continue;
        }
        let escapes = || CatalogError::PrefixEscapes { path: path.clone(), line: index + 1, prefix: prefix.to_owned() };
        let prefix_path = Path::new(prefix);
        if !prefix_path.components().all(|component| matches!(component, Component::Normal(_) | Component::CurDir)) {
            return Err(escapes());
        }
        let basedir = artifact_dir.join(prefix_path);
        match basedir_location(artifact_dir, &basedir) {
            Location::Missing => continue,
            Location::ArtifactItself => {
                let reason = format!(
                    "line {} of {} names the artifact directory itself, which would package the manifest",
                    index + 1,
                    path.display()
                );
                return Err(CatalogError::BadPath { path: basedir, reason });
            }
            Location::Outside => return Err(escapes()),
            Location::NotADirectory => {
                let reason = format!("line {} of {} is not a directory", index + 1, path.display());
                return Err(CatalogError::BadPath { path: basedir, reason });
            }
            Location::Unreadable(source) => return Err(CatalogError::Read { path: basedir, source }),
            Location::Inside => basedirs.push(basedir),
        }
    }
    Ok(basedirs)
}

/// A manifest that is a symlink must stay inside the artifacts directory: one pointing
/// elsewhere would let a file outside the build decide what is packaged.
fn check_manifest_location(artifact_dir: &Path, path: &Path) -> Result<(), CatalogError> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink());
    if !is_link {
        return Ok(());
    }
    let artifacts_dir = artifact_dir.parent().unwrap_or(artifact_dir);
    let real = std::fs::canonicalize(path).map_err(|source| CatalogError::Read { path: path.to_owned(), source })?;
    let real_artifacts_dir = std::fs::canonicalize(artifacts_dir)
        .map_err(|source| CatalogError::Read { path: artifacts_dir.to_owned(), source })?;
    if real.starts_with(&real_artifacts_dir) {
        return Ok(());
    }
    let reason = format!("is a symlink to {}, outside the artifacts directory", real.display());
    Err(CatalogError::BadPath { path: path.to_owned(), reason })
}

enum Location {
    Inside,
    /// `.` or a link back to the artifact: its basedir would hold `artifact_manifest.txt`.
    ArtifactItself,
    Missing,
    Outside,
    NotADirectory,
    Unreadable(io::Error),
}

/// Where a prefix really is. A prefix is only a directory name, but one of its components
/// may be a symlink; its real location must stay inside the artifact, or packaging would
/// copy whatever it points at. This is the one place the catalog resolves links on disk:
/// entries below a basedir are never followed.
fn basedir_location(artifact_dir: &Path, basedir: &Path) -> Location {
    let real_basedir = match std::fs::canonicalize(basedir) {
        Ok(real) => real,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Location::Missing,
        Err(error) => return Location::Unreadable(error),
    };
    let real_artifact_dir = match std::fs::canonicalize(artifact_dir) {
        Ok(real) => real,
        Err(error) => return Location::Unreadable(error),
    };
    if !real_basedir.starts_with(&real_artifact_dir) {
        return Location::Outside;
    }
    if real_basedir == real_artifact_dir {
        return Location::ArtifactItself;
    }
    match std::fs::metadata(&real_basedir) {
        Ok(metadata) if metadata.is_dir() => Location::Inside,
        Ok(_) => Location::NotADirectory,
        Err(error) => Location::Unreadable(error),
    }
}

/// `dist_amdgpu_targets` of the last `share/therock/dist_info.json` found in the basedirs
/// of `base` artifacts. A JSON list is joined with `;`, the way the build writes the string.
fn read_dist_amdgpu_targets(artifacts: &[Artifact]) -> Result<Option<String>, CatalogError> {
    let mut found = None;
    for artifact in artifacts.iter().filter(|artifact| artifact.name.name == "base") {
        for basedir in &artifact.basedirs {
            let path = basedir.join(DIST_INFO);
            let text = match read_metadata_file(&path) {
                Ok(text) => text,
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(source) => return Err(CatalogError::Read { path, source }),
            };
            found = parse_dist_info(&text).map_err(|message| CatalogError::BadDistInfo { path, message })?;
        }
    }
    Ok(found)
}

fn parse_dist_info(text: &str) -> Result<Option<String>, String> {
    let json: serde_json::Value = serde_json::from_str(text).map_err(|error| error.to_string())?;
    let object = json.as_object().ok_or("expected a JSON object")?;
    match object.get("dist_amdgpu_targets") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(targets)) => Ok(Some(targets.clone())),
        Some(serde_json::Value::Array(items)) => {
            let targets: Option<Vec<&str>> = items.iter().map(serde_json::Value::as_str).collect();
            let targets = targets.ok_or("`dist_amdgpu_targets` must be a string or a list of strings")?;
            Ok(Some(targets.join(";")))
        }
        Some(_) => Err("`dist_amdgpu_targets` must be a string or a list of strings".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs_err::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
        fs_err::write(path, text).expect("write");
    }

    /// Manifest text → the basedirs (relative to the artifact) or the error's Display.
    fn check_manifest(dirs: &[&str], manifest: &str, expect: Result<&[&str], &str>) {
        let temp = tempfile::tempdir().expect("tempdir");
        let artifact = temp.path().join("a_lib_generic");
        for dir in dirs {
            fs_err::create_dir_all(artifact.join(dir)).expect("mkdir");
        }
        write(&artifact, ARTIFACT_MANIFEST, manifest);
        let actual = read_artifact_manifest(&artifact)
            .map(|basedirs| {
                basedirs
                    .iter()
                    .map(|dir| dir.strip_prefix(&artifact).expect("inside").to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
            })
            .map_err(|error| error.to_string().replace(&temp.path().display().to_string(), "[TMP]"));
        let expect = expect.map(|dirs| dirs.iter().map(|dir| dir.to_string()).collect::<Vec<_>>());
        assert_eq!(actual, expect.map_err(str::to_owned));
    }

    #[test]
    fn manifest_lines_in_order() {
        check_manifest(&["b/stage", "a/stage"], "b/stage\na/stage\n", Ok(&["b/stage", "a/stage"]));
    }

    #[test]
    fn manifest_skips_empty_lines_and_trims() {
        check_manifest(&["x/stage"], "\n   \n  x/stage  \r\n\n", Ok(&["x/stage"]));
        check_manifest(&[], "", Ok(&[]));
    }

    #[test]
    fn manifest_skips_missing_prefixes() {
        check_manifest(&["x/stage"], "gone/stage\nx/stage\n", Ok(&["x/stage"]));
    }

    #[test]
    fn manifest_refuses_escapes() {
        let error =
            "manifest line 2 points outside the artifact: \"../../etc\" in [TMP]/a_lib_generic/artifact_manifest.txt";
        check_manifest(&["x"], "x\n../../etc\n", Err(error));
        let error =
            "manifest line 1 points outside the artifact: \"/etc\" in [TMP]/a_lib_generic/artifact_manifest.txt";
        check_manifest(&[], "/etc\n", Err(error));
        let error =
            "manifest line 1 points outside the artifact: \"x/../x\" in [TMP]/a_lib_generic/artifact_manifest.txt";
        check_manifest(&["x"], "x/../x\n", Err(error));
    }

    #[test]
    fn manifest_refuses_a_symlinked_prefix_leaving_the_artifact() {
        let temp = tempfile::tempdir().expect("tempdir");
        let artifact = temp.path().join("a_lib_generic");
        fs_err::create_dir_all(temp.path().join("outside/stage")).expect("mkdir");
        fs_err::create_dir_all(&artifact).expect("mkdir");
        std::os::unix::fs::symlink("../outside", artifact.join("link")).expect("symlink");
        write(&artifact, ARTIFACT_MANIFEST, "link/stage\n");
        let error = read_artifact_manifest(&artifact).expect_err("escapes through a link");
        assert!(matches!(error, CatalogError::PrefixEscapes { line: 1, .. }), "{error}");
    }

    #[test]
    fn missing_manifest_is_named() {
        let temp = tempfile::tempdir().expect("tempdir");
        let error = read_artifact_manifest(temp.path()).expect_err("no manifest");
        assert_eq!(error.to_string(), format!("cannot read {}", temp.path().join(ARTIFACT_MANIFEST).display()));
    }

    fn check_build_manifest(text: &str, expect: Result<bool, ()>) {
        let temp = tempfile::tempdir().expect("tempdir");
        let path = temp.path().join("therock_manifest.json");
        fs_err::write(&path, text).expect("write");
        let actual = read_build_manifest(&path).map(|manifest| manifest.kpack_split).map_err(|_| ());
        assert_eq!(actual, expect, "{text}");
    }

    #[test]
    fn build_manifest_flag() {
        check_build_manifest(r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": true}}"#, Ok(true));
        check_build_manifest(r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": false}}"#, Ok(false));
        // A string or a number silently meant legacy mode once: refused.
        check_build_manifest(r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": "true"}}"#, Err(()));
        check_build_manifest(r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": 1}}"#, Err(()));
        check_build_manifest(r#"{"flags": {"KPACK_SPLIT_ARTIFACTS": null}}"#, Ok(false));
        check_build_manifest(r#"{"flags": {}}"#, Ok(false));
        check_build_manifest(r#"{}"#, Ok(false));
        check_build_manifest(r#"[1]"#, Err(()));
        check_build_manifest(r#"{"flags": "#, Err(()));
    }

    #[test]
    fn missing_build_manifest() {
        let error = read_build_manifest(Path::new("/nonexistent/m.json")).expect_err("missing");
        assert_eq!(error.to_string(), "build manifest not found: /nonexistent/m.json");
    }

    #[test]
    fn dist_info() {
        let check = |text: &str, expect: Result<Option<&str>, ()>| {
            assert_eq!(parse_dist_info(text).map_err(|_| ()), expect.map(|t| t.map(str::to_owned)), "{text}");
        };
        check(r#"{"dist_amdgpu_targets": "gfx1100;gfx1101"}"#, Ok(Some("gfx1100;gfx1101")));
        check(r#"{"dist_amdgpu_targets": ["gfx90a", "gfx942"]}"#, Ok(Some("gfx90a;gfx942")));
        check(r#"{"other": 1}"#, Ok(None));
        check(r#"{"dist_amdgpu_targets": 3}"#, Err(()));
        check(r#"nope"#, Err(()));
    }
}
