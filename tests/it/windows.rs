//! Windows builds packaged on Linux (SPEC §7): the bundled example as a Windows
//! build (PE files from MinGW-w64) becomes `win_amd64` wheels and the sdist, with PE files
//! copied byte for byte and no profiler wheel; `verify --dist` passes it and fails a copy
//! broken the two ways a Windows set breaks; a build mixing ELF and PE is refused.

#[path = "windows_pe.rs"]
mod pe;
#[path = "windows_wine.rs"]
mod wine;

use std::path::{Path, PathBuf};
use std::process::Command;

use packager::config::PlatformTag;

use crate::support;

/// The Windows example written under `dir/artifacts`, or a failure naming MinGW-w64.
fn windows_example(dir: &Path) -> PathBuf {
    support::tool(example_artifacts::MINGW_GCC);
    let artifacts = dir.join("artifacts");
    example_artifacts::write_windows_example(&artifacts).expect("generate the Windows example");
    artifacts
}

/// Packages `artifacts` with no platform tag given, as the CLI does.
fn package(artifacts: &Path, dest: &Path) -> Result<PathBuf, packager::Error> {
    let mut config = support::package_config(artifacts, dest);
    config.platform_tag = PlatformTag::Default(format!("linux_{}", std::env::consts::ARCH));
    packager::package(&config, &packager::Silent)?;
    Ok(config.output_dir())
}

#[test]
fn a_windows_build_becomes_win_amd64_wheels_that_verify_passes() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = windows_example(temp.path());
    let dist = package(&artifacts, &temp.path().join("out")).expect("package the Windows example");
    assert_eq!(
        support::dist_names(&dist),
        [
            "rocm-7.12.0.dev0.tar.gz",
            "rocm_sdk_core-7.12.0.dev0-py3-none-win_amd64.whl",
            "rocm_sdk_devel-7.12.0.dev0-py3-none-win_amd64.whl",
            "rocm_sdk_libraries_gfx110x_all-7.12.0.dev0-py3-none-win_amd64.whl",
        ],
        "no profiler wheel, every wheel win_amd64"
    );
    // PE files byte for byte: nothing in a PE file is edited (SPEC §7).
    let core = crate::targets::wheel_members(&dist.join("rocm_sdk_core-7.12.0.dev0-py3-none-win_amd64.whl"));
    let source = fs_err::read(artifacts.join("core-hip_lib_generic/core/clr/stage/bin/amdhip64_7.dll")).expect("read");
    assert_eq!(core["_rocm_sdk_core/bin/amdhip64_7.dll"], source);
    // Its rocBLAS files install past MAX_PATH under the default prefix, as TheRock's do: the
    // set requires long paths (README, Windows builds).
    let report = release_gate::verify_dist_with(&dist, &LONG_PATHS).expect("verify");
    let violations: Vec<String> = report.violations().map(|violation| format!("{violation:?}")).collect();
    assert!(violations.is_empty(), "{violations:#?}");
    crate::sbom::assert_valid_sboms(&dist);
    // Console scripts for the tools a Windows build has, as the reference's Windows lists
    // say: hipInfo, no roc-obj scripts (Perl and shell on Linux), and none for a tool the
    // build left out (rocminfo).
    let entry_points = String::from_utf8(core["rocm_sdk_core-7.12.0.dev0.dist-info/entry_points.txt"].clone())
        .expect("UTF-8 entry points");
    let scripts: Vec<&str> = entry_points.lines().filter_map(|line| line.split(" = ").next()).skip(1).collect();
    assert_eq!(
        scripts,
        [
            "amdclang",
            "amdclang++",
            "amdclang-cl",
            "amdclang-cpp",
            "amdflang",
            "amdlld",
            "hipInfo",
            "hipcc",
            "hipconfig",
            "hipify-clang",
            "offload-arch"
        ],
        "{entry_points}"
    );
}

