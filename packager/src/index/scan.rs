//! Finding the distributions under `dist/` and reading what the index needs from each:
//! the project name and `Requires-Python` from the archive's own metadata (a file name
//! alone cannot tell `rocm-sdk-core` from a `rocm` sdist whose version starts with
//! `sdk`), and the sha256 of the file.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::{Index, IndexError, IndexedFile};
use archive_write::normalize;

use crate::identity::parse_variants_json_file_name;

pub(super) fn scan(dist: &Path) -> Result<Index, IndexError> {
    if !dist.is_dir() {
        return Err(IndexError::NotADirectory { path: dist.to_path_buf() });
    }
    let mut found = Vec::new();
    walk(dist, "", &mut found)?;
    // Of identical copies the shallowest is offered (`dist/x.whl` over `dist/merged/x.whl`).
    found.sort_by(|(a, _), (b, _)| a.matches('/').count().cmp(&b.matches('/').count()).then_with(|| a.cmp(b)));
    // Large wheels take a while to hash: one file per core. An
    // indexed parallel collect keeps that order.
    let files: Vec<IndexedFile> =
        found.par_iter().map(|(rel, path)| read_file(rel, path)).collect::<Result<_, IndexError>>()?;
    let mut projects: BTreeMap<String, Vec<IndexedFile>> = BTreeMap::new();
    let mut by_file_name: BTreeMap<String, IndexedFile> = BTreeMap::new();
    for file in files {
        if let Some(first) = by_file_name.get(&file.file_name) {
            if first.sha256 == file.sha256 {
                // The same bytes twice (e.g. merged CI dist/ folders): offer it once.
                continue;
            }
            return Err(IndexError::DuplicateName {
                file_name: file.file_name.clone(),
                first: dist.join(&first.rel),
                second: dist.join(&file.rel),
            });
        }
        by_file_name.insert(file.file_name.clone(), file.clone());
        projects.entry(normalize(&file.name)).or_default().push(file);
    }
    for files in projects.values_mut() {
        files.sort_by(|a, b| a.file_name.cmp(&b.file_name).then_with(|| a.rel.cmp(&b.rel)));
    }
    Ok(Index { projects })
}

/// Sorted depth-first walk collecting `(rel, path)` of every wheel and sdist.
fn walk(dir: &Path, rel_dir: &str, found: &mut Vec<(String, PathBuf)>) -> Result<(), IndexError> {
    let read_error = |source| IndexError::Read { path: dir.to_path_buf(), source };
    let mut entries: Vec<_> =
        fs_err::read_dir(dir).map_err(read_error)?.collect::<Result<_, _>>().map_err(read_error)?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            if is_distribution(&entry.file_name().to_string_lossy()) {
                return Err(IndexError::NonUtf8Name { path });
            }
            continue;
        };
        // Hidden entries are ours (the lock, temp files) or not meant to be published;
        // `simple/` is the index itself.
        if name.starts_with('.') || (rel_dir.is_empty() && name == "simple") {
            continue;
        }
        let rel = if rel_dir.is_empty() { name.clone() } else { format!("{rel_dir}/{name}") };
        // symlink_metadata: a directory symlink is not followed, so a loop cannot hang us.
        let kind = fs_err::symlink_metadata(&path).map_err(|source| IndexError::Read { path: path.clone(), source })?;
        // One level of subdirectories: the reference's `dist/{family}/`. Deeper trees are
        // `--no-build-packages` layouts, whose payload may hold unrelated `.tar.gz` files.
        if kind.is_dir() && rel_dir.is_empty() {
            walk(&path, &rel, found)?;
        } else if is_distribution(&name) && path.is_file() {
            found.push((rel, path));
        }
    }
    Ok(())
}

/// Wheels, sdists, and the variant index files that must be linked beside variant wheels
/// (PEP 825, draft; SPEC §9).
fn is_distribution(name: &str) -> bool {
    name.ends_with(".whl") || name.ends_with(".tar.gz") || parse_variants_json_file_name(name).is_some()
}

fn read_file(rel: &str, path: &Path) -> Result<IndexedFile, IndexError> {
    let file_name = rel.rsplit('/').next().unwrap_or(rel).to_owned();
    if let Some((name, _)) = parse_variants_json_file_name(&file_name) {
        return read_variants_json(rel, path, file_name, name);
    }
    let metadata = if file_name.ends_with(".whl") { wheel_metadata(path)? } else { sdist_metadata(path)? };
    let headers = parse_headers(&metadata);
    let bad = |reason: &str| IndexError::BadMetadata { path: path.to_path_buf(), reason: reason.to_owned() };
    let name = header(&headers, "Name").ok_or_else(|| bad("no Name field"))?.to_owned();
    let requires_python = header(&headers, "Requires-Python").map(str::to_owned);
    let (sha256, len) = hash_file(path)?;
    Ok(IndexedFile { rel: rel.to_owned(), file_name, name, sha256, len, requires_python })
}

