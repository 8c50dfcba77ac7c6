//! What holds in every venv the ROCm packages are installed in, legacy and kpack-split alike
//! (SPEC §2 and §4): shared libraries load alone, launchers keep their
//! argv[0], symlinks live only in the expanded devel tree, libraries reach core through
//! their RPATH whatever `LD_LIBRARY_PATH` says, the devel tree agrees with the plan,
//! concurrent first uses expand it once and completely, each wheel's bill of materials sits
//! in its installed `.dist-info/sboms/`, and `pip uninstall` takes every file away again. The tests in `install` and `targets::install` run these checks on
//! their own installs, so each mode pays for its venvs once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support;

/// A `PATH` on which no `offload-arch` is found, so a GPU tool of the machine running the
/// tests cannot change the family the runtime picks.
pub const PATH_WITHOUT_GPU_TOOLS: &str = "/usr/bin:/bin";

/// How many `rocm-sdk init` processes race for the first expansion of the devel tree.
const CONCURRENT_INITS: usize = 8;

/// The environment variables that change what the runtime does (SPEC §4, Environment).
const RUNTIME_VARIABLES: [&str; 4] =
    ["LD_LIBRARY_PATH", "ROCM_SDK_TARGET_FAMILY", "ROCM_SDK_PRELOAD_LIBRARIES", "ROCM_SDK_VERBOSE"];

/// `venv/bin/{program}` with the runtime's environment variables removed, no GPU tools on
/// `PATH` and the KFD topology of a machine without a GPU: what the packages do then
/// depends on the venv alone, whatever GPUs the machine running the tests has.
pub fn venv_command(venv: &Path, program: &str) -> Command {
    let mut command = Command::new(venv.join("bin").join(program));
    command.env("PATH", PATH_WITHOUT_GPU_TOOLS);
    for name in RUNTIME_VARIABLES {
        command.env_remove(name);
    }
    command.env("ROCM_SDK_KFD_TOPOLOGY", support::kfd_topology("cpu_only"));
    command
}

/// `python -c code args...` in the venv (see [`venv_command`]); the caller checks the output.
pub fn python(venv: &Path, code: &str, args: &[&Path], envs: &[(&str, &str)]) -> Output {
    let mut command = venv_command(venv, "python");
    command.arg("-c").arg(code).args(args).envs(envs.iter().copied());
    command.output().expect("run the venv's python")
}

pub use crate::support::assert_success;

/// `rocm-sdk {args}` in the venv, which must succeed; returns its stdout.
pub fn rocm_sdk(venv: &Path, args: &[&str], envs: &[(&str, &str)]) -> String {
    support::run(venv_command(venv, "rocm-sdk").args(args).envs(envs.iter().copied()))
}

