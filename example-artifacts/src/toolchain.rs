//! The tools the example build needs: a host C compiler (found the way the `cc` crate finds
//! one) for the ELF files, and optionally `llvm-mc` + `ld.lld` for AMDGPU code objects and
//! `llvm-as` for the device library bitcode.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::ExampleError;

/// The host compiler as a ready-to-use command template.
pub(super) fn c_compiler() -> Result<cc::Tool, ExampleError> {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    cc::Build::new()
        .target(&triple)
        .host(&triple)
        .opt_level(0)
        // No debug info: it would embed the compile directory and make output differ
        // between runs in different places.
        .debug(false)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .try_get_compiler()
        .map_err(|error| ExampleError::NoCompiler { message: error.to_string() })
}

/// The HIP compiler of the fat example: Debian's LLVM 15, whose clang compiles HIP for
/// AMDGPU targets without a ROCm install (`-nogpulib -nogpuinc`).
pub(super) const HIP_COMPILER: &str = "clang++-15";

/// `clang++-15` on `PATH`.
pub(super) fn hip_compiler() -> Result<PathBuf, ExampleError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(HIP_COMPILER))
        .find(|candidate| is_executable(candidate))
        .ok_or(ExampleError::NoHipCompiler { tool: HIP_COMPILER })
}

/// A `clang++-15` command compiling the next source as HIP for `target_ids`, linked by
/// lld (clang's offload bundle needs it), without debug info (it would embed the scratch
/// directory).
pub(super) fn hip_command(clang: &Path, target_ids: &[String]) -> Command {
    let mut command = Command::new(clang);
    command.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-fuse-ld=lld", "-O1"]);
    for target_id in target_ids {
        command.arg(format!("--offload-arch={target_id}"));
    }
    command
}

/// `llvm-mc` and `ld.lld`, both needed to make an AMDGPU code object, and `llvm-as` (the
/// same Debian package as `llvm-mc`) for bitcode.
pub(super) struct LlvmTools {
    pub llvm_mc: PathBuf,
    pub ld_lld: PathBuf,
    pub llvm_as: PathBuf,
}

/// Finds `llvm-mc`, `ld.lld` and `llvm-as` on `PATH`, also as Debian's versioned
/// `llvm-mc-NN` and `ld.lld-NN` (highest NN first). `None` when any is missing.
pub(super) fn find_llvm_tools() -> Option<LlvmTools> {
    let path = std::env::var_os("PATH")?;
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    Some(LlvmTools {
        llvm_mc: find_tool(&dirs, "llvm-mc")?,
        ld_lld: find_tool(&dirs, "ld.lld")?,
        llvm_as: find_tool(&dirs, "llvm-as")?,
    })
}

fn find_tool(dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    if let Some(found) = dirs.iter().map(|dir| dir.join(name)).find(|path| is_executable(path)) {
        return Some(found);
    }
    let versioned_prefix = format!("{name}-");
    let mut versioned: Vec<(u32, PathBuf)> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(version) = file_name.to_str().and_then(|text| text.strip_prefix(&versioned_prefix)) else {
                continue;
            };
            if let Ok(version) = version.parse::<u32>() {
                if is_executable(&entry.path()) {
                    versioned.push((version, entry.path()));
                }
            }
        }
    }
    versioned.into_iter().max_by_key(|(version, _)| *version).map(|(_, path)| path)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// Runs `command`, turning a failure into [`ExampleError::Tool`] about `out`.
pub(super) fn run(mut command: Command, out: &Path) -> Result<(), ExampleError> {
    let shown = format!("{command:?}");
    let output =
        command.output().map_err(|source| ExampleError::Io { path: PathBuf::from(command.get_program()), source })?;
    if output.status.success() {
        return Ok(());
    }
    Err(ExampleError::Tool {
        path: out.to_owned(),
        command: shown,
        stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    })
}

/// `gfx90a:xnack+` → (`gfx90a`, [`+xnack`]): the processor and feature flags `llvm-mc`
/// takes for a target id.
pub(super) fn split_target_id(target_id: &str) -> (&str, Vec<String>) {
    let mut parts = target_id.split(':');
    let processor = parts.next().unwrap_or(target_id);
    let features = parts
        .filter_map(|feature| {
            let (name, sign) = feature.split_at(feature.len().checked_sub(1)?);
            matches!(sign, "+" | "-").then(|| format!("{sign}{name}"))
        })
        .collect();
    (processor, features)
}

/// Assembles `s_endpgm` for `target_id` and links it into a shared code object at `out`
/// (the shape of a real `.co`/`.hsaco`: ELF, `e_machine` EM_AMDGPU).
pub(super) fn code_object(tools: &LlvmTools, scratch: &Path, target_id: &str, out: &Path) -> Result<(), ExampleError> {
    let stem: String = target_id.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let source = scratch.join(format!("kernel_{stem}.s"));
    let object = scratch.join(format!("kernel_{stem}.o"));
    fs_err::write(&source, "\t.text\n\ts_endpgm\n").map_err(|source_error| io_error(&source, source_error))?;
    let (processor, features) = split_target_id(target_id);
    let mut assemble = Command::new(&tools.llvm_mc);
    assemble.args(["-triple=amdgcn-amd-amdhsa", &format!("-mcpu={processor}"), "-filetype=obj"]);
    if !features.is_empty() {
        assemble.arg(format!("-mattr={}", features.join(",")));
    }
    assemble.arg(&source).arg("-o").arg(&object);
    run(assemble, &object)?;
    let mut link = Command::new(&tools.ld_lld);
    link.arg("-shared").arg(&object).arg("-o").arg(out);
    run(link, out)
}

/// Assembles a one-function AMDGPU module into LLVM bitcode at `out`, the shape of the
/// device libraries TheRock installs under `lib/llvm/amdgcn/bitcode/` (`ocml.bc`). The
/// module names its own source file, so the bytes do not depend on the scratch directory.
pub(super) fn bitcode(tools: &LlvmTools, scratch: &Path, function: &str, out: &Path) -> Result<(), ExampleError> {
    let source = scratch.join(format!("{function}.ll"));
    let text = format!(
        "source_filename = \"{function}.ll\"\ntarget triple = \"amdgcn-amd-amdhsa\"\n\n\
         define i32 @{function}() {{\n  ret i32 0\n}}\n"
    );
    fs_err::write(&source, text).map_err(|source_error| io_error(&source, source_error))?;
    let mut assemble = Command::new(&tools.llvm_as);
    assemble.arg(&source).arg("-o").arg(out);
    run(assemble, out)
}

fn io_error(path: &Path, source: std::io::Error) -> ExampleError {
    ExampleError::Io { path: path.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_ids() {
        assert_eq!(split_target_id("gfx1030"), ("gfx1030", vec![]));
        assert_eq!(split_target_id("gfx90a:xnack+"), ("gfx90a", vec!["+xnack".to_owned()]));
        assert_eq!(
            split_target_id("gfx90a:sramecc+:xnack-"),
            ("gfx90a", vec!["+sramecc".to_owned(), "-xnack".to_owned()])
        );
    }
}
