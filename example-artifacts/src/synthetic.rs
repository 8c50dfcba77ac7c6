//! A scalable synthetic build for `cargo xtask bench`: the bundled example plus
//! bulk shaped like a real ROCm tree. A few very large shared libraries (real ELF files
//! compiled with cc, grown by `objcopy --add-section` with incompressible and compressible
//! regions), medium kernel databases, tens of thousands of small headers and cmake files,
//! SONAME symlink chains and executables behind symlinks.
//!
//! Owns: the bulk's shape and writing it fast. Does not own: the example's rules
//! (`layout`), compiling ELF files (`spec`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use rayon::prelude::*;

use super::spec::{self, ArtifactSpec, Elf};
use super::{toolchain, ExampleError, ExampleOptions};

/// What to generate.
#[derive(Clone, Debug)]
pub struct SyntheticOptions {
    /// Target size of all regular files together; the result is within a few percent.
    pub payload_bytes: u64,
    /// Seeds the byte generator, so the same options give the same content.
    pub seed: u64,
}

/// What [`write_synthetic`] wrote.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SyntheticSummary {
    /// Regular files and their bytes, `artifact_manifest.txt` included.
    pub n_files: u64,
    pub payload_bytes: u64,
    pub n_symlinks: u64,
    /// The grown shared libraries and the largest of them.
    pub n_large_libraries: u64,
    pub largest_file_bytes: u64,
}

/// Share of the payload in the large libraries, the kernel databases and the small files.
const LARGE_SHARE: f64 = 0.78;
const DATABASE_SHARE: f64 = 0.10;
const SMALL_SHARE: f64 = 0.12;
/// Average size of a header or cmake file, as in a ROCm `include/` tree.
const SMALL_FILE_BYTES: u64 = 6 * 1024;
/// Region size of the large libraries' and databases' contents.
const REGION: usize = 1 << 20;
/// Which of every 8 regions are random (incompressible); the rest is repetitive text.
/// Real ROCm libraries deflate to about a third of their size, and they begin with
/// compressible headers and code: a file beginning with random bytes would be stored
/// whole by the writer's rule that decides from a member's first chunk.
const RANDOM_REGION_SLOTS: [u64; 2] = [2, 6];

/// Writes the legacy example into `out` (missing or empty), then the synthetic bulk.
pub fn write_synthetic(out: &Path, options: &SyntheticOptions) -> Result<SyntheticSummary, ExampleError> {
    super::write_example(out, &ExampleOptions::default())?;
    let families = super::LEGACY_FAMILIES;
    let extra = synthetic_artifacts(options.payload_bytes, &families);
    spec::materialize(out, &extra)?;

    let large = large_libraries(&families);
    let large_budget = (options.payload_bytes as f64 * LARGE_SHARE) as u64;
    large
        .par_iter()
        .map(|(path, share)| {
            let bytes = (large_budget as f64 * share) as u64;
            grow_library(&out.join(path), bytes, options.seed ^ hash(path))
        })
        .collect::<Result<Vec<()>, ExampleError>>()?;

    let database_budget = (options.payload_bytes as f64 * DATABASE_SHARE) as u64;
    write_databases(out, &families, database_budget, options.seed)?;
    let small_budget = (options.payload_bytes as f64 * SMALL_SHARE) as u64;
    write_small_files(out, small_budget, options.seed)?;

    let mut summary = summarize(out)?;
    summary.n_large_libraries = large.len() as u64;
    Ok(summary)
}

/// Artifacts the example does not have, named as a real build names them, so every
/// package picks them up: a core library chain and tools, per-family providers.
fn synthetic_artifacts(payload_bytes: u64, families: &[&str]) -> Vec<ArtifactSpec> {
    let mut artifacts = Vec::new();

    let mut lib = ArtifactSpec::new("rocr-debug-agent_lib_generic", &["core/rocr-debug-agent/stage"]);
    lib.library("lib", Elf::library("libhsa-amd-aqlprofile64.so.1", "aqlprofile").rpath(&["$ORIGIN"], true));
    // SONAME chains as a real build installs them: `.so -> .so.1 -> .so.1.0.0`, the real
    // file named differently from its SONAME.
    let n_chains = (payload_bytes >> 26).clamp(4, 32);
    for index in 0..n_chains {
        let soname = format!("libsynth{index}.so.1");
        lib.elf(
            &format!("lib/{soname}.0.0"),
            Elf::library(&soname, &format!("synth{index}")).rpath(&["$ORIGIN"], true),
        )
        .link(&format!("lib/{soname}"), &format!("{soname}.0.0"))
        .link(&format!("lib/libsynth{index}.so"), &soname);
    }
    artifacts.push(lib);

    // Executables found through symlinks (each becomes a launcher).
    let mut run = ArtifactSpec::new("rocr-debug-agent_run_generic", &["core/rocr-debug-agent/stage"]);
    for index in 0..12 {
        let tool = format!("synth-tool{index}");
        run.elf(&format!("libexec/synth/{tool}"), Elf::program(&tool))
            .link(&format!("bin/{tool}"), &format!("../libexec/synth/{tool}"))
            .link(&format!("bin/{tool}-latest"), &tool);
    }
    artifacts.push(run);

    for family in families {
        let mut provider =
            ArtifactSpec::new(&format!("hipblasltprovider_lib_{family}"), &["math-libs/hipBLASLt/stage"]);
        provider
            .library("lib", Elf::library("libhipblaslt_provider.so.1", "hipblaslt_provider").rpath(&["$ORIGIN"], true));
        artifacts.push(provider);
        let mut miopen = ArtifactSpec::new(&format!("miopenprovider_lib_{family}"), &["ml-libs/MIOpenProvider/stage"]);
        miopen.library("lib", Elf::library("libmiopen_provider.so.1", "miopen_provider").rpath(&["$ORIGIN"], true));
        artifacts.push(miopen);
    }
    artifacts
}

