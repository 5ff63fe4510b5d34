"""Transition points: where one branch's curve crosses another's (or a level), with intervals.

The crossing of two fixed-rule curves (:func:`first_crossing`), the crossing of a curve with its
numerical error and the interval from the curves shifted by that error (:func:`crossing_estimate`),
where a branch followed down in ``alpha`` ends, bracketed by its points' named outcomes
(:func:`branch_end`), and the gaps between the two branches where both converged
(:func:`branch_gaps`). Crossings go through :func:`stumplib.core.stats.crossing` (the book's one
crossing function); intervals through :class:`stumplib.core.stats.Estimate`.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from stumplib.core.stats import Estimate, crossing


def first_crossing(x: Any, above: Any, below: Any) -> float:
    """Smallest ``x`` (linear interpolation) after which ``below < above`` holds to the end of the
    grid.

    Parameters
    ----------
    x : (K,) increasing grid.
    above, below : (K,) curves.

    Returns
    -------
    The interpolated crossing of ``above - below`` through 0 that starts the final run of positive
    differences; ``x[0]`` if positive everywhere; NaN if not positive at the end of the grid.
    """
    x = np.asarray(x, dtype=np.float64)
    diff = np.asarray(above, dtype=np.float64) - np.asarray(below, dtype=np.float64)
    if x.ndim != 1 or x.size < 2 or diff.shape != x.shape:
        raise ValueError("x, above and below must be 1-D arrays of the same length >= 2")
    if not np.all(np.diff(x) > 0):
        raise ValueError("x must be strictly increasing")
    if not np.all(np.isfinite(diff)):
        raise ValueError("above and below must be finite")
    return crossing(x, diff, 0.0, direction="up", which="last")


def crossing_estimate(x: Any, y: Any, err: Any, *, direction: str = "up",
                      nsig: float = 3.0) -> Estimate:
    """Where ``y(x)`` crosses 0 (the crossing that starts the final run on the far side), with an
    interval from the crossings of ``y -+ nsig err`` (kind ``"quadrature"``: the curve's own
    numerical error; the linear interpolation between grid points is not included).

    Parameters
    ----------
    x : array_like, shape ``(K,)``
        Increasing grid.
    y, err : array_like, shape ``(K,)``
        The curve and its numerical error.
    direction : str
        ``"up"`` or ``"down"`` (:func:`stumplib.core.stats.crossing`).
    nsig : float
        Errors on each side that make the interval.

    Returns
    -------
    Estimate
        NaN value when the curve does not end on the far side.
    """
    x, y, err = (np.asarray(v, dtype=np.float64) for v in (x, y, err))
    c = crossing(x, y, 0.0, direction=direction, which="last")
    ends = np.array([crossing(x, y + s * nsig * err, 0.0, direction=direction, which="last")
                     for s in (-1, 1)])
    if not np.isfinite(ends).any():  # neither shifted curve ends on the far side: the whole grid
        lo, hi = float(x[0]), float(x[-1])
    else:  # a shifted curve that does not end on the far side crosses beyond the grid's end
        ends = np.where(np.isfinite(ends), ends, x[-1])
        lo, hi = float(ends.min()), float(ends.max())
    lo, hi = (min(lo, c), max(hi, c)) if np.isfinite(c) else (lo, hi)
    return Estimate(float(c), float(lo), float(hi), "quadrature", float("nan"))


def branch_end(alphas: Any, outcomes: Any) -> Estimate:
    """Where a branch followed down in ``alpha`` ends, bracketed by the grid.

    ``hi``: the smallest ``alpha`` at which the branch converged; ``lo``: the largest ``alpha``
    below it with no fixed point, or the grid's smallest ``alpha`` if none (undecided points in
    between widen the bracket). If every point converged, the branch continues: an upper-censored
    estimate (the end, if any, lies below ``alpha.min()``); if none converged, a lower-censored
    one.

    Parameters
    ----------
    alphas : array_like, shape ``(A,)``
        The points followed down.
    outcomes : array_like of str, shape ``(A,)``
        Their named outcomes (:class:`stumplib.phase.solver_search.Outcome`).

    Returns
    -------
    Estimate
    """
    a = np.asarray(alphas, dtype=np.float64)
    o = np.asarray(outcomes, dtype=object)
    conv = o == "converged"
    if conv.all():
        return Estimate(float(a.min()), -np.inf, float(a.min()), "censored", float("nan"), "upper",
                        a.size)
    if not conv.any():
        return Estimate(float(a.max()), float(a.max()), np.inf, "censored", float("nan"), "lower",
                        a.size)
    hi = float(a[conv].min())
    below = (a < hi) & (o == "no_fixed_point")
    lo = float(a[below].max()) if below.any() else float(a.min())
    if lo == hi:  # the lowest grid point converged and nothing below: the branch continues
        return Estimate(hi, -np.inf, hi, "censored", float("nan"), "upper", a.size)
    return Estimate(0.5 * (lo + hi), lo, hi, "plain", float("nan"), None, a.size)


def branch_gaps(th: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """Where both branches converged (increasing alpha), the gaps between them.

    Parameters
    ----------
    th : mapping
        :func:`.curves.accurate_curves`' result.

    Returns
    -------
    (alpha, loss_gap, loss_gap_err, test_error, test_error_err) : tuple of np.ndarray
        The training-loss gap (semantic - positional) and its error, the semantic test error and its
        error.
    """
    ok = (th["sem_outcome"] == "converged") & (th["pos_outcome"] == "converged")
    o = np.argsort(th["sem_alpha"][ok])
    dl = (th["sem_train_loss"] - th["pos_train_loss"])[ok][o]
    de = np.hypot(th["sem_train_loss_err"], th["pos_train_loss_err"])[ok][o]
    return (th["sem_alpha"][ok][o], dl, de, th["sem_test_error"][ok][o],
            th["sem_test_error_err"][ok][o])
