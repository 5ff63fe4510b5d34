"""The committed runs the book reads: where they are, and the seed audit.

The heavy runs (chapter 6's minimisers and flat window, the seed audit) are executed outside the
book by the scripts in ``scripts/`` and committed with their commands, commits and parameters.
The book reads them from :func:`runs_dir`: ``$STUMPBOOK_RUNS`` when set, else ``scripts/`` next to
the ``stumplib`` package (a source checkout). An installed ``stumplib`` (``pip install .``) has no
such folder: set ``STUMPBOOK_RUNS`` to a checkout's ``scripts/`` (or pass a path), and a reader
returns its "no run" value where the file is absent.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stumplib.core.version import PACKAGE

__all__ = ["RUNS_ENV", "AUDIT_NAME", "runs_dir", "run_file", "read_audit"]

RUNS_ENV = "STUMPBOOK_RUNS"
#: the seed audit's file name (``scripts/seed_audit.py`` writes it)
AUDIT_NAME = "SEED_AUDIT.json"


def runs_dir() -> Path:
    """Where the committed runs are.

    Returns
    -------
    Path
        ``$STUMPBOOK_RUNS`` when set, else ``scripts/`` next to the ``stumplib`` package (it may
        not exist: an installed package has none).
    """
    env = os.environ.get(RUNS_ENV)
    return Path(env) if env else PACKAGE.parent / "scripts"


def run_file(name: str) -> Path:
    """The path of the committed run ``name`` under :func:`runs_dir`.

    Parameters
    ----------
    name : str
        A file name (``"SEED_AUDIT.json"``).

    Returns
    -------
    Path
    """
    return runs_dir() / name


def read_audit(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The seed audit (``{}`` when there is none): ``{"commit", "profile", "seeds", "claims":
    {key: {"status": [...], ...}}, ...}``.

    Parameters
    ----------
    path : str, os.PathLike or None
        The audit's JSON file; ``None`` reads :data:`AUDIT_NAME` under :func:`runs_dir`.

    Returns
    -------
    dict[str, Any]
        The parsed JSON, or ``{}`` when the file does not exist.
    """
    p = Path(path) if path is not None else run_file(AUDIT_NAME)
    if not p.is_file():
        return {}
    return json.loads(p.read_text())
