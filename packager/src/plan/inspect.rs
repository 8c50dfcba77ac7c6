//! What the population rules need to know about a file's contents: its ELF facts and
//! whether it is a `#!` script. Read once per file per run, in parallel.
//!
//! An ELF file built for another machine than the wheel's (SPEC §6 "Never edit what is not
//! ours to edit") is recorded as no ELF at all, so every rule treats it as data: copied
//! untouched with its exec bits, never aliased, patched or turned into a launcher.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use crate::elf::{self, ElfError, ElfInfo, ElfKind};
use elf_audit::Architecture;

#[derive(Clone, Debug, Default)]
pub struct FileFacts {
    /// `None` for files that are not ELF and for ELF files the wheel's machine cannot run.
    pub elf: Option<ElfInfo>,
    pub shebang: bool,
}

impl FileFacts {
    /// A shared library for this machine with a SONAME: the SONAME rules apply. A SONAME
    /// is input, not a path: one that is not a plain file name would become a
    /// devel link out of site-packages, so it counts as no SONAME ([`Self::bad_soname`]).
    pub fn soname(&self) -> Option<&str> {
        self.raw_soname().filter(|soname| is_plain_file_name(soname))
    }

    /// The SONAME of a library that has one but cannot be used as a file name (`/etc/passwd`,
    /// `../x`, `.`, `..`, empty): the run reports it and treats the library as having none.
    pub fn bad_soname(&self) -> Option<&str> {
        self.raw_soname().filter(|soname| !is_plain_file_name(soname))
    }

    fn raw_soname(&self) -> Option<&str> {
        let elf = self.elf.as_ref()?;
        if elf.kind == ElfKind::SharedLibrary && elf.is_patchable() {
            elf.soname.as_deref()
        } else {
            None
        }
    }

    /// An executable in SPEC §2's sense: an ELF executable, or a `#!` script with exec bits.
    pub fn is_executable(&self, mode: u32) -> bool {
        match &self.elf {
            Some(elf) => elf.kind == ElfKind::Executable,
            None => self.shebang && mode & 0o111 != 0,
        }
    }

    /// Gets the RPATH treatment (host executables and shared libraries only).
    pub fn is_patchable_elf(&self) -> bool {
        self.elf.as_ref().is_some_and(ElfInfo::is_patchable)
    }
}

/// A name that stays in its directory: no `/`, not `.` or `..`, not empty, no NUL.
pub fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Facts by source path, filled in bulk and shared across packages.
pub struct FactCache {
    /// Keyed by the catalog's own paths, not copies. Most files of a build are headers and
    /// data with no facts: those share one value instead of one allocation each.
    facts: HashMap<Arc<Path>, Arc<FileFacts>>,
    plain: Arc<FileFacts>,
    /// The wheels' machine: ELF files for any other are data.
    target: Architecture,
}

impl FactCache {
    pub fn new(target: Architecture) -> FactCache {
        FactCache { facts: HashMap::new(), plain: Arc::default(), target }
    }

    /// Inspects every path not seen yet, on all cores.
    pub fn fill(&mut self, paths: Vec<&Arc<Path>>) -> Result<(), crate::Error> {
        let missing: Vec<&Arc<Path>> =
            paths.into_iter().filter(|path| !self.facts.contains_key(path.as_ref())).collect();
        let results: Vec<(Arc<Path>, FileFacts)> = missing
            .par_iter()
            .map(|path| inspect(path, self.target).map(|facts| (Arc::clone(path), facts)))
            .collect::<Result<_, crate::Error>>()?;
        for (path, facts) in results {
            let facts = if facts.elf.is_none() && !facts.shebang { Arc::clone(&self.plain) } else { Arc::new(facts) };
            self.facts.insert(path, facts);
        }
        Ok(())
    }

    pub fn get(&self, path: &Path) -> Arc<FileFacts> {
        self.facts.get(path).cloned().unwrap_or_default()
    }
}

fn inspect(path: &Path, target: Architecture) -> Result<FileFacts, crate::Error> {
    let read = elf::read_elf(path)?;
    let shebang = if read.is_none() {
        let mut head = [0u8; 2];
        let read_error = |source| ElfError::Read { path: path.to_path_buf(), source };
        // Never blocks: the catalog saw a regular file, and a FIFO put in its place since
        // is refused, not waited on.
        let mut file = crate::write::open_regular(path, crate::write::Links::Refuse).map_err(read_error)?;
        let read = file.read(&mut head).map_err(read_error)?;
        if read == 2 && &head == b"MZ" {
            // A PE file is copied unchanged (SPEC §7): one a Windows loader refuses would
            // only fail on the user's machine.
            elf_audit::check_pe_layout(&file)
                .map_err(|reason| crate::Error::MalformedPe { path: path.to_path_buf(), reason })?;
        }
        read == 2 && &head == b"#!"
    } else {
        false
    };
    let elf = read.filter(|info| crate::platform::can_run(target, info));
    Ok(FileFacts { elf, shebang })
}
