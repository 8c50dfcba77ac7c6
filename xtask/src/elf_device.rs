//! `cargo xtask elf --show-device` and `--unbundle DIR`: what device code a file carries
//! and what a split would do with it (SPEC §12): its state (fat, already split, none), its
//! fat-binary wrappers, each offload bundle with its targets and sizes; and the code
//! objects written out, one file each, named as `clang-offload-bundler --list` names the
//! entries (`<bundle>-<entry id>.hsaco`, `-<n>` after a repeated id).
//!
//! Owns: the printing and file naming. Does not own: reading bundles (`device-code`).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use device_code::bundle::FatBinary;
use device_code::host::{self, FatState};
use device_code::DeviceCodeError;
use diagnostic::Diagnostic;

/// Prints the device code of `file` (`show`) and writes its code objects into `unbundle`.
pub fn run_one(file: &Path, show: bool, unbundle: Option<&Path>) -> Result<(), (String, &'static str)> {
    let describe = |error: DeviceCodeError| {
        let hint = error.hint().unwrap_or("check that the file exists and is readable");
        (error.to_string(), hint)
    };
    let opened =
        File::open(file).map_err(|source| describe(DeviceCodeError::Io { path: file.to_path_buf(), source }))?;
    let binary = host::inspect(&opened, file).map_err(describe)?;
    let state = match binary.state() {
        FatState::Fat => "fat",
        FatState::AlreadySplit => "split (its wrappers point at a kpack marker)",
        FatState::NotFat => "no device code",
    };
    if show {
        println!("{}: {state}, {} fat-binary wrappers", file.display(), binary.wrappers().len());
    }
    let Some(fat) = FatBinary::read(&opened, file).map_err(describe)? else {
        return Ok(());
    };
    if let Some(dir) = unbundle {
        std::fs::create_dir_all(dir)
            .map_err(|source| describe(DeviceCodeError::Io { path: dir.to_path_buf(), source }))?;
    }
    for (index, bundle) in fat.bundles().iter().enumerate() {
        if show {
            let kind = if bundle.compressed { "compressed" } else { "plain" };
            println!("  bundle {index} at {:#x}: {kind}, {} bytes", bundle.offset_in_section, bundle.len);
        }
        for code_object in &bundle.entries {
            if show {
                println!("    {} {} bytes", code_object.entry_id, code_object.size);
            }
            if let Some(dir) = unbundle {
                let repeat = match code_object.repeat {
                    0 => String::new(),
                    n => format!("-{n}"),
                };
                let path = dir.join(format!("{index}-{}{repeat}.hsaco", code_object.entry_id));
                let out = File::create(&path)
                    .map_err(|source| describe(DeviceCodeError::Io { path: path.clone(), source }))?;
                let mut out = BufWriter::new(out);
                fat.copy_code_object(code_object, &mut out).map_err(describe)?;
                out.into_inner().map_err(|error| {
                    describe(DeviceCodeError::Io { path: path.clone(), source: error.into_error() })
                })?;
            }
        }
    }
    Ok(())
}
