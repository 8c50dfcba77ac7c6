//! The bundled example, a `PackageConfig` as the CLI would make it, and bytes that do not
//! compress: what a test and the helper program it spawns must agree on.

use std::path::{Path, PathBuf};

/// The bundled example (legacy or kpack-split) written under `dir/artifacts`. Without
/// `llvm-mc` and `ld.lld` the generator leaves the AMDGPU code objects out and warns; the
/// tests count on them, so that warning (it names the tools) fails here, not later as a
/// missing file or a wrong count.
pub fn write_example(dir: &Path, kpack_split: bool) -> PathBuf {
    let artifacts = dir.join("artifacts");
    let summary = example_artifacts::write_example(
        &artifacts,
        &example_artifacts::ExampleOptions { kpack_split, ..Default::default() },
    )
    .expect("generate the bundled example");
    assert!(summary.warnings.is_empty(), "the example is incomplete: {}", summary.warnings.join("; "));
    artifacts
}

/// A `PackageConfig` as the CLI would make it for `artifacts` → `--dest-dir dest`, with
/// defaults: archives land in `dest/dist/` (SPEC §2).
pub fn package_config(artifacts: &Path, dest: &Path) -> packager::PackageConfig {
    use packager::config::{FamilyRequest, OutputMode};
    packager::PackageConfig {
        artifacts_dir: artifacts.to_path_buf(),
        dest_dir: dest.to_path_buf(),
        version: "7.12.0.dev0".to_owned(),
        version_suffix: String::new(),
        platform_tag: packager::config::PlatformTag::Fixed(packager::platform::host_platform_tag()),
        build_os: None,
        build_time: packager::BuildTime::DEFAULT,
        started: std::time::SystemTime::now(),
        output: OutputMode::Archives(archive_settings()),
        absolute_rpath: packager::config::AbsoluteRpath::Remove,
        variants: packager::config::DeviceVariants::Off,
        sbom: packager::config::Sbom::Write { checkout: None },
        only: Vec::new(),
        families: FamilyRequest::default(),
        scratch_dir: None,
    }
}

/// The CLI's default archive settings: deflate level 6, an uncompressed devel tarball,
/// reuse of unchanged members.
pub fn archive_settings() -> packager::config::ArchiveSettings {
    use packager::config::{ArchiveSettings, DevelTarballCompression, Reuse, WheelCompression};
    ArchiveSettings {
        wheel_compression: WheelCompression::Deflate { level: 6 },
        devel_tarball_compression: DevelTarballCompression::None,
        reuse: Reuse::FromPrevious,
    }
}

/// `len` bytes that deflate cannot shrink (xorshift), so an archive member of them is as
/// large on disk as it is.
pub fn noise(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// The names in `dir`, sorted, but the destination's lock file.
pub fn names_but_the_lock(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .expect("read the destination")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".rocm-packager.lock")
        .collect();
    names.sort();
    names
}

/// The install tree of the example's core artifact: its files go into `rocm-sdk-core`.
pub fn core_stage(artifacts: &Path) -> PathBuf {
    artifacts.join("core-runtime_lib_generic/core/ROCR-Runtime/stage")
}

/// Makes the core wheel about `len` bytes larger: a file of [`noise`] in the core artifact.
pub fn add_noise(artifacts: &Path, len: usize) -> PathBuf {
    let dir = core_stage(artifacts).join("share/hostile");
    fs_err::create_dir_all(&dir).expect("mkdir");
    let path = dir.join("noise.bin");
    fs_err::write(&path, noise(len)).expect("write noise");
    path
}
