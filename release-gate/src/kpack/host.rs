//! A host ELF file's HIP wrappers as the HIP runtime reads them (SPEC §12, KPACK.md §2):
//! the 24-byte wrappers of `.hipFatBinSegment` (u32 magic, u32 version, u64 pointer, u64
//! reserved), `HIPF` for fat code, `HIPK` for code split into archives; a `HIPK`
//! wrapper's run-time pointer (its `R_X86_64_RELATIVE` relocation's addend in a shared
//! object or PIE, the stored value in a fixed-address executable) must reach mapped file
//! bytes holding the marker `{kpack_search_paths: [str], kernel_name: str}`; its index is
//! the low 32 bits of the reserved field. Also whether `.hip_fatbin` still has bytes in
//! the file and whether a relocation still points into it.
//!
//! Owns: reading those with bounded, positioned reads (section headers, the dynamic
//! table, the relocations, at most 64 KiB of marker). Does not own: the ELF checks every
//! host file gets (`elf_checks`), what the set needs (`split_set`).

use std::collections::BTreeMap;
use std::io::{self, BufReader, Read};

use super::msgpack::{read_value, Value};
use super::source::{read_exact_at, Positioned};
use elf_audit::{ElfFile, ElfWindow, ET_DYN, ET_EXEC, PT_DYNAMIC};

const WRAPPER_BYTES: u64 = 24;
/// `HIPF` (fat code in the file) and `HIPK` (split into kpack archives), as u32 LE.
const MAGIC_FAT: u32 = 0x4849_5046;
const MAGIC_SPLIT: u32 = 0x4B50_4948;
/// The runtime parses markers with a 64 KiB bound (KPACK.md §2).
const MAX_MARKER_BYTES: u64 = 64 << 10;
/// More wrappers than any library has (Debian's rocSPARSE: 111), and a bounded read.
const MAX_WRAPPERS: u64 = 1 << 16;
const MAX_SECTIONS: u64 = 1 << 20;
const MAX_NAMES_BYTES: u64 = 16 << 20;
const MAX_DYNAMIC_BYTES: u64 = 1 << 20;
const SHT_NOBITS: u32 = 8;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const EM_X86_64: u16 = 62;
const EM_AARCH64: u16 = 183;

/// A host binary with HIP wrappers or a `.hip_fatbin` section.
#[derive(Debug)]
pub(crate) struct FatBinary {
    /// Where it installs in site-packages.
    pub path: String,
    /// `.hip_fatbin`'s size when its bytes are still in the file (not `SHT_NOBITS`).
    pub fatbin_file_bytes: Option<u64>,
    pub wrappers: Vec<Wrapper>,
}

