//! Reads one wheel (zip) or sdist (tar.gz) member by member, never holding a whole member
//! in memory: each member is hashed while it streams, ELF members keep only their ends
//! ([`ElfWindow`]), and a devel tarball is read as it decompresses.
//!
//! Owns: archive-level checks (valid archive, member paths, symlinks, Windows names,
//! dist-info and RECORD) and collecting what the set and closure checks need.
//! Does not own: ELF rules (`elf_checks`), the devel tree (`devel`), cross-package rules.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::devel::{read_devel_tar, DevelTree};
use super::elf_checks::check_elf;
use super::elf_parse::{elf_identity, parse_elf, ElfFile, ElfIdentity, ElfWindow, ELF_MAGIC};
use super::metadata::{self, parse_headers, WheelName};
use super::record::{check_record, MemberDigest};
use super::report::{ArchiveKind, Check, Findings};
use crate::elf::EM_AMDGPU;
use crate::platform::TargetMachine;

/// Metadata files larger than this are reported instead of read.
const TEXT_CAP: usize = 16 << 20;
const CHUNK: usize = 256 << 10;
const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;

/// A host ELF file found in a package, with the path it installs to in site-packages.
#[derive(Debug)]
pub(crate) struct ElfMember {
    pub path: String,
    pub elf: ElfFile,
}

/// Which ELF members verify judges (SPEC §6 "Never edit what is not ours to edit"): only
/// those the wheel's platform runs. The others are data, to the packager and here alike:
/// an aarch64 library in an x86_64 wheel keeps its absolute RPATH, and that is no
/// violation, since no loader of this platform ever reads it.
#[derive(Debug)]
pub(crate) struct ElfScope {
    /// The machine of the wheel's platform tag; the host's for an sdist or a wheel whose
    /// file name does not parse, as the packager falls back to it.
    pub target: TargetMachine,
    /// AMDGPU code objects (`e_machine` 224).
    pub n_gpu_code_objects: usize,
    /// ELF files for another CPU, by the path they install to.
    pub foreign: Vec<String>,
}

impl ElfScope {
    fn new() -> ElfScope {
        ElfScope { target: TargetMachine::host(), n_gpu_code_objects: 0, foreign: Vec::new() }
    }

    /// Whether `machine`, class and byte order are the target's (as the packager's
    /// `TargetMachine::can_run` decides for its own ELF reader's facts).
    fn runs(&self, identity: ElfIdentity) -> bool {
        let target = &self.target;
        (identity.machine, identity.is_64, identity.little_endian)
            == (target.machine, target.is_64, target.little_endian)
    }
}

/// What one archive holds, as far as the later checks need it.
#[derive(Debug)]
pub(crate) struct Archive {
    pub file: String,
    pub locations: Vec<PathBuf>,
    pub sha256: String,
    pub kind: ArchiveKind,
    pub wheel_name: Option<WheelName>,
    /// Distribution name and version from the file name.
    pub name: Option<String>,
    pub version: Option<String>,
    pub n_members: usize,
    /// Paths the wheel installs into site-packages (files only; `.dist-info` included).
    pub installed: Vec<String>,
    pub elf_files: Vec<ElfMember>,
    pub elf_scope: ElfScope,
    pub devel: Vec<DevelTree>,
    /// METADATA (wheel) or PKG-INFO (sdist) headers.
    pub headers: Vec<(String, String)>,
    /// The sdist's `rocm_sdk/_dist_info.py`.
    pub dist_info_py: Option<String>,
    pub findings: Findings,
}

impl Archive {
    fn new(file: &str, location: PathBuf, sha256: String, kind: ArchiveKind) -> Archive {
        Archive {
            file: file.to_owned(),
            locations: vec![location],
            sha256,
            kind,
            wheel_name: None,
            name: None,
            version: None,
            n_members: 0,
            installed: Vec::new(),
            elf_files: Vec::new(),
            elf_scope: ElfScope::new(),
            devel: Vec::new(),
            headers: Vec::new(),
            dist_info_py: None,
            findings: Findings::default(),
        }
    }
}

/// How a streamed member was measured.
#[derive(Default)]
pub(crate) struct Streamed {
    pub size: u64,
    pub sha256: Option<[u8; 32]>,
    pub window: Option<ElfWindow>,
    pub text: Option<Vec<u8>>,
}

