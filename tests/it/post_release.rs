//! Post releases (SPEC §3, §4; TheRock's docs/packaging/versioning.md, #7565): one package
//! republished as `X.Y.Z.postN` joins the set of `X.Y.Z`. A core wheel made with `--only
//! core --version 7.12.0.post1`, dropped into a 7.12.0 `dist/`, passes `verify --dist`, is
//! what `pip install 'rocm[libraries]'` installs, passes `rocm-sdk test`, and is the
//! release `initialize_process(check_version=…)` asks for.

use std::collections::BTreeMap;

use packager::config::PackageGroup;

use crate::installed::{self, PATH_WITHOUT_GPU_TOOLS};
use crate::support;
use crate::targets::build;

const RELEASE: &str = "7.12.0";
const POST: &str = "7.12.0.post1";

/// `{name: version}` of the ROCm distributions installed in `venv`.
fn installed_versions(venv: &std::path::Path) -> BTreeMap<String, String> {
    let json =
        support::run(std::process::Command::new(venv.join("bin/python")).args(["-m", "pip", "list", "--format=json"]));
    let list: serde_json::Value = serde_json::from_str(&json).expect("pip list JSON");
    list.as_array()
        .expect("a list")
        .iter()
        .filter(|package| package["name"].as_str().is_some_and(|name| name.starts_with("rocm")))
        .map(|package| {
            (
                package["name"].as_str().unwrap_or_default().to_owned(),
                package["version"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_core_post_release_joins_a_final_set() {
    let temp = tempfile::tempdir().expect("temp dir");
    let dest = temp.path().join("out");
    let mut config = support::package_config(&build(true).artifacts, &dest);
    config.version = RELEASE.to_owned();
    packager::package(&config, &packager::Silent).expect("package the 7.12.0 set");
    // The README's recipe: the one package, at the post release, into the same dist/.
    config.version = POST.to_owned();
    config.only = vec![PackageGroup::Core];
    packager::package(&config, &packager::Silent).expect("package the core post release");
    let dist = config.output_dir();
    let names = support::dist_names(&dist);
    let cores: Vec<&String> = names.iter().filter(|name| name.starts_with("rocm_sdk_core-")).collect();
    assert_eq!(cores.len(), 2, "{names:?}");

    let report = release_gate::verify_dist(&dist).expect("verify reads the dist");
    let violations: Vec<_> = report.packages.iter().flat_map(|package| &package.violations).collect();
    assert!(violations.is_empty(), "{violations:#?}");

    let venv = support::fresh_venv(&temp.path().join("venv"));
    let output = support::pip_install(&venv, &dist, &["rocm[libraries]"], &[("PATH", PATH_WITHOUT_GPU_TOOLS)]);
    support::assert_success(&output, "pip install 'rocm[libraries]'");
    let versions = installed_versions(&venv);
    let expected: BTreeMap<String, String> =
        [("rocm", RELEASE), ("rocm-sdk-core", POST), ("rocm-sdk-libraries", RELEASE)]
            .into_iter()
            .map(|(name, version)| (name.to_owned(), version.to_owned()))
            .collect();
    assert_eq!(versions, expected);
    installed::rocm_sdk(&venv, &["test"], &[]);

    let check = "import rocm_sdk, sys\n\
        rocm_sdk.initialize_process(check_version=sys.argv[1], fail_on_version_mismatch=True)";
    for (asked, matches) in [(RELEASE, true), (POST, true), ("7.12.1", false)] {
        let output = installed::python(&venv, check, &[std::path::Path::new(asked)], &[]);
        assert_eq!(
            output.status.success(),
            matches,
            "check_version={asked}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
