"""Validates and unpacks the devel tarball into site-packages (SPEC §4, devel expansion).

Owns: the safety rules for tar members and how each member lands on disk. Does not own:
finding the packages, locking, RECORD, or when to expand (`_devel`).

Every member is checked before anything is written; one bad member refuses the whole
tarball. A member must lie under the devel platform directory, must not pass through a
symlink of the tarball, and a symlink must resolve, through the tarball's other
symlinks, to a place inside site-packages. A member under a file member, or a symlink
with an empty target, is refused too (either made an expansion fail mid-way). Reading the
tarball whole first and removing a failed expansion's partial tree are
`_devel_integrity`'s and `_write_members`' jobs.
"""

import contextlib
import os
import shutil
import sys
import tarfile
from collections.abc import Iterable, Sequence
from typing import Union

from ._devel_integrity import READ_ERRORS, ExpansionError, open_checked, reinstall_hint

# Compiler drivers stay symlinks: clang picks its mode from the name it was run as, and
# finds its resources from its real location (SPEC §4).
COMPILER_DRIVERS = frozenset(["amdclang", "amdclang++", "amdclang-cl", "amdclang-cpp", "amdflang", "amdlld", "amdllvm"])

# Deeper symlink chains than this are treated as loops.
MAX_LINK_HOPS = 64


class UnsafeTarballError(Exception):
    """The devel tarball has a member that could write outside its tree."""

    def __init__(self, tarball: str, member: str, reason: str, dist_name: str = "rocm-sdk-devel") -> None:
        self.tarball = tarball
        self.member = member
        self.reason = reason
        super().__init__(
            "refusing to expand %s: member %r %s; nothing was extracted. "
            "The devel package is damaged or was not built by the ROCm packager: %s"
            % (tarball, member, reason, reinstall_hint(dist_name))
        )


def split_member_name(name: str) -> list[str]:
    """Path components of a member name; raises ValueError for absolute names and `..`."""
    if name.startswith("/"):
        raise ValueError("is an absolute path")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if not parts:
        raise ValueError("has an empty name")
    if ".." in parts:
        raise ValueError("contains '..'")
    return parts


# Symlinks of the tarball: path components from site-packages -> link target.
Links = dict[tuple[str, ...], str]
# Validated members: path components from site-packages, and the member.
Checked = list[tuple[list[str], tarfile.TarInfo]]


def resolve(parts: Sequence[str], links: Links) -> list[str]:
    """Resolves a path (components from site-packages) through the tarball's `links`.

    Components not in the tarball are taken as real directories: they belong to wheels,
    which carry no symlinks. Raises ValueError when the path leaves site-packages, goes
    through an absolute link, or loops.
    """
    resolved: list[str] = []
    pending = list(parts)
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                raise ValueError("leads outside site-packages")
            resolved.pop()
            continue
        resolved.append(part)
        target = links.get(tuple(resolved))
        if target is None:
            continue
        hops += 1
        if hops > MAX_LINK_HOPS:
            raise ValueError("is part of a symlink loop")
        if target.startswith("/"):
            raise ValueError("goes through an absolute symlink")
        resolved.pop()
        pending = target.split("/") + pending
    return resolved


def validate_members(
    members: Iterable[tarfile.TarInfo],
    platform_name: str,
    tarball: str = "the devel tarball",
    dist_name: str = "rocm-sdk-devel",
) -> tuple[Checked, Links]:
    """Checks every member; returns `([(parts, member)] in tarball order, {parts: link})`.

    Raises UnsafeTarballError naming the first bad member.
    """
    checked: Checked = []
    links: Links = {}
    seen = set()

    def refuse(member: tarfile.TarInfo, reason: str) -> UnsafeTarballError:
        return UnsafeTarballError(tarball, member.name, reason, dist_name)

    for member in members:
        try:
            parts = split_member_name(member.name)
        except ValueError as error:
            raise refuse(member, str(error)) from None
        if parts[0] != platform_name:
            raise refuse(member, "is not under %s/" % platform_name)
        if not (member.isdir() or member.isfile() or member.issym()):
            raise refuse(member, "is neither a file, a directory nor a symlink")
        key = tuple(parts)
        if key in seen:
            raise refuse(member, "appears twice")
        seen.add(key)
        if member.issym():
            if not member.linkname:
                raise refuse(member, "is a symlink with an empty target")
            if member.linkname.startswith("/"):
                raise refuse(member, "is an absolute symlink (-> %s)" % member.linkname)
            links[key] = member.linkname
        checked.append((parts, member))
    files = {tuple(parts) for parts, member in checked if member.isfile()}
    for parts, member in checked:
        for depth in range(1, len(parts)):
            if tuple(parts[:depth]) in files:
                raise refuse(member, "lies under the file %s" % "/".join(parts[:depth]))
            if tuple(parts[:depth]) in links:
                raise refuse(member, "lies under the symlink %s" % "/".join(parts[:depth]))
        if member.issym():
            try:
                target = resolve(parts[:-1] + member.linkname.split("/"), links)
            except ValueError as error:
                raise refuse(member, "is a symlink (-> %s) that %s" % (member.linkname, error)) from None
            if parts[: len(target)] == target:
                raise refuse(member, "is a symlink (-> %s) to a directory holding itself (a loop)" % member.linkname)
    return checked, links


