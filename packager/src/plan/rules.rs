//! SPEC §2 "What goes where", as data: which artifacts and paths feed each package, and
//! which RPATH entries each package's ELF files get.

use crate::input::catalog::{ArtifactName, Glob};
use crate::input::CatalogError;
use crate::targets::Target;

pub const CORE_ARTIFACTS: &[&str] = &[
    "amd-dbgapi",
    "amd-llvm",
    "aqlprofile",
    "base",
    "core-amdsmi",
    "core-hip",
    "core-kpack",
    "core-ocl",
    "core-hipinfo",
    "core-runtime",
    "hipfile",
    "hipify",
    "host-blas",
    "host-suite-sparse",
    "rocdecode",
    "rocgdb",
    "rocjpeg",
    "rocprofiler-sdk",
    "rocr-debug-agent",
    "sysdeps",
    "sysdeps-amd-mesa",
    "sysdeps-expat",
    "sysdeps-gmp",
    "sysdeps-mpfr",
    "sysdeps-ncurses",
    "sysdeps-util-linux",
    "wsl-rocdxg",
];

/// Everything of rocprofiler-systems lives in the profiler wheel, never in core.
const ROCPROFILER_SYSTEMS_PATHS: &[&str] = &[
    "include/rocprofiler-systems/**",
    "lib/librocprof-sys*",
    "lib/python/site-packages/rocprofsys/**",
    "lib/rocprofiler-systems/**",
    "libexec/rocprofiler-systems/**",
    "share/**/rocprofiler-systems/**",
];

pub const PROFILER_ARTIFACTS: &[&str] = &["rocprofiler-compute", "rocprofiler-systems"];

const PROFILER_PATHS: &[&str] = &[
    "bin/rocprof-sys-*",
    "lib/libprofiler-hub.so*",
    "bin/rocprof-*",
    "libexec/rocprofiler-compute/**",
    "lib/rocprofiler-compute/**",
    "share/**/rocprofiler-compute/**",
];

pub const LIBRARIES_ARTIFACTS: &[&str] = &[
    "blas",
    "fft",
    "hipdnn",
    "miopen",
    "miopenprovider",
    "hipblasltprovider",
    "hipkernelprovider",
    "rand",
    "rccl",
    "rpp",
];

const DEVEL_EXTRA_KPACK: &[&str] =
    &["prim", "rocwmma", "libhipcxx", "flatbuffers", "nlohmann-json", "rocshmem", "hipthreads", "rocjitsu", "mirage"];
const DEVEL_EXTRA_LEGACY: &[&str] = &["prim", "rocwmma", "flatbuffers", "nlohmann-json", "rocjitsu", "mirage"];

pub fn is_core_artifact(name: &ArtifactName) -> bool {
    let component_ok = matches!(name.component.as_str(), "lib" | "run");
    let listed = CORE_ARTIFACTS.contains(&name.name.as_str()) && component_ok;
    let hotswap = name.name == "rocjitsu-hotswap" && name.component == "lib";
    // hiprtc needs the HIP headers beside it.
    let headers = matches!(name.name.as_str(), "core-hip" | "core-ocl") && name.component == "dev";
    name.is_generic() && (listed || hotswap || headers)
}

pub fn core_excludes() -> Result<Vec<Glob>, CatalogError> {
    let mut patterns = vec!["**/cmake/**", "bin/rocprof-*"];
    patterns.extend_from_slice(ROCPROFILER_SYSTEMS_PATHS);
    globs(&patterns)
}

pub fn is_profiler_artifact(name: &ArtifactName) -> bool {
    PROFILER_ARTIFACTS.contains(&name.name.as_str()) && matches!(name.component.as_str(), "lib" | "run")
}

pub fn profiler_includes() -> Result<Vec<Glob>, CatalogError> {
    let mut patterns: Vec<&str> = ROCPROFILER_SYSTEMS_PATHS.to_vec();
    patterns.extend_from_slice(PROFILER_PATHS);
    globs(&patterns)
}

/// Legacy: the family's artifacts plus generic; kpack-split (`family == None`): generic only.
pub fn is_libraries_artifact(name: &ArtifactName, family: Option<&str>) -> bool {
    let family_ok = is_generic_or_of(name, family);
    LIBRARIES_ARTIFACTS.contains(&name.name.as_str()) && name.component == "lib" && family_ok
}

/// Device artifacts of one owner's wheel (kpack-split, SPEC §2): `gfx90a:xnack+` feeds
/// `gfx90a`, and `gfx1250-strict` feeds `gfx1250` (grouped by owner).
pub fn is_device_artifact(name: &ArtifactName, owner: &Target) -> bool {
    name.name != "rpp"
        && LIBRARIES_ARTIFACTS.contains(&name.name.as_str())
        && name.component == "lib"
        && name.target_family.target().is_some_and(|target| &target.owner() == owner)
}

/// Every artifact that fed a runtime package (profiler aside) plus the devel-only ones.
pub fn is_devel_artifact(name: &ArtifactName, family: Option<&str>, kpack_split: bool) -> bool {
    let extras = if kpack_split { DEVEL_EXTRA_KPACK } else { DEVEL_EXTRA_LEGACY };
    let listed = CORE_ARTIFACTS.contains(&name.name.as_str())
        || name.name == "rocjitsu-hotswap"
        || LIBRARIES_ARTIFACTS.contains(&name.name.as_str())
        || extras.contains(&name.name.as_str());
    let family_ok = is_generic_or_of(name, family);
    let component_ok = !(kpack_split && name.component == "test");
    listed && !PROFILER_ARTIFACTS.contains(&name.name.as_str()) && family_ok && component_ok
}

/// Arch-neutral, or built for the legacy `family` (as the artifacts spell it).
fn is_generic_or_of(name: &ArtifactName, family: Option<&str>) -> bool {
    name.is_generic() || family.is_some_and(|family| name.target_family.as_str() == family)
}

/// (platform package logical name, directory inside it) appended to RPATHs, per SPEC §2.
pub fn rpath_deps(group: crate::config::PackageGroup) -> &'static [&'static str] {
    use crate::config::PackageGroup;
    match group {
        PackageGroup::Core => &["lib/llvm/lib", "lib/rocm_sysdeps/lib"],
        PackageGroup::Profiler => &["lib", "lib/llvm/lib", "lib/rocm_sysdeps/lib"],
        PackageGroup::Libraries => &["lib", "lib/rocm_sysdeps/lib", "lib/host-math/lib", "lib/llvm/lib"],
        PackageGroup::Device => &["lib", "lib/rocm_sysdeps/lib"],
        PackageGroup::Devel | PackageGroup::Meta => &[],
    }
}

fn globs(patterns: &[&str]) -> Result<Vec<Glob>, CatalogError> {
    patterns.iter().map(|pattern| Glob::new(pattern)).collect()
}
