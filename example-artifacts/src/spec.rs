//! What an example artifact holds, as data ([`ArtifactSpec`]), and writing it to disk:
//! directories, text files, symlinks, ELF files compiled from `c/*.c`, and AMDGPU code
//! objects.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::toolchain::{self, LlvmTools};
use super::{ExampleError, ExampleSummary};

const LIBRARY_C: &str = include_str!("c/library.c");
const PROGRAM_C: &str = include_str!("c/program.c");
const KERNELS_HIP: &str = include_str!("c/kernels.hip");

/// One artifact directory of the example: its manifest lines and its items.
pub(super) struct ArtifactSpec {
    pub dir_name: String,
    /// `artifact_manifest.txt`, line by line (empty lines and never-created prefixes too).
    pub manifest: Vec<String>,
    pub items: Vec<Item>,
    prefix: String,
}

pub(super) struct Item {
    /// Relative to the artifact directory (`{prefix}/{path in the install tree}`).
    pub path: String,
    pub kind: ItemKind,
}

pub(super) enum ItemKind {
    Dir,
    Text {
        text: String,
        mode: u32,
    },
    /// A file of bytes that are no text (an archive).
    Bytes {
        bytes: Vec<u8>,
    },
    Link {
        target: String,
    },
    Elf(Elf),
    CodeObject {
        target_id: String,
    },
    /// LLVM bitcode of one function, named after it (`llvm-as`).
    Bitcode {
        function: String,
    },
}

/// A shared library (`soname: Some`) or an executable compiled from `c/`.
pub(super) struct Elf {
    pub soname: Option<String>,
    /// Printed by the program or returned by the library, after `example:`.
    pub text: String,
    /// SONAME of a library this one calls (DT_NEEDED), found in the same artifact first.
    pub calls: Option<String>,
    pub rpath: Vec<String>,
    /// DT_RUNPATH (`--enable-new-dtags`) instead of DT_RPATH.
    pub runpath: bool,
    pub mode: u32,
    /// Start the writable segment at this address, leaving a hole in the address space with
    /// no file bytes behind it, as TheRock's kpack splitter leaves a library once its
    /// `.hip_fatbin` is cut out (the segments after it keep their addresses).
    pub address_hole_to: Option<u64>,
    /// GPU targets: compiled as HIP by `clang++-15` (`c/kernels.hip`), so the file carries
    /// a `.hip_fatbin` with a code object per target. Empty: a plain C file.
    pub offload_archs: Vec<String>,
    /// Preprocessor symbols defined for `c/library.c` (`EXAMPLE_HIP_RUNTIME`).
    pub defines: Vec<String>,
}

impl Elf {
    pub fn library(soname: &str, text: &str) -> Elf {
        Elf {
            soname: Some(soname.to_owned()),
            text: text.to_owned(),
            calls: None,
            rpath: vec![],
            runpath: true,
            mode: 0o755,
            address_hole_to: None,
            offload_archs: Vec::new(),
            defines: Vec::new(),
        }
    }

    pub fn program(text: &str) -> Elf {
        Elf { soname: None, ..Elf::library("", text) }
    }

    pub fn calls(mut self, soname: &str) -> Elf {
        self.calls = Some(soname.to_owned());
        self
    }

    /// `runpath: true` writes DT_RUNPATH, `false` the older DT_RPATH.
    pub fn rpath(mut self, entries: &[&str], runpath: bool) -> Elf {
        self.rpath = entries.iter().map(|entry| entry.to_string()).collect();
        self.runpath = runpath;
        self
    }

    pub fn mode(mut self, mode: u32) -> Elf {
        self.mode = mode;
        self
    }

    pub fn address_hole_to(mut self, address: u64) -> Elf {
        self.address_hole_to = Some(address);
        self
    }

    pub fn offload(mut self, target_ids: &[&str]) -> Elf {
        self.offload_archs = target_ids.iter().map(|id| id.to_string()).collect();
        self
    }

    pub fn define(mut self, symbol: &str) -> Elf {
        self.defines.push(symbol.to_owned());
        self
    }
}

