//! Names that could break out of the files they are written into: target families read
//! from directory names or flags, the version suffix and the platform tag. Each is refused
//! with a clear error, or written so that Python reads back exactly the value given.

use std::path::Path;
use std::process::Command;

use packager::catalog::CatalogError;

use super::{full_text, zip_members, Example};

/// Python that would create `PWNED` in its working directory if it ever ran.
const PAYLOADS: [&str; 4] = [
    "gfx1100\";open(\"PWNED\",\"w\");\"",
    "gfx1100');open('PWNED','w');('",
    "gfx1100\nopen('PWNED','w')\n#",
    "gfx1100\\';open(chr(80)+'WNED','w')#",
];

#[test]
fn hostile_family_directory_names_are_refused() {
    let mut names: Vec<String> = PAYLOADS.iter().map(|payload| format!("blas_lib_{payload}")).collect();
    names.push("blas_lib_gfx1100 ".to_owned());
    names.push("blas_lib_gfx1100\u{7f}".to_owned());
    names.push("blas_lib_gfx1100\u{e9}".to_owned());
    names.push(format!("blas_lib_gfx{}", "1".repeat(100)));
    let example = Example::new();
    example.package().expect("the unbroken example packages");
    let before = super::dist_snapshot(&example.dist());
    for name in names {
        let dir = example.artifacts.join(&name);
        fs_err::create_dir_all(dir.join("stage/lib")).expect("mkdir");
        fs_err::write(dir.join("artifact_manifest.txt"), "stage\n").expect("write manifest");
        let error = example.package().expect_err("a hostile family name must be refused");
        assert!(
            matches!(&error, packager::Error::Catalog(CatalogError::BadFamilyName { artifact, .. }) if *artifact == name),
            "{name:?}: {error:?}"
        );
        let text = full_text(&error);
        assert!(text.contains(&format!("{name:?}")), "the error quotes the name: {text}");
        assert!(text.contains("hint: "), "{text}");
        assert!(!text.contains('\n') || text.lines().all(|line| !line.starts_with("open(")), "{text}");
        fs_err::remove_dir_all(&dir).expect("rm");
        assert!(before == super::dist_snapshot(&example.dist()), "{name:?}: dist changed");
    }
}

