//! What splitting a fat build per GPU target would be (CONTRACT §12 "A fat build, split
//! per target"), planned on the fat example (`example --fat`: rocBLAS, hipBLASLt and
//! rocRAND with real `.hip_fatbin` bundles for gfx908, gfx90a:xnack-, gfx90a:xnack+): the
//! archives at TheRock's kpack-split names, markers relative to each library, kernel
//! databases by target, device wheels by owner, and `dist_info.json` compared with what
//! the bundles hold; several families and an already kpack-split build refused.

use std::path::Path;

use diagnostic::Diagnostic;
use example_artifacts::{write_example, ExampleOptions, FAT_TARGET_IDS};
use packager::input::catalog::Catalog;
use packager::plan::device_code::plan_fat_split;
use packager::plan::PlanError;

fn example(dir: &Path, options: &ExampleOptions) -> std::path::PathBuf {
    let artifacts = dir.join("artifacts");
    write_example(&artifacts, options).expect("the example");
    artifacts
}

#[test]
fn the_fat_example_splits_into_therock_s_archives() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = example(temp.path(), &ExampleOptions { fat: true, ..Default::default() });
    let plan = plan_fat_split(&Catalog::read(&artifacts).expect("reads")).expect("plans");
    assert_eq!(plan.family.as_deref(), Some("gfx90X-dcgpu"));
    let libraries: Vec<(&str, &str, &str)> = plan
        .libraries
        .iter()
        .map(|library| (library.rel.as_str(), library.group.as_str(), library.search_path.as_str()))
        .collect();
    assert_eq!(
        libraries,
        [
            ("lib/libhipblaslt.so.1", "blas_lib", "../.kpack/blas_lib_@GFXARCH@.kpack"),
            ("lib/librocblas.so.5", "blas_lib", "../.kpack/blas_lib_@GFXARCH@.kpack"),
            ("lib/librocrand.so.1", "rand_lib", "../.kpack/rand_lib_@GFXARCH@.kpack"),
        ]
    );
    let mut targets: Vec<&str> = FAT_TARGET_IDS.to_vec();
    targets.sort();
    for library in &plan.libraries {
        assert_eq!(library.targets, targets, "{}", library.rel);
        assert_eq!(library.wrappers, 1, "{}", library.rel);
    }
    let archives: Vec<(&str, &str, &[usize])> = plan
        .archives
        .iter()
        .map(|archive| (archive.rel.as_str(), archive.wheel.as_str(), archive.libraries.as_slice()))
        .collect();
    assert_eq!(
        archives,
        [
            (".kpack/blas_lib_gfx908.kpack", "gfx908", &[0, 1][..]),
            (".kpack/blas_lib_gfx90a:xnack+.kpack", "gfx90a", &[0, 1][..]),
            (".kpack/blas_lib_gfx90a:xnack-.kpack", "gfx90a", &[0, 1][..]),
            (".kpack/rand_lib_gfx908.kpack", "gfx908", &[2][..]),
            (".kpack/rand_lib_gfx90a:xnack+.kpack", "gfx90a", &[2][..]),
            (".kpack/rand_lib_gfx90a:xnack-.kpack", "gfx90a", &[2][..]),
        ]
    );
    let databases: Vec<(&str, &str)> =
        plan.databases.iter().map(|database| (database.rel.as_str(), database.wheel.as_str())).collect();
    assert_eq!(
        databases,
        [
            ("lib/rocblas/library/TensileLibrary_lazy_gfx908.dat", "gfx908"),
            ("lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat", "gfx90a"),
        ]
    );
    assert_eq!(plan.device_wheels, ["gfx908", "gfx90a"]);
    assert_eq!(plan.targets, targets);
    assert!(plan.declared_without_code.is_empty() && plan.undeclared.is_empty(), "{plan:?}");
}

#[test]
fn declared_targets_are_compared_with_the_bundles() {
    let temp = tempfile::tempdir().expect("tempdir");
    let artifacts = example(temp.path(), &ExampleOptions { fat: true, ..Default::default() });
    let dist_info = artifacts.join("base_lib_generic/base/aux-overlay/stage/share/therock/dist_info.json");
    fs_err::write(&dist_info, "{\"dist_amdgpu_targets\": \"gfx906;gfx908\"}\n").expect("rewrite dist_info.json");
    // AOTriton-style images: one named by a target moves, one named by a family pattern
    // serves several targets and stays with the libraries.
    let images = artifacts.join("blas_lib_gfx90X-dcgpu/math-libs/BLAS/rocBLAS/stage/lib/aotriton.images");
    for family in ["amd-gfx90a", "amd-gfx9xx"] {
        fs_err::create_dir_all(images.join(family)).expect("create an image directory");
        fs_err::write(images.join(family).join("attn.aks2"), "image\n").expect("write an image");
    }
    let plan = plan_fat_split(&Catalog::read(&artifacts).expect("reads")).expect("plans");
    let moved: Vec<(&str, &str)> =
        plan.databases.iter().map(|database| (database.rel.as_str(), database.wheel.as_str())).collect();
    assert!(moved.contains(&("lib/aotriton.images/amd-gfx90a/attn.aks2", "gfx90a")), "{moved:?}");
    assert!(!moved.iter().any(|(rel, _)| rel.contains("amd-gfx9xx")), "{moved:?}");
    assert_eq!(plan.declared_without_code, ["gfx906"]);
    assert_eq!(plan.undeclared, ["gfx90a:xnack+", "gfx90a:xnack-"]);
    let json = serde_json::to_value(&plan).expect("serializes");
    assert_eq!(json["declared_without_code"], serde_json::json!(["gfx906"]));
}

#[test]
fn several_families_and_kpack_split_builds_are_refused() {
    let temp = tempfile::tempdir().expect("tempdir");
    let legacy = example(&temp.path().join("legacy"), &ExampleOptions::default());
    let error = plan_fat_split(&Catalog::read(&legacy).expect("reads")).expect_err("refused");
    assert!(matches!(error, PlanError::FatSplit { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with(
            "cannot split this build's device code per target: the build has libraries for several \
             families (gfx110X-all, gfx94X-dcgpu)"
        ),
        "{message}"
    );
    assert!(error.hint().expect("a hint").contains("one family"));
    let split = example(&temp.path().join("split"), &ExampleOptions { kpack_split: true, ..Default::default() });
    let error = plan_fat_split(&Catalog::read(&split).expect("reads")).expect_err("refused");
    assert!(error.to_string().contains("kpack-split already"), "{error}");
}
