//! The machine a wheel runs on, derived from its platform tag (SPEC §6 "Never edit what is
//! not ours to edit"): only ELF files built for that machine, class and byte order get the
//! RPATH treatment; everything else (AMDGPU code objects, an aarch64 or i386 library in an
//! x86_64 wheel) is data, copied untouched.
//!
//! Owns: the platform tag → ELF machine table and the host fallback. Does not own: what
//! happens to a foreign file (`plan`).

use elf_rpath::ElfInfo;

/// `e_machine` of AMDGPU code objects: never ours to edit (SPEC §6). No wheel platform runs
/// them, so [`TargetMachine::can_run`] keeps them (with every other machine's files) out of
/// the RPATH treatment, and the build's operating system is told without them.
pub const EM_AMDGPU: u16 = 224;

/// `e_machine`, class and byte order of the ELF files a wheel's platform runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetMachine {
    pub machine: u16,
    pub is_64: bool,
    pub little_endian: bool,
}

/// The architecture part of wheel platform tags (PEP 600 / `uname -m`) and what it means
/// in ELF terms. `ppc64le` is listed before `ppc64`, though neither name ends the other.
const ARCHITECTURES: &[(&str, TargetMachine)] = &[
    ("x86_64", TargetMachine { machine: 62, is_64: true, little_endian: true }),
    ("aarch64", TargetMachine { machine: 183, is_64: true, little_endian: true }),
    ("ppc64le", TargetMachine { machine: 21, is_64: true, little_endian: true }),
    ("ppc64", TargetMachine { machine: 21, is_64: true, little_endian: false }),
    ("s390x", TargetMachine { machine: 22, is_64: true, little_endian: false }),
    ("riscv64", TargetMachine { machine: 243, is_64: true, little_endian: true }),
    ("loongarch64", TargetMachine { machine: 258, is_64: true, little_endian: true }),
    ("i686", TargetMachine { machine: 3, is_64: false, little_endian: true }),
    ("i386", TargetMachine { machine: 3, is_64: false, little_endian: true }),
    ("armv7l", TargetMachine { machine: 40, is_64: false, little_endian: true }),
];

/// SPEC §2: without `ROCM_SDK_WHEEL_PLATFORM_TAG` the tag is the host's, `linux_x86_64`.
const DEFAULT_ARCHITECTURE: &str = "x86_64";

impl TargetMachine {
    /// The machine of a wheel platform tag: `linux_x86_64`, `manylinux_2_28_aarch64`, or a
    /// compressed tag set (`manylinux_2_17_x86_64.manylinux2014_x86_64`, whose first tag
    /// decides). A tag without a known architecture falls back to the host's machine.
    pub fn from_platform_tag(platform_tag: &str) -> TargetMachine {
        platform_tag.split('.').find_map(architecture_of).unwrap_or_else(TargetMachine::host)
    }

    /// The machine this packager runs on, in wheel terms.
    pub fn host() -> TargetMachine {
        let name = match std::env::consts::ARCH {
            "x86" => "i686",
            "arm" => "armv7l",
            "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
            other => other,
        };
        architecture_of(name)
            .or_else(|| architecture_of(DEFAULT_ARCHITECTURE))
            .expect("the default architecture is in the table")
    }

    /// The architecture's name in platform tags (`x86_64`, `aarch64`, `i686`).
    pub fn arch_name(&self) -> &'static str {
        ARCHITECTURES
            .iter()
            .find(|(_, machine)| machine == self)
            .map(|(name, _)| *name)
            .expect("every TargetMachine comes from the table")
    }

    /// Whether `info` was built for this machine: same `e_machine`, class and byte order.
    /// The packager edits only such files; the rest (AMDGPU code objects, another CPU's
    /// libraries) it copies unchanged (SPEC §6).
    pub fn can_run(&self, info: &ElfInfo) -> bool {
        info.machine == self.machine && info.is_64 == self.is_64 && info.little_endian == self.little_endian
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
        check("manylinux_2_28_x86_64", (62, true, true));
        check("manylinux2014_aarch64", (183, true, true));
        check("musllinux_1_2_aarch64", (183, true, true));
        check("manylinux_2_17_ppc64le", (21, true, true));
        check("manylinux_2_17_ppc64", (21, true, false));
        check("manylinux_2_17_s390x", (22, true, false));
        check("manylinux1_i686", (3, false, true));
        check("linux_armv7l", (40, false, true));
        check("manylinux_2_17_aarch64.manylinux2014_aarch64", (183, true, true));
    }

    #[test]
    fn unknown_tags_fall_back_to_the_host() {
        for tag in ["any", "linux", "linux_sparc64", "", "x86_64_linux", "linux_xx86_64"] {
            assert_eq!(TargetMachine::from_platform_tag(tag), TargetMachine::host(), "{tag:?}");
        }
        // Where the host's Rust name is also its wheel name (x86_64, aarch64), they agree.
        let host_tag = format!("linux_{}", std::env::consts::ARCH);
        assert_eq!(TargetMachine::from_platform_tag(&host_tag), TargetMachine::host());
    }
}
