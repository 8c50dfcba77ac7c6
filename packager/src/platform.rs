//! The machine a wheel runs on, derived from its platform tag (SPEC §6 "Never edit what is
//! not ours to edit"): only ELF files built for that machine, class and byte order get the
//! RPATH treatment; everything else (AMDGPU code objects, an aarch64 or i386 library in an
//! x86_64 wheel) is data, copied untouched.
//!
//! Owns: which [`Architecture`] a run's platform tag means, the host fallback, and the
//! host's default tag. Does not own: the table of architectures (`elf-audit`'s
//! [`Architecture`], the one every crate reads), what happens to a foreign file (`plan`).

use elf_audit::Architecture;
use elf_rpath::ElfInfo;

/// `e_machine` of AMDGPU code objects: never ours to edit (SPEC §6). No wheel platform runs
/// them, so [`can_run`] keeps them (with every other machine's files) out of the RPATH
/// treatment, and the build's operating system is told without them.
pub const EM_AMDGPU: u16 = 224;

/// SPEC §2: without `ROCM_SDK_WHEEL_PLATFORM_TAG` the tag is the host's, `linux_x86_64`;
/// on a host no wheel is built for, the machine is this one.
const DEFAULT_ARCHITECTURE: Architecture = Architecture::X86_64;

/// The machine of a wheel platform tag: `linux_x86_64`, `manylinux_2_28_aarch64`, or a
/// compressed tag set (`manylinux_2_17_x86_64.manylinux2014_x86_64`, whose first tag
/// decides). A tag without a known architecture falls back to the host's machine.
pub fn machine_of_tag(platform_tag: &str) -> Architecture {
    Architecture::of_platform_tags(platform_tag).unwrap_or_else(host_machine)
}

/// The machine this packager runs on, in wheel terms.
pub fn host_machine() -> Architecture {
    Architecture::host().unwrap_or(DEFAULT_ARCHITECTURE)
}

/// The host's platform tag, the default of a Linux build (SPEC §2, §7): `linux_` and the
/// architecture as Python names it (`linux_i686`, `linux_ppc64le`; Rust's own names for
/// those machines, `x86` and `powerpc64`, are no platform tags). A machine no wheel is
/// built for keeps the name Rust gives it, as `uname -m` would.
pub fn host_platform_tag() -> String {
    match Architecture::host() {
        Some(architecture) => format!("linux_{architecture}"),
        None => format!("linux_{}", std::env::consts::ARCH),
    }
}

/// Whether `info` was built for `machine`: same `e_machine`, class and byte order. The
/// packager edits only such files; the rest (AMDGPU code objects, another CPU's
/// libraries) it copies unchanged (SPEC §6).
pub fn can_run(machine: Architecture, info: &ElfInfo) -> bool {
    info.machine == machine.elf_machine()
        && info.is_64 == machine.is_64()
        && info.little_endian == machine.is_little_endian()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tags_fall_back_to_the_host() {
        for tag in ["any", "linux", "linux_sparc64", "", "x86_64_linux", "linux_xx86_64"] {
            assert_eq!(machine_of_tag(tag), host_machine(), "{tag:?}");
        }
        assert_eq!(machine_of_tag("manylinux_2_17_ppc64le"), Architecture::Ppc64le);
    }

    /// The default tag names the host as Python does, and reads back as the host's machine.
    #[test]
    fn the_host_tag_is_pythons_and_names_the_host() {
        let tag = host_platform_tag();
        assert_eq!(machine_of_tag(&tag), host_machine(), "{tag}");
        assert_eq!(Architecture::of_platform_tag(&tag), Architecture::host(), "{tag}");
        assert!(!tag.ends_with("_x86") && !tag.ends_with("_powerpc64"), "{tag}");
    }
}
