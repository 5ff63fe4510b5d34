"""Statistics: the book's one estimate-with-interval type, and every fit, bootstrap and crossing.

Every number a chapter reports with an uncertainty is an :class:`Estimate`: a value, an interval
``[lo, hi]``, what kind of interval it is (``kind``) and its level. The same type serves

- ``"seeds"``: a Student-t interval over independent replicates (:func:`mean_interval`);
- ``"bootstrap"``: a percentile bootstrap interval (:func:`bootstrap`, :func:`ratio_of_means`,
  :func:`fit_power_law`, :func:`fit_replicates`);
- ``"windows"``: the spread of a fit over sub-windows of a deterministic curve;
- ``"censored"``: a bound rather than a value (``censored="lower"``: the truth is at least ``value``;
  the interval is then ``[value, inf]``);
- ``"quadrature"``: a numerical-integration error bar;
- ``"plain"``: an interval supplied by the caller.

Crossings of a curve through a level, interpolated linearly or in log-log, are :func:`crossing`
(scanning a curve) and :func:`interp_crossing` (between two grid points).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

__all__ = ["Estimate", "PowerLawFit", "mean_interval", "resample_indices", "resample", "interval",
           "bootstrap", "ratio_of_means", "fit_power_law",
           "fit_replicates", "ols", "window_refits", "window_interval", "interp_crossing", "crossing",
           "wilson_interval", "extrapolate_linear", "coverage_ratio_range"]

KINDS = ("plain", "seeds", "bootstrap", "windows", "censored", "quadrature")


@dataclass(frozen=True)
class Estimate:
    """A value with an interval.

    Attributes
    ----------
    value : the point estimate.
    lo, hi : the interval's ends (``lo <= value <= hi`` for every kind but ``"plain"``, where the
        caller vouches for it).
    kind : one of ``"plain", "seeds", "bootstrap", "windows", "censored", "quadrature"``.
    level : the interval's nominal coverage (``nan`` where it has none, e.g. a quadrature error bar).
    censored : ``None``, ``"lower"`` (``value`` is a lower bound: the truth lies in ``[value, inf]``) or
        ``"upper"`` (an upper bound).
    n : the number of replicates, points or resamples behind it, where meaningful.
    n_dropped : how many replicates (resamples, seeds, shapes) were left out of the interval
        (0: none); ``n`` counts the ones used.
    dropped : why they were left out (empty when ``n_dropped == 0``).
    """

    value: float
    lo: float
    hi: float
    kind: str = "plain"
    level: float = 0.95
    censored: str | None = None
    n: int | None = None
    n_dropped: int = 0
    dropped: str = ""

    @classmethod
    def lower_bound(cls, value: float, n: int | None = None) -> "Estimate":
        """A censored estimate: the quantity is at least ``value``.

        Parameters
        ----------
        value : float
            The lower bound.
        n : int, optional
            Replicates or points behind it.

        Returns
        -------
        Estimate
            Of kind ``"censored"``, ``censored="lower"``, interval ``[value, inf]``.
        """
        return cls(float(value), float(value), math.inf, "censored", float("nan"), "lower", n)

    @classmethod
    def nan(cls, kind: str = "plain", n: int | None = None) -> "Estimate":
        """An estimate that could not be made (value and interval ``nan``).

        Parameters
        ----------
        kind : str
            The kind it would have had.
        n : int, optional
            Replicates or points behind it.

        Returns
        -------
        Estimate
        """
        nan = float("nan")
        return cls(nan, nan, nan, kind, nan, None, n)

    @classmethod
    def with_error(cls, value: float, err: float, kind: str = "quadrature", n: int | None = None) -> "Estimate":
        """``value +- err`` (e.g. a quadrature error estimate).

        Parameters
        ----------
        value : float
            The point estimate.
        err : float
            The error bar (its absolute value is used).
        kind : str
            The interval's kind.
        n : int, optional
            Points behind it.

        Returns
        -------
        Estimate
            With ``level`` NaN (an error bar has no coverage).
        """
        return cls(float(value), float(value - abs(err)), float(value + abs(err)), kind, float("nan"), None, n)

    @property
    def ci(self) -> tuple[float, float]:
        """``(lo, hi)``."""
        return (self.lo, self.hi)

    @property
    def width(self) -> float:
        """``hi - lo``."""
        return float(self.hi - self.lo)

    @property
    def half_width(self) -> float:
        """Half of :attr:`width`."""
        return 0.5 * self.width

    def contains(self, v: float, tol: float = 0.0) -> bool:
        """Whether ``v`` lies in ``[lo - tol, hi + tol]``.

        Parameters
        ----------
        v : float
            The value.
        tol : float
            Slack on both ends.

        Returns
        -------
        bool
        """
        return bool(self.lo - tol <= v <= self.hi + tol)

    def scaled(self, factor: float) -> "Estimate":
        """The estimate of ``factor * quantity`` (the interval flips for a negative factor).

        Parameters
        ----------
        factor : float
            The multiplier.

        Returns
        -------
        Estimate
            Every other field kept (a censored bound changes side for a negative factor).
        """
        lo, hi = sorted((self.lo * factor, self.hi * factor))
        cens = self.censored
        if factor < 0 and cens is not None:
            cens = "upper" if cens == "lower" else "lower"
        return replace(self, value=self.value * factor, lo=lo, hi=hi, censored=cens)

    def __format__(self, spec: str) -> str:
        spec = spec or ".3g"
        if self.censored == "lower":
            return f">= {self.value:{spec}}"
        if self.censored == "upper":
            return f"<= {self.value:{spec}}"
        return f"{self.value:{spec}} [{self.lo:{spec}}, {self.hi:{spec}}]"

    def __str__(self) -> str:
        return format(self, ".3g")


def _quantiles(samples: np.ndarray, level: float) -> tuple[float, float]:
    a = (1 - level) / 2
    s = samples[np.isfinite(samples)]
    if s.size < 10:
        return float("nan"), float("nan")
    lo, hi = np.quantile(s, [a, 1 - a])
    return float(lo), float(hi)


def mean_interval(values: Any, *, axis: int = 0, level: float = 0.95) -> Estimate | tuple[np.ndarray, ...]:
    """Mean over independent replicates with a Student-t interval.

    Parameters
    ----------
    values : array_like
        Replicates along ``axis`` (at least 2), finite.
    axis : int
        The replicates' axis.
    level : float
        The interval's coverage.

    Returns
    -------
    Estimate or tuple of np.ndarray
        An :class:`Estimate` (kind ``"seeds"``) for 1-D input; for higher dimensions the arrays
        ``(mean, lo, hi)`` of the shape of ``values`` without ``axis``.
    """
    from scipy import stats as st

    v = np.asarray(values, dtype=float)
    if v.ndim == 0 or v.shape[axis] < 2:
        raise ValueError("values must hold at least 2 replicates along axis")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    S = v.shape[axis]
    mean = v.mean(axis)
    half = st.t.ppf(0.5 + level / 2, S - 1) * v.std(axis, ddof=1) / math.sqrt(S)
    if v.ndim == 1:
        return Estimate(float(mean), float(mean - half), float(mean + half), "seeds", level, None, S)
    return mean, mean - half, mean + half


def resample_indices(n_units: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """Bootstrap draws with replacement (``numpy.random.default_rng(seed)``).

    This is the book's one random stream for resampling: every bootstrap draws through it.

    Parameters
    ----------
    n_units : int
        Units to draw from (``range(n_units)``).
    n_boot : int
        Resamples.
    seed : int
        The generator's seed.

    Returns
    -------
    np.ndarray of int, shape ``(n_boot, n_units)``
        Each row ``n_units`` draws.
    """
    if n_units < 1 or n_boot < 1:
        raise ValueError(f"n_units and n_boot must be at least 1; got {n_units}, {n_boot}")
    return np.random.default_rng(seed).integers(0, n_units, size=(n_boot, n_units))


def _as_units(data: Any) -> tuple[tuple[np.ndarray, ...], bool]:
    paired = isinstance(data, (tuple, list)) and len(data) > 0 and not np.isscalar(data[0])
    arrays = tuple(np.asarray(d.detach().cpu() if hasattr(d, "detach") else d, dtype=float)
                   for d in (data if paired else (data,)))
    C = arrays[0].shape[0] if arrays[0].ndim else 0
    if C < 2 or any(a.ndim == 0 or a.shape[0] != C for a in arrays):
        raise ValueError("data must hold at least 2 independent units along axis 0 (paired arrays: "
                         "the same number of units each)")
    return arrays, paired


def resample(data: Any, statistic: Callable[..., Any], *, n_boot: int = 2000, seed: int = 0,
             vectorised: bool = False) -> np.ndarray:
    """Bootstrap replicates of ``statistic`` over the units (axis 0) of ``data``.

    Parameters
    ----------
    data : array_like of shape ``(C, ...)``, or a tuple of such arrays with the same ``C``
        Paired arrays are resampled with the same draws (e.g. numerator and denominator of a ratio).
    statistic : callable
        For ``vectorised=False``, maps the resampled array(s) (shape ``(C, ...)``, one positional
        argument per array) to a float or an array; for ``vectorised=True`` it receives all
        resamples at once, shape ``(n_boot, C, ...)`` per array, and returns shape ``(n_boot, ...)``.
    n_boot : int
        Number of resamples.
    seed : int
        Seed of :func:`resample_indices`.
    vectorised : bool
        Call ``statistic`` once on all resamples.

    Returns
    -------
    np.ndarray, shape ``(n_boot, ...)``
        One replicate per resample.
    """
    arrays, _ = _as_units(data)
    idx = resample_indices(arrays[0].shape[0], n_boot, seed)
    if vectorised:
        return np.asarray(statistic(*(a[idx] for a in arrays)), dtype=float)
    return np.array([statistic(*(a[i] for a in arrays)) for i in idx], dtype=float)


def interval(replicates: Any, level: float = 0.95) -> tuple[float, float]:
    """Central ``level`` percentile interval of bootstrap replicates.

    Non-finite replicates are left out of the quantiles (callers that drop replicates count them:
    :attr:`Estimate.n_dropped`).

    Parameters
    ----------
    replicates : array_like
        The replicates (any shape, flattened).
    level : float
        The coverage.

    Returns
    -------
    (lo, hi) : tuple of float
        ``(nan, nan)`` when fewer than 10 are finite.
    """
    return _quantiles(np.asarray(replicates, dtype=float).ravel(), level)


def bootstrap(data: Any, statistic: Callable[..., Any], *, n_boot: int = 2000,
              level: float = 0.95, seed: int = 0, vectorised: bool = False) -> Estimate:
    """Percentile bootstrap of a scalar ``statistic`` over the units (axis 0) of ``data``.

    Parameters
    ----------
    data : array_like, shape ``(C, ...)``
        ``C`` independent units (contexts, corpora, seeds); or a tuple of such arrays resampled
        together (paired).
    statistic : callable
        See :func:`resample`; must return a float (``(n_boot,)`` when vectorised).
    n_boot, level, seed : int, float, int
        Resamples, interval level, seed.
    vectorised : bool
        See :func:`resample`.

    Returns
    -------
    Estimate
        Of kind ``"bootstrap"``: the statistic on the data, with the percentile interval.
    """
    arrays, _ = _as_units(data)
    boots = resample(data, statistic, n_boot=n_boot, seed=seed, vectorised=vectorised)
    lo, hi = _quantiles(boots, level)
    if vectorised:
        point = float(np.asarray(statistic(*(a[None] for a in arrays)), dtype=float).ravel()[0])
    else:
        point = float(statistic(*arrays))
    return Estimate(point, lo, hi, "bootstrap", level, None, n_boot)


def ratio_of_means(num: Any, den: Any, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> Estimate:
    """``mean(num) / mean(den)`` over paired samples with a pairs-bootstrap interval.

    Parameters
    ----------
    num, den : array_like or torch.Tensor, shape ``(C,)``
        Paired samples, finite, with a positive mean denominator.
    n_boot, level, seed : int, float, int
        Resamples, interval level, seed.

    Returns
    -------
    Estimate
        Of kind ``"bootstrap"``.
    """
    a = np.asarray(num.detach().cpu() if hasattr(num, "detach") else num, dtype=float).ravel()
    d = np.asarray(den.detach().cpu() if hasattr(den, "detach") else den, dtype=float).ravel()
    if a.shape != d.shape or a.size < 2:
        raise ValueError("num and den must be paired samples of the same length >= 2")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(d))) or d.mean() <= 0:
        raise ValueError("num and den must be finite with a positive mean denominator")
    return bootstrap((a, d), lambda x, y: x.mean(-1) / y.mean(-1), n_boot=n_boot, level=level,
                     seed=seed, vectorised=True)


# ------------------------------------------------------------------------------------ power laws
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
    lo, hi = _quantiles(boots, level)
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
    lo, hi = _quantiles(boots, level)
    n_pts, n_rep = int((~keep).sum()), int((~ok).sum())
    why = "; ".join(w for w in (
        f"{n_pts} of {keep.size} points without a finite positive value" * bool(n_pts),
        f"{n_rep} of {ok.size} replicates not finite and positive at a kept point" * bool(n_rep)) if w)
    return PowerLawFit(slope=float(slope), prefactor=float(np.exp(icpt)), ci=(lo, hi),
                       stderr=_stderr(lx, ly, slope, icpt), n_points=int(lx.size), method=method,
                       level=level, points_dropped=n_pts, n_dropped=n_rep, dropped=why)


# ------------------------------------------------------------------------------------ fit windows
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


# ------------------------------------------------------------------------------------ crossings
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


# ------------------------------------------------------------------------------------ proportions
def coverage_ratio_range(k: int, level: float = 0.95) -> tuple[float, float]:
    """The range of the coverage ratio ``h / (1.96 s)`` that ``k`` seeds produce with probability
    ``level`` when the intervals are nominal (half-width ``h = 1.96 sigma``) and the key number is
    normal: ``(k - 1) s^2 / sigma^2`` is chi-squared with ``k - 1`` degrees of freedom, so the ratio
    ``sigma / s`` lies between ``sqrt((k-1) / q_hi)`` and ``sqrt((k-1) / q_lo)``.

    Parameters
    ----------
    k : int
        Seeds with a finite key number (at least 2).
    level : float
        Probability of the range, in (0, 1).

    Returns
    -------
    (lo, hi) : tuple of float
        A ratio below ``lo`` says the intervals under-cover; above ``hi``, that they are wider
        than the seed-to-seed spread needs. For ``k = 5`` at 95%: about 0.60 and 2.87.
    """
    from scipy.stats import chi2

    if k < 2:
        raise ValueError(f"k must be at least 2; got {k}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    q_lo, q_hi = chi2.ppf([(1 - level) / 2, (1 + level) / 2], k - 1)
    return float(np.sqrt((k - 1) / q_hi)), float(np.sqrt((k - 1) / q_lo))


def wilson_interval(successes: Any, trials: Any, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion ``successes / trials`` (broadcast).

    Parameters
    ----------
    successes : array_like of counts, ``0 <= successes <= trials``.
    trials : array_like of positive counts.
    level : two-sided level in (0, 1).

    Returns
    -------
    (lo, hi) : arrays within ``[0, 1]``, containing ``successes / trials``.
    """
    from scipy.stats import norm

    k, n = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n) or not (np.all(np.isfinite(k)) and np.all(np.isfinite(n))):
        raise ValueError("trials must be >= 1 and successes in [0, trials]")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    z = float(norm.ppf(0.5 + level / 2))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
    return np.minimum(lo, p), np.maximum(hi, p)  # contain p despite rounding


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
