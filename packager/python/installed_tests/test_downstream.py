"""Downstream code, replayed against a real install (SPEC §4, "Downstream API").

Each test makes one call that public code outside this project makes, the way it makes
it (the project and file are named above each test; nothing is copied from them), and
checks what that code relies on. The reference packager's runtime passes each of them;
so must ours.

These tests need an installed ROCm: `tests/it/downstream.rs` installs the legacy and the
kpack-split examples (`rocm[libraries,devel]`, plus `device-all` for kpack-split) into
fresh venvs and runs this module with the venv's interpreter. `ROCM_DOWNSTREAM_FAMILY`
names the family the legacy venv installed, as TheRock spells it (`gfx110X-all`); it is
empty for a kpack-split install, whose libraries package has no family.
"""

import ctypes
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import unittest
import warnings
from pathlib import Path
from types import ModuleType
from typing import ClassVar

SITE = Path(sysconfig.get_paths()["purelib"])
FAMILY = os.environ.get("ROCM_DOWNSTREAM_FAMILY", "")

# The reference's package table: every key exists in both layouts.
REFERENCE_PACKAGE_KEYS = ("meta", "core", "libraries", "device", "devel", "profiler")

# TheRock external-builds/pytorch/build_prod_wheels.py, LINUX_LIBRARY_PRELOADS: the
# libraries its generated `torch/_rocm_init.py` preloads.
PYTORCH_PRELOADS = (
    "amd_comgr",
    "amd_smi",
    "amdhip64",
    "hiprtc",
    "hipblas",
    "hipfft",
    "hiprand",
    "hipsparse",
    "hipsparselt",
    "hipsolver",
    "hipblaslt",
    "miopen",
    "hipdnn",
    "rocm_sysdeps_liblzma",
    "rocm-openblas",
    "rocm_smi64",
    "rocprofiler-sdk",
    "rocprofiler-sdk-roctx",
    "roctracer64",
    "roctx64",
    "rccl",
    "hipfile",
)

# The sentence the reference's version warning starts with (SPEC §4, Text others match).
MISMATCH_SENTENCE = re.compile(
    r"^The program was compiled against a ROCm version matching '.*' but the installed ROCm "
    r"version in this Python environment is .*\."
)


def capture(*args: str) -> str:
    """A `rocm_sdk` command as build_prod_wheels.py's `capture()` runs it: this interpreter,
    stdout and stderr merged into one text, stripped. A warning on stderr would end up in
    the value the caller uses."""
    output = subprocess.check_output(
        [sys.executable, "-m", "rocm_sdk", *args], stderr=subprocess.STDOUT, text=True, timeout=300
    )
    return output.strip()


