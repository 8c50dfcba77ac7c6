//! [`Architecture`]: a CPU as Python's platform tags spell it (`uname -m`, PEP 600:
//! `x86_64`, `i686`, `aarch64`, `ppc64le`, `s390x`, …), with what it means in ELF terms
//! (`e_machine`, class, byte order). The one table of machines for every place that names
//! one: the packager's platform tag → machine, the manylinux choice, the host's default
//! tag, and the release gate's reading of a tag (auditwheel keeps one such enum too).
//!
//! Owns: the names, the ELF numbers of each, the host's. Does not own: what a caller does
//! with a file of another machine.

use std::fmt;

use goblin::elf::header::{EM_386, EM_AARCH64, EM_ARM, EM_LOONGARCH, EM_PPC64, EM_RISCV, EM_S390, EM_X86_64};

/// A CPU architecture that Python wheels are built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Architecture {
    X86_64,
    I686,
    Aarch64,
    Armv7l,
    Ppc64le,
    Ppc64,
    S390x,
    Riscv64,
    Loongarch64,
}

impl Architecture {
    /// Every architecture, in the order a platform tag's suffix is matched (`ppc64le`
    /// before `ppc64`, though neither name ends the other).
    pub const ALL: [Architecture; 9] = [
        Architecture::X86_64,
        Architecture::Aarch64,
        Architecture::Ppc64le,
        Architecture::Ppc64,
        Architecture::S390x,
        Architecture::Riscv64,
        Architecture::Loongarch64,
        Architecture::I686,
        Architecture::Armv7l,
    ];

    /// Its name in platform tags: `x86_64`, `i686`, `ppc64le`.
    pub fn as_str(self) -> &'static str {
        match self {
            Architecture::X86_64 => "x86_64",
            Architecture::I686 => "i686",
            Architecture::Aarch64 => "aarch64",
            Architecture::Armv7l => "armv7l",
            Architecture::Ppc64le => "ppc64le",
            Architecture::Ppc64 => "ppc64",
            Architecture::S390x => "s390x",
            Architecture::Riscv64 => "riscv64",
            Architecture::Loongarch64 => "loongarch64",
        }
    }

    /// Other names a platform tag may end with for it: `i386` (`linux_i386`) is the i686's.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            Architecture::I686 => &["i386"],
            _ => &[],
        }
    }

    /// `e_machine` of its ELF files.
    pub fn elf_machine(self) -> u16 {
        match self {
            Architecture::X86_64 => EM_X86_64,
            Architecture::I686 => EM_386,
            Architecture::Aarch64 => EM_AARCH64,
            Architecture::Armv7l => EM_ARM,
            Architecture::Ppc64le | Architecture::Ppc64 => EM_PPC64,
            Architecture::S390x => EM_S390,
            Architecture::Riscv64 => EM_RISCV,
            Architecture::Loongarch64 => EM_LOONGARCH,
        }
    }

    /// Whether its ELF files are ELFCLASS64.
    pub fn is_64(self) -> bool {
        !matches!(self, Architecture::I686 | Architecture::Armv7l)
    }

    /// Whether its ELF files are little-endian.
    pub fn is_little_endian(self) -> bool {
        !matches!(self, Architecture::Ppc64 | Architecture::S390x)
    }

    /// The architecture of an ELF file's `e_machine` and byte order, if a wheel can be for it.
    pub fn from_elf(machine: u16, little_endian: bool) -> Option<Architecture> {
        // Class is not asked: no two architectures here share a machine and a byte order.
        Architecture::ALL.into_iter().find(|architecture| {
            architecture.elf_machine() == machine && architecture.is_little_endian() == little_endian
        })
    }

    /// The architecture a single platform tag ends with: `linux_x86_64`,
    /// `manylinux_2_28_aarch64`, `musllinux_1_2_ppc64le`, or the name alone.
    pub fn of_platform_tag(tag: &str) -> Option<Architecture> {
        Architecture::ALL.into_iter().find(|architecture| {
            std::iter::once(architecture.as_str())
                .chain(architecture.aliases().iter().copied())
                .any(|name| tag == name || tag.strip_suffix(name).is_some_and(|rest| rest.ends_with('_')))
        })
    }

    /// The architecture of the first tag of a compressed tag set that names one
    /// (`manylinux_2_17_x86_64.manylinux2014_x86_64`).
    pub fn of_platform_tags(tags: &str) -> Option<Architecture> {
        tags.split('.').find_map(Architecture::of_platform_tag)
    }

    /// The machine this program runs on, as Python names it (Rust's `x86` is Python's
    /// `i686`, `powerpc64` little-endian is `ppc64le`); `None` on one no wheel is built for.
    pub fn host() -> Option<Architecture> {
        Architecture::from_rust(std::env::consts::ARCH, cfg!(target_endian = "little"))
    }

    /// The architecture of Rust's `target_arch` name and byte order.
    fn from_rust(arch: &str, little_endian: bool) -> Option<Architecture> {
        Some(match arch {
            "x86_64" => Architecture::X86_64,
            "x86" => Architecture::I686,
            "aarch64" => Architecture::Aarch64,
            "arm" => Architecture::Armv7l,
            "powerpc64" if little_endian => Architecture::Ppc64le,
            "powerpc64" => Architecture::Ppc64,
            "s390x" => Architecture::S390x,
            "riscv64" => Architecture::Riscv64,
            "loongarch64" => Architecture::Loongarch64,
            _ => return None,
        })
    }
}

