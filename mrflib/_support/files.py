"""Durable file writes and advisory locks shared by recording and sweeps (POSIX).

* :func:`atomic_write` writes a temporary file in the target's folder, flushes and
  ``fsync``\\ s it, renames it over the target (``os.replace``) and ``fsync``\\ s the folder, so
  a reader sees either the old file or the complete new one, even after a crash.
* :func:`try_lock` / :func:`lock` take an exclusive ``fcntl.flock`` on a lock file. The lock
  belongs to the open file and vanishes with the process that holds it (a killed holder
  never leaves a stale lock); the lock file itself is never deleted, so two processes always
  lock the same inode.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_write", "sha256", "try_lock", "release", "lock", "holder"]

_UMASK = os.umask(0o022)  # read the process's umask once (at import, single-threaded)
os.umask(_UMASK)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically and durably (temp file, fsync, os.replace).

    Only a regular file (or a new name) is replaced: a directory, a device such as
    ``/dev/full`` or a named pipe at ``path`` is refused (``ValueError``), since renaming
    over it would replace the special file itself (as root, even in ``/dev``).
    """
    path = Path(path)
    if os.fspath(path) in ("", ".") or (path.exists() and not path.is_file()):
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise ValueError(f"{os.fspath(path)!r} is {kind}: only a regular file is replaced "
                         "by an atomic write")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_UMASK)  # mkstemp makes 0600; use normal rights
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def try_lock(path: str | Path, note: str = "") -> int | None:
    """Take the exclusive lock on ``path`` without waiting.

    Returns the open descriptor (keep it; :func:`release` ends the lock) or ``None`` when
    another open file holds it. On success the lock file's text is replaced by
    ``"<pid> <note>"`` so that a refused process can name the holder (:func:`holder`).
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {note}".strip().encode() + b"\n", 0)
    return fd


def release(fd: int) -> None:
    """End a lock taken with :func:`try_lock`."""
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def holder(path: str | Path) -> str:
    """What the lock file says about its holder (``"<pid> <note>"``), or ``"unknown"``."""
    try:
        text = Path(path).read_text().strip()
    except OSError:
        text = ""
    return text or "unknown"


@contextmanager
def lock(path: str | Path) -> Iterator[None]:
    """Hold the exclusive lock on ``path`` for the ``with`` block, waiting for it if needed."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
