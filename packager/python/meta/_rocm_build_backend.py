"""In-tree PEP 517 backend of the `rocm` sdist (SPEC §3).

Installing `rocm[...]` builds this sdist on the user's machine, and the build decides the
dependencies: `Requires-Dist: rocm-sdk-core=={v}` plus one extra per optional package,
pinned to the target family chosen here (`ROCM_SDK_TARGET_FAMILY`, else the GPU
`offload-arch` reports, else the default). Standard library only, so installing needs
nothing from an index beyond the sdist itself.
"""

import base64
import hashlib
import importlib
import importlib.machinery
import importlib.util
import io
import os
import sys
import tarfile
import zipfile
from typing import TYPE_CHECKING, NamedTuple, Optional, cast

if TYPE_CHECKING:
    from typing import Protocol

    from rocm_sdk._dist_info import FamilyChoice, PackageEntry

    class DistInfo(Protocol):
        """What the backend reads of `rocm_sdk._dist_info` (the module itself is loaded
        from the sdist under another name, so the type is spelled out here)."""

        __version__: str
        ALL_PACKAGES: dict[str, PackageEntry]
        AVAILABLE_TARGET_FAMILIES: list[str]
        LINUX_TARGET_FAMILIES: list[str]
        WINDOWS_TARGET_FAMILIES: list[str]
        SOURCE_DEFAULT: str

        def resolve_target_family(self) -> FamilyChoice: ...
        def device_owner(self, name: str) -> str: ...
        def target_dist_segment(self, name: str) -> str: ...
        def release_specifier(self, version: Optional[str] = None) -> str: ...


ROOT = os.path.dirname(os.path.abspath(__file__))
DIST_NAME = "rocm"
SUMMARY = "ROCm SDK for Python: installs the ROCm packages for this machine's GPU"
# The same license as every wheel of the build (`License: MIT` in their METADATA).
LICENSE = "MIT"
# Zip cannot store times before 1980; a fixed time keeps rebuilt wheels identical.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _log(message: str) -> None:
    # pip shows a backend's output with -v only. Control characters (from the environment)
    # are escaped, as the packager and the runtime escape them.
    text = "".join(ch if ch in " \n" or ch.isprintable() else repr(ch)[1:-1] for ch in str(message))
    print("rocm build backend: " + text, file=sys.stderr)


# The name `rocm_sdk/` of the sdist is loaded under: `_dist_info` imports its constants
# from `._dist_info_data`, so it needs a package, and an installed `rocm_sdk` must not be it.
_BUILD_PACKAGE = "_rocm_sdk_for_build"


def load_dist_info(root: str = ROOT) -> "DistInfo":
    """Loads `rocm_sdk/_dist_info.py` and the `_dist_info_data.py` it imports, without
    running the `rocm_sdk` package's `__init__`: a package of another name whose only path
    is the sdist's `rocm_sdk/` holds them, made anew for each call."""
    for name in [name for name in sys.modules if name.split(".")[0] == _BUILD_PACKAGE]:
        del sys.modules[name]
    spec = importlib.machinery.ModuleSpec(_BUILD_PACKAGE, None, is_package=True)
    spec.submodule_search_locations = [os.path.join(root, "rocm_sdk")]
    sys.modules[_BUILD_PACKAGE] = importlib.util.module_from_spec(spec)
    return cast("DistInfo", importlib.import_module(_BUILD_PACKAGE + "._dist_info"))


def _marker_for(dist_info: "DistInfo", owner: str) -> Optional[str]:
    """A `sys_platform` marker for a device package only one platform's build needs (none
    of its owner's targets is in the other platform's list), or None."""
    linux = {dist_info.device_owner(name) for name in dist_info.LINUX_TARGET_FAMILIES}
    windows = {dist_info.device_owner(name) for name in dist_info.WINDOWS_TARGET_FAMILIES}
    if not linux or not windows or (owner in linux) == (owner in windows):
        return None
    return 'sys_platform == "linux"' if owner in linux else 'sys_platform == "win32"'


def _require(dist_info: "DistInfo", entry: "PackageEntry", family: Optional[str] = None) -> str:
    """`{dist name}{specifier}`: the whole release of this sdist's version, so a package
    republished as a post release (`7.12.0.post1`) joins a set of `7.12.0` (SPEC §3)."""
    return entry.get_dist_package_name(family) + dist_info.release_specifier()


class Requirements(NamedTuple):
    """What the built wheel requires: always, and per extra (SPEC §3)."""

    requires: list[str]
    extras: dict[str, list[str]]


def compute_requirements(dist_info: "DistInfo") -> Requirements:
    """(requires, {extra: [requirement, ...]}) for this machine (SPEC §3).

    Raises ValueError naming the available families when `ROCM_SDK_TARGET_FAMILY` names
    one this distribution does not have.
    """
    family, source = dist_info.resolve_target_family()
    _log("target family %s (from %s)" % (family, source))
    packages = dist_info.ALL_PACKAGES
    requires = [_require(dist_info, packages["core"])]
    extras: dict[str, list[str]] = {}
    for entry in packages.values():
        if entry.required or entry.logical_name == "device":
            continue
        if entry.is_target_specific and family is None:
            continue
        extras[entry.logical_name] = [_require(dist_info, entry, family if entry.is_target_specific else None)]
    device = packages["device"]
    if device.built:
        # The fallback default is not a detection: without a named or detected target,
        # a plain `device` extra would install the wrong GPU's files.
        if family is not None and source != dist_info.SOURCE_DEFAULT:
            extras["device"] = [_require(dist_info, device, family)]
        # One extra per owner: targets that share a device package share its extra, and
        # `device-all` names each package once (SPEC §2, §3).
        every = []
        for owner in sorted({dist_info.device_owner(target) for target in dist_info.AVAILABLE_TARGET_FAMILIES}):
            requirement = _require(dist_info, device, owner)
            marker = _marker_for(dist_info, owner)
            if marker is not None:
                requirement += "; " + marker
            extras["device-" + dist_info.target_dist_segment(owner)] = [requirement]
            every.append(requirement)
        extras["device-all"] = every
    return Requirements(requires, extras)


