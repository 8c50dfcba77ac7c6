//! `verify --dist` on a directory holding the SDK set and wheels built on it (SPEC §11):
//! the set with a repaired wheel passes; each hand-broken variant fails on its own rule:
//! the wheel as built (absolute search path, DT_RUNPATH, DT_NEEDED found nowhere), the
//! wheel after `auditwheel repair` (bundled copies of SDK libraries), a requirement the
//! set's release does not satisfy, and a `.post1` core whose HIP runtime lost a symbol
//! (the symbol closure finds the SDK's own libraries and the wheel's broken alike).

use std::path::{Path, PathBuf};
use std::process::Command;

use release_gate::{Check, Finding};

use super::{auditwheel_repair, ext_wheel, package, rebuild_hip_runtime, repair_into, sdk};
use crate::support;

/// A copy of the SDK's dist with `extra` wheels beside it.
fn set_with(dir: &Path, extra: &[&Path]) -> PathBuf {
    fs_err::create_dir_all(dir).expect("mkdir");
    for name in support::dist_names(&sdk().dist) {
        fs_err::copy(sdk().dist.join(&name), dir.join(&name)).expect("copy the SDK");
    }
    for wheel in extra {
        fs_err::copy(wheel, dir.join(wheel.file_name().expect("a file"))).expect("copy the wheel");
    }
    dir.to_path_buf()
}

fn violations(dist: &Path) -> Vec<Finding> {
    let report = release_gate::verify_dist(dist).expect("verify reads the dist");
    report.packages.into_iter().flat_map(|package| package.violations).collect()
}

/// The violations of `check` on files whose name starts with `file`.
fn of(found: &[Finding], file: &str, check: Check) -> Vec<String> {
    found
        .iter()
        .filter(|finding| finding.file.starts_with(file) && finding.check == check)
        .map(|finding| finding.message.clone())
        .collect()
}

/// `wheel` with one member's text replaced and RECORD made right again, as a hand edit would.
fn with_member(wheel: &Path, member: &str, text: &str, out: &Path) -> PathBuf {
    let script = "import base64, hashlib, sys, zipfile\n\
        source, member, text, out = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4]\n\
        old = zipfile.ZipFile(source)\n\
        files = {name: (text if name == member else old.read(name)) for name in old.namelist()}\n\
        record = [name for name in files if name.endswith('.dist-info/RECORD')][0]\n\
        lines = []\n\
        for name, data in files.items():\n\
        \x20   digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()\n\
        \x20   lines.append(f'{name},,' if name == record else f'{name},sha256={digest},{len(data)}')\n\
        files[record] = ('\\n'.join(lines) + '\\n').encode()\n\
        with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as new:\n\
        \x20   for name, data in files.items():\n\
        \x20       new.writestr(name, data)\n";
    fs_err::create_dir_all(out).expect("mkdir");
    let target = out.join(wheel.file_name().expect("a file"));
    support::run(Command::new("python3").args(["-c", script]).arg(wheel).arg(member).arg(text).arg(&target));
    target
}

#[test]
fn the_set_with_a_repaired_wheel_passes_and_each_broken_variant_fails() {
    let work = tempfile::tempdir().expect("temp dir");
    let built = ext_wheel(work.path());
    let report = repair_into(std::slice::from_ref(&built), &sdk().dist, &work.path().join("out"), &[]).expect("repair");
    let repaired = report.wheels[0].output.clone();
    let found = violations(&set_with(&work.path().join("good"), &[&repaired]));
    assert!(found.is_empty(), "{found:#?}");

    let found = violations(&set_with(&work.path().join("as-built"), &[&built]));
    assert_eq!(of(&found, "ext-", Check::Rpath).len(), 3, "two absolute entries and DT_RUNPATH: {found:#?}");
    let closure = of(&found, "ext-", Check::Closure);
    assert!(closure.iter().any(|message| message.contains("needs `libamdhip64.so.7`")), "{closure:?}");
    assert!(found.iter().all(|finding| finding.file.starts_with("ext-")), "the SDK stays clean: {found:#?}");

    let grafted = auditwheel_repair(&built, &work.path().join("wheelhouse"));
    let found = violations(&set_with(&work.path().join("grafted"), &[&grafted]));
    let copies = of(&found, "ext-", Check::SdkCopy);
    assert!(
        copies.iter().any(|message| message.starts_with("is a copy of libamdhip64.so.7, which rocm_sdk_core-")),
        "{copies:?}"
    );

    let metadata = super::member_text(&repaired, "ext-1.0.dist-info/METADATA");
    let pinned = metadata.replace("rocm-sdk-core>=7.12.0,<7.12.0.0.1", "rocm-sdk-core==7.11.0");
    let mispinned = with_member(&repaired, "ext-1.0.dist-info/METADATA", &pinned, &work.path().join("mispinned"));
    let found = violations(&set_with(&work.path().join("pins"), &[&mispinned]));
    let pins = of(&found, "ext-", Check::Pin);
    assert_eq!(
        pins,
        ["`Requires-Dist: rocm-sdk-core==7.11.0` is not satisfied by the set, which has rocm-sdk-core 7.12.0"]
    );
}

