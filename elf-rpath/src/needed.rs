//! Renaming a needed library (what patchelf calls replacing a needed entry): which `DT_NEEDED` entries
//! and which `.gnu.version_r` file names name a library to rename, and what the file says
//! once a [`DynamicRequest`] is applied.
//!
//! Both must change together: ld.so finds the library a symbol version is required from by
//! the `Verneed` record's file name (`vn_file`), matched against the names the loaded
//! library answers to (the name it was loaded by, its SONAME). A `DT_NEEDED` renamed while
//! `vn_file` keeps the old name leaves ld.so without the library that record names, and
//! glibc stops the process on an assertion.
//!
//! Owns: finding those references and the names expected after the edit (the read-back).
//! Does not own: where the new names are written (`rpath` in place, `grow` appended).

use std::collections::BTreeMap;

use super::parse::{vaddr_to_offset, ElfFile, DT_NEEDED, DT_VERNEED, DT_VERNEEDNUM};
use super::source::Source;
use super::{DynamicRequest, ElfError, Refusal};

/// Version records walked at most; real files have a few dozen.
const MAX_VERNEED_RECORDS: u64 = 1 << 16;

/// One `Verneed` record's file name: where its `vn_file` field is in the file, and the
/// `.dynstr` offset it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VerneedFile {
    pub(crate) field_offset: u64,
    pub(crate) name_offset: u64,
}

/// The `vn_file` field of every `Verneed` record, in file order.
pub(crate) fn verneed_files(source: &dyn Source, elf: &ElfFile) -> Result<Vec<VerneedFile>, ElfError> {
    let Some(dynamic) = &elf.dynamic else { return Ok(Vec::new()) };
    let (Some(mut address), Some(count)) = (dynamic.value(DT_VERNEED), dynamic.value(DT_VERNEEDNUM)) else {
        return Ok(Vec::new());
    };
    if count > MAX_VERNEED_RECORDS {
        return Err(source.malformed(format!("DT_VERNEEDNUM is {count}")));
    }
    let endian = elf.header.endian;
    let mut files = Vec::new();
    for _ in 0..count {
        let offset = vaddr_to_offset(&elf.phdrs, address, 16)
            .ok_or_else(|| source.malformed(format!("Verneed record {address:#x} is not inside a PT_LOAD")))?;
        let record = source.read(offset, 16, "Verneed")?;
        files.push(VerneedFile { field_offset: offset + 4, name_offset: u64::from(endian.u32(&record, 4)) });
        let next = u64::from(endian.u32(&record, 12));
        if next == 0 {
            break;
        }
        address = address.wrapping_add(next);
    }
    Ok(files)
}

/// The `vn_file` names of the file, in file order.
pub(crate) fn verneed_names(source: &dyn Source, elf: &ElfFile) -> Result<Vec<String>, ElfError> {
    let table = elf.dynstr.as_ref().map(|(_, bytes)| bytes.as_slice()).unwrap_or(&[]);
    verneed_files(source, elf)?
        .iter()
        .map(|file| super::parse::c_string(source, table, file.name_offset, "Verneed file"))
        .collect()
}

/// The new name of `name`, if the request renames it.
pub(crate) fn renamed<'a>(request: &'a DynamicRequest, name: &str) -> Option<&'a str> {
    request.replace_needed.iter().find(|(old, new)| old == name && old != new).map(|(_, new)| new.as_str())
}

/// `names` with the request's renames applied.
pub(crate) fn after_renames(request: &DynamicRequest, names: &[String]) -> Vec<String> {
    names.iter().map(|name| renamed(request, name).unwrap_or(name).to_owned()).collect()
}

