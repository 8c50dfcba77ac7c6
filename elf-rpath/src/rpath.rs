//! Plans a [`DynamicRequest`] ("make the search path exactly this, as DT_RPATH", and
//! "rename these needed libraries") as an [`RpathEdit`], and checks the planned result by
//! reading it back before anyone writes it.
//!
//! Strategy, smallest change first:
//! 1. *Unchanged*: one DT_RPATH entry already says exactly this, and no DT_RUNPATH.
//! 2. *In place*: the file has a DT_RPATH or DT_RUNPATH entry whose string slot in
//!    `.dynstr` is at least as long as the new string, and no other name (dynamic entry,
//!    symbol, symbol version) points into the bytes we overwrite. The string is written
//!    over the slot (rest padded with NULs), the entry retagged DT_RPATH, and a second
//!    RPATH/RUNPATH entry dropped by shifting the later entries up one slot:
//!
//!    ```text
//!    .dynstr   ... l i b c . s o \0 / b u i l d / t r e e / l i b \0 ...
//!                                   ^ DT_RUNPATH points here
//!          ->  ... l i b c . s o \0 $ O R I G I N \0 \0 \0 \0 \0 \0 \0 ...
//!                                   ^ now DT_RPATH, same offset
//!    .dynamic  NEEDED NEEDED RUNPATH FLAGS ... NULL NULL   (same size, same place)
//!          ->  NEEDED NEEDED RPATH   FLAGS ... NULL NULL
//!    ```
//!
//!    A renamed needed library is written over its old name the same way when the new
//!    name fits and only the `DT_NEEDED` entries and `Verneed` file names being renamed
//!    point into it (`needed`).
//! 3. *Grown*: everything else; see [`super::grow`].
//!
//! Whatever the strategy, the edited file is parsed again through [`EditedSource`] and must
//! read back the requested DT_RPATH and needed names (in `DT_NEEDED` and `.gnu.version_r`)
//! with everything else unchanged, and planning again on it must be `Unchanged`; otherwise
//! the plan is refused rather than written.
//!
//! Owns: the choice of strategy, the in-place edit, and the self-check. Does not own: the
//! grown layout (`grow`) or which entries the RPATH gets (`plan`).

use super::layout;
use super::needed::{self, Renames};
use super::parse::{
    self, section_headers, DynEntry, Dynamic, ElfFile, ProgramHeader, DT_RPATH, DT_RUNPATH, PF_W, PT_DYNAMIC, PT_LOAD,
};
use super::patch::{diff_patch, encode_dynamic, sorted_patches, with_rpath};
use super::references::{other_references_inside, Owner};
use super::source::{EditedSource, FileSource, Source};
use super::splice::EditStrategy;
use super::{grow, info_from, DynamicRequest, ElfError, Refusal, RpathEdit};

/// Plans the edit without the read-back check.
pub(crate) fn plan_edit(source: &dyn Source, elf: &ElfFile, request: &DynamicRequest) -> Result<RpathEdit, ElfError> {
    let unsupported =
        |reason: String, refusal: Refusal| ElfError::Unsupported { path: source.path().to_path_buf(), reason, refusal };
    if !elf.header.is_64 || !elf.header.endian.little {
        let class = if elf.header.is_64 { "64-bit" } else { "32-bit" };
        let order = if elf.header.endian.little { "little-endian" } else { "big-endian" };
        return Err(unsupported(format!("{class} {order} ELF cannot be patched"), Refusal::Format));
    }
    let info = info_from(source, elf)?;
    if !info.is_patchable() {
        let refusal = if info.is_for_a_cpu() { Refusal::NoSearchPath } else { Refusal::ForeignMachine };
        return Err(unsupported(
            format!(
                "{:?} ELF for machine {} is not ours to edit (only host executables and shared libraries)",
                info.kind, info.machine
            ),
            refusal,
        ));
    }
    needed::check_request(source, request)?;
    let Some(dynamic) = &elf.dynamic else {
        return Err(unsupported(
            "no dynamic section (a static executable has no search path)".into(),
            Refusal::NoSearchPath,
        ));
    };
    check_loads(source, &elf.phdrs)?;
    let path_entries: Vec<&DynEntry> =
        dynamic.entries.iter().filter(|entry| entry.tag == DT_RPATH || entry.tag == DT_RUNPATH).collect();
    // The search path to write, if it is not already exactly that one DT_RPATH entry.
    let rpath = match (request.rpath.as_deref(), path_entries.as_slice()) {
        (Some(rpath), [only]) if only.tag == DT_RPATH && elf.dynamic_string(source, only)? == rpath => None,
        (rpath, _) => rpath,
    };
    let renames = needed::renames(source, elf, request)?;
    if rpath.is_none() && renames.is_empty() {
        return Ok(RpathEdit::unchanged(source.len()));
    }
    let sections = section_headers(source, &elf.header)?;
    if let Some(edit) = plan_in_place(source, elf, dynamic, &sections, &path_entries, rpath, &renames)? {
        return Ok(edit);
    }
    grow::plan_grown(source, elf, dynamic, &sections, rpath, &renames)
}

