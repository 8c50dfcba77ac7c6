//! A packaging run as its caller asks for it ([`PackageRequest`], flags as given, each a
//! plain value), resolved once into the library's [`PackageConfig`] by [`resolve`]: the
//! flag checks, finding the TheRock checkout, reading its `version.json` and GPU target
//! table, the defaults (SPEC §2), and the bundled example when there is neither an
//! artifacts directory nor a checkout. The command line only parses flags into a request.
//!
//! Owns: those checks, their order and their words, and the defaults. Does not own: the
//! flags' spelling (`xtask`), the example's content (the `example-artifacts` crate, which
//! the caller runs through [`resolve`]'s `example` argument), the pipeline (the stages).

use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

use crate::config::{
    AbsoluteRpath, BuildTime, DeviceVariants, FamilyRequest, OutputMode, PackageConfig, PackageGroup, PlatformTag, Sbom,
};
use crate::input::{catalog, therock, CatalogError};
use crate::plan::PlanError;
use crate::platform::BuildOs;

/// The version of the bundled example, packaged when no checkout says another.
pub const EXAMPLE_VERSION: &str = "7.12.0.dev0";

/// The default `--dest-dir` inside a TheRock checkout, relative to its root.
pub const CHECKOUT_DEST_DIR: &str = "build/python-packages";

/// A packaging run as asked for: every flag as given (`None` where it was not), plus what
/// the caller read of its surroundings (the current directory, `SOURCE_DATE_EPOCH`).
#[derive(Clone, Debug)]
pub struct PackageRequest {
    /// Where the checkout is looked for when `therock_dir` is not given.
    pub cwd: PathBuf,
    pub artifact_dir: Option<PathBuf>,
    pub therock_dir: Option<PathBuf>,
    pub dest_dir: Option<PathBuf>,
    /// An empty version means none given, as TheRock's CI passes it.
    pub version: Option<String>,
    pub version_suffix: String,
    pub platform_tag: Option<String>,
    pub build_os: Option<BuildOs>,
    pub build_time: BuildTime,
    /// When the run started, by the caller's clock (the identity cache's racy rule).
    pub started: std::time::SystemTime,
    pub output: OutputMode,
    pub absolute_rpath: AbsoluteRpath,
    pub variants: DeviceVariants,
    /// `--no-sbom` not given.
    pub sbom: bool,
    pub only: Vec<PackageGroup>,
    /// `--linux-amdgpu-families` / `--windows-amdgpu-families` as given (comma or semicolon
    /// lists).
    pub linux_amdgpu_families: Option<String>,
    pub windows_amdgpu_families: Option<String>,
}

/// Generates the bundled example and says where it is (the caller's: the generator is a
/// crate beside this one).
pub type ExampleSource<'a> = &'a dyn Fn() -> Result<PathBuf, Box<dyn std::error::Error + Send + Sync>>;

/// Why a request cannot become a run.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("--dest-dir is a file, not a directory: {}", path.display())]
    DestDirIsFile { path: PathBuf },
    #[error("--dest-dir cannot be created: {} is a file, not a directory", file.display())]
    DestDirUnderFile { path: PathBuf, file: PathBuf },
    #[error(
        "no --version given, and {} is not inside a TheRock checkout to read the version from",
        cwd.display()
    )]
    NoVersion { cwd: PathBuf },
    #[error(transparent)]
    Input(#[from] CatalogError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The bundled example could not be generated (the generator's own error).
    #[error(transparent)]
    Example(Box<dyn std::error::Error + Send + Sync>),
}

impl Diagnostic for RequestError {
    fn hint(&self) -> Option<&'static str> {
        match self {
            RequestError::DestDirIsFile { .. } | RequestError::DestDirUnderFile { .. } => {
                Some("pass a directory for --dest-dir (a missing one is created)")
            }
            RequestError::NoVersion { .. } => Some(
                "pass --version (such as --version 7.12.0.dev0), or --therock-dir naming the TheRock checkout the \
                 artifacts were built from",
            ),
            RequestError::Input(error) => error.hint(),
            RequestError::Plan(error) => error.hint(),
            RequestError::Example(_) => None,
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            RequestError::DestDirIsFile { path } | RequestError::DestDirUnderFile { path, .. } => Some(path),
            RequestError::NoVersion { .. } | RequestError::Example(_) => None,
            RequestError::Input(error) => error.path(),
            RequestError::Plan(error) => error.path(),
        }
    }
}

