"""Two builds' claims compared: what changed status or moved beyond its interval.

``python -m stumplib.book compare A B`` (:mod:`stumplib.book.__main__`) prints it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np


def load_claims(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The claims of a build: ``claims.json`` itself, or a site folder holding it.

    Parameters
    ----------
    path : a ``claims.json`` file or a built site folder (``_build/html``).

    Returns
    -------
    list of dict
        One row per claim (:data:`stumplib.book.sphinxext.CLAIM_FIELDS`).
    """
    import json

    p = Path(path)
    if p.is_dir():
        p = p / "claims.json"
    if not p.is_file():
        raise FileNotFoundError(f"no claims.json at {p} (build the book, or give the file)")
    rows = json.loads(p.read_text(encoding="utf-8"))
    if isinstance(rows, dict):  # {"summary": tally, "claims": rows}; older builds: the list
        rows = rows.get("claims")
    if not isinstance(rows, list):
        raise ValueError(f"{p}: expected a list of claims (or an object with 'claims')")
    return rows


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def compare_claims(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> list[str]:
    """What changed between two builds' claims: a status, or an estimate that moved beyond its
    interval (the new estimate outside the old interval, or the old outside the new).

    Parameters
    ----------
    a, b : the rows of the older and the newer build (:func:`load_claims`).

    Returns
    -------
    list of str
        One line per changed claim (claims in only one build included); empty when none changed.
    """
    old = {r["key"]: r for r in a}
    new = {r["key"]: r for r in b}
    out = []
    for key in list(old) + [k for k in new if k not in old]:
        if key not in new or key not in old:
            out.append(f"{key}: only in {'the first' if key in old else 'the second'} build")
            continue
        r, s = old[key], new[key]
        what = []
        if (r.get("status") or "") != (s.get("status") or ""):
            what.append(f"status {r.get('status') or '-'} -> {s.get('status') or '-'}")
        e0, l0, h0 = (_num(r.get(k)) for k in ("estimate", "lower", "upper"))
        e1, l1, h1 = (_num(s.get(k)) for k in ("estimate", "lower", "upper"))
        if np.isfinite(e0) and np.isfinite(e1):
            outside = (np.isfinite(l0) and np.isfinite(h0) and not l0 <= e1 <= h0) or (
                np.isfinite(l1) and np.isfinite(h1) and not l1 <= e0 <= h1)
            if outside:
                what.append(f"estimate {e0:.4g} [{l0:.4g}, {h0:.4g}] -> {e1:.4g} [{l1:.4g}, {h1:.4g}]")
        elif np.isfinite(e0) != np.isfinite(e1):
            what.append(f"estimate {r.get('estimate') or '-'} -> {s.get('estimate') or '-'}")
        if what:
            out.append(f"{key} ({s.get('chapter', '')}): " + "; ".join(what))
    return out


