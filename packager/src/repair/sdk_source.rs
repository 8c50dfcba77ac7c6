//! Reads an [`Sdk`] from where `--against` points (SPEC §11): a `dist/` holding the set's
//! wheels (searched like `verify --dist`, sub-directories included), or a site-packages
//! where they are installed (each `*.dist-info`'s METADATA and RECORD). Of every package,
//! the shared libraries it places under their SONAME are read (from the wheel's members,
//! inflated into a bounded window, or from the installed files): SONAME, directory,
//! DT_NEEDED and dynamic symbols. Devel wheels carry links, not libraries, and are skipped.
//!
//! Owns: finding and reading the set. Does not own: the model (`sdk`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pep440_rs::Version;
use rayon::prelude::*;

use elf_audit::{elf_identity, parse_elf, read_dynamic_symbols, ElfWindow};

use super::error::RepairError;
use super::sdk::{Sdk, SdkKind, SdkLibrary, SdkPackage};
use archive_write::ExistingWheel;
use archive_write::{normalize, WheelFileName};
use elf_audit::Architecture;

/// A package found, with where its files are.
struct Found {
    package: SdkPackage,
    files: Files,
}

enum Files {
    Wheel(PathBuf),
    /// The site-packages directory and the package's installed paths (from RECORD).
    Installed(PathBuf, Vec<String>),
}

/// Reads the SDK at `location` for wheels of `machine`.
pub fn read_sdk(location: &Path, machine: Architecture) -> Result<Sdk, RepairError> {
    let no_sdk = |reason: String| RepairError::NoSdk { path: location.to_path_buf(), reason };
    if !location.is_dir() {
        return Err(no_sdk("it is not a directory".into()));
    }
    let mut names = BTreeSet::new();
    let mut found = installed_packages(location, &mut names)?;
    if found.is_empty() {
        names.clear();
        found = dist_packages(location, &mut names)?;
    }
    // The sdist that chooses the family is the set's whether or not it lies beside it.
    names.insert("rocm".to_owned());
    // One version of each distribution: the newest, which an installer takes.
    let mut newest: BTreeMap<String, Found> = BTreeMap::new();
    for candidate in found {
        let keep = match newest.get(&candidate.package.name) {
            Some(kept) => newer(&candidate.package.version, &kept.package.version),
            None => true,
        };
        if keep {
            newest.insert(candidate.package.name.clone(), candidate);
        }
    }
    if !newest.values().any(|found| found.package.kind == SdkKind::Core) {
        return Err(no_sdk("no rocm-sdk-core package, neither installed nor as a wheel".into()));
    }
    let libraries: Vec<Vec<SdkLibrary>> = newest
        .values()
        .collect::<Vec<_>>()
        .par_iter()
        .map(|found| read_libraries(found, machine))
        .collect::<Result<_, RepairError>>()?;
    let mut by_soname: BTreeMap<String, Vec<SdkLibrary>> = BTreeMap::new();
    for library in libraries.into_iter().flatten() {
        by_soname.entry(library.soname.clone()).or_default().push(library);
    }
    Ok(Sdk {
        location: location.to_path_buf(),
        packages: newest.into_values().map(|found| found.package).collect(),
        libraries: by_soname,
        names,
    })
}

fn newer(candidate: &str, kept: &str) -> bool {
    match (candidate.parse::<Version>(), kept.parse::<Version>()) {
        (Ok(candidate), Ok(kept)) => candidate > kept,
        _ => candidate > kept,
    }
}

/// The SDK packages installed in `site_packages`, from their `*.dist-info`; every SDK
/// package's name goes to `names`.
fn installed_packages(site_packages: &Path, names: &mut BTreeSet<String>) -> Result<Vec<Found>, RepairError> {
    let mut found = Vec::new();
    for entry in sorted_entries(site_packages)? {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".dist-info") || !entry.path().is_dir() {
            continue;
        }
        let metadata = read_installed(&entry.path().join("METADATA"))?;
        let Some((distribution, version)) = name_and_version(&metadata) else { continue };
        if is_set_package(&distribution) {
            names.insert(normalize(&distribution));
        }
        let Some(kind) = SdkKind::of(&distribution).filter(|kind| *kind != SdkKind::Devel) else { continue };
        let record = read_installed(&entry.path().join("RECORD"))?;
        let paths = record
            .lines()
            .filter_map(record_path)
            .filter(|path| !path.starts_with('/') && !path.split('/').any(|part| part == ".."))
            .collect();
        let package = SdkPackage { name: normalize(&distribution), version, kind };
        found.push(Found { package, files: Files::Installed(site_packages.to_path_buf(), paths) });
    }
    Ok(found)
}

