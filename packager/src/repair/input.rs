//! The wheel to repair, read once (SPEC §11): its file name and tags, its `.dist-info`
//! (METADATA, WHEEL, RECORD), and every member inflated and checked, against the index's
//! CRC-32 and size and against RECORD's sha256 where RECORD lists it. ELF members for the
//! wheel's machine are written to a scratch directory, where the ELF reader and editor
//! work on them with positioned reads, and read: their dynamic section and symbols.
//! Every member keeps its coded bytes ([`CodedCopy`]), so what the repair does not change
//! is copied as it is. Other members are hashed while read; an ELF member only if it is
//! copied unchanged ([`hashed_copy`]): an edited one needs no old digest, and hashing a
//! gigabyte library costs a second.
//!
//! Owns: reading and checking the input. Does not own: what is changed (`links`,
//! `metadata`), writing (`output`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use elf_audit::{parse_elf, read_dynamic_symbols, DynamicSymbols, ElfWindow};

use super::error::RepairError;
use super::sdk_source::record_path;
use crate::escape::escape;
use crate::output::sbom::SBOM_PATH;
use crate::platform::{can_run, machine_of_tag};
use archive_write::WheelFileName;
use archive_write::{CodedCopy, ExistingWheel, WriteError};
use elf_audit::Architecture;
use elf_rpath::ElfInfo;

/// RECORD, METADATA and WHEEL larger than this are no real wheel's.
const MAX_TEXT_BYTES: u64 = 64 << 20;

/// Where a member lands when the wheel is installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// In site-packages, at this path (`{name}.data/platlib/` and `purelib/` stripped).
    SitePackages(String),
    /// Under another scheme of the install (`scripts`, `data`, `headers`).
    Elsewhere(String),
}

/// An ELF member for the wheel's machine, as read.
#[derive(Debug)]
pub struct InputElf {
    /// The member's bytes, in the scratch directory.
    pub extracted: PathBuf,
    pub info: ElfInfo,
    /// As `elf-audit` reads it: the symbol versions it needs, for the platform tag.
    pub audit: elf_audit::ElfFile,
    pub symbols: DynamicSymbols,
}

#[derive(Debug)]
pub struct InputMember {
    pub name: String,
    pub executable: bool,
    pub place: Place,
    /// Its coded bytes; with its sha256 unless it was extracted (see [`hashed_copy`]).
    pub copy: CodedCopy,
    /// An ELF member's bytes in the scratch directory.
    pub extracted: Option<PathBuf>,
    /// Its RECORD line: (urlsafe base64 sha256, size).
    pub recorded: Option<(String, String)>,
    pub elf: Option<InputElf>,
}

impl InputMember {
    /// The site-packages path of the member, if it installs there.
    pub fn installed(&self) -> Option<&str> {
        match &self.place {
            Place::SitePackages(path) => Some(path),
            Place::Elsewhere(_) => None,
        }
    }
}

#[derive(Debug)]
pub struct InputWheel {
    pub path: PathBuf,
    pub name: WheelFileName,
    /// `{name}-{version}.dist-info`, as the wheel spells it.
    pub dist_info: String,
    pub metadata: String,
    pub wheel_file: String,
    /// In name order; RECORD and its signatures left out.
    pub members: Vec<InputMember>,
    /// What the repaired wheel leaves out: directory entries, RECORD's signatures, an
    /// earlier bill of materials of ours (written anew).
    pub dropped: Vec<String>,
    /// The bill of materials an earlier `repair` or `package` wrote into it (SPEC §10).
    pub earlier_sbom: Option<String>,
}

/// The parts of the file name of the wheel at `path`; a Windows wheel is refused here
/// (SPEC §11), before anything is read.
pub fn linux_wheel_name(path: &Path) -> Result<WheelFileName, RepairError> {
    let file_name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let Ok(name) = file_name.parse::<WheelFileName>() else {
        let reason = "its file name is not `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`".to_owned();
        return Err(RepairError::NotAWheel { path: path.to_path_buf(), reason });
    };
    if name.platform.is_windows() {
        return Err(RepairError::Windows { path: path.to_path_buf() });
    }
    Ok(name)
}

