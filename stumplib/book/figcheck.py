"""Figure checks: what a reader would stumble on in a figure, found in display coordinates.

:func:`figure_problems` is the check every chapter figure passes (``tests/test_figures.py``); the
per-legend check (:func:`legend_problems`) also serves :func:`stumplib.book.style.legend`, which
places a legend where no check fails.
"""
from __future__ import annotations

import numpy as np

#: CSS pixels per inch: an SVG figure of ``w`` inches is shown ``96 w`` px wide at its natural size
CSS_PX_PER_INCH = 96.0
#: the page's small print in CSS px: the theme's ``small`` (pydata-sphinx-theme
#: ``--pst-font-size-milli``, 0.9 rem of the 16 px body text), also the figure captions' size
SMALL_PRINT_PX = 14.4
#: the smallest font allowed in a figure, in points at the column width (:func:`figure_problems`):
#: the page's small print, ``SMALL_PRINT_PX * 72 / CSS_PX_PER_INCH`` = 10.8 pt
LEGIBLE_PT = SMALL_PRINT_PX * 72.0 / CSS_PX_PER_INCH
#: the pixel density a bitmap figure needs to be sharp on a high-DPI (2x) screen: twice the CSS
#: pixels it is shown at
MIN_BITMAP_DPI = 2 * CSS_PX_PER_INCH
#: vector formats of the inline backend (resolution-free)
VECTOR_FORMATS = ("svg", "pdf")


def _drawn_points(artist, ax) -> "np.ndarray":
    """Display coordinates ``(P, 2)`` of the finite data points of a line or collection, or of
    the vertices of an unfilled polygon (a step histogram)."""
    import numpy as np
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Polygon

    if isinstance(artist, Line2D):
        xy = np.asarray(artist.get_xydata(), dtype=float).reshape(-1, 2)
        tr = artist.get_transform()
    elif isinstance(artist, Polygon) and not artist.get_fill():
        xy = np.asarray(artist.get_xy(), dtype=float).reshape(-1, 2)
        tr = artist.get_transform()
    elif isinstance(artist, Collection):
        offs = np.asarray(artist.get_offsets(), dtype=float).reshape(-1, 2)
        paths = artist.get_paths()
        if len(offs) and (len(paths) <= 1):  # a scatter: its markers sit at the offsets
            xy, tr = offs, artist.get_offset_transform()
        else:  # line segments (error bars, streamlines)
            pts = [np.asarray(p.vertices, dtype=float).reshape(-1, 2) for p in paths]
            xy = np.concatenate(pts) if pts else np.empty((0, 2))
            tr = artist.get_transform()
    else:
        return np.empty((0, 2))
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    if not len(xy):
        return np.empty((0, 2))
    return np.asarray(tr.transform(xy), dtype=float).reshape(-1, 2)


def _segments(artist) -> list:
    """Polylines ``[(P_k, 2)]`` in display coordinates that ``artist`` draws (lines with a line
    style, line collections, step histograms); markers alone give none."""
    import numpy as np
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Polygon

    out = []
    if isinstance(artist, Line2D):
        if artist.get_linestyle() in ("None", "none", " ", "") or artist.get_linewidth() == 0:
            return out
        xy = np.asarray(artist.get_xydata(), dtype=float).reshape(-1, 2)
        out.append(artist.get_transform().transform(xy))
    elif isinstance(artist, Polygon) and not artist.get_fill():
        out.append(artist.get_transform().transform(np.asarray(artist.get_xy(), dtype=float)))
    elif isinstance(artist, LineCollection):
        tr = artist.get_transform()
        for p in artist.get_paths():
            v = np.asarray(p.vertices, dtype=float).reshape(-1, 2)
            if len(v) > 1:
                out.append(tr.transform(v))
    return out