#[derive(Debug)]
pub(crate) enum Wrapper {
    /// `HIPF`: the device code is in the file.
    Fat,
    /// `HIPK`: the runtime reads `marker` and asks the archives for `kernel_name#index`.
    Split { position: usize, index: u32, marker: Option<Marker> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marker {
    pub search_paths: Vec<String>,
    pub kernel_name: String,
}

struct Section {
    name: String,
    kind: u32,
    addr: u64,
    offset: u64,
    size: u64,
}

/// `len` bytes at `offset`: from the window when it holds them, else read again.
fn bytes_at(source: &mut dyn Positioned, window: &ElfWindow, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    match window.read_at(offset, len) {
        Some(bytes) => Ok(bytes.to_vec()),
        None => read_exact_at(source, offset, len as usize),
    }
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut field = [0u8; 8];
    field.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(field)
}

/// The section headers with names, or `None` when the table cannot be read (the file's
/// structure is the ELF checks' to judge; without sections there is no wrapper to find).
fn read_sections(source: &mut dyn Positioned, window: &ElfWindow, elf: &ElfFile) -> Option<Vec<Section>> {
    let head = window.head();
    if head.len() < 64 || elf.shoff == 0 || elf.shentsize != 64 {
        return None;
    }
    let mut count = elf.shnum;
    let mut names_index = u64::from(u16_at(head, 62));
    if count == 0 || names_index == 0xffff {
        // Extended numbering: the real values are in section 0.
        let first = bytes_at(source, window, elf.shoff, 64).ok()?;
        if count == 0 {
            count = u64_at(&first, 32);
        }
        if names_index == 0xffff {
            names_index = u64::from(u32_at(&first, 40));
        }
    }
    if count > MAX_SECTIONS || names_index >= count {
        return None;
    }
    let table = bytes_at(source, window, elf.shoff, count * 64).ok()?;
    let field = |index: u64, at: usize| u64_at(&table, index as usize * 64 + at);
    let (names_offset, names_size) = (field(names_index, 24), field(names_index, 32));
    if names_size > MAX_NAMES_BYTES {
        return None;
    }
    let names = bytes_at(source, window, names_offset, names_size).ok()?;
    let name = |at: usize| {
        let rest = names.get(at..).unwrap_or_default();
        let end = rest.iter().position(|&byte| byte == 0).unwrap_or(rest.len());
        String::from_utf8_lossy(&rest[..end]).into_owned()
    };
    Some(
        (0..count)
            .map(|index| {
                let at = index as usize * 64;
                Section {
                    name: name(u32_at(&table, at) as usize),
                    kind: u32_at(&table, at + 4),
                    addr: field(index, 16),
                    offset: field(index, 24),
                    size: field(index, 32),
                }
            })
            .collect(),
    )
}

/// Reads the HIP wrappers of the host file at `path`. `None` when it has neither
/// `.hipFatBinSegment` nor `.hip_fatbin`; the problems are violations of that file.
pub(crate) fn read_fat_binary(
    source: &mut dyn Positioned,
    window: &ElfWindow,
    elf: &ElfFile,
    path: &str,
) -> (Option<FatBinary>, Vec<String>) {
    let mut problems = Vec::new();
    if !elf.is_64 || !elf.little_endian {
        return (None, problems);
    }
    let Some(sections) = read_sections(source, window, elf) else { return (None, problems) };
    let fatbin = sections.iter().find(|section| section.name == ".hip_fatbin");
    let segment = sections.iter().find(|section| section.name == ".hipFatBinSegment");
    if fatbin.is_none() && segment.is_none() {
        return (None, problems);
    }
    let fatbin_file_bytes =
        fatbin.filter(|section| section.kind != SHT_NOBITS && section.size > 0).map(|section| section.size);
    let mut binary = FatBinary { path: path.to_owned(), fatbin_file_bytes, wrappers: Vec::new() };
    let Some(segment) = segment else { return (Some(binary), problems) };
    // A fat file's wrappers are only read when they are at hand: in a multi-gigabyte
    // deflated library they may sit in the middle, a whole inflation away, and its
    // `.hip_fatbin` bytes already say what a split set needs to know of it.
    if binary.fatbin_file_bytes.is_some() && window.read_at(segment.offset, segment.size).is_none() {
        return (Some(binary), problems);
    }
    if let Err(problem) = read_wrappers(source, window, elf, segment, fatbin, &mut binary, &mut problems) {
        problems.push(problem);
    }
    (Some(binary), problems)
}

fn read_wrappers(
    source: &mut dyn Positioned,
    window: &ElfWindow,
    elf: &ElfFile,
    segment: &Section,
    fatbin: Option<&Section>,
    binary: &mut FatBinary,
    problems: &mut Vec<String>,
) -> Result<(), String> {
    if segment.kind == SHT_NOBITS {
        return Err("has a `.hipFatBinSegment` without bytes in the file (SHT_NOBITS)".to_owned());
    }
    if segment.size % WRAPPER_BYTES != 0 || segment.size / WRAPPER_BYTES > MAX_WRAPPERS {
        return Err(format!(
            "has a `.hipFatBinSegment` of {} bytes, not a whole number of 24-byte wrappers",
            segment.size
        ));
    }
    let bytes = bytes_at(source, window, segment.offset, segment.size)
        .map_err(|error| format!("cannot read its `.hipFatBinSegment`: {error}"))?;
    let mut split = Vec::new();
    for (position, wrapper) in bytes.chunks_exact(WRAPPER_BYTES as usize).enumerate() {
        match u32_at(wrapper, 0) {
            MAGIC_FAT => binary.wrappers.push(Wrapper::Fat),
            MAGIC_SPLIT => {
                let version = u32_at(wrapper, 4);
                if version != 1 {
                    problems.push(format!(
                        "has wrapper {position} reading HIPK with version {version}; the HIP runtime reads a kpack marker only from version 1"
                    ));
                }
                let address = segment.addr.wrapping_add(position as u64 * WRAPPER_BYTES + 8);
                split.push((position, u64_at(wrapper, 16) as u32, address, u64_at(wrapper, 8)));
            }
            other => problems
                .push(format!("has wrapper {position} with magic {other:#010x}, neither HIPF (fat) nor HIPK (split)")),
        }
    }
    if split.is_empty() {
        return Ok(());
    }
    let relocations = match elf.elf_type {
        ET_DYN => Some(read_relocations(source, window, elf, &split, fatbin, problems)?),
        _ => None,
    };
    for (position, index, address, stored) in split {
        let pointer = match (&relocations, elf.elf_type) {
            (Some(relocations), _) => match relocations.get(&address) {
                Some(Ok(addend)) => Some(*addend),
                Some(Err(kind)) => {
                    problems.push(format!(
                        "has wrapper {position} whose pointer (at {address:#x}) is relocated by type {kind}, not a relative relocation"
                    ));
                    None
                }
                None => {
                    problems.push(format!(
                        "has wrapper {position} whose pointer (at {address:#x}) has no relative relocation: loaded anywhere but its link address, the runtime reads no marker"
                    ));
                    None
                }
            },
            (None, ET_EXEC) => Some(stored),
            (None, _) => None,
        };
        let marker = pointer.and_then(|pointer| match read_marker(source, window, elf, pointer) {
            Ok(marker) => Some(marker),
            Err(why) => {
                problems.push(format!("has wrapper {position} whose marker at {pointer:#x} {why}"));
                None
            }
        });
        binary.wrappers.push(Wrapper::Split { position, index, marker });
    }
    Ok(())
}

/// The relative relocations at the `HIPK` pointers' addresses (address → addend, or the
/// relocation type when it is another), from `DT_RELA`/`DT_RELASZ` as ld.so applies them;
/// a relative relocation into `.hip_fatbin` is reported.
fn read_relocations(
    source: &mut dyn Positioned,
    window: &ElfWindow,
    elf: &ElfFile,
    split: &[(usize, u32, u64, u64)],
    fatbin: Option<&Section>,
    problems: &mut Vec<String>,
) -> Result<BTreeMap<u64, Result<u64, u32>>, String> {
    let relative = match elf.machine {
        EM_X86_64 => 8,
        EM_AARCH64 => 1027,
        other => return Err(format!("has HIPK wrappers on machine {other}, whose relocations the gate does not read")),
    };
    let Some(dynamic) = elf.segments.iter().find(|segment| segment.kind == PT_DYNAMIC) else {
        return Err(
            "is a shared object with HIPK wrappers but no dynamic section to relocate their pointers".to_owned()
        );
    };
    let dynamic_bytes = bytes_at(source, window, dynamic.offset, dynamic.filesz.min(MAX_DYNAMIC_BYTES))
        .map_err(|error| format!("cannot read its dynamic section: {error}"))?;
    let (mut rela, mut relasz) = (None, 0);
    for entry in dynamic_bytes.chunks_exact(16) {
        match u64_at(entry, 0) {
            0 => break,
            DT_RELA => rela = Some(u64_at(entry, 8)),
            DT_RELASZ => relasz = u64_at(entry, 8),
            _ => {}
        }
    }
    let wanted: BTreeMap<u64, ()> = split.iter().map(|(_, _, address, _)| (*address, ())).collect();
    let mut found = BTreeMap::new();
    let Some(rela) = rela else { return Ok(found) };
    let offset =
        elf.offset_of(rela).ok_or_else(|| format!("has DT_RELA {rela:#x} outside every PT_LOAD's file bytes"))?;
    if offset.checked_add(relasz).is_none_or(|end| end > elf.len) {
        return Err(format!("has relocations (DT_RELA {rela:#x}, DT_RELASZ {relasz}) past the end of the file"));
    }
    let fatbin_range = fatbin.map(|section| section.addr..section.addr.saturating_add(section.size));
    let mut into_fatbin = 0u64;
    let mut reader: Box<dyn Read + '_> = match window.read_at(offset, relasz) {
        Some(bytes) => Box::new(bytes),
        None => Box::new(BufReader::with_capacity(
            1 << 16,
            source.read_from(offset).map_err(|e| e.to_string())?.take(relasz),
        )),
    };
    let mut entry = [0u8; 24];
    for _ in 0..relasz / 24 {
        reader.read_exact(&mut entry).map_err(|error| format!("cannot read its relocations: {error}"))?;
        let (at, info, addend) = (u64_at(&entry, 0), u64_at(&entry, 8), u64_at(&entry, 16));
        let kind = info as u32;
        if kind == relative && fatbin_range.as_ref().is_some_and(|range| range.contains(&addend)) {
            into_fatbin += 1;
        }
        if wanted.contains_key(&at) {
            found.insert(at, if kind == relative && info >> 32 == 0 { Ok(addend) } else { Err(kind) });
        }
    }
    if into_fatbin > 0 {
        problems.push(format!(
            "has {into_fatbin} relocations still pointing into `.hip_fatbin`, whose bytes a split takes out of the file"
        ));
    }
    Ok(found)
}

/// The marker at run-time address `pointer`: mapped from the file by a `PT_LOAD`, one
/// MessagePack map within 64 KiB.
fn read_marker(source: &mut dyn Positioned, window: &ElfWindow, elf: &ElfFile, pointer: u64) -> Result<Marker, String> {
    let load = elf
        .loads()
        .find(|load| pointer >= load.vaddr && pointer < load.vaddr.saturating_add(load.filesz))
        .ok_or("is outside every PT_LOAD's bytes from the file")?;
    let offset = load.offset.saturating_add(pointer - load.vaddr);
    let available =
        (load.vaddr.saturating_add(load.filesz) - pointer).min(MAX_MARKER_BYTES).min(elf.len.saturating_sub(offset));
    let bytes = bytes_at(source, window, offset, available).map_err(|error| format!("cannot be read: {error}"))?;
    let (value, _) = read_value(&bytes).map_err(|why| format!("is not a MessagePack map: it {why}"))?;
    let paths = value.get("kpack_search_paths").and_then(Value::as_array);
    let paths: Option<Vec<String>> =
        paths.and_then(|paths| paths.iter().map(|path| path.as_str().map(str::to_owned)).collect());
    let kernel_name = value.get("kernel_name").and_then(Value::as_str);
    match (paths, kernel_name) {
        (Some(search_paths), Some(kernel_name)) if !search_paths.is_empty() => {
            Ok(Marker { search_paths, kernel_name: kernel_name.to_owned() })
        }
        _ => Err("is not a map of `kpack_search_paths` (strings) and `kernel_name` (a string)".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kpack::source::InMemory;
    use elf_audit::parse_elf;

    /// A host file compiled by `cc` from `body` (after the wrapper struct), with `args`.
    fn compile(body: &str, args: &[&str]) -> Vec<u8> {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = dir.path().join("host.c");
        let out = dir.path().join("host");
        let prelude = "#include <stdint.h>\nstruct wrapper { uint32_t magic, version; const void *binary; uint64_t reserved; };\n";
        fs_err::write(&source, format!("{prelude}{body}")).expect("write C");
        let status = std::process::Command::new("cc")
            .args(args)
            .arg("-o")
            .arg(&out)
            .arg(&source)
            .status()
            .expect("`cc` is needed for this test: apt-get install gcc");
        assert!(status.success(), "cc failed on {body}");
        fs_err::read(&out).expect("read the compiled file")
    }

    /// `{kpack_search_paths: ["../.kpack/t_@GFXARCH@.kpack"], kernel_name: "lib/x.so"}`.
    const MARKER: &str = "static const unsigned char marker[] __attribute__((section(\".rocm_kpack_ref\"), used)) = { \
        0x82, 0xb2, 'k','p','a','c','k','_','s','e','a','r','c','h','_','p','a','t','h','s', 0x91, \
        0xbb, '.','.','/','.','k','p','a','c','k','/','t','_','@','G','F','X','A','R','C','H','@','.','k','p','a','c','k', \
        0xab, 'k','e','r','n','e','l','_','n','a','m','e', 0xa8, 'l','i','b','/','x','.','s','o' };\n";

    fn library(wrappers: &str) -> Vec<u8> {
        let body = format!(
            "{MARKER}struct wrapper wrappers[] __attribute__((section(\".hipFatBinSegment\"), used)) = {{ {wrappers} }};\n\
             int run(void) {{ return (int)wrappers[0].version; }}\n"
        );
        compile(&body, &["-shared", "-fPIC"])
    }

    fn read(bytes: &[u8]) -> (Option<FatBinary>, Vec<String>) {
        let mut window = ElfWindow::default();
        window.push(bytes);
        match parse_elf(&window) {
            Ok(elf) => read_fat_binary(&mut InMemory(bytes), &window, &elf, "lib/x.so"),
            Err(_) => (None, Vec::new()),
        }
    }

    #[test]
    fn split_wrappers_reach_their_marker_through_relocations() {
        let bytes = library("{ 0x4B504948u, 1, marker, 0 }, { 0x4B504948u, 1, marker, 7 }");
        let (binary, problems) = read(&bytes);
        assert_eq!(problems, Vec::<String>::new());
        let binary = binary.expect("a fat binary");
        assert_eq!(binary.fatbin_file_bytes, None);
        let marker =
            Marker { search_paths: vec!["../.kpack/t_@GFXARCH@.kpack".to_owned()], kernel_name: "lib/x.so".to_owned() };
        let wrappers: Vec<(usize, u32, Option<&Marker>)> = binary
            .wrappers
            .iter()
            .filter_map(|wrapper| match wrapper {
                Wrapper::Split { position, index, marker } => Some((*position, *index, marker.as_ref())),
                Wrapper::Fat => None,
            })
            .collect();
        assert_eq!(wrappers, [(0, 0, Some(&marker)), (1, 7, Some(&marker))]);
        // A fixed-address executable's pointer is read in place.
        let body = format!(
            "{MARKER}struct wrapper wrappers[] __attribute__((section(\".hipFatBinSegment\"), used)) = {{ {{ 0x4B504948u, 1, marker, 0 }} }};\n\
             int main(void) {{ return (int)wrappers[0].version; }}\n"
        );
        let (binary, problems) = read(&compile(&body, &["-no-pie", "-fno-pic"]));
        assert_eq!(problems, Vec::<String>::new());
        assert!(matches!(binary.expect("fat").wrappers[..], [Wrapper::Split { marker: Some(_), .. }]));
    }

    #[test]
    fn hostile_wrappers_are_named() {
        let (_, problems) = read(&library("{ 0x12345678u, 1, marker, 0 }"));
        assert_eq!(problems, ["has wrapper 0 with magic 0x12345678, neither HIPF (fat) nor HIPK (split)"]);
        let (_, problems) = read(&library("{ 0x4B504948u, 2, marker, 0 }"));
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].contains("version 2"), "{problems:#?}");
        let twenty = compile(
            "unsigned char segment[20] __attribute__((section(\".hipFatBinSegment\"), used)) = { 1 };\n",
            &["-shared", "-fPIC"],
        );
        assert_eq!(read(&twenty).1, ["has a `.hipFatBinSegment` of 20 bytes, not a whole number of 24-byte wrappers"]);
        let not_a_map = compile(
            "static const unsigned char marker[] __attribute__((section(\".rocm_kpack_ref\"), used)) = { 5 };\n\
             struct wrapper wrappers[] __attribute__((section(\".hipFatBinSegment\"), used)) = { { 0x4B504948u, 1, marker, 0 } };\n",
            &["-shared", "-fPIC"],
        );
        let (_, problems) = read(&not_a_map);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].ends_with("is not a map of `kpack_search_paths` (strings) and `kernel_name` (a string)"),
            "{problems:#?}"
        );
    }

    /// Bytes changed anywhere in a real split library: problems in words, never a panic.
    #[test]
    fn mutations_never_panic() {
        let original = library("{ 0x4B504948u, 1, marker, 0 }, { 0x4B504948u, 1, marker, 1 }");
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..3000 {
            let mut bytes = original.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] = next() as u8;
            }
            let _ = read(&bytes);
        }
    }
}
