//! `--platform-tag auto` (and `ROCM_SDK_WHEEL_PLATFORM_TAG=auto`) gives each wheel
//! the most widely installable manylinux tag its files allow: checked against binutils'
//! `readelf` and auditwheel, installed with pip; a wheel that needs a library outside the
//! policy is refused by name; a tag given by hand that the files break stays a
//! `verify --dist` error.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use diagnostic::Diagnostic;
use packager::config::PlatformTag;
use release_gate::Check;

use crate::support;
use crate::targets::cli::xtask;
use crate::targets::{wheel_members, wheels};

/// The glibc minor of every x86_64 manylinux policy auditwheel 6.8 defines, oldest first.
const X86_64_POLICIES: &[u32] = &[5, 12, 17, 24, 26, 27, 28, 31, 34, 35, 36, 37, 38, 39, 40, 41];

/// The newest `GLIBC_2.N` the x86_64 ELF files of `wheel` need, as binutils' `readelf`
/// reads their `.gnu.version_r`; `None` when they need no versioned glibc symbol.
fn newest_glibc_minor(wheel: &Path, scratch: &Path) -> Option<u32> {
    let mut newest = None;
    for (name, bytes) in wheel_members(wheel) {
        // ELF, e_machine 62 (x86_64): the files this platform runs.
        if !bytes.starts_with(b"\x7fELF") || bytes.get(18..20) != Some(&[62, 0]) {
            continue;
        }
        let file = scratch.join("member");
        fs_err::write(&file, &bytes).expect("write member");
        let output = support::output(Command::new("readelf").args(["-V", "--wide"]).arg(&file))
            .expect("readelf (apt-get install binutils)");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let needs = text.split("Version needs section").nth(1).unwrap_or_default();
        for word in needs.split_whitespace() {
            let Some(version) = word.strip_prefix("GLIBC_2.") else { continue };
            let minor: u32 = version.split('.').next().and_then(|minor| minor.parse().ok()).unwrap_or_else(|| {
                panic!("{name}: odd glibc version {word}");
            });
            newest = newest.max(Some(minor));
        }
    }
    newest
}

/// The `X` of `..._manylinux_2_X_x86_64.whl`.
fn tag_minor(wheel: &Path) -> u32 {
    let name = wheel.file_name().and_then(|name| name.to_str()).expect("UTF-8 name");
    let platform = name.strip_suffix("_x86_64.whl").and_then(|rest| rest.rsplit_once("-manylinux_2_"));
    platform.and_then(|(_, minor)| minor.parse().ok()).unwrap_or_else(|| panic!("{name} has no manylinux_2_X tag"))
}

#[test]
fn auto_gives_each_wheel_its_glibc_floor_and_pip_installs_them() {
    assert_eq!(std::env::consts::ARCH, "x86_64", "this test reads x86_64 policies");
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = support::write_example(temp.path(), false);
    let dest = temp.path().join("packages");
    // Through the environment variable TheRock's CI already sets, so both spellings count.
    let output = support::output(
        Command::new(xtask())
            .current_dir(temp.path())
            .args(["package", "-q", "--version", "7.12.0.dev0", "--artifact-dir"])
            .arg(&artifacts)
            .arg("--dest-dir")
            .arg(&dest)
            .env("ROCM_SDK_WHEEL_PLATFORM_TAG", "auto"),
    )
    .expect("run xtask");
    support::assert_success(&output, "xtask package with ROCM_SDK_WHEEL_PLATFORM_TAG=auto");
    let dist = dest.join("dist");
    let wheels = wheels(&dist);
    assert_eq!(wheels.len(), 6);

    let auditwheel = support::tools_venv().join("bin/auditwheel");
    let mut names = Vec::new();
    for wheel in &wheels {
        let name = wheel.file_name().and_then(|name| name.to_str()).expect("UTF-8 name").to_owned();
        let newest = newest_glibc_minor(wheel, temp.path());
        // X is the newest glibc the files use, or the oldest policy above it when auditwheel
        // has none for that version (a wheel that needs no versioned glibc symbol, or
        // only GLIBC_2.2.5, gets manylinux_2_5, the oldest there is).
        let expected = X86_64_POLICIES.iter().copied().find(|minor| *minor >= newest.unwrap_or(0));
        assert_eq!(Some(tag_minor(wheel)), expected, "{name}: newest GLIBC_2.{newest:?}");
        if newest.is_some_and(|minor| minor > 5) {
            // The executables of core and the profiler need GLIBC_2.34 here, a policy of its own.
            assert_eq!(Some(tag_minor(wheel)), newest, "{name}");
            let shown = support::run(Command::new(&auditwheel).arg("show").arg(wheel));
            assert!(shown.contains(&format!("\"manylinux_2_{}_x86_64\"", tag_minor(wheel))), "{name}:\n{shown}");
        }
        names.push(name);
    }
    names.sort();
    println!("wheel names under auto: {names:#?}");
    assert!(names.iter().any(|name| name.starts_with("rocm_sdk_core-") && tag_minor(&dist.join(name)) > 5));

    let report = release_gate::verify_dist(&dist).expect("verify");
    assert_eq!(report.n_violations(), 0, "{:#?}", report.violations().collect::<Vec<_>>());
    let venv = support::fresh_venv(&temp.path().join("venv"));
    let installed = support::pip_install(&venv, &dist, &["rocm[libraries,devel]"], &[]);
    support::assert_success(&installed, "pip install of the manylinux wheels");
    let tested = support::run(Command::new(venv.join("bin/rocm-sdk")).arg("test"));
    assert!(tested.contains("\nOK"), "{tested}");
}

