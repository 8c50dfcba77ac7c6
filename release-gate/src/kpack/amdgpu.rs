//! Whether an AMDGPU code object is built for the target it is filed under: its ELF
//! header's `e_machine` (EM_AMDGPU) and the processor and xnack/sramecc settings its
//! `e_flags` name, read as LLVM defines them (`llvm/include/llvm/BinaryFormat/ELF.h`,
//! `EF_AMDGPU_MACH_*`, `EF_AMDGPU_FEATURE_*_V4`), against a target id such as
//! `gfx90a:xnack+`.
//!
//! Owns: the processor table and that comparison; target ids' feature subsets, in the
//! order the kpack runtime tries them. Does not own: where code objects come from
//! (`archive_file`).

const EM_AMDGPU: u16 = 224;
/// `EI_OSABI` of HIP code objects (ELFOSABI_AMDGPU_HSA).
const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `EI_ABIVERSION` of code object v3; v4 is 2, v5 3, v6 4.
const ABI_V3: u8 = 1;
const EF_AMDGPU_MACH: u32 = 0x0ff;
const XNACK_V3: u32 = 0x100;
const SRAMECC_V3: u32 = 0x200;
const XNACK_V4: u32 = 0x300;
const SRAMECC_V4: u32 = 0xc00;

/// `EF_AMDGPU_MACH` values of the processors ROCm builds for, from gfx801 on (Debian's
/// ROCm still ships gfx803 code objects), and the generic targets (LLVM's
/// `AMDGPU_MACH_LIST`).
const PROCESSORS: &[(u32, &str)] = &[
    (0x28, "gfx801"),
    (0x29, "gfx802"),
    (0x2a, "gfx803"),
    (0x2b, "gfx810"),
    (0x3c, "gfx805"),
    (0x2c, "gfx900"),
    (0x2d, "gfx902"),
    (0x2e, "gfx904"),
    (0x2f, "gfx906"),
    (0x30, "gfx908"),
    (0x31, "gfx909"),
    (0x32, "gfx90c"),
    (0x33, "gfx1010"),
    (0x34, "gfx1011"),
    (0x35, "gfx1012"),
    (0x36, "gfx1030"),
    (0x37, "gfx1031"),
    (0x38, "gfx1032"),
    (0x39, "gfx1033"),
    (0x3d, "gfx1035"),
    (0x3e, "gfx1034"),
    (0x3f, "gfx90a"),
    (0x40, "gfx940"),
    (0x41, "gfx1100"),
    (0x42, "gfx1013"),
    (0x43, "gfx1150"),
    (0x44, "gfx1103"),
    (0x45, "gfx1036"),
    (0x46, "gfx1101"),
    (0x47, "gfx1102"),
    (0x48, "gfx1200"),
    (0x49, "gfx1250"),
    (0x4a, "gfx1151"),
    (0x4b, "gfx941"),
    (0x4c, "gfx942"),
    (0x4e, "gfx1201"),
    (0x4f, "gfx950"),
    (0x51, "gfx9-generic"),
    (0x52, "gfx10-1-generic"),
    (0x53, "gfx10-3-generic"),
    (0x54, "gfx11-generic"),
    (0x55, "gfx1152"),
    (0x57, "gfx1154"),
    (0x58, "gfx1153"),
    (0x59, "gfx12-generic"),
    (0x5a, "gfx1251"),
    (0x5b, "gfx12-5-generic"),
    (0x5f, "gfx9-4-generic"),
];

/// The generic target a processor's code may come from when none of its own is found
/// (the HIP runtime's `TargetToGeneric` fallback; LLVM's generic processor table).
const GENERIC_MEMBERS: &[(&str, &[&str])] = &[
    ("gfx9-generic", &["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"]),
    ("gfx9-4-generic", &["gfx940", "gfx941", "gfx942", "gfx950"]),
    ("gfx10-1-generic", &["gfx1010", "gfx1011", "gfx1012", "gfx1013"]),
    ("gfx10-3-generic", &["gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"]),
    ("gfx11-generic", &["gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"]),
    ("gfx12-generic", &["gfx1200", "gfx1201"]),
    ("gfx12-5-generic", &["gfx1250", "gfx1251"]),
];

fn processor_name(mach: u32) -> Option<&'static str> {
    PROCESSORS.iter().find(|(value, _)| *value == mach).map(|(_, name)| *name)
}

/// Whether `processor` is one LLVM names (the table above), so a device can be one.
pub(crate) fn is_known(processor: &str) -> bool {
    PROCESSORS.iter().any(|(_, name)| *name == processor)
}

