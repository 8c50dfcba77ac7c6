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

use super::devel::{check_platform_dir, read_devel_tar, DevelTree};
use super::member_check::{check_member_path, inspect_elf, stream_member, ElfMember, ElfScope, Streamed};
use super::metadata::{self, parse_headers, WheelName};
use super::pe::{elf_in_windows_wheel, inspect_pe, windows_machine, PeMember};
use super::record::{check_record, MemberDigest};
use super::report::{ArchiveKind, Check, Findings};
use super::sbom::{check_sbom, is_sbom, SBOM_LEAF};
use super::zip_index::IndexSize;
use crate::kpack::{read_fat_binary, read_kpack, FatBinary, KpackArchive, ZipMember};
use crate::platform::TargetMachine;
use elf_audit::{elf_identity, ElfWindow};
use goblin::elf::header::EM_AMDGPU;

const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;

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
    /// PE files of a wheel (SPEC §7), for the import check across the set.
    pub pe_files: Vec<PeMember>,
    pub devel: Vec<DevelTree>,
    /// METADATA (wheel) or PKG-INFO (sdist) headers.
    pub headers: Vec<(String, String)>,
    /// The sdist's `rocm_sdk/_dist_info_data.py`, or a wheel's own
    /// `{package}/_dist_info_data.py`: the constants the packager generated.
    pub dist_info_data: Option<String>,
    /// A wheel's `{dist-info}/variant.json` (PEP 825): its member path and text.
    pub variant_json: Option<(String, String)>,
    /// The `.kpack` archives of device code it holds (SPEC §12).
    pub kpacks: Vec<KpackArchive>,
    /// Host binaries with HIP wrappers or a `.hip_fatbin` section.
    pub fat_binaries: Vec<FatBinary>,
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
            pe_files: Vec::new(),
            elf_scope: ElfScope::new(),
            devel: Vec::new(),
            headers: Vec::new(),
            dist_info_data: None,
            variant_json: None,
            kpacks: Vec::new(),
            fat_binaries: Vec::new(),
            findings: Findings::default(),
        }
    }
}

/// An archive name in `dist/` that is not a regular file (a FIFO, a device): reported, never
/// opened, since reading a FIFO blocks for ever and a device never ends.
pub(crate) fn not_a_file(location: PathBuf, file: &str, what: &str) -> Archive {
    let kind = if file.ends_with(".whl") { ArchiveKind::Wheel } else { ArchiveKind::Sdist };
    let mut archive = Archive::new(file, location, String::new(), kind);
    archive.findings.violation(file, None, Check::Archive, format!("is {what}, not a regular file"));
    archive
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
    let (opened, index) = match open_bounded(path) {
        Ok(opened) => opened,
        Err(reason) => {
            archive.findings.violation(file, None, Check::Archive, reason);
            return archive;
        }
    };
    // What pip's zipfile refuses, or other readers read otherwise (SPEC §5).
    let mismatches = index.map(|index| super::local_headers::mismatches(&opened, &index)).transpose();
    let mut duplicates_named = false;
    match mismatches {
        Ok(mismatches) => {
            for (member, what) in mismatches.unwrap_or_default() {
                duplicates_named |= what == super::local_headers::DUPLICATE;
                archive.findings.violation(file, Some(&member), Check::Archive, what);
            }
        }
        Err(error) => {
            archive.findings.violation(file, None, Check::Archive, format!("cannot read it: {error}"));
            return archive;
        }
    }
    let zip = zip::ZipArchive::new(io::BufReader::new(opened));
    let mut zip = match zip {
        Ok(zip) => zip,
        Err(error) => {
            archive.findings.violation(file, None, Check::Archive, format!("not a readable zip archive: {error}"));
            return archive;
        }
    };
    if zip.has_duplicate_names() && !duplicates_named {
        archive.findings.violation(file, None, Check::Archive, "the zip has several members with one name");
    }
    archive.n_members = zip.len();
    let mut digests: BTreeMap<String, MemberDigest> = BTreeMap::new();
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    for index in 0..zip.len() {
        read_wheel_member(&mut zip, index, &mut archive, &mut digests, &mut texts);
    }
    check_dist_info(&mut archive, &digests, &texts);
    // The families and targets a package of the SDK lists name the set's other packages.
    archive.dist_info_data =
        texts.iter().find(|(name, _)| is_package_dist_info_data(name)).map(|(_, text)| text.clone());
    // The platform directory follows METADATA's `Name:`, which keeps TheRock's spelling of a
    // family (`_rocm_sdk_devel_gfx110X_all`); the file name's form is lower-cased.
    let distribution = metadata::header(&archive.headers, "Name").map(str::to_owned);
    if let Some(distribution) = distribution {
        for tree in &archive.devel {
            let package = tree.member.rsplit_once('/').map_or("", |(dir, _)| dir);
            let dist_info_data = texts.get(&format!("{package}/_dist_info_data.py")).map(String::as_str);
            check_platform_dir(&archive.file, &distribution, dist_info_data, tree, &mut archive.findings);
        }
        check_wheel_platform_dir(&archive.file, &distribution, &digests, &texts, &mut archive.findings);
    }
    archive
}

