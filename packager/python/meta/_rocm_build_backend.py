"""In-tree PEP 517 backend of the `rocm` sdist (SPEC §3).

Installing `rocm[...]` builds this sdist on the user's machine, and the build decides the
dependencies: `Requires-Dist: rocm-sdk-core=={v}` plus one extra per optional package,
pinned to the target family chosen here (`ROCM_SDK_TARGET_FAMILY`, else the GPUs of the
KFD topology, which the amdgpu driver publishes with no ROCm installed, else the GPU
`offload-arch` reports, else the default). The topology is read by the very module
`rocm-sdk doctor` uses, `rocm_sdk/_kfd_topology.py` of this sdist, so the choice is the
package `doctor` would name. Standard library only, so installing needs nothing from an
index beyond the sdist itself.
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
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Optional, cast

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Protocol

    from rocm_sdk._dist_info import FamilyChoice, PackageEntry
    from rocm_sdk._kfd_topology import Agent

    class DistInfo(Protocol):
        """What the backend reads of `rocm_sdk._dist_info` (the module itself is loaded
        from the sdist under another name, so the type is spelled out here)."""

        __version__: str
        ALL_PACKAGES: dict[str, PackageEntry]
        AVAILABLE_TARGET_FAMILIES: list[str]
        LINUX_TARGET_FAMILIES: list[str]
        WINDOWS_TARGET_FAMILIES: list[str]
        DEFAULT_TARGET_FAMILY: Optional[str]
        KPACK_SPLIT: bool
        SOURCE_DEFAULT: str
        SOURCE_DETECTED: str
        SOURCE_KFD: str

        def resolve_target_family(self) -> FamilyChoice: ...
        def match_target_family(self, requested: str, available: Optional[Sequence[str]] = None) -> Optional[str]: ...
        def family_for_gpu(self, reported: str, available: Optional[Sequence[str]] = None) -> Optional[str]: ...
        def printable(self, text: object, keep_newlines: bool = False) -> str: ...
        def _offload_arch_candidates(self) -> list[str]: ...
        def device_owner(self, name: str) -> str: ...
        def target_dist_segment(self, name: str) -> str: ...
        def release_specifier(self, version: Optional[str] = None) -> str: ...

    class KfdTopology(Protocol):
        """What the backend reads of `rocm_sdk._kfd_topology`, loaded as `_dist_info` is."""

        def topology_root(self, environ: Optional[Mapping[str, str]] = None) -> str: ...
        def detect_agents(self, root: str = ...) -> list[Agent]: ...


ROOT = os.path.dirname(os.path.abspath(__file__))
DIST_NAME = "rocm"
SUMMARY = "ROCm SDK for Python: installs the ROCm packages for this machine's GPU"
# The same license as every wheel of the build (`License: MIT` in their METADATA).
LICENSE = "MIT"
# Zip cannot store times before 1980; a fixed time keeps rebuilt wheels identical.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _log(message: str) -> None:
    # pip shows a backend's output with -v only. Control characters (from the environment,
    # or a topology's path) are escaped, as the packager and the runtime escape them.
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


def detect_gpus() -> tuple[Optional[list[tuple[int, str]]], Optional[str]]:
    """`([(node, target)], topology)`: the GPUs of this machine's KFD topology (or of the
    one `ROCM_SDK_KFD_TOPOLOGY` names) in node order, read by `_kfd_topology.py` of the
    sdist `load_dist_info` loaded last, the reader of `rocm-sdk doctor` (SPEC §3, §4).
    `(None, None)` when that module cannot be loaded: the choice then goes on without it,
    and the log says why."""
    try:
        kfd = cast("KfdTopology", importlib.import_module(_BUILD_PACKAGE + "._kfd_topology"))
    except Exception as error:  # An sdist without the reader still installs.
        _log("cannot read the KFD topology: %s" % error)
        return None, None
    topology = kfd.topology_root()
    return [(agent.node, agent.target) for agent in kfd.detect_agents(topology)], topology


class TargetSelection(NamedTuple):
    """What the `rocm` sdist installs for (SPEC §3): the family target-specific packages
    are pinned to, where it came from, the families whose device packages the `device`
    extra names (kpack-split: one per owner this machine's GPUs need; none without a named
    or detected target, and in legacy mode), and the lines saying which source decided and
    why, for the log."""

    family: Optional[str]
    source: str
    device_families: list[str]
    log: list[str]


def gpu_family(dist_info: "DistInfo", target: str) -> Optional[str]:
    """The family on offer that a GPU of `target` (`gfx942`, as the KFD topology names
    it) needs, or None, as `rocm-sdk doctor` judges it: in a kpack-split build the target
    on offer with its owner (its device package), in a legacy one the family of its
    series (`gfx94X-dcgpu`)."""
    return dist_info.match_target_family(target) if dist_info.KPACK_SPLIT else dist_info.family_for_gpu(target)


def _gpu_words(dist_info: "DistInfo", node: int, target: str) -> str:
    return "%s (KFD node %d)" % (dist_info.printable(target), node)


def select_target_families(
    dist_info: "DistInfo", gpus: Optional[Sequence[tuple[int, str]]] = None, topology: Optional[str] = None
) -> TargetSelection:
    """The install-time choice (SPEC §3): `ROCM_SDK_TARGET_FAMILY`; else the GPUs of the
    KFD topology read at `topology` (`gpus`: `(node, target)` in node order, as
    `detect_gpus` gives them; None when it was not read), each mapped to its family or
    owner; else the first GPU `offload-arch` reports; else the default. The environment,
    `offload-arch` and the default are `resolve_target_family()`'s rule, the runtime's.

    With several GPUs, a kpack-split build takes the device package of every owner they
    need; a legacy build takes the first GPU's family (one environment holds one family's
    libraries) and says what the others would need. Raises TargetFamilyError (a
    ValueError) naming the available families when the environment names one this
    distribution does not have.
    """
    requested = os.environ.get("ROCM_SDK_TARGET_FAMILY", "").strip()
    if requested:
        family, source = dist_info.resolve_target_family()
        why = "target family %s (from %s): ROCM_SDK_TARGET_FAMILY=%s" % (family, source, dist_info.printable(requested))
        return TargetSelection(family, source, [] if family is None else [family], [why])
    log: list[str] = []
    if gpus is not None:
        selection = _select_from_gpus(dist_info, gpus, dist_info.printable(topology), log)
        if selection is not None:
            return selection
    family, source = dist_info.resolve_target_family()
    if family is not None and source == dist_info.SOURCE_DETECTED:
        why = "target family %s (from %s): offload-arch reported a GPU of it" % (family, source)
        return TargetSelection(family, source, [family], [*log, why])
    found = dist_info._offload_arch_candidates()
    if found:
        log.append("offload-arch (%s) reported no GPU this build offers" % dist_info.printable(found[0]))
    else:
        log.append("no offload-arch in core, on PATH or beside the interpreter")
    why = "target family %s (from %s)" % (family, source)
    if dist_info.KPACK_SPLIT:
        why += ": no device package is chosen (the `device` extra is left out)"
    return TargetSelection(family, source, [], [*log, why])


def _select_from_gpus(
    dist_info: "DistInfo", gpus: Sequence[tuple[int, str]], topology: str, log: list[str]
) -> Optional[TargetSelection]:
    """`select_target_families` on the KFD topology's GPUs, or None (with `log` saying
    why) when none of them has a family on offer."""
    chosen = []
    for node, target in gpus:
        family = gpu_family(dist_info, target)
        if family is None:
            log.append(
                "GPU %s: this build has no device code for it (it offers %s)"
                % (_gpu_words(dist_info, node, target), ", ".join(dist_info.AVAILABLE_TARGET_FAMILIES) or "none")
            )
        else:
            chosen.append((node, target, family))
    if not chosen:
        what = "lists no GPU" if not gpus else "lists no GPU this build offers"
        log.append("the KFD topology at %s %s" % (topology, what))
        return None
    family = chosen[0][2]
    source = dist_info.SOURCE_KFD
    listed = ", ".join("GPU %s -> %s" % (_gpu_words(dist_info, node, target), found) for node, target, found in chosen)
    why = "target family %s (from %s): the KFD topology at %s lists %s" % (family, source, topology, listed)
    device_families: list[str] = []
    if dist_info.KPACK_SPLIT:
        owners = set()
        for _, _, found in chosen:
            if dist_info.device_owner(found) not in owners:
                owners.add(dist_info.device_owner(found))
                device_families.append(found)
        why += "; device packages: " + ", ".join(dist_info.device_owner(found) for found in device_families)
        return TargetSelection(family, source, device_families, [why, *log])
    for node, target, found in chosen[1:]:
        if found != family:
            log.append(
                "GPU %s would need the %s packages, which cannot share an environment with %s's: "
                "install them in another one with ROCM_SDK_TARGET_FAMILY=%s"
                % (_gpu_words(dist_info, node, target), found, family, found)
            )
    return TargetSelection(family, source, device_families, [why, *log])


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
    gpus, topology = detect_gpus()
    selection = select_target_families(dist_info, gpus, topology)
    for line in selection.log:
        _log(line)
    family, source = selection.family, selection.source
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
        # a plain `device` extra would install the wrong GPU's files. With GPUs of several
        # owners, it installs each one's device package.
        if family is not None and source != dist_info.SOURCE_DEFAULT and selection.device_families:
            extras["device"] = [_require(dist_info, device, found) for found in selection.device_families]
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