/// The venv's `site-packages`.
pub fn site_packages(venv: &Path) -> PathBuf {
    let text = support::run(
        Command::new(venv.join("bin/python")).args(["-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]),
    );
    PathBuf::from(text.trim())
}

/// The expanded devel tree's root, as `rocm-sdk path --root` prints it (expanding it first).
pub fn devel_root(venv: &Path) -> PathBuf {
    PathBuf::from(rocm_sdk(venv, &["path", "--root"], &[]).trim())
}

/// Every path below `dir` (links not followed), sorted.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs_err::read_dir(&next).expect("read_dir") {
            let entry = entry.expect("directory entry");
            let path = entry.path();
            if entry.file_type().expect("file type").is_dir() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Everything the packages can add to a venv: site-packages and the scripts directory.
pub fn venv_listing(venv: &Path) -> Vec<PathBuf> {
    let mut listing = walk(&site_packages(venv));
    listing.extend(walk(&venv.join("bin")));
    listing.sort();
    listing
}

/// Installed distributions whose name starts with `rocm`.
pub fn rocm_dists(venv: &Path) -> BTreeSet<String> {
    let json = support::run(Command::new(venv.join("bin/python")).args(["-m", "pip", "list", "--format=json"]));
    let list: serde_json::Value = serde_json::from_str(&json).expect("pip list JSON");
    list.as_array()
        .expect("a list")
        .iter()
        .filter_map(|package| package["name"].as_str())
        .filter(|name| name.starts_with("rocm"))
        .map(str::to_owned)
        .collect()
}

/// Every wheel of `dist` that is installed in `venv` has its bill of materials in its
/// installed `.dist-info/sboms/` (PEP 770), the bytes the wheel carries; returns how many
/// installed wheels were found.
pub fn assert_sboms_installed(venv: &Path, dist: &Path) -> usize {
    let site = site_packages(venv);
    let mut installed = 0;
    for (wheel, document) in crate::sbom::sboms(dist) {
        let mut parts = wheel.splitn(3, '-');
        let (name, version) = (parts.next().expect("a name"), parts.next().expect("a version"));
        let dist_info = site.join(format!("{name}-{version}.dist-info"));
        if !dist_info.exists() {
            continue;
        }
        let path = dist_info.join(crate::sbom::SBOM_LEAF);
        let installed_bytes = fs_err::read(&path).unwrap_or_else(|error| panic!("{wheel}: {error}"));
        assert!(installed_bytes == document, "{} is not the document {wheel} carries", path.display());
        installed += 1;
    }
    installed
}

/// The files of the runtime packages (every `_rocm*` platform dir but devel's).
fn runtime_files(site: &Path) -> Vec<PathBuf> {
    walk(site)
        .into_iter()
        .filter(|path| {
            let top = path.strip_prefix(site).ok().and_then(|rel| rel.components().next());
            let top = top.map(|component| component.as_os_str().to_string_lossy().into_owned());
            top.is_some_and(|top| top.starts_with("_rocm") && !top.starts_with("_rocm_sdk_devel"))
        })
        .filter(|path| path.is_file())
        .collect()
}

fn is_host_shared_library(path: &Path) -> bool {
    matches!(packager::elf::read_elf(path), Ok(Some(info)) if info.kind == packager::elf::ElfKind::SharedLibrary && info.is_patchable())
}

/// What every installed example passes, whatever its mode: the bundled self-tests, then
/// each runtime library and launcher on its own, the symlink rule, and the RPATH rule for
/// `library` (a libraries-package library relative to site-packages, which needs core).
pub fn assert_installation_works(venv: &Path, scratch: &Path, library: &str) {
    rocm_sdk(venv, &["test"], &[]);
    let site = site_packages(venv);
    let devel_root = devel_root(venv);
    assert!(devel_root.starts_with(&site), "devel root {} is in site-packages", devel_root.display());
    let runtime_files = runtime_files(&site);
    assert_libraries_load_alone(venv, &runtime_files);
    assert_launchers_keep_their_argv0(&runtime_files);
    for path in walk(&site) {
        if path.is_symlink() {
            assert!(path.starts_with(&devel_root), "symlink outside the devel tree: {}", path.display());
        }
    }
    let output = venv_command(venv, "rocm-smi").output().expect("run rocm-smi");
    assert_success(&output, "rocm-smi through its launcher");
    assert!(String::from_utf8_lossy(&output.stdout).contains("data-beside-the-real-script"));
    assert_core_found_through_rpath_only(venv, scratch, &site.join(library));
}

/// Every shared library of the runtime packages loads in a fresh process, alone.
fn assert_libraries_load_alone(venv: &Path, runtime_files: &[PathBuf]) {
    let libraries: Vec<&PathBuf> = runtime_files.iter().filter(|path| is_host_shared_library(path)).collect();
    assert!(libraries.len() > 30, "found only {} libraries", libraries.len());
    for library in libraries {
        let output = python(venv, "import ctypes, sys; ctypes.CDLL(sys.argv[1])", &[library], &[]);
        assert_success(&output, &format!("loading {}", library.display()));
    }
}

/// Every launcher runs its target, which sees the launcher's own argv[0].
fn assert_launchers_keep_their_argv0(runtime_files: &[PathBuf]) {
    let mut n_launchers = 0;
    for path in runtime_files {
        let bytes = fs_err::read(path).expect("read");
        if bytes.len() > 1 << 20 || !bytes.windows(25).any(|window| window == b"ROCM_SDK_LAUNCHER_TARGET=") {
            continue;
        }
        n_launchers += 1;
        let output = Command::new(path).arg("--version").env_remove("LD_LIBRARY_PATH").output().expect("launcher");
        assert_success(&output, &format!("launcher {}", path.display()));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("example:"), "{} printed {stdout:?}", path.display());
        if stdout.contains("argv0=") {
            assert!(
                stdout.contains(&format!("argv0={}", path.display())),
                "{} lost its argv[0]: {stdout}",
                path.display()
            );
        }
    }
    assert!(n_launchers >= 5, "found only {n_launchers} launchers");
}

/// `library` finds core's `libamdhip64.so.7` through its packaged search path, never
/// through `LD_LIBRARY_PATH`: a decoy with core's SONAME there would win if the packaged
/// path were DT_RUNPATH (SPEC §2, RPATH dependencies).
fn assert_core_found_through_rpath_only(venv: &Path, scratch: &Path, library: &Path) {
    let decoy_dir = scratch.join("decoy");
    fs_err::create_dir_all(&decoy_dir).expect("mkdir");
    support::shared_lib(
        &decoy_dir,
        "libamdhip64.so.7",
        "const char *amdhip64_example_name(void) { return \"decoy\"; }\n",
        &[],
    );
    let load = "import ctypes, sys\n\
                lib = ctypes.CDLL(sys.argv[1])\n\
                f = lib.rocblas_example_dependency\n\
                f.restype = ctypes.c_char_p\n\
                print(f().decode())";
    let decoy = decoy_dir.to_string_lossy();
    for envs in [&[][..], &[("LD_LIBRARY_PATH", decoy.as_ref())][..]] {
        let output = python(venv, load, &[library], envs);
        assert_success(&output, &format!("loading {}", library.display()));
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "example:amdhip64", "with {envs:?}");
    }
}