impl ArtifactSpec {
    /// An artifact whose manifest has `manifest` lines; items go under the first prefix
    /// until [`ArtifactSpec::prefix`] switches.
    pub fn new(dir_name: &str, manifest: &[&str]) -> ArtifactSpec {
        let first = manifest.iter().find(|line| !line.is_empty()).copied().unwrap_or_default();
        ArtifactSpec {
            dir_name: dir_name.to_owned(),
            manifest: manifest.iter().map(|line| line.to_string()).collect(),
            items: vec![],
            prefix: first.to_owned(),
        }
    }

    pub fn prefix(&mut self, prefix: &str) -> &mut Self {
        self.prefix = prefix.to_owned();
        self
    }

    fn push(&mut self, path: &str, kind: ItemKind) -> &mut Self {
        self.items.push(Item { path: format!("{}/{path}", self.prefix), kind });
        self
    }

    pub fn dir(&mut self, path: &str) -> &mut Self {
        self.push(path, ItemKind::Dir)
    }

    pub fn text(&mut self, path: &str, text: &str) -> &mut Self {
        self.push(path, ItemKind::Text { text: text.to_owned(), mode: 0o644 })
    }

    pub fn text_mode(&mut self, path: &str, text: &str, mode: u32) -> &mut Self {
        self.push(path, ItemKind::Text { text: text.to_owned(), mode })
    }

    /// A file of `bytes`, mode 0644.
    pub fn bytes(&mut self, path: &str, bytes: Vec<u8>) -> &mut Self {
        self.push(path, ItemKind::Bytes { bytes })
    }

    /// An executable text file (a `#!` script).
    pub fn script(&mut self, path: &str, text: &str) -> &mut Self {
        self.text_mode(path, text, 0o755)
    }

    pub fn link(&mut self, path: &str, target: &str) -> &mut Self {
        self.push(path, ItemKind::Link { target: target.to_owned() })
    }

    pub fn elf(&mut self, path: &str, elf: Elf) -> &mut Self {
        self.push(path, ItemKind::Elf(elf))
    }

    /// A shared library named after its SONAME, the usual case.
    pub fn library(&mut self, dir: &str, elf: Elf) -> &mut Self {
        let soname = elf.soname.clone().unwrap_or_default();
        self.elf(&format!("{dir}/{soname}"), elf)
    }

    pub fn code_object(&mut self, path: &str, target_id: &str) -> &mut Self {
        self.push(path, ItemKind::CodeObject { target_id: target_id.to_owned() })
    }

    pub fn bitcode(&mut self, path: &str, function: &str) -> &mut Self {
        self.push(path, ItemKind::Bitcode { function: function.to_owned() })
    }
}

/// A compile job: one [`Elf`] at its place on disk.
struct Job<'a> {
    artifact: usize,
    out: PathBuf,
    elf: &'a Elf,
}

/// Writes every artifact under `out`, then compiles the ELF files and code objects.
pub(super) fn materialize(out: &Path, artifacts: &[ArtifactSpec]) -> Result<ExampleSummary, ExampleError> {
    let mut summary = ExampleSummary::default();
    let mut jobs: Vec<Job<'_>> = Vec::new();
    let mut code_objects: Vec<(PathBuf, &str)> = Vec::new();
    let mut bitcode: Vec<(PathBuf, &str)> = Vec::new();
    for (index, artifact) in artifacts.iter().enumerate() {
        let dir = out.join(&artifact.dir_name);
        let manifest: String = artifact.manifest.iter().map(|line| format!("{line}\n")).collect();
        write_file(&dir.join("artifact_manifest.txt"), &manifest, 0o644)?;
        for item in &artifact.items {
            let path = dir.join(&item.path);
            match &item.kind {
                ItemKind::Dir => create_dir(&path)?,
                ItemKind::Text { text, mode } => {
                    write_file(&path, text, *mode)?;
                    summary.n_files += 1;
                }
                ItemKind::Bytes { bytes } => {
                    write_file(&path, bytes, 0o644)?;
                    summary.n_files += 1;
                }
                ItemKind::Link { target } => {
                    create_parent(&path)?;
                    std::os::unix::fs::symlink(target, &path).map_err(|source| io_error(&path, source))?;
                    summary.n_symlinks += 1;
                }
                ItemKind::Elf(elf) => {
                    create_parent(&path)?;
                    jobs.push(Job { artifact: index, out: path, elf });
                }
                ItemKind::CodeObject { target_id } => {
                    create_parent(&path)?;
                    code_objects.push((path, target_id));
                }
                ItemKind::Bitcode { function } => {
                    create_parent(&path)?;
                    bitcode.push((path, function));
                }
            }
        }
        summary.artifacts.push(artifact.dir_name.clone());
    }
    summary.artifacts.sort();

    let scratch = tempfile::tempdir().map_err(|source| io_error(&std::env::temp_dir(), source))?;
    write_file(&scratch.path().join("library.c"), LIBRARY_C, 0o644)?;
    write_file(&scratch.path().join("program.c"), PROGRAM_C, 0o644)?;
    write_file(&scratch.path().join("kernels.hip"), KERNELS_HIP, 0o644)?;
    compile_all(scratch.path(), &jobs)?;
    summary.n_elf = jobs.len();

    match toolchain::find_llvm_tools() {
        Some(tools) => {
            make_code_objects(&tools, scratch.path(), &code_objects)?;
            summary.n_code_objects = code_objects.len();
            for (path, function) in &bitcode {
                toolchain::bitcode(&tools, scratch.path(), function, path)?;
                set_mode(path, 0o644)?;
            }
            summary.n_files += bitcode.len();
        }
        None if code_objects.is_empty() && bitcode.is_empty() => {}
        None => summary.warnings.push(format!(
            "llvm-mc, ld.lld or llvm-as not found on PATH: skipped {} AMDGPU code objects and {} bitcode files \
             (apt-get install llvm lld)",
            code_objects.len(),
            bitcode.len()
        )),
    }
    Ok(summary)
}

