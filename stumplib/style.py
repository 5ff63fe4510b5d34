"""One plotting style for every figure in the book.

Call :func:`use` once at the top of a chapter. Estimators and branches have fixed colours
(:data:`COLORS`) so the same curve looks the same in every chapter.
"""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt

__all__ = ["use", "COLORS", "COLUMN_WIDTH", "figure", "panels", "label_panels"]

#: the text column's width in inches (about 690 CSS px at 96 px per inch): a figure drawn at this
#: width is shown at its natural size, so its fonts render at their point size
COLUMN_WIDTH = 7.0

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
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 110,
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
    "legend.fontsize": 9,
    "legend.frameon": False,
    "lines.linewidth": 1.8,
    "lines.markersize": 5,
    "font.family": "DejaVu Sans",
    "mathtext.fontset": "dejavusans",
    "axes.prop_cycle": mpl.cycler(color=["#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                         "#E69F00", "#56B4E9", "#F0E442", "#000000"]),
}


def use() -> None:
    """Apply the book's matplotlib style (headless-safe backend when no display is present)."""
    mpl.rcParams.update(_RC)


def figure(ncols: int = 1, nrows: int = 1, width: float = 6.4, height: float = 4.0, **kw):
    """``plt.subplots`` with the book's panel size (``width`` x ``height`` inches per panel)."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             constrained_layout=True, **kw)
    return fig, axes


def panels(n: int, width: float = 3.8, height: float = 2.9, **kw):
    """``n`` panels, at most two per row (the book's text width fits two): ``(fig, [axes])``.

    A last row with a single panel keeps the panel size (left-aligned); unused slots are removed.
    """
    ncols = min(n, 2)
    nrows = -(-n // 2)
    fig, axes = figure(ncols=ncols, nrows=nrows, width=width, height=height, squeeze=False, **kw)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]


def label_panels(axes) -> None:
    """Write (a), (b), ... in the top-left corner of each panel."""
    import numpy as np

    flat = list(np.ravel(np.asarray(axes, dtype=object)))
    for i, ax in enumerate(flat):
        ax.text(-0.12, 1.04, f"({chr(97 + i)})", transform=ax.transAxes, fontsize=11,
                fontweight="bold", va="bottom")
