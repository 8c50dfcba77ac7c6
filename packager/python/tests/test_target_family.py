"""The target family at run time (SPEC §4): the variable, else the family of the
target-specific packages installed, else detection, else the default; and every lookup
follows it. At install time (SPEC §3) installed packages play no part.

Each test lays out a site-packages the way pip leaves one (pure packages, platform
directories, `.dist-info` with RECORD) and asks the shipped runtime in a subprocess.
"""

import json
from pathlib import Path
from typing import Any, Optional

from tests import support

LEGACY = {"families": ["gfx110X-all", "gfx94X-dcgpu"], "devel_target_specific": True}
KPACK = {"families": ["gfx1030", "gfx90a"], "kpack": True}

PROBE = """
import json, rocm_sdk, rocm_sdk._dist_info as di
def attempt(function):
    try:
        return function()
    except Exception as error:
        return ["error", type(error).__name__, str(error)]
print(json.dumps({
    "installed": di.installed_target_families(),
    "runtime": attempt(lambda: list(di.resolve_runtime_target_family())),
    "determine": attempt(di.determine_target_family),
    "install_time": attempt(lambda: list(di.resolve_target_family())),
    "hipblas": attempt(lambda: [str(path) for path in rocm_sdk.find_libraries("hipblas")]),
}))
"""


def identifier(family: str) -> str:
    return family.lower().replace("-", "_")