#[test]
fn a_broken_windows_set_fails_naming_the_elf_file_and_the_missing_import() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = windows_example(temp.path());
    let bin = artifacts.join("blas_lib_gfx110X-all/math-libs/BLAS/hipBLAS/stage/bin");
    // A DLL importing one nobody ships, linked against a stand-in that is then left out.
    let scratch = temp.path().join("scratch");
    fs_err::create_dir_all(&scratch).expect("scratch");
    fs_err::write(scratch.join("dep.c"), "int notshipped_value(void) { return 1; }\n").expect("write");
    fs_err::write(
        scratch.join("user.c"),
        "int notshipped_value(void);\nint user(void) { return notshipped_value(); }\n",
    )
    .expect("write");
    let gcc = example_artifacts::MINGW_GCC;
    support::run(Command::new(gcc).current_dir(&scratch).args(["-shared", "-o", "notshipped.dll", "dep.c"]));
    support::run(
        Command::new(gcc)
            .current_dir(&scratch)
            .args(["-shared", "-o"])
            .arg(bin.join("libhipblaslt.dll"))
            .args(["user.c", "notshipped.dll"]),
    );
    let dist = package(&artifacts, &temp.path().join("out")).expect("package");
    // An ELF file slipped into the Windows wheel after packaging, as a careless merge would.
    let wheel = dist.join("rocm_sdk_libraries_gfx110x_all-7.12.0.dev0-py3-none-win_amd64.whl");
    let elf = support::shared_lib(&scratch, "libstray.so", "int stray(void) { return 0; }\n", &[]);
    let add =
        "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'a') as z:\n    z.write(sys.argv[2], sys.argv[3])\n";
    support::run(
        Command::new("python3")
            .args(["-c", add])
            .arg(&wheel)
            .arg(&elf)
            .arg("_rocm_sdk_libraries_gfx110X_all/bin/libstray.so"),
    );
    let report = release_gate::verify_dist(&dist).expect("verify");
    let violations: Vec<String> = report
        .violations()
        .map(|violation| {
            format!("{} {:?}: {}", violation.path.clone().unwrap_or_default(), violation.check, violation.message)
        })
        .collect();
    let named = |needle: &str| violations.iter().any(|violation| violation.contains(needle));
    assert!(named("bin/libhipblaslt.dll Closure: imports `notshipped.dll`"), "{violations:#?}");
    assert!(named("bin/libstray.so Platform: an ELF file in a `win_amd64` wheel"), "{violations:#?}");

    // The same DLLs in a wheel tagged for Linux: no Linux loader reads a PE file.
    let linux_dist = temp.path().join("linux-dist");
    fs_err::create_dir_all(&linux_dist).expect("mkdir");
    fs_err::copy(&wheel, linux_dist.join("rocm_sdk_libraries_gfx110x_all-7.12.0.dev0-py3-none-linux_x86_64.whl"))
        .expect("copy");
    let report = release_gate::verify_dist(&linux_dist).expect("verify");
    let in_linux: Vec<String> = report.violations().map(|violation| violation.message.clone()).collect();
    assert!(
        in_linux.iter().any(|message| message.contains("a Windows PE file in a `linux_x86_64` wheel")),
        "{in_linux:#?}"
    );
}

#[test]
fn a_build_mixing_elf_and_pe_is_refused_naming_one_of_each() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = windows_example(temp.path());
    let bin = artifacts.join("core-hip_lib_generic/core/clr/stage/bin");
    support::shared_lib(&bin, "libamdhip64.so.7", "int x(void) { return 0; }\n", &[]);
    let error = package(&artifacts, &temp.path().join("out")).expect_err("a mixed build must be refused");
    let message = error.to_string();
    assert!(message.contains("libamdhip64.so.7 is ELF") && message.contains("is PE"), "{message}");
    assert!(!temp.path().join("out/dist").exists(), "nothing may be written");
}

/// Verifying a set that requires Windows long paths (`verify --dist --windows-long-paths`).
const LONG_PATHS: release_gate::WindowsPaths = release_gate::WindowsPaths { prefix: String::new(), long_paths: true };

/// The rocBLAS file that is the example's deepest member, as TheRock ships it.
const TENSILE_DAT: &str = "lib/rocblas/library/kernels/tensile/assembly/solution-libraries/contractions/\
                           TensileLibrary_Type_HH_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback.dat";