/// Streams `reader` to its end: hashes (if asked), keeps an ELF window when the bytes
/// start with the ELF magic, and keeps the bytes as text when `capture_text`.
pub(crate) fn stream_member(reader: &mut dyn Read, hash: bool, capture_text: bool) -> io::Result<Streamed> {
    let mut hasher = hash.then(Sha256::new);
    let mut streamed = Streamed { text: capture_text.then(Vec::new), ..Streamed::default() };
    let mut buffer = vec![0u8; CHUNK];
    let mut first = true;
    loop {
        let n = read_full(reader, &mut buffer)?;
        if n == 0 {
            break;
        }
        let chunk = &buffer[..n];
        if first && chunk.starts_with(ELF_MAGIC) {
            streamed.window = Some(ElfWindow::default());
        }
        first = false;
        if let Some(hasher) = hasher.as_mut() {
            hasher.update(chunk);
        }
        if let Some(window) = streamed.window.as_mut() {
            window.push(chunk);
        }
        if let Some(text) = streamed.text.as_mut() {
            if text.len() + n <= TEXT_CAP {
                text.extend_from_slice(chunk);
            }
        }
        streamed.size += n as u64;
    }
    streamed.sha256 = hasher.map(|hasher| hasher.finalize().into());
    Ok(streamed)
}

/// Fills `buffer` unless the stream ends first; returns the bytes read.
fn read_full(reader: &mut dyn Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// Parses an ELF window and applies the per-file checks to files the wheel's platform
/// runs. AMDGPU code objects and ELF files for another CPU are only counted (SPEC §6: not
/// ours to judge), whether or not the rest of them parses. Returns the parsed file for the
/// closure checks.
pub(crate) fn inspect_elf(
    file: &str,
    path: &str,
    window: &ElfWindow,
    scope: &mut ElfScope,
    findings: &mut Findings,
) -> Option<ElfFile> {
    match elf_identity(window.head()) {
        Some(identity) if identity.machine == EM_AMDGPU => {
            scope.n_gpu_code_objects += 1;
            return None;
        }
        Some(identity) if !scope.runs(identity) => {
            scope.foreign.push(path.to_owned());
            return None;
        }
        _ => {}
    }
    match parse_elf(window) {
        Err(reason) => {
            findings.violation(file, Some(path), Check::ElfStructure, format!("unreadable ELF file: {reason}"));
            None
        }
        Ok(elf) => {
            check_elf(file, path, &elf, findings);
            Some(elf)
        }
    }
}

/// Reads and checks one wheel.
pub(crate) fn read_wheel(path: &Path, location: PathBuf, file: &str, sha256: String) -> Archive {
    let mut archive = Archive::new(file, location, sha256, ArchiveKind::Wheel);
    match metadata::parse_wheel_name(file) {
        Ok(name) => {
            check_name_and_version(file, &name.name, &name.version, &mut archive.findings);
            archive.name = Some(name.name.clone());
            archive.version = Some(name.version.clone());
            archive.elf_scope.target = TargetMachine::from_platform_tag(&name.platform);
            archive.wheel_name = Some(name);
        }
        Err(reason) => archive.findings.violation(file, None, Check::FileName, format!("wheel file name {reason}")),
    }
    let opened = fs_err::File::open(path).map(io::BufReader::new);
    let zip = opened.map_err(zip::result::ZipError::Io).and_then(zip::ZipArchive::new);
    let mut zip = match zip {
        Ok(zip) => zip,
        Err(error) => {
            archive.findings.violation(file, None, Check::Archive, format!("not a readable zip archive: {error}"));
            return archive;
        }
    };
    if zip.has_duplicate_names() {
        archive.findings.violation(file, None, Check::Archive, "the zip has several members with one name");
    }
    archive.n_members = zip.len();
    let mut digests: BTreeMap<String, MemberDigest> = BTreeMap::new();
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    for index in 0..zip.len() {
        read_wheel_member(&mut zip, index, &mut archive, &mut digests, &mut texts);
    }
    check_dist_info(&mut archive, &digests, &texts);
    archive
}

fn check_name_and_version(file: &str, name: &str, version: &str, findings: &mut Findings) {
    if metadata::file_name_form(name) != name {
        findings.violation(
            file,
            None,
            Check::FileName,
            format!("distribution name `{name}` is not normalised (expected `{}`)", metadata::file_name_form(name)),
        );
    }
    if !metadata::is_normalized_version(version) {
        findings.violation(
            file,
            None,
            Check::FileName,
            format!("version `{version}` is not a normalised PEP 440 version"),
        );
    }
}

/// `{name}.dist-info/{METADATA,WHEEL,RECORD}` at the top level: kept as text.
fn is_dist_info_text(name: &str) -> bool {
    let mut parts = name.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(dir), Some(file), None) => dir.ends_with(".dist-info") && matches!(file, "METADATA" | "WHEEL" | "RECORD"),
        _ => false,
    }
}

