//! Repaired wheels installed with pip and with uv into fresh venvs beside the SDK (SPEC
//! §10): `import` works with no `LD_LIBRARY_PATH`, exactly one copy of the HIP runtime is
//! mapped (core's, read from `/proc/self/maps`), and uninstalling the wheel leaves the
//! venv as it was. The repair itself is read back: search paths, renamed DT_NEEDED,
//! requirements, tag, unchanged members copied, the same bytes twice.

use std::path::{Path, PathBuf};
use std::process::Command;

use elf_rpath as elf;

use super::{auditwheel_repair, ext_wheel, member_names, member_text, repair_into, sdk, RELEASE};
use crate::installed::{self, Uninstaller};
use crate::support;

/// Where the HIP runtime is mapped from after `import ext`, and what ext's functions say.
const PROBE: &str = "import ext\nprint(ext.hip(), ext.blas())\n\
    print(sorted({line.split()[-1] for line in open('/proc/self/maps') if 'libamdhip64' in line}))\n";

/// The extension's member name (its suffix is the interpreter's).
fn ext_member(wheel: &Path) -> String {
    let names = member_names(wheel);
    names.into_iter().find(|name| name.starts_with("ext.cpython") && name.ends_with(".so")).expect("the extension")
}

/// The extension's file read back from `wheel`.
fn extension_info(wheel: &Path, scratch: &Path) -> elf::ElfInfo {
    let member = ext_member(wheel);
    let out = scratch.join(&member);
    support::run(
        Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
            ])
            .arg(wheel)
            .arg(&member)
            .arg(&out),
    );
    elf::read_elf(&out).expect("read").expect("ELF")
}

/// Installs `wheel` with `installer` into a fresh venv holding the SDK, imports it, checks
/// what is mapped, uninstalls it and checks that nothing is left.
fn install_and_import(wheel: &Path, installer: Uninstaller, work: &Path) {
    let sdk = sdk();
    let venv = support::fresh_venv(&work.join(format!("venv-{installer:?}")));
    let wheel_dir = wheel.parent().expect("a directory");
    let install = |requirements: &[&str]| {
        let mut command = match installer {
            Uninstaller::Pip => {
                let mut command = Command::new(venv.join("bin/python"));
                command.args(["-m", "pip", "install", "-q", "--no-cache-dir"]);
                command
            }
            Uninstaller::Uv => {
                let mut command = Command::new(support::tools_venv().join("bin/uv"));
                command.args(["pip", "install", "-q", "--no-cache", "--python"]).arg(venv.join("bin/python"));
                command
            }
        };
        command.args(["--no-index", "--find-links"]).arg(&sdk.dist).arg("--find-links").arg(wheel_dir);
        support::run(command.args(requirements).env("PATH", installed::PATH_WITHOUT_GPU_TOOLS));
    };
    install(&["rocm-sdk-core", "rocm-sdk-libraries"]);
    let before = installed::venv_listing(&venv);
    install(&["ext"]);
    let output = installed::python(&venv, PROBE, &[], &[]);
    installed::assert_success(&output, "import ext");
    let text = String::from_utf8_lossy(&output.stdout);
    let runtime = installed::site_packages(&venv).join("_rocm_sdk_core/lib/libamdhip64.so.7");
    let expected = format!("example:amdhip64 example:rocblas generic\n['{}']\n", runtime.display());
    assert_eq!(text, expected, "{installer:?}: one HIP runtime, core's");
    let mut uninstall = match installer {
        Uninstaller::Pip => {
            let mut command = Command::new(venv.join("bin/python"));
            command.args(["-m", "pip", "uninstall", "-y", "-q", "ext"]);
            command
        }
        Uninstaller::Uv => {
            let mut command = Command::new(support::tools_venv().join("bin/uv"));
            command.args(["pip", "uninstall", "--python"]).arg(venv.join("bin/python")).arg("ext");
            command
        }
    };
    support::run(&mut uninstall);
    assert_eq!(installed::venv_listing(&venv), before, "{installer:?}: uninstalling ext leaves the venv as it was");
}

