"""Chapter services: profiles and settings, cached results, tables, glue and verdicts.

Every chapter uses these and nothing else for its plumbing:

- :func:`start` validates the parameters every chapter shares (``profile``, ``device``, ``seed``,
  ``token``), resolves its settings, pins threads, starts the clock and applies the book style and
  float64.
- :func:`settings` resolves a profile's settings (with the chapter's parameter overrides) and
  :func:`show_settings` shows all three profiles side by side.
- :func:`cached` (from :mod:`stumplib.core.cache`, re-exported here) ``(name, config, compute)`` reloads a result from ``results/`` when both its
  configuration *and* the library code that produced it (:func:`code_version`, a hash of every
  ``stumplib`` source file) are unchanged, and otherwise computes and stores it atomically.
  ``STUMPBOOK_CACHE=0`` turns reloading off (fresh computation, nothing reused). Results may be
  flat dicts of arrays or structured (dataclasses, nested dicts and lists): the cache flattens
  them itself. :func:`prune_results` (``python -m stumplib.core.book prune``) deletes the files of other
  code versions.
- :func:`shared_dir` finds the shared reference data (``$STUMPBOOK_SHARED``, else ``shared/`` next
  to the repository).
- :func:`glue_value`, :func:`glue_estimate` glue numbers (an estimate with its interval in one
  call, as ``name``, ``name_lo``, ``name_hi``); :func:`glue_verdict` glues a
  :class:`stumplib.core.verdicts.Verdict`;
  :func:`table` shows rows as a Markdown table.

Profiles: ``smoke`` (seconds; the tests), ``quick`` (the default; a 2-core CPU in minutes) and
``full`` (paper scale, meant for a GPU). The parameters cell of every chapter reads
``profile = os.environ.get("STUMPBOOK_PROFILE", "quick")``.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

# the cache's names, re-exported for the chapters and the command line below
from stumplib.core.cache import (CACHE_ENV, PACKAGE, RESULTS_ENV, cache_enabled,  # noqa: F401
                                 cached, code_version, prune_results, results_dir)
from stumplib.core.device import resolve_device
from stumplib.core.stats import Estimate
from stumplib.core.validation import check_choice, check_int

__all__ = ["PROFILES", "ENV_VAR", "resolve_profile", "Chapter", "start", "settings", "show_settings",
           "shared_dir", "SHARED_ENV", "glue_value", "glue_estimate", "glue_verdict", "table",
           "load_claims", "compare_claims"]

PROFILES = ("smoke", "quick", "full")
ENV_VAR = "STUMPBOOK_PROFILE"
SHARED_ENV = "STUMPBOOK_SHARED"


# ------------------------------------------------------------------------------------ set-up
def resolve_profile(profile: Any) -> str:
    """Validate a profile name (one of :data:`PROFILES`).

    Parameters
    ----------
    profile : str
        The profile name: ``"smoke"``, ``"quick"`` or ``"full"``; anything else raises
        ``ValueError`` (naming the environment variable :data:`ENV_VAR` too).

    Returns
    -------
    str
        The validated profile name.
    """
    return check_choice(f"profile (or the environment variable {ENV_VAR})", profile, PROFILES)


def _inline_figures() -> None:
    """Inside a Jupyter kernel, render figures inline (PNG) whatever ``MPLBACKEND`` says: a
    non-inline backend would glue figures as the text ``<Figure size ...>`` into the book."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the notebook stack
        return
    ip = get_ipython()
    if ip is not None and getattr(ip, "kernel", None) is not None:
        ip.run_line_magic("matplotlib", "inline")


@dataclass
class Chapter:
    """What :func:`start` resolved for a chapter: validated parameters, settings and the clock.

    Attributes
    ----------
    profile : ``"smoke"``, ``"quick"`` or ``"full"``. device : the torch device.
    seed : the chapter's seed. token : whether this is a token run (the profile's largest shapes with
    a token amount of work). S : the settings (the profile's, with overrides and token overrides).
    t0 : ``time.time()`` at the start.
    """

    profile: str
    device: torch.device
    seed: int
    token: bool
    S: dict[str, Any]
    t0: float

    def elapsed(self) -> float:
        """Seconds since :func:`start`.

        Returns
        -------
        float
            Wall-clock seconds elapsed since ``t0``.
        """
        return time.time() - self.t0