/// A wheel with a pure package (`{package}/_dist_info_data.py`) installs its native files under
/// one platform directory, `_` + METADATA's `Name:` with `-` and `.` as `_` + the nonce:
/// where `get_py_package_name()` looks, and where downstream code hard-codes it
/// (`_rocm_sdk_libraries_gfx110X_all/lib`, SPEC §2 "Names"). Device wheels have no pure
/// package and overlay the libraries' directory.
fn check_wheel_platform_dir(
    file: &str,
    distribution: &str,
    digests: &BTreeMap<String, MemberDigest>,
    texts: &BTreeMap<String, String>,
    findings: &mut Findings,
) {
    let Some(dist_info_data) = texts.iter().find(|(name, _)| is_package_dist_info_data(name)).map(|(_, text)| text)
    else {
        return;
    };
    let expected = super::devel::platform_dir_name(distribution, Some(dist_info_data));
    let mut tops: Vec<&str> = digests
        .keys()
        .filter_map(|name| name.split_once('/').map(|(first, _)| first))
        .filter(|first| first.starts_with('_') && !first.starts_with("__"))
        .collect();
    tops.dedup();
    for top in tops.into_iter().filter(|top| *top != expected) {
        let message = format!(
            "platform directory `{}` is not `{expected}`, where the runtime looks for the package's files",
            crate::escape::escape(top)
        );
        findings.violation(file, Some(top), Check::MemberPath, message);
    }
}

/// Opens the wheel if its index is small enough to read: the zip reader keeps the whole
/// central directory in memory, so its size is checked first (`zip_index`).
fn open_bounded(path: &Path) -> Result<(std::fs::File, Option<IndexSize>), String> {
    let file = crate::open_regular(path).map_err(|error| format!("cannot open it: {error}"))?;
    match super::zip_index::index_size(&file) {
        Ok(Some(size)) => match size.too_large() {
            Some(reason) => Err(reason),
            None => Ok((file, Some(size))),
        },
        // No end record: the zip reader says what is wrong.
        Ok(None) => Ok((file, None)),
        Err(error) => Err(format!("cannot read it: {error}")),
    }
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

/// `{name}.dist-info/{METADATA,WHEEL,RECORD,variant.json}` at the top level, and the bill
/// of materials: kept as text.
fn is_dist_info_text(name: &str) -> bool {
    if is_sbom(name) {
        return true;
    }
    let mut parts = name.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(dir), Some(file), None) => {
            dir.ends_with(".dist-info") && matches!(file, "METADATA" | "WHEEL" | "RECORD" | "variant.json")
        }
        _ => false,
    }
}

