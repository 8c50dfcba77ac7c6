//! Symlinks in the artifacts that point outside them: never followed to copy outside data
//! into a package, each dropped with a finding that names it; loops end.

use std::os::unix::fs::{symlink, PermissionsExt};

use packager::plan::FindingKind;

use super::{devel_members, Example};

/// Bytes that exist only outside the artifacts directory.
const SECRET: &str = "HOSTILE-OUTSIDE-DATA-7f3a";

/// The findings of `plan` about `path` in any package: (package, reason).
fn dropped(plan: &packager::Plan, path: &str) -> Vec<(String, String)> {
    plan.findings
        .iter()
        .filter(|finding| finding.path.as_str() == path)
        .filter_map(|finding| match &finding.what {
            FindingKind::Dropped { reason } => Some((finding.package.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle.as_bytes())
}

#[test]
fn links_leaving_the_artifacts_are_dropped_never_followed() {
    let example = Example::new();
    let outside = example.temp.path().join("outside");
    fs_err::create_dir_all(&outside).expect("mkdir");
    let secret = outside.join("secret.txt");
    fs_err::write(&secret, SECRET).expect("write");
    let tool = outside.join("tool.sh");
    fs_err::write(&tool, format!("#!/bin/sh\necho {SECRET}\n")).expect("write");
    fs_err::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    let stage = example.core_stage();
    let lib = stage.join("lib");
    // From stage/lib, six `..` reach the temp dir that holds `outside/`.
    let up = "../../../../../..";
    let links: &[(&str, String)] = &[
        ("lib/escape-relative", format!("{up}/outside/secret.txt")),
        ("lib/escape-absolute", secret.display().to_string()),
        ("lib/chain-1", "chain-2".to_owned()),
        ("lib/chain-2", "../lib/chain-3".to_owned()),
        ("lib/chain-3", "escape-relative".to_owned()),
        ("lib/outside-dir", format!("{up}/outside")),
        ("lib/through-outside-dir", "outside-dir/secret.txt".to_owned()),
        ("lib/libescape.so", format!("{up}/outside/secret.txt")),
        ("bin/escape-tool", format!("../{up}/outside/tool.sh")),
    ];
    fs_err::create_dir_all(stage.join("bin")).expect("mkdir");
    for (link, target) in links {
        symlink(target, stage.join(link)).expect("symlink");
    }
    // The links really do reach the outside data on disk: following them would leak it.
    for link in ["lib/escape-relative", "lib/chain-1", "lib/through-outside-dir"] {
        assert_eq!(fs_err::read_to_string(stage.join(link)).expect("follow on disk"), SECRET, "{link}");
    }
    assert!(lib.join("escape-absolute").exists());

    let plan = packager::plan(&example.config(), &packager::Silent).expect("plans");
    for (link, _) in links {
        let found = dropped(&plan, link);
        assert!(
            found
                .iter()
                .any(|(package, reason)| package == "rocm-sdk-core" && reason.contains("leaves the artifacts tree")),
            "{link}: {found:?}"
        );
    }
    let core = plan.packages.iter().find(|package| package.names.distribution == "rocm-sdk-core").expect("core");
    for (link, _) in links {
        assert!(!core.files.keys().any(|rel| rel.as_str() == *link), "{link} planned into core");
    }

    example.package().expect("packages without the escaping links");
    let wheel = example.core_wheel();
    for (name, bytes) in &wheel {
        assert!(!contains(bytes, SECRET), "outside data in core wheel member {name}");
    }
    for (link, _) in links {
        assert!(!wheel.keys().any(|name| name.ends_with(&format!("/{link}"))), "{link} in the wheel");
    }
    let devel = devel_members(&example.dist());
    assert!(!devel.is_empty(), "the example has a devel tarball");
    for (name, bytes) in &devel {
        assert!(!contains(bytes, SECRET), "outside data in devel member {name}");
        assert!(!contains(bytes, "outside"), "devel member {name} links outside: {}", String::from_utf8_lossy(bytes));
    }
}

#[test]
fn symlink_loops_end_and_are_dropped() {
    let example = Example::new();
    let stage = example.core_stage();
    let links = [
        ("lib/self", "self"),
        ("lib/loop-a", "loop-b"),
        ("lib/loop-b", "../lib/loop-a"),
        // A directory link into itself grows the path at every hop.
        ("lib/deeper", "deeper/deeper/x"),
        ("lib/via-loop", "loop-a/x"),
    ];
    for (link, target) in links {
        symlink(target, stage.join(link)).expect("symlink");
    }
    let plan = packager::plan(&example.config(), &packager::Silent).expect("plans, and ends");
    for (link, _) in links {
        let found = dropped(&plan, link);
        assert!(
            found.iter().any(|(package, reason)| package == "rocm-sdk-core" && reason == "symlink loop"),
            "{link}: {found:?}"
        );
    }
    example.package().expect("packages without the loops");
    let wheel = example.core_wheel();
    for (link, _) in links {
        assert!(!wheel.keys().any(|name| name.ends_with(&format!("/{link}"))), "{link} in the wheel");
    }
}

#[test]
fn an_artifact_or_prefix_that_is_a_link_to_outside_is_not_walked() {
    let example = Example::new();
    let outside = example.temp.path().join("outside/stage");
    fs_err::create_dir_all(outside.join("lib")).expect("mkdir");
    fs_err::write(outside.join("lib/libleak.so"), SECRET).expect("write");

    // A whole artifact directory that is a symlink is not an artifact.
    symlink(example.temp.path().join("outside"), example.artifacts.join("core-leak_lib_generic")).expect("symlink");
    fs_err::write(example.temp.path().join("outside/artifact_manifest.txt"), "stage\n").expect("write");
    let plan = packager::plan(&example.config(), &packager::Silent).expect("plans");
    let core = plan.packages.iter().find(|package| package.names.distribution == "rocm-sdk-core").expect("core");
    assert!(!core.files.keys().any(|rel| rel.as_str() == "lib/libleak.so"));

    // A manifest prefix inside a real artifact that leads outside through a link.
    let artifact = example.artifacts.join("core-runtime_lib_generic");
    let manifest = artifact.join("artifact_manifest.txt");
    let error = super::fails_leaving_dist_intact(&example, |_| {
        symlink(&outside, artifact.join("leak")).expect("symlink");
        let text = fs_err::read_to_string(&manifest).expect("read");
        fs_err::write(&manifest, format!("{text}leak\n")).expect("write");
    });
    let text = super::full_text(&error);
    assert!(text.contains("points outside the artifact") && text.contains(&manifest.display().to_string()), "{text}");
    assert!(text.contains("hint: "), "{text}");
    for (name, bytes) in example.core_wheel() {
        assert!(!contains(&bytes, SECRET), "outside data in {name}");
    }
}