/// Whether `processor` is a generic target (`gfx11-generic`).
pub(crate) fn is_generic(processor: &str) -> bool {
    processor.ends_with("-generic")
}

/// The generic target whose code objects a device of `processor` also loads.
pub(crate) fn generic_of(processor: &str) -> Option<&'static str> {
    GENERIC_MEMBERS.iter().find(|(_, members)| members.contains(&processor)).map(|(generic, _)| *generic)
}

/// A target id split: the processor and its `feature±` settings, as written.
pub(crate) fn split_target(target: &str) -> (&str, Vec<&str>) {
    let mut parts = target.split(':');
    let processor = parts.next().unwrap_or_default();
    (processor, parts.collect())
}

/// The ids the runtime tries for a device of `target`, best first: every subset of its
/// features by descending bitmask (all of them first), the bare processor last
/// (KPACK.md §2 "Matching").
pub(crate) fn feature_subsets(target: &str) -> Vec<String> {
    let (processor, features) = split_target(target);
    // Feature lists are one or two long; more is not a target id, and 2^n must stay small.
    let features = &features[..features.len().min(8)];
    let n = features.len();
    (0..1u32 << n)
        .rev()
        .map(|mask| {
            let mut id = processor.to_owned();
            for (bit, feature) in features.iter().enumerate() {
                if mask & (1 << (n - 1 - bit)) != 0 {
                    id.push(':');
                    id.push_str(feature);
                }
            }
            id
        })
        .collect()
}

