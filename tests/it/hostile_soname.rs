//! A SONAME is input, not a path: a library whose SONAME is `/etc/passwd`,
//! climbs with `..`, is `.` or `..`, or is empty, is packaged as a library without a
//! SONAME, the run reports it naming the file, and no devel link leaves the tree.

use packager::plan::FindingKind;

use super::{devel_members, Example};

const HOSTILE_SONAMES: [&str; 5] = ["", "/etc/passwd", "../../../../../../../../etc/passwd", "..", "."];

const PLACEHOLDER: &str = "EMPTY_SONAME_PLACEHOLDER";

/// Overwrites the placeholder SONAME with NUL bytes: `DT_SONAME` then names "".
fn empty_the_soname(library: &std::path::Path) {
    let mut bytes = fs_err::read(library).expect("read");
    let needle = format!("{PLACEHOLDER}\0");
    let at =
        bytes.windows(needle.len()).position(|window| window == needle.as_bytes()).expect("placeholder in .dynstr");
    bytes[at..at + PLACEHOLDER.len()].fill(0);
    fs_err::write(library, bytes).expect("write");
    let dynamic = crate::support::run(std::process::Command::new("readelf").arg("-d").arg(library));
    assert!(dynamic.contains("Library soname: []"), "{dynamic}");
}

#[test]
fn a_soname_that_is_not_a_plain_file_name_is_reported_and_ignored() {
    for soname in HOSTILE_SONAMES {
        let example = Example::new();
        let scratch = example.temp.path().join("scratch");
        fs_err::create_dir_all(&scratch).expect("mkdir");
        let library = example.core_stage().join("lib/libevil.so.1");
        // The linker's own flag, as a build would set it (it drops an empty one, so that one
        // is made by blanking a placeholder's bytes in the string table).
        let flag = format!("-Wl,-soname,{}", if soname.is_empty() { PLACEHOLDER } else { soname });
        crate::support::compile(
            &scratch,
            "evil",
            "int evil(void) { return 1; }\n",
            &["-shared", "-fPIC", &flag],
            &library,
        );

        if soname.is_empty() {
            empty_the_soname(&library);
        }
        let report = example.package().unwrap_or_else(|error| panic!("{soname:?}: {}", super::full_text(&error)));
        let reported: Vec<_> = report
            .findings
            .iter()
            .filter(|finding| matches!(&finding.what, FindingKind::BadSoname { soname: found } if found == soname))
            .collect();
        assert!(!reported.is_empty(), "{soname:?}: not reported: {:?}", report.findings);
        assert!(reported.iter().all(|finding| finding.path.as_str() == "lib/libevil.so.1"), "{reported:?}");
        assert!(reported.iter().any(|finding| finding.to_string().contains("lib/libevil.so.1")), "{reported:?}");

        // Shipped under its own name, and devel holds it as a link into core or the file.
        let core = example.core_wheel();
        assert!(core.keys().any(|name| name.ends_with("/lib/libevil.so.1")), "{soname:?}: not shipped");
        let devel = devel_members(&example.dist());
        for (name, content) in &devel {
            let text = String::from_utf8_lossy(content);
            if let Some(target) = text.strip_prefix("-> ") {
                assert!(
                    !target.contains("etc/passwd") && target != ".." && target != "." && !target.is_empty(),
                    "{soname:?}: {name} {text}"
                );
            }
        }
        let link =
            devel.iter().find(|(name, _)| name.ends_with("/lib/libevil.so.1")).map(|(_, link)| link).unwrap_or_else(
                || {
                    panic!(
                        "{soname:?}: devel lacks the library: {:?}",
                        devel.keys().filter(|name| name.contains("lib/lib")).collect::<Vec<_>>()
                    )
                },
            );
        assert!(String::from_utf8_lossy(link).starts_with("-> ../../_rocm_sdk_core/lib/libevil.so.1"), "{soname:?}");

        let verified = release_gate::verify_dist(&example.dist()).expect("dist verifies");
        assert_eq!(verified.n_violations(), 0, "{soname:?}: {verified:?}");
    }
}