def _remove(path: str) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def _extract_file(tar: tarfile.TarFile, member: tarfile.TarInfo, destination: str) -> None:
    """Writes one regular member. A separate function so tests can interrupt here."""
    source = tar.extractfile(member)
    if source is None:
        raise tarfile.ExtractError("member %r has no data" % member.name)
    mode = 0o755 if member.mode & 0o111 else 0o644
    with open(destination, "wb") as output:
        shutil.copyfileobj(source, output, 1024 * 1024)
    os.chmod(destination, mode)


def _place_link(site_dir: str, parts: list[str], member: tarfile.TarInfo, links: Links) -> None:
    """A symlink member: hard link for a file, symlink for a directory or a driver."""
    destination = os.path.join(site_dir, *parts)
    physical = os.path.join(site_dir, *resolve(parts[:-1] + member.linkname.split("/"), links))
    is_driver = len(parts) == 3 and parts[1] == "bin" and parts[2] in COMPILER_DRIVERS
    if sys.platform == "win32" and os.path.isdir(physical):
        # Windows: a symlink needs administrator rights; a junction does not (SPEC §7).
        import _winapi

        _winapi.CreateJunction(physical, destination)
        return
    if (is_driver or not os.path.isfile(physical)) and sys.platform != "win32":
        # Directories, drivers and (validated) dangling links stay symlinks.
        os.symlink(member.linkname, destination)
        return
    if not os.path.isfile(physical):
        return  # Windows: a dangling link has nothing to place.
    try:
        os.link(physical, destination)
    except OSError:
        # Hard links can be refused (another filesystem, some FUSE mounts): copy instead.
        shutil.copy2(physical, destination)


def expand_tarball(
    tarball_path: "Union[str, os.PathLike[str]]", site_dir: str, platform_name: str, dist_name: str = "rocm-sdk-devel"
) -> list[str]:
    """Validates, then unpacks `tarball_path` into `site_dir`; returns the new relpaths.

    A previous, interrupted expansion's partial tree is removed first: the platform
    directory only ever holds what this tarball puts there. The tarball is read whole
    before anything is written (DamagedTarballError), and an expansion that fails while
    writing removes what it wrote (ExpansionError naming the path).
    """
    tarball = str(tarball_path)
    tar, members = open_checked(tarball, dist_name)
    with tar:
        checked, links = validate_members(members, platform_name, tarball, dist_name)
        root = os.path.join(site_dir, platform_name)
        _remove(root)
        try:
            return _write_members(tar, checked, links, site_dir)
        except _WriteFailed as failed:
            _remove_quietly(root)
            raise ExpansionError(failed.path, failed.error, tarball) from None
        except BaseException:
            # Interrupted (KeyboardInterrupt) or a bug: still leave no partial tree behind.
            _remove_quietly(root)
            raise


class _WriteFailed(Exception):
    """Writing `path` failed with `error` (an OSError, or a read error of the tarball)."""

    def __init__(self, path: str, error: BaseException) -> None:
        super().__init__(path, error)
        self.path = path
        self.error = error


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        _remove(path)


def _write_members(tar: tarfile.TarFile, checked: Checked, links: Links, site_dir: str) -> list[str]:
    """Writes validated members; raises _WriteFailed naming the first path that failed."""
    created = []
    deferred_links: Checked = []
    for parts, member in checked:
        destination = os.path.join(site_dir, *parts)
        try:
            if member.isdir():
                os.makedirs(destination, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            if member.issym():
                deferred_links.append((parts, member))
            else:
                _extract_file(tar, member, destination)
        except READ_ERRORS as error:
            raise _WriteFailed(destination, error) from None
        created.append("/".join(parts))
    # Links last: a hard link needs its target file in place.
    for parts, member in deferred_links:
        try:
            _place_link(site_dir, parts, member, links)
        except OSError as error:
            raise _WriteFailed(os.path.join(site_dir, *parts), error) from None
    return created
