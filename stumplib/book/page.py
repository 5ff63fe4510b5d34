"""A chapter's set-up: profiles and settings, the shared parameters and tables.

- :func:`start` refuses a parameter name the chapter does not have (:func:`check_parameters`),
  validates the parameters every chapter shares (``profile``, ``device``, ``seed``, ``token``),
  resolves its settings, pins threads, starts the clock and applies the book style and float64.
- :func:`settings` resolves a profile's settings (with the chapter's parameter overrides) and
  :func:`show_settings` shows all three profiles side by side; :func:`table` shows rows as a
  Markdown table.

Nothing a chapter reads lives outside the repository: chapter 6's published reference curves ship
with the package (:func:`stumplib.book.studies.published.reference_file`).

Profiles: ``smoke`` (seconds; the tests), ``quick`` (the default; a 2-core CPU in minutes) and
``full`` (paper scale, meant for a GPU). The parameters cell of every chapter reads
``profile: str = os.environ.get("STUMPBOOK_PROFILE", "quick")``; each parameter is a line
``name: type = value  # meaning``, which ``papermill --help-notebook`` lists.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from stumplib.core.device import resolve_device
from stumplib.core.stats import Estimate
from stumplib.core.validation import check_choice, check_int

PROFILES = ("smoke", "quick", "full")
ENV_VAR = "STUMPBOOK_PROFILE"
#: the first line of the cell papermill injects after the parameters cell (its ``comment``)
_INJECTED_MARK = "# Parameters"


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


def _assigned(src: str) -> list[str] | None:
    """Names a cell assigns at top level, in order (``None``: not Python)."""
    import ast

    try:
        body = ast.parse(src).body
    except SyntaxError:
        return None
    names: list[str] = []
    for node in body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        names += [t.id for t in targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def _cell_history() -> list[str]:
    """The sources of the cells the running IPython kernel executed, in order ([] outside one)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the notebook stack
        return []
    ip = get_ipython()
    return list(ip.history_manager.input_hist_raw) if ip is not None else []


def check_parameters(history: Sequence[str] | None = None) -> None:
    """Refuse a parameter the chapter does not have, such as a misspelt ``papermill -p`` name.

    Papermill injects the parameters it is given as a cell of assignments that opens with the
    comment ``# Parameters``, right after the cell tagged ``parameters``, and only warns about a name
    that cell does not define; the chapter would then run, at length, with the default of the
    parameter meant. Every name the injected cell assigns must be assigned in the parameters cell
    (the cell executed just before it). Nothing is checked when no such cell was executed (the book
    build, a plain kernel).

    Parameters
    ----------
    history : sequence of str, optional
        The sources of the executed cells, in order (IPython's ``In``); ``None``: the running
        kernel's (none outside a kernel).

    Raises
    ------
    ValueError
        ``unknown parameter 'name'; valid names: ...``, naming every unknown name (with the
        closest valid name when one is close) and the parameters cell's names in its order.
    """
    import difflib

    cells = list(_cell_history() if history is None else history)
    for k in range(len(cells) - 1, 0, -1):
        src = cells[k] or ""
        if src.lstrip().split("\n", 1)[0].strip() != _INJECTED_MARK:
            continue
        given, valid = _assigned(src), _assigned(cells[k - 1] or "")
        if not given or not valid:
            return
        unknown = [n for n in given if n not in valid]
        if unknown:
            what = ", ".join(repr(n) + "".join(
                f" (did you mean {m!r}?)" for m in difflib.get_close_matches(n, valid, 1))
                for n in unknown)
            raise ValueError(f"unknown parameter{'s' if len(unknown) > 1 else ''} {what}; "
                             f"valid names: {', '.join(valid)}")
        return


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
    """Start a chapter: refuse an unknown parameter name (:func:`check_parameters`), validate the
    shared parameters, resolve the settings, pin threads, start the clock, apply the book style and
    float64, and install the book's results cache as :func:`stumplib.core.memo.remember`'s store
    (:func:`stumplib.book.cache.install`: importing :mod:`stumplib.book` installs nothing). Prints
    nothing (the page shows no plumbing).

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
    from stumplib.book import cache, style
    from stumplib.core.validation import check_bool

    check_parameters()
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
    cache.install()
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
