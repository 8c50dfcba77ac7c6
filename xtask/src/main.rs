//! `cargo xtask`: the command line over the `packager` library.
//!
//! Parses flags (clap), sets up logging and progress, and sends each subcommand to the
//! `run` function of its own module. No packaging logic lives here.

mod bench;
mod elf;
mod elf_device;
mod example;
mod index;
mod package;
mod progress;
mod repair;
mod signals;
mod split;
mod summary;
mod target_dir;
mod verify;
mod verify_dist;
mod verify_python;
mod verify_tools;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use diagnostic::Diagnostic;

#[derive(Parser)]
#[command(name = "cargo xtask", version, about = "Turn ROCm build artifacts into installable Python packages")]
struct Cli {
    /// Explain each decision (-v), or trace everything (-vv).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Print only errors.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Build the wheels and the `rocm` sdist from an artifacts directory.
    Package(Box<package::PackageArgs>),
    /// Run every check before pushing, or check a built dist/ with --dist.
    Verify(verify::VerifyArgs),
    /// Write the bundled example build (real ELF files) to a directory.
    Example(example::ExampleArgs),
    /// Read or rewrite RPATHs of ELF files, patchelf-style, without patchelf.
    Elf(elf::ElfArgs),
    /// Measure packaging speed, memory and disk against the compression floor.
    Bench(bench::BenchArgs),
    /// Write a PEP 503 simple index and a find-links page for a dist/ directory.
    Index(index::IndexArgs),
    /// Link wheels built on the SDK to the SDK's wheels (RPATHs, requirements, tag).
    Repair(repair::RepairArgs),
    /// Split fat HIP wheels into a host wheel and one device wheel per GPU target.
    Split(split::SplitArgs),
}

/// Global output settings every subcommand gets.
#[derive(Clone, Copy)]
pub struct Output {
    pub verbose: u8,
    pub quiet: bool,
}

fn main() -> ExitCode {
    limit_malloc_arenas();
    let cli = Cli::parse();
    let output = Output { verbose: cli.verbose, quiet: cli.quiet };
    progress::init_logging(output);
    let result = match cli.command {
        Command::Package(args) => package::run(*args, output),
        Command::Verify(args) => verify::run(args, output),
        Command::Example(args) => example::run(args, output),
        Command::Elf(args) => elf::run(args, output),
        Command::Bench(args) => bench::run(args, output),
        Command::Index(args) => index::run(args, output),
        Command::Repair(args) => repair::run(args, output),
        Command::Split(args) => split::run(args, output),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            report_error(&error);
            ExitCode::from(2)
        }
    }
}

/// glibc gives each thread that allocates its own heap arena, up to 8 per core, and memory
/// freed in one arena is not reused by another. Packaging runs the rayon pool, the wheel
/// writers and the tarball producers at once, so short-lived buffers spread over many
/// arenas: on the 2 GiB bench tree two arenas save 5-8 MiB of resident memory (10 %) at
/// the same wall time, with and without xz (measured by packaging it with and without).
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator tunable; called before any thread is started.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// An error of the command line itself (a flag missing, a tool missing), not of the
/// library, with what to do next; `main` prints the hint like a library error's.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub hint: &'static str,
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl Diagnostic for CliError {
    fn hint(&self) -> Option<&'static str> {
        Some(self.hint)
    }
}

/// The workspace root (xtask lives one level below it).
pub fn workspace_root() -> std::path::PathBuf {
    let manifest_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// `error: …`, each `caused by: …`, then `hint: …` from the first error in the chain that
/// has one.
fn report_error(error: &anyhow::Error) {
    // One line, outermost context first, so a CI log grep shows the whole story.
    eprintln!("error: {error:#}");
    // Every error ends with a hint: one the libraries did not word is said from the
    // operating system's reason, and failing that in general words.
    let hint = diagnostics(error).find_map(|diagnostic| diagnostic.hint()).unwrap_or_else(|| fallback_hint(error));
    eprintln!("\nhint: {hint}");
    if std::env::var_os("GITHUB_ACTIONS").is_some_and(|value| value == "true") {
        eprintln!("{}", github_annotation(error, std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from).as_deref()));
    }
}

/// Views an error of the chain as a [`Diagnostic`] when it is of one known type.
type AsDiagnostic = for<'a> fn(&'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Diagnostic>;

/// The errors in the chain that are [`Diagnostic`]s, outermost first. anyhow keeps each
/// error as its own type, so this is the one place that names the error types the
/// commands can meet: each library's top-level error, the packager's stage errors (a
/// command may call one stage alone), and the CLI's own.
fn diagnostics(error: &anyhow::Error) -> impl Iterator<Item = &dyn Diagnostic> {
    fn as_diagnostic<'a, E: Diagnostic + 'static>(
        cause: &'a (dyn std::error::Error + 'static),
    ) -> Option<&'a dyn Diagnostic> {
        cause.downcast_ref::<E>().map(|error| error as &dyn Diagnostic)
    }
    let known: [AsDiagnostic; 12] = [
        as_diagnostic::<CliError>,
        as_diagnostic::<packager::Error>,
        as_diagnostic::<packager::input::CatalogError>,
        as_diagnostic::<packager::plan::PlanError>,
        as_diagnostic::<packager::output::OutputError>,
        as_diagnostic::<packager::index::IndexError>,
        as_diagnostic::<packager::request::RequestError>,
        as_diagnostic::<packager::repair::RepairError>,
        as_diagnostic::<packager::split::SplitError>,
        as_diagnostic::<device_code::DeviceCodeError>,
        as_diagnostic::<release_gate::VerifyError>,
        as_diagnostic::<example_artifacts::ExampleError>,
    ];
    error.chain().filter_map(move |cause| known.iter().find_map(|as_known| as_known(cause)))
}