/// The SDK wheels under `dist` (sub-directories too), by file name, each once; every SDK
/// package's name goes to `names`.
fn dist_packages(dist: &Path, names: &mut BTreeSet<String>) -> Result<Vec<Found>, RepairError> {
    let mut wheels = BTreeMap::new();
    collect_wheels(dist, &mut wheels)?;
    let mut found = Vec::new();
    for (file_name, path) in wheels {
        let Ok(name) = file_name.parse::<WheelFileName>() else { continue };
        if is_set_package(name.name.as_str()) {
            names.insert(name.name.normalized());
        }
        if name.variant.is_some() {
            continue;
        }
        let Some(kind) = SdkKind::of(name.name.as_str()).filter(|kind| *kind != SdkKind::Devel) else { continue };
        let package = SdkPackage { name: name.name.normalized(), version: name.version.as_str().to_owned(), kind };
        found.push(Found { package, files: Files::Wheel(path) });
    }
    Ok(found)
}

fn collect_wheels(dir: &Path, wheels: &mut BTreeMap<String, PathBuf>) -> Result<(), RepairError> {
    for entry in sorted_entries(dir)? {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let file_type =
            entry.file_type().map_err(|source| archive_write::WriteError::Read { path: path.clone(), source })?;
        if file_type.is_dir() {
            collect_wheels(&path, wheels)?;
        } else if name.ends_with(".whl") && file_type.is_file() {
            wheels.entry(name).or_insert(path);
        }
    }
    Ok(())
}

fn sorted_entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>, RepairError> {
    let read_error = |source| RepairError::Write(archive_write::WriteError::Read { path: dir.to_path_buf(), source });
    let mut entries: Vec<_> =
        std::fs::read_dir(dir).map_err(read_error)?.collect::<Result<_, _>>().map_err(read_error)?;
    entries.sort_by_key(|entry| entry.file_name());
    Ok(entries)
}

/// `Name` and `Version` of core metadata.
pub(crate) fn name_and_version(metadata: &str) -> Option<(String, String)> {
    let field = |key: &str| {
        metadata
            .lines()
            .take_while(|line| !line.trim().is_empty())
            .find_map(|line| line.split_once(':').filter(|(name, _)| name.trim().eq_ignore_ascii_case(key)))
            .map(|(_, value)| value.trim().to_owned())
    };
    Some((field("Name")?, field("Version")?))
}

/// The path of a RECORD line (CSV: a path with a comma or quote is quoted).
pub(super) fn record_path(line: &str) -> Option<String> {
    if let Some(rest) = line.strip_prefix('"') {
        let mut path = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    path.push('"');
                    chars.next();
                }
                '"' => return Some(path),
                c => path.push(c),
            }
        }
        return None;
    }
    let path = line.split(',').next()?;
    (!path.is_empty()).then(|| path.to_owned())
}

/// Whether a distribution found in the set is one of the SDK's: its packages with
/// libraries, and the devel, device and variant provider packages beside them.
fn is_set_package(distribution: &str) -> bool {
    SdkKind::of(distribution).is_some()
        || matches!(normalize(distribution).as_str(), "rocm-sdk-device" | "rocm-sdk-variant-provider")
}

/// An installed package's METADATA or RECORD, opened as every input is (SPEC §11): a
/// regular file only, never blocking (a FIFO in its place waits for a writer for ever),
/// and bounded (a link to `/dev/zero` never ends).
fn read_installed(path: &Path) -> Result<String, RepairError> {
    crate::input::metadata_file::read_metadata_file(path)
        .map_err(|source| RepairError::SdkFile { path: path.to_path_buf(), source })
}

