//! Why a repair refuses a wheel or an SDK, each with what the user can do next (SPEC §11).
//!
//! Owns: [`RepairError`] and [`Problem`], the findings a wheel is refused for, listed all
//! at once. Does not own: finding them (`links`, `symbols`, `metadata`).

use std::fmt;
use std::path::{Path, PathBuf};

use diagnostic::Diagnostic;

use crate::escape::{escape, escape_path};
use crate::output::manylinux::TagError;
use archive_write::WriteError;
use elf_rpath::ElfError;

/// Most problems an error lists before it says how many more there are.
const MAX_LISTED: usize = 40;

/// One reason a member of a wheel cannot be linked to the SDK.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// The member path inside the wheel.
    pub member: String,
    pub kind: ProblemKind,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProblemKind {
    /// A DT_NEEDED found nowhere: not in the wheel (through its own RPATH entries), not in
    /// the SDK, not a manylinux system library, not allowed to be missing.
    Library {
        name: String,
        searched: Vec<String>,
        /// The SDK's library of the same name at another version (`libamdhip64.so.5 (ROCm
        /// 5.2)`): the wheel was built for another ROCm major.
        other_version: Option<String>,
    },
    /// A version node the SDK library does not define (ld.so: `version 'V' not found`).
    Version { library: String, version: String, symbols: Vec<String>, provider: String },
    /// A symbol (with the version it asks for) the SDK library does not define.
    Symbol { name: String, version: Option<String>, library: String, provider: String },
    /// An ELF file that needs SDK libraries but installs outside site-packages (a script,
    /// data), where no `$ORIGIN` path reaches the SDK's directories.
    OutsideSitePackages { scheme: String },
    /// A `Requires-Dist` on an SDK package that the SDK's release does not satisfy.
    Requirement { requirement: String, available: String },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Member and library names come from the wheel: escaped, as every message of ours.
        let member = &escape(&self.member);
        match &self.kind {
            ProblemKind::Library { name, searched: _, other_version: Some(other) } => {
                write!(
                    f,
                    "{member} needs {}, which the SDK does not ship: the SDK has {}; this wheel was built for \
                     another ROCm major",
                    escape(name),
                    escape(other)
                )
            }
            ProblemKind::Library { name, searched, other_version: None } => {
                let searched = match searched.as_slice() {
                    [] => "it has no search path of its own".to_owned(),
                    dirs => format!("searched {}", escape(&dirs.join(", "))),
                };
                write!(
                    f,
                    "{member} needs {}, which resolves nowhere: not in the wheel ({searched}), not in the SDK, \
                     not a manylinux system library",
                    escape(name)
                )
            }
            ProblemKind::Version { library, version, symbols, provider } => {
                let (library, version) = (escape(library), escape(version));
                write!(f, "{member} needs version {version} of {library}, which {provider} does not define")?;
                if !symbols.is_empty() {
                    write!(f, " (for {})", escape(&symbols.join(", ")))?;
                }
                Ok(())
            }
            ProblemKind::Symbol { name, version: Some(version), library, provider } => {
                let (name, version, library) = (escape(name), escape(version), escape(library));
                write!(f, "{member} needs symbol {name}@{version} of {library}, which {provider} does not define")
            }
            ProblemKind::Symbol { name, version: None, library, provider } => write!(
                f,
                "{member} needs symbol {}, which none of the libraries it loads defines ({} of {provider} among \
                 them)",
                escape(name),
                escape(library)
            ),
            ProblemKind::OutsideSitePackages { scheme } => write!(
                f,
                "{member} needs SDK libraries but installs into the `{}` directory, outside site-packages, where \
                 no $ORIGIN path reaches them",
                escape(scheme)
            ),
            ProblemKind::Requirement { requirement, available } => write!(
                f,
                "{member} has `Requires-Dist: {}`, which the SDK's {available} does not satisfy",
                escape(requirement)
            ),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    #[error(
        "{} is a Windows wheel: DLLs have no RPATH (the SDK's DLLs load through rocm_sdk.initialize_process), \
         so only Linux wheels are repaired",
        path.display()
    )]
    Windows { path: PathBuf },
    #[error("{} is not a wheel: {}", escape_path(path), escape(reason))]
    NotAWheel { path: PathBuf, reason: String },
    /// `reason` names members of the wheel: escaped, as every name from input.
    #[error("{}: {}", escape_path(path), escape(reason))]
    BadWheel { path: PathBuf, reason: String },
    #[error("no ROCm SDK in {}: {reason}", path.display())]
    NoSdk { path: PathBuf, reason: String },
    /// A file of an installed SDK (METADATA, RECORD) that cannot be read as one.
    #[error("cannot read {} of the SDK: {source}", escape_path(path))]
    SdkFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A package of the set itself: `package` links it already, and a repair would remove its
    /// own libraries as bundled copies (SPEC §11).
    #[error(
        "{} is the SDK's own package {name}: a repair links wheels built on the SDK, never the set's own \
         packages, which are linked when they are packaged",
        escape_path(path)
    )]
    OwnPackage { path: PathBuf, name: String },
    #[error("{} cannot be linked to the SDK in {}:\n{}", path.display(), sdk.display(), list(problems))]
    Unlinkable { path: PathBuf, sdk: PathBuf, problems: Vec<Problem> },
    #[error("{} and {} would both be repaired into {file_name}", first.display(), second.display())]
    SameOutput { first: PathBuf, second: PathBuf, file_name: String },
    #[error("{}: no manylinux tag fits the repaired wheel: {source}", path.display())]
    Tag {
        path: PathBuf,
        #[source]
        source: TagError,
    },
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Taking the destination's lock or preparing it (the packager's own errors).
    #[error(transparent)]
    Destination(#[from] Box<crate::output::OutputError>),
}

