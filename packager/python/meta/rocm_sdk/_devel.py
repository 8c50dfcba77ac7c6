"""The development tree: expanded from the devel wheel's tarball on first use (SPEC §4).

Wheels cannot hold symlinks, so the devel wheel carries its tree as
`{pure package}/_devel.tar[.xz]`, whose first path component is the devel platform
directory. On first use we unpack it into site-packages beside the runtime packages,
append every new path to the devel wheel's RECORD (so `pip uninstall` removes it), and
delete the tarball last: a tarball still present means the expansion has not finished,
and the next use starts it again. An exclusive lock on that RECORD serialises
concurrent first uses.

Owns: finding the devel package, the lock, RECORD, retry. Does not own: member safety
and unpacking (`_devel_tree`), device links (`_device_links`).
"""

import importlib.util
import os
from pathlib import Path
from typing import IO, Optional

from . import _dist_info as di
from . import _record
from ._devel_integrity import check_tarball
from ._devel_tree import UnsafeTarballError, expand_tarball

__all__ = ["DevelPackage", "UnsafeTarballError", "find_devel_package", "get_devel_root"]

TARBALL_NAMES = ("_devel.tar.xz", "_devel.tar")


class DevelPackage:
    """An installed devel wheel: where its pure package, tree and RECORD are."""

    def __init__(self, dist_name: str, pure_dir: Path, platform_name: str) -> None:
        self.dist_name = dist_name
        self.pure_dir = pure_dir
        self.site_dir = pure_dir.parent
        self.platform_name = platform_name
        self.root = self.site_dir / platform_name

    def tarball(self) -> Optional[Path]:
        """The tarball still waiting to be expanded, or None."""
        for name in TARBALL_NAMES:
            path = self.pure_dir / name
            if path.exists():
                return path
        return None

    def is_expanded(self) -> bool:
        return self.tarball() is None and (self.root / "__init__.py").is_file()


def _not_installed_error(dist_name: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(
        'the ROCm development package (%s) is not installed; install it with `pip install "rocm[devel]"`' % dist_name
    )


def find_devel_package() -> DevelPackage:
    """The installed devel package (of this process's target family when it is target
    specific, SPEC §4: the family rule of `determine_target_family`, never another one).

    Raises ModuleNotFoundError with the `pip install` that fixes it, and the
    TargetFamilyError (a ValueError) of `determine_target_family`.
    """
    entry = di.ALL_PACKAGES["devel"]
    family = di.determine_target_family() if entry.is_target_specific else None
    pure_name = entry.get_pure_py_package_name(family)
    spec = importlib.util.find_spec(pure_name) if pure_name is not None else None
    if spec is None or spec.origin is None or Path(spec.origin).name != "__init__.py":
        raise _not_installed_error(entry.get_dist_package_name(family))
    return DevelPackage(
        entry.get_dist_package_name(family),
        Path(spec.origin).parent,
        entry.get_py_package_name(family),
    )


def ensure_expanded(devel: DevelPackage) -> bool:
    """Expands the devel tree unless done; safe to call from many processes at once."""
    if devel.is_expanded():
        return False
    record_path = _record.find_record(devel.dist_name)
    if record_path is None:
        raise RuntimeError(
            "cannot expand %s: its RECORD file was not found, so it was not installed by a "
            "Python package installer; install rocm[devel] in a virtual environment with pip or uv" % devel.dist_name
        )
    with _record.locked(record_path) as record:
        # Another process may have finished while we waited for the lock.
        tarball = devel.tarball()
        if tarball is None:
            if not (devel.root / "__init__.py").is_file():
                raise RuntimeError(
                    "%s is damaged: the devel tree %s is missing and there is no tarball to "
                    "expand it from; reinstall it with `pip install --force-reinstall %s`"
                    % (devel.dist_name, devel.root, devel.dist_name)
                )
            return False
        di._log("expanding %s into %s" % (tarball, devel.site_dir))
        check_tarball(tarball, record_path, devel.dist_name)
        _record_root_first(record, devel)
        created = expand_tarball(tarball, str(devel.site_dir), devel.platform_name, devel.dist_name)
        if not (devel.root / "__init__.py").is_file():
            raise RuntimeError("expanding %s did not produce %s/__init__.py" % (tarball, devel.platform_name))
        # The tree's root directory is recorded too. Device wheels link their files into
        # the tree and record the links in their own RECORD only (SPEC §4; uv keeps a file
        # that two RECORDs list), so the devel RECORD does not list every file below the
        # root. pip removes a directory whole only when the RECORD it uninstalls lists
        # every file below it, and leaves the directories it empties; without this entry
        # `pip uninstall` would leave device links and empty directories behind. pip and
        # uv both remove a recorded directory with everything in it.
        _record.append_paths(record, [*created, devel.platform_name])
        os.fsync(record.fileno())
        # Last: until the tarball is gone, the next use redoes the expansion.
        tarball.unlink()
    return True


def _record_root_first(record: IO[str], devel: DevelPackage) -> None:
    """Lists the tree's root in RECORD before a byte of it is written.

    pip and uv remove a recorded directory with everything in it, so `pip uninstall`
    after an expansion that was killed midway removes the half-written tree too.
    """
    if _record.append_paths(record, [devel.platform_name]):
        os.fsync(record.fileno())


def get_devel_root() -> Path:
    """The devel tree's root directory, expanding it and placing device links first."""
    from . import _device_links

    devel = find_devel_package()
    ensure_expanded(devel)
    _device_links.reconcile(devel)
    return devel.root
