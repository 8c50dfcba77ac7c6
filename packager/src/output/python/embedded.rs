//! The `.py` files under `packager/python/`, compiled into the packager so a build never
//! depends on the working directory. A test checks that no file there is left out.

/// `_dist_info.py`, the same in every pure package (its constants are each package's
/// generated `_dist_info_data.py`).
pub const DIST_INFO: &str = include_str!("../../../python/meta/rocm_sdk/_dist_info.py");

/// The `rocm` sdist's `pyproject.toml` and in-tree build backend.
pub const META_PYPROJECT: &str = include_str!("../../../python/meta/pyproject.toml");
pub const META_BACKEND: &str = include_str!("../../../python/meta/_rocm_build_backend.py");

/// The KFD topology reader of `rocm-sdk doctor`, which the `amd` variant provider carries
/// too: one source file for both (SPEC §4, §9).
pub const KFD_TOPOLOGY: &str = include_str!("../../../python/meta/rocm_sdk/_kfd_topology.py");

/// The `amd` wheel variant provider plugin's own module (SPEC §9).
pub const VARIANT_PROVIDER_INIT: &str =
    include_str!("../../../python/variant_provider/rocm_sdk_variant_provider/__init__.py");

/// The `rocm_sdk` package (paths relative to it), except the generated `_dist_info_data.py`.
pub const META_PACKAGE: &[(&str, &str)] = &[
    ("__init__.py", include_str!("../../../python/meta/rocm_sdk/__init__.py")),
    ("__main__.py", include_str!("../../../python/meta/rocm_sdk/__main__.py")),
    ("_devel.py", include_str!("../../../python/meta/rocm_sdk/_devel.py")),
    ("_devel_integrity.py", include_str!("../../../python/meta/rocm_sdk/_devel_integrity.py")),
    ("_devel_tree.py", include_str!("../../../python/meta/rocm_sdk/_devel_tree.py")),
    ("_device_extras.py", include_str!("../../../python/meta/rocm_sdk/_device_extras.py")),
    ("_device_links.py", include_str!("../../../python/meta/rocm_sdk/_device_links.py")),
    ("_dist_info.py", DIST_INFO),
    ("_doctor.py", include_str!("../../../python/meta/rocm_sdk/_doctor.py")),
    ("_kfd_topology.py", KFD_TOPOLOGY),
    ("_record.py", include_str!("../../../python/meta/rocm_sdk/_record.py")),
    ("_release.py", include_str!("../../../python/meta/rocm_sdk/_release.py")),
    ("_requirements.py", include_str!("../../../python/meta/rocm_sdk/_requirements.py")),
    ("tests/__init__.py", include_str!("../../../python/meta/rocm_sdk/tests/__init__.py")),
    ("tests/base_test.py", include_str!("../../../python/meta/rocm_sdk/tests/base_test.py")),
    ("tests/core_test.py", include_str!("../../../python/meta/rocm_sdk/tests/core_test.py")),
    ("tests/devel_test.py", include_str!("../../../python/meta/rocm_sdk/tests/devel_test.py")),
    ("tests/libraries_test.py", include_str!("../../../python/meta/rocm_sdk/tests/libraries_test.py")),
    ("tests/profiler_test.py", include_str!("../../../python/meta/rocm_sdk/tests/profiler_test.py")),
    ("tests/utils.py", include_str!("../../../python/meta/rocm_sdk/tests/utils.py")),
];

pub const CORE_INIT: &str = include_str!("../../../python/core/rocm_sdk_core/__init__.py");
pub const CORE_CLI: &str = include_str!("../../../python/core/rocm_sdk_core/_cli.py");
pub const PROFILER_INIT: &str = include_str!("../../../python/profiler/rocm_profiler/__init__.py");
pub const PROFILER_CLI: &str = include_str!("../../../python/profiler/rocm_profiler/_cli.py");
pub const LIBRARIES_INIT: &str = include_str!("../../../python/libraries/__init__.py");
pub const DEVEL_INIT: &str = include_str!("../../../python/devel/__init__.py");
/// The `__init__.py` of every platform directory except the devices' (they have none).
pub const PLATFORM_INIT: &str = include_str!("../../../python/platform_package/__init__.py");