fn read_wheel_member(
    zip: &mut zip::ZipArchive<io::BufReader<fs_err::File>>,
    index: usize,
    archive: &mut Archive,
    digests: &mut BTreeMap<String, MemberDigest>,
    texts: &mut BTreeMap<String, String>,
) {
    let file = archive.file.clone();
    let mut member = match zip.by_index(index) {
        Ok(member) => member,
        Err(error) => {
            archive.findings.violation(&file, None, Check::Archive, format!("member #{index} is unreadable: {error}"));
            return;
        }
    };
    let name = String::from_utf8_lossy(member.name_raw()).into_owned();
    let path_ok = check_member_path(&file, &name, &mut archive.findings);
    if member.unix_mode().is_some_and(|mode| mode & S_IFMT == S_IFLNK) {
        let mut target = Vec::new();
        let _ = member.by_ref().take(4096).read_to_end(&mut target);
        archive.findings.violation(
            &file,
            Some(&name),
            Check::Symlink,
            format!("is a symlink (to `{}`); wheels cannot carry symlinks", String::from_utf8_lossy(&target)),
        );
        return;
    }
    if name.ends_with('/') {
        return;
    }
    let devel_xz = name.ends_with("/_devel.tar.xz") || name == "_devel.tar.xz";
    let devel_tar = name.ends_with("/_devel.tar") || name == "_devel.tar";
    let streamed = if devel_tar || devel_xz {
        read_devel_member(&mut member, devel_xz, &file, &name, archive)
    } else {
        stream_member(&mut member, true, is_dist_info_text(&name))
    };
    let streamed = match streamed {
        Ok(streamed) => streamed,
        Err(error) => {
            archive.findings.violation(&file, Some(&name), Check::Archive, format!("cannot read member: {error}"));
            return;
        }
    };
    if let Some(text) = streamed.text {
        texts.insert(name.clone(), String::from_utf8_lossy(&text).into_owned());
    }
    digests.insert(name.clone(), MemberDigest { size: streamed.size, sha256: streamed.sha256.unwrap_or_default() });
    let Some(installed) = installed_path(&name).filter(|_| path_ok) else {
        return;
    };
    if let Some(window) = streamed.window {
        let elf = inspect_elf(&file, &installed, &window, &mut archive.elf_scope, &mut archive.findings);
        if let Some(elf) = elf {
            archive.elf_files.push(ElfMember { path: installed.clone(), elf });
        }
    }
    archive.installed.push(installed);
}

/// Streams a devel tarball member through the tar reader while hashing its raw bytes.
fn read_devel_member(
    member: &mut dyn Read,
    xz: bool,
    file: &str,
    name: &str,
    archive: &mut Archive,
) -> io::Result<Streamed> {
    let mut tee = HashingReader { inner: member, hasher: Sha256::new(), size: 0 };
    let tree = read_devel_tar(&mut tee, xz, file, name, &mut archive.findings, &mut archive.elf_scope);
    archive.devel.push(tree);
    // The tar reader stops at the end-of-archive blocks; the rest still counts for RECORD.
    io::copy(&mut tee, &mut io::sink())?;
    Ok(Streamed { size: tee.size, sha256: Some(tee.hasher.finalize().into()), window: None, text: None })
}

struct HashingReader<'a> {
    inner: &'a mut dyn Read,
    hasher: Sha256,
    size: u64,
}

impl Read for HashingReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buffer)?;
        self.hasher.update(&buffer[..n]);
        self.size += n as u64;
        Ok(n)
    }
}