/// The expanded devel tree holds every entry the plan of `devel_dist` gives it; links to
/// runtime files resolve to the installed runtime file itself (a hard link or a symlink
/// into another platform dir), and the compiler drivers stay symlinks (SPEC §4).
pub fn assert_devel_tree_matches_plan(venv: &Path, artifacts: &Path, devel_dist: &str) {
    let devel_root = devel_root(venv);
    let site = site_packages(venv);
    let config = support::package_config(artifacts, Path::new("/nonexistent-dest"));
    let plan = packager::plan(&config, &packager::Silent).expect("plan");
    let devel = plan.packages.iter().find(|package| package.names.distribution == devel_dist).expect("devel plan");
    let mut n_runtime = 0;
    let tree = devel.devel_tree.as_ref().expect("a devel tree").collect().expect("devel tree");
    for (rel, entry) in &tree {
        let path = devel_root.join(rel.as_str());
        assert!(path.symlink_metadata().is_ok(), "{rel} missing from the expanded devel tree");
        if let packager::plan::DevelEntry::Symlink { target, why } = entry {
            assert!(path.exists(), "{rel} -> {target} does not resolve");
            if *why == packager::plan::LinkReason::RuntimePackage {
                n_runtime += 1;
                let runtime = path.parent().expect("parent").join(target);
                let runtime = std::fs::canonicalize(runtime).expect("runtime file");
                assert!(
                    runtime.starts_with(&site) && !runtime.starts_with(&devel_root),
                    "{rel} reaches {}",
                    runtime.display()
                );
                assert!(same_inode(&path, &runtime), "{rel} is the installed runtime file");
            }
        }
    }
    assert!(n_runtime > 20, "only {n_runtime} runtime links");
    let clang = devel_root.join("bin/amdclang");
    assert!(clang.symlink_metadata().expect("amdclang").file_type().is_symlink(), "compiler drivers stay symlinks");
}

