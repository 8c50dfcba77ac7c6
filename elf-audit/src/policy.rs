//! auditwheel's manylinux policies, embedded as data: for each `manylinux_2_X`, its legacy
//! aliases, its priority, the system libraries a wheel may leave to the host
//! (`lib_whitelist`) and the newest symbol versions its reference distribution provides.
//!
//! Source: `auditwheel/policy/manylinux-policy.json` of auditwheel 6.8.2 (PyPI;
//! <https://github.com/pypa/auditwheel>, MIT licence). `manylinux-policy.json` beside
//! this file keeps, of every policy but `linux`, `name`, `aliases`, `priority` and
//! `lib_whitelist` as they are, and of `symbol_versions` only the newest numeric version
//! of `GLIBC`, `GLIBCXX`, `CXXABI` and `GCC` per architecture, which is all a tag choice
//! compares; the symbol `blacklist` and the `ZLIB`/`LIBATOMIC` versions are left out. To
//! update it, redo that projection on a newer auditwheel's file.
//!
//! Owns: the data and lookups on it. Does not own: reading ELF files (`parse`), adding up
//! a wheel's needs (`glibc`), choosing a wheel's tag (the packager's `manylinux`) or
//! judging one (the release gate).

use std::collections::BTreeMap;
use std::sync::OnceLock;

const POLICY_JSON: &str = include_str!("manylinux-policy.json");

/// One manylinux policy, as auditwheel defines it.
#[derive(Debug, serde::Deserialize)]
pub struct Policy {
    /// `manylinux_2_X`.
    pub name: String,
    /// Legacy names (`manylinux2014`).
    pub aliases: Vec<String>,
    /// Higher is more widely installable (older glibc); auditwheel picks the highest that fits.
    pub priority: u32,
    /// Libraries a wheel may need without shipping them: every such system has them.
    pub lib_whitelist: Vec<String>,
    /// Architecture → symbol-version prefix (`GLIBC`, ...) → the newest version it provides.
    pub newest_symbol_versions: BTreeMap<String, BTreeMap<String, Option<String>>>,
}

impl Policy {
    /// `X` of `manylinux_2_X`: the glibc minor version the tag promises.
    pub fn glibc_minor(&self) -> u32 {
        glibc_minor_of(&self.name).expect("every embedded policy is named manylinux_2_X (checked by a test)")
    }

    /// Whether the policy exists for `arch` (`x86_64`, `aarch64`, ...).
    pub fn supports(&self, arch: &str) -> bool {
        self.newest_symbol_versions.contains_key(arch)
    }

    /// The newest version of `prefix` symbols (`GLIBCXX`) the policy provides on `arch`.
    pub fn newest(&self, arch: &str, prefix: &str) -> Option<&str> {
        self.newest_symbol_versions.get(arch)?.get(prefix)?.as_deref()
    }

    /// Whether a wheel may leave `library` (a DT_NEEDED name) to the host.
    pub fn allows_library(&self, library: &str) -> bool {
        self.lib_whitelist.iter().any(|allowed| allowed == library) || PROGRAM_INTERPRETERS.contains(&library)
    }

    /// The platform tag for `arch`: `manylinux_2_28_x86_64`.
    pub fn tag(&self, arch: &str) -> String {
        format!("{}_{arch}", self.name)
    }
}

/// The dynamic loaders. A library linked against glibc may name its architecture's loader
/// in DT_NEEDED; every glibc system has it at that name, and auditwheel never counts it as a
/// dependency (it is the program interpreter), so no policy lists it.
pub const PROGRAM_INTERPRETERS: &[&str] = &[
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
    "ld-linux.so.2",
    "ld-linux-armhf.so.3",
    "ld64.so.2",
    "ld64.so.1",
    "ld-linux-riscv64-lp64d.so.1",
];

/// Every policy, most widely installable first (highest priority), as auditwheel tries them.
pub fn policies() -> &'static [Policy] {
    static POLICIES: OnceLock<Vec<Policy>> = OnceLock::new();
    POLICIES.get_or_init(|| {
        let mut policies: Vec<Policy> =
            serde_json::from_str(POLICY_JSON).expect("the embedded manylinux policy parses (checked by a test)");
        policies.sort_by_key(|policy| std::cmp::Reverse(policy.priority));
        policies
    })
}

/// `manylinux_2_28` or `manylinux_2_28_x86_64` → 28.
fn glibc_minor_of(name: &str) -> Option<u32> {
    name.strip_prefix("manylinux_2_")?.split('_').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_data_is_whole() {
        let policies = policies();
        let names: Vec<&str> = policies.iter().map(|policy| policy.name.as_str()).collect();
        assert_eq!(names.first(), Some(&"manylinux_2_5"));
        assert!(names.contains(&"manylinux_2_17") && names.contains(&"manylinux_2_28"), "{names:?}");
        for policy in policies {
            assert!(glibc_minor_of(&policy.name).is_some(), "{}", policy.name);
            assert!(policy.allows_library("libc.so.6") && policy.allows_library("libm.so.6"), "{}", policy.name);
            assert!(!policy.allows_library("libcrypt.so.1"), "{}", policy.name);
            for (arch, newest) in &policy.newest_symbol_versions {
                assert!(newest.get("GLIBC").is_some_and(Option::is_some), "{} {arch}", policy.name);
            }
        }
        // Priority falls as the glibc version rises, so "first that fits" is "oldest".
        let minors: Vec<u32> = policies.iter().map(Policy::glibc_minor).collect();
        assert!(minors.windows(2).all(|pair| pair[0] < pair[1]), "{minors:?}");
        let manylinux2014 = policies.iter().find(|policy| policy.glibc_minor() == 17).expect("manylinux_2_17");
        assert_eq!(manylinux2014.aliases, ["manylinux2014"]);
        assert_eq!(manylinux2014.newest("x86_64", "GLIBCXX"), Some("3.4.19"));
        assert_eq!(manylinux2014.tag("aarch64"), "manylinux_2_17_aarch64");
        assert!(!policies[0].supports("aarch64"), "manylinux1 is for Intel only");
    }
}
