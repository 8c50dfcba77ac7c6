//! ELF surgery without patchelf: classify files, read their dynamic section, and plan an
//! RPATH change (and renamed needed libraries) as a list of byte edits that [`splice::SplicedReader`] applies while the
//! file streams (into an archive, or over the file with [`apply_edit_in_place`]).
//!
//! Owns: reading ELF headers (never the whole file), deciding in-place vs grown layouts,
//! and the bytes of the edit. Must not know: packages, wheels, the product that uses it, or
//! which entries a search path gets (the caller decides that and asks for the whole path).
//!
//! Modules: `source` (positioned, capped reads), `parse` (decoding), `rpath` (strategy,
//! in-place edit, self-check), `grow` (the appended-segment layout), `layout` (where the
//! appended segment goes, and where loaders find the header table), `patch` (the dynamic
//! tables' bytes, for both layouts), `needed` (renaming a needed library, as patchelf
//! replaces a needed entry), `reach` (where relocations write, by eu-elflint's
//! measure), `symbols` (symbols that follow moved tables),
//! `references` (who else points into `.dynstr`), `splice` (streaming an edit).

pub mod consts;
mod grow;
mod layout;
mod needed;
mod parse;
mod patch;
mod reach;
mod references;
mod rpath;
mod source;
pub mod splice;
mod symbols;

use std::io;
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

use parse::{ElfFile, DF_1_PIE, DT_FLAGS_1, DT_NEEDED, DT_RPATH, DT_RUNPATH, DT_SONAME, ET_DYN, ET_EXEC};
use source::{FileSource, Source};
pub use splice::{BytePatch, EditStrategy, RpathEdit, SplicedReader};

/// What an ELF file is, decided from its headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ElfKind {
    /// `ET_EXEC`, or `ET_DYN` with `DF_1_PIE`.
    Executable,
    /// `ET_DYN` without `DF_1_PIE`.
    SharedLibrary,
    /// Relocatable objects, core files, and anything for another machine (GPU code objects).
    Other,
}

/// What a caller needs to know about one ELF file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfInfo {
    pub kind: ElfKind,
    pub machine: u16,
    pub is_64: bool,
    pub little_endian: bool,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Option<String>,
    pub runpath: Option<String>,
    pub interpreter: Option<String>,
}

impl ElfInfo {
    /// Whether the editor may touch it at all: an executable or shared library for a CPU,
    /// never a file for another machine (a GPU code object) nor one with no search path.
    /// Which of these a caller edits (its own machine's only, say) is the caller's policy.
    pub fn is_patchable(&self) -> bool {
        self.kind != ElfKind::Other
    }

    /// Whether the file is for a CPU this editor knows ([`ElfKind::Other`] otherwise).
    pub fn is_for_a_cpu(&self) -> bool {
        HOST_MACHINES.contains(&self.machine)
    }

