"""Tests of stumplib.book.plots: figure layout properties that the chapter runs do not check."""
from __future__ import annotations

import numpy as np

from stumplib.book import style
from stumplib.book.plots import corpus as ch3


class _Fit:
    """A stand-in for the power-law fit (callable, with ``slope`` and ``ci``)."""
    slope, ci = 0.6, (0.5, 0.7)

    def __call__(self, x):
        return np.asarray(x, dtype=float) ** 0.6


def test_certified_growth_legend_covers_no_data_at_the_column_width():
    # the shapes of the quick grid up to m∧n = 1024: beta* low, the own-calibration scale high, so
    # an in-axes legend in any corner lies over markers
    shapes = [(v, v) for v in (128, 256, 512, 1024)] + [(128, 512), (512, 128)]
    mn = np.array([min(s) for s in shapes], float)
    beta = 0.9 * mn ** 0.6
    own = np.where([s[0] == s[1] for s in shapes], 8 * mn ** 0.9, np.nan)
    cens = np.array([False, False, False, True, False, False])
    fig = ch3.certified_growth(shapes, beta, 0.8 * beta, 1.2 * beta, _Fit(), own, cens,
                               fit_all=_Fit())
    fig.canvas.draw()
    ax, = fig.axes
    assert fig.get_size_inches()[0] <= style.COLUMN_WIDTH + 1e-9
    assert not ax.get_legend() and len(fig.legends) == 1
    leg = fig.legends[0]
    labels = [t.get_text() for t in leg.get_texts()]
    assert len(labels) == 7  # three beta* groups, two fits, own scale and its lower bounds
    assert labels[3].startswith("worst-shape fit, slope 0.60") and labels[4].startswith("all-shape")
    box, axbox = leg.get_window_extent(), ax.get_window_extent()
    assert not box.overlaps(axbox)  # outside the panel, so over no marker, bar or line
    assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1


def test_certified_growth_lists_only_what_it_draws():
    shapes = [(128, 128), (256, 256)]
    beta = np.array([10.0, 20.0])
    own, cens = np.array([1e3, 1e3]), np.array([True, True])  # lower bounds only: no squares
    fig = ch3.certified_growth(shapes, beta, 0.8 * beta, 1.2 * beta, None, own, cens)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [r"$\beta^*$, m = n", "own-calibration scale, lower bound"]