/// Reads the wheel at `path`.
pub fn read_input(path: &Path, scratch: &Path) -> Result<InputWheel, RepairError> {
    let bad = |reason: String| RepairError::BadWheel { path: path.to_path_buf(), reason };
    let name = linux_wheel_name(path)?;
    let wheel = ExistingWheel::open(path)?;
    let mut dist_infos: Vec<&str> = wheel
        .members()
        .iter()
        .filter_map(|member| member.name.split_once('/').map(|(top, _)| top))
        .filter(|top| top.ends_with(".dist-info"))
        .collect();
    dist_infos.dedup();
    let dist_info = match dist_infos.as_slice() {
        [one] => (*one).to_owned(),
        [] => return Err(bad("it has no .dist-info directory".into())),
        several => return Err(bad(format!("it has several .dist-info directories: {}", several.join(", ")))),
    };
    let text = |leaf: &str| -> Result<Option<String>, RepairError> {
        let member_name = format!("{dist_info}/{leaf}");
        let Some(member) = wheel.members().iter().find(|member| member.name == member_name) else { return Ok(None) };
        if member.size > MAX_TEXT_BYTES {
            return Err(bad(format!("{member_name} is {} bytes", member.size)));
        }
        let mut bytes = Vec::new();
        wheel.read_member(&member_name, &mut |chunk| {
            bytes.extend_from_slice(chunk);
            Ok(())
        })?;
        String::from_utf8(bytes).map(Some).map_err(|_| bad(format!("{member_name} is not UTF-8")))
    };
    let metadata = text("METADATA")?.ok_or_else(|| bad(format!("{dist_info}/METADATA is missing")))?;
    let wheel_file = text("WHEEL")?.ok_or_else(|| bad(format!("{dist_info}/WHEEL is missing")))?;
    let record = parse_record(&text("RECORD")?.ok_or_else(|| bad(format!("{dist_info}/RECORD is missing")))?);
    // Ours is made anew from the repaired members, as the writer makes it for every wheel
    // (SPEC §10): an earlier one, of `package` or of an earlier repair, is replaced.
    let earlier_sbom = text(SBOM_PATH)?;
    let record_names = [
        format!("{dist_info}/RECORD"),
        format!("{dist_info}/RECORD.jws"),
        format!("{dist_info}/RECORD.p7s"),
        format!("{dist_info}/{SBOM_PATH}"),
    ];
    let machine = machine_of_tag(name.platform.as_str());
    let mut dropped = Vec::new();
    let mut wanted = Vec::new();
    for (index, member) in wheel.members().iter().enumerate() {
        if member.symlink {
            return Err(bad(format!("{} is a symlink, which a wheel cannot carry", member.name)));
        }
        if member.directory || record_names[1..].contains(&member.name) {
            dropped.push(member.name.clone());
        } else if member.name != record_names[0] {
            wanted.push((index, member));
        }
    }
    let members = wanted
        .par_iter()
        .map(|(index, member)| {
            let extracted = scratch.join(format!("member-{index}"));
            read_member(&wheel, &member.name, member.executable, &extracted, record.get(&member.name), machine)
        })
        .collect::<Result<Vec<_>, RepairError>>()?;
    Ok(InputWheel { path: path.to_path_buf(), name, dist_info, metadata, wheel_file, members, dropped, earlier_sbom })
}

/// RECORD's lines by path: (urlsafe base64 sha256 without padding, size).
fn parse_record(text: &str) -> BTreeMap<String, (String, String)> {
    let mut lines = BTreeMap::new();
    for line in text.lines() {
        let Some(path) = record_path(line) else { continue };
        let mut fields = line.rsplitn(3, ',');
        let (Some(size), Some(hash)) = (fields.next(), fields.next()) else { continue };
        if let Some(digest) = hash.strip_prefix("sha256=") {
            lines.insert(path, (digest.to_owned(), size.to_owned()));
        }
    }
    lines
}

/// Where a member installs: site-packages for most, `{x}.data/{scheme}/` elsewhere.
fn place_of(name: &str) -> Place {
    let Some((first, rest)) = name.split_once('/') else { return Place::SitePackages(name.to_owned()) };
    if !first.ends_with(".data") {
        return Place::SitePackages(name.to_owned());
    }
    match rest.split_once('/') {
        Some(("platlib" | "purelib", path)) => Place::SitePackages(path.to_owned()),
        Some((scheme, _)) => Place::Elsewhere(scheme.to_owned()),
        None => Place::Elsewhere(rest.to_owned()),
    }
}

/// Reads one member, checking it against RECORD; an ELF member for `machine` is written
/// to `extracted` and read.
fn read_member(
    wheel: &ExistingWheel,
    name: &str,
    executable: bool,
    extracted: &Path,
    recorded: Option<&(String, String)>,
    machine: Architecture,
) -> Result<InputMember, RepairError> {
    let mut head = Vec::with_capacity(4);
    let mut out: Option<std::io::BufWriter<std::fs::File>> = None;
    let mut hasher = Some(Sha256::new());
    let copy = wheel.read_member(name, &mut |bytes| {
        if head.len() < 4 {
            head.extend_from_slice(&bytes[..bytes.len().min(4 - head.len())]);
            if head.len() == 4 && head == elf_audit::ELF_MAGIC {
                out = Some(std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(extracted)?));
                hasher = None;
            }
        }
        if let Some(out) = out.as_mut() {
            out.write_all(bytes)?;
        }
        if let Some(hasher) = hasher.as_mut() {
            hasher.update(bytes);
        }
        Ok(())
    })?;
    let recorded = recorded.cloned();
    let is_elf = out.is_some();
    if let Some(out) = out.take() {
        let file = out.into_inner().map_err(|error| write_error(extracted, error.into_error()))?;
        drop(file);
    }
    let copy = match hasher {
        Some(hasher) => {
            let sha256: [u8; 32] = hasher.finalize().into();
            check_record(wheel.path(), name, &recorded, sha256, copy.len())?;
            copy.with_sha256(sha256)
        }
        None => copy,
    };
    let elf = if is_elf { read_elf(wheel.path(), name, extracted, machine)? } else { None };
    let extracted = is_elf.then(|| extracted.to_path_buf());
    Ok(InputMember { name: name.to_owned(), executable, place: place_of(name), copy, extracted, recorded, elf })
}

