"""Console-script trampolines of rocm-profiler (SPEC §4, console scripts).

Each console script execs the real tool from the profiler's platform package.
"""

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

# Console script -> path inside the profiler's platform package.
TOOLS = {
    "rocprof-compute": "bin/rocprof-compute",
    "rocprof-sys-attach": "bin/rocprof-sys-attach",
    "rocprof-sys-avail": "bin/rocprof-sys-avail",
    "rocprof-sys-causal": "bin/rocprof-sys-causal",
    "rocprof-sys-instrument": "bin/rocprof-sys-instrument",
    "rocprof-sys-python": "bin/rocprof-sys-python",
    "rocprof-sys-run": "bin/rocprof-sys-run",
    "rocprof-sys-sample": "bin/rocprof-sys-sample",
}

# `rocm-sdk test` recognises a trampoline that could not start its tool by this prefix.
FAILURE_PREFIX = "rocm-profiler: cannot run "


def function_name(script: str) -> str:
    """`rocprof-sys-run` -> `rocprof_sys_run`."""
    return "".join(c if c.isalnum() else "_" for c in script)


def _fail(script: str, reason: str) -> NoReturn:
    print(FAILURE_PREFIX + script + ": " + reason, file=sys.stderr)
    sys.exit(127)


def _warn_about_missing_device_code() -> None:
    """Names, once, a GPU of this machine whose device package is not installed (SPEC §4);
    never stops the tool."""
    try:
        from rocm_sdk import _doctor
    except ImportError:
        return
    _doctor.warn_on_stderr("rocm-profiler")


def run(script: str) -> NoReturn:
    """Execs the tool behind `script` with this process's arguments; never returns."""
    from ._dist_info import ALL_PACKAGES

    _warn_about_missing_device_code()
    spec = importlib.util.find_spec(ALL_PACKAGES["profiler"].get_py_package_name())
    if spec is None or spec.origin is None:
        _fail(script, "the platform package of rocm-profiler is missing; reinstall rocm-profiler")
    path = Path(spec.origin).parent / TOOLS[script]
    if not path.is_file():
        _fail(script, "%s is not installed" % path)
    try:
        os.execv(str(path), [str(path), *sys.argv[1:]])
    except OSError as error:
        _fail(script, "%s: %s" % (path, error))


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