pub fn same_inode(first: &Path, second: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (fs_err::metadata(first).expect("stat"), fs_err::metadata(second).expect("stat"));
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

/// Races [`CONCURRENT_INITS`] `rocm-sdk init --quiet` on a fresh install (SPEC §4: a file
/// lock makes concurrent first use safe). All succeed and print nothing on stdout; with
/// `ROCM_SDK_VERBOSE=1` exactly one logs the expansion, so it happened once; and it is
/// complete (see [`assert_records_complete`]).
pub fn init_concurrently(venv: &Path) {
    let children: Vec<std::process::Child> = (0..CONCURRENT_INITS)
        .map(|_| {
            venv_command(venv, "rocm-sdk")
                .args(["init", "--quiet"])
                .env("ROCM_SDK_VERBOSE", "1")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start rocm-sdk init")
        })
        .collect();
    let mut n_expanded = 0;
    for child in children {
        let output = child.wait_with_output().expect("wait for rocm-sdk init");
        assert_success(&output, "concurrent rocm-sdk init --quiet");
        assert!(output.stdout.is_empty(), "--quiet printed {:?}", String::from_utf8_lossy(&output.stdout));
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.is_empty() {
            continue;
        }
        assert!(stderr.starts_with("rocm_sdk: expanding ") && stderr.lines().count() == 1, "{stderr}");
        n_expanded += 1;
    }
    assert_eq!(n_expanded, 1, "the devel tree was expanded {n_expanded} times");
    assert_records_complete(venv);
}

/// The RECORD of every installed `rocm*` distribution lists each path once, and each path
/// exists, but the devel tarball: pip installed it, and a finished expansion deletes it.
pub fn assert_records_complete(venv: &Path) {
    let code = "import importlib.metadata as m, json\n\
        print(json.dumps({d.metadata['Name']: [str(f) for f in d.files] for d in m.distributions()\n\
        if d.metadata['Name'].startswith('rocm')}))";
    let output = python(venv, code, &[], &[]);
    assert_success(&output, "reading the RECORD files");
    let records: BTreeMap<String, Vec<String>> = serde_json::from_slice(&output.stdout).expect("RECORD JSON");
    let site = site_packages(venv);
    let mut n_tarballs = 0;
    for (dist, paths) in &records {
        let mut seen = BTreeSet::new();
        for path in paths {
            assert!(seen.insert(path), "{dist} records {path} twice");
            let file_name = path.rsplit('/').next().unwrap_or_default();
            if file_name.starts_with("_devel.tar") {
                n_tarballs += 1;
                assert!(!site.join(path).exists(), "{path} is still there after the expansion");
            } else {
                assert!(site.join(path).symlink_metadata().is_ok(), "{dist} records {path}, which is missing");
            }
        }
    }
    assert_eq!(n_tarballs, 1, "one devel tarball in {:?}", records.keys());
}

/// Which installer uninstalls: both must remove what the packages created after
/// installation (the devel tree, device links), through the RECORD files alone.
#[derive(Clone, Copy, Debug)]
pub enum Uninstaller {
    Pip,
    Uv,
}

/// Uninstalling every installed `rocm*` distribution at once leaves the venv's
/// site-packages and scripts exactly as `before` (taken before the install).
pub fn assert_uninstall_restores(venv: &Path, before: &[PathBuf], uninstaller: Uninstaller) {
    let dists = rocm_dists(venv);
    assert!(!dists.is_empty(), "nothing to uninstall");
    let mut command = match uninstaller {
        Uninstaller::Pip => {
            let mut command = Command::new(venv.join("bin/python"));
            command.args(["-m", "pip", "uninstall", "-y", "-q"]);
            command
        }
        Uninstaller::Uv => {
            let mut command = Command::new(support::tools_venv().join("bin/uv"));
            command.args(["pip", "uninstall", "--python"]).arg(venv.join("bin/python"));
            command
        }
    };
    support::run(command.args(&dists));
    let (before, after): (BTreeSet<&PathBuf>, Vec<PathBuf>) = (before.iter().collect(), venv_listing(venv));
    let after: BTreeSet<&PathBuf> = after.iter().collect();
    let added: Vec<&&PathBuf> = after.difference(&before).collect();
    let removed: Vec<&&PathBuf> = before.difference(&after).collect();
    assert!(added.is_empty() && removed.is_empty(), "left behind: {added:#?}\nremoved: {removed:#?}");
}
