//! Portability: the newest `GLIBC_`/`GLIBCXX_`/`CXXABI_`/`GCC_` symbol versions a wheel
//! needs, the manylinux tag that allows (PEP 600, with auditwheel's policies), and the
//! system libraries a manylinux wheel may leave to the host (PEP 599/600).
//!
//! Owns: symbol-version arithmetic. Does not own: reading `.gnu.version_r` (`parse`),
//! the policies themselves (`policy`, auditwheel's data).

use crate::policy::{policies, Policy, PROGRAM_INTERPRETERS};

/// Libraries every manylinux system provides (auditwheel's `lib_whitelist` of all policies,
/// plus the dynamic loaders and `libcrypt.so.1`, which every glibc distribution ships).
pub const SYSTEM_LIBRARIES: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libmvec.so.1",
    "libdl.so.2",
    "librt.so.1",
    "libpthread.so.0",
    "libanl.so.1",
    "libutil.so.1",
    "libnsl.so.1",
    "libresolv.so.2",
    "libcrypt.so.1",
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "libatomic.so.1",
    "libz.so.1",
    "libexpat.so.1",
    "libX11.so.6",
    "libXext.so.6",
    "libXrender.so.1",
    "libICE.so.6",
    "libSM.so.6",
    "libGL.so.1",
    "libgobject-2.0.so.0",
    "libgthread-2.0.so.0",
    "libglib-2.0.so.0",
];

/// A library every manylinux system provides, the dynamic loaders included.
pub fn is_system_library(name: &str) -> bool {
    SYSTEM_LIBRARIES.contains(&name) || PROGRAM_INTERPRETERS.contains(&name)
}

/// Newest versions needed so far, per prefix.
#[derive(Debug, Default, Clone)]
pub struct VersionNeeds {
    glibc: Option<Vec<u32>>,
    glibcxx: Option<Vec<u32>>,
    cxxabi: Option<Vec<u32>>,
    gcc: Option<Vec<u32>>,
    arch: Option<&'static str>,
}

impl VersionNeeds {
    /// Adds one file's needed version names (`GLIBC_2.34`, ...) and its architecture.
    pub fn add(&mut self, versions: &[String], arch: Option<&'static str>) {
        if self.arch.is_none() {
            self.arch = arch;
        }
        for name in versions {
            let Some((prefix, number)) = name.split_once('_') else { continue };
            let Some(number) = parse_version(number) else { continue };
            let slot = match prefix {
                "GLIBC" => &mut self.glibc,
                "GLIBCXX" => &mut self.glibcxx,
                "CXXABI" => &mut self.cxxabi,
                "GCC" => &mut self.gcc,
                _ => continue,
            };
            if slot.as_ref().is_none_or(|current| number > *current) {
                *slot = Some(number);
            }
        }
    }