/// Reads the edited file back and refuses the edit unless it says exactly what was asked
/// and keeps everything else.
pub(crate) fn check_edit(
    base: &FileSource,
    before: &ElfFile,
    edit: &RpathEdit,
    request: &DynamicRequest,
) -> Result<(), ElfError> {
    let failed = |reason: String| ElfError::Unsupported {
        path: base.path().to_path_buf(),
        reason: format!("the planned edit failed its own check ({reason}); the file is left as it is"),
        refusal: Refusal::Layout,
    };
    let edited = EditedSource { base, edit };
    let after = parse::parse(&edited)?.ok_or_else(|| failed("the result is not ELF".into()))?;
    let (old, new) = (info_from(base, before)?, info_from(&edited, &after)?);
    let search_path_right = match request.rpath.as_deref() {
        Some(rpath) => new.rpath.as_deref() == Some(rpath) && new.runpath.is_none(),
        None => new.rpath == old.rpath && new.runpath == old.runpath,
    };
    if !search_path_right {
        return Err(failed(format!("it reads back RPATH {:?} and RUNPATH {:?}", new.rpath, new.runpath)));
    }
    let same = old.kind == new.kind
        && old.machine == new.machine
        && old.soname == new.soname
        && new.needed == needed::after_renames(request, &old.needed)
        && old.interpreter == new.interpreter;
    if !same {
        return Err(failed("its kind, SONAME, NEEDED or interpreter is not what was asked".into()));
    }
    let (old_files, new_files) = (needed::verneed_names(base, before)?, needed::verneed_names(&edited, &after)?);
    if new_files != needed::after_renames(request, &old_files) {
        return Err(failed(format!("its symbol version requirements name {new_files:?}")));
    }
    check_loads(&edited, &after.phdrs).map_err(|error| failed(error.to_string()))?;
    check_kept_loads(&before.phdrs, &after.phdrs).map_err(failed)?;
    // Where the kernel and ld.so find the program header table: what held before must hold
    // after. Only a program needs old kernels' `AT_PHDR` rule; a library whose table an
    // earlier tool moved elsewhere is edited as it is (SPEC §6).
    let (was, is) = (layout::table_facts(before), layout::table_facts(&after));
    if was.at_first_load_delta && !is.at_first_load_delta && layout::runs_as_program(&after) {
        return Err(failed("the program header table is no longer at the first PT_LOAD's address + e_phoff".into()));
    }
    if was.found_by_loader && !is.found_by_loader {
        return Err(failed("ld.so would no longer find the program header table".into()));
    }
    if was.phdr_entry_describes_it && !is.phdr_entry_describes_it {
        return Err(failed("PT_PHDR does not describe the program header table".into()));
    }
    for phdr in after.phdrs.iter().filter(|phdr| phdr.p_type == PT_DYNAMIC) {
        if parse::vaddr_to_offset(&after.phdrs, phdr.vaddr, phdr.filesz) != Some(phdr.offset) {
            return Err(failed("PT_DYNAMIC is not mapped by a PT_LOAD".into()));
        }
    }
    let again = plan_edit(&edited, &after, request)?;
    if !again.is_unchanged() {
        return Err(failed("planning the same change again would change the file again".into()));
    }
    Ok(())
}

/// Every original `PT_LOAD` is still there: same offset, address and alignment, flags
/// less at most `PF_W` (an emptied one), and sizes grown only by the same amount (a
/// read-only load whose unused tail now holds the program header table). The first
/// `PT_LOAD` does not become writable (kernels before 5.18 refuse such a program, SPEC §6):
/// a block may become the first load only read-only.
fn check_kept_loads(before: &[ProgramHeader], after: &[ProgramHeader]) -> Result<(), String> {
    let loads =
        |phdrs: &[ProgramHeader]| phdrs.iter().filter(|phdr| phdr.p_type == PT_LOAD).copied().collect::<Vec<_>>();
    let (old, new) = (loads(before), loads(after));
    let kept_as = |was: &ProgramHeader, now: &ProgramHeader| {
        let place = |load: &ProgramHeader| (load.offset, load.vaddr, load.paddr, load.align);
        let grown = now.filesz.checked_sub(was.filesz);
        place(was) == place(now)
            && (now.flags == was.flags || now.flags == was.flags & !PF_W)
            && grown.is_some_and(|grown| now.memsz.checked_sub(was.memsz) == Some(grown))
    };
    if let Some(lost) = old.iter().find(|was| !new.iter().any(|now| kept_as(was, now))) {
        return Err(format!("the PT_LOAD at {:#x} changed", lost.vaddr));
    }
    let writable = |loads: &[ProgramHeader]| loads.first().is_some_and(|first| first.flags & PF_W != 0);
    if writable(&new) && !writable(&old) {
        return Err("the first PT_LOAD became writable".into());
    }
    Ok(())
}

