"""One plotting style for every figure in the book.

Call :func:`use` once at the top of a chapter (:func:`stumplib.core.book.start` does). Estimators and
branches have fixed colours (:data:`COLORS`) so the same curve looks the same in every chapter.

Size: every figure is drawn at most :data:`COLUMN_WIDTH` inches wide (the text column) and shown at
:data:`SCREEN_DPI`, so a figure of the column's width is shown at its natural size (about 690 CSS
px) and a font of ``k`` points renders at ``k * SCREEN_DPI / 72`` px, never shrunk. Fonts are at
least 9 pt. :func:`figure` and :func:`panels` never return an empty panel.
"""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt

__all__ = ["use", "COLORS", "COLUMN_WIDTH", "SCREEN_DPI", "MIN_FONT_PT", "figure", "panels",
           "label_panels"]

#: the text column's width in inches: a figure drawn at this width is shown at its natural size
COLUMN_WIDTH = 7.0
#: pixels per inch of the figures as glued into the pages (``figure.dpi``, used by the inline
#: backend): ``COLUMN_WIDTH * SCREEN_DPI`` is about 690 px, the text column at 1280 px
SCREEN_DPI = 98
#: the smallest font of any figure text (legends, ticks), in points
MIN_FONT_PT = 9.0

#: fixed colours for recurring curves (colour-blind-safe Okabe-Ito palette)
COLORS = {
    "attention": "#0072B2",
    "one-head": "#0072B2",
    "population": "#000000",
    "reflected": "#E69F00",
    "symmetrized": "#009E73",
    "boundary-aware": "#CC79A7",
    "min positive": "#56B4E9",
    "max negative": "#E69F00",
    "midpoint": "#D55E00",
    "Bayes": "#7F7F7F",
    "semantic": "#0072B2",
    "positional": "#D55E00",
    "linear": "#7F7F7F",
    "fit": "#D55E00",
    "beta small": "#56B4E9",
    "beta mid": "#0072B2",
    "beta large": "#000000",
    "gd": "#009E73",
}

_RC = {
    "figure.figsize": (COLUMN_WIDTH, 4.0),
    "figure.dpi": SCREEN_DPI,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 11,
    "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5,
    "legend.fontsize": MIN_FONT_PT,
    "legend.frameon": False,
    "lines.linewidth": 1.8,
    "lines.markersize": 5,
    "font.family": "DejaVu Sans",
    "mathtext.fontset": "dejavusans",
    "axes.prop_cycle": mpl.cycler(color=["#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                         "#E69F00", "#56B4E9", "#F0E442", "#000000"]),
}


def use() -> None:
    """Apply the book's matplotlib style (:data:`COLUMN_WIDTH`, :data:`SCREEN_DPI`, fonts >= 9 pt).

    Parameters
    ----------
    None

    Returns
    -------
    None
    """
    mpl.rcParams.update(_RC)


def _fit_width(width: float | None, ncols: int) -> float:
    """Per-panel width: ``COLUMN_WIDTH / ncols`` by default; a wider request is scaled down so the
    row fits the column."""
    if width is None:
        return COLUMN_WIDTH / ncols
    if not (width > 0):
        raise ValueError(f"width must be a positive number of inches; got {width!r}")
    return min(float(width), COLUMN_WIDTH / ncols)


def figure(ncols: int = 1, nrows: int = 1, width: float | None = None, height: float = 3.2,
           **kw):
    """``plt.subplots`` sized for the text column.

    Parameters
    ----------
    ncols, nrows : the panel grid.
    width : width of one panel in inches; ``None`` (default) shares :data:`COLUMN_WIDTH` equally.
        A row wider than the column is scaled down to it.
    height : height of one panel in inches.
    **kw : passed to :func:`matplotlib.pyplot.subplots` (``sharex``, ``squeeze``, ...).

    Returns
    -------
    (fig, axes) as :func:`matplotlib.pyplot.subplots` returns them (constrained layout).
    """
    if ncols < 1 or nrows < 1:
        raise ValueError(f"ncols and nrows must be at least 1; got {ncols}, {nrows}")
    w = _fit_width(width, ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, height * nrows),
                             constrained_layout=True, **kw)
    return fig, axes


def panels(n: int, width: float | None = None, height: float = 2.9, **kw):
    """``n`` panels, at most two per row, filling the text column: ``(fig, [axes])``.

    With an odd ``n`` the last panel spans the whole last row, so no quadrant is left empty.

    Parameters
    ----------
    n : number of panels (>= 1).
    width : width of one panel in a full row, inches; ``None`` (default) is half the column.
    height : height of one row, inches.
    **kw : passed to :meth:`matplotlib.figure.Figure.add_subplot` (e.g. ``projection``).

    Returns
    -------
    (fig, list of n axes), in reading order.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1; got {n}")
    ncols = min(n, 2)
    nrows = -(-n // 2)
    w = _fit_width(width, ncols)
    fig = plt.figure(figsize=(w * ncols, height * nrows), constrained_layout=True)
    gs = fig.add_gridspec(nrows, ncols)
    axes = []
    for i in range(n):
        r, c = divmod(i, ncols)
        last_alone = i == n - 1 and n % 2 == 1 and ncols == 2
        axes.append(fig.add_subplot(gs[r, :] if last_alone else gs[r, c], **kw))
    return fig, axes


def label_panels(axes) -> None:
    """Write (a), (b), ... in the top-left corner of each panel.

    Parameters
    ----------
    axes : an axes, or an array or list of them (in reading order).

    Returns
    -------
    None
    """
    import numpy as np

    flat = list(np.ravel(np.asarray(axes, dtype=object)))
    for i, ax in enumerate(flat):
        ax.text(-0.12, 1.04, f"({chr(97 + i)})", transform=ax.transAxes, fontsize=11,
                fontweight="bold", va="bottom")
