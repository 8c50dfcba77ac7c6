"""Target family selection and package naming of `_dist_info` (SPEC §3)."""

import json
import unittest
from typing import Any, Optional

from tests import support

RESOLVE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import shipped._dist_info as module
try:
    print(json.dumps(list(module.resolve_target_family())))
except ValueError as error:
    print(json.dumps(["error", str(error)]))
"""


class MatchingTest(unittest.TestCase):
    def test_targets_and_target_ids_select_the_base_target(self) -> None:
        info = support.load_dist_info(families=["gfx1030", "gfx90a"], kpack=True)
        for requested in ("gfx90a", "GFX90A", "gfx90a:xnack-", "gfx90a:xnack+", " gfx90a "):
            self.assertEqual(info.match_target_family(requested), "gfx90a", requested)
        self.assertIsNone(info.match_target_family("gfx942"))

    def test_families_match_case_insensitively(self) -> None:
        info = support.load_dist_info(families=["gfx110X-all"])
        self.assertEqual(info.match_target_family("gfx110x-all"), "gfx110X-all")

    def test_detected_gpus_map_to_families_or_targets(self) -> None:
        info = support.load_dist_info(families=["gfx110X-all", "gfx94X-dcgpu", "gfx90a", "gfx1151"])
        self.assertEqual(info.family_for_gpu("gfx1100"), "gfx110X-all")
        self.assertEqual(info.family_for_gpu("gfx942"), "gfx94X-dcgpu")
        self.assertEqual(info.family_for_gpu("gfx90a:sramecc+:xnack-"), "gfx90a")
        self.assertEqual(info.family_for_gpu("gfx1151"), "gfx1151")
        self.assertIsNone(info.family_for_gpu("gfx803"))
        self.assertIsNone(info.family_for_gpu("not a gpu"))

    def test_names(self) -> None:
        info = support.load_dist_info(families=["gfx110X-all"], nonce="_n")
        libraries = info.ALL_PACKAGES["libraries"]
        self.assertTrue(libraries.is_target_specific)
        self.assertTrue(libraries.is_target_specific())
        self.assertFalse(info.ALL_PACKAGES["core"].is_target_specific())
        self.assertEqual(libraries.get_dist_package_name("gfx110X-all"), "rocm-sdk-libraries-gfx110X-all")
        self.assertEqual(libraries.get_pure_py_package_name("gfx110X-all"), "rocm_sdk_libraries_gfx110x_all")
        self.assertEqual(libraries.get_py_package_name("gfx110X-all"), "_rocm_sdk_libraries_gfx110X_all_n")
        self.assertEqual(
            libraries.get_dist_package_require("gfx110X-all"), "rocm-sdk-libraries-gfx110X-all==" + support.VERSION
        )
        with self.assertRaises(ValueError):
            libraries.get_dist_package_name()
        kpack = support.load_dist_info(families=["gfx90a"], kpack=True)
        self.assertEqual(kpack.ALL_PACKAGES["device"].get_dist_package_name("gfx90a:xnack+"), "rocm-sdk-device-gfx90a")
        self.assertEqual(kpack.ALL_PACKAGES["device"].get_py_package_name("gfx90a"), "_rocm_sdk_libraries")
        self.assertIsNone(kpack.ALL_PACKAGES["device"].get_pure_py_package_name("gfx90a"))

    def test_names_keep_the_builds_spelling_of_a_family(self) -> None:
        # The reference keeps TheRock's spelling in names and platform directories; a family
        # given in another case is spelled as the build spells it (SPEC §2 "Names").
        info = support.load_dist_info(families=["gfx110X-all", "gfx94X-dcgpu"])
        libraries = info.ALL_PACKAGES["libraries"]
        for given in ("gfx110X-all", "gfx110x-all", "GFX110X-ALL"):
            self.assertEqual(libraries.get_dist_package_name(given), "rocm-sdk-libraries-gfx110X-all", given)
            self.assertEqual(libraries.get_py_package_name(given), "_rocm_sdk_libraries_gfx110X_all", given)
            self.assertEqual(libraries.get_pure_py_package_name(given), "rocm_sdk_libraries_gfx110x_all", given)
        self.assertEqual(info.target_dist_segment("gfx90a:xnack+"), "gfx90a")
        self.assertEqual(info.target_dist_segment("gfx1200"), "gfx1200")

    def test_every_key_of_the_reference_in_both_layouts(self) -> None:
        keys = ["meta", "core", "libraries", "device", "devel", "profiler"]
        legacy = support.load_dist_info(families=["gfx110X-all", "gfx94X-dcgpu"])
        kpack = support.load_dist_info(families=["gfx90a"], kpack=True)
        self.assertEqual(list(legacy.ALL_PACKAGES), keys)
        self.assertEqual(list(kpack.ALL_PACKAGES), keys)
        # A legacy build defines `device` as the reference does, and makes no such wheel.
        device = legacy.ALL_PACKAGES["device"]
        self.assertFalse(device.built)
        self.assertTrue(kpack.ALL_PACKAGES["device"].built)
        self.assertEqual(device.get_dist_package_name("gfx110X-all"), "rocm-sdk-device-gfx110X-all")
        self.assertEqual(device.get_py_package_name("gfx110X-all"), "_rocm_sdk_device_gfx110X_all")
        self.assertIsNone(device.get_py_package("gfx110X-all"))

    def test_library_table(self) -> None:
        info = support.load_dist_info()
        self.assertEqual(info.ALL_LIBRARIES["amdhip64"].package.logical_name, "core")
        self.assertEqual(info.ALL_LIBRARIES["rocm-openblas"].posix_relpath, "lib/host-math/lib")
        self.assertTrue(info.ALL_LIBRARIES["rocdxg"].optional)
        self.assertEqual(info.ALL_LIBRARIES["hipdnn"].so_pattern, "libhipdnn_backend.so*")
        self.assertEqual(info.ALL_LIBRARIES["miopen"].package.logical_name, "libraries")


# `bin/` of Windows builds as they ship: TheRock's (`amdhip64_7.dll`, `hiprtc0702.dll`
# beside `hiprtc-builtins0702.dll`, `amd_comgr_3.dll`, `libhipblaslt.dll`) and HIP SDK
# 7.1's `lib`-prefixed BLAS DLLs, plus libraries the table does not name.
WINDOWS_BIN = [
    "amd_comgr_3.dll",
    "amdhip64_7.dll",
    "hipInfo.exe",
    "hipblas.dll",
    "hipdnn_backend.dll",
    "hipfft.dll",
    "hiprand.dll",
    "hiprtc-builtins0702.dll",
    "hiprtc0702.dll",
    "hipsolver.dll",
    "hipsparse.dll",
    "hsa-runtime64.dll",
    "libhipblas.dll",
    "libhipblaslt.dll",
    "MIOpen.dll",
    "origami.dll",
    "rocblas.dll",
    "rocm-openblas.dll",
    "rocm_kpack.dll",
    "rocsolver.dll",
    "rocsparse.dll",
]


class WindowsDllTest(unittest.TestCase):
    def matches(self, shortname: str, names: list[str]) -> list[str]:
        entry = support.load_dist_info().ALL_LIBRARIES[shortname]
        return sorted(name for name in names if entry.is_dll(name))

    def test_each_windows_library_finds_its_own_dll_and_no_neighbour(self) -> None:
        expected = {
            "amdhip64": ["amdhip64_7.dll"],
            "hiprtc": ["hiprtc0702.dll"],
            "amd_comgr": ["amd_comgr_3.dll"],
            "rocm-openblas": ["rocm-openblas.dll"],
            "rocm_kpack": ["rocm_kpack.dll"],
            "hipblas": ["hipblas.dll", "libhipblas.dll"],
            "hipblaslt": ["libhipblaslt.dll"],
            "hipfft": ["hipfft.dll"],
            "hiprand": ["hiprand.dll"],
            "hipsparse": ["hipsparse.dll"],
            "hipsolver": ["hipsolver.dll"],
            "miopen": ["MIOpen.dll"],
            "origami": ["origami.dll"],
            "hipdnn": ["hipdnn_backend.dll"],
        }
        info = support.load_dist_info()
        with_dll = sorted(name for name, entry in info.ALL_LIBRARIES.items() if entry.dll_name)
        self.assertEqual(with_dll, sorted(expected))
        for shortname, dlls in expected.items():
            self.assertEqual(self.matches(shortname, WINDOWS_BIN), dlls, shortname)

    def test_both_spellings_versions_and_case(self) -> None:
        for name in (
            "libhipblas.dll",
            "hipblas.dll",
            "HIPBLAS.DLL",
            "libhipblas-3.dll",
            "hipblas_3.dll",
            "hipblas0702.dll",
        ):
            self.assertEqual(self.matches("hipblas", [name]), [name], name)
        for name in ("libhipblaslt.dll", "hipblas_fortran.dll", "hipblas.lib", "libhipblas.so.3", "xhipblas.dll"):
            self.assertEqual(self.matches("hipblas", [name]), [], name)
        self.assertEqual(
            self.matches("amd_comgr", ["amd_comgr0701.dll", "amd_comgr_drivers.dll"]), ["amd_comgr0701.dll"]
        )

    def test_the_reference_glob_is_kept_for_readers(self) -> None:
        info = support.load_dist_info()
        self.assertEqual(info.ALL_LIBRARIES["hipblas"].dll_pattern, "*hipblas*.dll")
        self.assertEqual(info.ALL_LIBRARIES["rccl"].dll_pattern, "")


class ResolveTest(support.TempDirTest):
    def resolve(
        self, env: Optional[dict[str, str]] = None, gpu_lines: Optional[list[str]] = None, **options: Any
    ) -> Any:
        path = support.write_dist_info_package(self.tmp, **options)
        path_dirs = []
        if gpu_lines is not None:
            bin_dir = self.tmp / "bin"
            support.write(bin_dir / "offload-arch", "#!/bin/sh\nprintf '%s'\n" % "\\n".join(gpu_lines), mode=0o755)
            path_dirs.append(str(bin_dir))
        result = support.run_python(RESOLVE, env=support.clean_env(env, path_dirs), args=[path], check=True)
        return json.loads(result.stdout)

    def test_environment_wins(self) -> None:
        self.assertEqual(
            self.resolve(
                {"ROCM_SDK_TARGET_FAMILY": "gfx90a:xnack+"}, ["gfx1030"], families=["gfx1030", "gfx90a"], kpack=True
            ),
            ["gfx90a", "environment"],
        )

    def test_unknown_family_lists_the_available_ones(self) -> None:
        kind, message = self.resolve({"ROCM_SDK_TARGET_FAMILY": "gfx942"}, families=["gfx1030", "gfx90a"], kpack=True)
        self.assertEqual(kind, "error")
        self.assertIn("gfx942", message)
        self.assertIn("gfx1030, gfx90a", message)

    def test_detected_gpu(self) -> None:
        self.assertEqual(
            self.resolve(gpu_lines=["gfx1100"], families=["gfx110X-all", "gfx94X-dcgpu"]), ["gfx110X-all", "detected"]
        )

    def test_unmatched_gpu_falls_back_to_the_default(self) -> None:
        self.assertEqual(self.resolve(gpu_lines=["gfx803"], families=["gfx94X-dcgpu"]), ["gfx94X-dcgpu", "default"])

    def test_no_gpu_tool_is_the_default(self) -> None:
        self.assertEqual(self.resolve(families=["gfx1030", "gfx90a"], kpack=True), ["gfx1030", "default"])

    def test_quiet_unless_verbose(self) -> None:
        path = support.write_dist_info_package(self.tmp, families=["gfx90a"])
        bin_dir = self.tmp / "bin"
        support.write(bin_dir / "offload-arch", "#!/bin/sh\nexit 3\n", mode=0o755)
        quiet = support.run_python(RESOLVE, env=support.clean_env(None, [str(bin_dir)]), args=[path], check=True)
        self.assertEqual(quiet.stderr, "")
        loud = support.run_python(
            RESOLVE, env=support.clean_env({"ROCM_SDK_VERBOSE": "1"}, [str(bin_dir)]), args=[path], check=True
        )
        self.assertIn("exited with 3", loud.stderr)


class CoreOffloadArchTest(support.TempDirTest):
    def test_core_offload_arch_is_used_without_path(self) -> None:
        site = support.make_site(self.tmp, families=["gfx1030", "gfx90a"], kpack=True)
        tool = site / "_rocm_sdk_core" / "lib" / "llvm" / "bin" / "offload-arch"
        support.write(tool, "#!/bin/sh\necho gfx90a:xnack-\n", mode=0o755)
        result = support.run_python(
            "import json, rocm_sdk._dist_info as d; print(json.dumps(list(d.resolve_target_family())))",
            site=site,
            check=True,
        )
        self.assertEqual(json.loads(result.stdout), ["gfx90a", "detected"])
