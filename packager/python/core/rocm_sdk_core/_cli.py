"""Console-script trampolines of rocm-sdk-core (SPEC §4, console scripts).

Each console script execs the real tool from the installed tree. System-information
tools (and `offload-arch`) run from core without touching the devel package; every
other tool runs from the expanded devel tree when rocm[devel] is installed (expanding it
on first use), because that tree has the headers and device libraries the compilers
look for beside themselves, else from core.
"""

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, Optional

# Console script -> (path inside the tree, runs from core only). The packager declares
# one entry point per key of the sections for the build's platform, calling the function
# named by `function_name(key)`; on Windows only for a tool the build has (`.exe`), as a
# Windows build lacks some (the reference's Windows lists: rocminfo only when built).
TOOLS = {
    # Every platform.
    "amdclang": ("lib/llvm/bin/amdclang", False),
    "amdclang++": ("lib/llvm/bin/amdclang++", False),
    "amdclang-cpp": ("lib/llvm/bin/amdclang-cpp", False),
    "amdclang-cl": ("lib/llvm/bin/amdclang-cl", False),
    "amdflang": ("lib/llvm/bin/amdflang", False),
    "amdlld": ("lib/llvm/bin/amdlld", False),
    # Runs from core too: it needs no headers, and install-time GPU detection calls it,
    # which must not unpack the devel tree as a side effect.
    "offload-arch": ("lib/llvm/bin/offload-arch", True),
    "hipcc": ("bin/hipcc", False),
    "hipconfig": ("bin/hipconfig", False),
    "hipify-clang": ("bin/hipify-clang", False),
    "rocminfo": ("bin/rocminfo", True),
    # Windows only.
    "hipInfo": ("bin/hipInfo", True),
    # Linux only.
    "roc-obj": ("bin/roc-obj", False),
    "roc-obj-extract": ("bin/roc-obj-extract", False),
    "roc-obj-ls": ("bin/roc-obj-ls", False),
    "amd-smi": ("bin/amd-smi", True),
    "hipify-perl": ("bin/hipify-perl", False),
    "rocm_agent_enumerator": ("bin/rocm_agent_enumerator", True),
    "rocm-smi": ("bin/rocm-smi", True),
    "roccoremerge": ("bin/roccoremerge", False),
    "rocgdb": ("bin/rocgdb", False),
    "rocpd": ("bin/rocpd", False),
    "rocpd2csv": ("bin/rocpd2csv", False),
    "rocpd2otf2": ("bin/rocpd2otf2", False),
    "rocpd2pftrace": ("bin/rocpd2pftrace", False),
    "rocpd2summary": ("bin/rocpd2summary", False),
    "rocprofv3": ("bin/rocprofv3", False),
    "rocprofv3-attach": ("bin/rocprofv3-attach", False),
    "rocprofv3-avail": ("bin/rocprofv3-avail", False),
}

# `rocm-sdk test` recognises a trampoline that could not start its tool by this prefix.
FAILURE_PREFIX = "rocm-sdk-core: cannot run "


def function_name(script: str) -> str:
    """`amdclang++` -> `amdclangpp`, `roc-obj-ls` -> `roc_obj_ls`."""
    return "".join(c if c.isalnum() else "_" for c in script.replace("++", "pp"))


def _fail(script: str, reason: str) -> NoReturn:
    print(FAILURE_PREFIX + script + ": " + reason, file=sys.stderr)
    sys.exit(127)


def _core_root() -> Optional[Path]:
    from ._dist_info import ALL_PACKAGES

    spec = importlib.util.find_spec(ALL_PACKAGES["core"].get_py_package_name())
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def _devel_root(script: str) -> Optional[Path]:
    """The expanded devel tree, or None when rocm[devel] (or rocm itself) is absent."""
    try:
        from rocm_sdk import _devel, _device_links
    except ImportError:
        return None
    try:
        devel = _devel.find_devel_package()
    except ModuleNotFoundError:
        return None
    except ValueError as error:
        # No target family can be chosen (SPEC §4): whose devel tree to run from is the
        # user's to say, not ours to guess.
        _fail(script, str(error))
    try:
        _devel.ensure_expanded(devel)
        _device_links.reconcile(devel)
    except Exception as error:  # Any failure to expand must say so, not run a wrong tool.
        _fail(script, "the devel tree could not be expanded: %s" % error)
    return devel.root


def _warn_about_missing_device_code() -> None:
    """Names, once, a GPU of this machine whose device package is not installed (SPEC §4).
    Never stops the tool: without `rocm` (core installed alone) there is nothing to check."""
    try:
        from rocm_sdk import _doctor
    except ImportError:
        return
    _doctor.warn_on_stderr("rocm-sdk-core")


def run(script: str) -> NoReturn:
    """Execs the tool behind `script` with this process's arguments; never returns."""
    relpath, system_info = TOOLS[script]
    _warn_about_missing_device_code()
    core = _core_root()
    if core is None:
        _fail(script, "the platform package of rocm-sdk-core is missing; reinstall rocm-sdk-core")
    roots = [core] if system_info else [root for root in (_devel_root(script), core) if root is not None]
    for root in roots:
        path = root / (relpath + ".exe" if sys.platform == "win32" else relpath)
        if path.is_file():
            try:
                if sys.platform == "win32":
                    # Windows has no exec: run the tool as a child, pass its exit code on.
                    import subprocess

                    sys.exit(subprocess.call([str(path), *sys.argv[1:]]))
                os.execv(str(path), [str(path), *sys.argv[1:]])
            except OSError as error:
                _fail(script, "%s: %s" % (path, error))
    _fail(script, "%s is not installed (looked in %s)" % (relpath, ", ".join(str(root) for root in roots)))


def _trampoline(script: str) -> Callable[[], None]:
    def trampoline() -> None:
        run(script)

    trampoline.__name__ = function_name(script)
    trampoline.__doc__ = "Runs %s." % script
    return trampoline


def __getattr__(name: str) -> Callable[[], None]:
    """The trampoline of a console script, by `function_name(script)`: the attribute each
    entry point names (`module:function`). Made when asked for, not at import."""
    for script in TOOLS:
        if function_name(script) == name:
            return _trampoline(script)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
