"""Fits with intervals: least squares, power laws (bootstrap over points or replicates), window
refits of a deterministic curve, and a straight-line extrapolation."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stumplib.core.stats.estimate import KINDS, Estimate, quantile_interval
from stumplib.core.stats.resampling import resample_indices


def ols(lx: np.ndarray, ly: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float]:
    """Weighted least-squares line ``ly = slope * lx + intercept``.

    Parameters
    ----------
    lx, ly : np.ndarray, shape ``(K,)``
        The points.
    w : np.ndarray, shape ``(K,)``, optional
        Non-negative weights (default: all 1).

    Returns
    -------
    (slope, intercept) : tuple of float
        ``(nan, nan)`` if ``lx`` is constant.
    """
    if w is None:
        w = np.ones_like(lx)
    W = w.sum()
    mx, my = (w * lx).sum() / W, (w * ly).sum() / W
    sxx = (w * (lx - mx) ** 2).sum()
    if sxx <= 0:
        return float("nan"), float("nan")
    slope = (w * (lx - mx) * (ly - my)).sum() / sxx
    return float(slope), float(my - slope * mx)


@dataclass(frozen=True)
class PowerLawFit:
    """``y ≈ prefactor * x ** slope`` fitted by least squares in log-log space.

    ``ci`` is a ``level`` interval for the slope (``method`` says how it was obtained);
    :attr:`estimate` is the slope as an :class:`Estimate`.

    Attributes
    ----------
    slope, prefactor : the fitted law.
    ci : ``(lo, hi)``, the slope's interval.
    stderr : the slope's least-squares standard error.
    n_points : points in the fit (after ``points_dropped`` were left out).
    method : how ``ci`` was obtained (an :data:`KINDS` entry or a description).
    level : the interval's nominal coverage.
    points_dropped : points left out (``y`` or ``x`` not finite and positive).
    n_dropped : replicates left out of ``ci`` (not finite and positive at a kept point).
    dropped : why (empty when nothing was left out).
    """

    slope: float
    prefactor: float
    ci: tuple[float, float]
    stderr: float
    n_points: int
    method: str = "bootstrap"
    level: float = 0.95
    points_dropped: int = 0
    n_dropped: int = 0
    dropped: str = ""

    @property
    def estimate(self) -> Estimate:
        """The slope as an :class:`Estimate` (carrying the count of dropped replicates)."""
        kind = self.method if self.method in KINDS else "bootstrap"
        return Estimate(self.slope, self.ci[0], self.ci[1], kind, self.level, None, self.n_points,
                        self.n_dropped, self.dropped)

    @property
    def ci_width(self) -> float:
        """Width of the slope's interval."""
        return float(self.ci[1] - self.ci[0])

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the slope's interval.

        Parameters
        ----------
        value : float
            A slope.

        Returns
        -------
        bool
        """
        return bool(self.ci[0] <= value <= self.ci[1])

    def __call__(self, x: Any) -> np.ndarray:
        return self.prefactor * np.asarray(x, dtype=float) ** self.slope

    def __str__(self) -> str:
        return f"{self.slope:.3f} [{self.ci[0]:.3f}, {self.ci[1]:.3f}]"


def _log_xy(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    arrays = {}
    for name, v in (("x", x), ("y", y)):
        try:
            arrays[name] = np.asarray(v, dtype=float).ravel()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be an array of positive finite numbers; got {v!r} ({exc})") from None
    x, y = arrays["x"], arrays["y"]
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length; got {x.size} and {y.size}")
    if x.size < 3:
        raise ValueError(f"x must hold at least 3 points to fit a power law; got {x.size}")
    for name, v in (("x", x), ("y", y)):
        if not (np.all(np.isfinite(v)) and np.all(v > 0)):
            raise ValueError(f"x and y must be finite and positive for a log-log fit; {name} has "
                             f"{int(np.sum(~np.isfinite(v)))} non-finite and "
                             f"{int(np.sum(np.isfinite(v) & (v <= 0)))} non-positive entries")
    if np.unique(x).size < 2:
        raise ValueError("x must contain at least two distinct values")
    return np.log(x), np.log(y)


def _stderr(lx: np.ndarray, ly: np.ndarray, slope: float, icpt: float) -> float:
    resid = ly - (slope * lx + icpt)
    dof = max(lx.size - 2, 1)
    return float(np.sqrt((resid ** 2).sum() / dof / ((lx - lx.mean()) ** 2).sum()))


def fit_power_law(x: Any, y: Any, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                  weights: Any = None) -> PowerLawFit:
    """Fit ``log y = slope * log x + const`` with a pairs-bootstrap interval.

    Parameters
    ----------
    x, y : array_like, shape ``(K,)``
        Positive values; ``K >= 3`` points with at least two distinct ``x``.
    n_boot : int
        Bootstrap resamples.
    level : float
        Interval level in (0, 1).
    seed : int
        Seed of the resamples.
    weights : array_like, shape ``(K,)``, optional
        Non-negative weights of the log-space least squares (e.g. inverse variances of ``log y``).

    Returns
    -------
    PowerLawFit
    """
    lx, ly = _log_xy(x, y)
    w = None if weights is None else np.asarray(weights, dtype=float).ravel()
    if w is not None and (w.shape != lx.shape or np.any(w < 0) or not np.all(np.isfinite(w))):
        raise ValueError("weights must be finite, non-negative and of the same length as x")
    slope, icpt = ols(lx, ly, w)
    idx = resample_indices(lx.size, n_boot, seed)
    boots = np.array([ols(lx[i], ly[i], None if w is None else w[i])[0] for i in idx])
    lo, hi = quantile_interval(boots, level)
    return PowerLawFit(slope=slope, prefactor=float(np.exp(icpt)), ci=(lo, hi),
                       stderr=_stderr(lx, ly, slope, icpt), n_points=int(lx.size), level=level)


def fit_replicates(x: Any, y: Any, y_reps: Any, *, level: float = 0.95,
                   method: str = "bootstrap") -> PowerLawFit:
    """Log-log slope of ``y`` against ``x`` with an interval from refitting every replicate row of
    ``y_reps`` (shape ``(B, K)``: bootstrap replicates of ``y``, or per-window/per-seed curves).

    Points where ``y`` is not finite and positive are dropped (and the same columns of ``y_reps``);
    replicates with an entry that is not finite and positive in the kept columns are dropped. Both
    counts and the reason are recorded in the result (``points_dropped``, ``n_dropped``,
    ``dropped``). Needs >= 2 distinct ``x``.

    Parameters
    ----------
    x, y : array_like, shape ``(K,)``
        The abscissae and the measured values.
    y_reps : array_like, shape ``(B, K)``
        Replicates of ``y`` (one row per bootstrap replicate, window or seed).
    level : float
        The interval's nominal coverage.
    method : str
        How the replicates were made (recorded in the fit; an :data:`KINDS` entry gives the kind
        of its :attr:`PowerLawFit.estimate`).

    Returns
    -------
    PowerLawFit
        The slope of the kept points, its percentile interval over the kept replicates, and the
        counts of what was left out.
    """
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    yb = np.asarray(y_reps, dtype=float)
    if x.shape != y.shape or yb.ndim != 2 or yb.shape[1] != x.size:
        raise ValueError("x, y must have shape (K,) and y_reps shape (B, K)")
    keep = np.isfinite(y) & (y > 0) & np.isfinite(x) & (x > 0)
    if np.unique(x[keep]).size < 2:
        raise ValueError("x must hold at least two distinct values with finite positive y")
    lx, ly = np.log(x[keep]), np.log(y[keep])
    slope, icpt = ols(lx, ly)
    yb = yb[:, keep]
    ok = np.all(np.isfinite(yb) & (yb > 0), axis=1)
    boots = np.array([ols(lx, np.log(row))[0] for row in yb[ok]])
    lo, hi = quantile_interval(boots, level)
    n_pts, n_rep = int((~keep).sum()), int((~ok).sum())
    why = "; ".join(w for w in (
        f"{n_pts} of {keep.size} points without a finite positive value" * bool(n_pts),
        f"{n_rep} of {ok.size} replicates not finite and positive at a kept point" * bool(n_rep)) if w)
    return PowerLawFit(slope=float(slope), prefactor=float(np.exp(icpt)), ci=(lo, hi),
                       stderr=_stderr(lx, ly, slope, icpt), n_points=int(lx.size), method=method,
                       level=level, points_dropped=n_pts, n_dropped=n_rep, dropped=why)


def window_refits(u: np.ndarray, refit, n_windows: int, *, min_fraction: float = 0.5,
                  min_points: int = 3, seed: int = 0) -> np.ndarray:
    """Refit on ``n_windows`` random sub-windows of the coordinate ``u`` (e.g. ``log t``).

    Each sub-window ``[a, a + w]`` has a width ``w`` drawn uniformly in ``[min_fraction, 1]`` times
    the span of ``u`` and a start ``a`` drawn uniformly so that it fits; windows holding fewer than
    ``min_points`` points are redrawn. A deterministic curve has no sampling noise: the spread of
    these refits measures how much a fitted quantity depends on where one fits (an
    :class:`~stumplib.core.stats.Estimate` of kind ``"windows"``).

    Parameters
    ----------
    u : np.ndarray, shape ``(K,)``
        The coordinate the windows are drawn on.
    refit : callable
        ``refit(mask)`` returns a number or a sequence of numbers for the points ``mask``.
    n_windows : int
        Windows drawn.
    min_fraction : float
        The narrowest window, as a fraction of the span of ``u``.
    min_points : int
        Fewest points in a window.
    seed : int
        Seed of the draws.

    Returns
    -------
    np.ndarray, shape ``(n_windows,)`` or ``(n_windows, k)``
        The refits, stacked.
    """
    lo = float(u.min())
    span = float(u.max()) - lo
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n_windows:
        width = span * rng.uniform(min_fraction, 1.0)
        a = lo + rng.uniform(0.0, span - width)
        m = (u >= a - 1e-12) & (u <= a + width + 1e-12)
        if m.sum() < min_points:
            continue
        out.append(refit(m))
    return np.asarray(out, dtype=float)


def window_interval(point: float, reps: np.ndarray, level: float) -> tuple[float, float]:
    """Central ``level`` range of the refits, widened to contain the point estimate.

    Parameters
    ----------
    point : float
        The fit on the whole window.
    reps : np.ndarray
        The refits (:func:`window_refits`).
    level : float
        The central fraction.

    Returns
    -------
    (lo, hi) : tuple of float
    """
    a = (1 - level) / 2
    lo, hi = np.quantile(np.ravel(reps), [a, 1 - a])
    return float(min(lo, point)), float(max(hi, point))


def extrapolate_linear(x: Any, y: Any, se: Any, *, x0: float = 0.0, level: float = 0.95,
                       degree: int = 1) -> tuple[Estimate, float]:
    """Weighted least-squares line through ``(x, y)`` with known standard errors ``se``, evaluated
    at ``x0`` (for example ``y`` against ``1/d`` extrapolated to ``1/d = 0``).

    Parameters
    ----------
    x, y, se : array_like, shape ``(K,)``
        Points and the standard errors of ``y`` (positive). With one point the value at ``x0`` is
        that point (no extrapolation).
    x0 : float
        Where to evaluate the line.
    level : float
        The interval's coverage (normal quantile: the errors are known, not fitted).
    degree : int
        The polynomial's degree in ``x - x0`` (1: a line; 2: with a quadratic term, e.g. a ``1/d^2``
        finite-size correction); needs at least ``degree + 1`` distinct ``x``.

    Returns
    -------
    (estimate, standard error) : tuple of Estimate and float
        The polynomial's value at ``x0`` (kind ``"seeds"``).
    """
    from scipy.stats import norm

    x, y, se = (np.asarray(v, dtype=float).ravel() for v in (x, y, se))
    if not (x.size == y.size == se.size >= 1) or not np.all(np.isfinite(np.r_[x, y, se])) or np.any(se <= 0):
        raise ValueError("x, y and se must be finite arrays of one length >= 1, se > 0")
    if not (isinstance(degree, (int, np.integer)) and 1 <= degree <= 5):
        raise ValueError(f"degree must be an integer in [1, 5]; got {degree!r}")
    if x.size == 1:
        v, s = float(y[0]), float(se[0])
    else:
        if np.unique(x).size < degree + 1:
            raise ValueError(f"x must hold at least {degree + 1} distinct values to extrapolate "
                             f"with degree {degree}")
        X = np.stack([(x - x0) ** k for k in range(degree + 1)], 1)
        W = 1.0 / se ** 2
        cov = np.linalg.inv(X.T @ (X * W[:, None]))
        beta = cov @ (X.T @ (W * y))
        v, s = float(beta[0]), float(np.sqrt(cov[0, 0]))
    q = float(norm.ppf(0.5 + level / 2))
    return Estimate(v, v - q * s, v + q * s, "seeds", level, None, int(x.size)), s

