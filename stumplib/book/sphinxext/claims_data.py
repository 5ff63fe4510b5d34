"""Claims as data: at the end of the build the landing page's claims (the rows of
:data:`stumplib.book.registry.REGISTRY`) are written into the site root as ``claims.json`` and
``claims.csv`` (:data:`CLAIM_FIELDS`), from the glued values of the executed notebooks.
``python -m stumplib.book compare A B`` compares two builds'.

**The tally.** :func:`claims_tally` counts the statuses of the claims that are separate tests
(every registry claim but those that follow from others, :attr:`stumplib.book.registry.Claim.
follows_from`): :data:`TALLY_NAMES`. A chapter cannot see the other chapters' statuses and the
landing page runs no code, so the count is made by this extension when the pages are written,
after every chapter has executed: the directive ``{claims-tally}`` (on the landing page) leaves a
placeholder that a ``doctree-resolved`` handler (:func:`resolve_tally`) replaces by a sentence
whose numbers carry the element ids ``claims_holds``, ``claims_fails``, ``claims_partly``,
``claims_undecided`` (the site test reads them); ``claims.json`` records the same counts under
``"summary"``."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sphinx.util import logging

from stumplib.book.sphinxext.executed import EXECUTED_DIR
from stumplib.book.sphinxext.stamp import build_stamp, read_json

logger = logging.getLogger(__name__)

#: the columns of ``claims.json`` / ``claims.csv``, in order (``follows_from``: the keys of the
#: claims a row is a consequence of, space-separated; such a row is not counted in the tally)
CLAIM_FIELDS = ("key", "paper", "claim", "chapter", "status", "statistic", "estimate", "lower",
                "upper", "target", "tolerance", "seed_agreement", "verdict", "profile",
                "code_version", "follows_from")

#: the tally's counts, by status word: the names of ``claims.json``'s summary and of the landing
#: page's element ids
TALLY_NAMES = {"holds": "claims_holds", "fails": "claims_fails", "partly": "claims_partly",
               "undecided": "claims_undecided"}


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
                     "code_version": code_version,
                     "follows_from": " ".join(getattr(c, "follows_from", ()))})
    return rows


def claims_tally(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many of the claims that are separate tests hold, fail, are partly met or undecided.

    Parameters
    ----------
    rows : list of dict
        :func:`claims_rows`' output (any registry).

    Returns
    -------
    dict
        ``{claims_holds, claims_fails, claims_partly, claims_undecided}`` (:data:`TALLY_NAMES`),
        ``claims_counted`` (the claims that are separate tests), ``claims_not_measured`` (of
        those, the ones with no glued status: a chapter that did not run or a key it does not
        glue) and ``claims_consequences`` (the rows that follow from others, not counted).
    """
    out = {name: 0 for name in TALLY_NAMES.values()}
    out.update(claims_counted=0, claims_not_measured=0, claims_consequences=0)
    for r in rows:
        if r.get("follows_from"):
            out["claims_consequences"] += 1
            continue
        out["claims_counted"] += 1
        name = TALLY_NAMES.get(str(r.get("status") or ""))
        if name is None:
            out["claims_not_measured"] += 1
        else:
            out[name] += 1
    return out


def tally_sentence(tally: dict[str, int]) -> list[tuple[str, str | None]]:
    """The landing page's tally as pieces of text, each number with the element id it carries.

    Parameters
    ----------
    tally : dict
        :func:`claims_tally`'s output.

    Returns
    -------
    list of (text, id or None)
        Concatenated they read: "Of the 23 claims tested, 14 hold, 3 fail, 1 is partly met and
        4 are undecided; 1 row follows from others and is not counted (marked †)."
    """
    parts: list[tuple[str, str | None]] = [(f"Of the {tally['claims_counted']} claims tested, ",
                                            None)]
    words = [("holds", "holds", "hold"), ("fails", "fails", "fail"),
             ("partly", "is partly met", "are partly met"),
             ("undecided", "is undecided", "are undecided")]
    for i, (status, one, many) in enumerate(words):
        sep = "" if i == 0 else (" and " if i == len(words) - 1 else ", ")
        k = tally[TALLY_NAMES[status]]
        parts += [(sep, None), (str(k), TALLY_NAMES[status]), (f" {one if k == 1 else many}",
                                                                None)]
    missing = tally.get("claims_not_measured", 0)
    if missing:
        parts.append((f"; {missing} could not be measured in this build", None))
    cons = tally.get("claims_consequences", 0)
    if cons:
        rows, verb = ("row follows", "is") if cons == 1 else ("rows follow", "are")
        parts.append((f"; {cons} {rows} from others and {verb} not counted (marked †)", None))
    parts.append((".", None))
    return parts


