//! `cargo xtask elf`: read or rewrite RPATHs patchelf-style, with the packager's own ELF code,
//! for humans and for comparing with patchelf.
//!
//! Spelling follows patchelf: queries print bare values, one per line, in file order, of
//! the file as the edits asked of it in the same command leave it. Exit
//! codes follow the rest of this CLI instead (README): any failing file prints
//! `error: <file>: ...` on stderr (the other files are still processed), then each
//! distinct `hint:` once, and the exit code is 2; no action flag at all is an error too.
//! Unlike patchelf, `--set-rpath` and
//! `--add-rpath` always write DT_RPATH (SPEC §2), so `--force-rpath` changes nothing and is
//! accepted only so patchelf command lines work unchanged. `--replace-needed OLD NEW`
//! renames a needed library in DT_NEEDED and in the symbol version requirements alike.
//! An edit is atomic: the result is written beside the file and renamed over it, so a
//! failure leaves the file as it was.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use diagnostic::Diagnostic;
use elf_rpath::{ElfError, ElfInfo, ElfKind};

use crate::Output;

#[derive(clap::Args)]
pub struct ElfArgs {
    /// Print the search path in effect (DT_RUNPATH if present, else DT_RPATH).
    #[arg(long)]
    print_rpath: bool,
    /// Print DT_SONAME (an empty line when there is none).
    #[arg(long)]
    print_soname: bool,
    /// Print each DT_NEEDED entry on its own line.
    #[arg(long)]
    print_needed: bool,
    /// Print `executable`, `shared-library`, `other` or `not-elf`.
    #[arg(long)]
    print_kind: bool,
    /// Set the whole search path to this colon-separated list, stored as DT_RPATH.
    #[arg(long, value_name = "LIST")]
    set_rpath: Option<String>,
    /// Append these colon-separated entries, skipping ones already present.
    #[arg(long, value_name = "LIST")]
    add_rpath: Option<String>,
    /// No effect: --set-rpath and --add-rpath always write DT_RPATH (a DT_RUNPATH becomes
    /// DT_RPATH), which patchelf does only with this flag. Accepted so patchelf command lines
    /// work unchanged.
    #[arg(long)]
    force_rpath: bool,
    /// Rename the needed library OLD to NEW (DT_NEEDED and the symbol version requirements
    /// made of it); repeat for more. A name the file does not need is ignored, as patchelf does.
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"], action = clap::ArgAction::Append)]
    replace_needed: Vec<String>,
    /// List the file's device code: its fat-binary wrappers and each offload bundle's
    /// targets and sizes, as a split (`cargo xtask split`) would see them.
    #[arg(long)]
    show_device: bool,
    /// Write each code object of the file's offload bundles into DIR, one file each.
    #[arg(long, value_name = "DIR")]
    unbundle: Option<PathBuf>,
    /// ELF files to read or edit.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// Why one file failed, and what to do about it.
struct Failure {
    message: String,
    hint: &'static str,
}

pub fn run(args: ElfArgs, output: Output) -> anyhow::Result<ExitCode> {
    let _ = (args.force_rpath, output);
    // Without an action the command used to do nothing and exit 0, which reads as success.
    let device = args.show_device || args.unbundle.is_some();
    if !(args.print_rpath || args.print_soname || args.print_needed || args.print_kind || edits(&args) || device) {
        return Err(crate::CliError {
            message: "nothing to do: no action given".to_owned(),
            hint: "add --print-rpath, --print-soname, --print-needed, --print-kind, --set-rpath LIST, \
                   --add-rpath LIST, --replace-needed OLD NEW, --show-device or --unbundle DIR (see `cargo xtask elf \
                   --help`)",
        }
        .into());
    }
    let mut hints: Vec<&'static str> = Vec::new();
    for file in &args.files {
        if let Err(failure) = run_one(&args, file) {
            eprintln!("error: {}: {}", file.display(), failure.message);
            if !hints.contains(&failure.hint) {
                hints.push(failure.hint);
            }
        }
    }
    if hints.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for hint in hints {
        eprintln!("\nhint: {hint}");
    }
    Ok(ExitCode::from(2))
}

fn run_one(args: &ElfArgs, file: &Path) -> Result<(), Failure> {
    if args.show_device || args.unbundle.is_some() {
        crate::elf_device::run_one(file, args.show_device, args.unbundle.as_deref())
            .map_err(|(message, hint)| Failure { message, hint })?;
    }
    let info = elf_rpath::read_elf(file).map_err(describe)?;
    if args.print_kind {
        let kind = match info.as_ref().map(|info| info.kind) {
            Some(ElfKind::Executable) => "executable",
            Some(ElfKind::SharedLibrary) => "shared-library",
            Some(ElfKind::Other) => "other",
            None => "not-elf",
        };
        println!("{kind}");
    }
    let wants_elf = args.print_rpath || args.print_soname || args.print_needed || edits(args);
    let Some(info) = info else {
        let hint = "only ELF files (executables, shared libraries, objects) can be read or edited: check the path";
        return if wants_elf { Err(Failure { message: "not an ELF file".to_owned(), hint }) } else { Ok(()) };
    };
    // After an edit, print what the file now says.
    let info = if edits(args) {
        let request = request(args, &info);
        let edit = elf_rpath::plan_edit(file, &request).map_err(describe)?;
        if !edit.is_unchanged() {
            elf_rpath::apply_edit_in_place(file, &edit).map_err(describe)?;
        }
        tracing::info!(file = %file.display(), strategy = ?edit.strategy, "edited: {request:?}");
        elf_rpath::read_elf(file).map_err(describe)?.unwrap_or(info)
    } else {
        info
    };
    if args.print_soname {
        println!("{}", info.soname.as_deref().unwrap_or(""));
    }
    if args.print_needed {
        for needed in &info.needed {
            println!("{needed}");
        }
    }
    if args.print_rpath {
        println!("{}", info.search_path().unwrap_or(""));
    }
    Ok(())
}

fn edits(args: &ElfArgs) -> bool {
    args.set_rpath.is_some() || args.add_rpath.is_some() || !args.replace_needed.is_empty()
}

/// The edit the flags ask of one file: its search path only when a search path flag is
/// given, and the renames in pairs.
fn request(args: &ElfArgs, info: &ElfInfo) -> elf_rpath::DynamicRequest {
    let rpath = (args.set_rpath.is_some() || args.add_rpath.is_some()).then(|| requested_rpath(args, info));
    let replace_needed = args.replace_needed.chunks_exact(2).map(|pair| (pair[0].clone(), pair[1].clone())).collect();
    elf_rpath::DynamicRequest { rpath, replace_needed }
}

/// `--set-rpath` replaces the list, then `--add-rpath` appends what is missing.
fn requested_rpath(args: &ElfArgs, info: &ElfInfo) -> String {
    let base = args.set_rpath.as_deref().or(info.search_path()).unwrap_or("");
    let mut entries: Vec<&str> = base.split(':').filter(|entry| !entry.is_empty()).collect();
    for entry in args.add_rpath.as_deref().unwrap_or("").split(':') {
        if !entry.is_empty() && !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    entries.join(":")
}

/// The error without its path (the caller prints the path first), and its hint.
fn describe(error: ElfError) -> Failure {
    let message = match &error {
        ElfError::Malformed { reason, .. } => format!("malformed ELF file: {reason}"),
        ElfError::Unsupported { reason, .. } => format!("cannot patch: {reason}"),
        ElfError::Read { source, .. } => format!("cannot read: {source}"),
        ElfError::Write { source, .. } => format!("cannot write: {source}"),
    };
    // The library has no hint for a read error: the path is the user's, so is the fix.
    let hint = error.hint().unwrap_or("check that the file exists and is readable");
    Failure { message, hint }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        elf: ElfArgs,
    }

    /// A library whose search path is `search_path`.
    fn info(search_path: Option<&str>) -> ElfInfo {
        ElfInfo {
            kind: ElfKind::SharedLibrary,
            machine: 62,
            is_64: true,
            little_endian: true,
            soname: None,
            needed: Vec::new(),
            rpath: search_path.map(str::to_string),
            runpath: None,
            interpreter: None,
        }
    }

    fn check(argv: &[&str], search_path: Option<&str>, expect: &str) {
        let cli = Cli::try_parse_from(std::iter::once("elf").chain(argv.iter().copied())).expect("valid flags");
        assert_eq!(requested_rpath(&cli.elf, &info(search_path)), expect);
    }

    #[test]
    fn add_rpath_appends_and_skips_duplicates() {
        check(&["--add-rpath", "$ORIGIN:/b", "f"], Some("/a:$ORIGIN"), "/a:$ORIGIN:/b");
    }

    #[test]
    fn set_rpath_replaces_then_add_rpath_appends() {
        check(&["--set-rpath", "/x", "--add-rpath", "/y:/x", "--force-rpath", "f"], Some("/a"), "/x:/y");
    }

    #[test]
    fn add_rpath_to_nothing() {
        check(&["--add-rpath", "$ORIGIN", "f"], None, "$ORIGIN");
    }

    #[test]
    fn replace_needed_takes_pairs_and_leaves_the_search_path() {
        let argv = ["elf", "--replace-needed", "liba-1234abcd.so.1", "liba.so.1", "--replace-needed", "b", "c", "f"];
        let cli = Cli::try_parse_from(argv).expect("valid flags");
        let request = request(&cli.elf, &info(Some("/a")));
        assert_eq!(request.rpath, None);
        assert_eq!(
            request.replace_needed,
            [("liba-1234abcd.so.1".to_owned(), "liba.so.1".to_owned()), ("b".to_owned(), "c".to_owned())]
        );
    }
}
