//! Stale outputs: a family dropped between two runs into one destination used
//! to leave its old wheel of the same version there, and `verify --dist` passed the mixed
//! set. A full run now removes its own earlier wheels it no longer produces (known by name
//! and version, nothing else), and `verify --dist` reports a wheel the set's `rocm` sdist
//! does not offer.

use release_gate::Check;

use super::{dist_snapshot, Example};

const DROPPED: &str = "gfx94X-dcgpu";

/// Removes every artifact of the family `family` from the example.
fn drop_family(example: &Example, family: &str) {
    let suffix = format!("_{family}");
    let mut dropped = 0;
    for entry in fs_err::read_dir(&example.artifacts).expect("read artifacts") {
        let path = entry.expect("entry").path();
        if path.file_name().is_some_and(|name| name.to_string_lossy().ends_with(&suffix)) {
            fs_err::remove_dir_all(&path).expect("rm");
            dropped += 1;
        }
    }
    assert!(dropped > 0, "the example has {family} artifacts");
}

fn family_wheels(names: &[String]) -> Vec<&String> {
    names.iter().filter(|name| name.contains("gfx94x_dcgpu")).collect()
}

#[test]
fn a_family_dropped_between_runs_loses_its_old_wheels_and_nothing_else() {
    let example = Example::new();
    example.package().expect("the first run");
    let first: Vec<String> = dist_snapshot(&example.dist()).into_keys().collect();
    assert!(!family_wheels(&first).is_empty(), "{first:?}");
    // Not ours, or not of this version: they stay whatever happens.
    let foreign = ["torch-7.12.0.dev0-py3-none-linux_x86_64.whl", "rocm_sdk_core-7.11.0-py3-none-linux_x86_64.whl"];
    for name in foreign {
        fs_err::write(example.dist().join(name), "someone else's").expect("write");
    }

    drop_family(&example, DROPPED);
    let report = example.package().expect("the second run");
    let second: Vec<String> = dist_snapshot(&example.dist()).into_keys().collect();
    assert_eq!(family_wheels(&second), Vec::<&String>::new(), "{second:?}");
    for name in foreign {
        assert!(second.iter().any(|kept| kept == name), "{name} was removed: {second:?}");
        fs_err::remove_file(example.dist().join(name)).expect("rm");
    }
    let mut produced: Vec<&str> = report.outputs.iter().map(|output| output.file_name.as_str()).collect();
    produced.sort_unstable();
    let left: Vec<String> = dist_snapshot(&example.dist()).into_keys().collect();
    assert_eq!(left, produced, "the destination holds exactly this run's set");
    let verified = release_gate::verify_dist(&example.dist()).expect("verify");
    assert_eq!(verified.n_violations(), 0, "{verified:?}");
}

#[test]
fn verify_reports_a_wheel_the_sdist_does_not_offer() {
    let example = Example::new();
    example.package().expect("the first run");
    let keep = example.temp.path().join("kept");
    fs_err::create_dir_all(&keep).expect("mkdir");
    let first: Vec<String> = dist_snapshot(&example.dist()).into_keys().collect();
    let old = family_wheels(&first).into_iter().find(|name| name.starts_with("rocm_sdk_libraries_")).expect("a wheel");
    fs_err::copy(example.dist().join(old), keep.join(old)).expect("copy");

    drop_family(&example, DROPPED);
    example.package().expect("the second run");
    fs_err::copy(keep.join(old), example.dist().join(old)).expect("put the old wheel back");
    let verified = release_gate::verify_dist(&example.dist()).expect("verify");
    let package = verified.packages.iter().find(|package| &package.file == old).expect("listed");
    assert!(
        package.violations.iter().any(|v| v.check == Check::Completeness && v.message.contains("does not offer")),
        "{package:?}"
    );
}
