//! One archive member as verify meets it: its bytes streamed once (hashed, an ELF file's
//! ends kept, small texts kept), its path judged, and an ELF member checked or counted as
//! not ours. Wheels and the devel tarball inside them share these.
//!
//! Owns: member-level checks and streaming. Does not own: archive structure (`archive`),
//! the devel tree (`devel`), ELF rules (`elf_checks`).

use std::io::{self, Read};

use sha2::{Digest, Sha256};

use super::elf_checks::check_elf;
use super::pe::PE_CAP;
use super::report::{Check, Findings};
use crate::platform::TargetMachine;
use elf_audit::{
    elf_identity, parse_elf, read_dynamic_symbols, DynamicSymbols, ElfFile, ElfIdentity, ElfWindow, ELF_MAGIC,
};
use goblin::elf::header::EM_AMDGPU;

/// Metadata files larger than this are reported instead of read.
const TEXT_CAP: usize = 16 << 20;
const CHUNK: usize = 256 << 10;

/// The marker the packager's launcher embeds before its relative target path (and a NUL).
const LAUNCHER_MARKER: &[u8] = b"ROCM_SDK_LAUNCHER_TARGET=";
/// Files larger than this are not searched for [`LAUNCHER_MARKER`].
const LAUNCHER_MAX_BYTES: u64 = 4 << 20;

/// A host ELF file found in a package, with the path it installs to in site-packages.
#[derive(Debug)]
pub(crate) struct ElfMember {
    pub path: String,
    pub elf: ElfFile,
    /// Its dynamic symbols, for the symbol closure (`symbols`).
    pub symbols: DynamicSymbols,
    /// Launcher target after [`LAUNCHER_MARKER`], when present.
    pub launcher_target: Option<String>,
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
    pub(crate) fn new() -> ElfScope {
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

/// How a streamed member was measured.
#[derive(Default)]
pub(crate) struct Streamed {
    pub size: u64,
    pub sha256: Option<[u8; 32]>,
    pub window: Option<ElfWindow>,
    /// A PE file's bytes (the first [`PE_CAP`] of them), and whether that is all of it.
    pub pe: Option<(Vec<u8>, bool)>,
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
        if first && chunk.starts_with(b"MZ") {
            streamed.pe = Some((Vec::new(), true));
        }
        first = false;
        if let Some(hasher) = hasher.as_mut() {
            hasher.update(chunk);
        }
        if let Some(window) = streamed.window.as_mut() {
            window.push(chunk);
        }
        if let Some((bytes, complete)) = streamed.pe.as_mut() {
            let room = PE_CAP.saturating_sub(bytes.len());
            bytes.extend_from_slice(&chunk[..room.min(chunk.len())]);
            *complete &= chunk.len() <= room;
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
/// ours to judge), whether or not the rest of them parses. Returns the parsed file, at
/// `path`, for the closure checks.
pub(crate) fn inspect_elf(
    file: &str,
    path: &str,
    window: &ElfWindow,
    scope: &mut ElfScope,
    findings: &mut Findings,
) -> Option<ElfMember> {
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
            // Launchers are small; scanning only small files keeps huge libraries cheap.
            let launcher_target = (window.len() <= LAUNCHER_MAX_BYTES).then(|| find_launcher_target(window.head()));
            let symbols = read_dynamic_symbols(window, &elf);
            Some(ElfMember { path: path.to_owned(), elf, symbols, launcher_target: launcher_target.flatten() })
        }
    }
}

fn find_launcher_target(head: &[u8]) -> Option<String> {
    let start = head.windows(LAUNCHER_MARKER.len()).position(|window| window == LAUNCHER_MARKER)?;
    let rest = &head[start + LAUNCHER_MARKER.len()..];
    let end = rest.iter().position(|&byte| byte == 0)?;
    String::from_utf8(rest[..end].to_vec()).ok()
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
    } else if trimmed.split('/').any(|part| part.len() > 255) {
        // NAME_MAX: pip fails the install with `File name too long` (SPEC §2, names).
        Some("has a component longer than 255 bytes, which no file system takes")
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
}