/// A core library and program linked against a library that no artifact ships and no
/// manylinux policy allows: `auto` refuses the core wheel naming both files and the
/// library, and writes nothing.
#[test]
fn auto_refuses_a_library_outside_the_policy_naming_it() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = support::write_example(temp.path(), false);
    let outside = temp.path().join("not-shipped");
    fs_err::create_dir_all(&outside).expect("mkdir");
    support::shared_lib(&outside, "libnotshipped.so.1", "int not_shipped(void) { return 3; }\n", &[]);
    symlink("libnotshipped.so.1", outside.join("libnotshipped.so")).expect("link for -l");
    let stage = artifacts.join("core-runtime_lib_generic/core/ROCR-Runtime/stage");
    // `support::compile` puts flags before the source, so the library comes first on the
    // link line: --no-as-needed records it as DT_NEEDED wherever it stands.
    let link = ["-Wl,--no-as-needed", "-L", outside.to_str().expect("UTF-8 temp path"), "-lnotshipped"];
    support::shared_lib(&stage.join("lib"), "libuses_foreign.so", "int uses_foreign(void) { return 3; }\n", &link);
    fs_err::create_dir_all(stage.join("bin")).expect("mkdir bin");
    support::executable(&stage.join("bin"), "uses-foreign", "int main(void) { return 0; }\n", &link);

    let mut config = support::package_config(&artifacts, temp.path());
    config.platform_tag = PlatformTag::Manylinux;
    let error = packager::package(&config, &packager::Silent).expect_err("the core wheel needs an unshipped library");
    assert_eq!(
        error.to_string(),
        "rocm-sdk-core can carry no manylinux tag: its files need libraries that no package of this build ships \
         and that the manylinux policy does not let a wheel leave to the system:\n  \
         _rocm_sdk_core/bin/uses-foreign needs libnotshipped.so.1\n  \
         _rocm_sdk_core/lib/libuses_foreign.so needs libnotshipped.so.1"
    );
    assert!(error.hint().is_some_and(|hint| hint.contains("ship those libraries")), "{:?}", error.hint());
    // The packager's lock file aside (hidden), the destination stays empty.
    let written: Vec<String> = fs_err::read_dir(config.output_dir())
        .expect("read dist")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(written, Vec::<String>::new(), "a refused run writes nothing");
}

/// A manylinux tag given by hand is not checked while packaging (it is the user's word);
/// one the files break is what `verify --dist` reports, wheel by wheel.
#[test]
fn a_tag_given_by_hand_that_the_files_break_is_a_verify_error() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = support::write_example(temp.path(), false);
    let mut config = support::package_config(&artifacts, temp.path());
    config.platform_tag = PlatformTag::Fixed("manylinux_2_17_x86_64".to_owned());
    packager::package(&config, &packager::Silent).expect("a tag by hand is taken as given");
    let report = release_gate::verify_dist(&config.output_dir()).expect("verify");
    let mut broken: Vec<&str> = report
        .violations()
        .filter(|finding| finding.check == Check::Portability)
        .map(|finding| finding.file.as_str())
        .collect();
    broken.sort();
    assert_eq!(
        broken,
        [
            "rocm_profiler-7.12.0.dev0-py3-none-manylinux_2_17_x86_64.whl",
            "rocm_sdk_core-7.12.0.dev0-py3-none-manylinux_2_17_x86_64.whl"
        ]
    );
}
