//! Per-file ELF rules: a sound layout the kernel and ld.so accept, and hermetic search
//! paths (SPEC §2 "RPATH dependencies", SPEC §6 "A grown layout keeps the kernel's rules").
//!
//! Owns: judging one parsed [`ElfFile`]. Does not own: parsing (`elf_parse`), resolving
//! libraries across packages (`closure`), symbol versions (`glibc`).

use super::report::{Check, Findings};
use elf_audit::{ElfFile, Segment, ET_DYN, ET_EXEC, PF_W, PT_DYNAMIC, PT_INTERP, PT_NOTE, PT_PHDR};

/// Reports structure and RPATH violations of one host ELF file.
pub(crate) fn check_elf(file: &str, path: &str, elf: &ElfFile, findings: &mut Findings) {
    for problem in &elf.problems {
        findings.violation(file, Some(path), Check::ElfStructure, problem.clone());
    }
    for part in &elf.unchecked {
        findings.warning(file, Some(path), Check::ElfStructure, format!("not checked: {part}"));
    }
    if elf.elf_type != ET_EXEC && elf.elf_type != ET_DYN {
        return;
    }
    check_segments(file, path, elf, findings);
    check_search_path(file, path, elf, findings);
}

fn segment_name(kind: u32) -> String {
    match kind {
        1 => "PT_LOAD".to_owned(),
        PT_DYNAMIC => "PT_DYNAMIC".to_owned(),
        PT_INTERP => "PT_INTERP".to_owned(),
        PT_NOTE => "PT_NOTE".to_owned(),
        PT_PHDR => "PT_PHDR".to_owned(),
        other => format!("segment type {other:#x}"),
    }
}

fn check_segments(file: &str, path: &str, elf: &ElfFile, findings: &mut Findings) {
    for segment in &elf.segments {
        if segment.file_end() > elf.len {
            findings.violation(
                file,
                Some(path),
                Check::ElfStructure,
                format!(
                    "{} (file range {:#x}..{:#x}) extends past the end of the file ({} bytes)",
                    segment_name(segment.kind),
                    segment.offset,
                    segment.file_end(),
                    elf.len
                ),
            );
        }
    }
    for segment in elf.segments.iter().filter(|segment| is_loaded_table(segment.kind) && segment.filesz > 0) {
        let in_file_range =
            elf.loads().any(|load| segment.offset >= load.offset && segment.file_end() <= load.file_end());
        if !in_file_range {
            findings.violation(
                file,
                Some(path),
                Check::ElfStructure,
                format!(
                    "{} (file range {:#x}..{:#x}) is outside every PT_LOAD",
                    segment_name(segment.kind),
                    segment.offset,
                    segment.file_end()
                ),
            );
        }
    }
    if let Some(phdr) = elf.segments.iter().find(|segment| segment.kind == PT_PHDR) {
        check_phdr(file, path, elf, phdr, findings);
    }
    for &(tag, vaddr) in &elf.dynamic_addresses {
        if elf.offset_of(vaddr).is_none() {
            findings.violation(
                file,
                Some(path),
                Check::ElfStructure,
                format!("{tag} address {vaddr:#x} is outside every PT_LOAD"),
            );
        }
    }
    if let Some((strtab, strsz)) = elf.dynamic_strings {
        check_string_table(file, path, elf, strtab, strsz, findings);
    }
    if elf.elf_type == ET_EXEC {
        if let Some(first) = elf.loads().next() {
            if first.flags & PF_W != 0 {
                findings.violation(
                    file,
                    Some(path),
                    Check::ElfStructure,
                    "the first PT_LOAD of a non-PIE executable is writable (some kernels refuse to run it)",
                );
            }
        }
    }
}

/// ld.so reads names from anywhere in `[DT_STRTAB, DT_STRTAB + DT_STRSZ)`, so the whole
/// table, not just its start, must lie in the file-backed part of one `PT_LOAD`; a grown
/// layout that moves the table but misjudges its size leaves the tail unmapped or zero
/// (SPEC §6 "A grown layout keeps the kernel's rules").
fn check_string_table(file: &str, path: &str, elf: &ElfFile, strtab: u64, strsz: u64, findings: &mut Findings) {
    if elf.offset_of(strtab).is_none() {
        return; // Its start is already reported as outside every PT_LOAD.
    }
    let end = strtab.checked_add(strsz);
    let inside = end.is_some_and(|end| {
        elf.loads().any(|load| strtab >= load.vaddr && end <= load.vaddr.saturating_add(load.filesz))
    });
    if !inside {
        findings.violation(
            file,
            Some(path),
            Check::ElfStructure,
            format!(
                "dynamic string table (DT_STRTAB {strtab:#x}, DT_STRSZ {strsz:#x}, addresses {strtab:#x}..{:#x}) \
                 is not inside one PT_LOAD's file-backed range",
                strtab.saturating_add(strsz)
            ),
        );
    }
}

/// Segments the loader reads from memory, so they must lie inside a loaded segment.
fn is_loaded_table(kind: u32) -> bool {
    matches!(kind, PT_PHDR | PT_DYNAMIC | PT_INTERP | PT_NOTE)
}