    /// The search path in effect (DT_RUNPATH wins over DT_RPATH when both exist).
    pub fn search_path(&self) -> Option<&str> {
        self.runpath.as_deref().or(self.rpath.as_deref())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("malformed ELF file {}: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error("unsupported ELF file {}: {reason}", path.display())]
    Unsupported { path: PathBuf, reason: String, refusal: Refusal },
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Diagnostic for ElfError {
    /// The file the error is about: every one names it.
    fn path(&self) -> Option<&Path> {
        match self {
            ElfError::Malformed { path, .. }
            | ElfError::Unsupported { path, .. }
            | ElfError::Read { path, .. }
            | ElfError::Write { path, .. } => Some(path),
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::Malformed { .. } => {
                Some("the file is truncated or corrupt: rebuild it, and report its build if a fresh one is too")
            }
            Self::Unsupported { refusal, .. } => refusal.hint(),
            Self::Write { source, .. } if source.raw_os_error() == Some(libc::ENOSPC) => {
                Some("the disk is full: the file is unchanged (the edited copy replaces it only when complete)")
            }
            Self::Write { .. } => Some(
                "the file is unchanged (the edited copy is written beside it and replaces it only when complete): \
                 its directory must be writable and have room for a copy",
            ),
            Self::Read { .. } => None,
        }
    }
}

/// Why a file cannot be edited; each reason has its own hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 32-bit or big-endian: the editor writes 64-bit little-endian tables only.
    Format,
    /// Built for a machine that is no CPU this editor knows (a GPU code object, BPF): it has
    /// no search path to edit.
    ForeignMachine,
    /// For a CPU, but not an executable or shared library with a dynamic section (an object
    /// file, a core file, a static program): nothing there searches a path.
    NoSearchPath,
    /// The layout cannot take the edit, or the planned result failed its own read-back.
    Layout,
    /// Not ELF at all, or not the file the edit was planned for.
    Input,
}

impl Refusal {
    pub fn hint(self) -> Option<&'static str> {
        match self {
            Self::Format => Some("only 64-bit little-endian ELF (x86_64, aarch64, ppc64le) can be patched"),
            Self::ForeignMachine => {
                Some("only files for a CPU get a search path: leave a file for another machine unchanged")
            }
            Self::NoSearchPath => Some(
                "only executables and shared libraries with a dynamic section get a search path: leave object \
                 files, core files and static programs unchanged",
            ),
            Self::Layout => Some(
                "the file is left as it is; please report it with the output of `readelf -lSW` on it \
                 (a search path no longer than the existing one is edited in place and avoids this)",
            ),
            Self::Input => None,
        }
    }
}

/// CPUs we classify as executables or libraries; anything else (GPU code objects, BPF) is
/// `Other` whatever its type, so it is never edited. Which of these a run edits is the
/// caller's business.
const HOST_MACHINES: &[u16] = &[
    2,   // EM_SPARC
    3,   // EM_386
    8,   // EM_MIPS
    20,  // EM_PPC
    21,  // EM_PPC64
    22,  // EM_S390
    40,  // EM_ARM
    43,  // EM_SPARCV9
    62,  // EM_X86_64
    183, // EM_AARCH64
    243, // EM_RISCV
    258, // EM_LOONGARCH
];

/// Reads the headers and dynamic section of `path`. `Ok(None)` when it is not an ELF file.
/// Reads only the bytes it needs (headers, tables, `.dynstr`), never the whole file.
pub fn read_elf(path: &Path) -> Result<Option<ElfInfo>, ElfError> {
    let source = FileSource::open(path)?;
    match parse::parse(&source)? {
        Some(elf) => info_from(&source, &elf).map(Some),
        None => Ok(None),
    }
}

/// What an edit asks of a file's dynamic section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DynamicRequest {
    /// The whole search path, stored as DT_RPATH (a DT_RUNPATH becomes DT_RPATH); `None`
    /// leaves the search path entries as they are.
    pub rpath: Option<String>,
    /// `(old, new)`: every DT_NEEDED entry naming `old` names `new` instead, and so does
    /// every symbol version requirement (`.gnu.version_r`) made of `old`, as ld.so matches
    /// those by name too. Names the file does not need are ignored, as patchelf does.
    pub replace_needed: Vec<(String, String)>,
}

/// Plans setting the whole search path of `path` to `rpath`, stored as DT_RPATH (a DT_RUNPATH
/// becomes DT_RPATH). Deterministic; planning the same request on the result is `Unchanged`.
/// The planned result is read back and checked before it is returned (see `rpath`).
pub fn plan_set_rpath(path: &Path, rpath: &str) -> Result<RpathEdit, ElfError> {
    plan_edit(path, &DynamicRequest { rpath: Some(rpath.to_owned()), replace_needed: Vec::new() })
}

/// Plans `request` on `path` with the guarantees of [`plan_set_rpath`]: deterministic, the
/// result read back (search path, needed names, version requirements, everything else
/// unchanged) before it is returned, and planning it again on the result is `Unchanged`.
pub fn plan_edit(path: &Path, request: &DynamicRequest) -> Result<RpathEdit, ElfError> {
    let source = FileSource::open(path)?;
    let Some(elf) = parse::parse(&source)? else {
        return Err(ElfError::Unsupported {
            path: path.to_path_buf(),
            reason: "not an ELF file".into(),
            refusal: Refusal::Input,
        });
    };
    let edit = rpath::plan_edit(&source, &elf, request)?;
    if !edit.is_unchanged() {
        rpath::check_edit(&source, &elf, &edit, request)?;
    }
    Ok(edit)
}