/// Where a wheel member lands in site-packages: the root for most, `{x}.data/purelib|platlib/`
/// stripped; `None` for scripts, headers and data, which install elsewhere.
fn installed_path(name: &str) -> Option<String> {
    let (first, rest) = name.split_once('/')?;
    if !first.ends_with(".data") {
        return Some(name.to_owned());
    }
    let (scheme, rest) = rest.split_once('/')?;
    matches!(scheme, "purelib" | "platlib").then(|| rest.to_owned())
}

/// Absolute, `..`, empty or backslash components are violations; names Windows cannot
/// extract are warnings. Returns whether the path is safe to place in the simulated install.
pub(crate) fn check_member_path(file: &str, name: &str, findings: &mut Findings) -> bool {
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    let unsafe_reason = if trimmed.starts_with('/') || trimmed.get(1..3) == Some(":/") {
        Some("is an absolute path")
    } else if trimmed.split('/').any(|part| part == "..") {
        Some("has a `..` component")
    } else if trimmed.contains('\\') {
        Some("has a backslash, which Windows tools read as a separator")
    } else if trimmed.is_empty() || trimmed.split('/').any(|part| part.is_empty() || part == ".") {
        Some("has an empty or `.` component")
    } else {
        None
    };
    if let Some(reason) = unsafe_reason {
        findings.violation(file, Some(name), Check::MemberPath, format!("member path {reason}"));
        return false;
    }
    for part in trimmed.split('/') {
        if let Some(reason) = windows_problem(part) {
            findings.warning(
                file,
                Some(name),
                Check::WindowsName,
                format!("Windows cannot extract this name: {reason}"),
            );
            break;
        }
    }
    true
}

