//! Which upstream project a bundled third-party file belongs to. TheRock installs its
//! third-party libraries under `lib/rocm_sysdeps/` with their names prefixed
//! (`librocm_sysdeps_numa.so.1` for numactl's `libnuma.so`, `LIB_NAMES` of its
//! CMakeLists), and LLVM under `lib/llvm/`.
//!
//! Owns: that matching, by path inside the platform directory and library name. Does not
//! own: reading the checkout (`catalog::third_party`), or saying it (`document`).

use crate::input::third_party::{SourceProject, ThirdPartySources};

/// Where TheRock installs its own builds of system libraries, in a platform directory.
const SYSDEPS_DIR: &str = "lib/rocm_sysdeps/";
/// The prefix TheRock gives their names, so they never clash with the system's.
const SYSDEPS_PREFIX: &str = "librocm_sysdeps_";
/// Where LLVM is installed, in a platform directory.
const LLVM_DIR: &str = "lib/llvm/";

/// What is known of a member's upstream project.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upstream<'a> {
    /// Not third-party code (ROCm's own, or a file rocm-packager made).
    None,
    /// One of `third-party/sysdeps`.
    Project(&'a SourceProject),
    /// LLVM, whose version the checkout's LLVM source says.
    Llvm(&'a str),
    /// Third-party code whose project and version are not known, and why.
    Unknown(&'static str),
}

/// Said of bundled third-party code when there was no checkout to read: only the file's
/// name is known (a shared library's is its SONAME, SPEC §2), and its project and version
/// are not guessed. The reasons are short: a build has thousands of such files.
pub const NO_CHECKOUT: &str = "unknown: no TheRock checkout";
/// No project of the checkout's `third-party/sysdeps` installs a library of this name.
pub const NOT_IN_SYSDEPS: &str = "unknown: in no project of third-party/sysdeps";
/// The checkout has no `compiler/amd-llvm/cmake/Modules/LLVMVersion.cmake`, and the build
/// spells no version either (no `libLLVM` SONAME, no clang resource directory).
pub const NO_LLVM_SOURCE: &str = "unknown: no LLVMVersion.cmake in the TheRock checkout, no version in the build";

/// The upstream of the member at `member` (`{platform dir}/lib/…`).
pub fn upstream<'a>(member: &str, sources: Option<&'a ThirdPartySources>) -> Upstream<'a> {
    let Some((_, inside)) = member.split_once('/') else { return Upstream::None };
    if inside.starts_with(LLVM_DIR) {
        return match sources {
            None => Upstream::Unknown(NO_CHECKOUT),
            Some(sources) => sources.llvm_version.as_deref().map_or(Upstream::Unknown(NO_LLVM_SOURCE), Upstream::Llvm),
        };
    }
    if !inside.starts_with(SYSDEPS_DIR) {
        return Upstream::None;
    }
    let Some(sources) = sources else { return Upstream::Unknown(NO_CHECKOUT) };
    let file_name = inside.rsplit('/').next().unwrap_or(inside);
    let Some(stem) = library_stem(file_name.strip_prefix(SYSDEPS_PREFIX).unwrap_or(file_name)) else {
        return Upstream::Unknown(NOT_IN_SYSDEPS);
    };
    let project = sources
        .projects
        .iter()
        .find(|project| project.libraries.iter().any(|library| library_stem(library).as_ref() == Some(&stem)));
    project.map_or(Upstream::Unknown(NOT_IN_SYSDEPS), Upstream::Project)
}

/// `libnl-genl-3.so` → `nl_genl_3`, `numa.so.1` → `numa`: the name before `.so`, without a
/// leading `lib` (`liblzma.so` is installed as `librocm_sysdeps_liblzma.so.5`), `-` read
/// as `_` (TheRock's prefixed names use `_`). `None` for a file that is no shared library.
fn library_stem(file_name: &str) -> Option<String> {
    let (stem, _) = file_name.split_once(".so")?;
    let stem = stem.strip_prefix("lib").filter(|rest| !rest.is_empty()).unwrap_or(stem);
    (!stem.is_empty()).then(|| stem.replace('-', "_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(name: &str, libraries: &[&str]) -> SourceProject {
        SourceProject {
            cmake: format!("third-party/sysdeps/linux/{name}/CMakeLists.txt"),
            name: name.to_owned(),
            version: Some("1.0".to_owned()),
            url: format!("https://mirror.example/{name}-1.0.tar.gz"),
            hash: None,
            libraries: libraries.iter().map(|library| (*library).to_owned()).collect(),
        }
    }

    #[test]
    fn libraries_match_their_projects() {
        let sources = ThirdPartySources {
            projects: vec![
                project("numactl", &["libnuma.so"]),
                project("libnl", &["libnl-3.so", "libnl-genl-3.so"]),
                project("xz", &["liblzma.so"]),
                project("libdrm", &["libdrm.so", "libdrm_amdgpu.so"]),
            ],
            llvm_version: Some("22.0.0git".to_owned()),
            llvm_version_source: None,
        };
        let name = |member: &str| match upstream(member, Some(&sources)) {
            Upstream::Project(project) => project.name.clone(),
            other => format!("{other:?}"),
        };
        assert_eq!(name("_rocm_sdk_core/lib/rocm_sysdeps/lib/librocm_sysdeps_numa.so.1"), "numactl");
        assert_eq!(name("_rocm_sdk_core/lib/rocm_sysdeps/lib/librocm_sysdeps_nl_genl_3.so.200"), "libnl");
        assert_eq!(name("_rocm_sdk_core/lib/rocm_sysdeps/lib/librocm_sysdeps_liblzma.so.5"), "xz");
        assert_eq!(name("_rocm_sdk_core/lib/rocm_sysdeps/lib/librocm_sysdeps_drm_amdgpu.so.1"), "libdrm");
        assert_eq!(name("_rocm_sdk_core/lib/rocm_sysdeps/lib/librocm_sysdeps_drm.so.2"), "libdrm");
        assert_eq!(
            upstream("_rocm_sdk_core/lib/rocm_sysdeps/lib/libother.so.1", Some(&sources)),
            Upstream::Unknown(NOT_IN_SYSDEPS)
        );
        assert_eq!(
            upstream("_rocm_sdk_core/lib/rocm_sysdeps/share/x.txt", Some(&sources)),
            Upstream::Unknown(NOT_IN_SYSDEPS)
        );
        assert_eq!(upstream("_rocm_sdk_core/lib/llvm/bin/clang", Some(&sources)), Upstream::Llvm("22.0.0git"));
        assert_eq!(upstream("_rocm_sdk_core/lib/libamdhip64.so.7", Some(&sources)), Upstream::None);
        assert_eq!(upstream("rocm_sdk_core/__init__.py", Some(&sources)), Upstream::None);
    }

    #[test]
    fn without_a_checkout_only_the_name_is_known() {
        assert_eq!(
            upstream("_rocm_sdk_core/lib/rocm_sysdeps/lib/librocm_sysdeps_numa.so.1", None),
            Upstream::Unknown(NO_CHECKOUT)
        );
        assert_eq!(upstream("_rocm_sdk_core/lib/llvm/lib/libLLVM.so.22.0git", None), Upstream::Unknown(NO_CHECKOUT));
        let no_llvm = ThirdPartySources::default();
        assert_eq!(upstream("_rocm_sdk_core/lib/llvm/bin/clang", Some(&no_llvm)), Upstream::Unknown(NO_LLVM_SOURCE));
        assert_eq!(upstream("_rocm_sdk_core/bin/hipcc", None), Upstream::None);
    }
}