impl fmt::Display for Architecture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(platform_tag: &str, expect: Option<(u16, bool, bool)>) {
        let found = Architecture::of_platform_tags(platform_tag)
            .map(|arch| (arch.elf_machine(), arch.is_64(), arch.is_little_endian()));
        assert_eq!(found, expect, "{platform_tag}");
    }

    #[test]
    fn platform_tags_name_their_machine() {
        check("linux_x86_64", Some((62, true, true)));
        check("manylinux_2_28_x86_64", Some((62, true, true)));
        check("manylinux2014_aarch64", Some((183, true, true)));
        check("musllinux_1_2_aarch64", Some((183, true, true)));
        check("manylinux_2_17_ppc64le", Some((21, true, true)));
        check("manylinux_2_17_ppc64", Some((21, true, false)));
        check("manylinux_2_17_s390x", Some((22, true, false)));
        check("manylinux_2_36_loongarch64", Some((258, true, true)));
        check("manylinux1_i686", Some((3, false, true)));
        check("linux_i386", Some((3, false, true)));
        check("linux_armv7l", Some((40, false, true)));
        check("manylinux_2_17_aarch64.manylinux2014_aarch64", Some((183, true, true)));
        for tag in ["any", "linux", "linux_sparc64", "", "x86_64_linux", "linux_xx86_64"] {
            check(tag, None);
        }
    }

    #[test]
    fn each_architecture_reads_back_from_its_elf_numbers_and_its_name() {
        for arch in Architecture::ALL {
            assert_eq!(Architecture::from_elf(arch.elf_machine(), arch.is_little_endian()), Some(arch));
            assert_eq!(Architecture::of_platform_tag(&format!("linux_{arch}")), Some(arch));
        }
        assert_eq!(Architecture::from_elf(224, true), None, "AMDGPU code objects run on no wheel platform");
    }

    /// Rust's names where Python's differ: the host tag of a 32-bit x86 or a little-endian
    /// POWER machine is `linux_i686` / `linux_ppc64le`, never `linux_x86` / `linux_powerpc64`.
    #[test]
    fn rust_names_become_python_names() {
        assert_eq!(Architecture::from_rust("x86", true), Some(Architecture::I686));
        assert_eq!(Architecture::from_rust("powerpc64", true), Some(Architecture::Ppc64le));
        assert_eq!(Architecture::from_rust("powerpc64", false), Some(Architecture::Ppc64));
        assert_eq!(Architecture::from_rust("arm", true), Some(Architecture::Armv7l));
        assert_eq!(Architecture::from_rust("x86_64", true), Some(Architecture::X86_64));
        assert_eq!(Architecture::from_rust("sparc64", false), None);
    }

    /// The host is the machine this very test program was built for, as its own ELF header
    /// says.
    #[test]
    fn the_host_is_the_machine_of_this_program() {
        let exe = std::fs::read(std::env::current_exe().expect("test binary")).expect("read the test binary");
        let identity = crate::elf_identity(&exe).expect("an ELF program");
        let host = Architecture::host().expect("the tests run on a machine wheels are built for");
        assert_eq!(
            (host.elf_machine(), host.is_64(), host.is_little_endian()),
            (identity.machine, identity.is_64, identity.little_endian)
        );
    }
}