/// The libraries grown to hundreds of MB, with their share of the large budget: one core
/// library, then two per family.
fn large_libraries(families: &[&str]) -> Vec<(PathBuf, f64)> {
    let mut large = vec![(
        PathBuf::from("rocr-debug-agent_lib_generic/core/rocr-debug-agent/stage/lib/libhsa-amd-aqlprofile64.so.1"),
        0.3,
    )];
    let per_library = 0.7 / (2 * families.len()) as f64;
    for family in families {
        large.push((
            PathBuf::from(format!(
                "hipblasltprovider_lib_{family}/math-libs/hipBLASLt/stage/lib/libhipblaslt_provider.so.1"
            )),
            per_library,
        ));
        large.push((
            PathBuf::from(format!(
                "miopenprovider_lib_{family}/ml-libs/MIOpenProvider/stage/lib/libmiopen_provider.so.1"
            )),
            per_library,
        ));
    }
    large
}

/// Adds a non-allocated `.rocm_blob` section of `bytes` to the ELF file at `path`, the way
/// debug info or an offload bundle makes real libraries big. The file stays a valid ELF
/// file that loads as before.
fn grow_library(path: &Path, bytes: u64, seed: u64) -> Result<(), ExampleError> {
    let blob = path.with_extension("blob");
    write_content(&blob, bytes, seed)?;
    let grown = path.with_extension("grown");
    let mut objcopy = Command::new(std::env::var_os("OBJCOPY").unwrap_or_else(|| "objcopy".into()));
    objcopy.arg("--add-section").arg(format!(".rocm_blob={}", blob.display()));
    objcopy.args(["--set-section-flags", ".rocm_blob=readonly,contents"]);
    objcopy.arg(path).arg(&grown);
    let result = toolchain::run(objcopy, path);
    let _ = std::fs::remove_file(&blob);
    result?;
    let mode = std::fs::metadata(path).map_err(|source| io_error(path, source))?.permissions();
    std::fs::set_permissions(&grown, mode).map_err(|source| io_error(&grown, source))?;
    std::fs::rename(&grown, path).map_err(|source| io_error(path, source))
}

/// Kernel databases (`.dat`, `.co`) of a few MB each beside the per-family providers.
fn write_databases(out: &Path, families: &[&str], budget: u64, seed: u64) -> Result<(), ExampleError> {
    let per_family = budget / families.len() as u64;
    let n_files = (per_family / (3 << 20)).max(1);
    let jobs: Vec<(PathBuf, u64, u64)> = families
        .iter()
        .flat_map(|family| {
            (0..n_files).map(move |index| {
                let extension = if index % 2 == 0 { "dat" } else { "co" };
                let path = out.join(format!(
                    "hipblasltprovider_lib_{family}/math-libs/hipBLASLt/stage/lib/hipblaslt/library/Kernels_{index}_{family}.{extension}"
                ));
                (path, per_family / n_files, seed ^ hash(Path::new(family)) ^ index)
            })
        })
        .collect();
    jobs.par_iter().map(|(path, bytes, seed)| write_content(path, *bytes, *seed)).collect::<Result<Vec<()>, _>>()?;
    Ok(())
}

/// Headers and cmake files for the devel package (header-only libraries, as rocWMMA and
/// rocPRIM are), spread over directories of at most a few hundred files.
fn write_small_files(out: &Path, budget: u64, seed: u64) -> Result<(), ExampleError> {
    let n_files = (budget / SMALL_FILE_BYTES).max(16);
    let artifacts = [
        ("rocwmma_dev_generic", "math-libs/rocWMMA/stage", "include/rocwmma"),
        ("flatbuffers_dev_generic", "third-party/flatbuffers/stage", "include/flatbuffers"),
    ];
    for (dir_name, prefix, _) in artifacts {
        write_bytes(&out.join(dir_name).join("artifact_manifest.txt"), format!("{prefix}\n").as_bytes())?;
    }
    (0..n_files)
        .into_par_iter()
        .map(|index| {
            let (dir_name, prefix, include) = artifacts[(index % 2) as usize];
            let group = index / 256;
            let root = out.join(dir_name).join(prefix);
            let path = if index % 10 == 9 {
                root.join(format!("lib/cmake/synth{group}/synth{index}-config.cmake"))
            } else {
                root.join(format!("{include}/detail{group}/header{index}.hpp"))
            };
            let mut state = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            // Sizes vary around the average, as real headers do.
            let len = SMALL_FILE_BYTES / 4 + next(&mut state) % (SMALL_FILE_BYTES * 3 / 2);
            let mut text = String::with_capacity(len as usize + 128);
            text.push_str(&format!("// synthetic {index}\n#pragma once\n"));
            while (text.len() as u64) < len {
                let line = next(&mut state) % 1000;
                text.push_str(&format!(
                    "template <typename T{line}> inline T{line} synth_fn_{index}_{line}(T{line} x) {{ return x * {line}; }}\n"
                ));
            }
            write_bytes(&path, text.as_bytes())
        })
        .collect::<Result<Vec<()>, _>>()?;
    Ok(())
}

