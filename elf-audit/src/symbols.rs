//! Dynamic symbols, and whether a file's imports bind: what a file defines for others
//! ([`Exports`], each definition with its version node), what it leaves undefined
//! ([`Import`], with the version and library a reference asks for), the version nodes it
//! needs per library; and the rule ld.so applies between them ([`unresolved_imports`]).
//!
//! Read from the same bounded window as the rest of the file (`.dynsym`, `.dynstr`,
//! `.gnu.version*` and the hash tables sit at the start of a file as linkers lay it out):
//! a table outside the window is reported as not read, never guessed.
//!
//! The rule is glibc's (`elf/dl-version.c`, `elf/dl-lookup.c`): a library that defines
//! version nodes must define each node a file needs from it (else `version 'X' not found`
//! at load time), and a reference with a version binds only to a definition of that
//! version; a library without version nodes satisfies a versioned reference by name (glibc
//! accepts it); a reference without a version binds to a default (non-hidden) definition.
//! Weak references and weak version needs never fail.
//!
//! Owns: reading the tables and that rule. Does not own: which library a file's DT_NEEDED
//! resolves to (the caller's search, through RPATHs in an install it knows).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::hash::{Hash, Hasher};

use goblin::elf::dynamic::{
    DT_GNU_HASH, DT_HASH, DT_NULL, DT_STRSZ, DT_STRTAB, DT_SYMENT, DT_SYMTAB, DT_VERDEF, DT_VERDEFNUM, DT_VERNEED,
    DT_VERNEEDNUM, DT_VERSYM,
};
use goblin::elf::sym::{STB_GLOBAL, STB_GNU_UNIQUE, STB_WEAK, STV_DEFAULT, STV_PROTECTED};
use goblin::elf::symver::{VER_FLG_BASE, VER_FLG_WEAK};

use crate::parse::{ElfFile, Fields, PT_DYNAMIC};
use crate::window::ElfWindow;

/// Upper bound on symbols and version records read from one file (real libraries have
/// at most a few hundred thousand symbols); a corrupt count cannot make a long loop.
const MAX_SYMBOLS: u64 = 1 << 24;
const MAX_RECORDS: u64 = 1 << 16;

/// The manylinux system libraries whose symbols do not all carry a version node (X11, GL,
/// GLib, zlib, expat): an unversioned reference may bind there.
const UNVERSIONED_SYSTEM_LIBRARIES: &[&str] = &[
    "libz.so.1",
    "libexpat.so.1",
    "libX11.so.6",
    "libXext.so.6",
    "libXrender.so.1",
    "libICE.so.6",
    "libSM.so.6",
    "libGL.so.1",
    "libgobject-2.0.so.0",
    "libgthread-2.0.so.0",
    "libglib-2.0.so.0",
];

/// Whether every symbol of the system library `name` carries a version node (glibc's,
/// GCC's runtime libraries, the dynamic loaders): then no unversioned reference binds there.
pub fn is_versioned_system_library(name: &str) -> bool {
    crate::glibc::is_system_library(name) && !UNVERSIONED_SYSTEM_LIBRARIES.contains(&name)
}

/// A version a reference asks for, and the library (`vn_file`) it asks it of.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NeededVersion {
    pub library: String,
    pub version: String,
    /// `VER_FLG_WEAK`: a missing version is no error.
    pub weak: bool,
}

/// An undefined dynamic symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    pub name: String,
    /// `STB_WEAK`: unresolved is no error.
    pub weak: bool,
    pub version: Option<NeededVersion>,
}

/// The symbols a file defines for other files to bind, kept as 64-bit hashes of their
/// names (with their version node): a large library defines tens of thousands, and a
/// check of a whole set holds every library's at once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exports {
    /// `name` of every default (non-hidden) definition: what an unversioned reference binds.
    default_names: HashSet<u64>,
    /// `name@version` of every versioned definition, hidden or not.
    versioned: HashSet<u64>,
    /// `name` of every definition.
    names: HashSet<u64>,
    /// Version nodes the file defines (`.gnu.version_d`), its base (file name) node left out.
    versions: BTreeSet<String>,
    has_version_definitions: bool,
}