/// Applies `edit` to the file itself, as patchelf does. A caller that writes the edited
/// file elsewhere (into an archive) streams it with [`SplicedReader`] instead.
///
/// Atomic, so a full disk or a crash leaves the original untouched rather than a file whose
/// headers already point at an appended block that never arrived: the spliced result goes
/// to a temp file beside the original (same directory, so same filesystem), gets the
/// original's permission bits, is synced, and is renamed over it. A symlink is followed and
/// its target replaced, as patchelf edits through links. The file becomes a new inode, so
/// hard links to it keep the old contents, and its owner is whoever runs the edit.
pub fn apply_edit_in_place(path: &Path, edit: &RpathEdit) -> Result<(), ElfError> {
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;

    let read_error = |source| ElfError::Read { path: path.to_path_buf(), source };
    let write_error = |source| ElfError::Write { path: path.to_path_buf(), source };
    let real = std::fs::canonicalize(path).map_err(read_error)?;
    let (Some(dir), Some(name)) = (real.parent(), real.file_name().and_then(|name| name.to_str())) else {
        return Err(ElfError::Unsupported {
            path: path.to_path_buf(),
            reason: "its name is not UTF-8".into(),
            refusal: Refusal::Input,
        });
    };
    let file = source::open_regular(&real).map_err(read_error)?;
    let metadata = file.metadata().map_err(read_error)?;
    if metadata.len() != edit.original_len {
        return Err(ElfError::Unsupported {
            path: path.to_path_buf(),
            reason: format!("the file is {} bytes but the edit was planned for {}", metadata.len(), edit.original_len),
            refusal: Refusal::Input,
        });
    }
    let mut reader = SplicedReader::new(file, edit).map_err(read_error)?;
    let mut out = tempfile::Builder::new().prefix(&format!(".{name}.tmp-")).tempfile_in(dir).map_err(write_error)?;
    let mode = std::fs::Permissions::from_mode(metadata.permissions().mode() & 0o7777);
    out.as_file().set_permissions(mode).map_err(write_error)?;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buffer).map_err(read_error)?;
        if n == 0 {
            break;
        }
        out.as_file_mut().write_all(&buffer[..n]).map_err(write_error)?;
    }
    out.as_file().sync_all().map_err(write_error)?;
    // Until this rename the original is untouched; dropping `out` on an error removes the temp file.
    out.persist(&real).map_err(|error| write_error(error.error))?;
    if let Ok(directory) = std::fs::File::open(dir) {
        // The rename is durable once the directory is; a failure here changes nothing.
        let _ = directory.sync_all();
    }
    Ok(())
}

/// Classifies a parsed file and reads its names (SPEC §6: other machines are `Other`).
fn info_from(source: &dyn Source, elf: &ElfFile) -> Result<ElfInfo, ElfError> {
    let header = &elf.header;
    let flags_1 = elf.dynamic.as_ref().and_then(|dynamic| dynamic.value(DT_FLAGS_1)).unwrap_or(0);
    let kind = match header.e_type {
        _ if !HOST_MACHINES.contains(&header.machine) => ElfKind::Other,
        ET_EXEC => ElfKind::Executable,
        ET_DYN if flags_1 & DF_1_PIE != 0 => ElfKind::Executable,
        ET_DYN => ElfKind::SharedLibrary,
        _ => ElfKind::Other,
    };
    let joined = |tag| -> Result<Option<String>, ElfError> {
        let values = elf.dynamic_strings(source, tag)?;
        Ok((!values.is_empty()).then(|| values.join(":")))
    };
    Ok(ElfInfo {
        kind,
        machine: header.machine,
        is_64: header.is_64,
        little_endian: header.endian.little,
        soname: elf.dynamic_strings(source, DT_SONAME)?.into_iter().next(),
        needed: elf.dynamic_strings(source, DT_NEEDED)?,
        rpath: joined(DT_RPATH)?,
        runpath: joined(DT_RUNPATH)?,
        interpreter: elf.interpreter.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hints speak of the file, never of a caller's flags or inputs.
    #[test]
    fn malformed_hint_names_something_the_user_can_do() {
        let error = ElfError::Malformed { path: PathBuf::from("lib/libx.so"), reason: "truncated".to_owned() };
        let hint = error.hint().unwrap_or_default();
        assert!(hint.contains("rebuild it") && hint.contains("report its build"), "{hint}");
        assert!(!hint.contains("--") && !hint.contains("artifact"), "{hint}");
    }
}