/// `bytes` of content in [`REGION`]s: some random, the rest repetitive assembly-like text.
fn write_content(path: &Path, bytes: u64, seed: u64) -> Result<(), ExampleError> {
    create_parent(path)?;
    let file = File::create(path).map_err(|source| io_error(path, source))?;
    let mut writer = BufWriter::with_capacity(REGION, file);
    let mut state = seed | 1;
    let mut region = vec![0u8; REGION];
    let mut written = 0u64;
    let mut index = 0u64;
    while written < bytes {
        let len = (bytes - written).min(REGION as u64) as usize;
        if RANDOM_REGION_SLOTS.contains(&(index % 8)) {
            fill_random(&mut region[..len], &mut state);
        } else {
            fill_text(&mut region[..len], &mut state);
        }
        writer.write_all(&region[..len]).map_err(|source| io_error(path, source))?;
        written += len as u64;
        index += 1;
    }
    writer.flush().map_err(|source| io_error(path, source))
}

fn fill_random(buffer: &mut [u8], state: &mut u64) {
    for chunk in buffer.chunks_mut(8) {
        let value = next(state).to_le_bytes();
        chunk.copy_from_slice(&value[..chunk.len()]);
    }
}

/// Instruction-like lines with varying operands: deflates about 4:1, like code.
fn fill_text(buffer: &mut [u8], state: &mut u64) {
    const OPS: [&str; 8] = [
        "v_mad_f32",
        "s_load_dword",
        "v_add_u32",
        "global_load_dwordx4",
        "s_waitcnt",
        "v_mov_b32",
        "ds_read_b128",
        "v_fma_f16",
    ];
    let mut at = 0;
    while at < buffer.len() {
        let random = next(state);
        let line = format!(
            "  {} v{}, v{}, s[{}:{}]\n",
            OPS[(random % 8) as usize],
            (random >> 8) % 256,
            (random >> 16) % 256,
            (random >> 24) % 64,
            (random >> 24) % 64 + 3
        );
        let take = line.len().min(buffer.len() - at);
        buffer[at..at + take].copy_from_slice(&line.as_bytes()[..take]);
        at += take;
    }
}

/// splitmix64: fast, seeded, good enough to defeat deflate.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a of a path, to give each file its own seed.
fn hash(path: &Path) -> u64 {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

/// Counts what is on disk (the example's part included).
fn summarize(out: &Path) -> Result<SyntheticSummary, ExampleError> {
    let mut summary = SyntheticSummary::default();
    let mut pending = vec![out.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|source| io_error(&dir, source))? {
            let entry = entry.map_err(|source| io_error(&dir, source))?;
            let file_type = entry.file_type().map_err(|source| io_error(&entry.path(), source))?;
            if file_type.is_dir() {
                pending.push(entry.path());
            } else if file_type.is_symlink() {
                summary.n_symlinks += 1;
            } else if file_type.is_file() {
                let len = entry.metadata().map_err(|source| io_error(&entry.path(), source))?.len();
                summary.n_files += 1;
                summary.payload_bytes += len;
                summary.largest_file_bytes = summary.largest_file_bytes.max(len);
            }
        }
    }
    Ok(summary)
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), ExampleError> {
    create_parent(path)?;
    std::fs::write(path, bytes).map_err(|source| io_error(path, source))
}

fn create_parent(path: &Path) -> Result<(), ExampleError> {
    match path.parent() {
        Some(parent) => std::fs::create_dir_all(parent).map_err(|source| io_error(parent, source)),
        None => Ok(()),
    }
}

fn io_error(path: &Path, source: std::io::Error) -> ExampleError {
    ExampleError::Io { path: path.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_mixes_random_and_text_regions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("blob");
        write_content(&path, 8 * REGION as u64 + 5, 7).expect("write");
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len(), 8 * REGION + 5);
        // The file begins with text, as a library does; a random region has no line structure.
        assert!(bytes[..REGION].starts_with(b"  "));
        assert!(std::str::from_utf8(&bytes[..REGION]).is_ok());
        assert!(bytes[2 * REGION..3 * REGION].iter().filter(|&&b| b == b'\n').count() < REGION / 100);
        assert!(std::str::from_utf8(&bytes[3 * REGION..4 * REGION]).is_ok());
    }
}
