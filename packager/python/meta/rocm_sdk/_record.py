"""The RECORD files of installed distributions: find, lock, extend (SPEC §4).

Files we create after installation (the expanded devel tree, device links) are appended
to the RECORD of the distribution that owns them, with empty hash and size, so that
`pip uninstall` removes them. RECORD is also the lock: it exists for as long as the
distribution is installed and is never part of what we create.
"""

import contextlib
import csv
import importlib.metadata
import io
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Optional


def find_record(dist_name: str) -> Optional[Path]:
    """The RECORD file of an installed distribution, or None."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if file.name == "RECORD" and file.parent.name.endswith(".dist-info"):
            return Path(file.locate())
    return None


@contextlib.contextmanager
def locked(record_path: Path) -> Iterator[IO[str]]:
    """Holds an exclusive lock on `record_path` (blocking) and yields it opened for append."""
    with open(record_path, "a+", encoding="utf-8", newline="") as record:
        _lock(record)
        try:
            yield record
        finally:
            _unlock(record)


def _lock(record: IO[str]) -> None:
    if sys.platform == "win32":
        # Windows has no flock: lock one byte far past any RECORD's end (msvcrt.locking
        # locks from the current position; LK_LOCK retries for 10 s, so loop).
        import msvcrt

        record.seek(_WINDOWS_LOCK_OFFSET)
        while True:
            try:
                msvcrt.locking(record.fileno(), msvcrt.LK_LOCK, 1)
                return
            except OSError:
                continue
    else:
        import fcntl

        fcntl.flock(record.fileno(), fcntl.LOCK_EX)


def _unlock(record: IO[str]) -> None:
    if sys.platform == "win32":
        import msvcrt

        record.seek(_WINDOWS_LOCK_OFFSET)
        msvcrt.locking(record.fileno(), msvcrt.LK_UNLCK, 1)
    else:
        import fcntl

        fcntl.flock(record.fileno(), fcntl.LOCK_UN)


# The byte Windows processes lock: beyond where RECORD's text ever reaches.
_WINDOWS_LOCK_OFFSET = 1 << 30


def recorded_paths(record: IO[str]) -> set[str]:
    """The paths listed in an open RECORD file."""
    record.seek(0)
    return {row[0] for row in csv.reader(io.StringIO(record.read())) if row}


def append_paths(record: IO[str], relpaths: Iterable[str]) -> int:
    """Appends each of `relpaths` not yet listed; returns how many were added."""
    record.seek(0)
    content = record.read()
    existing = {row[0] for row in csv.reader(io.StringIO(content)) if row}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    added = 0
    for relpath in relpaths:
        if relpath in existing:
            continue
        existing.add(relpath)
        writer.writerow([relpath, "", ""])
        added += 1
    if added:
        record.seek(0, io.SEEK_END)
        # A RECORD written without a final newline must not swallow our first row.
        if content and not content.endswith("\n"):
            record.write("\n")
        record.write(buffer.getvalue())
        record.flush()
    return added