    /// The architecture of the first ELF file added that has a manylinux name.
    pub fn arch(&self) -> Option<&'static str> {
        self.arch
    }

    pub fn glibc_minor(&self) -> Option<u32> {
        self.glibc.as_ref().and_then(|version| version.get(1).copied())
    }

    /// The newest `GLIBC_` version needed (`2.34`).
    pub fn glibc(&self) -> Option<String> {
        self.glibc.as_deref().map(format_version)
    }

    /// The newest `GLIBCXX_` version needed (`3.4.30`).
    pub fn glibcxx(&self) -> Option<String> {
        self.glibcxx.as_deref().map(format_version)
    }

    /// The newest `CXXABI_` version needed (`1.3.13`).
    pub fn cxxabi(&self) -> Option<String> {
        self.cxxabi.as_deref().map(format_version)
    }

    /// The oldest policy's tag that satisfies every need (`manylinux_2_34_x86_64`), for the
    /// architecture of the first file added; beyond the table, the glibc minor itself.
    pub fn manylinux_tag(&self) -> Option<String> {
        self.arch.map(|arch| format!("manylinux_2_{}_{arch}", self.manylinux_minor(arch)))
    }

    /// The oldest policy satisfying every need; beyond the table, the glibc minor itself.
    fn manylinux_minor(&self, arch: &str) -> u32 {
        match self.oldest_policy(arch) {
            Some(policy) => policy.glibc_minor(),
            None => self.glibc_minor().unwrap_or(0),
        }
    }

    /// The most widely installable (highest-priority) policy for `arch` that provides every
    /// symbol version needed so far; `None` when even the newest policy is too old.
    pub fn oldest_policy(&self, arch: &str) -> Option<&'static Policy> {
        policies().iter().filter(|policy| policy.supports(arch)).find(|policy| self.fits(policy, arch))
    }

    /// Whether `policy` provides every symbol version needed so far on `arch`.
    pub fn fits(&self, policy: &Policy, arch: &str) -> bool {
        let fits = |prefix: &str, need: &Option<Vec<u32>>| {
            need.as_ref().is_none_or(|need| {
                policy.newest(arch, prefix).and_then(parse_version).is_some_and(|have| have >= *need)
            })
        };
        fits("GLIBC", &self.glibc)
            && fits("GLIBCXX", &self.glibcxx)
            && fits("CXXABI", &self.cxxabi)
            && fits("GCC", &self.gcc)
    }

    /// The newest needed version of each prefix that `policy` does not provide on `arch`, as
    /// symbol-version names (`GLIBCXX_3.4.30`), for saying why no policy fits.
    pub fn beyond(&self, policy: &Policy, arch: &str) -> Vec<String> {
        let needs = [("GLIBC", &self.glibc), ("GLIBCXX", &self.glibcxx), ("CXXABI", &self.cxxabi), ("GCC", &self.gcc)];
        needs
            .into_iter()
            .filter_map(|(prefix, need)| {
                let need = need.as_ref()?;
                let have = policy.newest(arch, prefix).and_then(parse_version);
                (have.as_ref() < Some(need)).then(|| format!("{prefix}_{}", format_version(need)))
            })
            .collect()
    }
}

fn parse_version(text: &str) -> Option<Vec<u32>> {
    text.split('.').map(|part| part.parse().ok()).collect()
}

fn format_version(version: &[u32]) -> String {
    version.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
}

/// The glibc minor a platform tag promises (`manylinux_2_28_x86_64` → 28, `manylinux2014_*` → 17).
pub fn tag_glibc_minor(platform: &str) -> Option<u32> {
    if let Some(rest) = platform.strip_prefix("manylinux_2_") {
        return rest.split('_').next()?.parse().ok();
    }
    match platform.split('_').next()? {
        "manylinux1" => Some(5),
        "manylinux2010" => Some(12),
        "manylinux2014" => Some(17),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(versions: &[&str], arch: &'static str) -> Option<String> {
        let mut needs = VersionNeeds::default();
        needs.add(&versions.iter().map(|v| v.to_string()).collect::<Vec<_>>(), Some(arch));
        needs.manylinux_tag()
    }

    #[test]
    fn oldest_policy_that_fits() {
        assert_eq!(tag(&["GLIBC_2.2.5"], "x86_64").as_deref(), Some("manylinux_2_5_x86_64"));
        assert_eq!(tag(&["GLIBC_2.2.5"], "aarch64").as_deref(), Some("manylinux_2_17_aarch64"));
        assert_eq!(tag(&["GLIBC_2.14", "GLIBC_2.34"], "x86_64").as_deref(), Some("manylinux_2_34_x86_64"));
        assert_eq!(tag(&["GLIBC_2.29"], "x86_64").as_deref(), Some("manylinux_2_31_x86_64"));
        assert_eq!(tag(&["GLIBC_2.17", "GLIBCXX_3.4.30"], "x86_64").as_deref(), Some("manylinux_2_35_x86_64"));
        assert_eq!(tag(&["GLIBC_2.50"], "x86_64").as_deref(), Some("manylinux_2_50_x86_64"));
    }

    #[test]
    fn platform_tags() {
        assert_eq!(tag_glibc_minor("manylinux_2_28_x86_64"), Some(28));
        assert_eq!(tag_glibc_minor("manylinux2014_aarch64"), Some(17));
        assert_eq!(tag_glibc_minor("linux_x86_64"), None);
    }
}