/// Refuses a request no file could satisfy: an empty name, a NUL byte, one library renamed
/// two ways.
pub(crate) fn check_request(source: &dyn Source, request: &DynamicRequest) -> Result<(), ElfError> {
    let refuse =
        |reason: String| ElfError::Unsupported { path: source.path().to_path_buf(), reason, refusal: Refusal::Input };
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (old, new) in &request.replace_needed {
        if old.is_empty() || new.is_empty() || old.contains('\0') || new.contains('\0') {
            return Err(refuse(format!(
                "cannot replace needed library {old:?} by {new:?}: a name is empty or has a NUL byte"
            )));
        }
        if let Some(other) = seen.insert(old, new) {
            if other != new {
                return Err(refuse(format!("needed library {old} is to be replaced by both {other} and {new}")));
            }
        }
    }
    if request.rpath.as_deref().is_some_and(|rpath| rpath.contains('\0')) {
        return Err(refuse("the requested RPATH contains a NUL byte".into()));
    }
    Ok(())
}

/// What a request renames in one file: the `DT_NEEDED` entries (by index into the dynamic
/// entries) and the `vn_file` fields, each with the old string's offset and the new name.
#[derive(Debug, Default)]
pub(crate) struct Renames {
    pub(crate) entries: Vec<(usize, u64, String)>,
    pub(crate) verneed: Vec<(VerneedFile, String)>,
}

impl Renames {
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.verneed.is_empty()
    }

    /// Distinct old strings (offset, old name, new name), in offset order: the slots an
    /// in-place rename overwrites.
    pub(crate) fn slots(&self, source: &dyn Source, elf: &ElfFile) -> Result<Vec<(u64, String, String)>, ElfError> {
        let table = elf.dynstr.as_ref().map(|(_, bytes)| bytes.as_slice()).unwrap_or(&[]);
        let mut slots: BTreeMap<u64, String> = BTreeMap::new();
        for (_, offset, new) in &self.entries {
            slots.insert(*offset, new.clone());
        }
        for (file, new) in &self.verneed {
            slots.insert(file.name_offset, new.clone());
        }
        slots
            .into_iter()
            .map(|(offset, new)| Ok((offset, super::parse::c_string(source, table, offset, "needed")?, new)))
            .collect()
    }
}

/// Finds what `request` renames in the file.
pub(crate) fn renames(source: &dyn Source, elf: &ElfFile, request: &DynamicRequest) -> Result<Renames, ElfError> {
    let mut found = Renames::default();
    if request.replace_needed.is_empty() {
        return Ok(found);
    }
    let Some(dynamic) = &elf.dynamic else { return Ok(found) };
    for (index, entry) in dynamic.entries.iter().enumerate().filter(|(_, entry)| entry.tag == DT_NEEDED) {
        let name = elf.dynamic_string(source, entry)?;
        if let Some(new) = renamed(request, &name) {
            found.entries.push((index, entry.value, new.to_owned()));
        }
    }
    let table = elf.dynstr.as_ref().map(|(_, bytes)| bytes.as_slice()).unwrap_or(&[]);
    for file in verneed_files(source, elf)? {
        let name = super::parse::c_string(source, table, file.name_offset, "Verneed file")?;
        if let Some(new) = renamed(request, &name) {
            found.verneed.push((file, new.to_owned()));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(pairs: &[(&str, &str)]) -> DynamicRequest {
        DynamicRequest {
            rpath: None,
            replace_needed: pairs.iter().map(|(old, new)| (old.to_string(), new.to_string())).collect(),
        }
    }

    #[test]
    fn renames_apply_to_the_named_libraries_only() {
        let names = ["libc.so.6", "libamdhip64-1a2b3c4d.so.7", "libx.so"].map(str::to_owned);
        let request = request(&[("libamdhip64-1a2b3c4d.so.7", "libamdhip64.so.7"), ("libx.so", "libx.so")]);
        assert_eq!(after_renames(&request, &names), ["libc.so.6", "libamdhip64.so.7", "libx.so"]);
        assert_eq!(renamed(&request, "libx.so"), None, "a rename to itself is none");
    }
}
