//! `--platform-tag auto`: gives each wheel the most widely installable `manylinux_2_X_{arch}`
//! tag its files allow, as auditwheel would judge them, before a byte of it is written.
//!
//! A wheel's host ELF files (the platform package's, its launchers', and for the devel
//! wheel those in the tarball) are read where they lie: their `.gnu.version_r` gives the
//! newest `GLIBC_`/`GLIBCXX_`/`CXXABI_`/`GCC_` versions they need (the glibc floor
//! `verify --dist` computes, from the same reader), their DT_NEEDED the libraries they
//! load. The tag is the highest-priority policy that provides those versions and lets the
//! wheel leave to the host every needed library that no package of this build ships. Any
//! other library makes the wheel unfit for every manylinux tag: the run fails naming each
//! file and library (PyPI would take the wheel, and it would fail to load on the machines
//! that lack the library).
//!
//! Owns: the tag choice. Does not own: the policy data, symbol-version arithmetic and ELF
//! reading (the `elf-audit` crate, which the release gate reads files with too), RPATH
//! closure inside the install (`verify --dist` checks that it resolves).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use diagnostic::Diagnostic;

use rayon::prelude::*;

use crate::identity::PlatformTags;
use crate::launcher::LauncherTemplate;
use crate::plan::{DevelEntry, PackagePlan, Plan, PlannedFile};
use elf_audit::{self as policy, arch_name, elf_identity, parse_elf, Architecture, ElfFile, ElfWindow, VersionNeeds};

/// Most lines of needs an error lists before it says how many more there are.
const MAX_LISTED: usize = 40;

#[derive(Debug, thiserror::Error)]
pub enum TagError {
    #[error(
        "{dist_name} can carry no manylinux tag: its files need libraries that no package of this build ships \
         and that the manylinux policy does not let a wheel leave to the system:\n{}",
        list_needs(needs)
    )]
    OutsidePolicy { dist_name: String, needs: Vec<ForeignNeed> },
    #[error("{dist_name} can carry no manylinux tag: its files need {}, newer than manylinux_2_{newest} provides", needed.join(", "))]
    TooNew { dist_name: String, needed: Vec<String>, newest: u32 },
    #[error("{dist_name}: no manylinux policy exists for {arch}")]
    UnknownArch { dist_name: String, arch: String },
    #[error("cannot read the ELF file {} to choose a platform tag: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
}

