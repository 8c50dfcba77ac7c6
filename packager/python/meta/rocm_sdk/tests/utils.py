"""Helpers shared by the self-tests."""

import importlib
import importlib.metadata
import os
import subprocess
import sys
import sysconfig
import unittest
from pathlib import Path
from types import ModuleType
from typing import Optional, Union

from .. import _dist_info as di

# Libraries that are not meant to be loaded on their own: runtime pieces loaded by a
# tool into itself, sanitizer runtimes, or plugins that need their host loaded first.
NOT_STANDALONE = (
    "clang_rt",
    "libLLVMOffload",
    "lib/roctracer/",
    "share/roctracer/",
    "lib/rocprofiler-sdk/",
    "libexec/rocprofiler-sdk/",
    "libpyrocpd",
    "libpyroctx",
    "libtest_linking_lib",
    "amd_smi",
    "goamdsmi",
    "lib/rocprofiler-systems/",
    "librocprof-sys-dl",
    "python/site-packages/",
)


def assert_is_physical_package(module: ModuleType) -> None:
    """A regular package with an `__init__.py`, not a namespace package."""
    assert module.__file__ is not None, "%s is a namespace package (no __init__.py)" % module.__name__
    assert Path(module.__file__).name == "__init__.py", "%s is not a package directory" % module.__name__


def import_platform_package(logical_name: str, target_family: Optional[str] = None) -> ModuleType:
    return importlib.import_module(di.ALL_PACKAGES[logical_name].get_py_package_name(target_family))


def import_pure_package(logical_name: str, target_family: Optional[str] = None) -> ModuleType:
    name = di.ALL_PACKAGES[logical_name].get_pure_py_package_name(target_family)
    assert name is not None, "%s has no pure package" % logical_name
    return importlib.import_module(name)


def package_dir(module: ModuleType) -> Path:
    assert module.__file__ is not None, "%s is a namespace package (no __init__.py)" % module.__name__
    return Path(module.__file__).parent


WINDOWS = sys.platform == "win32"


def is_shared_library_name(name: str) -> bool:
    """`libx.so`, `libx.so.1` on Linux; `x.dll` on Windows."""
    if WINDOWS:
        return name.lower().endswith(".dll")
    return name.endswith(".so") or ".so." in name


def shared_libraries(root: Path) -> list[Path]:
    """Every shared library file under `root`, sorted."""
    found = []
    for directory, _, files in os.walk(str(root)):
        for name in files:
            if is_shared_library_name(name):
                path = Path(directory) / name
                if path.is_file() and not path.is_symlink():
                    found.append(path)
    return sorted(found)


def is_standalone_library(path: Path) -> bool:
    text = path.as_posix()
    return not any(marker in text for marker in NOT_STANDALONE)


def load_in_subprocess(path: Path) -> tuple[bool, str]:
    """(ok, output) of loading one library in a fresh interpreter. On Windows the
    library's own directory and core's `bin/` are added to the DLL search first, as
    `rocm_sdk.preload_libraries` does (a DLL has no RPATH)."""
    code = "import ctypes, os, sys\nfor d in sys.argv[2:]: os.add_dll_directory(d)\nctypes.CDLL(sys.argv[1])"
    directories = []
    if WINDOWS:
        core = import_platform_package("core")
        directories = [str(path.parent), str(package_dir(core) / "bin")]
    result = subprocess.run(
        [sys.executable, "-c", code, str(path), *directories],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    return result.returncode == 0, result.stdout.decode("utf-8", "replace")


def python_in_subprocess(code: str, env: Optional[dict[str, str]] = None) -> tuple[int, str, str]:
    """(returncode, stdout, stderr) of `python -c code`."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    return result.returncode, result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace")


def console_scripts(dist_name: str) -> list[tuple[str, Optional[Path]]]:
    """`[(name, path or None)]` of the console scripts a distribution declares."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return []
    scripts = []
    directories = [
        sysconfig.get_path("scripts"),
        sysconfig.get_path("scripts", "posix_user"),
        os.path.dirname(sys.executable),
    ]
    for entry in dist.entry_points:
        if entry.group != "console_scripts":
            continue
        path: Optional[Path] = None
        for directory in directories:
            candidate = Path(directory) / (entry.name + ".exe" if WINDOWS else entry.name)
            if candidate.is_file():
                path = candidate
                break
        scripts.append((entry.name, path))
    return sorted(scripts)


def run_console_script(path: Union[str, Path]) -> tuple[int, str]:
    """(returncode, combined output) of `path --help`."""
    result = subprocess.run(
        [str(path), "--help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    return result.returncode, result.stdout.decode("utf-8", "replace")


def installed_versions() -> dict[str, str]:
    """{dist name: version} of every installed distribution this ROCm build knows."""
    names = [
        "rocm",
        di.ALL_PACKAGES["core"].get_dist_package_name(),
        di.ALL_PACKAGES["profiler"].get_dist_package_name(),
    ]
    for logical in ("libraries", "devel", "device"):
        entry = di.ALL_PACKAGES[logical]
        if not entry.built:
            continue
        if entry.is_target_specific:
            names += [entry.get_dist_package_name(family) for family in di.AVAILABLE_TARGET_FAMILIES]
        else:
            names.append(entry.get_dist_package_name())
    versions = {}
    for name in names:
        version = di.installed_dist_version(name)
        if version is not None:
            versions[name] = version
    return versions


def dist_files(dist_name: str) -> list[Path]:
    """Absolute paths of the files a distribution's RECORD lists."""
    dist = importlib.metadata.distribution(dist_name)
    return [Path(file.locate()) for file in dist.files or ()]


# What the core and profiler trampolines print when they cannot start their tool.
TRAMPOLINE_FAILURES = ("rocm-sdk-core: cannot run ", "rocm-profiler: cannot run ")


def check_console_scripts(test: unittest.TestCase, dist_name: str) -> None:
    """Every console script of `dist_name` exists and starts its tool."""
    scripts = console_scripts(dist_name)
    test.assertTrue(scripts, "%s declares no console scripts" % dist_name)
    for name, path in scripts:
        with test.subTest(console_script=name):
            if path is None:
                test.fail("console script %s is not installed" % name)
            # Tools may need a GPU to succeed; what matters here is that the trampoline
            # found and started the tool.
            _, output = run_console_script(path)
            for marker in TRAMPOLINE_FAILURES:
                test.assertNotIn(marker, output)


def check_libraries_load(test: unittest.TestCase, root: Path) -> list[Path]:
    """Every standalone shared library under `root` loads in its own process."""
    libraries = [path for path in shared_libraries(root) if is_standalone_library(path)]
    for path in libraries:
        with test.subTest(library=str(path.relative_to(root))):
            ok, output = load_in_subprocess(path)
            test.assertTrue(ok, "cannot load %s:\n%s" % (path, output))
    return libraries