#[test]
fn a_wheel_built_against_an_installed_sdk_links_to_the_sdk_wheels() {
    let work = tempfile::tempdir().expect("temp dir");
    let wheel = ext_wheel(work.path());
    let before = extension_info(&wheel, work.path());
    assert!(before.search_path().is_some_and(|path| path.starts_with('/')), "built with an absolute path: {before:?}");
    let report = repair_into(std::slice::from_ref(&wheel), &sdk().dist, &work.path().join("out"), &[]).expect("repair");
    let repaired = &report.wheels[0];
    assert!(repaired.platform_tag.starts_with("manylinux_2_"), "{}", repaired.platform_tag);
    let specifier = format!(">={RELEASE},<{RELEASE}.0.1");
    assert_eq!(
        repaired.requirements_added,
        [format!("rocm-sdk-core{specifier}"), format!("rocm-sdk-libraries{specifier}")]
    );
    let edited = &repaired.edited[0];
    assert_eq!(edited.member, ext_member(&wheel));
    assert_eq!(edited.removed_entries.len(), 2, "both absolute entries: {edited:?}");
    // `ext_helpers.py` is copied as it was coded: its 550 bytes are not coded again.
    assert_eq!(repaired.copied_bytes, 550);

    let after = extension_info(&repaired.output, work.path());
    assert_eq!(after.rpath.as_deref(), Some("$ORIGIN/_rocm_sdk_core/lib:$ORIGIN/_rocm_sdk_libraries/lib"));
    assert_eq!((after.runpath, after.needed.clone()), (None, before.needed.clone()));
    let metadata = member_text(&repaired.output, "ext-1.0.dist-info/METADATA");
    assert!(metadata.contains(&format!("Requires-Dist: rocm-sdk-core{specifier}\n")), "{metadata}");
    assert!(metadata.contains("Requires-Dist: packaging; extra == 'x'\n"), "kept: {metadata}");
    // Its bill of materials names each file as a member of the wheel it came from, the
    // extension edited (the gate checks the rest of it).
    let sbom: serde_json::Value =
        serde_json::from_str(&member_text(&repaired.output, "ext-1.0.dist-info/sboms/rocm-packager.cdx.json"))
            .expect("a JSON bill of materials");
    let input_name = wheel.file_name().expect("a file").to_string_lossy().into_owned();
    let from_input = sbom["components"].as_array().and_then(|components| {
        components.iter().find(|component| component["name"].as_str().is_some_and(|name| name.contains(&input_name)))
    });
    let text = from_input.map(|component| component.to_string()).unwrap_or_default();
    assert!(text.contains(&edited.member) && text.contains("\"rpath\""), "{sbom}");
    let wheel_file = member_text(&repaired.output, "ext-1.0.dist-info/WHEEL");
    let file_name = repaired.output.file_name().expect("a file").to_string_lossy().into_owned();
    let tags: Vec<&str> = file_name.trim_end_matches(".whl").split('-').skip(2).collect();
    assert_eq!(tags[2], repaired.platform_tag, "{file_name}");
    assert!(wheel_file.contains(&format!("Tag: {}\n", tags.join("-"))), "{wheel_file}");

    // The same input and time give the same bytes, and the SDK installed in a
    // site-packages is the same SDK as its wheels.
    let bytes = |path: &PathBuf| fs_err::read(path).expect("read the wheel");
    let again =
        repair_into(std::slice::from_ref(&wheel), &sdk().dist, &work.path().join("again"), &[]).expect("repair again");
    assert!(bytes(&repaired.output) == bytes(&again.wheels[0].output), "a second repair gives other bytes");
    let installed = repair_into(&[wheel], &sdk().site_packages, &work.path().join("installed"), &[]).expect("repair");
    assert!(bytes(&repaired.output) == bytes(&installed.wheels[0].output), "against the installed SDK: other bytes");

    for installer in [Uninstaller::Pip, Uninstaller::Uv] {
        install_and_import(&repaired.output, installer, work.path());
    }
}

#[test]
fn an_auditwheel_repaired_wheel_loses_its_grafted_copies() {
    let work = tempfile::tempdir().expect("temp dir");
    let grafted = auditwheel_repair(&ext_wheel(work.path()), &work.path().join("wheelhouse"));
    let copies: Vec<String> = member_names(&grafted)
        .into_iter()
        .filter(|name| name.starts_with("ext.libs/") && !name.ends_with('/'))
        .collect();
    assert!(
        copies.iter().any(|name| name.starts_with("ext.libs/libamdhip64-") && name.ends_with(".so.7")),
        "auditwheel grafted the HIP runtime under a hashed name: {copies:?}"
    );
    let before = extension_info(&grafted, work.path());
    assert!(before.needed.iter().any(|name| name.starts_with("libamdhip64-")), "{before:?}");

    let report =
        repair_into(std::slice::from_ref(&grafted), &sdk().dist, &work.path().join("out"), &[]).expect("repair");
    let repaired = &report.wheels[0];
    assert_eq!(repaired.removed.len(), copies.len(), "every graft is an SDK library here: {:?}", repaired.removed);
    assert!(repaired.removed.values().any(|soname| soname == "libamdhip64.so.7"));
    let names = member_names(&repaired.output);
    assert!(!names.iter().any(|name| name.starts_with("ext.libs")), "{names:?}");
    let after = extension_info(&repaired.output, work.path());
    let renamed: Vec<String> =
        before.needed.iter().map(|name| packager::repair::without_graft_hash(name).unwrap_or(name.clone())).collect();
    assert_eq!(after.needed, renamed);
    assert!(after.needed.starts_with(&["libamdhip64.so.7".to_owned(), "librocblas.so.5".to_owned()]), "{after:?}");
    assert_eq!(after.rpath.as_deref(), Some("$ORIGIN/_rocm_sdk_core/lib:$ORIGIN/_rocm_sdk_libraries/lib"));
    let removed = &repaired.edited[0].removed_entries;
    assert_eq!(removed.iter().map(|(entry, _)| entry.as_str()).collect::<Vec<_>>(), ["$ORIGIN/ext.libs"]);

    for installer in [Uninstaller::Pip, Uninstaller::Uv] {
        install_and_import(&repaired.output, installer, work.path());
    }
}