def _clip(a, b, box) -> bool:
    """Whether any part of the segments ``a -> b`` (``(S, 2)`` each) lies inside ``box`` (``x0, y0,
    x1, y1``): Liang-Barsky clipping, vectorised."""
    import numpy as np

    x0, y0, x1, y1 = box
    d = b - a
    t0 = np.zeros(len(a))
    t1 = np.ones(len(a))
    ok = np.all(np.isfinite(a), 1) & np.all(np.isfinite(b), 1)
    for p, q in ((-d[:, 0], a[:, 0] - x0), (d[:, 0], x1 - a[:, 0]),
                 (-d[:, 1], a[:, 1] - y0), (d[:, 1], y1 - a[:, 1])):
        par = p == 0
        ok &= ~(par & (q < 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(par, 0.0, q / np.where(par, 1.0, p))
        t0 = np.where(~par & (p < 0), np.maximum(t0, r), t0)
        t1 = np.where(~par & (p > 0), np.minimum(t1, r), t1)
    return bool(np.any(ok & (t0 <= t1)))


def _crosses(artist, box, clip_box) -> bool:
    """Whether a data point or a drawn line of ``artist`` inside ``clip_box`` (the panel) lies in
    ``box`` (a legend's frame, display coordinates)."""
    inter = (max(box[0], clip_box[0]), max(box[1], clip_box[1]),
             min(box[2], clip_box[2]), min(box[3], clip_box[3]))
    if inter[0] >= inter[2] or inter[1] >= inter[3]:
        return False
    pts = _drawn_points(artist, None)
    if len(pts):
        inside = ((pts[:, 0] >= inter[0]) & (pts[:, 0] <= inter[2])
                  & (pts[:, 1] >= inter[1]) & (pts[:, 1] <= inter[3]))
        if inside.any():
            return True
    for poly in _segments(artist):
        if len(poly) > 1 and _clip(poly[:-1], poly[1:], inter):
            return True
    return False


def _plotted(ax) -> list:
    """The artists of a panel that show data: lines, markers, line collections (error bars,
    streamlines) and unfilled polygons (step histograms); shaded bands and spans are background."""
    from matplotlib.collections import LineCollection, PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Polygon

    return [a for a in ax.get_children()
            if a.get_visible() and (isinstance(a, (Line2D, LineCollection, PathCollection))
                                    or (isinstance(a, Polygon) and not a.get_fill()))]


def _apparent(h) -> tuple[float, float, float]:
    """The colour a line's legend handle shows on white: its RGB blended with white by its alpha
    and, for a line thinner than 1.5 pt, by its width (an anti-aliased thin line renders lighter: a
    0.6 pt black line at alpha 0.7 shows the grey of a 1 pt line of grey 0.6)."""
    from matplotlib.colors import to_rgba

    r, g, b, a = to_rgba(h.get_color())
    a *= 1.0 if h.get_alpha() is None else float(h.get_alpha())
    cover = a * min(1.0, float(h.get_linewidth()) / 1.5)
    return tuple(1.0 - (1.0 - v) * cover for v in (r, g, b))


def _look_alike(leg) -> tuple[str, str] | None:
    """Two labels of ``leg`` whose line handles look the same, so the reader cannot tell their data
    apart: the same line style and marker (and marker fill) and, for lines, the same apparent
    colour on white (:func:`_apparent`: colour, transparency and width together, within 0.06 per
    channel); for markers alone, the same colour. ``None`` when every entry differs."""
    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D

    handles = getattr(leg, "legend_handles", None) or getattr(leg, "legendHandles", [])
    seen: list[tuple[tuple, tuple | str, str]] = []
    for h, t in zip(handles, leg.get_texts()):
        if not isinstance(h, Line2D):
            continue
        fill = h.get_markerfacecolor()
        marker = str(h.get_marker())
        no_marker = marker in ("None", "none", "", " ")
        drawn = h.get_linestyle() not in ("None", "none", " ", "") and h.get_linewidth() > 0
        lw = float(h.get_linewidth())
        shape = (h.get_linestyle(), marker,
                 "none" if no_marker or (isinstance(fill, str) and fill == "none")
                 else to_hex(fill),
                 "thin" if lw < 1.5 else round(lw / 0.5))  # a thin line's width is its shade
        look = _apparent(h) if drawn else to_hex(h.get_color())
        for shape2, look2, name in seen:
            if shape2 != shape:
                continue
            same = (max(abs(u - v) for u, v in zip(look, look2)) <= 0.06 if drawn
                    else look == look2)
            if same:
                return name, t.get_text()
        seen.append((shape, look, t.get_text()))
    return None


def legend_problems(fig, owner, leg) -> list[str]:
    """:func:`figure_problems` for one legend; the figure must have been drawn.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The drawn figure.
    owner : matplotlib.axes.Axes or None
        The legend's panel, ``None`` for a figure legend.
    leg : matplotlib.legend.Legend
        The legend.

    Returns
    -------
    list of str
        What a reader would stumble on (empty: nothing).
    """
    axes = list(fig.axes)
    fb = fig.bbox
    out = []
    where = "figure legend" if owner is None else f"legend of panel {axes.index(owner) + 1}"
    bb = leg.get_window_extent()
    box = (bb.x0, bb.y0, bb.x1, bb.y1)
    if bb.x0 < fb.x0 - 1 or bb.y0 < fb.y0 - 1 or bb.x1 > fb.x1 + 1 or bb.y1 > fb.y1 + 1:
        out.append(f"{where} sticks out of the figure")
    labels = [t.get_text() for t in leg.get_texts()]
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        out.append(f"{where} lists {', '.join(map(repr, dup))} more than once")
    same = _look_alike(leg)
    if same:
        out.append(f"{where} draws {same[0]!r} and {same[1]!r} alike (colour, marker and line)")
    for ax in axes:
        if not ax.get_visible() or not ax.get_window_extent().overlaps(bb):
            continue
        ab = ax.get_window_extent()
        clip = (ab.x0, ab.y0, ab.x1, ab.y1)
        for art in _plotted(ax):
            if _crosses(art, box, clip):
                lab = art.get_label()
                name = repr(lab) if lab and not lab.startswith("_") else type(art).__name__
                out.append(f"{where} covers data of panel {axes.index(ax) + 1} ({name})")
                break
    return out


def _is_panel_letter(t) -> bool:
    import re

    return bool(re.fullmatch(r"\([a-z]\)(\s.*)?", t.get_text().strip(), re.S))


def _texts(fig) -> list:
    """The visible, non-empty texts of a drawn figure (tick labels, axis labels, titles,
    annotations, legend entries), each with its display box."""
    from matplotlib.text import Text

    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        try:
            bb = t.get_window_extent()
        except (RuntimeError, ValueError):
            continue
        if bb.width > 0 and bb.height > 0:
            out.append((t, bb))
    return out


def panel_letter_problems(fig) -> list[str]:
    """Panel letters (``(a)``, ``(b)``, ...) that a reader cannot read: over another text (an axis
    label, a tick label, a title, a legend entry) or outside the figure. The figure must have been
    drawn.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The drawn figure.

    Returns
    -------
    list of str
        One sentence per letter in the way (empty: none).
    """
    texts = _texts(fig)
    fb = fig.bbox
    out = []
    for t, bb in texts:
        if not _is_panel_letter(t):
            continue
        letter = t.get_text().strip()[:3]
        if bb.x0 < fb.x0 - 1 or bb.y0 < fb.y0 - 1 or bb.x1 > fb.x1 + 1 or bb.y1 > fb.y1 + 1:
            out.append(f"panel letter {letter} sticks out of the figure")
        for u, ub in texts:
            if u is t or _is_panel_letter(u):
                continue
            ox = min(bb.x1, ub.x1) - max(bb.x0, ub.x0)
            oy = min(bb.y1, ub.y1) - max(bb.y0, ub.y0)
            if ox > 1 and oy > 1:  # more than a pixel each way: the glyphs touch
                out.append(f"panel letter {letter} lies over the text {u.get_text()[:30]!r}")
                break
    return out


def figure_problems(fig) -> list[str]:
    """What a reader would stumble on in ``fig``, checked in display coordinates (empty: none).

    The figure is drawn first (constrained layout settles). Problems reported:

    - a legend's frame covers a _plotted data point, a line's vertex or a stretch of a drawn line
      (lines, error bars, streamlines, step histograms) of any panel it overlaps;
    - a legend lists a label twice, lists two entries drawn alike (colour, line and marker), or
      lists an artist with no finite data in its panel's view;
    - a legend sticks out of the figure;
    - a panel letter lies over another text (a y label, a tick label, a title) or outside the
      figure (:func:`panel_letter_problems`);
    - any text is smaller than :data:`LEGIBLE_PT` points (the page's small print,
      :data:`SMALL_PRINT_PX`) once the figure is shown at the column width (a figure wider than
      :data:`stumplib.book.style.COLUMN_WIDTH` is shrunk, its fonts with it).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure as a chapter glues it.

    Returns
    -------
    list of str
        One sentence per problem, naming the panel (by its position) and the label concerned.
    """
    import numpy as np
    from matplotlib.legend import Legend
    from matplotlib.text import Text

    fig.canvas.draw()
    out: list[str] = []
    axes = list(fig.axes)
    fb = fig.bbox
    from stumplib.book.style import COLUMN_WIDTH  # (style imports this module)

    scale = min(1.0, COLUMN_WIDTH / fig.get_size_inches()[0])

    legends = [(ax, ax.get_legend()) for ax in axes if ax.get_legend() is not None]
    legends += [(None, leg) for leg in fig.legends]
    for owner, leg in legends:
        out += legend_problems(fig, owner, leg)
    for ax in axes:
        if ax.get_legend() is None and not fig.legends:
            continue
        ab = ax.get_window_extent()
        for art in _plotted(ax):
            lab = art.get_label()
            if not lab or lab.startswith("_"):
                continue
            pts = _drawn_points(art, ax)
            inside = ((pts[:, 0] >= ab.x0 - 1) & (pts[:, 0] <= ab.x1 + 1)
                      & (pts[:, 1] >= ab.y0 - 1) & (pts[:, 1] <= ab.y1 + 1)) if len(pts) else []
            if not np.any(inside):
                out.append(f"panel {axes.index(ax) + 1}: legend entry {lab!r} has no drawn data")
        for cont in ax.containers:  # error bars: the label sits on the container
            lab = cont.get_label()
            if not lab or lab.startswith("_"):
                continue
            pts = [_drawn_points(a, ax) for a in cont.get_children() if a is not None]
            pts = np.concatenate(pts) if pts else np.empty((0, 2))
            inside = ((pts[:, 0] >= ab.x0 - 1) & (pts[:, 0] <= ab.x1 + 1)
                      & (pts[:, 1] >= ab.y0 - 1) & (pts[:, 1] <= ab.y1 + 1))
            if not np.any(inside):
                out.append(f"panel {axes.index(ax) + 1}: legend entry {lab!r} has no drawn data")
    out += panel_letter_problems(fig)
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or isinstance(t, Legend):
            continue
        pt = t.get_fontsize() * scale
        if pt < LEGIBLE_PT - 1e-9:
            out.append(f"text {t.get_text()[:30]!r} is {pt:.1f} pt at the column width "
                       f"(at least {LEGIBLE_PT:g}: the page's small print, {SMALL_PRINT_PX:g} px)")
    return out



def format_problems(formats, dpi: float | None = None) -> list[str]:
    """Whether figures glued in the inline backend's ``formats`` are sharp on a high-DPI screen.

    The HTML pages show the first of SVG and PNG that a figure carries (myst-nb's priority). SVG
    is vector: sharp at any density. A PNG is sharp only at :data:`MIN_BITMAP_DPI` or more (twice
    the CSS pixels it is shown at; ``"retina"`` doubles ``dpi``). A format list without SVG or
    PNG gives the pages no figure.

    Parameters
    ----------
    formats : iterable of str
        The inline backend's figure formats (``"svg"``, ``"pdf"``, ``"png"``, ``"retina"``, ...).
    dpi : float or None
        The PNG's dots per inch (``savefig.dpi``; ``None``: the matplotlib setting).

    Returns
    -------
    list of str
        One sentence per problem (empty: none).
    """
    import matplotlib as mpl

    fm = {str(f).lower() for f in formats}
    if "svg" in fm:
        return []
    if not fm & {"png", "retina", "png2x"}:
        return [f"formats {sorted(fm)} give the web pages no figure (need svg or png)"]
    d = float(mpl.rcParams["savefig.dpi"] if dpi is None or dpi == "figure" else dpi)
    if dpi is None and mpl.rcParams["savefig.dpi"] == "figure":
        d = float(mpl.rcParams["figure.dpi"])
    if fm & {"retina", "png2x"}:
        d *= 2
    if d < MIN_BITMAP_DPI - 1e-9:
        return [f"PNG figures at {d:g} dpi are soft on a high-DPI screen (a vector format, or at "
                f"least {MIN_BITMAP_DPI:g} dpi: twice the {CSS_PX_PER_INCH:g} CSS px per inch shown)"]
    return []