/// Refuses a member whose bytes RECORD lists with another digest or size.
fn check_record(
    wheel: &Path,
    name: &str,
    recorded: &Option<(String, String)>,
    sha256: [u8; 32],
    len: u64,
) -> Result<(), RepairError> {
    let Some((digest, size)) = recorded else { return Ok(()) };
    let actual = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha256);
    if *digest != actual || *size != len.to_string() {
        return Err(RepairError::BadWheel {
            path: wheel.to_path_buf(),
            reason: format!("{name} does not match its RECORD line (sha256={digest}, {size} bytes)"),
        });
    }
    Ok(())
}

/// The member's coded copy with its sha256: as hashed while it was read, or now from its
/// extracted bytes (checked against RECORD as the others were).
pub fn hashed_copy(wheel: &Path, member: InputMember) -> Result<CodedCopy, RepairError> {
    let InputMember { name, copy, extracted, recorded, .. } = member;
    if copy.sha256().is_some() {
        return Ok(copy);
    }
    let Some(path) = extracted else {
        return Err(RepairError::BadWheel { path: wheel.to_path_buf(), reason: format!("{name} was not hashed") });
    };
    let read_error = |source| WriteError::Read { path: path.clone(), source };
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::open(&path).map_err(read_error)?;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = std::io::Read::read(&mut file, &mut buffer).map_err(read_error)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    let sha256: [u8; 32] = hasher.finalize().into();
    check_record(wheel, &name, &recorded, sha256, copy.len())?;
    Ok(copy.with_sha256(sha256))
}

fn write_error(path: &Path, source: std::io::Error) -> RepairError {
    RepairError::Write(WriteError::io(archive_write::WriteAction::Write, path, source))
}

/// The ELF facts of an extracted member, when it runs on `machine` and is an executable or
/// a shared library (SPEC §6: the rest is not ours to edit). What is wrong with it names
/// the wheel and the member: the extracted copy is gone once the run ends.
fn read_elf(
    wheel: &Path,
    member: &str,
    extracted: &Path,
    machine: Architecture,
) -> Result<Option<InputElf>, RepairError> {
    let unreadable = |reason: String| RepairError::BadWheel {
        path: wheel.to_path_buf(),
        reason: format!("{} does not parse as ELF: {reason}", escape(member)),
    };
    let info = elf_rpath::read_elf(extracted).map_err(|error| unreadable(elf_reason(&error)))?;
    let Some(info) = info else { return Ok(None) };
    if !can_run(machine, &info) || !info.is_patchable() {
        return Ok(None);
    }
    let window = ElfWindow::read_file(extracted).map_err(|error| unreadable(error.to_string()))?;
    let window = window.ok_or_else(|| unreadable("it lost its ELF header".into()))?;
    let audit = parse_elf(&window).map_err(unreadable)?;
    let symbols = read_dynamic_symbols(&window, &audit);
    Ok(Some(InputElf { extracted: extracted.to_path_buf(), info, audit, symbols }))
}

/// The reason of an ELF error without the scratch path it names.
pub fn elf_reason(error: &elf_rpath::ElfError) -> String {
    use elf_rpath::ElfError;
    match error {
        ElfError::Malformed { reason, .. } | ElfError::Unsupported { reason, .. } => reason.clone(),
        ElfError::Read { source, .. } | ElfError::Write { source, .. } => source.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_land_where_installers_put_them() {
        assert_eq!(
            place_of("ext.cpython-311-x86_64-linux-gnu.so"),
            Place::SitePackages("ext.cpython-311-x86_64-linux-gnu.so".into())
        );
        assert_eq!(place_of("ext-1.0.data/platlib/ext/_c.so"), Place::SitePackages("ext/_c.so".into()));
        assert_eq!(place_of("ext-1.0.data/scripts/tool"), Place::Elsewhere("scripts".into()));
    }

    #[test]
    fn record_lines_give_hash_and_size() {
        let record = parse_record("a/b.so,sha256=abc,12\n\"c,d\",sha256=xyz,3\nx.dist-info/RECORD,,\n");
        assert_eq!(record.get("a/b.so"), Some(&("abc".to_owned(), "12".to_owned())));
        assert_eq!(record.get("c,d"), Some(&("xyz".to_owned(), "3".to_owned())));
        assert_eq!(record.len(), 2);
    }
}
