"""One plotting style for every figure in the book.

Call :func:`use` once at the top of a chapter (:func:`stumplib.book.start` does). Estimators and
branches have fixed colours (:data:`COLORS`) so the same curve looks the same in every chapter.

Size and format: every figure is drawn at most :data:`COLUMN_WIDTH` inches wide (the text column)
and glued as vector graphics (:data:`FIGURE_FORMATS`: SVG for the web pages, PDF for the PDF
book; :func:`use` sets the inline backend's formats), so it is sharp at any screen density. An SVG
is shown at its natural size, 96 CSS px per inch (``COLUMN_WIDTH`` inches: 672 px), and a font of
``k`` points renders at ``k * 96 / 72`` px: the smallest figure text, :data:`MIN_FONT_PT` (11 pt,
14.7 px), is no smaller than the page's small print (the theme's ``small``, 0.9 rem = 14.4 px;
:data:`stumplib.book.figcheck.LEGIBLE_PT`). :func:`figure` and :func:`panels` never return an
empty panel.
"""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from stumplib.book.figcheck import legend_problems

#: the text column's width in inches: a figure drawn at this width is shown at its natural size
COLUMN_WIDTH = 7.0
#: pixels per inch at which figures are drawn (``figure.dpi``): display coordinates of the
#: figure checks and legend placement; the glued SVG is resolution-free
SCREEN_DPI = 98
#: the formats figures are glued in (the inline backend's ``figure_formats``): SVG, which the
#: HTML pages show (vector: sharp at any pixel density), and PDF, which the PDF book takes
FIGURE_FORMATS = ("svg", "pdf")
#: the margin (inches) left around a figure cropped to its drawing when glued
PAD_INCHES = 0.02
#: the smallest font of any figure text (legends, ticks, panel titles), in points: 14.7 CSS px
#: at the natural size of an SVG, above the page's small print (14.4 px)
MIN_FONT_PT = 11.0
#: axis labels and panel letters, in points
LABEL_PT = 12.0

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
    "axes.titlesize": MIN_FONT_PT,
    "axes.labelsize": LABEL_PT,
    "xtick.labelsize": MIN_FONT_PT,
    "ytick.labelsize": MIN_FONT_PT,
    "legend.fontsize": MIN_FONT_PT,
    "legend.title_fontsize": MIN_FONT_PT,
    "font.size": MIN_FONT_PT,
    # text as outlines (the page needs no font) and stable element ids (the same figure gives the
    # same SVG, so a rebuilt page does not differ for nothing)
    "svg.fonttype": "path",
    "svg.hashsalt": "stumplib",
    "legend.frameon": False,
    "lines.linewidth": 1.8,
    "lines.markersize": 5,
    "font.family": "DejaVu Sans",
    "mathtext.fontset": "dejavusans",
    "axes.prop_cycle": mpl.cycler(color=["#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                         "#E69F00", "#56B4E9", "#F0E442", "#000000"]),
}


def use() -> None:
    """Apply the book's matplotlib style (:data:`COLUMN_WIDTH`, fonts >= :data:`MIN_FONT_PT`) and,
    inside IPython (a chapter), glue figures in :data:`FIGURE_FORMATS` (:func:`inline_formats`).

    Parameters
    ----------
    None

    Returns
    -------
    None
    """
    mpl.rcParams.update(_RC)
    inline_formats()


def inline_formats(formats: tuple[str, ...] = FIGURE_FORMATS) -> bool:
    """Make the inline backend render figures (shown or glued) in ``formats``: set now on the
    running IPython shell and kept in the backend's configuration, so a backend activated later
    in the session keeps them. Outside IPython (a script, the tests) nothing happens.

    Parameters
    ----------
    formats : tuple of str
        Inline backend formats (``"svg"``, ``"pdf"``, ``"png"``, ``"retina"``).

    Returns
    -------
    bool
        ``True`` when a shell was configured.
    """
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import InlineBackend, set_matplotlib_formats
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    import os

    # the same figure gives the same SVG and PDF bytes (no creation date): a rerun is identical
    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")
    cfg = InlineBackend.instance()
    # cropped to the drawing with a thin margin (glue_value narrows a figure to the column first)
    cfg.print_figure_kwargs = {"bbox_inches": "tight", "pad_inches": PAD_INCHES}
    cfg.figure_formats = set(formats)
    set_matplotlib_formats(*formats)
    return True


def fit_column(fig: "mpl.figure.Figure", width: float = COLUMN_WIDTH, tries: int = 8) -> float:
    """Narrow a figure until what the page shows fits the text column: its tight bounding box
    (legends and labels outside the axes included) plus the print margin at most ``width``
    inches, so that the figure is shown 1:1 and its text keeps its point size. The fonts stay;
    the axes give way (constrained layout). A figure that already fits is left alone.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, laid out as it will be printed.
    width : float
        The column width in inches (:data:`COLUMN_WIDTH`: 672 CSS px).
    tries : int
        Layout passes at most (each narrows by the measured excess).

    Returns
    -------
    float
        The printed width in inches after the last pass (above ``width`` when what sticks out
        does not shrink with the figure, such as a row of figure-legend entries: the figure is
        then kept at its narrowest print, never below half its width).
    """
    def printed_width() -> float:
        fig.draw_without_rendering()  # the layout engine runs; any canvas (inline, Agg)
        return float(fig.get_tightbbox().width) + 2 * PAD_INCHES

    printed = printed_width()
    start, best = fig.get_figwidth(), (printed, fig.get_figwidth())
    for _ in range(tries):
        if printed <= width + 1e-3:
            return printed
        # by the excess, and half as much again: without a layout engine the axes shrink in
        # proportion and only part of a narrowing reaches what sticks out
        new = fig.get_figwidth() - 1.5 * (printed - width) - 0.01
        if new < 0.5 * start:  # what sticks out does not shrink with the figure: stop
            break
        fig.set_figwidth(new)
        printed = printed_width()
        if printed < best[0]:
            best = (printed, fig.get_figwidth())
    if best[0] > width + 1e-3:  # could not fit: keep the narrowest print found
        fig.set_figwidth(best[1])
        printed = printed_width()
    return printed


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
    """Write (a), (b), ... above the top-left corner of each panel, as the panel's left-aligned
    title: it starts at the panel's left edge, so it never reaches over the y label or the tick
    labels (which lie left of that edge), and constrained layout makes room for it above the
    panel. A centred title set before this call joins the letter on the left ("(b)  N = 64"), so
    the two never overlap; call it once the titles are set.

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
        letter = f"({chr(97 + i)})"
        title = ax.get_title(loc="center")
        if title:
            size = ax.title.get_fontsize()
            ax.set_title("", loc="center")
            ax.set_title(f"{letter}  {title}", loc="left", fontsize=size)
            continue
        ax.set_title(letter, loc="left", fontsize=LABEL_PT, fontweight="bold")


def _placement_free(kw: dict) -> None:
    """Drop a caller's ``loc`` and ``bbox_to_anchor``: the placement is chosen here."""
    kw.pop("loc", None)
    kw.pop("bbox_to_anchor", None)


#: where :func:`legend` tries to put a legend, in order, before it goes below the panel
LEGEND_LOCATIONS = ("upper left", "upper right", "lower left", "lower right", "center left",
                    "center right", "upper center", "lower center")


def legend(ax, *args, locations: tuple[str, ...] = LEGEND_LOCATIONS, below: bool = True,
           **kw):
    """A legend inside the panel where it covers no data, else below the panel (outside it).

    The legend is made now and placed by :func:`finish` (call it once the figure is complete):
    each location of ``locations`` is tried in turn on the drawn figure and kept when
    :func:`figure_problems` finds no data under the legend; when none is free, the legend goes
    below the panel (:func:`legend_below`; ``below=False``: the last location is kept anyway).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel.
    *args, **kw
        Passed to :meth:`matplotlib.axes.Axes.legend` (handles, labels, ``ncol``, ``title``...);
        ``loc`` and ``bbox_to_anchor`` are chosen here.
    locations : tuple of str
        The in-panel locations to try, in order of preference.
    below : bool
        Whether to fall back to a legend below the panel.

    Returns
    -------
    matplotlib.legend.Legend
        The legend, at its first location until :func:`finish` places it.
    """
    _placement_free(kw)
    leg = ax.legend(*args, loc=locations[0], **kw)
    leg._book_placement = (args, dict(kw), locations, below)  # for :func:`finish`
    return leg


def _place_inside(fig, ax, leg) -> bool:
    """Try the legend's in-panel locations on the drawn figure; ``True`` when one is free."""
    for loc in leg._book_placement[2]:
        leg.set_loc(loc)
        if not legend_problems(fig, ax, leg):
            return True
    return False


def finish(fig):
    """Place every legend made with :func:`legend`: in its panel where it covers no data, else
    below the panel; placed again when a legend below one panel reshapes the others. Returns
    ``fig``. Costs a few draws of the figure, and none when no legend was made with
    :func:`legend`.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A complete figure.

    Returns
    -------
    matplotlib.figure.Figure
        The same figure.
    """
    pending = [ax for ax in fig.axes
               if getattr(ax.get_legend(), "_book_placement", None) is not None]
    if not pending:
        if fig.legends:  # an "outside" figure legend settles on the second layout pass
            fig.canvas.draw()
        return fig
    for _ in range(4):
        fig.canvas.draw()
        moved = False
        for ax in pending:
            leg = ax.get_legend()
            if getattr(leg, "_book_below", False) or not legend_problems(fig, ax, leg):
                continue
            if _place_inside(fig, ax, leg):
                continue
            args, kw, _, below = leg._book_placement
            if below:
                new = legend_below(ax, *args, draw=False, **kw)
                new._book_placement = leg._book_placement
                moved = True
        if moved:
            _fit_legends_below(fig)
        else:
            break
    return fig


def _fit_legends_below(fig) -> None:
    """Make the figure taller until every legend below a panel lies inside it."""
    for _ in range(3):
        fig.canvas.draw()
        short = max((fig.bbox.y0 - ax.get_legend().get_window_extent().y0 for ax in fig.axes
                     if getattr(ax.get_legend(), "_book_below", False)), default=0.0)
        if short <= 0:
            return
        w, h = fig.get_size_inches()
        fig.set_size_inches(w, h + (short + 4) / fig.dpi)


def legend_below(ax, *args, draw: bool = True, **kw):
    """A legend below the panel, under its x label, centred (constrained layout makes room).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel.
    *args, **kw
        Passed to :meth:`matplotlib.axes.Axes.legend` (``ncol`` defaults to 1).
    draw : bool
        Draw the figure first (the x label's height is read from the drawn panel) and make the
        figure taller if the legend does not fit; ``False`` when the figure was just drawn.

    Returns
    -------
    matplotlib.legend.Legend
        The legend placed.
    """
    from matplotlib.transforms import offset_copy

    _placement_free(kw)
    kw.setdefault("ncol", 1)
    fig = ax.figure
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    if draw:
        fig.canvas.draw()
    below = ax.get_window_extent().y0 - ax.get_tightbbox().y0  # x label and ticks, pixels
    pts = below * 72.0 / fig.dpi + 2.0
    tr = offset_copy(ax.transAxes, fig=fig, y=-pts, units="points")
    leg = ax.legend(*args, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=tr,
                    **kw)
    leg._book_below = True
    if draw:
        _fit_legends_below(fig)
    return leg