fn hash_of(name: &str, version: Option<&str>) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    name.hash(&mut hasher);
    version.hash(&mut hasher);
    hasher.finish()
}

impl Exports {
    /// Whether the file defines any version node (then a versioned reference must name one).
    pub fn has_versions(&self) -> bool {
        self.has_version_definitions
    }

    pub fn defines_version(&self, version: &str) -> bool {
        self.versions.contains(version)
    }

    /// Whether a reference to `name` (asking for `version`, if any) binds here.
    pub fn binds(&self, name: &str, version: Option<&str>) -> bool {
        match version {
            Some(_) if !self.has_version_definitions => self.names.contains(&hash_of(name, None)),
            Some(version) => self.versioned.contains(&hash_of(name, Some(version))),
            None => self.default_names.contains(&hash_of(name, None)),
        }
    }

    /// How many names the file defines.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Adds a definition of `name` at `version` (a `hidden` one binds only references that
    /// ask for its version).
    pub fn define(&mut self, name: &str, version: Option<&str>, hidden: bool) {
        if let Some(version) = version {
            self.has_version_definitions = true;
            self.versions.insert(version.to_owned());
            self.versioned.insert(hash_of(name, Some(version)));
        }
        if !hidden {
            self.default_names.insert(hash_of(name, None));
        }
        self.names.insert(hash_of(name, None));
    }
}

/// What [`read_dynamic_symbols`] found in one file.
#[derive(Clone, Debug, Default)]
pub struct DynamicSymbols {
    pub exports: Exports,
    pub imports: Vec<Import>,
    /// Every version node needed, per library (`.gnu.version_r`), in file order.
    pub needed_versions: Vec<NeededVersion>,
    /// Tables that lie outside the window: nothing is known of what they hold.
    pub unchecked: Vec<String>,
    /// Tables that contradict themselves.
    pub problems: Vec<String>,
}

impl DynamicSymbols {
    /// Whether every table was read: only then does a missing definition mean anything.
    pub fn is_complete(&self) -> bool {
        self.unchecked.is_empty() && self.problems.is_empty()
    }
}

/// The dynamic tags this reader needs.
#[derive(Default)]
struct Tags {
    symtab: Option<u64>,
    strtab: Option<u64>,
    strsz: u64,
    syment: Option<u64>,
    hash: Option<u64>,
    gnu_hash: Option<u64>,
    versym: Option<u64>,
    verdef: Option<u64>,
    verdefnum: u64,
    verneed: Option<u64>,
    verneednum: u64,
}

