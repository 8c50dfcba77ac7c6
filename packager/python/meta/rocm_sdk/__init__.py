"""ROCm SDK for Python: find and load the ROCm libraries installed by the `rocm` packages.

Frameworks call `initialize_process()` before loading their own native extensions, so
the ROCm libraries they link against are already in the process (SPEC §4). Nothing is
printed unless `ROCM_SDK_VERBOSE=1`.
"""

import contextlib
import importlib
import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from ._dist_info import ALL_LIBRARIES, LibraryEntry, __version__
from ._doctor import MissingDeviceCodeWarning

if TYPE_CHECKING:
    import ctypes

__all__ = [
    "MissingDeviceCodeWarning",
    "__version__",
    "find_libraries",
    "initialize_process",
    "preload_libraries",
]

# Short name -> loaded `ctypes.CDLL`; read by code outside this project.
_ALL_CDLLS: "dict[str, ctypes.CDLL]" = {}

# Windows finds a library in `bin/` by its DLL name (`LibraryEntry.is_dll`), and has no
# RPATH (SPEC §7).
_WINDOWS = sys.platform == "win32"
# Handles of `os.add_dll_directory`: a directory stays searched while its handle lives.
_DLL_DIRECTORIES: dict[str, object] = {}


def _install_hint(logical_names: Iterable[str]) -> str:
    extras = sorted(name for name in logical_names if name not in ("core", "meta"))
    if extras:
        return 'pip install "rocm[%s]"' % ",".join(extras)
    return "pip install --force-reinstall rocm"


def _library_dir(entry: LibraryEntry) -> Path:
    """The directory of `entry`'s package that holds it, or raises ModuleNotFoundError."""
    from . import _dist_info

    package = entry.package
    family = _dist_info.determine_target_family() if package.is_target_specific else None
    name = package.get_py_package_name(family)
    try:
        module_file: Optional[str] = getattr(importlib.import_module(name), "__file__", None)
    except ModuleNotFoundError:
        module_file = None
    if module_file is None:
        raise ModuleNotFoundError(
            "the ROCm package providing '%s' (%s) is not installed; install it with `%s`"
            % (entry.shortname, package.get_dist_package_name(family), _install_hint([package.logical_name])),
            name=name,
        )
    relpath = entry.windows_relpath if _WINDOWS else entry.posix_relpath
    return Path(module_file).parent / relpath


def _find_library(shortname: str) -> Optional[Path]:
    """The path of one library, or None for an absent optional one."""
    try:
        entry = ALL_LIBRARIES[shortname]
    except KeyError:
        raise ModuleNotFoundError(
            "unknown ROCm library '%s' (known: %s)" % (shortname, ", ".join(sorted(ALL_LIBRARIES)))
        ) from None
    pattern = entry.dll_pattern if _WINDOWS else entry.so_pattern
    if not pattern:
        return None  # A library with no DLL does not exist on Windows: skipped, no error.
    directory = _library_dir(entry)
    # Several matches are the versioned names of one library; the shortest sorts first.
    matches = sorted(directory.glob(pattern))
    wanted = "'%s'" % pattern
    if _WINDOWS:
        # The glob also finds neighbours (`libhipblaslt.dll` for hipblas): keep the DLL itself.
        matches = [path for path in matches if entry.is_dll(path.name)]
        wanted = "'%s.dll' or 'lib%s.dll' (a version may follow the name)" % (entry.dll_name, entry.dll_name)
    if not matches:
        if entry.optional:
            return None
        raise FileNotFoundError("ROCm library '%s' not found: no %s in %s" % (shortname, wanted, directory))
    return matches[0]


def find_libraries(*shortnames: str) -> list[Path]:
    """Absolute paths of the named libraries (see `_dist_info.ALL_LIBRARIES`).

    Unknown names and libraries whose package is not installed raise ModuleNotFoundError;
    the message says which `pip install rocm[...]` provides them. Absent optional
    libraries are left out of the result.
    """
    paths = []
    missing = set()
    missing_modules: list[ModuleNotFoundError] = []
    for shortname in shortnames:
        try:
            path = _find_library(shortname)
        except ModuleNotFoundError as error:
            if shortname not in ALL_LIBRARIES:
                raise
            missing.add(ALL_LIBRARIES[shortname].package.logical_name)
            missing_modules.append(error)
            continue
        if path is not None:
            paths.append(path)
    if missing:
        raise ModuleNotFoundError(
            "ROCm packages missing for %s; install them with `%s`" % (", ".join(shortnames), _install_hint(missing))
        ) from missing_modules[0]
    return paths


def _with_dependencies(shortnames: Sequence[str]) -> list[str]:
    """`shortnames` preceded by their declared dependencies, each once, in load order."""
    ordered: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        entry = ALL_LIBRARIES.get(name)
        for dependency in entry.deps if entry is not None else ():
            visit(dependency)
        ordered.append(name)

    for name in shortnames:
        visit(name)
    return ordered


def preload_libraries(*shortnames: str, rtld_global: bool = True) -> None:
    """Loads the named libraries (and their dependencies) once per process.

    With `rtld_global` (the default) their symbols become visible to libraries loaded
    later, so a framework's extension resolves its ROCm dependencies from these copies.
    """
    import ctypes

    mode = ctypes.RTLD_GLOBAL if rtld_global else ctypes.RTLD_LOCAL
    for shortname in _with_dependencies(list(shortnames)):
        if shortname in _ALL_CDLLS:
            continue
        paths = find_libraries(shortname)
        if not paths:
            continue
        if _WINDOWS:
            _add_dll_directories(paths[0].parent)
        _ALL_CDLLS[shortname] = ctypes.CDLL(str(paths[0]), mode=mode)