/// Compiles in waves: a job runs once the library it calls exists, since the linker
/// needs that file to record DT_NEEDED. Jobs within a wave run in parallel.
fn compile_all(scratch: &Path, jobs: &[Job<'_>]) -> Result<(), ExampleError> {
    let tool = toolchain::c_compiler()?;
    let hip = match jobs.iter().any(|job| !job.elf.offload_archs.is_empty()) {
        true => Some(toolchain::hip_compiler()?),
        false => None,
    };
    let tools = Compilers { c: &tool, hip: hip.as_deref() };
    let providers = providers(jobs)?;
    let mut done = vec![false; jobs.len()];
    while done.iter().any(|finished| !finished) {
        let ready: Vec<usize> = (0..jobs.len())
            .filter(|&index| !done[index])
            .filter(|&index| match &jobs[index].elf.calls {
                None => true,
                Some(soname) => done[providers[&(jobs[index].artifact, soname.clone())]],
            })
            .collect();
        if ready.is_empty() {
            return Err(ExampleError::Layout { message: "libraries call each other in a cycle".to_owned() });
        }
        ready
            .par_iter()
            .map(|&index| compile(&tools, scratch, jobs, &providers, index))
            .collect::<Result<Vec<()>, ExampleError>>()?;
        for index in ready {
            done[index] = true;
        }
    }
    Ok(())
}

/// (artifact index, called SONAME) → the job providing it: the same artifact's library
/// if it has one, else the only library with that SONAME in the example.
fn providers(jobs: &[Job<'_>]) -> Result<BTreeMap<(usize, String), usize>, ExampleError> {
    let mut resolved = BTreeMap::new();
    for job in jobs {
        let Some(soname) = &job.elf.calls else { continue };
        let candidates: Vec<usize> =
            (0..jobs.len()).filter(|&index| jobs[index].elf.soname.as_ref() == Some(soname)).collect();
        let same_artifact: Vec<usize> =
            candidates.iter().copied().filter(|&index| jobs[index].artifact == job.artifact).collect();
        let provider = match (same_artifact.as_slice(), candidates.as_slice()) {
            ([one], _) | ([], [one]) => *one,
            _ => {
                let message = format!("{} calls {soname}, which is not provided exactly once", job.out.display());
                return Err(ExampleError::Layout { message });
            }
        };
        resolved.insert((job.artifact, soname.clone()), provider);
    }
    Ok(resolved)
}

/// `libamdhip64.so.7` → `amdhip64`: the C identifier a library's functions are named after.
fn symbol_id(soname: &str) -> String {
    let stem = soname.strip_prefix("lib").unwrap_or(soname);
    let stem = stem.split(".so").next().unwrap_or(stem);
    stem.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// The C compiler, and `clang++-15` when some file is fat.
struct Compilers<'a> {
    c: &'a cc::Tool,
    hip: Option<&'a Path>,
}

fn compile(
    tools: &Compilers<'_>,
    scratch: &Path,
    jobs: &[Job<'_>],
    providers: &BTreeMap<(usize, String), usize>,
    index: usize,
) -> Result<(), ExampleError> {
    let job = &jobs[index];
    let elf = job.elf;
    if elf.text.contains(['"', '\\', '\n']) {
        let message = format!("text of {} must not need C escaping", job.out.display());
        return Err(ExampleError::Layout { message });
    }
    let mut command = match (tools.hip, elf.offload_archs.is_empty()) {
        (Some(clang), false) => toolchain::hip_command(clang, &elf.offload_archs),
        _ => tools.c.to_command(),
    };
    // The source is named relative to the scratch dir, so no temporary path ends up in
    // the object (its STT_FILE symbol): the output is the same wherever it is built.
    command.current_dir(scratch);
    command.arg(format!("-DEXAMPLE_TEXT=\"{}\"", elf.text));
    for symbol in &elf.defines {
        command.arg(format!("-D{symbol}"));
    }
    match &elf.soname {
        Some(soname) => {
            command.args(["-shared", "-fPIC"]);
            command.arg(format!("-Wl,-soname,{soname}"));
            command.arg(format!("-DEXAMPLE_ID={}", symbol_id(soname)));
            if elf.offload_archs.is_empty() {
                command.arg("library.c");
            } else {
                // What follows (the libraries linked against) is no HIP source.
                command.args(["kernels.hip", "-x", "none"]);
            }
        }
        None => {
            command.arg("program.c");
        }
    }
    // Every library on the call chain, so the linker can check the dependencies of
    // dependencies (`-rpath-link`) without them being on the output's RPATH.
    let mut calls = elf.calls.clone();
    let mut artifact = job.artifact;
    let mut first = true;
    while let Some(soname) = calls {
        let provider = &jobs[providers[&(artifact, soname.clone())]];
        if first {
            command.arg(format!("-DEXAMPLE_CALLS={}", symbol_id(&soname)));
            command.arg(&provider.out);
            first = false;
        }
        if let Some(dir) = provider.out.parent() {
            command.arg(format!("-Wl,-rpath-link,{}", dir.display()));
        }
        calls = provider.elf.calls.clone();
        artifact = provider.artifact;
    }
    if !elf.rpath.is_empty() {
        command.arg(if elf.runpath { "-Wl,--enable-new-dtags" } else { "-Wl,--disable-new-dtags" });
        command.arg(format!("-Wl,-rpath,{}", elf.rpath.join(":")));
    }
    if let Some(address) = elf.address_hole_to {
        // `.init_array` opens the writable segment in every gcc-built library and program.
        command.arg(format!("-Wl,--section-start=.init_array={address:#x}"));
    }
    command.arg("-o").arg(&job.out);
    toolchain::run(command, &job.out)?;
    set_mode(&job.out, elf.mode)
}

fn make_code_objects(tools: &LlvmTools, scratch: &Path, code_objects: &[(PathBuf, &str)]) -> Result<(), ExampleError> {
    for (path, target_id) in code_objects {
        toolchain::code_object(tools, scratch, target_id, path)?;
        set_mode(path, 0o644)?;
    }
    Ok(())
}

fn create_dir(path: &Path) -> Result<(), ExampleError> {
    std::fs::create_dir_all(path).map_err(|source| io_error(path, source))
}

fn create_parent(path: &Path) -> Result<(), ExampleError> {
    match path.parent() {
        Some(parent) => create_dir(parent),
        None => Ok(()),
    }
}

fn write_file(path: &Path, text: impl AsRef<[u8]>, mode: u32) -> Result<(), ExampleError> {
    create_parent(path)?;
    std::fs::write(path, text).map_err(|source| io_error(path, source))?;
    set_mode(path, mode)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), ExampleError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|source| io_error(path, source))
}

fn io_error(path: &Path, source: std::io::Error) -> ExampleError {
    ExampleError::Io { path: path.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbol_ids() {
        assert_eq!(symbol_id("libamdhip64.so.7"), "amdhip64");
        assert_eq!(symbol_id("librocm-openblas.so.0"), "rocm_openblas");
        assert_eq!(symbol_id("libLLVM.so.22.0git"), "LLVM");
        assert_eq!(symbol_id("librocblas_kernels_gfx90a-xnack+.so"), "rocblas_kernels_gfx90a_xnack_");
    }
}
