//! The bundled example build: both modes generate, their ELF files are real with the
//! intended SONAMEs, executables run, and the catalog reads the result.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use example_artifacts::{
    write_example, ExampleOptions, ExampleSummary, DEVICE_TARGET_IDS, FAT_FAMILY, FAT_LIBRARIES, FAT_TARGET_IDS,
    KPACK_LOADER_SYMBOL, LEGACY_FAMILIES,
};
use packager::input::catalog::{Catalog, EntryKind, Selection};
use packager::RelPath;

fn generate(kpack_split: bool) -> (tempfile::TempDir, ExampleSummary) {
    let temp = tempfile::tempdir().expect("tempdir");
    let summary = write_example(&temp.path().join("artifacts"), &ExampleOptions { kpack_split, ..Default::default() })
        .expect("example");
    (temp, summary)
}

/// SONAME and DT_NEEDED of an ELF file, read back with goblin.
fn dynamic(path: &Path) -> (Option<String>, Vec<String>) {
    let bytes = fs_err::read(path).expect("read ELF");
    let elf = goblin::elf::Elf::parse(&bytes).expect("a real ELF file");
    (elf.soname.map(str::to_owned), elf.libraries.iter().map(|name| name.to_string()).collect())
}

fn all_artifacts() -> Selection<'static> {
    Selection { artifacts: &|_| true, include: vec![], exclude: vec![] }
}

fn rel(text: &str) -> RelPath {
    RelPath::new(text).expect("valid test path")
}

/// What both examples hold; `clashes` says whether paths of one artifact override another's
/// when every artifact is selected at once (a legacy build's families do, SPEC §2).
fn check_common(artifacts: &Path, summary: &ExampleSummary, clashes: bool) {
    // Each example has some forty artifacts: the checks below run on all of them.
    assert!(summary.artifacts.len() > 30, "{:?}", summary.artifacts);
    for name in &summary.artifacts {
        assert!(artifacts.join(name).join("artifact_manifest.txt").is_file(), "{name} has no manifest");
    }
    let catalog = Catalog::read(artifacts).expect("the catalog reads the example");
    let names: Vec<String> = catalog.artifacts.iter().map(|artifact| artifact.name.dir_name()).collect();
    assert_eq!(names, summary.artifacts);
    assert!(catalog.ignored.is_empty(), "{:?}", catalog.ignored);
    let namespace = catalog.select(&all_artifacts()).expect("select everything");
    let kind = |path: &str| namespace.all.get(&rel(path)).map(|entry| entry.kind.clone());
    let link = |path: &str, target: &str| {
        assert_eq!(kind(path), Some(EntryKind::Symlink { target: target.to_owned() }), "{path}");
    };

    // The SONAME chain and the links the plan must resolve in the merged namespace.
    link("lib/libamdhip64.so", "libamdhip64.so.7");
    link("lib/libamdhip64.so.7", "libamdhip64.so.7.1.0");
    link("lib/libamdhip64.so.6", "libamdhip64.so.6.4.0");
    link("lib/llvm/bin/amdclang", "clang");
    link("bin/amdclang", "../lib/llvm/bin/amdclang");
    link("bin/rocm-smi", "../libexec/rocm_smi/rocm_smi.py");
    link("lib/llvm/lib/clang/current", "22");
    let version = kind("share/hip/version");
    assert!(matches!(version, Some(EntryKind::File { len: 18, mode: 0o444, .. })), "{version:?}");
    assert_eq!(kind("include/hip/nvidia_detail"), Some(EntryKind::Dir));
    // Selecting every artifact at once, the only clashes are one library in two legacy
    // families (a real package never selects both).
    assert_eq!(!namespace.overridden.is_empty(), clashes, "{:?}", namespace.overridden);
    for clash in &namespace.overridden {
        let family = |name: &str| name.rsplit('_').next().map(str::to_owned);
        assert!(LEGACY_FAMILIES.iter().any(|f| family(&clash.winner).as_deref() == Some(*f)), "{clash:?}");
        assert!(LEGACY_FAMILIES.iter().any(|f| family(&clash.loser).as_deref() == Some(*f)), "{clash:?}");
    }

    let source = |path: &str| namespace.all[&rel(path)].source.to_path_buf();
    for (path, soname, needed) in [
        ("lib/libamdhip64.so.7.1.0", "libamdhip64.so.7", Some("libhsa-runtime64.so.1")),
        ("lib/llvm/lib/libLLVM.so.22.0git", "libLLVM.so.22.0git", None),
        ("lib/rocm_sysdeps/lib/librocm_sysdeps_liblzma.so.5", "librocm_sysdeps_liblzma.so.5", None),
        ("lib/host-math/lib/librocm-openblas.so.0", "librocm-openblas.so.0", None),
        ("lib/librocprof-sys.so.1.0.0", "librocprof-sys.so.1", Some("libamdhip64.so.7")),
        ("lib/libprofiler-hub.so.1", "libprofiler-hub.so.1", None),
        ("lib/libhiprand.so.1.1.0", "libhiprand.so.1", Some("librocrand.so.1")),
    ] {
        let (actual_soname, actual_needed) = dynamic(&source(path));
        assert_eq!(actual_soname.as_deref(), Some(soname), "{path}");
        if let Some(needed) = needed {
            assert!(actual_needed.iter().any(|name| name == needed), "{path} needs {actual_needed:?}");
        }
    }

    // Executables run and say who they are, loading their library through RUNPATH.
    let clang = source("lib/llvm/bin/clang");
    let output = crate::support::output(&mut Command::new(&clang)).expect("run the example clang");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    assert!(stdout.starts_with("example:clang argv0=") && stdout.contains("uses example:LLVM"), "{stdout}");
    // The script finds its data beside its real location.
    let output =
        crate::support::output(&mut Command::new(source("libexec/rocm_smi/rocm_smi.py"))).expect("run rocm_smi.py");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "example:rocm-smi data-beside-the-real-script argv=\n");

    // The DT_RPATH with an absolute build path, for the plan to remove.
    let bytes = fs_err::read(source("bin/hipInfo")).expect("read hipInfo");
    let elf = goblin::elf::Elf::parse(&bytes).expect("ELF");
    assert_eq!(elf.rpaths, ["/build/x/lib:$ORIGIN/../lib"]);
    assert!(elf.runpaths.is_empty());
}