/// Why the code object whose first bytes are `head` is not built for `target`, or `None`
/// when it is. `head` holds at least the 64-byte ELF header when the object is that long.
pub(crate) fn mismatch(head: &[u8], target: &str) -> Option<String> {
    if head.len() < 64 || !head.starts_with(b"\x7fELF") {
        return Some("is not an ELF file".to_owned());
    }
    if head[4] != 2 || head[5] != 1 {
        return Some("is not a 64-bit little-endian ELF file, as AMDGPU code objects are".to_owned());
    }
    let machine = u16::from_le_bytes([head[18], head[19]]);
    if machine != EM_AMDGPU {
        return Some(format!("is an ELF file for machine {machine}, not AMDGPU ({EM_AMDGPU})"));
    }
    if head[7] != ELFOSABI_AMDGPU_HSA {
        return Some(format!("has OS ABI {}, not AMDGPU HSA ({ELFOSABI_AMDGPU_HSA}), which HIP loads", head[7]));
    }
    let flags = u32::from_le_bytes([head[48], head[49], head[50], head[51]]);
    let Some(processor) = processor_name(flags & EF_AMDGPU_MACH) else {
        return Some(format!("names an unknown processor in e_flags (EF_AMDGPU_MACH {:#04x})", flags & EF_AMDGPU_MACH));
    };
    let (filed, features) = split_target(target);
    // TheRock's `gfx1250-strict` is gfx1250 code built with stricter options.
    let filed_processor = filed.strip_suffix("-strict").unwrap_or(filed);
    let abi = head[8];
    let named = flags_target(processor, flags, abi);
    // The target comes from the archive: printed escaped, as every name from input is.
    let printed = crate::escape::escape(target);
    if filed_processor != processor {
        return Some(format!("is built for {named} (e_flags {flags:#x}), not {printed}"));
    }
    for feature in ["xnack", "sramecc"] {
        let wanted = features.iter().find(|setting| setting.strip_suffix(['+', '-']) == Some(feature));
        let found = feature_setting(flags, abi, feature);
        let agrees = match (wanted.map(|setting| setting.ends_with('+')), found) {
            // A bare target is looked up for devices with the feature on and off: its code
            // must run on both (`any`), or the processor lack the feature.
            (None, Setting::Any | Setting::Unsupported) => true,
            // Code object v3 says only on or not on.
            (None, Setting::OnOrAny) => true,
            (Some(true), Setting::On | Setting::OnOrAny) => true,
            (Some(false), Setting::Off | Setting::OffOrAny) => true,
            (None, Setting::OffOrAny) | (Some(_), Setting::Unknown) => true,
            _ => false,
        };
        if !agrees {
            return Some(format!("is built for {named} (e_flags {flags:#x}), not {printed}"));
        }
    }
    None
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setting {
    Unsupported,
    Any,
    Off,
    On,
    /// Code object v3: the bit is set.
    OnOrAny,
    /// Code object v3: the bit is clear.
    OffOrAny,
    /// Code object v2: no feature bits.
    Unknown,
}

fn feature_setting(flags: u32, abi: u8, feature: &str) -> Setting {
    let xnack = feature == "xnack";
    if abi < ABI_V3 {
        return Setting::Unknown;
    }
    if abi == ABI_V3 {
        let bit = if xnack { XNACK_V3 } else { SRAMECC_V3 };
        return if flags & bit != 0 { Setting::OnOrAny } else { Setting::OffOrAny };
    }
    let (mask, shift) = if xnack { (XNACK_V4, 8) } else { (SRAMECC_V4, 10) };
    match (flags & mask) >> shift {
        0 => Setting::Unsupported,
        1 => Setting::Any,
        2 => Setting::Off,
        _ => Setting::On,
    }
}

/// The target id the flags name, for messages: `gfx90a:xnack+`, features in LLVM's order.
fn flags_target(processor: &str, flags: u32, abi: u8) -> String {
    let mut id = processor.to_owned();
    for feature in ["sramecc", "xnack"] {
        match feature_setting(flags, abi, feature) {
            Setting::On | Setting::OnOrAny => id.push_str(&format!(":{feature}+")),
            Setting::Off => id.push_str(&format!(":{feature}-")),
            _ => {}
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-byte AMDGPU ELF header with `flags` and ABI version `abi`.
    pub(crate) fn header(flags: u32, abi: u8) -> Vec<u8> {
        let mut head = vec![0u8; 64];
        head[..4].copy_from_slice(b"\x7fELF");
        head[4] = 2;
        head[5] = 1;
        head[6] = 1;
        head[7] = ELFOSABI_AMDGPU_HSA;
        head[8] = abi;
        head[18..20].copy_from_slice(&EM_AMDGPU.to_le_bytes());
        head[48..52].copy_from_slice(&flags.to_le_bytes());
        head
    }

    #[test]
    fn flags_against_targets() {
        // clang-15 --offload-arch=gfx90a gives 0x53f (xnack any, sramecc any), ABI 2.
        assert_eq!(mismatch(&header(0x53f, 2), "gfx90a"), None);
        assert_eq!(mismatch(&header(0x73f, 2), "gfx90a:xnack+"), None);
        assert_eq!(mismatch(&header(0x63f, 2), "gfx90a:xnack-"), None);
        assert_eq!(mismatch(&header(0xe3f, 2), "gfx90a:sramecc+:xnack-"), None);
        assert_eq!(mismatch(&header(0x36, 2), "gfx1030"), None);
        assert_eq!(mismatch(&header(0x54, 4), "gfx11-generic"), None);
        // Debian's librocrand1 carries gfx803 code objects (ABI 2, no feature bits).
        assert_eq!(mismatch(&header(0x2a, 2), "gfx803"), None);
        let wrong = |flags, target| mismatch(&header(flags, 2), target).unwrap_or_default();
        assert_eq!(wrong(0x36, "gfx90a"), "is built for gfx1030 (e_flags 0x36), not gfx90a");
        assert_eq!(wrong(0x73f, "gfx90a"), "is built for gfx90a:xnack+ (e_flags 0x73f), not gfx90a");
        assert_eq!(wrong(0x53f, "gfx90a:xnack+"), "is built for gfx90a (e_flags 0x53f), not gfx90a:xnack+");
        assert_eq!(wrong(0x36, "gfx1030:xnack+"), "is built for gfx1030 (e_flags 0x36), not gfx1030:xnack+");
        assert!(wrong(0x7f, "gfx90a").contains("unknown processor"));
        let mut host = header(0, 2);
        host[18] = 62;
        assert!(mismatch(&host, "gfx90a").is_some_and(|why| why.contains("machine 62")));
        assert_eq!(mismatch(b"\x7fELF", "gfx90a").as_deref(), Some("is not an ELF file"));
    }

    #[test]
    fn subsets_in_the_runtime_order() {
        assert_eq!(feature_subsets("gfx90a"), ["gfx90a"]);
        assert_eq!(feature_subsets("gfx90a:xnack+"), ["gfx90a:xnack+", "gfx90a"]);
        assert_eq!(
            feature_subsets("gfx942:sramecc+:xnack-"),
            ["gfx942:sramecc+:xnack-", "gfx942:sramecc+", "gfx942:xnack-", "gfx942"]
        );
        assert_eq!(generic_of("gfx1101"), Some("gfx11-generic"));
        assert_eq!(generic_of("gfx90a"), None);
    }
}