fn list(problems: &[Problem]) -> String {
    let mut lines: Vec<String> = problems.iter().take(MAX_LISTED).map(|problem| format!("  {problem}")).collect();
    if problems.len() > MAX_LISTED {
        lines.push(format!("  ... and {} more", problems.len() - MAX_LISTED));
    }
    lines.join("\n")
}

impl Diagnostic for RepairError {
    /// What the user can do next.
    fn hint(&self) -> Option<&'static str> {
        match self {
            RepairError::Windows { .. } => Some(
                "install a Windows wheel beside the SDK as it is and call rocm_sdk.initialize_process() before \
                 importing it",
            ),
            RepairError::NotAWheel { .. } => Some("pass wheel files (`*.whl`) built for Linux"),
            RepairError::BadWheel { .. } => Some("build the wheel again (pip wheel, python -m build)"),
            RepairError::NoSdk { .. } => Some(
                "point --against at a dist/ holding the SDK's wheels (rocm_sdk_core-*.whl, ...) or at a \
                 site-packages where they are installed",
            ),
            RepairError::SdkFile { .. } => {
                Some("install the SDK again (pip install --force-reinstall): its METADATA and RECORD are regular files")
            }
            RepairError::OwnPackage { .. } => {
                Some("install the SDK's wheels as they are; repair only the wheels built on it")
            }
            RepairError::Unlinkable { problems, .. } => Some(problems_hint(problems)),
            RepairError::SameOutput { .. } => {
                Some("repair one of them at a time, each into its own --dest-dir: they are two builds of one wheel")
            }
            RepairError::Tag { .. } => Some(
                "link the libraries the wheel needs from the system into it, or build it in an older \
                 environment (a manylinux container)",
            ),
            RepairError::Elf(error) => error.hint(),
            RepairError::Write(error) => error.hint(),
            RepairError::Destination(error) => error.hint(),
        }
    }

    /// The file or directory the error is about.
    fn path(&self) -> Option<&Path> {
        match self {
            RepairError::Windows { path }
            | RepairError::NotAWheel { path, .. }
            | RepairError::BadWheel { path, .. }
            | RepairError::NoSdk { path, .. }
            | RepairError::SdkFile { path, .. }
            | RepairError::OwnPackage { path, .. }
            | RepairError::Unlinkable { path, .. }
            | RepairError::Tag { path, .. } => Some(path),
            RepairError::SameOutput { second, .. } => Some(second),
            RepairError::Elf(error) => error.path(),
            RepairError::Write(error) => error.path(),
            RepairError::Destination(error) => error.path(),
        }
    }
}

/// The hint of the first problem's kind: each kind has its own remedy.
fn problems_hint(problems: &[Problem]) -> &'static str {
    match problems.first().map(|problem| &problem.kind) {
        Some(ProblemKind::Library { other_version: Some(_), .. }) => {
            "repair it against an SDK of the ROCm major it was built for, or build it again against this one"
        }
        Some(ProblemKind::Library { .. }) => {
            "ship the library in the wheel, link it statically, or, when another package provides it at run \
             time, pass --allow-missing NAME"
        }
        Some(ProblemKind::Version { .. } | ProblemKind::Symbol { .. }) => {
            "the wheel was built against another ROCm release than this SDK: repair it against the SDK it was \
             built with, or build it again against this one"
        }
        Some(ProblemKind::OutsideSitePackages { .. }) => {
            "install the program inside the package (site-packages) and start it from a console script"
        }
        Some(ProblemKind::Requirement { .. }) => {
            "repair against the SDK release the wheel requires, or change its requirement and build it again"
        }
        None => "see README.md, \"Wheels built on the SDK\"",
    }
}
