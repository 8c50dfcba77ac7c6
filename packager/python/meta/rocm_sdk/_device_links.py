"""Device files in the devel tree (SPEC §4, device links; kpack-split builds).

Each device wheel installs its files into the libraries platform directory together with
`.devel_links/{target}.json`, which lists the relpaths the devel tree should also show.
We hard-link each into the expanded devel tree and append the link to that device
wheel's RECORD, so `pip uninstall rocm-sdk-device-X` removes exactly its own links.
Running it again changes nothing; it runs on `init`, `path` and `test`.
"""

import json
import os
from typing import TYPE_CHECKING, NamedTuple

from . import _dist_info as di
from . import _record, _release

if TYPE_CHECKING:
    from ._devel import DevelPackage


class LinkManifest(NamedTuple):
    """A device wheel's `.devel_links/{target}.json` in the libraries platform directory."""

    target: str
    path: str


class DeviceLink(NamedTuple):
    """One entry of a manifest: a file the device wheel adds to the libraries platform
    directory, by its path there (`relpath`). The manifest's `target`, relative to the
    devel tree, is never followed: the file is found by `relpath` (SPEC §4)."""

    relpath: str


def read_links(json_path: str) -> list[DeviceLink]:
    """The entries of a manifest, in its order."""
    with open(json_path, encoding="utf-8") as file:
        links = json.load(file).get("links", [])
    return [DeviceLink(relpath=link["relpath"]) for link in links]


def _link_parts(relpath: str) -> list[str]:
    parts = relpath.split("/")
    if relpath.startswith("/") or not relpath or any(part in ("", ".", "..") for part in parts):
        raise ValueError("unsafe relpath %r" % relpath)
    return parts


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def _link_into(source: str, destination: str) -> None:
    """Hard-links `source` at `destination`, replacing a stale file atomically."""
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    temporary = "%s.rocm-sdk-link.%d" % (destination, os.getpid())
    if os.path.lexists(temporary):
        os.unlink(temporary)
    os.link(source, temporary)
    os.replace(temporary, destination)


def device_link_files(libraries_dir: str) -> list[LinkManifest]:
    """The `.devel_links/*.json` files present, sorted."""
    links_dir = os.path.join(libraries_dir, ".devel_links")
    if not os.path.isdir(links_dir):
        return []
    return [
        LinkManifest(name[: -len(".json")], os.path.join(links_dir, name))
        for name in sorted(os.listdir(links_dir))
        if name.endswith(".json")
    ]


def reconcile(devel: "DevelPackage") -> int:
    """Places the links of every installed device wheel of this version; returns a count.

    `devel` is an expanded `_devel.DevelPackage`.
    """
    if not di.ALL_PACKAGES["device"].built or not devel.is_expanded():
        return 0
    libraries_name = di.ALL_PACKAGES["libraries"].get_py_package_name()
    libraries_dir = os.path.join(str(devel.site_dir), libraries_name)
    placed = 0
    for target, json_path in device_link_files(libraries_dir):
        dist_name = di.ALL_PACKAGES["device"].get_dist_package_name(target)
        version = di.installed_dist_version(dist_name)
        # The same release: a device wheel republished as a post release counts (SPEC §4).
        if version is None or not _release.release_admits(di.__version__, version):
            di._log("skipping device links of %s (installed version %s)" % (dist_name, version))
            continue
        record_path = _record.find_record(dist_name)
        if record_path is None:
            continue
        links = read_links(json_path)
        with _record.locked(record_path) as record:
            new_paths = []
            for link in links:
                parts = _link_parts(link.relpath)
                source = os.path.join(libraries_dir, *parts)
                destination = os.path.join(str(devel.root), *parts)
                if not os.path.isfile(source):
                    continue
                if not _same_file(source, destination):
                    _link_into(source, destination)
                    placed += 1
                new_paths.append("/".join([devel.platform_name, *parts]))
            _record.append_paths(record, new_paths)
    return placed
