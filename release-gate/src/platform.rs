//! The machine a wheel's platform tag names (SPEC §6 "Never edit what is not ours to
//! edit"): the gate judges the ELF files that machine runs and counts the others as data.
//!
//! Owns: the gate's own reading of a platform tag's architecture, kept apart from the
//! packager's so that a wrong table there cannot hide here. Does not own: what is judged
//! (`member`).

/// `e_machine`, class and byte order of the ELF files a wheel's platform runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TargetMachine {
    pub machine: u16,
    pub is_64: bool,
    pub little_endian: bool,
}

/// The architecture part of wheel platform tags (PEP 600, `uname -m`) in ELF terms.
const ARCHITECTURES: &[(&str, TargetMachine)] = &[
    ("x86_64", TargetMachine { machine: goblin::elf::header::EM_X86_64, is_64: true, little_endian: true }),
    ("aarch64", TargetMachine { machine: goblin::elf::header::EM_AARCH64, is_64: true, little_endian: true }),
    ("ppc64le", TargetMachine { machine: goblin::elf::header::EM_PPC64, is_64: true, little_endian: true }),
    ("ppc64", TargetMachine { machine: goblin::elf::header::EM_PPC64, is_64: true, little_endian: false }),
    ("s390x", TargetMachine { machine: goblin::elf::header::EM_S390, is_64: true, little_endian: false }),
    ("riscv64", TargetMachine { machine: goblin::elf::header::EM_RISCV, is_64: true, little_endian: true }),
    ("loongarch64", TargetMachine { machine: goblin::elf::header::EM_LOONGARCH, is_64: true, little_endian: true }),
    ("i686", TargetMachine { machine: goblin::elf::header::EM_386, is_64: false, little_endian: true }),
    ("i386", TargetMachine { machine: goblin::elf::header::EM_386, is_64: false, little_endian: true }),
    ("armv7l", TargetMachine { machine: goblin::elf::header::EM_ARM, is_64: false, little_endian: true }),
];

impl TargetMachine {
    /// The machine of a platform tag or compressed tag set (the first tag with a known
    /// architecture decides); the host's when none has one, as the packager falls back.
    pub fn from_platform_tag(platform_tag: &str) -> TargetMachine {
        platform_tag.split('.').find_map(architecture_of).unwrap_or_else(TargetMachine::host)
    }

    /// The machine this gate runs on, in wheel terms (x86_64 where the table has no entry).
    pub fn host() -> TargetMachine {
        let name = match std::env::consts::ARCH {
            "x86" => "i686",
            "arm" => "armv7l",
            "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
            other => other,
        };
        architecture_of(name).unwrap_or(ARCHITECTURES[0].1)
    }
}

/// The architecture a single platform tag ends with (`linux_x86_64` → x86_64).
fn architecture_of(tag: &str) -> Option<TargetMachine> {
    ARCHITECTURES.iter().find_map(|(name, machine)| {
        let matches = tag == *name || tag.strip_suffix(name).is_some_and(|rest| rest.ends_with('_'));
        matches.then_some(*machine)
    })
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
