//! Launchers: the small compiled programs that replace executable symlinks in wheels
//! (SPEC §2). The C source is `launcher-template/launcher.c`; it is compiled once per run
//! (when the plan has a launcher at all) and each launcher gets its target written into a
//! reserved slot after a marker string.

use std::path::{Path, PathBuf};
use std::process::Command;

use diagnostic::Diagnostic;

use crate::config::PackageConfig;
use crate::plan::{Plan, PlannedFile};

const SOURCE: &str = include_str!("../../launcher-template/launcher.c");
const MARKER: &[u8] = b"ROCM_SDK_LAUNCHER_TARGET=";
/// Must match `TARGET_CAPACITY` in launcher.c (one byte stays for the NUL).
const TARGET_CAPACITY: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum LauncherError {
    #[error("cannot compile the launcher with the C compiler: {message}")]
    Compile { message: String },
    #[error("launcher target is too long ({len} bytes, at most {max}): {target}")]
    TargetTooLong { target: String, len: usize, max: usize },
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Diagnostic for LauncherError {
    /// The file the error is about, if it names one.
    fn path(&self) -> Option<&Path> {
        match self {
            LauncherError::Read { path, .. } => Some(path),
            _ => None,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            Self::Compile { .. } => Some("install a C compiler (gcc or clang), or set CC"),
            _ => None,
        }
    }
}

/// The run's launcher template, compiled once in a scratch directory (`config.scratch_dir`,
/// else the system's temp dir) if any package of `plan` has a launcher.
pub fn compile_if_needed(plan: &Plan, config: &PackageConfig) -> Result<Option<LauncherTemplate>, crate::Error> {
    let needed = plan
        .packages
        .iter()
        .any(|package| package.files.values().any(|file| matches!(file, PlannedFile::Launcher { .. })));
    if !needed {
        return Ok(None);
    }
    let scratch = match &config.scratch_dir {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .map_err(|source| {
        let dir = config.scratch_dir.clone().unwrap_or_else(std::env::temp_dir);
        crate::write::WriteError::io(crate::write::WriteAction::CreateTemp, dir, source)
    })?;
    Ok(Some(LauncherTemplate::compile(scratch.path())?))
}

/// The compiled launcher with the offset of its target slot.
#[derive(Clone, Debug)]
pub struct LauncherTemplate {
    bytes: Vec<u8>,
    slot_offset: usize,
}

impl LauncherTemplate {
    /// Compiles `launcher.c` in `scratch` (which must exist) for the host.
    pub fn compile(scratch: &Path) -> Result<LauncherTemplate, LauncherError> {
        let source = scratch.join("launcher.c");
        let output = scratch.join("launcher");
        std::fs::write(&source, SOURCE)
            .map_err(|source_error| LauncherError::Read { path: source.clone(), source: source_error })?;
        let mut command = c_compiler()?;
        // -s: no symbols or debug info, so nothing of the build machine (paths) is embedded.
        command.args(["-O2", "-s", "-fno-ident", "-Wl,--build-id=none", "-o"]).arg(&output).arg(&source);
        let result =
            command.output().map_err(|error| LauncherError::Compile { message: format!("{command:?}: {error}") })?;
        if !result.status.success() {
            return Err(LauncherError::Compile {
                message: format!("{command:?} failed: {}", String::from_utf8_lossy(&result.stderr).trim()),
            });
        }
        let bytes = std::fs::read(&output).map_err(|source| LauncherError::Read { path: output.clone(), source })?;
        let found: Vec<usize> = bytes
            .windows(MARKER.len())
            .enumerate()
            .filter(|(_, window)| *window == MARKER)
            .map(|(index, _)| index)
            .collect();
        let [marker_at] = found[..] else {
            return Err(LauncherError::Compile {
                message: format!("the compiled launcher holds the target marker {} times, expected once", found.len()),
            });
        };
        let slot_offset = marker_at + MARKER.len();
        if bytes.len() < slot_offset + TARGET_CAPACITY {
            return Err(LauncherError::Compile {
                message: "the compiled launcher's target slot is truncated".to_owned(),
            });
        }
        Ok(LauncherTemplate { bytes, slot_offset })
    }

    /// The compiled program with an empty target slot (its headers and needs are every
    /// launcher's).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A launcher that runs `target` (relative to the launcher's directory).
    pub fn instantiate(&self, target: &str) -> Result<Vec<u8>, LauncherError> {
        let max = TARGET_CAPACITY - 1;
        if target.len() > max || target.is_empty() || target.contains('\0') {
            return Err(LauncherError::TargetTooLong { target: target.to_owned(), len: target.len(), max });
        }
        let mut bytes = self.bytes.clone();
        let slot = &mut bytes[self.slot_offset..self.slot_offset + TARGET_CAPACITY];
        slot.fill(0);
        slot[..target.len()].copy_from_slice(target.as_bytes());
        Ok(bytes)
    }
}

fn c_compiler() -> Result<Command, LauncherError> {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let tool = cc::Build::new()
        .target(&triple)
        .host(&triple)
        .opt_level(2)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .try_get_compiler()
        .map_err(|error| LauncherError::Compile { message: error.to_string() })?;
    Ok(tool.to_command())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Runs a program this test just wrote. Exec can answer ETXTBSY for a moment while a
    /// child that another test thread forked still holds the file's write descriptor
    /// (close-on-exec closes it only at that child's exec).
    fn run_fresh(command: &mut Command) -> std::process::Output {
        for attempt in 0..10 {
            match command.output() {
                Err(error) if error.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(std::time::Duration::from_millis(10 << attempt.min(5)));
                }
                result => return result.expect("run launcher"),
            }
        }
        command.output().expect("run launcher")
    }

    #[test]
    fn launcher_runs_its_target_with_argv0() {
        let dir = tempfile::tempdir().expect("tempdir");
        let template = LauncherTemplate::compile(dir.path()).expect("compile launcher");
        let bin = dir.path().join("bin");
        let libexec = dir.path().join("libexec");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::fs::create_dir_all(&libexec).expect("mkdir");
        let script = libexec.join("tool.sh");
        std::fs::write(&script, "#!/bin/sh\necho \"ran $0 $1\"\n").expect("write script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let launcher = bin.join("tool");
        std::fs::write(&launcher, template.instantiate("../libexec/tool.sh").expect("instantiate")).expect("write");
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let output = run_fresh(Command::new(&launcher).arg("hello"));
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!("ran {}/../libexec/tool.sh hello\n", bin.display())
        );

        let broken = bin.join("broken");
        std::fs::write(&broken, template.instantiate("../libexec/missing").expect("instantiate")).expect("write");
        std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let output = run_fresh(&mut Command::new(&broken));
        assert_eq!(output.status.code(), Some(127));
        assert!(String::from_utf8_lossy(&output.stderr).contains("libexec/missing"));
    }

    #[test]
    fn compiling_twice_gives_the_same_bytes() {
        let first = tempfile::tempdir().expect("tempdir");
        let second = tempfile::tempdir().expect("tempdir");
        let a = LauncherTemplate::compile(first.path()).expect("compile").instantiate("x").expect("instantiate");
        let b = LauncherTemplate::compile(second.path()).expect("compile").instantiate("x").expect("instantiate");
        assert_eq!(a, b);
    }
}
