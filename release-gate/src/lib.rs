//! `verify --dist`: reads a built `dist/` back, trusting nothing about the tool that built
//! it, and reports every violation of the contract (SPEC §2, §5, §6).
//!
//! Owns: walking the dist tree, running every check and assembling [`VerifyReport`].
//! Works on the reference packager's output too (family sub-directories, DT_RUNPATH,
//! hyphenated package directories). Does not own: printing (xtask) or building anything.
//!
//! Children: `archive` (zip/tar reading, member paths, dist-info; `local_headers`: each
//! member's local header against its central entry), `record` (RECORD),
//! `metadata` (names, versions, METADATA/WHEEL), `elf_checks` (structure, RPATH), `devel`
//! (devel tarball), `closure` (simulated install), `symbols` (every import binds in the
//! libraries it loads), `set` (cross-package rules), `third_party` (wheels built on the
//! SDK, judged with it), `same_release` (which versions are one release), `variants` (wheel
//! variant files), `sbom` (the bill of materials, read by its own CycloneDX reader,
//! `sbom::schema`), `report`
//! (the result); `kpack` (device code split into kpack archives: the archives, host
//! binaries' HIPK wrappers), `device_split` (the rules across a split set, the runtime's
//! search); `platform`, `targets` and `escape` are the gate's own words for a
//! platform tag's machine, GPU targets and printable text. ELF files are read through the
//! `elf-audit` crate (as is the glibc portability arithmetic), PE files through goblin.
//!
//! A crate of its own, apart from the crates that plan and write packages (`packager`,
//! `elf-rpath`, `archive-write`): it shares no code with what it judges, so a bug there
//! cannot hide from it (`xtask/tests/layers.rs` keeps it so).

mod archive;
mod closure;
mod devel;
mod device_split;
mod elf_checks;
mod escape;
mod kpack;
mod local_headers;
mod member_check;
mod metadata;
mod pe;
mod platform;
mod record;
mod report;
mod same_release;
mod sbom;
mod sdk_names;
mod set;
mod symbols;
mod targets;
mod third_party;
mod variants;
mod windows_paths;
mod zip_index;

use std::io::Read;
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

pub use device_split::ALLOW_RUNTIME_WITHOUT_KPACK_FLAG;
pub use report::{
    ArchiveKind, Check, DeviceCodeCounts, Finding, PackageReport, Portability, VerifyReport, Violation, Warning,
};
pub use same_release::release_admits;
pub use windows_paths::{WindowsPaths, DEFAULT_WINDOWS_PREFIX, MAX_DIRECTORY, MAX_PATH};

/// What the gate finds wrong with a CycloneDX 1.6 JSON document on its own (a wheel's bill
/// of materials, SPEC §10): breaks of the 1.6 schema, in the part of it our documents use,
/// and breaks of the specification's rules the schema cannot express (`bom-ref`s unique
/// and resolving, purls that parse). `verify --dist` reports both for every wheel; the
/// tests hold the first against the CycloneDX project's own validator.
pub fn cyclonedx_findings(text: &str) -> CycloneDxFindings {
    let reading = sbom::schema::read(text);
    CycloneDxFindings { schema: reading.schema, rules: reading.rules }
}

/// [`cyclonedx_findings`]: each finding as `{path}: {what}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CycloneDxFindings {
    pub schema: Vec<String>,
    pub rules: Vec<String>,
}

use archive::Archive;
use report::Findings;

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("dist directory not found: {}", path.display())]
    NotADirectory { path: PathBuf },
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Diagnostic for VerifyError {
    fn path(&self) -> Option<&Path> {
        match self {
            VerifyError::NotADirectory { path } | VerifyError::Read { path, .. } => Some(path),
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::NotADirectory { .. } => {
                Some("point --dist at the dist/ directory under the --dest-dir of `cargo xtask package`")
            }
            Self::Read { .. } => None,
        }
    }
}

/// Checks every `*.whl` and `*.tar.gz` under `dist` (recursively). Problems in the packages
/// are findings in the report; only an unreadable dist tree is an error.
pub fn verify_dist(dist: &Path) -> Result<VerifyReport, VerifyError> {
    verify_dist_with(dist, &WindowsPaths::default())
}

/// [`verify_dist`], judging Windows wheels' depth under `windows` (SPEC §7).
pub fn verify_dist_with(dist: &Path, windows: &WindowsPaths) -> Result<VerifyReport, VerifyError> {
    verify_dist_with_options(dist, &VerifyOptions { windows: windows.clone(), ..VerifyOptions::default() })
}

/// How `verify --dist` judges what depends on where the set is used.
#[derive(Clone, Debug, Default)]
pub struct VerifyOptions {
    /// Windows wheels' depth (SPEC §7).
    pub windows: WindowsPaths,
    /// A HIP runtime without the kpack loader in a split set is a warning, not a violation
    /// (`--allow-runtime-without-kpack`: the runtime is replaced before use).
    pub allow_runtime_without_kpack: bool,
}