/// Whether a package path may be a shared library placed under its SONAME: inside a
/// platform directory (`_rocm_sdk_core/...`), with `.so` in its file name.
fn may_be_library(path: &str) -> bool {
    let file_name = path.rsplit('/').next().unwrap_or(path);
    path.starts_with('_') && path.contains('/') && (file_name.contains(".so.") || file_name.ends_with(".so"))
}

/// The libraries of one package: host ELF shared libraries whose file name is their SONAME.
fn read_libraries(found: &Found, machine: Architecture) -> Result<Vec<SdkLibrary>, RepairError> {
    // Each window (up to twice `elf_audit::WINDOW_BYTES`) is read into a library and
    // dropped at once: a set holds hundreds of libraries.
    let libraries: Vec<Option<SdkLibrary>> = match &found.files {
        Files::Installed(site_packages, paths) => paths
            .par_iter()
            .filter(|path| may_be_library(path))
            .map(|path| {
                let full = site_packages.join(path);
                let window = ElfWindow::read_file(&full)
                    .map_err(|source| archive_write::WriteError::Read { path: full.clone(), source })?;
                Ok(window.and_then(|window| library_of(found, path, &window, machine)))
            })
            .collect::<Result<_, RepairError>>()?,
        Files::Wheel(path) => {
            let wheel = ExistingWheel::open(path)?;
            let names: Vec<&str> = wheel
                .members()
                .iter()
                .filter(|member| !member.directory && !member.symlink && may_be_library(&member.name))
                .map(|member| member.name.as_str())
                .collect();
            names
                .par_iter()
                .map(|name| {
                    let mut window = ElfWindow::default();
                    wheel.read_member(name, &mut |bytes| {
                        window.push(bytes);
                        Ok(())
                    })?;
                    Ok(library_of(found, name, &window, machine))
                })
                .collect::<Result<_, RepairError>>()?
        }
    };
    Ok(libraries.into_iter().flatten().collect())
}

/// The library at `path` of `found`'s package, if `window` holds a shared library for
/// `machine` whose file name is its SONAME.
fn library_of(found: &Found, path: &str, window: &ElfWindow, machine: Architecture) -> Option<SdkLibrary> {
    let identity = elf_identity(window.head())?;
    if (identity.machine, identity.is_64, identity.little_endian)
        != (machine.elf_machine(), machine.is_64(), machine.is_little_endian())
    {
        return None;
    }
    let elf = parse_elf(window).ok()?;
    let (dir, file_name) = path.rsplit_once('/').unwrap_or(("", path));
    if elf.soname.as_deref() != Some(file_name) {
        return None;
    }
    let symbols = read_dynamic_symbols(window, &elf);
    let exports = symbols.is_complete().then_some(symbols.exports);
    Some(SdkLibrary {
        soname: file_name.to_owned(),
        package: found.package.name.clone(),
        dir: dir.to_owned(),
        needed: elf.needed,
        exports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_paths_unquote() {
        assert_eq!(record_path("a/b.so,sha256=x,3").as_deref(), Some("a/b.so"));
        assert_eq!(record_path("\"a,\"\"b\"\".so\",sha256=x,3").as_deref(), Some("a,\"b\".so"));
        assert_eq!(record_path(""), None);
    }

    #[test]
    fn libraries_are_looked_for_in_platform_directories() {
        assert!(may_be_library("_rocm_sdk_core/lib/libamdhip64.so.7"));
        assert!(may_be_library("_rocm_sdk_libraries_gfx110X_all/lib/librocblas.so.5"));
        assert!(!may_be_library("rocm_sdk_core/__init__.py"));
        assert!(!may_be_library("_rocm_sdk_libraries/lib/.kpack/blas_lib_gfx90a.kpack"));
    }

    #[test]
    fn newest_version_wins() {
        assert!(newer("7.12.0.post1", "7.12.0"));
        assert!(!newer("7.12.0", "7.12.0.post1"));
        assert!(newer("7.12.0", "7.12.0rc1"));
    }
}
