"""Crossings of a curve through a level, interpolated linearly or in log-log: :func:`crossing`
(scanning a curve) and :func:`interp_crossing` (between two grid points)."""
from __future__ import annotations

from typing import Any

import numpy as np


def interp_crossing(x0: float, x1: float, y0: float, y1: float, level: float = 0.0, *,
                    log_x: bool = False, log_y: bool = False) -> float:
    """Where the segment from ``(x0, y0)`` to ``(x1, y1)`` crosses ``y = level``.

    Interpolation is linear in ``log x`` / ``log y`` where asked (then the values must be positive);
    the result is clipped to ``[x0, x1]``; a flat or non-finite segment returns ``x1``.

    Parameters
    ----------
    x0, x1, y0, y1 : float
        The segment's ends.
    level : float
        The level crossed.
    log_x, log_y : bool
        Interpolate in log space.

    Returns
    -------
    float
    """
    fx = np.log if log_x else (lambda v: v)
    fy = np.log if log_y else (lambda v: v)
    if not (np.isfinite(y0) and np.isfinite(y1)) or y0 == y1 or (log_y and min(y0, y1, level) <= 0):
        return float(x1)
    t = (fy(level) - fy(y0)) / (fy(y1) - fy(y0))
    t = min(max(float(t), 0.0), 1.0)
    u = fx(x0) + t * (fx(x1) - fx(x0))
    return float(np.exp(u) if log_x else u)


def crossing(x: Any, y: Any, level: float = 0.0, *, direction: str = "up", which: str = "first",
             start: int = 0, log_x: bool = False, log_y: bool = False) -> float:
    """Interpolated crossing of the curve ``y(x)`` through ``level``.

    Parameters
    ----------
    x : array_like, shape ``(K,)``
        Strictly increasing grid.
    y : array_like, shape ``(K,)``
        Values (NaN counts as above ``level``).
    level : float
        The level crossed.
    direction : str
        ``"up"`` (from below ``level`` to at-or-above it) or ``"down"``.
    which : str
        ``"first"`` crossing at or after index ``start``, or ``"last"``: the crossing that starts the
        final run of points on the far side (``x[0]`` if the whole curve is there).
    start : int
        The first index considered (``which="first"``).
    log_x, log_y : bool
        Interpolate in log space.

    Returns
    -------
    float
        The crossing; ``nan`` if there is none (the curve never gets to the far side, or for
        ``which="last"`` does not end there).
    """
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.ndim != 1 or x.size < 2 or y.shape != x.shape:
        raise ValueError("x and y must be 1-D arrays of the same length >= 2")
    if not np.all(np.diff(x) > 0):
        raise ValueError("x must be strictly increasing")
    above = ~(y < level)  # NaN counts as above
    far = above if direction == "up" else ~above
    if which == "last":
        if not far[-1]:
            return float("nan")
        near = np.flatnonzero(~far)
        if near.size == 0:
            return float(x[0])
        k = int(near[-1]) + 1
    else:
        cand = np.flatnonzero(far[start + 1:] & ~far[start:-1])
        if cand.size == 0:
            return float("nan")
        k = start + int(cand[0]) + 1
    return interp_crossing(x[k - 1], x[k], y[k - 1], y[k], level, log_x=log_x, log_y=log_y)