def start(profile: Any, device: Any, seed: Any = 0, *, token: Any = False,
          table: Mapping[str, Mapping[str, Any]] | None = None,
          token_overrides: Mapping[str, Any] | None = None, threads: int | None = None,
          **overrides: Any) -> Chapter:
    """Start a chapter: validate the shared parameters, resolve the settings, pin threads, start
    the clock, apply the book style and float64. Prints nothing (the page shows no plumbing).

    Parameters
    ----------
    profile, device, seed, token : the chapter's parameters of those names (see :data:`PROFILES`,
        :func:`stumplib.core.device.resolve_device`); ``seed >= 0``; ``token`` a bool.
    table : the chapter's settings ``{profile: {name: value}}`` (``None``: no settings).
    token_overrides : settings replaced when ``token`` is true.
    threads : torch intra-op threads to use (``None``: leave as is).
    **overrides : chapter parameters that override a setting of the same name when not ``None``.

    Returns
    -------
    Chapter
    """
    from stumplib.core import style
    from stumplib.core.validation import check_bool

    profile = resolve_profile(profile)
    dev = resolve_device(device)
    seed = check_int("seed", seed, minimum=0)
    token = check_bool("token", token)
    if threads is not None:
        torch.set_num_threads(check_int("threads", threads, minimum=1, maximum=1024))
    S: dict[str, Any] = {}
    if table is not None:
        S = settings(profile, table, **{**overrides, **(dict(token_overrides or {}) if token else {})})
    elif overrides:
        raise ValueError(f"overrides {', '.join(overrides)} given without a settings table")
    _inline_figures()
    style.use()
    torch.set_default_dtype(torch.float64)
    return Chapter(profile, dev, seed, token, S, time.time())


def settings(profile: str, table: Mapping[str, Mapping[str, Any]], **overrides: Any) -> dict[str, Any]:
    """The settings of ``profile`` from a chapter's table ``{profile: {name: value}}``, with every
    override that is not ``None`` (a chapter parameter left at ``None`` means "from the profile").
    An override naming no setting is an error.

    Parameters
    ----------
    profile : str
        One of :data:`PROFILES`.
    table : mapping
        The chapter's settings ``{profile: {name: value}}``.
    **overrides
        Setting values replacing the profile's; ``None`` keeps the profile's value, a name that
        is not a setting of ``table[profile]`` raises ``ValueError``.

    Returns
    -------
    dict
        ``{name: value}``: a copy of ``table[profile]`` with the overrides applied.
    """
    S = dict(table[resolve_profile(profile)])
    for k, v in overrides.items():
        if k not in S:
            raise ValueError(f"{k} is not a setting of this chapter; settings: {', '.join(S)}")
        if v is not None:
            S[k] = v
    return S


def _fmt(v: Any, floatfmt: str = ".4g") -> str:
    from stumplib.core.verdicts import number, plain_numbers

    if isinstance(v, Estimate):
        return plain_numbers(format(v, floatfmt))
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (float, np.floating)):
        return number(float(v), floatfmt)
    if isinstance(v, (list, tuple)) and len(v) > 8:
        return f"{len(v)} values, {_fmt(v[0])} to {_fmt(v[-1])}"
    return str(v).replace("|", "\\|")


def table(rows: Sequence[Mapping[str, Any]], *, floatfmt: str = ".4g", display: bool = True):
    """Rows (dicts with the same keys) as a Markdown table; displayed, and returned as Markdown.
    Headers and cells are typeset in the book's symbols (:func:`stumplib.core.verdicts.typeset`;
    code spans and math kept).

    Parameters
    ----------
    rows : sequence of mapping
        The rows, at least one; the first row's keys are the columns (a key missing from a later
        row gives an empty cell). Estimates, floats, booleans and long lists are formatted.
    floatfmt : str, optional
        Format spec of floats and estimates (default ``".4g"``).
    display : bool, optional
        Whether to display the table in the notebook (default ``True``).

    Returns
    -------
    IPython.display.Markdown
        The table as Markdown.
    """
    from IPython.display import Markdown, display as _display

    from stumplib.core.verdicts import typeset_markdown as ts

    if not rows:
        raise ValueError("rows must hold at least one row")
    cols = list(rows[0])
    head = [ts(str(c)).replace("|", "\\|") for c in cols]  # a header's | would split it
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(ts(_fmt(r.get(c, ""), floatfmt)) for c in cols) + " |"
              for r in rows]
    md = Markdown("\n".join(lines))
    if display:
        _display(md)
    return md


