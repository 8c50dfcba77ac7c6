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
import importlib.util
import io
import os
import sys
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.abspath(__file__))
DIST_NAME = "rocm"
SUMMARY = "ROCm SDK for Python: installs the ROCm packages for this machine's GPU"
# The same license as every wheel of the build (`License: MIT` in their METADATA).
LICENSE = "MIT"
# Zip cannot store times before 1980; a fixed time keeps rebuilt wheels identical.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _log(message):
    # pip shows a backend's output with -v only. Control characters (from the environment,
    # or a topology's path) are escaped, as the packager and the runtime escape them.
    text = "".join(ch if ch in " \n" or ch.isprintable() else repr(ch)[1:-1] for ch in str(message))
    print("rocm build backend: " + text, file=sys.stderr)


def _load_module(root, file_name, module_name):
    """Loads `rocm_sdk/{file_name}` of the sdist at `root` without importing the
    `rocm_sdk` package (its `__init__` needs the installed packages)."""
    path = os.path.join(root, "rocm_sdk", file_name)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load " + path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_dist_info(root=ROOT):
    """Loads `rocm_sdk/_dist_info.py` without importing the `rocm_sdk` package."""
    return _load_module(root, "_dist_info.py", "_rocm_sdk_dist_info_for_build")


def detect_gpus(root=ROOT):
    """`([(node, target)], topology)`: the GPUs of this machine's KFD topology (or of the
    one `ROCM_SDK_KFD_TOPOLOGY` names) in node order, read by `rocm_sdk/_kfd_topology.py`,
    the reader of `rocm-sdk doctor` (SPEC §3, §4). `(None, None)` when that module cannot
    be loaded: the choice then goes on without it, and the log says why."""
    try:
        kfd = _load_module(root, "_kfd_topology.py", "_rocm_sdk_kfd_topology_for_build")
    except Exception as error:  # An sdist without the reader still installs.
        _log("cannot read the KFD topology: %s" % error)
        return None, None
    topology = kfd.topology_root()
    return [(agent.node, agent.target) for agent in kfd.detect_agents(topology)], topology


def _marker_for(dist_info, owner):
    """A `sys_platform` marker for a device package only one platform's build needs (none
    of its owner's targets is in the other platform's list), or None."""
    linux = {dist_info.device_owner(name) for name in dist_info.LINUX_TARGET_FAMILIES}
    windows = {dist_info.device_owner(name) for name in dist_info.WINDOWS_TARGET_FAMILIES}
    if not linux or not windows or (owner in linux) == (owner in windows):
        return None
    return 'sys_platform == "linux"' if owner in linux else 'sys_platform == "win32"'


def _require(dist_info, entry, family=None):
    """`{dist name}{specifier}`: the whole release of this sdist's version, so a package
    republished as a post release (`7.12.0.post1`) joins a set of `7.12.0` (SPEC §3)."""
    return entry.get_dist_package_name(family) + dist_info.release_specifier()


def compute_requirements(dist_info):
    """(requires, {extra: [requirement, ...]}) for this machine (SPEC §3).

    Raises ValueError naming the available families when `ROCM_SDK_TARGET_FAMILY` names
    one this distribution does not have.
    """
    gpus, topology = detect_gpus()
    selection = dist_info.select_target_families(gpus, topology)
    for line in selection.log:
        _log(line)
    family, source = selection.family, selection.source
    packages = dist_info.ALL_PACKAGES
    requires = [_require(dist_info, packages["core"])]
    extras = {}
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
    return requires, extras


def _with_extra(requirement, extra):
    if ";" in requirement:
        name, marker = requirement.split(";", 1)
        return '%s; (%s) and extra == "%s"' % (name.strip(), marker.strip(), extra)
    return '%s; extra == "%s"' % (requirement, extra)


def render_metadata(dist_info):
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


def _dist_info_dir(version):
    return "%s-%s.dist-info" % (DIST_NAME, version)


def _dist_info_files(metadata):
    return {
        "METADATA": metadata,
        "WHEEL": (
            "Wheel-Version: 1.0\nGenerator: rocm-build-backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ).encode("utf-8"),
        "entry_points.txt": b"[console_scripts]\nrocm-sdk = rocm_sdk.__main__:main\n",
    }


def _package_files(root):
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


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "sha256=" + digest


def _add(archive, name, data, executable=False):
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def _read_metadata_dir(metadata_directory):
    files = {}
    for name in ("METADATA", "WHEEL", "entry_points.txt"):
        with open(os.path.join(metadata_directory, name), "rb") as file:
            files[name] = file.read()
    return files


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = load_dist_info()
    name = _dist_info_dir(dist_info.__version__)
    target = os.path.join(metadata_directory, name)
    os.makedirs(target, exist_ok=True)
    for file_name, data in _dist_info_files(render_metadata(dist_info)).items():
        with open(os.path.join(target, file_name), "wb") as file:
            file.write(data)
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
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


def build_sdist(sdist_directory, config_settings=None):
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