/// Reads the dynamic symbols of `elf` (parsed from `window`). A file without a dynamic
/// section has none; what cannot be read is said in `unchecked` or `problems`.
pub fn read_dynamic_symbols(window: &ElfWindow, elf: &ElfFile) -> DynamicSymbols {
    let mut out = DynamicSymbols::default();
    let fields = Fields { little_endian: elf.little_endian, is_64: elf.is_64 };
    let Some(tags) = read_tags(window, elf, fields, &mut out) else { return out };
    let Some(symtab) = tags.symtab else { return out };
    let Some(strtab) = tags.strtab.and_then(|address| table(window, elf, address, tags.strsz)) else {
        out.unchecked.push("dynamic string table (outside the window)".to_owned());
        return out;
    };
    let entry_size = if elf.is_64 { 24 } else { 16 };
    if tags.syment.is_some_and(|size| size != entry_size) {
        out.problems.push(format!("DT_SYMENT is not {entry_size}"));
        return out;
    }
    let Some(count) = symbol_count(window, elf, fields, &tags, &mut out) else { return out };
    let Some(symbols) = table(window, elf, symtab, count * entry_size) else {
        out.unchecked.push("dynamic symbol table (outside the window)".to_owned());
        return out;
    };
    let versym = match tags.versym {
        Some(address) => match table(window, elf, address, count * 2) {
            Some(bytes) => Some(bytes),
            None => {
                out.unchecked.push("symbol version table (outside the window)".to_owned());
                return out;
            }
        },
        None => None,
    };
    let definitions = read_verdef(window, elf, fields, &tags, strtab, &mut out);
    let needs = read_verneed(window, elf, fields, &tags, strtab, &mut out);
    // A file whose only node is its base one has no versions a reference could ask for.
    for (version, _) in definitions.values().filter(|(_, base)| !base) {
        out.exports.has_version_definitions = true;
        out.exports.versions.insert(version.clone());
    }
    out.needed_versions = needs.values().cloned().collect();
    out.needed_versions.sort();
    for index in 1..count as usize {
        let at = index * entry_size as usize;
        let symbol = &symbols[at..at + entry_size as usize];
        let (name_offset, info, other, shndx) = if elf.is_64 {
            (fields.u32(symbol, 0), symbol[4], symbol[5], fields.u16(symbol, 6))
        } else {
            (fields.u32(symbol, 0), symbol[12], symbol[13], fields.u16(symbol, 14))
        };
        let Some(name) = string(strtab, name_offset) else {
            out.problems.push(format!("symbol {index}'s name is outside the dynamic string table"));
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let binding = info >> 4;
        let raw_version = versym.map(|bytes| fields.u16(bytes, index * 2) as u16);
        let version_index = raw_version.map(|raw| raw & 0x7fff);
        if shndx == 0 {
            if binding == STB_GLOBAL || binding == STB_WEAK {
                let version = version_index.filter(|index| *index >= 2).and_then(|index| needs.get(&index).cloned());
                out.imports.push(Import { name, weak: binding == STB_WEAK, version });
            }
            continue;
        }
        let visible = matches!(other & 0x3, STV_DEFAULT | STV_PROTECTED);
        // Version index 0 is a local symbol, whatever its binding says.
        if !matches!(binding, STB_GLOBAL | STB_WEAK | STB_GNU_UNIQUE) || !visible || version_index == Some(0) {
            continue;
        }
        let version = version_index
            .and_then(|index| definitions.get(&index))
            .filter(|(_, base)| !base)
            .map(|(version, _)| version.clone());
        let hidden = raw_version.is_some_and(|raw| raw & 0x8000 != 0);
        out.exports.define(&name, version.as_deref(), hidden);
    }
    out
}

/// `len` bytes at virtual address `address`, when a `PT_LOAD` maps them and they are in
/// the window.
fn table<'a>(window: &'a ElfWindow, elf: &ElfFile, address: u64, len: u64) -> Option<&'a [u8]> {
    window.read_at(elf.offset_of(address)?, len)
}

