"""Claims as data: at the end of the build the landing page's claims (the rows of
:data:`stumplib.book.registry.REGISTRY`) are written into the site root as ``claims.json`` and
``claims.csv`` (:data:`CLAIM_FIELDS`), from the glued values of the executed notebooks.
``python -m stumplib.book compare A B`` compares two builds'."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sphinx.util import logging

from stumplib.book.sphinxext.executed import EXECUTED_DIR
from stumplib.book.sphinxext.stamp import build_stamp, read_json

logger = logging.getLogger(__name__)

__all__ = ["CLAIM_FIELDS", "glued_values", "claims_rows", "write_claims", "connect"]


#: the columns of ``claims.json`` / ``claims.csv``, in order
CLAIM_FIELDS = ("key", "paper", "claim", "chapter", "status", "statistic", "estimate", "lower",
                "upper", "target", "tolerance", "seed_agreement", "verdict", "profile",
                "code_version")


def _plain(value: str) -> Any:
    """A glued ``text/plain`` payload as a Python value (``"'holds'"`` -> ``"holds"``)."""
    import ast

    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value


def _output_value(o: Any) -> Any:
    data = (o or {}).get("data") or {}
    txt = next((v for k, v in data.items() if k.endswith("text/plain")), None)
    if txt is None:
        return None
    return _plain("".join(txt) if isinstance(txt, list) else txt)


def glued_values(notebook: str | os.PathLike) -> dict[str, Any]:
    """The values an executed notebook glued, ``name -> value`` (their ``text/plain`` form read back
    as numbers or strings; a figure or a missing file gives nothing).

    myst-nb keeps a build's glued values in a store next to the executed notebook
    (``<name>.glue.json``: name -> output); it is read when present, else the notebook's outputs
    (papermill records glued values there).

    Parameters
    ----------
    notebook : path of an executed ``.ipynb`` (its store, if any, beside it).

    Returns
    -------
    dict
        Glue name to value.
    """
    nb_path = Path(notebook)
    out: dict[str, Any] = {}
    store = read_json(nb_path.with_suffix(".glue.json"))
    if isinstance(store, dict):
        for name, o in store.items():
            v = _output_value(o)
            if v is not None:
                out[name] = v
        return out
    nb = read_json(nb_path) or {}
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []) or []:
            name = (o.get("metadata") or {}).get("scrapbook", {}).get("name")
            v = _output_value(o) if name is not None else None
            if v is not None:
                out[name] = v
    return out


def _number(v: Any) -> float | str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return ""
    return x if x == x else ""  # NaN: an empty field


def claims_rows(executed: str | os.PathLike, *, profile: str = "", code_version: str = "",
                registry=None) -> list[dict[str, Any]]:
    """One row per registered claim, from the executed notebooks under ``executed``.

    Parameters
    ----------
    executed : folder holding the executed notebooks as ``<chapter>.ipynb`` (the site's
        ``_executed`` or ``_build/jupyter_execute``).
    profile, code_version : the build's profile and :func:`stumplib.book.code_version`.
    registry : the claims (default :data:`stumplib.book.registry.REGISTRY`).

    Returns
    -------
    list of dict
        Rows with the keys :data:`CLAIM_FIELDS`; a value not glued is an empty field (``""``),
        never an error; numbers are floats.
    """
    if registry is None:
        from stumplib.book.registry import REGISTRY as registry
    cache: dict[str, dict[str, Any]] = {}
    rows = []
    for c in registry:
        if c.chapter not in cache:
            cache[c.chapter] = glued_values(Path(executed) / f"{c.chapter}.ipynb")
        g = cache[c.chapter]

        def get(suffix: str) -> Any:
            return g.get(f"{c.key}_{suffix}", "")

        num = getattr(c, "key_number", f"{c.key}_estimate")  # the number the row shows

        rows.append({"key": c.key, "paper": c.paper, "claim": c.claim, "chapter": c.chapter,
                     "status": get("status"), "statistic": c.statistic,
                     "estimate": _number(g.get(num, "")), "lower": _number(g.get(f"{num}_lo", "")),
                     "upper": _number(g.get(f"{num}_hi", "")), "target": c.target,
                     "tolerance": c.tolerance, "seed_agreement": get("seed_agreement"),
                     "verdict": get("verdict"), "profile": profile,
                     "code_version": code_version})
    return rows


def write_claims(rows: list[dict[str, Any]], outdir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``rows`` as ``claims.json`` (a list of objects) and ``claims.csv`` into ``outdir``.

    Parameters
    ----------
    rows : :func:`claims_rows`' output.
    outdir : the site root (``_build/html``).

    Returns
    -------
    (Path, Path)
        The JSON and CSV files.
    """
    import csv

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    js, cs = out / "claims.json", out / "claims.csv"
    js.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    with cs.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(CLAIM_FIELDS), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return js, cs


def _write_claims(app, exception) -> None:
    """At the end of an HTML build: the claims of the executed notebooks into the site root."""
    if exception is not None or app.builder.format != "html":
        return
    site = Path(app.outdir)
    executed = site.parent / "jupyter_execute"  # myst-nb's glue stores, beside the notebooks
    if not executed.is_dir():
        executed = site / EXECUTED_DIR
    stamp = getattr(app, "_stumpbook_stamp", None) or build_stamp()
    from stumplib.book.page import resolve_profile

    profile = stamp.get("profile") or "quick"
    try:
        profile = resolve_profile(profile)
    except ValueError:
        pass
    rows = claims_rows(executed, profile=profile, code_version=stamp.get("code_version", ""))
    js, _ = write_claims(rows, site)
    logger.info(f"stumpbook: wrote {len(rows)} claims to {js} and claims.csv")



def connect(app) -> None:
    """Connect the claims files' writer (after the copy of the executed notebooks).

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The application being set up.
    """
    app.connect("build-finished", _write_claims, priority=600)  # after the copy (500)