/// [`verify_dist`] with `options`.
pub fn verify_dist_with_options(dist: &Path, options: &VerifyOptions) -> Result<VerifyReport, VerifyError> {
    let windows = &options.windows;
    if !dist.is_dir() {
        return Err(VerifyError::NotADirectory { path: dist.to_path_buf() });
    }
    let mut files = Vec::new();
    collect_archives(dist, &mut files)?;
    files.sort();
    let (index_files, files): (Vec<PathBuf>, Vec<PathBuf>) =
        files.into_iter().partition(|path| is_variants_index(path));
    let archives: Vec<Archive> =
        files.par_iter().map(|path| read_archive(dist, path)).collect::<Result<_, VerifyError>>()?;
    let indexes: Vec<variants::VariantsIndex> =
        index_files.iter().map(|path| read_variants_index(dist, path)).collect();
    let mut findings = Findings::default();
    let mut archives = set::dedupe_file_names(archives, &mut findings);
    for archive in &mut archives {
        findings.extend(std::mem::take(&mut archive.findings));
    }
    set::check_set(&archives, &mut findings);
    variants::check_variants(&archives, &indexes, &mut findings);
    let install = closure::build_install(&archives);
    closure::check_closure(&archives, &install, &mut findings);
    symbols::check_symbols(&archives, &install, &mut findings);
    third_party::check_third_party(&archives, &mut findings);
    device_split::check_split_sets(&archives, &install, options.allow_runtime_without_kpack, &mut findings);
    drop(install);
    let wheels: Vec<pe::WheelPe<'_>> = archives
        .iter()
        .map(|archive| pe::WheelPe { file: &archive.file, installed: &archive.installed, pe_files: &archive.pe_files })
        .collect();
    pe::check_imports(&wheels, &mut findings);
    let portability: Vec<Option<Portability>> =
        archives.iter().map(|archive| check_portability(archive, windows, &mut findings)).collect();
    let mut by_file = findings.into_by_file();
    let mut packages: Vec<PackageReport> = archives
        .into_iter()
        .zip(portability)
        .map(|(archive, portability)| {
            let (violations, warnings) = by_file.remove(&archive.file).unwrap_or_default();
            let n_devel_elf: usize = archive.devel.iter().map(|tree| tree.elf_files.len()).sum();
            let mut foreign_elf_files = archive.elf_scope.foreign;
            foreign_elf_files.sort();
            let device_code = DeviceCodeCounts {
                kpack_archives: archive.kpacks.len(),
                kpack_code_objects: archive.kpacks.iter().map(|kpack| kpack.n_listed).sum(),
                hipk_wrappers: archive
                    .fat_binaries
                    .iter()
                    .flat_map(|binary| &binary.wrappers)
                    .filter(|wrapper| matches!(wrapper, kpack::Wrapper::Split { .. }))
                    .count(),
            };
            PackageReport {
                n_elf_files: archive.elf_files.len() + n_devel_elf,
                device_code,
                file: archive.file,
                locations: archive.locations,
                kind: archive.kind,
                name: archive.name,
                version: archive.version,
                sha256: archive.sha256,
                n_members: archive.n_members,
                n_gpu_code_objects: archive.elf_scope.n_gpu_code_objects,
                foreign_elf_files,
                portability,
                violations,
                warnings,
            }
        })
        .collect();
    for index in indexes {
        let (violations, warnings) = by_file.remove(&index.file).unwrap_or_default();
        packages.push(index_report(index, violations, warnings));
    }
    packages.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(VerifyReport { dist: dist.to_path_buf(), packages })
}

/// Sorted walk; symlinked directories are not followed (a dist tree has none).
fn collect_archives(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), VerifyError> {
    let read_error = |source| VerifyError::Read { path: dir.to_path_buf(), source };
    let mut entries: Vec<_> =
        std::fs::read_dir(dir).map_err(read_error)?.collect::<Result<_, _>>().map_err(read_error)?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        let file_type = entry.file_type().map_err(|source| VerifyError::Read { path: path.clone(), source })?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if file_type.is_dir() {
            collect_archives(&path, files)?;
        } else if name.ends_with(".whl") || name.ends_with(".tar.gz") || name.ends_with(variants::INDEX_SUFFIX) {
            files.push(path);
        }
    }
    Ok(())
}

fn read_archive(dist: &Path, path: &Path) -> Result<Archive, VerifyError> {
    let location = path.strip_prefix(dist).unwrap_or(path).to_path_buf();
    let file = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let metadata = std::fs::metadata(path).map_err(|source| VerifyError::Read { path: path.to_path_buf(), source })?;
    if !metadata.is_file() {
        let what = kind_of(&metadata.file_type());
        return Ok(archive::not_a_file(location, &file, what));
    }
    let sha256 = hash_file(path)?;
    Ok(if file.ends_with(".whl") {
        archive::read_wheel(path, location, &file, sha256)
    } else {
        archive::read_sdist(path, location, &file, sha256)
    })
}