def _add_dll_directories(library_dir: Path) -> None:
    """Windows: a DLL's imports are searched in the directories added here, not beside
    the importer in another package; core's `bin/` holds what the others import."""
    directories = [library_dir]
    with contextlib.suppress(ModuleNotFoundError):
        directories.append(_library_dir(ALL_LIBRARIES["amdhip64"]))
    for directory in directories:
        key = str(directory)
        if sys.platform == "win32" and key not in _DLL_DIRECTORIES and directory.is_dir():
            _DLL_DIRECTORIES[key] = os.add_dll_directory(key)


def _split_preload_list(value: str) -> list[str]:
    return [item.strip() for item in re.split(r"[,;]", value) if item.strip()]


def initialize_process(
    preload_shortnames: Optional[Sequence[str]] = None,
    rtld_global: bool = True,
    env_override: bool = True,
    check_version: "Union[str, re.Pattern[str], None]" = None,
    fail_on_version_mismatch: bool = False,
    **kwargs: object,
) -> None:
    """Prepares this process for native code built against ROCm.

    Args:
        preload_shortnames: libraries to load first (see `preload_libraries`).
        rtld_global: load them with RTLD_GLOBAL (default) or RTLD_LOCAL.
        env_override: also load the libraries `ROCM_SDK_PRELOAD_LIBRARIES` names
          (comma or semicolon separated; blanks ignored).
        check_version: the ROCm version the caller was built against, as a string where
          `*` matches anything, or a compiled regular expression. A mismatch warns.
        fail_on_version_mismatch: raise RuntimeError on a mismatch instead of warning.
    Unknown keyword arguments are accepted and ignored, so newer callers keep working.

    In a kpack-split install, a GPU of this machine whose device package is not installed
    is named once per process in a `MissingDeviceCodeWarning` (never an error), with the
    `pip install` line that adds it (SPEC §4). So is, once per process, a GPU the caller's
    own package (the distribution named as its top-level package, `torch` for
    `torch._rocm_init`) offers a `device-<target>` extra for whose device wheels are not
    installed, with its `pip install 'torch[device-gfx1151]'` line.
    """
    del kwargs
    import warnings

    from . import _doctor

    caller = sys._getframe(1).f_globals
    module_name, module_file = caller.get("__name__"), caller.get("__file__")
    # Level 4: the caller of initialize_process (lambda, warn_once, initialize_process).
    _doctor.warn_once(lambda message: warnings.warn(message, MissingDeviceCodeWarning, stacklevel=4))
    _doctor.warn_once_for_module(
        module_name if isinstance(module_name, str) else None,
        module_file if isinstance(module_file, str) else None,
        lambda message: warnings.warn(message, MissingDeviceCodeWarning, stacklevel=4),
    )
    if preload_shortnames:
        preload_libraries(*preload_shortnames, rtld_global=rtld_global)

    if env_override:
        from_env = os.environ.get("ROCM_SDK_PRELOAD_LIBRARIES")
        names = _split_preload_list(from_env) if from_env is not None else []
        if names:
            try:
                preload_libraries(*names, rtld_global=rtld_global)
            except Exception as error:
                raise RuntimeError(
                    "cannot preload the libraries named by ROCM_SDK_PRELOAD_LIBRARIES=%r: %s; "
                    "fix or unset that environment variable" % (from_env, error)
                ) from error

    if check_version:
        if isinstance(check_version, re.Pattern):
            pattern = check_version
            shown = pattern.pattern
        else:
            shown = str(check_version)
            pattern = re.compile("^" + re.escape(shown).replace(r"\*", ".*") + "$")
        if not _version_matches(check_version, pattern, __version__):
            # The first sentence is the reference's, word for word (SPEC §4): code outside
            # this project, the reference's own tests among it, matches on it.
            message = (
                "The program was compiled against a ROCm version matching '%s' but the "
                "installed ROCm version in this Python environment is %s." % (shown, __version__)
            )
            if fail_on_version_mismatch:
                raise RuntimeError(
                    message + " Install the ROCm packages the program was built for "
                    "(pip install --force-reinstall 'rocm==VERSION'), or rebuild it against %s." % __version__
                )
            warnings.warn(message + " This incompatibility may result in unexpected behavior.", stacklevel=2)


def _version_matches(check_version: "Union[str, re.Pattern[str]]", pattern: "re.Pattern[str]", version: str) -> bool:
    """Whether the installed `version` is the one `check_version` asks for. A post release
    is its release (SPEC §2, §4, TheRock's docs/packaging/versioning.md): `7.12.0` matches
    an installed `7.12.0.post1` and `7.12.0.post1` an installed `7.12.0`, as the pins of
    either admit the other (`_release`); `7.12.0.1` and `7.12.1` never match `7.12.0`."""
    from . import _dist_info, _release

    if pattern.match(version):
        return True
    release = _dist_info.final_release(version)
    if release is not None and pattern.match(release):
        return True
    # A version asked for as a string (not a compiled pattern): compare it as a release.
    return isinstance(check_version, str) and _release.same_release(check_version, version)
