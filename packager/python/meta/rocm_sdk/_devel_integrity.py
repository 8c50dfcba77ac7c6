"""Whether the devel tarball is whole before it is expanded, and what to say when not (SPEC §4).

A truncated or corrupted tarball used to expand what it could, count as expanded and be
deleted: the tree then missed files and nothing retried. So before anything is
written, the tarball's sha256 is checked against the devel wheel's RECORD, which the
installer verified when it unpacked the wheel, and the tar's own end (the end-of-archive
blocks after the last member) is checked as well, for RECORDs that carry no hash.

Owns: those checks and the errors a failed expansion raises. Does not own: member safety
and unpacking (`_devel_tree`), locking and RECORD updates (`_devel`, `_record`).
"""

import base64
import csv
import hashlib
import io
import lzma
import os
import tarfile
from typing import Optional, Union

# A path as the callers hold it: a `pathlib.Path` or a string.
PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["DamagedTarballError", "ExpansionError", "check_tarball", "open_checked", "reinstall_hint"]


def reinstall_hint(dist_name: str) -> str:
    """The command that puts a good devel package back (the family's own, when there are several)."""
    return "reinstall it with `pip install --force-reinstall --no-cache-dir %s`" % dist_name


def _printable(text: object) -> str:
    """`text` with control characters escaped, so a hostile name cannot forge output."""
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in str(text))


class DamagedTarballError(RuntimeError):
    """The devel tarball is not the one the package was built with; nothing was extracted."""

    def __init__(self, tarball: PathLike, dist_name: str, reason: str) -> None:
        self.tarball = str(tarball)
        self.dist_name = dist_name
        self.reason = reason
        super().__init__(
            "the devel tarball %s is damaged (%s); nothing was extracted: %s"
            % (_printable(tarball), _printable(reason), reinstall_hint(dist_name))
        )


class ExpansionError(RuntimeError):
    """Writing the devel tree failed; what was written has been removed."""

    def __init__(self, path: PathLike, error: BaseException, tarball: PathLike) -> None:
        self.path = str(path)
        self.error = error
        detail = error.strerror or str(error) if isinstance(error, OSError) else str(error)
        super().__init__(
            "cannot expand the devel tree: writing %s failed: %s; the partial tree was removed and "
            "%s is kept, so the next `rocm-sdk init` tries again once the cause is fixed (free space "
            "in %s if the disk is full)"
            % (_printable(path), _printable(detail), _printable(tarball), _printable(os.path.dirname(str(tarball))))
        )


def _recorded_digest(tarball: PathLike, record_path: PathLike) -> Optional[tuple[str, bytes, Optional[int]]]:
    """`(algorithm, digest bytes, size or None)` of the tarball's RECORD row, or None."""
    site_dir = os.path.dirname(os.path.dirname(str(record_path)))
    wanted = os.path.normcase(os.path.realpath(str(tarball)))
    with open(str(record_path), encoding="utf-8", newline="") as record:
        rows = list(csv.reader(io.StringIO(record.read())))
    for row in rows:
        if len(row) < 2 or not row[1]:
            continue
        if os.path.normcase(os.path.realpath(os.path.join(site_dir, row[0]))) != wanted:
            continue
        algorithm, _, encoded = row[1].partition("=")
        try:
            digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            size = int(row[2]) if len(row) > 2 and row[2] else None
        except ValueError:
            return None
        if algorithm in hashlib.algorithms_available:
            return algorithm, digest, size
    return None


def check_tarball(tarball: PathLike, record_path: PathLike, dist_name: str) -> None:
    """Raises DamagedTarballError unless the tarball matches its RECORD hash (when listed)."""
    recorded = _recorded_digest(tarball, record_path)
    if recorded is None:
        return
    algorithm, digest, size = recorded
    actual_size = os.stat(str(tarball)).st_size
    if size is not None and actual_size != size:
        raise DamagedTarballError(tarball, dist_name, "it has %d bytes, RECORD says %d" % (actual_size, size))
    hasher = hashlib.new(algorithm)
    with open(str(tarball), "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            hasher.update(block)
    if hasher.digest() != digest:
        raise DamagedTarballError(tarball, dist_name, "its %s does not match the devel package's RECORD" % algorithm)


# What reading a cut or garbled tarball raises, from tarfile and the decompressors.
READ_ERRORS = (tarfile.TarError, EOFError, lzma.LZMAError, OSError, ValueError)


def open_checked(tarball: PathLike, dist_name: str) -> tuple[tarfile.TarFile, list[tarfile.TarInfo]]:
    """Opens the tarball and reads every header; returns `(tar, members)`.

    Raises DamagedTarballError, never a traceback, when the file is not a tarball or ends
    before its end-of-archive blocks (a cut after a member's header passes tarfile itself).
    """
    tarball = str(tarball)
    tar: Optional[tarfile.TarFile] = None
    try:
        # Not a `with`: the open archive is returned, and the caller closes it.
        tar = tarfile.open(tarball, "r:*")  # noqa: SIM115
        members = tar.getmembers()
        # tarfile stops quietly where a header is missing; a whole tar has two zero blocks there.
        tar.fileobj.seek(tar.offset)
        end = tar.fileobj.read(2 * tarfile.BLOCKSIZE)
        if len(end) != 2 * tarfile.BLOCKSIZE or end.strip(b"\0"):
            raise DamagedTarballError(tarball, dist_name, "it ends before its end-of-archive marker")
        # Compressed: the stream must also decode to its own end marker.
        while tar.fileobj.read(1 << 20):
            pass
        for member in members:
            if member.isfile() and member.offset_data + member.size > tar.offset:
                raise DamagedTarballError(tarball, dist_name, "member %r is cut short" % member.name)
        return tar, members
    except DamagedTarballError:
        if tar is not None:
            tar.close()
        raise
    except READ_ERRORS as error:
        if tar is not None:
            tar.close()
        raise DamagedTarballError(
            tarball, dist_name, "it cannot be read: %s" % (error or type(error).__name__)
        ) from None