def _with_extra(requirement: str, extra: str) -> str:
    if ";" in requirement:
        name, marker = requirement.split(";", 1)
        return '%s; (%s) and extra == "%s"' % (name.strip(), marker.strip(), extra)
    return '%s; extra == "%s"' % (requirement, extra)


def render_metadata(dist_info: "DistInfo") -> bytes:
    requires, extras = compute_requirements(dist_info)
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + DIST_NAME,
        "Version: " + dist_info.__version__,
        "Summary: " + SUMMARY,
        "License: " + LICENSE,
        "Requires-Python: >=3.9",
    ]
    lines += ["Requires-Dist: " + requirement for requirement in requires]
    for extra in sorted(extras):
        lines.append("Provides-Extra: " + extra)
        lines += ["Requires-Dist: " + _with_extra(requirement, extra) for requirement in extras[extra]]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _dist_info_dir(version: str) -> str:
    return "%s-%s.dist-info" % (DIST_NAME, version)


def _dist_info_files(metadata: bytes) -> dict[str, bytes]:
    return {
        "METADATA": metadata,
        "WHEEL": (b"Wheel-Version: 1.0\nGenerator: rocm-build-backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        "entry_points.txt": b"[console_scripts]\nrocm-sdk = rocm_sdk.__main__:main\n",
    }


def _package_files(root: str) -> list[tuple[str, str]]:
    """`[(archive name, path)]` of the `rocm_sdk` package, sorted, without caches."""
    found = []
    package_root = os.path.join(root, "rocm_sdk")
    for directory, subdirectories, files in os.walk(package_root):
        subdirectories[:] = sorted(name for name in subdirectories if name != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(directory, name)
            found.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
    return sorted(found)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "sha256=" + digest


def _add(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def _read_metadata_dir(metadata_directory: str) -> dict[str, bytes]:
    files = {}
    for name in ("METADATA", "WHEEL", "entry_points.txt"):
        with open(os.path.join(metadata_directory, name), "rb") as file:
            files[name] = file.read()
    return files


# PEP 517's hooks: `config_settings` is whatever the frontend passes (`--config-settings`).
ConfigSettings = Optional[dict[str, object]]


def get_requires_for_build_wheel(config_settings: ConfigSettings = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: ConfigSettings = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: ConfigSettings = None) -> str:
    dist_info = load_dist_info()
    name = _dist_info_dir(dist_info.__version__)
    target = os.path.join(metadata_directory, name)
    os.makedirs(target, exist_ok=True)
    for file_name, data in _dist_info_files(render_metadata(dist_info)).items():
        with open(os.path.join(target, file_name), "wb") as file:
            file.write(data)
    return name


def build_wheel(
    wheel_directory: str, config_settings: ConfigSettings = None, metadata_directory: Optional[str] = None
) -> str:
    dist_info = load_dist_info()
    version = dist_info.__version__
    if metadata_directory is not None:
        # PEP 517 passes the `.dist-info` directory prepared earlier; the metadata the
        # installer resolved against must be the wheel's.
        dist_files = _read_metadata_dir(metadata_directory)
    else:
        dist_files = _dist_info_files(render_metadata(dist_info))
    wheel_name = "%s-%s-py3-none-any.whl" % (DIST_NAME, version)
    records = []
    temporary = os.path.join(wheel_directory, wheel_name + ".part")
    with zipfile.ZipFile(temporary, "w") as archive:
        for name, path in _package_files(ROOT):
            with open(path, "rb") as file:
                data = file.read()
            _add(archive, name, data)
            records.append((name, _record_hash(data), str(len(data))))
        prefix = _dist_info_dir(version) + "/"
        for file_name in sorted(dist_files):
            data = dist_files[file_name]
            _add(archive, prefix + file_name, data)
            records.append((prefix + file_name, _record_hash(data), str(len(data))))
        record_lines = ["%s,%s,%s" % row for row in records] + [prefix + "RECORD,,"]
        _add(archive, prefix + "RECORD", ("\n".join(record_lines) + "\n").encode("utf-8"))
    os.replace(temporary, os.path.join(wheel_directory, wheel_name))
    return wheel_name


def build_sdist(sdist_directory: str, config_settings: ConfigSettings = None) -> str:
    """Re-packs this source tree (what `pip download` or a re-upload needs)."""
    dist_info = load_dist_info()
    base = "%s-%s" % (DIST_NAME, dist_info.__version__)
    sdist_name = base + ".tar.gz"
    members = []
    for directory, subdirectories, files in os.walk(ROOT):
        subdirectories[:] = sorted(name for name in subdirectories if name != "__pycache__")
        for name in sorted(files):
            if not name.endswith((".pyc", ".pyo")):
                members.append(os.path.join(directory, name))
    temporary = os.path.join(sdist_directory, sdist_name + ".part")
    with tarfile.open(temporary, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(members):
            with open(path, "rb") as file:
                data = file.read()
            info = tarfile.TarInfo(base + "/" + os.path.relpath(path, ROOT).replace(os.sep, "/"))
            info.size = len(data)
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            info.mtime = 0
            archive.addfile(info, io.BytesIO(data))
    os.replace(temporary, os.path.join(sdist_directory, sdist_name))
    return sdist_name