/// Turns `request` into the run's config. Each flag that names a path is checked before
/// anything is derived from it, so a wrong path is the first thing reported, not a later
/// symptom of it.
pub fn resolve(request: &PackageRequest, example: ExampleSource<'_>) -> Result<PackageConfig, RequestError> {
    let checkout = match &request.therock_dir {
        Some(dir) if therock::is_checkout(dir) => Some(dir.clone()),
        Some(dir) => return Err(CatalogError::TherockDirNotACheckout { path: dir.clone() }.into()),
        None => therock::find_checkout(&request.cwd),
    };
    if let Some(dir) = &request.dest_dir {
        check_dest_dir(dir)?;
    }
    // The reference treats an empty --version as none given; TheRock's CI passes
    // `--version="${{ inputs.package_version }}"`, empty unless a version was asked for.
    let given_version = request.version.as_ref().filter(|version| !version.is_empty());
    // Checked before the example or the artifacts are read, so the error names the version
    // alone and not a directory that has nothing to do with it.
    if let Some(version) = given_version {
        crate::plan::version::check_pep440(version)
            .map_err(|reason| PlanError::BadVersion { version: version.clone(), reason })?;
    }
    let (artifacts_dir, example_version) = match (&request.artifact_dir, &checkout) {
        (Some(dir), _) => {
            // A missing, wrong or non-directory one is the first thing to report, before
            // the version or the checkout are looked for (the catalog would say the same,
            // later).
            catalog::check_artifacts_dir(dir)?;
            (dir.clone(), None)
        }
        (None, Some(root)) => (checkout_artifacts(root)?, None),
        (None, None) => (example().map_err(RequestError::Example)?, Some(EXAMPLE_VERSION.to_owned())),
    };
    let version = match (given_version, &checkout, example_version) {
        (Some(version), _, _) => version.clone(),
        (None, Some(root), _) => therock::read_version(root)?,
        (None, None, Some(version)) => version,
        (None, None, None) => return Err(RequestError::NoVersion { cwd: request.cwd.clone() }),
    };
    let dest_dir = match (&request.dest_dir, &checkout) {
        (Some(dir), _) => dir.clone(),
        // Where TheRock's CMake and CI put Python packages, so `pip install
        // --find-links=build/python-packages/dist` works from the checkout's root.
        (None, Some(root)) => root.join(CHECKOUT_DEST_DIR),
        (None, None) => PathBuf::from("."),
    };
    let expansion = match &checkout {
        Some(root) => therock::read_amdgpu_targets(root)?,
        None => Default::default(),
    };
    let families = FamilyRequest {
        linux: split_list(request.linux_amdgpu_families.as_deref()),
        windows: split_list(request.windows_amdgpu_families.as_deref()),
        expansion,
    };
    Ok(PackageConfig {
        artifacts_dir,
        dest_dir,
        version,
        version_suffix: request.version_suffix.clone(),
        build_os: request.build_os,
        platform_tag: match &request.platform_tag {
            Some(tag) => PlatformTag::parse(tag),
            None => PlatformTag::Default(crate::platform::host_platform_tag()),
        },
        build_time: request.build_time,
        started: request.started,
        output: request.output,
        absolute_rpath: request.absolute_rpath,
        variants: request.variants,
        // The checkout names the sources of the third-party libraries the wheels bundle.
        sbom: if request.sbom { Sbom::Write { checkout: checkout.clone() } } else { Sbom::Omit },
        only: request.only.clone(),
        families,
        scratch_dir: None,
    })
}

/// `--dest-dir` must be a directory or creatable as one: a file there (or in its path)
/// would otherwise surface as `File exists (os error 17)` after the whole plan is made.
fn check_dest_dir(dir: &Path) -> Result<(), RequestError> {
    let Some(existing) = dir.ancestors().find(|ancestor| ancestor.exists()) else { return Ok(()) };
    if existing.is_dir() {
        Ok(())
    } else if existing == dir {
        Err(RequestError::DestDirIsFile { path: dir.to_path_buf() })
    } else {
        Err(RequestError::DestDirUnderFile { path: dir.to_path_buf(), file: existing.to_path_buf() })
    }
}

/// The checkout's `build/artifacts`. A checkout not built yet is an error: packaging the
/// bundled example under the checkout's version would look like a real build.
fn checkout_artifacts(root: &Path) -> Result<PathBuf, CatalogError> {
    let dir = root.join("build/artifacts");
    match std::fs::metadata(&dir) {
        Ok(metadata) if metadata.is_dir() => Ok(dir),
        Ok(_) => Err(CatalogError::MissingCheckoutArtifacts { path: dir }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Err(CatalogError::MissingCheckoutArtifacts { path: dir })
        }
        Err(source) => Err(CatalogError::Read { path: dir, source }),
    }
}

fn split_list(text: Option<&str>) -> Vec<String> {
    text.unwrap_or("").split([',', ';']).map(str::trim).filter(|part| !part.is_empty()).map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn request(cwd: &Path) -> PackageRequest {
        PackageRequest {
            cwd: cwd.to_path_buf(),
            artifact_dir: None,
            therock_dir: None,
            dest_dir: None,
            version: Some(String::new()),
            version_suffix: String::new(),
            platform_tag: None,
            build_os: None,
            build_time: BuildTime::DEFAULT,
            started: std::time::SystemTime::now(),
            output: OutputMode::Trees,
            absolute_rpath: AbsoluteRpath::Remove,
            variants: DeviceVariants::Off,
            sbom: true,
            only: Vec::new(),
            linux_amdgpu_families: Some("gfx94X-dcgpu; gfx110X-all,".to_owned()),
            windows_amdgpu_families: None,
        }
    }

    /// Outside a checkout and without `--artifact-dir`, the example is generated once and
    /// its version used (an empty `--version` is none); a `--dest-dir` that is a file is
    /// refused before the example is generated.
    #[test]
    fn outside_a_checkout_the_example_is_packaged_and_a_bad_flag_comes_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let example_dir = dir.path().join("example");
        let calls = Cell::new(0);
        let example = || {
            calls.set(calls.get() + 1);
            Ok(example_dir.clone())
        };
        let config = resolve(&request(dir.path()), &example).expect("resolves");
        assert_eq!(calls.get(), 1);
        assert_eq!(config.artifacts_dir, example_dir);
        assert_eq!(config.version, EXAMPLE_VERSION);
        assert_eq!(config.dest_dir, PathBuf::from("."));
        assert_eq!(config.families.linux, ["gfx94X-dcgpu", "gfx110X-all"]);
        assert!(matches!(config.sbom, Sbom::Write { checkout: None }));

        let file = dir.path().join("file");
        fs_err::write(&file, "").expect("write");
        let mut bad = request(dir.path());
        bad.dest_dir = Some(file.join("sub"));
        let error = resolve(&bad, &example).expect_err("a file in --dest-dir's path");
        assert!(matches!(&error, RequestError::DestDirUnderFile { file: found, .. } if *found == file), "{error}");
        assert_eq!(calls.get(), 1, "the example was generated for a refused request");
    }
}