/// A variants index lists a few properties per variant: a megabyte is thousands of them.
const MAX_VARIANTS_INDEX_BYTES: u64 = 1 << 20;

fn is_variants_index(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name.to_string_lossy().ends_with(variants::INDEX_SUFFIX))
}

/// A `-variants.json` file: its text (or why it has none, a violation of that file alone)
/// and hash. Identical copies in family sub-directories are one index, as for archives.
fn read_variants_index(dist: &Path, path: &Path) -> variants::VariantsIndex {
    let location = path.strip_prefix(dist).unwrap_or(path).to_path_buf();
    let file = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    // Opened without blocking, and read no further than an index file can be: a FIFO or a
    // huge file under the name must not stall or flood the gate (SPEC §5).
    let mut bytes = Vec::new();
    let read = open_regular(path).and_then(|file| file.take(MAX_VARIANTS_INDEX_BYTES + 1).read_to_end(&mut bytes));
    let text = match read {
        Err(error) => Err(format!("cannot read it: {error}")),
        Ok(_) if bytes.len() as u64 > MAX_VARIANTS_INDEX_BYTES => {
            Err(format!("is larger than {MAX_VARIANTS_INDEX_BYTES} bytes, more than any variants index needs"))
        }
        Ok(_) => String::from_utf8(bytes.clone()).map_err(|_| "is not UTF-8 text".to_owned()),
    };
    let sha256: String = Sha256::digest(&bytes).iter().map(|byte| format!("{byte:02x}")).collect();
    variants::VariantsIndex { name: variants::parse_index_name(&file), file, locations: vec![location], sha256, text }
}

fn index_report(index: variants::VariantsIndex, violations: Vec<Violation>, warnings: Vec<Warning>) -> PackageReport {
    let (name, version) = index.name.map_or((None, None), |(name, version)| (Some(name), Some(version)));
    PackageReport {
        file: index.file,
        locations: index.locations,
        kind: ArchiveKind::VariantsIndex,
        name,
        version,
        sha256: index.sha256,
        n_members: 0,
        n_elf_files: 0,
        n_gpu_code_objects: 0,
        device_code: DeviceCodeCounts::default(),
        foreign_elf_files: Vec::new(),
        portability: None,
        violations,
        warnings,
    }
}

/// Opens an archive the walk found as a regular file, without blocking: a FIFO put in
/// its place since is an error, never a wait for a writer. The gate's own copy of the
/// writer side's one type-checked open (archive-write's `open_regular`), on purpose: the
/// gate shares no code with what it judges.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC).open(path)?;
    let metadata = file.metadata()?;
    match metadata.is_file() {
        true => Ok(file),
        false => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("is {}, not a regular file", kind_of(&metadata.file_type())),
        )),
    }
}

/// A file type in words, for messages.
fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symlink"
    } else {
        "a regular file"
    }
}

fn hash_file(path: &Path) -> Result<String, VerifyError> {
    let read_error = |source| VerifyError::Read { path: path.to_path_buf(), source };
    let mut file = open_regular(path).map_err(read_error)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).map_err(read_error)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Symbol-version needs of a wheel's host ELF files (devel tarball included), and a
/// violation when its manylinux tag promises an older glibc than they need.
fn check_portability(archive: &Archive, windows: &WindowsPaths, findings: &mut Findings) -> Option<Portability> {
    let wheel_name = archive.wheel_name.as_ref()?;
    let mut needs = elf_audit::VersionNeeds::default();
    let devel_elves = archive.devel.iter().flat_map(|tree| tree.elf_files.iter());
    for member in archive.elf_files.iter().chain(devel_elves) {
        needs.add(&member.elf.needed_versions, elf_audit::arch_name(member.elf.machine, member.elf.little_endian));
    }
    let portability = Portability {
        glibc: needs.glibc(),
        glibcxx: needs.glibcxx(),
        cxxabi: needs.cxxabi(),
        manylinux_tag: needs.manylinux_tag(),
        windows_deepest_path: None,
        windows_path_length: None,
    };
    let deepest = windows_paths::check_windows_paths(archive, windows, findings);
    let (windows_deepest_path, windows_path_length) = deepest.map_or((None, None), |(path, n)| (Some(path), Some(n)));
    let portability = Portability { windows_deepest_path, windows_path_length, ..portability };
    for platform in wheel_name.platform.split('.') {
        let (Some(promised), Some(needed)) = (elf_audit::tag_glibc_minor(platform), needs.glibc_minor()) else {
            continue;
        };
        if needed > promised {
            findings.violation(
                &archive.file,
                None,
                Check::Portability,
                format!(
                    "tag {platform} promises glibc 2.{promised}, but the ELF files need GLIBC_{}",
                    portability.glibc.as_deref().unwrap_or_default()
                ),
            );
        }
    }
    Some(portability)
}
