"""The files a sweep's driver writes: its lock, and every file through an atomic replace.

- :class:`DriverLock`: ``<store>.lock``, held with ``fcntl.flock`` (exclusive, not waiting) from
  the moment a driver opens a store until it closes it; the file names its holder (pid, host,
  start, command) for the driver that is refused. The kernel releases the lock when the holder
  dies, however it dies; ``flock`` works across the hosts of an NFS mount (Linux emulates it with
  byte-range locks there).
- :func:`atomic_write`: a temporary file next to the target, flushed to disk, renamed over it
  (``os.replace``): a reader sees the old file or the new one, never half of one.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
from pathlib import Path
from typing import IO, Callable

from stumplib.sweep.provenance import now


class StoreLocked(RuntimeError):
    """Another driver holds the store's lock."""


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> None:
    """Write a file through a temporary file next to it, flushed to disk, then renamed over it.

    Parameters
    ----------
    path : path-like
        The file to (re)write.
    write : callable
        Called with the temporary file, open for binary writing.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


class DriverLock:
    """The exclusive lock ``<store>.lock`` of the one driver that writes a store.

    Parameters
    ----------
    store : path-like
        The store the lock guards.
    """

    def __init__(self, store: str | os.PathLike) -> None:
        self.path = Path(f"{store}.lock")
        self._fd: int | None = None

    def holder(self) -> str:
        """Who holds the lock, as its file says.

        Returns
        -------
        str
            ``"pid P on HOST since TIME (COMMAND)"``, or ``"unknown"`` when the file is unreadable.
        """
        try:
            h = json.loads(self.path.read_text())
            return f"pid {h['pid']} on {h['host']} since {h['since']} ({h['command']})"
        except (OSError, ValueError, KeyError, TypeError):
            return "unknown"

    def acquire(self, command: str = "") -> "DriverLock":
        """Take the lock or refuse at once.

        Parameters
        ----------
        command : str, optional
            This driver's command line, written into the lock file for a refused driver to read.

        Returns
        -------
        DriverLock
            This lock, held.

        Raises
        ------
        StoreLocked
            Another driver holds it; the message names the lock file and its holder.
        """
        if self._fd is not None:
            raise StoreLocked(f"{self.path} is already held by this driver")
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise StoreLocked(
                    f"{str(self.path)[:-5]} is being written by another driver (lock {self.path}: "
                    f"{self.holder()}); two drivers never write one store: wait for it to end, "
                    "or stop it (its finished tasks are kept) and resume") from None
            try:  # the previous holder may have removed the file between our open and flock
                current = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if current:
                break
            os.close(fd)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": now(),
                "command": command}
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode())
        os.fsync(fd)
        self._fd = fd
        return self

    def release(self) -> None:
        """Remove the lock file and release the lock (nothing when not held)."""
        if self._fd is None:
            return
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None
