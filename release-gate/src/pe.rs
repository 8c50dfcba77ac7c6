//! Windows wheels (SPEC §7): every PE file (DLL, EXE, `.pyd`) parses, is built for the
//! machine the wheel's tag names, and imports only DLLs the install provides (its own
//! directory, core's `bin/`) or Windows itself does (system DLLs, the MSVC and UCRT
//! runtimes: a named list). An ELF file in a Windows wheel, or a PE file in a Linux one,
//! can never load and is a violation. PE files are read with `goblin`, an independent
//! reader, after the layout a loader requires is checked (`elf_audit::check_pe_layout`:
//! `goblin` reads what it can of a malformed file); one larger than [`PE_CAP`] is checked
//! from its headers only.
//!
//! Owns: these checks. Does not own: streaming members (`member_check`), ELF rules.

use std::collections::BTreeSet;

use super::report::{Check, Findings};

/// PE members up to this size are kept whole for `goblin`; larger ones keep their head.
pub(crate) const PE_CAP: usize = 64 << 20;

const IMAGE_FILE_MACHINE_I386: u16 = 0x14c;
const IMAGE_FILE_MACHINE_AMD64: u16 = 0x8664;
const IMAGE_FILE_MACHINE_ARM64: u16 = 0xaa64;

/// DLLs every Windows provides, and the Visual C++ and Universal C runtimes (which ROCm's
/// Windows build expects installed, as every MSVC-built program does). `api-ms-win-*` and
/// `ext-ms-*` API sets are matched by prefix.
const SYSTEM_DLLS: &[&str] = &[
    "advapi32.dll",
    "bcrypt.dll",
    "cfgmgr32.dll",
    "comctl32.dll",
    "comdlg32.dll",
    "crypt32.dll",
    "d3d11.dll",
    "d3d12.dll",
    "dbghelp.dll",
    "dxcore.dll",
    "dxgi.dll",
    "gdi32.dll",
    "imagehlp.dll",
    "iphlpapi.dll",
    "kernel32.dll",
    "kernelbase.dll",
    "msvcrt.dll",
    "ncrypt.dll",
    "netapi32.dll",
    "ntdll.dll",
    "ole32.dll",
    "oleaut32.dll",
    "powrprof.dll",
    "psapi.dll",
    "rpcrt4.dll",
    "secur32.dll",
    "setupapi.dll",
    "shell32.dll",
    "shlwapi.dll",
    "user32.dll",
    "userenv.dll",
    "version.dll",
    "winmm.dll",
    "ws2_32.dll",
    "wintrust.dll",
    // The MSVC runtime (Visual C++ 2015-2022 redistributable) and the UCRT.
    "concrt140.dll",
    "msvcp140.dll",
    "msvcp140_1.dll",
    "msvcp140_2.dll",
    "msvcp140_atomic_wait.dll",
    "msvcp140_codecvt_ids.dll",
    "ucrtbase.dll",
    "vcomp140.dll",
    "vcruntime140.dll",
    "vcruntime140_1.dll",
];

/// A PE file found in a wheel, with the path it installs to in site-packages.
#[derive(Debug)]
pub(crate) struct PeMember {
    pub path: String,
    /// Imported DLL names, lower-cased (Windows matches them without case).
    pub imports: Vec<String>,
}

/// The PE machine a wheel platform tag runs, if it is a Windows tag.
pub(crate) fn windows_machine(platform_tag: &str) -> Option<u16> {
    platform_tag.split('.').find_map(|tag| match tag {
        "win_amd64" => Some(IMAGE_FILE_MACHINE_AMD64),
        "win_arm64" => Some(IMAGE_FILE_MACHINE_ARM64),
        "win32" => Some(IMAGE_FILE_MACHINE_I386),
        _ => None,
    })
}

