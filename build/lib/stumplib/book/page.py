"""A chapter's set-up: profiles and settings, the shared parameters, tables and the shared data.

- :func:`start` validates the parameters every chapter shares (``profile``, ``device``, ``seed``,
  ``token``), resolves its settings, pins threads, starts the clock and applies the book style and
  float64.
- :func:`settings` resolves a profile's settings (with the chapter's parameter overrides) and
  :func:`show_settings` shows all three profiles side by side; :func:`table` shows rows as a
  Markdown table.
- :func:`shared_dir` finds the shared reference data (``$STUMPBOOK_SHARED``, else ``shared/`` next
  to the repository).

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

from stumplib.core.device import resolve_device
from stumplib.core.stats import Estimate
from stumplib.core.validation import check_choice, check_int
from stumplib.core.version import PACKAGE

__all__ = ["PROFILES", "ENV_VAR", "SHARED_ENV", "resolve_profile", "Chapter", "start", "settings",
           "show_settings", "table", "shared_dir"]

PROFILES = ("smoke", "quick", "full")
ENV_VAR = "STUMPBOOK_PROFILE"
SHARED_ENV = "STUMPBOOK_SHARED"


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
    from stumplib.book import style
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
    from stumplib.book.typeset import number, plain_numbers

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
    Headers and cells are typeset in the book's symbols (:func:`stumplib.book.typeset.typeset`;
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

    from stumplib.book.typeset import typeset_markdown as ts

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