/// A text member the gate reads, as text. The metadata files are UTF-8 (the core metadata
/// specifications, PEP 427's RECORD), a bill of materials too (JSON, RFC 8259), and Python
/// source by default: bytes that are not are a violation (what other readers make of them
/// is theirs), and the rest of the checks read the text with each bad byte as U+FFFD.
fn decoded_text(file: &str, name: &str, bytes: &[u8], findings: &mut Findings) -> String {
    if let Err(error) = std::str::from_utf8(bytes) {
        let at = error.valid_up_to();
        let (check, why) = if is_sbom(name) {
            (Check::Sbom, "JSON must be UTF-8 (RFC 8259)")
        } else if name.ends_with(".py") {
            (Check::Metadata, "Python reads its source as UTF-8 (PEP 3120)")
        } else {
            (Check::Metadata, "it must be UTF-8 text")
        };
        findings.violation(
            file,
            Some(name),
            check,
            format!("is not UTF-8: byte {:#04x} at offset {at}; {why}", bytes[at]),
        );
    }
    String::from_utf8_lossy(bytes).into_owned()
}

/// A package's own `{package}/_dist_info_data.py`, the constants the packager generated
/// for it (its nonce names the platform directories).
fn is_package_dist_info_data(name: &str) -> bool {
    name.split_once('/').is_some_and(|(dir, file)| file == "_dist_info_data.py" && !dir.ends_with(".dist-info"))
}