/// PT_LOADs must lie inside the file, be sorted by address and not overlap in memory.
pub(crate) fn check_loads(source: &dyn Source, phdrs: &[ProgramHeader]) -> Result<(), ElfError> {
    let mut previous_end = 0u64;
    let mut any = false;
    for phdr in phdrs.iter().filter(|phdr| phdr.p_type == PT_LOAD) {
        any = true;
        let file_end = phdr.offset.checked_add(phdr.filesz);
        let memory_end = phdr.vaddr.checked_add(phdr.memsz);
        let (Some(file_end), Some(memory_end)) = (file_end, memory_end) else {
            return Err(source.malformed("a PT_LOAD's size overflows".into()));
        };
        if file_end > source.len() {
            return Err(source.malformed(format!("a PT_LOAD ends at byte {file_end}, past the end of the file")));
        }
        if phdr.filesz > phdr.memsz {
            return Err(source.malformed("a PT_LOAD has more file bytes than memory bytes".into()));
        }
        if phdr.vaddr < previous_end {
            return Err(source.malformed(format!("PT_LOAD at {:#x} overlaps or precedes the one before", phdr.vaddr)));
        }
        if phdr.align > 1 && (!phdr.align.is_power_of_two() || phdr.vaddr % phdr.align != phdr.offset % phdr.align) {
            return Err(source.malformed(format!("PT_LOAD at {:#x} is not aligned as it says", phdr.vaddr)));
        }
        previous_end = memory_end;
    }
    if !any {
        return Err(source.malformed("a dynamic file without any PT_LOAD".into()));
    }
    Ok(())
}

/// The edit that overwrites strings where they are: the search path in an existing
/// RPATH/RUNPATH slot (when `rpath` is to be written), and each renamed library over its
/// old name. `None` when any of it does not fit.
fn plan_in_place(
    source: &dyn Source,
    elf: &ElfFile,
    dynamic: &Dynamic,
    sections: &[parse::SectionHeader],
    path_entries: &[&DynEntry],
    rpath: Option<&str>,
    renames: &Renames,
) -> Result<Option<RpathEdit>, ElfError> {
    let Some((dynstr_offset, _)) = &elf.dynstr else { return Ok(None) };
    let mut patches = Vec::new();
    let mut entries = dynamic.entries.clone();
    if let Some(rpath) = rpath {
        let Some(slot) = search_path_slot(source, elf, sections, path_entries, rpath)? else { return Ok(None) };
        patches.extend(overwrite(*dynstr_offset + slot.0, &slot.1, rpath));
        entries = with_rpath(&entries, slot.0);
    }
    for (offset, old, new) in renames.slots(source, elf)? {
        let end = offset + old.len() as u64;
        if new.len() > old.len()
            || other_references_inside(source, elf, sections, offset, end, Owner::Needed)? != Some(false)
        {
            return Ok(None);
        }
        patches.extend(overwrite(*dynstr_offset + offset, &old, &new));
    }
    let old_dynamic = encode_dynamic(&dynamic.entries, dynamic.slots);
    patches.extend(diff_patch(dynamic.offset, &old_dynamic, &encode_dynamic(&entries, dynamic.slots)));
    Ok(Some(RpathEdit {
        original_len: source.len(),
        patches: sorted_patches(source, patches)?,
        appended: Vec::new(),
        strategy: EditStrategy::InPlace,
    }))
}

/// The first RPATH/RUNPATH slot (its offset and old string) that takes `rpath` and that no
/// other name shares.
fn search_path_slot(
    source: &dyn Source,
    elf: &ElfFile,
    sections: &[parse::SectionHeader],
    path_entries: &[&DynEntry],
    rpath: &str,
) -> Result<Option<(u64, String)>, ElfError> {
    for entry in path_entries {
        let old = elf.dynamic_string(source, entry)?;
        if rpath.len() > old.len() {
            continue;
        }
        let slot_end = entry.value + old.len() as u64;
        if other_references_inside(source, elf, sections, entry.value, slot_end, Owner::SearchPath)? == Some(false) {
            return Ok(Some((entry.value, old)));
        }
    }
    Ok(None)
}

/// The patch writing `new` over the string `old` at `offset`, the rest of the slot NULs.
fn overwrite(offset: u64, old: &str, new: &str) -> Option<super::BytePatch> {
    let mut old_slot = old.as_bytes().to_vec();
    old_slot.push(0);
    let mut new_slot = new.as_bytes().to_vec();
    new_slot.resize(old_slot.len(), 0);
    diff_patch(offset, &old_slot, &new_slot)
}