#[test]
fn legacy_example() {
    let (temp, summary) = generate(false);
    let artifacts = temp.path().join("artifacts");
    check_common(&artifacts, &summary, true);
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    let catalog = Catalog::read(&artifacts).expect("reads");
    assert!(!catalog.kpack_split());
    let families: BTreeSet<String> = catalog.target_families().iter().map(ToString::to_string).collect();
    assert_eq!(families, LEGACY_FAMILIES.iter().map(|f| f.to_string()).collect::<BTreeSet<_>>());
    assert_eq!(catalog.dist_amdgpu_targets.as_deref(), Some("gfx1100;gfx1101;gfx942"));
    for family in LEGACY_FAMILIES {
        let selection = Selection {
            artifacts: &|name| name.name == "blas" && name.component == "lib" && name.target_family.as_str() == family,
            include: vec![],
            exclude: vec![],
        };
        let namespace = catalog.select(&selection).expect("selects");
        let rocblas = &namespace.all[&rel("lib/librocblas.so.5")];
        assert_eq!(dynamic(&rocblas.source), (Some("librocblas.so.5".to_owned()), vec!["libamdhip64.so.7".to_owned()]));
        let hipblas = &namespace.all[&rel("lib/libhipblas.so.3.0.0")];
        assert_eq!(dynamic(&hipblas.source).0.as_deref(), Some("libhipblas.so.3"));
        assert!(namespace.all.contains_key(&rel(&format!("lib/rocblas/library/TensileLibrary_{family}.dat"))));
    }
}

