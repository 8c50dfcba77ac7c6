//! The machine a wheel's platform tag names (SPEC §6 "Never edit what is not ours to
//! edit"): the gate judges the ELF files that machine runs and counts the others as data.
//!
//! Owns: the gate's reading of a platform tag's machine, in the terms its ELF reader
//! compares. The names and ELF numbers of each architecture are `elf-audit`'s
//! [`Architecture`], the crate the gate shares with the tag choice only (never with the
//! writer); the gate keeps its own readers of everything the writer spells (file names,
//! metadata, targets, versions) on purpose, so a wrong name there cannot hide here. Does
//! not own: what is judged (`member`).

use elf_audit::Architecture;

/// `e_machine`, class and byte order of the ELF files a wheel's platform runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TargetMachine {
    pub machine: u16,
    pub is_64: bool,
    pub little_endian: bool,
}

impl TargetMachine {
    /// The machine of a platform tag or compressed tag set (the first tag with a known
    /// architecture decides); the host's when none has one, as the packager falls back.
    pub fn from_platform_tag(platform_tag: &str) -> TargetMachine {
        Architecture::of_platform_tags(platform_tag).map_or_else(TargetMachine::host, TargetMachine::of)
    }

    /// The machine this gate runs on, in wheel terms (x86_64 where no wheel is built for it).
    pub fn host() -> TargetMachine {
        TargetMachine::of(Architecture::host().unwrap_or(Architecture::X86_64))
    }

    fn of(architecture: Architecture) -> TargetMachine {
        TargetMachine {
            machine: architecture.elf_machine(),
            is_64: architecture.is_64(),
            little_endian: architecture.is_little_endian(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(platform_tag: &str, expect: (u16, bool, bool)) {
        let machine = TargetMachine::from_platform_tag(platform_tag);
        assert_eq!((machine.machine, machine.is_64, machine.little_endian), expect, "{platform_tag}");
    }

    #[test]
    fn platform_tags_name_their_machine() {
        check("linux_x86_64", (62, true, true));
        check("manylinux2014_aarch64", (183, true, true));
        check("manylinux_2_17_ppc64le", (21, true, true));
        check("manylinux_2_17_ppc64", (21, true, false));
        check("manylinux_2_17_s390x", (22, true, false));
        check("manylinux1_i686", (3, false, true));
        check("linux_armv7l", (40, false, true));
        check("manylinux_2_17_aarch64.manylinux2014_aarch64", (183, true, true));
        assert_eq!(TargetMachine::from_platform_tag("linux_sparc64"), TargetMachine::host());
    }
}