/// A hint from the first I/O error in the chain, by its reason.
fn fallback_hint(error: &anyhow::Error) -> &'static str {
    let io = error.chain().find_map(|cause| cause.downcast_ref::<std::io::Error>());
    match io.and_then(std::io::Error::raw_os_error) {
        Some(libc::ENOENT) => "a file or directory named above does not exist: check the path, or create it",
        Some(libc::EACCES | libc::EPERM) => {
            "you may not use the path named above: fix its permissions, or pick another"
        }
        Some(libc::EROFS) => "the path named above is on a read-only file system: pick one on a writable disk",
        Some(libc::ENOSPC | libc::EDQUOT) => "the disk is full: free space, or write elsewhere",
        Some(libc::ENOTDIR | libc::EEXIST) => {
            "a part of the path named above is a file or a symlink to nothing, not a directory: fix that part"
        }
        Some(libc::ELOOP) => "the path named above is a symlink where a file or directory is needed: replace it",
        Some(libc::EIO) => "the disk reported an I/O error: check it, or use another disk",
        _ if io.is_some() => "check that the path named above exists and that you may read and write it, then rerun",
        _ => "see `cargo xtask <command> --help`, and CONTRIBUTING.md or README.md's Troubleshooting",
    }
}

/// `::error file=…,title=…::message`, so the failure shows on the run page (and on the
/// file, when it is inside the checkout). Paths under `workspace` are made relative to it,
/// as GitHub expects.
fn github_annotation(error: &anyhow::Error, workspace: Option<&Path>) -> String {
    let text = escape_annotation(&format!("{error:#}"), false);
    match error_path(error) {
        Some(path) => {
            let path = workspace.and_then(|root| path.strip_prefix(root).ok()).unwrap_or(path);
            let file = escape_annotation(&path.to_string_lossy(), true);
            format!("::error file={file},title=cargo xtask::{text}")
        }
        None => format!("::error title=cargo xtask::{text}"),
    }
}

/// The first path any error in the chain names.
fn error_path(error: &anyhow::Error) -> Option<&Path> {
    diagnostics(error).find_map(|diagnostic| diagnostic.path())
}

/// Workflow-command escaping: `%`, CR and LF always; `:` and `,` too in a property value.
fn escape_annotation(text: &str, property: bool) -> String {
    let text = text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
    if property {
        text.replace(':', "%3A").replace(',', "%2C")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_name_the_file() {
        let error = anyhow::Error::new(packager::Error::Catalog(packager::input::CatalogError::MissingBuildManifest {
            path: PathBuf::from("/w/build/artifacts/base_lib_generic/x,y:z.json"),
        }))
        .context("packaging /w/build/artifacts");
        assert_eq!(
            github_annotation(&error, Some(Path::new("/w"))),
            "::error file=build/artifacts/base_lib_generic/x%2Cy%3Az.json,title=cargo xtask::packaging \
             /w/build/artifacts: build manifest not found: /w/build/artifacts/base_lib_generic/x,y:z.json"
        );
        let plain = anyhow::anyhow!("100% broken\nline two");
        assert_eq!(github_annotation(&plain, None), "::error title=cargo xtask::100%25 broken%0Aline two");
    }

    /// Each library's error is asked the same two questions through [`Diagnostic`]: the
    /// gate's and the example generator's name their file as the packager's do.
    #[test]
    fn every_library_error_gives_its_hint_and_path() {
        let gate = anyhow::Error::new(release_gate::VerifyError::NotADirectory { path: PathBuf::from("/w/dist") })
            .context("verifying /w/dist");
        assert_eq!(error_path(&gate), Some(Path::new("/w/dist")));
        let hint = diagnostics(&gate).find_map(|diagnostic| diagnostic.hint());
        assert!(hint.is_some_and(|hint| hint.contains("--dist")), "{hint:?}");
        let example =
            anyhow::Error::new(example_artifacts::ExampleError::OutputNotEmpty { path: PathBuf::from("/w/ex") });
        assert_eq!(error_path(&example), Some(Path::new("/w/ex")));
        let cli = anyhow::Error::new(CliError { message: "no".to_owned(), hint: "do this" });
        assert_eq!(diagnostics(&cli).find_map(|diagnostic| diagnostic.hint()), Some("do this"));
        assert_eq!(diagnostics(&anyhow::anyhow!("plain")).count(), 0);
    }
}