/// MAX_PATH (SPEC §7): under the default prefix (a per-user Python 3.13, a 16-character
/// user name) the example's rocBLAS file installs at 262 characters, a violation naming
/// it, unless the set requires long paths (then only its depth is reported); under a short
/// prefix the example passes, and a header eight directories deep added to it does not.
#[test]
fn a_member_installing_past_max_path_is_a_violation_unless_the_set_requires_long_paths() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = windows_example(temp.path());
    let dist = package(&artifacts, &temp.path().join("out")).expect("package the Windows example");
    let messages = |report: &release_gate::VerifyReport| -> Vec<String> {
        report.violations().map(|violation| violation.message.clone()).collect()
    };
    let report = release_gate::verify_dist(&dist).expect("verify");
    let found = messages(&report);
    assert_eq!(found.len(), 1, "{found:#?}");
    let expected = format!(
        "{}_rocm_sdk_libraries_gfx110X_all\\{}`, 262 characters",
        release_gate::DEFAULT_WINDOWS_PREFIX,
        TENSILE_DAT.replace('/', "\\")
    );
    assert!(found[0].contains(&expected), "{found:#?}");
    assert!(found[0].contains("(MAX_PATH)"), "{found:#?}");

    let long_paths = release_gate::WindowsPaths { long_paths: true, ..release_gate::WindowsPaths::default() };
    let report = release_gate::verify_dist_with(&dist, &long_paths).expect("verify");
    assert_eq!(messages(&report), Vec::<String>::new());
    let lengths: Vec<usize> =
        report.packages.iter().filter_map(|package| package.portability.as_ref()?.windows_path_length).collect();
    assert_eq!(lengths.len(), 3, "every win_amd64 wheel is measured");
    assert_eq!(lengths.iter().max(), Some(&262));

    let short = release_gate::WindowsPaths { prefix: r"C:\Python313\Lib\site-packages\".to_owned(), long_paths: false };
    assert_eq!(messages(&release_gate::verify_dist_with(&dist, &short).expect("verify")), Vec::<String>::new());
    let include = walk_for_include(&artifacts).expect("an include directory in the example");
    let mut deep = include.clone();
    for level in 0..8 {
        deep.push(format!("generated_interface_level_{level}_of_eight"));
    }
    fs_err::create_dir_all(&deep).expect("mkdir");
    fs_err::write(deep.join("some_generated_kernel_parameters.h"), "#pragma once\n").expect("write header");
    let deep_dist = package(&artifacts, &temp.path().join("deep")).expect("package the deep example");
    let found = messages(&release_gate::verify_dist_with(&deep_dist, &short).expect("verify"));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].starts_with(r"installs as `C:\Python313\Lib\site-packages\_rocm_sdk_devel\"), "{found:#?}");
    assert!(found[0].contains("of_eight\\some_generated_kernel_parameters.h`"), "{found:#?}");
}

/// The first `include` directory under `dir`, in name order.
fn walk_for_include(dir: &Path) -> Option<PathBuf> {
    if dir.file_name().is_some_and(|name| name == "include") {
        return Some(dir.to_path_buf());
    }
    let mut children: Vec<PathBuf> = fs_err::read_dir(dir)
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_dir() && !path.is_symlink())
        .collect();
    children.sort();
    children.iter().find_map(|child| walk_for_include(child))
}

/// A directory Windows cannot create (SPEC §7): without long paths a directory must leave
/// room for an 8.3 name, so one of 248 UTF-16 units or more fails though every file path in
/// it stays under MAX_PATH. A member added to the core wheel whose directory installs at
/// 250 units (its path at 254) is a violation naming the directory; at 247, none.
#[test]
fn a_directory_installing_past_max_path_less_twelve_is_a_violation() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = windows_example(temp.path());
    let dist = package(&artifacts, &temp.path().join("out")).expect("package the Windows example");
    let prefix = r"C:\Python313\Lib\site-packages\";
    let short = release_gate::WindowsPaths { prefix: prefix.to_owned(), long_paths: false };
    let core = support::dist_names(&dist).into_iter().find(|name| name.starts_with("rocm_sdk_core-"));
    let core = dist.join(core.expect("the core wheel"));
    let windows_findings = |dist: &Path| -> Vec<String> {
        let report = release_gate::verify_dist_with(dist, &short).expect("verify");
        let found = report.violations().filter(|finding| finding.check == release_gate::Check::WindowsName);
        found.map(|finding| finding.message.clone()).collect()
    };
    for (directory_length, expect_violation) in [(250usize, true), (247, false)] {
        let mut directory = "_rocm_sdk_core/deep".to_owned();
        while prefix.len() + directory.len() < directory_length {
            directory.push(if (prefix.len() + directory.len()) % 40 == 0 { '/' } else { 'd' });
        }
        let member = format!("{directory}/a.h");
        assert_eq!(format!("{prefix}{member}").len(), directory_length + 4);
        let copy = temp.path().join(format!("deep-{directory_length}"));
        fs_err::create_dir_all(&copy).expect("mkdir");
        let wheel = copy.join(core.file_name().expect("a file"));
        fs_err::copy(&core, &wheel).expect("copy the core");
        support::rewrite_wheel(&wheel, |members| members.push((member.clone(), b"#pragma once\n".to_vec(), 0o644)));
        let found = windows_findings(&copy);
        if expect_violation {
            assert_eq!(found.len(), 1, "{found:#?}");
            let installed = format!("{prefix}{}", directory.replace('/', "\\"));
            assert!(
                found[0].starts_with(&format!("its directory installs as `{installed}`, 250 characters")),
                "{found:#?}"
            );
            assert!(found[0].contains("(MAX_PATH − 12"), "{found:#?}");
        } else {
            assert_eq!(found, Vec::<String>::new());
        }
    }
}