#[test]
fn kpack_split_example() {
    let (temp, summary) = generate(true);
    let artifacts = temp.path().join("artifacts");
    check_common(&artifacts, &summary, false);
    let catalog = Catalog::read(&artifacts).expect("reads");
    assert!(catalog.kpack_split());
    let families: Vec<String> = catalog.target_families().iter().map(ToString::to_string).collect();
    assert_eq!(families, ["gfx1030", "gfx1250", "gfx1250-strict", "gfx90a:xnack+", "gfx90a:xnack-"]);
    // The tests install llvm and lld (.ci/run), so code objects are made, not skipped.
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    assert_eq!(summary.n_code_objects, 2 * DEVICE_TARGET_IDS.len());
    for (name, target_id) in DEVICE_TARGET_IDS {
        let artifact = format!("{name}_lib_{target_id}");
        let selection =
            Selection { artifacts: &|candidate| candidate.dir_name() == artifact, include: vec![], exclude: vec![] };
        let namespace = catalog.select(&selection).expect("selects");
        let file_id = target_id.replace(':', "-");
        let paths: BTreeSet<&str> = namespace.all.keys().map(RelPath::as_str).collect();
        let library_dir = if name == "blas" { "lib/rocblas/library" } else { "lib/rocrand/library" };
        for path in [
            format!(".kpack/{artifact}.kpack"),
            format!("{library_dir}/TensileLibrary_{file_id}.dat"),
            format!("{library_dir}/{file_id}.kdb"),
        ] {
            assert!(paths.contains(path.as_str()), "{artifact} lacks {path}: {paths:?}");
        }
        let kernels = &namespace.all[&rel(&format!("{library_dir}/lib{name}_kernels_{file_id}.so"))];
        assert_eq!(dynamic(&kernels.source).1[0], "libamdhip64.so.7");
        for code_object in
            [format!("{library_dir}/Kernels_{file_id}.co"), format!("{library_dir}/extop_{file_id}.hsaco")]
        {
            let bytes = fs_err::read(&namespace.all[&rel(&code_object)].source).expect("read code object");
            let elf = goblin::elf::Elf::parse(&bytes).expect("an ELF code object");
            assert_eq!(elf.header.e_machine, goblin::elf::header::EM_AMDGPU, "{code_object}");
        }
    }
}

#[test]
fn same_bytes_every_time() {
    let hashes = |root: &Path| {
        let mut files = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs_err::read_dir(&dir).expect("read dir") {
                let path = entry.expect("entry").path();
                let metadata = fs_err::symlink_metadata(&path).expect("stat");
                let relative = path.strip_prefix(root).expect("inside").to_path_buf();
                if metadata.is_dir() {
                    stack.push(path);
                } else if metadata.is_symlink() {
                    files.push((
                        relative,
                        fs_err::read_link(&path).expect("readlink").into_os_string().into_encoded_bytes(),
                    ));
                } else {
                    files.push((relative, fs_err::read(&path).expect("read")));
                }
            }
        }
        files.sort();
        files
    };
    let (first, _) = generate(true);
    let (second, _) = generate(true);
    let first = hashes(&first.path().join("artifacts"));
    // Two empty trees would be equal too: the example has hundreds of files.
    assert!(first.len() > 100, "only {} files", first.len());
    assert!(first == hashes(&second.path().join("artifacts")));
}

#[test]
fn refuses_a_non_empty_output() {
    let temp = tempfile::tempdir().expect("tempdir");
    fs_err::write(temp.path().join("keep.txt"), "mine").expect("write");
    let error = write_example(temp.path(), &ExampleOptions::default()).expect_err("refused");
    assert_eq!(error.to_string(), format!("output directory is not empty: {}", temp.path().display()));
    assert_eq!(fs_err::read_to_string(temp.path().join("keep.txt")).expect("untouched"), "mine");
}

/// The entry ids `clang-offload-bundler-15 --list` reads from the `.hip_fatbin` of `binary`.
fn bundle_entries(binary: &Path, work: &Path) -> BTreeSet<String> {
    let dump = work.join(format!("{}.hip_fatbin", binary.file_name().and_then(|name| name.to_str()).unwrap_or("x")));
    crate::support::run(
        crate::support::tool("objcopy")
            .arg("--dump-section")
            .arg(format!(".hip_fatbin={}", dump.display()))
            .arg(binary)
            .arg(work.join("copy")),
    );
    let listed = crate::support::run(
        crate::support::tool("clang-offload-bundler-15")
            .args(["--list", "--type=o"])
            .arg(format!("--input={}", dump.display())),
    );
    listed.lines().map(str::to_owned).collect()
}