/// A core republished as `.post1` whose HIP runtime no longer exports
/// `amdhip64_example_name`: every library that calls it, the SDK's and the wheel's, is a
/// finding, though each file on its own is sound.
#[test]
fn a_post_release_core_that_breaks_the_abi_is_found() {
    let work = tempfile::tempdir().expect("temp dir");
    let report = repair_into(&[ext_wheel(work.path())], &sdk().dist, &work.path().join("out"), &[]).expect("repair");
    let artifacts = work.path().join("artifacts");
    support::run(Command::new("cp").arg("-a").arg(&sdk().artifacts).arg(&artifacts));
    let broken_map = "hip_4.2 { global: amdhip64_example_dependency; hipMalloc; local: *; };\n";
    rebuild_hip_runtime(&artifacts, &work.path().join("hip-build"), broken_map);
    let post = package(&artifacts, &work.path().join("post"), "7.12.0.post1", &[packager::config::PackageGroup::Core]);
    let core: Vec<String> =
        support::dist_names(&post).into_iter().filter(|name| name.starts_with("rocm_sdk_core-")).collect();
    let core = post.join(&core[0]);
    let found = violations(&set_with(&work.path().join("set"), &[&report.wheels[0].output, &core]));
    let ext = of(&found, "ext-", Check::Symbol);
    assert!(
        ext.iter().any(|message| message.starts_with("needs symbol amdhip64_example_name@hip_4.2 of libamdhip64.so.7, which `_rocm_sdk_core/lib/libamdhip64.so.7` does not define")),
        "{ext:?}"
    );
    let libraries = of(&found, "rocm_sdk_libraries-", Check::Symbol);
    assert!(
        libraries.iter().any(|message| message
            .starts_with("needs symbol amdhip64_example_name, which none of the libraries it loads defines")),
        "{found:#?}"
    );
    assert!(found.iter().all(|finding| finding.check == Check::Symbol), "only the ABI break: {found:#?}");
}

/// "Ours" is decided from the set's own package names, not by prefix: a wheel named
/// `rocm_sdk_h5ext` that bundles a grafted copy of the core's HIP runtime is judged as any
/// wheel built on the SDK, and its copy is a finding.
#[test]
fn a_lookalike_name_bundling_the_hip_runtime_is_flagged() {
    let work = tempfile::tempdir().expect("temp dir");
    let sdk = sdk();
    let libraries = [
        sdk.site_packages.join("_rocm_sdk_core/lib/libamdhip64.so.7"),
        sdk.site_packages.join("_rocm_sdk_libraries/lib/librocblas.so.5"),
    ];
    let built = super::extension_wheel("rocm_sdk_h5ext", super::EXT_C, &libraries, work.path());
    let grafted = auditwheel_repair(&built, &work.path().join("wheelhouse"));
    let found = violations(&set_with(&work.path().join("set"), &[&grafted]));
    let copies = of(&found, "rocm_sdk_h5ext-", Check::SdkCopy);
    assert!(
        copies.iter().any(|message| message.starts_with("is a copy of libamdhip64.so.7, which rocm_sdk_core-")),
        "{found:#?}"
    );
    assert!(found.iter().all(|finding| finding.file.starts_with("rocm_sdk_h5ext-")), "the SDK stays clean: {found:#?}");
}

/// A wheel built for another ROCm major: the gate says the SDK has the library at another
/// version, as `repair` does.
#[test]
fn a_wheel_built_for_another_rocm_major_is_told_so() {
    let work = tempfile::tempdir().expect("temp dir");
    let wheel = super::hostile::other_major_wheel(work.path());
    let found = violations(&set_with(&work.path().join("set"), &[&wheel]));
    let closure = of(&found, "major-", Check::Closure);
    assert!(
        closure.iter().any(|message| message.starts_with("needs `libamdhip64.so.8`")
            && message
                .contains("the SDK has libamdhip64.so.7 (ROCm 7.12.0); this wheel was built for another ROCm major")),
        "{found:#?}"
    );
}