def show_settings(table_: Mapping[str, Mapping[str, Any]], profile: str,
                  descriptions: Mapping[str, str] | None = None):
    """All profiles' settings side by side, the running profile's column marked; one row a setting.

    Parameters
    ----------
    table_ : mapping
        The chapter's settings ``{profile: {name: value}}``; the rows follow the ``"quick"``
        profile's names (else the first profile's).
    profile : str
        The running profile, whose column header is marked "(this run)".
    descriptions : mapping, optional
        ``{name: meaning}``; when given, a "meaning" column is added.

    Returns
    -------
    IPython.display.Markdown
        The table, displayed and returned (see :func:`table`).
    """
    descriptions = descriptions or {}
    names = list(table_[PROFILES[1]] if PROFILES[1] in table_ else next(iter(table_.values())))
    rows = []
    for k in names:
        row = {"setting": f"`{k}`"}
        if descriptions:
            row["meaning"] = descriptions.get(k, "")
        for p in table_:
            row[f"**{p}** (this run)" if p == profile else p] = table_[p].get(k, "")
        rows.append(row)
    return table(rows)


def shared_dir() -> Path:
    """The project's shared data (published reference curves, seeds): ``$STUMPBOOK_SHARED`` if set,
    else ``shared/`` next to the repository. It may not exist (a plain clone has none): callers
    check and skip what needs it.

    Returns
    -------
    Path
    """
    env = os.environ.get(SHARED_ENV)
    return Path(env) if env else PACKAGE.parent.parent / "shared"


# ------------------------------------------------------------------------------------ glue
def _glue(name: str, value: Any) -> None:
    from myst_nb import glue

    glue(name, value, display=False)


def glue_value(name: str, value: Any, *, text: str | None = None) -> Any:
    """Glue one value (numbers as plain Python floats/ints, so the page formats them); returns it.
    With ``text`` (a format specification such as ``".1e"``) a number is also glued as
    ``<name>_text``, formatted and written in plain notation (``2.4 × 10⁻⁴``,
    :func:`stumplib.core.verdicts.number`): the page cites that where a format would print
    e-notation.
    A matplotlib figure is closed once glued and ``None`` is returned, so the cell does not show it a
    second time without its caption. A verdict or reason given as text (a name ending in
    ``_verdict`` or ``_reason``) is typeset in the book's symbols
    (:func:`stumplib.core.verdicts.typeset`), as a :class:`~stumplib.core.verdicts.Verdict` is.

    Parameters
    ----------
    name : str
        The glue name the page refers to.
    value : object
        The value to glue: a number, text, figure or any object ``myst_nb.glue`` accepts.
    text : str or None
        The format of ``<name>_text`` (``None``: no text form); only for a real number.

    Returns
    -------
    object or None
        The glued value (numpy scalars converted to Python numbers, verdict text typeset), or
        ``None`` for a matplotlib figure.
    """
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    if isinstance(value, str) and name.endswith(("_verdict", "_reason")):
        from stumplib.core.verdicts import typeset

        value = typeset(value)
    _glue(name, value)
    if text is not None:
        from stumplib.core.verdicts import number

        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"text= needs a real number; {name} is {type(value).__name__}")
        _glue(f"{name}_text", number(float(value), text))
    if type(value).__name__ == "Figure" and type(value).__module__.startswith("matplotlib"):
        import matplotlib.pyplot as plt

        plt.close(value)  # shown once, where the page places the glued figure with its caption
        return None  # a cell ending in glue_value(name, fig) must not display the figure again
    return value


def glue_estimate(name: str, est: Estimate) -> Estimate:
    """Glue an estimate as ``name`` (value), ``name_lo`` and ``name_hi``; returns it.

    Parameters
    ----------
    name : str
        The glue name of the value; the interval's ends get the suffixes ``_lo`` and ``_hi``.
    est : Estimate
        The estimate with its interval (``value``, ``lo``, ``hi``), glued as floats.

    Returns
    -------
    Estimate
        ``est`` itself.
    """
    glue_value(name, float(est.value))
    glue_value(f"{name}_lo", float(est.lo))
    glue_value(f"{name}_hi", float(est.hi))
    return est