def run_python(code: str) -> "subprocess.CompletedProcess[str]":
    """`code` in a fresh interpreter of this venv (the process a framework starts)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def mapped_paths(pid: str = "self") -> list[str]:
    with open("/proc/%s/maps" % pid, encoding="utf-8") as maps:
        return [line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6]


class DownstreamTest(unittest.TestCase):
    # Imported in setUpClass, so that an import error is a failing test, not a crash.
    rocm_sdk: ClassVar[ModuleType]
    di: ClassVar[ModuleType]

    @classmethod
    def setUpClass(cls) -> None:
        import rocm_sdk
        from rocm_sdk import _dist_info

        cls.rocm_sdk = rocm_sdk
        cls.di = _dist_info
        # TheRock's install instructions run `rocm-sdk init` once after installing devel.
        capture("init", "--quiet")

    # TheRock external-builds/pytorch/build_prod_wheels.py, get_rocm_sdk_version(): the
    # version becomes `rocm[libraries]=={version}` in the wheel's requirements, and
    # llama.cpp's Dockerfile pins `rocm[devel]==$(python -c 'import rocm_sdk; print(rocm_sdk.__version__)')`.
    def test_version_with_stderr_merged_is_the_installed_version(self) -> None:
        version = capture("version")
        self.assertEqual(version, importlib.metadata.version("rocm"))
        self.assertEqual(version, self.rocm_sdk.__version__)
        self.assertRegex(version, r"^[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$")

    # TheRock external-builds/pytorch/build_prod_wheels.py, get_rocm_sdk_targets():
    # `rocm-sdk targets` with spaces turned into commas is PYTORCH_ROCM_ARCH, which
    # PyTorch's CMake splits on `;` and `,`. The reference prints the build's
    # `dist_amdgpu_targets` as it is.
    def test_targets_become_pytorch_rocm_arch(self) -> None:
        arch = capture("targets").replace(" ", ",")
        targets = [target for target in re.split(r"[;,]", arch) if target]
        self.assertTrue(targets, arch)
        for target in targets:
            self.assertRegex(target, r"^gfx[0-9a-z-]+$")
        core_init = importlib.import_module(self.di.ALL_PACKAGES["core"].get_py_package_name()).__file__
        assert core_init is not None, "core's platform package has no __init__.py"
        core = Path(core_init).parent
        with open(core / "share" / "therock" / "dist_info.json", encoding="utf-8") as file:
            self.assertEqual(arch, json.load(file)["dist_amdgpu_targets"].replace(" ", ","))

    # TheRock external-builds/pytorch/build_prod_wheels.py, get_rocm_path() and
    # _setup_common_build_env(): CMAKE_PREFIX_PATH is `path --cmake`, ROCM_HOME and
    # ROCM_PATH are `path --root`, `path --bin` goes first on PATH, HIP_DEVICE_LIB_PATH is
    # `{root}/lib/llvm/amdgcn/bitcode`, and the wheel build bundles `{root}/lib/rocm_sysdeps`
    # and `{root}/lib/host-math`. JAX's and PyTorch's Dockerfiles run `rocm-sdk path --root`.
    def test_paths_for_the_build_environment(self) -> None:
        root = Path(capture("path", "--root"))
        cmake = Path(capture("path", "--cmake"))
        bin_dir = Path(capture("path", "--bin"))
        self.assertTrue(root.is_absolute() and root.is_dir(), root)
        self.assertEqual(cmake, root / "lib" / "cmake")
        self.assertTrue(cmake.is_dir(), cmake)
        self.assertEqual(bin_dir, root / "bin")
        self.assertTrue((bin_dir / "hipcc").is_file(), "hipcc is not on the PATH the build puts first")
        self.assertTrue((root / "lib" / "llvm" / "amdgcn" / "bitcode").is_dir(), "no HIP_DEVICE_LIB_PATH")
        self.assertTrue(list((root / "lib" / "llvm" / "amdgcn" / "bitcode").glob("*.bc")))
        self.assertTrue((root / "lib" / "rocm_sysdeps" / "lib").is_dir())
        self.assertTrue((root / "lib" / "host-math" / "lib").is_dir())
        self.assertTrue(str(root).startswith(str(SITE)), root)

    # TheRock external-builds/pytorch/build_prod_wheels.py, get_rocm_init_contents(): the
    # `torch/_rocm_init.py` it writes, run as `import torch` runs it.
    def test_rocm_init_as_pytorch_writes_it(self) -> None:
        version = capture("version")
        with tempfile.TemporaryDirectory() as scratch:
            init = Path(scratch) / "_rocm_init.py"
            names = ", ".join("'%s'" % name for name in PYTORCH_PRELOADS)
            init.write_text(
                "def initialize():\n"
                "    import rocm_sdk\n"
                "    rocm_sdk.initialize_process(\n"
                "        preload_shortnames=[%s],\n"
                "        check_version='%s')\n" % (names, version)
            )
            code = (
                "import json, sys, warnings\n"
                "sys.path.insert(0, %r)\n"
                "warnings.simplefilter('error')\n"
                "import _rocm_init\n"
                "_rocm_init.initialize()\n"
                "import rocm_sdk\n"
                "with open('/proc/self/maps') as file:\n"
                "    maps = [line.split(None, 5)[5].strip() for line in file if len(line.split(None, 5)) == 6]\n"
                "print(json.dumps({'loaded': sorted(rocm_sdk._ALL_CDLLS), 'maps': sorted(set(maps))}))\n" % scratch
            )
            result = run_python(code)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        report = json.loads(result.stdout)
        self.assertEqual(report["loaded"], sorted(PYTORCH_PRELOADS))
        hip = [path for path in report["maps"] if "/libamdhip64.so" in path]
        self.assertEqual(len(hip), 1, hip)
        self.assertIn("/_rocm_sdk_core/lib/", hip[0])

    # The same file written for another ROCm: the reference warns (it does not raise) with
    # its sentence, which downstream test suites match.
    def test_rocm_init_for_another_version_warns(self) -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.rocm_sdk.initialize_process(preload_shortnames=["amdhip64"], check_version="0.0.1")
        messages = [str(warning.message) for warning in caught]
        self.assertEqual(len(messages), 1, messages)
        self.assertRegex(messages[0], MISMATCH_SENTENCE)

    # PyTorch torch/cuda/_utils.py, _get_hip_runtime_library() and _get_hiprtc_library():
    # `ctypes.CDLL(str(rocm_sdk.find_libraries("amdhip64")[0]))`, likewise for hiprtc.
    def test_find_libraries_first_path_is_dlopened(self) -> None:
        for shortname in ("amdhip64", "hiprtc"):
            with self.subTest(library=shortname):
                path = self.rocm_sdk.find_libraries(shortname)[0]
                library = ctypes.CDLL(str(path))
                self.assertTrue(library._handle)
                self.assertIn(str(path), mapped_paths())

    # Triton's Proton profiler (find_therock_rocm_libraries): the first path of each
    # profiling library, and `libhsa-runtime64.so.1` beside amdhip64.
    def test_proton_finds_profiling_libraries_beside_hip(self) -> None:
        names = ("amdhip64", "rocprofiler-sdk", "rocprofiler-sdk-roctx", "roctracer64", "roctx64")
        libraries = {name: Path(self.rocm_sdk.find_libraries(name)[0]) for name in names}
        for name, path in libraries.items():
            self.assertTrue(path.is_file(), "%s: %s" % (name, path))
        self.assertTrue((libraries["amdhip64"].parent / "libhsa-runtime64.so.1").is_file())

    # SD.Next and rocm-cli's probe find ROCM_HOME by walking up from amdhip64 to the
    # `_rocm_sdk*` directory that holds it.
    def test_rocm_home_is_the_platform_directory_above_hip(self) -> None:
        directory = Path(self.rocm_sdk.find_libraries("amdhip64")[0]).parent
        while not directory.name.startswith("_rocm_sdk"):
            self.assertNotEqual(directory, directory.parent, "no _rocm_sdk* directory above amdhip64")
            directory = directory.parent
        self.assertEqual(directory.parent, SITE)
        self.assertEqual(directory.name, self.di.ALL_PACKAGES["core"].get_py_package_name())

    # TransformerEngine's `_rocm_init.py`, rocm-cli's probe and llama.cpp's Dockerfile:
    # `from rocm_sdk import _devel; _devel.get_devel_root()` is the tree `path --root` prints.
    def test_devel_root(self) -> None:
        from rocm_sdk import _devel

        root = _devel.get_devel_root()
        self.assertIsInstance(root, Path)
        self.assertEqual(root, Path(capture("path", "--root")))
        self.assertTrue((root / "bin" / "amdclang").exists())

    # hip-python / rocm-bindings locate the platform packages through the package table:
    # `ALL_PACKAGES[key].get_py_package(family)`.
    def test_package_table_finds_the_platform_packages(self) -> None:
        family = self.di.determine_target_family()
        for key in ("core", "libraries", "devel"):
            with self.subTest(package=key):
                entry = self.di.ALL_PACKAGES[key]
                spec = entry.get_py_package(family if entry.is_target_specific else None)
                self.assertIsNotNone(spec, key)
                self.assertEqual(Path(spec.origin).parent.parent, SITE)

    # Users' LD_LIBRARY_PATH, HIPBLASLT_TENSILE_LIBPATH and PyInstaller package lists name
    # the legacy libraries' platform directory with the family as TheRock spells it.
    def test_hard_coded_libraries_directory(self) -> None:
        name = "_rocm_sdk_libraries_" + FAMILY.replace("-", "_") if FAMILY else "_rocm_sdk_libraries"
        lib = SITE / name / "lib"
        self.assertTrue(lib.is_dir(), "%s is not there" % lib)
        self.assertTrue(list(lib.glob("libhipblas.so.*")), lib)
        self.assertIsNotNone(importlib.util.find_spec(name))
        self.assertEqual(self.di.ALL_PACKAGES["libraries"].get_py_package_name(FAMILY or None), name)

    # TensileLite's Python-SDK adapter (`_python_sdk_version`): `rocm_sdk_core.__version__`
    # is the publication identity; a missing attribute is a hard error there.
    def test_pure_packages_export_the_version(self) -> None:
        import rocm_sdk_core

        self.assertEqual(rocm_sdk_core.__version__, self.rocm_sdk.__version__)
        family = self.di.determine_target_family()
        for key in ("libraries", "devel"):
            entry = self.di.ALL_PACKAGES[key]
            name = entry.get_pure_py_package_name(family if entry.is_target_specific else None)
            with self.subTest(package=name):
                self.assertEqual(importlib.import_module(name).__version__, self.rocm_sdk.__version__)

    # A ROCm SDK check script: `_dist_info.ALL_PACKAGES["device"].get_dist_package_name(family)`,
    # and every key of the reference's table, in both layouts.
    def test_package_table_has_every_reference_key(self) -> None:
        for key in REFERENCE_PACKAGE_KEYS:
            self.assertIn(key, self.di.ALL_PACKAGES)
        family = FAMILY or self.di.AVAILABLE_TARGET_FAMILIES[0]
        device = self.di.ALL_PACKAGES["device"].get_dist_package_name(family)
        self.assertEqual(device, "rocm-sdk-device-" + family.split(":")[0])
        self.assertEqual(
            self.di.ALL_PACKAGES["libraries"].get_dist_package_name(family),
            "rocm-sdk-libraries-" + FAMILY if FAMILY else "rocm-sdk-libraries",
        )

    # pip and importlib.metadata report the libraries distribution under the `Name:` its
    # METADATA gives, which keeps the family's spelling.
    def test_distribution_name_keeps_the_family(self) -> None:
        expected = "rocm-sdk-libraries-" + FAMILY if FAMILY else "rocm-sdk-libraries"
        names = {dist.metadata["Name"] for dist in importlib.metadata.distributions()}
        self.assertIn(expected, names)


if __name__ == "__main__":
    unittest.main()
