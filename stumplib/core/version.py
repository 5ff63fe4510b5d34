"""The library's code version: a hash of its source files.

Results are tied to the code that made them: the book's cache keys and build stamp use the whole
library (:func:`code_version` with no argument), a recorded sweep the packages its tasks run
(for example ``code_version("core", "phase")``), so that an edit of the book's prose does not
invalidate a recorded minimiser run while an edit of the objective does.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

#: the ``stumplib`` package folder
PACKAGE = Path(__file__).resolve().parents[1]


def code_version(*packages: str) -> str:
    """A hash of the ``stumplib`` source files under ``packages`` (default: all of them).

    Parameters
    ----------
    *packages : str
        Subpackage folders of ``stumplib`` (``"core"``, ``"stump"``, ``"phase"``, ``"book"``,
        ``"sweep"``); none: every source file of the library.

    Returns
    -------
    str
        16 hex digits.

    Raises
    ------
    ValueError
        A name that is not a subpackage folder of ``stumplib``.
    """
    roots = [PACKAGE]
    if packages:
        bad = [p for p in packages if not (PACKAGE / p).is_dir() or p.startswith(("_", "."))]
        if bad:
            have = sorted(q.name for q in PACKAGE.iterdir() if q.is_dir() and (q / "__init__.py").exists()
                          or q.is_dir() and any(q.glob("*.py")))
            raise ValueError(f"packages must name subpackages of stumplib ({', '.join(have)}); "
                             f"got {bad}")
        roots = [PACKAGE / p for p in sorted(set(packages))]
    h = hashlib.sha256()
    for root in roots:
        for p in sorted(root.rglob("*.py")):
            if "__pycache__" in p.parts:
                continue
            h.update(str(p.relative_to(PACKAGE)).encode())
            h.update(b"\0")
            h.update(p.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]