/// Dynamic symbols of an ELF file: (defined, undefined) names.
fn dynamic_symbols(path: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let bytes = fs_err::read(path).expect("read ELF");
    let elf = goblin::elf::Elf::parse(&bytes).expect("a real ELF file");
    let (mut defined, mut undefined) = (BTreeSet::new(), BTreeSet::new());
    for symbol in elf.dynsyms.iter() {
        let Some(name) = elf.dynstrtab.get_at(symbol.st_name).filter(|name| !name.is_empty()) else { continue };
        if symbol.st_shndx == 0 {
            undefined.insert(name.to_owned())
        } else {
            defined.insert(name.to_owned())
        };
    }
    (defined, undefined)
}

/// The fat example: one family; its GPU libraries carry `.hip_fatbin` offload bundles
/// holding every target, as clang's own offload bundler lists them; the HIP runtime defines
/// every registration and launch function they import, and the kpack loader only when asked.
#[test]
fn fat_example() {
    for kpack_runtime in [false, true] {
        let temp = tempfile::tempdir().expect("tempdir");
        let artifacts = temp.path().join("artifacts");
        let options = ExampleOptions { fat: true, kpack_runtime, ..Default::default() };
        let summary = write_example(&artifacts, &options).expect("the fat example");
        check_common(&artifacts, &summary, false);
        let catalog = Catalog::read(&artifacts).expect("reads");
        assert!(!catalog.kpack_split());
        let families: BTreeSet<String> = catalog.target_families().iter().map(ToString::to_string).collect();
        assert_eq!(families, BTreeSet::from([FAT_FAMILY.to_owned()]));
        assert_eq!(catalog.dist_amdgpu_targets.as_deref(), Some("gfx908;gfx90a"));
        let namespace = catalog.select(&all_artifacts()).expect("select everything");
        let (runtime_exports, _) = dynamic_symbols(&namespace.all[&rel("lib/libamdhip64.so.7.1.0")].source);
        assert_eq!(runtime_exports.contains(KPACK_LOADER_SYMBOL), kpack_runtime, "{runtime_exports:?}");
        let mut expected: BTreeSet<String> =
            FAT_TARGET_IDS.iter().map(|id| format!("hipv4-amdgcn-amd-amdhsa--{id}")).collect();
        expected.insert("host-x86_64-unknown-linux".to_owned());
        for (artifact, soname) in FAT_LIBRARIES {
            let selection =
                Selection { artifacts: &|name| name.dir_name() == artifact, include: vec![], exclude: vec![] };
            let library =
                catalog.select(&selection).expect("selects").all[&rel(&format!("lib/{soname}"))].source.clone();
            assert_eq!(dynamic(&library).0.as_deref(), Some(soname));
            assert_eq!(bundle_entries(&library, temp.path()), expected, "{soname}");
            let (_, imports) = dynamic_symbols(&library);
            let hip: Vec<&String> = imports.iter().filter(|name| name.contains("hip")).collect();
            assert!(hip.iter().any(|name| *name == "__hipRegisterFatBinary"), "{soname}: {imports:?}");
            for name in hip {
                assert!(runtime_exports.contains(name), "{soname} imports {name}, which libamdhip64 lacks");
            }
        }
        let paths: BTreeSet<&str> = namespace.all.keys().map(RelPath::as_str).collect();
        for target in ["gfx908", "gfx90a"] {
            let data = format!("lib/rocblas/library/TensileLibrary_lazy_{target}.dat");
            assert!(paths.contains(data.as_str()), "{data}");
        }
    }
}

/// Without `clang++-15` the fat example fails naming it and its Debian package.
#[test]
fn fat_example_needs_clang_15() {
    let temp = tempfile::tempdir().expect("tempdir");
    let out = temp.path().join("artifacts");
    let cc = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("cc"))
        .find(|path| path.is_file())
        .expect("a C compiler named cc (Debian package gcc)");
    let output = crate::support::output(
        Command::new(crate::targets::cli::xtask())
            .args(["example", "--fat", "--out"])
            .arg(&out)
            .env("PATH", temp.path())
            .env("CC", cc),
    )
    .expect("run xtask");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("`clang++-15` (Debian package clang-15) is not on PATH"), "{stderr}");
    assert!(stderr.contains("apt-get install clang-15 lld-15"), "{stderr}");
}