impl Diagnostic for TagError {
    fn hint(&self) -> Option<&'static str> {
        match self {
            TagError::OutsidePolicy { .. } => Some(
                "ship those libraries in the build (add their artifacts) or link them statically; a plain tag \
                 (--platform-tag linux_x86_64) makes wheels for a local dist/, not for PyPI",
            ),
            TagError::TooNew { .. } => Some(
                "build in an older environment (TheRock's manylinux build container), or give a plain \
                 --platform-tag (linux_x86_64)",
            ),
            TagError::UnknownArch { .. } => Some("give --platform-tag by hand"),
            TagError::Unreadable { .. } => None,
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            TagError::Unreadable { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// One library a file needs that neither the build nor the policy provides.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ForeignNeed {
    /// The member path inside the wheel (or the devel tarball).
    pub member: String,
    pub library: String,
}

fn list_needs(needs: &[ForeignNeed]) -> String {
    let mut lines: Vec<String> =
        needs.iter().take(MAX_LISTED).map(|need| format!("  {} needs {}", need.member, need.library)).collect();
    if needs.len() > MAX_LISTED {
        lines.push(format!("  ... and {} more", needs.len() - MAX_LISTED));
    }
    lines.join("\n")
}

/// What a wheel's host ELF files need from the system.
#[derive(Debug, Default)]
struct WheelNeeds {
    versions: VersionNeeds,
    /// DT_NEEDED name → the members that need it, for names no package of the build ships.
    libraries: BTreeMap<String, BTreeSet<String>>,
}

/// A file to read: its member path and where its bytes are.
enum Source {
    Disk { member: String, path: Arc<Path> },
    Launcher { member: String },
}

/// The tag of each package in `packages` (by distribution name), chosen from its files.
/// Libraries count as shipped when any package of `plan` ships a file of that name, so a
/// CI matrix job (`--only`) chooses the same tags as the full run.
pub fn choose_tags(
    plan: &Plan,
    packages: &[&PackagePlan],
    launcher: Option<&LauncherTemplate>,
) -> Result<PlatformTags, crate::Error> {
    let host = crate::platform::host_machine();
    let shipped: BTreeSet<&str> = plan
        .packages
        .iter()
        .flat_map(|package| package.files.keys())
        .filter_map(|rel| rel.as_str().rsplit('/').next())
        .collect();
    let launcher_file = match launcher {
        Some(template) => {
            let mut window = ElfWindow::default();
            window.push(template.as_bytes());
            let parsed = parse_elf(&window)
                .map_err(|reason| TagError::Unreadable { path: PathBuf::from("the compiled launcher"), reason })?;
            Some(parsed)
        }
        None => None,
    };
    let mut tags = BTreeMap::new();
    for package in packages {
        let sources = sources_of(package)?;
        // Sorted sources, and an indexed parallel iterator keeps their order.
        let files: Vec<Option<(String, ElfFile)>> = sources
            .par_iter()
            .map(|source| read_host_elf(source, host, launcher_file.as_ref()))
            .collect::<Result<_, TagError>>()?;
        let mut needs = WheelNeeds::default();
        for (member, file) in files.into_iter().flatten() {
            needs.versions.add(&file.needed_versions, arch_name(file.machine, file.little_endian));
            for library in &file.needed {
                if !shipped.contains(library.as_str()) {
                    needs.libraries.entry(library.clone()).or_default().insert(member.clone());
                }
            }
        }
        let tag = tag_for(&package.names.distribution, &needs, host.as_str())?;
        tags.insert(package.role.clone(), tag);
    }
    Ok(tags)
}

/// The tag of a wheel that is not ours (one linked to the SDK, SPEC §11): the most widely
/// installable `manylinux_2_X_{arch}` its host ELF `files` (member path, as read) allow,
/// leaving to the host every needed library not `shipped` with the wheel or its
/// requirements, as `--platform-tag auto` chooses ours.
pub fn tag_for_files(
    dist_name: &str,
    files: &[(String, ElfFile)],
    shipped: &BTreeSet<String>,
    arch: &str,
) -> Result<String, TagError> {
    let mut needs = WheelNeeds::default();
    for (member, file) in files {
        needs.versions.add(&file.needed_versions, arch_name(file.machine, file.little_endian));
        for library in file.needed.iter().filter(|library| !shipped.contains(*library)) {
            needs.libraries.entry(library.clone()).or_default().insert(member.clone());
        }
    }
    tag_for(dist_name, &needs, arch)
}

/// Every file of `package` that may be ELF, with its member path, in member order.
fn sources_of(package: &PackagePlan) -> Result<Vec<Source>, crate::Error> {
    let platform_dir = &package.names.platform_dir;
    let mut sources = Vec::new();
    for (rel, file) in &package.files {
        let member = platform_dir.member(rel);
        match file {
            PlannedFile::Copy { source, .. } | PlannedFile::PatchRpath { source, .. } => {
                sources.push(Source::Disk { member, path: Arc::clone(source) });
            }
            PlannedFile::Launcher { .. } => sources.push(Source::Launcher { member }),
            PlannedFile::Generated { .. } => {}
        }
    }
    if let Some(tree) = &package.devel_tree {
        tree.walk_planned(&mut |rel, entry| {
            if let DevelEntry::File {
                file: PlannedFile::Copy { source, .. } | PlannedFile::PatchRpath { source, .. },
            } = entry
            {
                sources.push(Source::Disk { member: platform_dir.member(rel), path: Arc::clone(source) });
            }
            Ok(())
        })?;
    }
    Ok(sources)
}

/// The parsed file, when it is an ELF file of the host machine (AMDGPU code objects and
/// other machines' files are data to the wheel's platform, as `verify --dist` treats them).
fn read_host_elf(
    source: &Source,
    host: Architecture,
    launcher: Option<&ElfFile>,
) -> Result<Option<(String, ElfFile)>, TagError> {
    let (member, path) = match source {
        Source::Launcher { member } => return Ok(launcher.map(|file| (member.clone(), file.clone()))),
        Source::Disk { member, path } => (member, path),
    };
    let unreadable = |reason: String| TagError::Unreadable { path: path.to_path_buf(), reason };
    let Some(window) = ElfWindow::read_file(path).map_err(|error| unreadable(error.to_string()))? else {
        return Ok(None);
    };
    let Some(identity) = elf_identity(window.head()) else { return Ok(None) };
    let runs_here = identity.machine == host.elf_machine()
        && identity.is_64 == host.is_64()
        && identity.little_endian == host.is_little_endian();
    if !runs_here {
        return Ok(None);
    }
    let file = parse_elf(&window).map_err(unreadable)?;
    Ok(Some((member.clone(), file)))
}

/// The highest-priority policy for `arch` that provides the versions the wheel needs and
/// allows every library it leaves to the host.
fn tag_for(dist_name: &str, needs: &WheelNeeds, arch: &str) -> Result<String, TagError> {
    let arch = needs.versions.arch().unwrap_or(arch);
    let for_arch: Vec<&policy::Policy> = policy::policies().iter().filter(|policy| policy.supports(arch)).collect();
    let Some(newest) = for_arch.last() else {
        return Err(TagError::UnknownArch { dist_name: dist_name.to_owned(), arch: arch.to_owned() });
    };
    let fitting: Vec<&policy::Policy> =
        for_arch.iter().copied().filter(|policy| needs.versions.fits(policy, arch)).collect();
    let Some(most_permissive) = fitting.last() else {
        return Err(TagError::TooNew {
            dist_name: dist_name.to_owned(),
            needed: needs.versions.beyond(newest, arch),
            newest: newest.glibc_minor(),
        });
    };
    let allows_all = |policy: &&&policy::Policy| needs.libraries.keys().all(|library| policy.allows_library(library));
    if let Some(policy) = fitting.iter().find(allows_all) {
        return Ok(policy.tag(arch));
    }
    // Named against the newest fitting policy: what even that one refuses, every one does.
    let foreign: Vec<ForeignNeed> = needs
        .libraries
        .iter()
        .filter(|(library, _)| !most_permissive.allows_library(library))
        .flat_map(|(library, members)| {
            members.iter().map(|member| ForeignNeed { member: member.clone(), library: library.clone() })
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Err(TagError::OutsidePolicy { dist_name: dist_name.to_owned(), needs: foreign })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(versions: &[&str], libraries: &[(&str, &str)]) -> WheelNeeds {
        let mut needs = WheelNeeds::default();
        needs.versions.add(&versions.iter().map(|v| v.to_string()).collect::<Vec<_>>(), Some("x86_64"));
        for (member, library) in libraries {
            needs.libraries.entry(library.to_string()).or_default().insert(member.to_string());
        }
        needs
    }

    fn check(versions: &[&str], libraries: &[(&str, &str)]) -> Result<String, String> {
        tag_for("rocm-sdk-core", &needs(versions, libraries), "x86_64").map_err(|error| error.to_string())
    }

    #[test]
    fn the_most_widely_installable_policy_that_fits() {
        assert_eq!(check(&["GLIBC_2.2.5"], &[]), Ok("manylinux_2_5_x86_64".to_owned()));
        assert_eq!(
            check(&["GLIBC_2.2.5", "GLIBC_2.34"], &[("a", "libm.so.6")]),
            Ok("manylinux_2_34_x86_64".to_owned())
        );
        assert_eq!(check(&["GLIBC_2.17", "GLIBCXX_3.4.30"], &[]), Ok("manylinux_2_35_x86_64".to_owned()));
        assert_eq!(check(&[], &[("a", "ld-linux-x86-64.so.2")]), Ok("manylinux_2_5_x86_64".to_owned()));
        // libmvec joined the policies' library lists with manylinux_2_24.
        assert_eq!(check(&["GLIBC_2.2.5"], &[("a", "libmvec.so.1")]), Ok("manylinux_2_24_x86_64".to_owned()));
    }

    #[test]
    fn a_library_outside_the_policy_is_named_with_each_file() {
        let error = check(
            &["GLIBC_2.34"],
            &[("_c/bin/b", "libnotshipped.so.1"), ("_c/lib/a.so", "libnotshipped.so.1"), ("_c/lib/a.so", "libc.so.6")],
        )
        .expect_err("refused");
        let expected = "rocm-sdk-core can carry no manylinux tag: its files need libraries that no package of this \
                        build ships and that the manylinux policy does not let a wheel leave to the system:\n  \
                        _c/bin/b needs libnotshipped.so.1\n  _c/lib/a.so needs libnotshipped.so.1";
        assert_eq!(error.to_string().trim_end(), expected);
    }

    #[test]
    fn needs_newer_than_every_policy() {
        let error = check(&["GLIBC_2.99", "GLIBCXX_3.4.30"], &[]).expect_err("refused");
        let expected =
            "rocm-sdk-core can carry no manylinux tag: its files need GLIBC_2.99, newer than manylinux_2_41 provides";
        assert_eq!(error.to_string(), expected);
    }
}