/// Checks one PE member of a wheel tagged `platform_tag`; `complete` is false when only
/// its first [`PE_CAP`] bytes were kept. Returns it for the import check when it parsed.
pub(crate) fn inspect_pe(
    file: &str,
    path: &str,
    bytes: &[u8],
    complete: bool,
    platform_tag: &str,
    findings: &mut Findings,
) -> Option<PeMember> {
    let Some(expected) = windows_machine(platform_tag) else {
        let message = format!("a Windows PE file in a `{platform_tag}` wheel: no loader of that platform reads it");
        findings.violation(file, Some(path), Check::Platform, message);
        return None;
    };
    if let Some(machine) = coff_machine(bytes) {
        if machine != expected {
            let message = format!("built for PE machine {machine:#x}, but the tag `{platform_tag}` runs {expected:#x}");
            findings.violation(file, Some(path), Check::Platform, message);
        }
    }
    if !complete {
        let message = format!("larger than {} MiB: its imports were not checked", PE_CAP >> 20);
        findings.warning(file, Some(path), Check::Closure, message);
        return None;
    }
    if let Err(reason) = elf_audit::check_pe_layout(&bytes) {
        let message = format!("a malformed PE file a Windows loader refuses: {reason}");
        findings.violation(file, Some(path), Check::PeStructure, message);
        return None;
    }
    match goblin::pe::PE::parse(bytes) {
        Ok(pe) => {
            let imports = pe.libraries.iter().map(|name| name.to_ascii_lowercase()).collect();
            Some(PeMember { path: path.to_owned(), imports })
        }
        Err(error) => {
            findings.violation(file, Some(path), Check::PeStructure, format!("unreadable PE file: {error}"));
            None
        }
    }
}

/// `Machine` of the COFF header `e_lfanew` points at, if the bytes hold it.
fn coff_machine(bytes: &[u8]) -> Option<u16> {
    let lfanew = u32::from_le_bytes(bytes.get(0x3c..0x40)?.try_into().ok()?) as usize;
    if bytes.get(lfanew..lfanew.checked_add(4)?)? != b"PE\0\0" {
        return None;
    }
    Some(u16::from_le_bytes(bytes.get(lfanew + 4..lfanew + 6)?.try_into().ok()?))
}

/// An ELF file for a CPU in a Windows wheel.
pub(crate) fn elf_in_windows_wheel(file: &str, path: &str, platform_tag: &str, findings: &mut Findings) {
    let message = format!("an ELF file in a `{platform_tag}` wheel: Windows cannot load it");
    findings.violation(file, Some(path), Check::Platform, message);
}

/// What the import check needs of one wheel: its file name, what it installs, its PE files.
pub(crate) struct WheelPe<'a> {
    pub file: &'a str,
    pub installed: &'a [String],
    pub pe_files: &'a [PeMember],
}

/// Every import of every PE file of the set resolves: beside the importer, in core's
/// `bin/`, or in Windows itself.
pub(crate) fn check_imports(wheels: &[WheelPe<'_>], findings: &mut Findings) {
    let installed: BTreeSet<String> =
        wheels.iter().flat_map(|wheel| wheel.installed.iter()).map(|path| path.to_ascii_lowercase()).collect();
    let core_bins: Vec<String> = installed
        .iter()
        .filter_map(|path| path.rsplit_once('/').map(|(dir, _)| dir))
        .filter(|dir| dir.starts_with("_rocm_sdk_core") && dir.ends_with("/bin") && dir.matches('/').count() == 1)
        .map(str::to_owned)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    for wheel in wheels {
        for member in wheel.pe_files {
            let own_dir = member.path.rsplit_once('/').map(|(dir, _)| dir.to_ascii_lowercase()).unwrap_or_default();
            for import in &member.imports {
                let beside = installed.contains(&format!("{own_dir}/{import}"));
                let in_core = core_bins.iter().any(|bin| installed.contains(&format!("{bin}/{import}")));
                if beside || in_core || is_system_dll(import) {
                    continue;
                }
                let message = format!(
                    "imports `{import}`, which is neither in the install ({own_dir}/, core's bin/) nor a Windows \
                     system or MSVC/UCRT runtime DLL"
                );
                findings.violation(wheel.file, Some(&member.path), Check::Closure, message);
            }
        }
    }
}

fn is_system_dll(name: &str) -> bool {
    SYSTEM_DLLS.contains(&name) || name.starts_with("api-ms-win-") || name.starts_with("ext-ms-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_tags_name_their_machine() {
        assert_eq!(windows_machine("win_amd64"), Some(IMAGE_FILE_MACHINE_AMD64));
        assert_eq!(windows_machine("win_arm64"), Some(IMAGE_FILE_MACHINE_ARM64));
        assert_eq!(windows_machine("linux_x86_64"), None);
    }

    #[test]
    fn system_dlls_and_api_sets_are_allowed() {
        assert!(is_system_dll("kernel32.dll") && is_system_dll("vcruntime140.dll"));
        assert!(is_system_dll("api-ms-win-crt-runtime-l1-1-0.dll"));
        assert!(!is_system_dll("amdhip64_7.dll"));
    }
}