fn read_wheel_member(
    zip: &mut zip::ZipArchive<io::BufReader<std::fs::File>>,
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
        stream_member(&mut member, true, is_dist_info_text(&name) || is_package_dist_info_data(&name))
    };
    // The member is read again, by offset, for what a single stream cannot judge.
    let stored = member.compression() == zip::CompressionMethod::Stored;
    drop(member);
    let streamed = match streamed {
        Ok(streamed) => streamed,
        Err(error) => {
            archive.findings.violation(&file, Some(&name), Check::Archive, format!("cannot read member: {error}"));
            return;
        }
    };
    if let Some(text) = streamed.text {
        texts.insert(name.clone(), decoded_text(&file, &name, &text, &mut archive.findings));
    }
    digests.insert(name.clone(), MemberDigest { size: streamed.size, sha256: streamed.sha256.unwrap_or_default() });
    let Some(installed) = installed_path(&name).filter(|_| path_ok) else {
        return;
    };
    if installed.ends_with(".kpack") {
        let mut source = ZipMember { zip, index, len: streamed.size, stored };
        let (kpack, problems) = read_kpack(&mut source, &installed);
        for problem in problems {
            archive.findings.violation(&file, Some(&installed), Check::Kpack, problem);
        }
        archive.kpacks.push(kpack);
    }
    let platform = archive.wheel_name.as_ref().map(|name| name.platform.clone()).unwrap_or_default();
    if let Some((bytes, complete)) = &streamed.pe {
        if let Some(pe) = inspect_pe(&file, &installed, bytes, *complete, &platform, &mut archive.findings) {
            archive.pe_files.push(pe);
        }
    }
    let is_host_elf = |window: &ElfWindow| elf_identity(window.head()).is_some_and(|id| id.machine != EM_AMDGPU);
    if let Some(window) = streamed.window.as_ref().filter(|_| windows_machine(&platform).is_some()) {
        if is_host_elf(window) {
            elf_in_windows_wheel(&file, &installed, &platform, &mut archive.findings);
        }
    } else if let Some(window) = streamed.window {
        if let Some(member) = inspect_elf(&file, &installed, &window, &mut archive.elf_scope, &mut archive.findings) {
            let mut source = ZipMember { zip, index, len: streamed.size, stored };
            let (fat, problems) = read_fat_binary(&mut source, &window, &member.elf, &installed);
            for problem in problems {
                archive.findings.violation(&file, Some(&installed), Check::DeviceCode, problem);
            }
            archive.fat_binaries.extend(fat);
            archive.elf_files.push(member);
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
    Ok(Streamed { size: tee.size, sha256: Some(tee.hasher.finalize().into()), window: None, pe: None, text: None })
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
    // A top-level member (an extension module `ext.cpython-311-x86_64-linux-gnu.so`)
    // installs at the top of site-packages.
    let Some((first, rest)) = name.split_once('/') else { return Some(name.to_owned()) };
    if !first.ends_with(".data") {
        return Some(name.to_owned());
    }
    let (scheme, rest) = rest.split_once('/')?;
    matches!(scheme, "purelib" | "platlib").then(|| rest.to_owned())
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
    archive.variant_json = text("variant.json").map(|json| (format!("{dist_info}/variant.json"), json.to_owned()));
    let record_path = format!("{dist_info}/RECORD");
    match text("RECORD") {
        None => findings.violation(&file, Some(&record_path), Check::Record, "RECORD is missing"),
        Some(record) => check_record(&file, &record_path, record, digests, findings),
    }
    let sbom_path = format!("{dist_info}/{SBOM_LEAF}");
    let sbom = texts.get(&sbom_path).zip(digests.get(&sbom_path)).map(|(text, digest)| (text.as_str(), digest.size));
    let wheel = super::sbom::Wheel {
        file: &file,
        name: archive.wheel_name.as_ref(),
        headers: &archive.headers,
        dist_info,
        members: digests,
        sbom,
    };
    check_sbom(&wheel, findings);
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
    let result = crate::open_regular(path).and_then(|opened| read_sdist_entries(opened, &mut archive));
    if let Err(error) = result {
        archive.findings.violation(file, None, Check::Archive, format!("not a readable tar.gz archive: {error}"));
    }
    archive
}

fn read_sdist_entries(opened: std::fs::File, archive: &mut Archive) -> io::Result<()> {
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
                !link_stays_inside(base, target)
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
            (depth == 1 && trimmed.ends_with("/PKG-INFO")) || trimmed.ends_with("/rocm_sdk/_dist_info_data.py");
        let streamed = stream_member(&mut entry, false, wanted_text)?;
        if let Some(text) = streamed.text {
            let text = decoded_text(&file, &trimmed, &text, &mut archive.findings);
            if trimmed.ends_with("/PKG-INFO") && depth == 1 {
                pkg_info = Some(text);
            } else {
                archive.dist_info_data = Some(text);
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

/// Whether a link at `link` (a '/'-separated path inside the archive) pointing at `target`
/// stays inside it: `link` is a plain relative path, and `target`, read from the link's
/// directory, is relative and never climbs above the root or through a name no
/// extraction keeps (empty, `.`, `..`, a backslash or a control character).
fn link_stays_inside(link: &str, target: &str) -> bool {
    let plain =
        |name: &str| !matches!(name, "" | "." | "..") && !name.contains('\\') && !name.chars().any(char::is_control);
    if link.is_empty() || link.starts_with('/') || !link.split('/').all(plain) || target.starts_with('/') {
        return false;
    }
    let mut depth = link.split('/').count() - 1;
    for component in target.split('/') {
        match component {
            "" | "." => {}
            ".." if depth == 0 => return false,
            ".." => depth -= 1,
            name if plain(name) => depth += 1,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_paths() {
        assert_eq!(installed_path("_rocm_sdk_core/lib/x.so").as_deref(), Some("_rocm_sdk_core/lib/x.so"));
        assert_eq!(installed_path("x-1.data/platlib/y/z.so").as_deref(), Some("y/z.so"));
        assert_eq!(installed_path("x-1.data/scripts/tool"), None);
        assert_eq!(
            installed_path("ext.cpython-311-x86_64-linux-gnu.so").as_deref(),
            Some("ext.cpython-311-x86_64-linux-gnu.so")
        );
    }
}