def write_claims(rows: list[dict[str, Any]], outdir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``rows`` as ``claims.json`` (``{"summary": claims_tally(rows), "claims": rows}``) and
    ``claims.csv`` (the rows) into ``outdir``.

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
    data = {"summary": claims_tally(rows), "claims": rows}
    js.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    with cs.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(CLAIM_FIELDS), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return js, cs


def executed_dir(app) -> Path:
    """Where this build's executed notebooks and their glue stores are: myst-nb's
    ``<outdir>/../jupyter_execute``, else the site's copy (:data:`EXECUTED_DIR`).

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The running application.

    Returns
    -------
    Path
    """
    site = Path(app.outdir)
    executed = site.parent / "jupyter_execute"  # myst-nb's glue stores, beside the notebooks
    return executed if executed.is_dir() else site / EXECUTED_DIR


def _registry(app):
    """The claims the build counts: Sphinx's ``stumpbook_claims_registry`` (``"module:name"``,
    a tiny test book's own), else :data:`stumplib.book.registry.REGISTRY`."""
    spec = getattr(app.config, "stumpbook_claims_registry", "") or ""
    if not spec:
        from stumplib.book.registry import REGISTRY

        return REGISTRY
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name or "REGISTRY")


def _write_claims(app, exception) -> None:
    """At the end of an HTML build: the claims of the executed notebooks into the site root."""
    if exception is not None or app.builder.format != "html":
        return
    site = Path(app.outdir)
    executed = executed_dir(app)
    stamp = getattr(app, "_stumpbook_stamp", None) or build_stamp()
    from stumplib.book.page import resolve_profile

    profile = stamp.get("profile") or "quick"
    try:
        profile = resolve_profile(profile)
    except ValueError:
        pass
    rows = claims_rows(executed, profile=profile, code_version=stamp.get("code_version", ""),
                       registry=_registry(app))
    js, _ = write_claims(rows, site)
    logger.info(f"stumpbook: wrote {len(rows)} claims to {js} and claims.csv")



try:  # a docutils node class must live at module level (doctrees are pickled)
    from docutils import nodes as _nodes

    class claims_tally_node(_nodes.General, _nodes.Element):
        """Placeholder of ``{claims-tally}``, replaced when the page is written
        (:func:`resolve_tally`)."""
except ImportError:  # pragma: no cover - docutils comes with Sphinx
    claims_tally_node = None  # type: ignore[assignment,misc]


def resolve_tally(app, doctree, docname: str) -> None:
    """``doctree-resolved``: replace each ``{claims-tally}`` placeholder by the tally of the
    executed chapters' statuses (every chapter has executed by the time pages are written), each
    number in an inline element with its :data:`TALLY_NAMES` id.

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The running application.
    doctree : docutils.nodes.document
        The resolved page.
    docname : str
        Its name.
    """
    from docutils import nodes

    found = list(doctree.findall(claims_tally_node))
    if not found:
        return
    tally = claims_tally(claims_rows(executed_dir(app), registry=_registry(app)))
    for node in found:
        para = nodes.paragraph(classes=["claims-tally"])
        para += nodes.strong(text="Tally. ")
        for text, ident in tally_sentence(tally):
            if ident is None:
                para += nodes.Text(text)
            else:
                span = nodes.inline(text=text, classes=["claims-count"])
                span["ids"] = [ident]
                para += span
        node.replace_self(para)


def connect(app) -> None:
    """Connect the claims files' writer (after the copy of the executed notebooks), the tally's
    node and its resolution when pages are written.

    Parameters
    ----------
    app : sphinx.application.Sphinx
        The application being set up.
    """
    app.add_config_value("stumpbook_claims_registry", "", "env")
    app.add_node(claims_tally_node)
    app.connect("doctree-resolved", resolve_tally)
    app.connect("build-finished", _write_claims, priority=600)  # after the copy (500)