class TargetFamilyTest(support.TempDirTest):
    options: dict[str, Any]

    def site(self, options: dict[str, Any]) -> Path:
        self.options = options
        return support.make_site(self.tmp, **options)

    def install_libraries(self, site: Path, family: str) -> Path:
        """A legacy `rocm-sdk-libraries-{family}` wheel, with its `libhipblas.so.1`."""
        name = identifier(family)
        support.install_pure(
            site,
            support.PYTHON_ROOT / "libraries",
            "rocm_sdk_libraries_" + name,
            logical="libraries",
            this_family=family,
            **self.options,
        )
        # The platform directory keeps the family's spelling, as the reference's does (SPEC §2).
        platform = site / ("_rocm_sdk_libraries_" + family.replace("-", "_"))
        support.write(platform / "__init__.py", "")
        support.write(platform / "lib" / "libhipblas.so.1", b"\x7fELF")
        support.add_dist(
            site, "rocm-sdk-libraries-" + family, support.VERSION, ["rocm_sdk_libraries_%s/__init__.py" % name]
        )
        return platform / "lib" / "libhipblas.so.1"

    def install_devel(self, site: Path, family: str) -> None:
        """A legacy multi-family `rocm-sdk-devel-{family}` wheel, not yet expanded."""
        name = identifier(family)
        support.install_pure(
            site,
            support.PYTHON_ROOT / "devel",
            "rocm_sdk_devel_" + name,
            logical="devel",
            this_family=family,
            **self.options,
        )
        support.add_dist(site, "rocm-sdk-devel-" + family, support.VERSION, ["rocm_sdk_devel_%s/__init__.py" % name])

    def probe(self, site: Path, env: Optional[dict[str, str]] = None, gpu_lines: Optional[list[str]] = None) -> Any:
        path_dirs = []
        if gpu_lines is not None:
            bin_dir = self.tmp / "gpu-bin"
            support.write(bin_dir / "offload-arch", "#!/bin/sh\nprintf '%s\\n'\n" % "\\n".join(gpu_lines), mode=0o755)
            path_dirs.append(str(bin_dir))
        result = support.run_python(PROBE, site=site, env=support.clean_env(env, path_dirs), check=True)
        self.assertEqual(result.stderr, "", "the runtime must print nothing unless ROCM_SDK_VERBOSE=1")
        return json.loads(result.stdout)

    def test_nothing_installed_is_detection_then_the_default(self) -> None:
        site = self.site(LEGACY)
        nothing = self.probe(site)
        self.assertEqual(nothing["installed"], [])
        self.assertEqual(nothing["runtime"], ["gfx110X-all", "default"])
        self.assertEqual(nothing["hipblas"][:2], ["error", "ModuleNotFoundError"])
        self.assertIn('pip install "rocm[libraries]"', nothing["hipblas"][2])
        self.assertEqual(self.probe(site, gpu_lines=["gfx942"])["runtime"], ["gfx94X-dcgpu", "detected"])

    def test_the_installed_family_is_the_family_without_the_variable(self) -> None:
        site = self.site(LEGACY)
        library = self.install_libraries(site, "gfx94X-dcgpu")
        for gpu_lines in (None, ["gfx1100"]):
            result = self.probe(site, gpu_lines=gpu_lines)
            self.assertEqual(result["installed"], ["gfx94X-dcgpu"])
            self.assertEqual(result["runtime"], ["gfx94X-dcgpu", "installed"], gpu_lines)
            self.assertEqual(result["determine"], "gfx94X-dcgpu")
            self.assertEqual(result["hipblas"], [str(library)])
            # The sdist's backend decides before anything is installed: its rule is unchanged.
            self.assertEqual(result["install_time"], ["gfx110X-all", "detected" if gpu_lines else "default"])

    def test_an_installed_devel_wheel_alone_names_the_family(self) -> None:
        site = self.site(LEGACY)
        self.install_devel(site, "gfx94X-dcgpu")
        result = self.probe(site)
        self.assertEqual(result["runtime"], ["gfx94X-dcgpu", "installed"])
        self.assertEqual(result["hipblas"][:2], ["error", "ModuleNotFoundError"])

    def test_several_installed_need_a_gpu_or_the_variable(self) -> None:
        site = self.site(LEGACY)
        self.install_libraries(site, "gfx110X-all")
        gfx94 = self.install_libraries(site, "gfx94X-dcgpu")
        result = self.probe(site)
        self.assertEqual(result["installed"], ["gfx110X-all", "gfx94X-dcgpu"])
        for key in ("runtime", "determine", "hipblas"):
            kind, error_type, message = result[key]
            self.assertEqual([kind, error_type], ["error", "TargetFamilyError"], key)
            self.assertIn("gfx110X-all, gfx94X-dcgpu", message)
            self.assertIn("set ROCM_SDK_TARGET_FAMILY", message)
        # The first GPU offload-arch lists whose family is installed.
        detected = self.probe(site, gpu_lines=["gfx1030", "gfx942"])
        self.assertEqual(detected["runtime"], ["gfx94X-dcgpu", "detected"])
        self.assertEqual(detected["hipblas"], [str(gfx94)])
        chosen = self.probe(site, {"ROCM_SDK_TARGET_FAMILY": "GFX94X-dcgpu"}, gpu_lines=["gfx1100"])
        self.assertEqual(chosen["runtime"], ["gfx94X-dcgpu", "environment"])
        self.assertEqual(chosen["hipblas"], [str(gfx94)])

    def test_a_variable_naming_a_family_not_installed_is_an_error(self) -> None:
        site = self.site(LEGACY)
        self.install_libraries(site, "gfx94X-dcgpu")
        for requested in ("gfx110X-all", "gfx1200"):
            result = self.probe(site, {"ROCM_SDK_TARGET_FAMILY": requested})
            kind, error_type, message = result["determine"]
            self.assertEqual([kind, error_type], ["error", "TargetFamilyError"], requested)
            self.assertIn("ROCM_SDK_TARGET_FAMILY=%s is not installed" % requested, message)
            self.assertIn("(installed: gfx94X-dcgpu)", message)
            self.assertEqual(result["hipblas"], result["determine"])
        # With nothing installed the variable still says what to install.
        empty = self.probe(self.site_without_packages(), {"ROCM_SDK_TARGET_FAMILY": "gfx94X-dcgpu"})
        self.assertEqual(empty["runtime"], ["gfx94X-dcgpu", "environment"])
        self.assertEqual(empty["hipblas"][:2], ["error", "ModuleNotFoundError"])

    def site_without_packages(self) -> Path:
        return support.make_site(self.tmp / "empty", **self.options)

    def test_kpack_split_device_wheels_name_the_target(self) -> None:
        site = self.site(KPACK)
        support.add_dist(site, "rocm-sdk-device-gfx90a", support.VERSION, ["_rocm_sdk_libraries/_device_gfx90a.py"])
        self.assertEqual(self.probe(site)["runtime"], ["gfx90a", "installed"])
        support.add_dist(site, "rocm-sdk-device-gfx1030", support.VERSION, ["_rocm_sdk_libraries/_device_gfx1030.py"])
        both = self.probe(site)
        self.assertEqual(both["installed"], ["gfx1030", "gfx90a"])
        # Device wheels never decide where a library is found, so several installed do not
        # make the family an error (the reference never raises here): the first installed,
        # unless a GPU picks one.
        self.assertEqual(both["runtime"], ["gfx1030", "installed"])
        self.assertEqual(both["determine"], "gfx1030")
        self.assertEqual(self.probe(site, gpu_lines=["gfx90a:xnack-"])["runtime"], ["gfx90a", "detected"])

    # Runtime messages escape control characters, as the packager does: a hostile value in
    # the environment cannot color, clear or rewrite the terminal through `rocm-sdk`.
    HOSTILE = "gfx110X-all\x1b[31m\rforged"

    def run_command(self, site: Path, words: list[str]) -> support.Completed:
        code = "import rocm_sdk.__main__ as m, sys; sys.exit(m.main(%r))" % (words,)
        return support.run_python(code, site=site, env=support.clean_env({"ROCM_SDK_TARGET_FAMILY": self.HOSTILE}))

    def assert_escaped(self, text: str) -> None:
        self.assertNotIn("\x1b", text)
        self.assertNotIn("\r", text)
        self.assertIn("gfx110X-all\\x1b[31m\\rforged", text)

    def test_a_family_from_the_environment_is_escaped_in_every_message(self) -> None:
        installed = self.site(LEGACY)
        self.install_libraries(installed, "gfx94X-dcgpu")
        for site in (installed, self.site_without_packages()):
            for words in (["path", "--cmake"], ["path", "--root"]):
                result = self.run_command(site, words)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertTrue(result.stderr.startswith("error: ROCM_SDK_TARGET_FAMILY="), result.stderr)
                self.assert_escaped(result.stderr)
        # The library API's exception says the same, escaped, to whoever prints it.
        result = support.run_python(
            "import rocm_sdk._dist_info as di\n"
            "try:\n    di.determine_target_family()\nexcept ValueError as e:\n    print(e)",
            site=installed,
            env=support.clean_env({"ROCM_SDK_TARGET_FAMILY": self.HOSTILE}),
            check=True,
        )
        self.assert_escaped(result.stdout)