fn string(strtab: &[u8], offset: u64) -> Option<String> {
    let rest = strtab.get(usize::try_from(offset).ok()?..)?;
    let end = rest.iter().position(|&byte| byte == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

fn read_tags(window: &ElfWindow, elf: &ElfFile, fields: Fields, out: &mut DynamicSymbols) -> Option<Tags> {
    let dynamic = elf.segments.iter().find(|segment| segment.kind == PT_DYNAMIC)?;
    let Some(bytes) = window.read_at(dynamic.offset, dynamic.filesz) else {
        out.unchecked.push("dynamic section (outside the window)".to_owned());
        return None;
    };
    let entry_size = if elf.is_64 { 16 } else { 8 };
    let mut tags = Tags::default();
    for entry in bytes.chunks_exact(entry_size) {
        let (tag, value) = (fields.word(entry, 0), fields.word(entry, entry_size / 2));
        match tag {
            DT_NULL => break,
            DT_SYMTAB => tags.symtab = Some(value),
            DT_STRTAB => tags.strtab = Some(value),
            DT_STRSZ => tags.strsz = value,
            DT_SYMENT => tags.syment = Some(value),
            DT_HASH => tags.hash = Some(value),
            DT_GNU_HASH => tags.gnu_hash = Some(value),
            DT_VERSYM => tags.versym = Some(value),
            DT_VERDEF => tags.verdef = Some(value),
            DT_VERDEFNUM => tags.verdefnum = value,
            DT_VERNEED => tags.verneed = Some(value),
            DT_VERNEEDNUM => tags.verneednum = value,
            _ => {}
        }
    }
    Some(tags)
}

/// The number of dynamic symbols: `nchain` of the SysV hash table, else the last symbol
/// the GNU hash table reaches.
fn symbol_count(
    window: &ElfWindow,
    elf: &ElfFile,
    fields: Fields,
    tags: &Tags,
    out: &mut DynamicSymbols,
) -> Option<u64> {
    let outside = |out: &mut DynamicSymbols| {
        out.unchecked.push("symbol hash table (outside the window)".to_owned());
        None
    };
    let count = if let Some(address) = tags.hash {
        let Some(header) = table(window, elf, address, 8) else { return outside(out) };
        fields.u32(header, 4)
    } else if let Some(address) = tags.gnu_hash {
        let Some(header) = table(window, elf, address, 16) else { return outside(out) };
        let (buckets, first, bloom) = (fields.u32(header, 0), fields.u32(header, 4), fields.u32(header, 8));
        let word = if elf.is_64 { 8 } else { 4 };
        let buckets_at = address.saturating_add(16).saturating_add(bloom.saturating_mul(word));
        let Some(bucket_bytes) = table(window, elf, buckets_at, buckets.saturating_mul(4)) else {
            return outside(out);
        };
        let last = (0..buckets as usize).map(|index| fields.u32(bucket_bytes, index * 4)).max().unwrap_or(0);
        if last < first {
            first
        } else {
            let chains_at = buckets_at.saturating_add(buckets.saturating_mul(4));
            let mut index = last;
            loop {
                let at = chains_at.saturating_add((index - first).saturating_mul(4));
                let Some(chain) = table(window, elf, at, 4) else { return outside(out) };
                if fields.u32(chain, 0) & 1 == 1 || index - first > MAX_SYMBOLS {
                    break index + 1;
                }
                index += 1;
            }
        }
    } else {
        out.unchecked.push("dynamic symbol count (no DT_HASH or DT_GNU_HASH)".to_owned());
        return None;
    };
    if count > MAX_SYMBOLS {
        out.problems.push(format!("{count} dynamic symbols"));
        return None;
    }
    Some(count)
}

/// Version definitions by index: (name, whether it is the file's base node).
fn read_verdef(
    window: &ElfWindow,
    elf: &ElfFile,
    fields: Fields,
    tags: &Tags,
    strtab: &[u8],
    out: &mut DynamicSymbols,
) -> BTreeMap<u16, (String, bool)> {
    let mut definitions = BTreeMap::new();
    let Some(mut address) = tags.verdef else { return definitions };
    for _ in 0..tags.verdefnum.min(MAX_RECORDS) {
        let Some(record) = table(window, elf, address, 20) else {
            out.unchecked.push("symbol version definitions (outside the window)".to_owned());
            return definitions;
        };
        let (flags, index, aux) = (fields.u16(record, 2), fields.u16(record, 4) as u16, fields.u32(record, 12));
        let name = table(window, elf, address.saturating_add(aux), 8)
            .and_then(|verdaux| string(strtab, fields.u32(verdaux, 0)));
        match name {
            Some(name) => {
                definitions.insert(index, (name, flags & u64::from(VER_FLG_BASE) != 0));
            }
            None => out.problems.push("a symbol version definition has no readable name".to_owned()),
        }
        let next = fields.u32(record, 16);
        if next == 0 {
            break;
        }
        address = address.saturating_add(next);
    }
    definitions
}

/// Version needs by the index symbols refer to them with (`vna_other`).
fn read_verneed(
    window: &ElfWindow,
    elf: &ElfFile,
    fields: Fields,
    tags: &Tags,
    strtab: &[u8],
    out: &mut DynamicSymbols,
) -> BTreeMap<u16, NeededVersion> {
    let mut needs = BTreeMap::new();
    let Some(mut address) = tags.verneed else { return needs };
    let mut budget = MAX_RECORDS;
    for _ in 0..tags.verneednum.min(MAX_RECORDS) {
        let Some(record) = table(window, elf, address, 16) else {
            out.unchecked.push("symbol version requirements (outside the window)".to_owned());
            return needs;
        };
        let library = string(strtab, fields.u32(record, 4)).unwrap_or_default();
        let mut aux_address = address.saturating_add(fields.u32(record, 8));
        for _ in 0..fields.u16(record, 2) {
            budget = budget.saturating_sub(1);
            let Some(aux) = table(window, elf, aux_address, 16).filter(|_| budget > 0) else {
                out.unchecked.push("symbol version requirements (outside the window)".to_owned());
                return needs;
            };
            let (flags, index) = (fields.u16(aux, 4), fields.u16(aux, 6) as u16);
            let version = string(strtab, fields.u32(aux, 8)).unwrap_or_default();
            let weak = flags & u64::from(VER_FLG_WEAK) != 0;
            needs.insert(index, NeededVersion { library: library.clone(), version, weak });
            let next = fields.u32(aux, 12);
            if next == 0 {
                break;
            }
            aux_address = aux_address.saturating_add(next);
        }
        let next = fields.u32(record, 12);
        if next == 0 {
            break;
        }
        address = address.saturating_add(next);
    }
    needs
}

/// What a needed library (as the caller's search resolved it) offers a file's imports.
#[derive(Clone, Copy, Debug)]
pub enum Provider<'a> {
    /// A library whose exports were read completely.
    Known(&'a Exports),
    /// A system library every symbol of which carries a version node
    /// ([`is_versioned_system_library`]): the platform tag judges those versions, and no
    /// unversioned reference binds there.
    VersionedSystem,
    /// Anything else (another system library, a library read only in part, one allowed
    /// to be missing): it may define any unversioned name.
    Unknown,
}

/// An import of a file that no provider satisfies.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unresolved {
    /// A version node the library defines no such node for (ld.so: `version 'V' not
    /// found`), with the symbols that ask for it.
    Version { library: String, version: String, symbols: Vec<String> },
    /// A symbol asked of a library that does not define it (with that version).
    Symbol { name: String, version: Option<NeededVersion> },
}

/// Whether `name` is the Python interpreter's (its C API), which an extension module finds
/// in the process that imports it rather than in a library it needs.
fn is_interpreter_symbol(name: &str) -> bool {
    name.starts_with("Py") || name.starts_with("_Py")
}

/// The imports of `symbols` that do not bind, given the libraries the file's DT_NEEDED
/// resolve to (by needed name, the file's own first and then theirs, breadth first, as
/// ld.so builds a library's scope). A versioned import is judged against the library it
/// names when that library is known; an unversioned one only when every provider is
/// known or a versioned system library (else an unknown one may define it), and it must
/// bind in one of them. Sorted, each once.
pub fn unresolved_imports(symbols: &DynamicSymbols, providers: &[(String, Provider<'_>)]) -> Vec<Unresolved> {
    let known = |library: &str| {
        providers.iter().find(|(name, _)| name == library).and_then(|(_, provider)| match provider {
            Provider::Known(exports) => Some(*exports),
            _ => None,
        })
    };
    let mut found = BTreeSet::new();
    let mut missing_versions: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for need in symbols.needed_versions.iter().filter(|need| !need.weak) {
        if let Some(exports) = known(&need.library) {
            if exports.has_versions() && !exports.defines_version(&need.version) {
                missing_versions.entry((need.library.clone(), need.version.clone())).or_default();
            }
        }
    }
    let closed_world = providers.iter().all(|(_, provider)| !matches!(provider, Provider::Unknown));
    for import in symbols.imports.iter().filter(|import| !import.weak) {
        match &import.version {
            Some(version) => {
                let Some(exports) = known(&version.library) else { continue };
                if let Some(symbols) = missing_versions.get_mut(&(version.library.clone(), version.version.clone())) {
                    symbols.push(import.name.clone());
                    continue;
                }
                let elsewhere = providers.iter().any(|(_, provider)| {
                    matches!(provider, Provider::Known(other) if other.binds(&import.name, Some(&version.version)))
                });
                if !exports.binds(&import.name, Some(&version.version)) && !elsewhere {
                    found.insert(Unresolved::Symbol { name: import.name.clone(), version: Some(version.clone()) });
                }
            }
            None if closed_world && !is_interpreter_symbol(&import.name) => {
                let binds = providers.iter().any(
                    |(_, provider)| matches!(provider, Provider::Known(exports) if exports.binds(&import.name, None)),
                );
                if !binds {
                    found.insert(Unresolved::Symbol { name: import.name.clone(), version: None });
                }
            }
            None => {}
        }
    }
    for ((library, version), mut symbols) in missing_versions {
        symbols.sort();
        symbols.dedup();
        found.insert(Unresolved::Version { library, version, symbols });
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests;