fn windows_problem(part: &str) -> Option<String> {
    if let Some(c) = part.chars().find(|c| matches!(c, ':' | '<' | '>' | '"' | '|' | '?' | '*') || c.is_control()) {
        return Some(format!("`{}` contains {c:?}", part));
    }
    if part.ends_with('.') || part.ends_with(' ') {
        return Some(format!("`{part}` ends with a dot or space"));
    }
    let stem = part.split('.').next().unwrap_or(part).trim_end().to_ascii_uppercase();
    let reserved = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (stem.len() == 4
            && (stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem.as_bytes()[3].is_ascii_digit()
            && stem.as_bytes()[3] != b'0');
    reserved.then(|| format!("`{part}` is a reserved device name"))
}

/// The single `.dist-info` directory, METADATA, WHEEL and RECORD.
fn check_dist_info(archive: &mut Archive, digests: &BTreeMap<String, MemberDigest>, texts: &BTreeMap<String, String>) {
    let file = archive.file.clone();
    let mut dist_infos: Vec<&str> = digests
        .keys()
        .filter_map(|name| name.split_once('/').map(|(first, _)| first))
        .filter(|first| first.ends_with(".dist-info"))
        .collect();
    dist_infos.dedup();
    let findings = &mut archive.findings;
    let dist_info = match dist_infos.as_slice() {
        [] => {
            findings.violation(&file, None, Check::Metadata, "no .dist-info directory");
            return;
        }
        [one] => *one,
        several => {
            findings.violation(
                &file,
                None,
                Check::Metadata,
                format!("several .dist-info directories: {}", several.join(", ")),
            );
            return;
        }
    };
    if let Some(name) = &archive.wheel_name {
        let expected = format!("{}-{}.dist-info", name.name, name.version);
        if dist_info != expected {
            findings.violation(&file, Some(dist_info), Check::Metadata, format!("expected the directory `{expected}`"));
        }
    }
    let text = |leaf: &str| texts.get(&format!("{dist_info}/{leaf}")).map(String::as_str);
    if let Some(name) = &archive.wheel_name {
        metadata::check_wheel_metadata(&file, name, dist_info, text("METADATA"), text("WHEEL"), findings);
    }
    if let Some(metadata_text) = text("METADATA") {
        archive.headers = parse_headers(metadata_text);
    }
    let record_path = format!("{dist_info}/RECORD");
    match text("RECORD") {
        None => findings.violation(&file, Some(&record_path), Check::Record, "RECORD is missing"),
        Some(record) => check_record(&file, &record_path, record, digests, findings),
    }
}

/// Reads and checks one sdist (`{name}-{version}.tar.gz`).
pub(crate) fn read_sdist(path: &Path, location: PathBuf, file: &str, sha256: String) -> Archive {
    let mut archive = Archive::new(file, location, sha256, ArchiveKind::Sdist);
    match metadata::parse_sdist_name(file) {
        Ok((name, version)) => {
            check_name_and_version(file, &name, &version, &mut archive.findings);
            archive.name = Some(name);
            archive.version = Some(version);
        }
        Err(reason) => archive.findings.violation(file, None, Check::FileName, format!("sdist file name {reason}")),
    }
    let result = fs_err::File::open(path).and_then(|opened| read_sdist_entries(opened, &mut archive));
    if let Err(error) = result {
        archive.findings.violation(file, None, Check::Archive, format!("not a readable tar.gz archive: {error}"));
    }
    archive
}

fn read_sdist_entries(opened: fs_err::File, archive: &mut Archive) -> io::Result<()> {
    let file = archive.file.clone();
    let top = archive.name.as_ref().zip(archive.version.as_ref()).map(|(name, version)| format!("{name}-{version}"));
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(io::BufReader::new(opened)));
    let mut pkg_info: Option<String> = None;
    for entry in tar.entries()? {
        let mut entry = entry?;
        archive.n_members += 1;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if !check_member_path(&file, &name, &mut archive.findings) {
            continue;
        }
        let trimmed = name.strip_suffix('/').unwrap_or(&name).to_owned();
        if let Some(top) = &top {
            if trimmed.split('/').next() != Some(top.as_str()) {
                archive.findings.violation(
                    &file,
                    Some(&name),
                    Check::MemberPath,
                    format!("is outside the top-level directory `{top}/`"),
                );
            }
        }
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            let target = entry.link_name_bytes().map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
            let escapes = target.as_deref().is_none_or(|target| {
                let base = if kind.is_symlink() { trimmed.as_str() } else { "x" };
                crate::RelPath::new(base).ok().and_then(|link| link.resolve_link_target(target)).is_none()
            });
            if escapes {
                archive.findings.violation(
                    &file,
                    Some(&name),
                    Check::MemberPath,
                    format!("link to `{}` escapes the archive", target.unwrap_or_default()),
                );
            }
            continue;
        }
        if !kind.is_file() {
            continue;
        }
        let depth = trimmed.matches('/').count();
        let wanted_text =
            (depth == 1 && trimmed.ends_with("/PKG-INFO")) || trimmed.ends_with("/rocm_sdk/_dist_info.py");
        let streamed = stream_member(&mut entry, false, wanted_text)?;
        if let Some(text) = streamed.text {
            let text = String::from_utf8_lossy(&text).into_owned();
            if trimmed.ends_with("/PKG-INFO") && depth == 1 {
                pkg_info = Some(text);
            } else {
                archive.dist_info_py = Some(text);
            }
        }
    }
    let pkg_info_path = format!("{}/PKG-INFO", top.as_deref().unwrap_or("*"));
    match (pkg_info, &archive.name, &archive.version) {
        (None, _, _) => archive.findings.violation(&file, Some(&pkg_info_path), Check::Metadata, "PKG-INFO is missing"),
        (Some(text), Some(name), Some(version)) => {
            archive.headers = parse_headers(&text);
            metadata::check_core_metadata(
                &file,
                &pkg_info_path,
                &archive.headers,
                name,
                version,
                &mut archive.findings,
            );
        }
        (Some(text), _, _) => archive.headers = parse_headers(&text),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_names() {
        assert!(windows_problem(".kpack").is_none());
        assert!(windows_problem("blas_lib_gfx90a:xnack+.kpack").is_some());
        assert!(windows_problem("con.txt").is_some());
        assert!(windows_problem("COM1").is_some());
        assert!(windows_problem("COM0").is_none());
        assert!(windows_problem("console").is_none());
        assert!(windows_problem("x.").is_some());
    }

    #[test]
    fn installed_paths() {
        assert_eq!(installed_path("_rocm_sdk_core/lib/x.so").as_deref(), Some("_rocm_sdk_core/lib/x.so"));
        assert_eq!(installed_path("x-1.data/platlib/y/z.so").as_deref(), Some("y/z.so"));
        assert_eq!(installed_path("x-1.data/scripts/tool"), None);
    }
}