def glue_verdict(claim: str, v: "Verdict", *, why: str | None = None) -> "Verdict":
    """Glue a :class:`~stumplib.core.verdicts.Verdict` for the claim ``claim`` under four names:
    ``<claim>_status`` (the plain word: holds, fails, undecided, partly; the landing page renders its
    badge from it), ``<claim>_verdict`` (``"Holds: sentence"``, for the chapter's verdict box),
    ``<claim>_reason`` (the sentence alone) and ``<claim>_why`` (the landing page's one-line reason:
    ``why``, or the sentence shortened by :func:`stumplib.core.verdicts.short_reason`). Returns ``v``.

    Parameters
    ----------
    claim : str
        The claim's name, the prefix of the glue names.
    v : Verdict
        The verdict; anything else raises ``TypeError``.
    why : str, optional
        The landing page's reason, where the shortened sentence would not say it.

    Returns
    -------
    Verdict
        ``v`` itself.
    """
    from stumplib.core.verdicts import Verdict, short_reason

    if not isinstance(v, Verdict):
        raise TypeError(f"v must be a stumplib.core.verdicts.Verdict; got {type(v).__name__}")
    glue_value(f"{claim}_status", v.status)
    glue_value(f"{claim}_verdict", v.text)
    glue_value(f"{claim}_reason", v.sentence)
    glue_value(f"{claim}_why", typeset_reason(why) if why is not None else short_reason(v.sentence))
    return v


def typeset_reason(text: str) -> str:
    """A reason written by hand, in the book's symbols (:func:`stumplib.core.verdicts.typeset`),
    ending with a full stop as the shortened verdict sentences do.

    Parameters
    ----------
    text : str
        The reason.

    Returns
    -------
    str
        The typeset reason.
    """
    from stumplib.core.verdicts import typeset

    text = typeset(text).rstrip()
    return text if text.endswith((".", "…")) else text + "."


def load_claims(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The claims of a build: ``claims.json`` itself, or a site folder holding it.

    Parameters
    ----------
    path : a ``claims.json`` file or a built site folder (``_build/html``).

    Returns
    -------
    list of dict
        One row per claim (:data:`stumplib.core.sphinxext.CLAIM_FIELDS`).
    """
    import json

    p = Path(path)
    if p.is_dir():
        p = p / "claims.json"
    if not p.is_file():
        raise FileNotFoundError(f"no claims.json at {p} (build the book, or give the file)")
    rows = json.loads(p.read_text(encoding="utf-8"))
    if not isinstance(rows, list):
        raise ValueError(f"{p}: expected a list of claims")
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m stumplib.core.book prune [--dry-run]``: delete the results files of other code versions
    (see :func:`prune_results`) and list them. ``python -m stumplib.core.book compare A B``: the
    claims whose status changed or whose estimate moved beyond its interval between two builds
    (``A``, ``B``: ``claims.json`` files or built site folders; :func:`compare_claims`).

    Parameters
    ----------
    argv : the command-line arguments (``None``: ``sys.argv[1:]``).

    Returns
    -------
    int : the exit status.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m stumplib.core.book",
                                     description="Maintenance of the results cache; comparison "
                                                 "of two builds' claims.")
    sub = parser.add_subparsers(dest="command", required=True)
    prune = sub.add_parser("prune", help="delete results files made by other versions of stumplib")
    prune.add_argument("--dry-run", action="store_true", help="only list them")
    comp = sub.add_parser("compare", help="claims whose status or estimate changed between builds")
    comp.add_argument("a", help="claims.json of the first build, or its site folder")
    comp.add_argument("b", help="claims.json of the second build, or its site folder")
    args = parser.parse_args(argv)
    if args.command == "compare":
        changed = compare_claims(load_claims(args.a), load_claims(args.b))
        for line in changed:
            print(line)
        print(f"{len(changed)} of {len(load_claims(args.b))} claims changed" if changed
              else "no claim changed its status or moved its estimate beyond its interval")
        return 0
    gone = prune_results(dry_run=args.dry_run)
    size = sum(p.stat().st_size for p in gone if p.exists()) if args.dry_run else None
    for p in gone:
        print(p)
    verb = "would delete" if args.dry_run else "deleted"
    extra = f" ({size / 1e6:.1f} MB)" if size is not None else ""
    print(f"{verb} {len(gone)} files under {results_dir()}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
