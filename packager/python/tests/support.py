"""Builds synthetic installations of the shipped Python code, without built wheels.

A test gets a temporary site-packages holding `rocm_sdk`, `rocm_sdk_core` (with the real
`_dist_info.py` and a hand-built `_dist_info_data.py` of constants beside it), their
platform directories, and `.dist-info` directories with RECORD files, the way pip leaves
them. Code under test runs in a subprocess with that directory on `sys.path` and a clean
environment, so the test process's own environment never changes.
"""

import importlib.util
import io
import itertools
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import types
import unittest
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Optional, Union

# What tests pass as a path: a `Path` or a string.
PathArg = Union[str, "os.PathLike[str]"]
# A finished child process whose output was read as text.
Completed = subprocess.CompletedProcess[str]

PYTHON_ROOT = Path(__file__).resolve().parent.parent
# The static module every pure package ships; its constants are generated per package.
DIST_INFO = PYTHON_ROOT / "meta" / "rocm_sdk" / "_dist_info.py"
# The owner table, as the packager renders it into every `_dist_info_data.py` (SPEC §2).
_OWNER_TABLE = (PYTHON_ROOT / "common" / "target_owners.json").read_text(encoding="utf-8")
TARGET_OWNERS: dict[str, str] = json.loads(_OWNER_TABLE)["owners"]
VERSION = "7.12.0.dev0"


def dist_info_data_source(
    families: Iterable[str] = ("gfx110X-all", "gfx94X-dcgpu"),
    kpack: bool = False,
    default: Optional[str] = None,
    linux: Iterable[str] = (),
    windows: Iterable[str] = (),
    logical: str = "meta",
    this_family: Optional[str] = None,
    version: str = VERSION,
    nonce: str = "",
    devel_target_specific: bool = False,
) -> str:
    """A `_dist_info_data.py` of these constants, as the packager would write it (Python's
    own literals here, the packager's escaping being its own tests' business)."""
    families = sorted(families)
    constants: list[tuple[str, object]] = [
        ("__version__", version),
        ("PY_PACKAGE_SUFFIX_NONCE", nonce),
        ("KPACK_SPLIT", kpack),
        ("DEVEL_TARGET_SPECIFIC", devel_target_specific),
        ("DEFAULT_TARGET_FAMILY", default if default is not None else (families[0] if families else None)),
        ("AVAILABLE_TARGET_FAMILIES", families),
        ("LINUX_TARGET_FAMILIES", sorted(linux)),
        ("WINDOWS_TARGET_FAMILIES", sorted(windows)),
        ("DEVICE_TARGETS", sorted({TARGET_OWNERS.get(f, f) for f in families}) if kpack else []),
        ("TARGET_OWNERS", TARGET_OWNERS),
        ("THIS_TARGET_FAMILY", this_family),
        ("THIS_PACKAGE_LOGICAL_NAME", logical),
    ]
    return '"""Constants of a test build."""\n\n' + "".join("%s = %r\n" % pair for pair in constants)


_LOADED = itertools.count()


