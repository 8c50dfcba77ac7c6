//! Devel-only ELF files (SPEC §2 "Devel population", "RPATH dependencies"; §5): a shared
//! library that only the devel tree ships gets its search path as DT_RPATH without the
//! build machine's absolute entry, and the removal is reported like a runtime package's.

use std::io::Read;

use packager::plan::FindingKind;

use super::{build, copy_tree, wheel_members, wheel_of, CreationOrder};
use crate::support;

/// `prim` is a devel-only artifact (SPEC §2 "What goes where").
const PRIM_STAGE: &str = "prim_dev_generic/math-libs/rocPRIM/stage";
const LIBRARY: &str = "lib/libprim_devel_only.so";

#[test]
fn devel_only_library_loses_its_absolute_rpath_and_says_so() {
    let temp = tempfile::tempdir().expect("temp dir");
    let artifacts = temp.path().join("artifacts");
    copy_tree(&build(true).artifacts, &artifacts, CreationOrder::Ascending);
    let lib_dir = artifacts.join(PRIM_STAGE).join("lib");
    let source = support::shared_lib(
        &lib_dir,
        "libprim_devel_only.so",
        "int prim_devel_only(void) { return 7; }\n",
        &["-Wl,--enable-new-dtags", "-Wl,-rpath,/build/abs:$ORIGIN"],
    );
    let before = elf_rpath::read_elf(&source).expect("read").expect("ELF");
    assert_eq!((before.rpath.as_deref(), before.runpath.as_deref()), (None, Some("/build/abs:$ORIGIN")));

    let dist = temp.path().join("dist");
    let report =
        packager::package(&support::package_config(&artifacts, temp.path()), &packager::Silent).expect("package");
    let devel = wheel_members(&wheel_of(&dist, "rocm_sdk_devel"));
    let mut tarball = tar::Archive::new(devel["rocm_sdk_devel/_devel.tar"].as_slice());
    let wanted = format!("_rocm_sdk_devel/{LIBRARY}");
    let mut shipped = None;
    for entry in tarball.entries().expect("tar entries") {
        let mut entry = entry.expect("tar entry");
        if entry.path().expect("member path").to_string_lossy() == wanted {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).expect("read tar member");
            shipped = Some(bytes);
        }
    }
    let extracted = temp.path().join("libprim_devel_only.so.extracted");
    fs_err::write(&extracted, shipped.unwrap_or_else(|| panic!("{wanted} is not in the devel tarball")))
        .expect("extract");
    let after = elf_rpath::read_elf(&extracted).expect("read").expect("still ELF");
    assert_eq!((after.rpath.as_deref(), after.runpath.as_deref()), (Some("$ORIGIN"), None));
    assert_eq!((after.soname, after.needed), (before.soname, before.needed));

    let removals: Vec<_> = report
        .findings
        .iter()
        .filter(|finding| finding.path.as_str() == LIBRARY && matches!(finding.what, FindingKind::RpathRemoved { .. }))
        .collect();
    assert_eq!(removals.len(), 1, "{:?}", report.findings);
    assert_eq!(removals[0].package, "rocm-sdk-devel");
    assert_eq!(removals[0].what, FindingKind::RpathRemoved { entries: vec!["/build/abs".to_owned()] });
    assert!(report.counts.get("rpath entries removed").is_some_and(|count| *count >= 1), "{:?}", report.counts);
}