/// Runs `python3` in `dir` importing `dir/rocm_sdk_core/_dist_info.py` (which imports the
/// generated `_dist_info_data.py` beside it), and returns the named values as JSON. The
/// import happens for real: any code that escaped a literal would run.
fn import_dist_info(dir: &Path, names: &[&str]) -> serde_json::Value {
    let script = "import json, sys\nsys.path.insert(0, '.')\nfrom rocm_sdk_core import _dist_info\n\
                  print(json.dumps([getattr(_dist_info, name) for name in sys.argv[1:]]))\n";
    let output = Command::new("python3")
        .args(["-c", script])
        .args(names)
        .current_dir(dir)
        .output()
        .expect("python3 is needed by this test (apt-get install python3)");
    assert!(output.status.success(), "import failed:\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[test]
fn hostile_family_flags_round_trip_through_the_packaged_dist_info() {
    let example = Example::new();
    let mut config = example.config();
    config.families.linux = PAYLOADS.iter().map(|payload| (*payload).to_owned()).collect();
    config.families.windows = vec!["gfx94X-dcgpu".to_owned(), "a\u{2028}b\u{0}c".to_owned()];
    packager::package(&config, &packager::Silent).expect("packages; the names are only quoted");

    let wheel = fs_err::read_dir(example.dist())
        .expect("read dist")
        .map(|entry| entry.expect("entry").path())
        .find(|path| path.to_string_lossy().contains("rocm_sdk_core-"))
        .expect("core wheel");
    let members = zip_members(&wheel);
    let dir = example.temp.path().join("import");
    let package = dir.join("rocm_sdk_core");
    fs_err::create_dir_all(&package).expect("mkdir");
    fs_err::write(package.join("__init__.py"), "").expect("write");
    for name in ["_dist_info.py", "_dist_info_data.py"] {
        fs_err::write(package.join(name), &members[&format!("rocm_sdk_core/{name}")]).expect("write");
    }
    let values = import_dist_info(&dir, &["LINUX_TARGET_FAMILIES", "WINDOWS_TARGET_FAMILIES", "DEFAULT_TARGET_FAMILY"]);
    let mut linux: Vec<&str> = PAYLOADS.to_vec();
    linux.sort_unstable();
    assert_eq!(values[0], serde_json::json!(linux));
    assert_eq!(values[1], serde_json::json!(["a\u{2028}b\u{0}c", "gfx94X-dcgpu"]));
    assert_eq!(values[2], serde_json::json!("gfx94X-dcgpu"), "the default prefers a requested family of the build");
    assert!(!dir.join("PWNED").exists(), "injected code ran");
}

#[test]
fn hostile_version_suffix_and_platform_tag_are_refused() {
    let example = Example::new();
    example.package().expect("the unbroken example packages");
    let before = super::dist_snapshot(&example.dist());
    let suffixes = ["x'; import os #", "/../../escape", "a b", "-dash", "\u{e9}", "x\ny"];
    let tags = ["linux_x86_64/../../escape", "linux x86_64", "linux_x86_64\nTag: evil", ""];
    let configs = suffixes.iter().map(|suffix| {
        let mut config = example.config();
        config.version_suffix = (*suffix).to_owned();
        (format!("suffix {suffix:?}"), format!("{suffix:?}"), config)
    });
    let configs = configs.chain(tags.iter().map(|tag| {
        let mut config = example.config();
        config.platform_tag = packager::config::PlatformTag::Fixed((*tag).to_owned());
        (format!("tag {tag:?}"), format!("{tag:?}"), config)
    }));
    for (what, quoted, config) in configs {
        let error = packager::package(&config, &packager::Silent).expect_err("refused");
        let text = full_text(&error);
        assert!(text.contains(&quoted), "{what}: {text}");
        assert!(before == super::dist_snapshot(&example.dist()), "{what}: dist changed");
        assert!(!example.temp.path().join("escape").exists(), "{what}");
    }
}

/// Control characters in a name (not only a newline) are refused, and the message shows
/// them escaped: raw, an escape sequence would rewrite the terminal of whoever reads the
/// error.
#[test]
fn names_with_control_characters_are_refused_and_printed_escaped() {
    for (name, shown) in
        [("lib/lib\u{1b}[31mred.so", "lib\\u{1b}[31mred.so"), ("share/a\tb.txt", "a\\tb.txt"), ("share/x\ny", "x\\ny")]
    {
        let example = Example::new();
        let path = example.core_stage().join(name);
        let error = super::fails_leaving_dist_intact(&example, |_| {
            fs_err::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs_err::write(&path, "x").expect("write");
        });
        let text = full_text(&error);
        assert!(text.contains(shown), "{name:?}: {text:?}");
        assert!(!text.contains(['\u{1b}', '\t']) && !text.contains(name), "{name:?}: printed raw: {text:?}");
        assert!(text.contains("control character") && text.contains("hint: "), "{text}");
    }
}

/// Names that differ only in case are one file on Windows and macOS: `verify --dist` warns
/// about them as it does about names Windows cannot extract.
#[test]
fn names_differing_only_in_case_are_reported_by_verify() {
    let example = Example::new();
    let dir = example.core_stage().join("share/case");
    fs_err::create_dir_all(&dir).expect("mkdir");
    fs_err::write(dir.join("Readme.txt"), "one").expect("write");
    fs_err::write(dir.join("README.txt"), "two").expect("write");
    example.package().expect("packages; the names are legal on Linux");
    let report = release_gate::verify_dist(&example.dist()).expect("verify");
    let warnings: Vec<_> = report
        .packages
        .iter()
        .flat_map(|package| &package.warnings)
        .filter(|warning| warning.check == release_gate::Check::WindowsName && warning.message.contains("only in case"))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|warning| warning.path.as_deref().is_some_and(|path| path.ends_with("share/case/Readme.txt"))),
        "{warnings:?}"
    );
}