/// ld.so finds the program headers through PT_PHDR's address, so it must describe the
/// table at `e_phoff` and be mapped.
fn check_phdr(file: &str, path: &str, elf: &ElfFile, phdr: &Segment, findings: &mut Findings) {
    if phdr.offset != elf.phoff {
        findings.violation(
            file,
            Some(path),
            Check::ElfStructure,
            format!("PT_PHDR offset {:#x} is not the program header table's offset {:#x}", phdr.offset, elf.phoff),
        );
    }
    let end = phdr.vaddr.saturating_add(phdr.memsz);
    let mapped = elf.loads().any(|load| phdr.vaddr >= load.vaddr && end <= load.vaddr.saturating_add(load.memsz));
    if !mapped {
        findings.violation(
            file,
            Some(path),
            Check::ElfStructure,
            format!("PT_PHDR (addresses {:#x}..{end:#x}) is not covered by any PT_LOAD", phdr.vaddr),
        );
    }
}

/// DT_RPATH with `$ORIGIN`-relative entries only (SPEC §2).
fn check_search_path(file: &str, path: &str, elf: &ElfFile, findings: &mut Findings) {
    if let Some(runpath) = &elf.runpath {
        findings.violation(
            file,
            Some(path),
            Check::Rpath,
            format!("has DT_RUNPATH `{runpath}`; it must be DT_RPATH so LD_LIBRARY_PATH cannot override it"),
        );
    }
    for entry in search_path_entries(elf) {
        if is_origin_relative(entry) {
            continue;
        }
        let message = if entry.starts_with('/') {
            format!("absolute RPATH entry `{entry}`: whoever creates that directory can inject a library")
        } else {
            format!("RPATH entry `{entry}` is relative to the working directory, not `$ORIGIN`")
        };
        findings.violation(file, Some(path), Check::Rpath, message);
    }
}

pub(crate) fn is_origin_relative(entry: &str) -> bool {
    origin_rest(entry).is_some()
}

/// What follows `$ORIGIN` / `${ORIGIN}` in an entry (`""` or `/...`).
pub(crate) fn origin_rest(entry: &str) -> Option<&str> {
    let rest = entry.strip_prefix("$ORIGIN").or_else(|| entry.strip_prefix("${ORIGIN}"))?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// Entries of the search path in effect (DT_RUNPATH wins over DT_RPATH, as in ld.so).
pub(crate) fn search_path_entries(elf: &ElfFile) -> impl Iterator<Item = &str> {
    elf.runpath.as_deref().or(elf.rpath.as_deref()).into_iter().flat_map(|text| text.split(':'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use elf_audit::{parse_elf, ElfWindow, ET_DYN, PT_DYNAMIC, PT_LOAD, PT_PHDR};

    proptest::proptest! {
        /// Parsing and checking never panic: a sane ELF64 header over random tables, so
        /// segment, dynamic and version parsing and the checks see arbitrary offsets.
        #[test]
        fn arbitrary_tables_never_panic(
            phnum in 0u16..8,
            body in proptest::collection::vec(proptest::num::u8::ANY, 512..4096),
        ) {
            let mut bytes = body;
            bytes[..6].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1]);
            bytes[16..18].copy_from_slice(&ET_DYN.to_le_bytes());
            bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
            bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
            bytes[56..58].copy_from_slice(&phnum.to_le_bytes());
            // Make the first entries PT_LOAD, PT_DYNAMIC, PT_PHDR so their paths run.
            for (index, kind) in [PT_LOAD, PT_DYNAMIC, PT_PHDR].into_iter().enumerate() {
                let at = 64 + index * 56;
                bytes[at..at + 4].copy_from_slice(&kind.to_le_bytes());
            }
            let mut window = ElfWindow::default();
            window.push(&bytes);
            if let Ok(elf) = parse_elf(&window) {
                let mut findings = Findings::default();
                check_elf("f", "p", &elf, &mut findings);
            }
        }
    }

    fn library_with_strings(strtab: u64, strsz: u64) -> Vec<String> {
        let load = |vaddr, filesz| Segment { kind: 1, flags: 4, offset: vaddr, vaddr, filesz, memsz: filesz };
        let elf = ElfFile {
            elf_type: ET_DYN,
            len: 0x3000,
            segments: vec![load(0, 0x1000), load(0x1000, 0x2000)],
            dynamic_addresses: vec![("DT_STRTAB", strtab)],
            dynamic_strings: Some((strtab, strsz)),
            ..ElfFile::default()
        };
        let mut findings = Findings::default();
        check_segments("x.whl", "lib/x.so", &elf, &mut findings);
        findings.violations.into_iter().map(|finding| finding.message).collect()
    }

    #[test]
    fn string_table_must_fit_in_one_load() {
        assert_eq!(library_with_strings(0x800, 0x800), Vec::<String>::new());
        assert_eq!(library_with_strings(0x1800, 0x1800), Vec::<String>::new());
        // Across the boundary of two adjacent loads: each holds only part of it.
        assert_eq!(library_with_strings(0x800, 0x801).len(), 1);
        assert_eq!(library_with_strings(0x2800, 0x900).len(), 1);
        assert_eq!(library_with_strings(0x800, u64::MAX).len(), 1);
        // A start outside every load is reported once, by the address check.
        let outside = library_with_strings(0x5000, 0x10);
        assert_eq!(outside, ["DT_STRTAB address 0x5000 is outside every PT_LOAD"]);
    }

    #[test]
    fn origin_entries() {
        assert_eq!(origin_rest("$ORIGIN"), Some(""));
        assert_eq!(origin_rest("${ORIGIN}/../lib"), Some("/../lib"));
        assert_eq!(origin_rest("$ORIGINAL/lib"), None);
        assert_eq!(origin_rest("/opt/rocm/lib"), None);
        assert_eq!(origin_rest(""), None);
    }
}