/// A `{name}-{version}-variants.json`: listed on its project's page, named by its file
/// name (it has no core metadata); it must at least be a JSON object with `variants`.
fn read_variants_json(rel: &str, path: &Path, file_name: String, name: String) -> Result<IndexedFile, IndexError> {
    let bad = |reason: String| IndexError::BadMetadata { path: path.to_path_buf(), reason };
    let bytes = fs_err::read(path).map_err(|source| IndexError::Read { path: path.to_path_buf(), source })?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|error| bad(format!("not JSON: {error}")))?;
    if !value.get("variants").is_some_and(serde_json::Value::is_object) {
        return Err(bad("no `variants` object: not a variant index file".to_owned()));
    }
    let (sha256, len) = hash_file(path)?;
    Ok(IndexedFile { rel: rel.to_owned(), file_name, name, sha256, len, requires_python: None })
}

/// `{name}.dist-info/METADATA` at the top level of the wheel.
fn wheel_metadata(path: &Path) -> Result<String, IndexError> {
    let bad = |reason: String| IndexError::BadMetadata { path: path.to_path_buf(), reason };
    let file = open_listed(path)?;
    let mut archive = zip::ZipArchive::new(file).map_err(|error| bad(format!("not a zip archive: {error}")))?;
    let member = archive
        .file_names()
        .filter_map(Result::ok)
        .find(|name| name.split_once('/').is_some_and(|(dir, rest)| dir.ends_with(".dist-info") && rest == "METADATA"))
        .map(|name| name.into_owned())
        .ok_or_else(|| bad("no .dist-info/METADATA member".to_owned()))?;
    let mut text = String::new();
    archive
        .by_name(&member)
        .map_err(|error| bad(format!("{member}: {error}")))?
        .read_to_string(&mut text)
        .map_err(|error| bad(format!("{member}: {error}")))?;
    Ok(text)
}

/// `{name}-{version}/PKG-INFO` of a gzipped sdist.
fn sdist_metadata(path: &Path) -> Result<String, IndexError> {
    let bad = |reason: String| IndexError::BadMetadata { path: path.to_path_buf(), reason };
    let file = open_listed(path)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let entries = archive.entries().map_err(|error| bad(format!("not a .tar.gz: {error}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|error| bad(format!("not a .tar.gz: {error}")))?;
        let member = entry.path().map_err(|error| bad(error.to_string()))?.to_string_lossy().into_owned();
        let is_pkg_info = member.split_once('/').is_some_and(|(_, rest)| rest == "PKG-INFO");
        if is_pkg_info {
            let mut text = String::new();
            entry.read_to_string(&mut text).map_err(|error| bad(format!("{member}: {error}")))?;
            return Ok(text);
        }
    }
    Err(bad("no PKG-INFO member".to_owned()))
}

/// Opens an archive the walk listed, without blocking: a FIFO put in its place since is
/// an error naming it, never a wait.
fn open_listed(path: &Path) -> Result<std::fs::File, IndexError> {
    crate::write::open_regular(path, crate::write::Links::Follow)
        .map_err(|source| IndexError::Read { path: path.to_path_buf(), source })
}

fn hash_file(path: &Path) -> Result<(String, u64), IndexError> {
    let read_error = |source| IndexError::Read { path: path.to_path_buf(), source };
    let mut file = open_listed(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buffer).map_err(read_error)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        len += n as u64;
    }
    let hex = hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
    Ok((hex, len))
}

/// Email-style headers up to the first blank line (core metadata).
fn parse_headers(text: &str) -> Vec<(String, String)> {
    text.lines()
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], key: &str) -> Option<&'a str> {
    headers.iter().find(|(name, _)| name.eq_ignore_ascii_case(key)).map(|(_, value)| value.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_stop_at_the_body() {
        let headers = parse_headers("Metadata-Version: 2.1\nName: rocm\nRequires-Python: >=3.9\n\nName: body\n");
        assert_eq!(header(&headers, "name"), Some("rocm"));
        assert_eq!(header(&headers, "Requires-Python"), Some(">=3.9"));
        assert_eq!(headers.len(), 3);
    }
}
