"""Where a sweep's results came from: the command, the commit, the machine, the time."""
from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

#: the repository that holds ``stumplib``
REPOSITORY = Path(__file__).resolve().parents[2]


def now() -> str:
    """The current UTC time, ISO 8601 to the second.

    Returns
    -------
    str
        For example ``"2026-12-05T08:00:00+00:00"``.
    """
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def git_commit(root: str | os.PathLike | None = None, paths: Sequence[str] = ("stumplib",)) -> str:
    """The checked-out commit, marked when ``paths`` have uncommitted changes.

    Parameters
    ----------
    root : path-like or None, optional
        The repository (default :data:`REPOSITORY`).
    paths : sequence of str, optional
        Paths inside it whose uncommitted changes are noted (default the library).

    Returns
    -------
    str
        The full hash, with ``" (uncommitted changes in stumplib)"`` appended where ``paths`` differ
        from it; ``"unknown"`` outside a git checkout.
    """
    git = dict(cwd=str(REPOSITORY if root is None else root), capture_output=True, text=True)
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], **git).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *paths], **git).stdout.strip()
    except OSError:
        return "unknown"
    if not head:
        return "unknown"
    return head + (f" (uncommitted changes in {', '.join(paths)})" if dirty else "")


def machine() -> str:
    """This machine in one line.

    Returns
    -------
    str
        Host name, processor, the CPUs this process may use, the operating system and Python.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        cpus = os.cpu_count() or 1
    return (f"{platform.node()}: {platform.processor() or platform.machine()}, {cpus} CPUs, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}")


def command_line(script: str, argv: Sequence[str] | None = None) -> str:
    """The command that started this run, as one shell line.

    Parameters
    ----------
    script : str
        The script's path relative to the repository (``"scripts/phase_minimisers.py"``).
    argv : sequence of str or None, optional
        Its arguments (default ``sys.argv[1:]``).

    Returns
    -------
    str
        ``"python3 <script> <arguments>"``, each argument quoted for the shell where needed.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python3", script] + [shlex.quote(str(a)) for a in args])


def describe_run(script: str, argv: Sequence[str] | None = None) -> dict[str, str]:
    """The provenance of one driver's run, as a store records it.

    Parameters
    ----------
    script : str
        The script's path relative to the repository.
    argv : sequence of str or None, optional
        Its arguments (default ``sys.argv[1:]``).

    Returns
    -------
    dict of str
        ``command`` (:func:`command_line`), ``commit`` (:func:`git_commit`), ``machine``
        (:func:`machine`), ``started`` (:func:`now`) and ``pid``.
    """
    return {"command": command_line(script, argv), "commit": git_commit(), "machine": machine(),
            "started": now(), "pid": str(os.getpid())}