def load_dist_info(**options: Any) -> types.ModuleType:
    """The real `_dist_info` module over constants built in memory, imported as a module of
    a package of its own (each call a new one), so tracebacks point into its source."""
    package = "_dist_info_under_test_%d" % next(_LOADED)
    parent = types.ModuleType(package)
    parent.__path__ = []
    sys.modules[package] = parent
    data = types.ModuleType(package + "._dist_info_data")
    exec(compile(dist_info_data_source(**options), "_dist_info_data.py", "exec"), data.__dict__)
    sys.modules[data.__name__] = data
    spec = importlib.util.spec_from_file_location(package + "._dist_info", DIST_INFO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_release(**options: Any) -> types.ModuleType:
    """The real `_release` module, importing a `load_dist_info(**options)` as its
    `_dist_info`."""
    dist_info = load_dist_info(**options)
    package = dist_info.__name__.rsplit(".", 1)[0]
    spec = importlib.util.spec_from_file_location(package + "._release", DIST_INFO.parent / "_release.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def write_dist_info(package_dir: PathArg, **options: Any) -> None:
    """`_dist_info.py` and a `_dist_info_data.py` of `options` in `package_dir`, as the
    packager gives every pure package."""
    write(Path(package_dir) / "_dist_info.py", DIST_INFO.read_text(encoding="utf-8"))
    write(Path(package_dir) / "_dist_info_data.py", dist_info_data_source(**options))


def write_dist_info_package(root: PathArg, **options: Any) -> Path:
    """A package `shipped` under `root` holding only `_dist_info`; returns `root`, the
    directory to put on `sys.path` before `import shipped._dist_info`."""
    write(Path(root) / "shipped" / "__init__.py", "")
    write_dist_info(Path(root) / "shipped", **options)
    return Path(root)


# Recorded KFD topology trees, shaped like the kernel's (see kfd_topologies/README.md).
TOPOLOGIES = Path(__file__).resolve().parent / "kfd_topologies"


def clean_env(extra: Optional[Mapping[str, str]] = None, path_dirs: Iterable[str] = ()) -> dict[str, str]:
    """An environment without ROCM_SDK_*, with a PATH that finds no offload-arch and the
    recorded topology of a machine without a GPU, whatever GPUs this machine has."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ROCM_SDK_")}
    env["PATH"] = os.pathsep.join([*list(path_dirs), "/usr/bin", "/bin"])
    env["ROCM_SDK_KFD_TOPOLOGY"] = str(TOPOLOGIES / "cpu_only")
    env.pop("PYTHONPATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if extra:
        env.update(extra)
    return env


def run_python(
    code: str,
    site: Optional[PathArg] = None,
    env: Optional[Mapping[str, str]] = None,
    args: Iterable[object] = (),
    check: bool = False,
    timeout: Optional[float] = None,
) -> Completed:
    """Runs `python -c code` (with `site` first on sys.path); returns CompletedProcess.
    A `timeout` turns a hang into a failing test (`subprocess.TimeoutExpired`), never
    into a timing assertion."""
    env = dict(env if env is not None else clean_env())
    if site is not None:
        env["PYTHONPATH"] = str(site)
    result = subprocess.run(
        [sys.executable, "-c", code] + [str(arg) for arg in args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=env,
        text=True,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError("python failed (%d):\n%s\n%s" % (result.returncode, result.stdout, result.stderr))
    return result


def write(path: PathArg, text: Union[str, bytes], mode: int = 0o644) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.write_bytes(data)
    os.chmod(str(path), mode)
    return path


def add_dist(site: PathArg, name: str, version: str, relpaths: Sequence[str], headers: Sequence[str] = ()) -> Path:
    """A pip-style `.dist-info` for `name` whose RECORD lists `relpaths`; `headers` are
    more METADATA lines (`Provides-Extra: device-gfx90a`)."""
    folder = "%s-%s.dist-info" % (name.replace("-", "_"), version)
    lines = ["Metadata-Version: 2.1", "Name: %s" % name, "Version: %s" % version, *headers]
    write(Path(site) / folder / "METADATA", "\n".join(lines) + "\n")
    record = [path + ",," for path in relpaths] + [folder + "/METADATA,,", folder + "/RECORD,,"]
    return write(Path(site) / folder / "RECORD", "\n".join(record) + "\n")


def copy_tree(source: PathArg, destination: PathArg) -> None:
    """Copies shipped sources as the packager ships them: no caches, and no `.pyi`, which
    only the type check reads."""
    shutil.copytree(str(source), str(destination), ignore=shutil.ignore_patterns("__pycache__", "*.pyi"))


def install_pure(site: PathArg, source_dir: PathArg, package: str, **options: Any) -> None:
    """Copies a shipped pure package and gives it `_dist_info` with generated constants."""
    copy_tree(source_dir, Path(site) / package)
    write_dist_info(Path(site) / package, **options)


def make_site(root: PathArg, with_core: bool = True, **options: Any) -> Path:
    """A site-packages with rocm_sdk (and core) installed; returns its path."""
    site = Path(root) / "site-packages"
    site.mkdir(parents=True)
    install_pure(site, PYTHON_ROOT / "meta" / "rocm_sdk", "rocm_sdk", logical="meta", **options)
    add_dist(site, "rocm", options.get("version", VERSION), ["rocm_sdk/__init__.py"])
    if with_core:
        install_pure(site, PYTHON_ROOT / "core" / "rocm_sdk_core", "rocm_sdk_core", logical="core", **options)
        write(site / "_rocm_sdk_core" / "__init__.py", (PYTHON_ROOT / "platform_package" / "__init__.py").read_text())
        add_dist(site, "rocm-sdk-core", options.get("version", VERSION), ["rocm_sdk_core/__init__.py"])
    return site


def compile_shared_library(path: PathArg, source: str = "int rocm_test_symbol(void) { return 42; }\n") -> Path:
    """A real shared library built with the system C compiler."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        c_file = Path(scratch) / "library.c"
        c_file.write_text(source)
        compiler = os.environ.get("CC", "cc")
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-o", str(path), str(c_file)],
            check=True,
            capture_output=True,
        )
    return path


# A tarball member: (name, kind, payload); kind "file" or "exe" (payload: bytes), "dir"
# (no payload) or "link" (payload: the target).
TarEntry = tuple[str, str, Any]


def tar_bytes(entries: Iterable[TarEntry], compression: str = "") -> bytes:
    """A tarball from `[(name, kind, payload)]`: kind "file" (bytes), "exe", "dir", "link"."""
    buffer = io.BytesIO()
    modes: dict[str, Literal["w", "w:xz"]] = {"": "w", "xz": "w:xz"}
    with tarfile.open(fileobj=buffer, mode=modes[compression]) as archive:
        for name, kind, payload in entries:
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                archive.addfile(info)
            elif kind == "link":
                info.type = tarfile.SYMTYPE
                info.linkname = payload
                archive.addfile(info)
            else:
                info.size = len(payload)
                info.mode = 0o755 if kind == "exe" else 0o644
                archive.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()


class TempDirTest(unittest.TestCase):
    """Gives each test `self.tmp`, removed afterwards."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.addCleanup(self._tmp.cleanup)
