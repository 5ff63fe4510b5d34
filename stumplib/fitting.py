"""Power-law fits with intervals: the one fitter every chapter uses for slopes."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .validation import check_int, check_real

__all__ = ["PowerLawFit", "fit_power_law"]


@dataclass(frozen=True)
class PowerLawFit:
    """``y ≈ prefactor * x ** slope`` fitted by least squares in log-log space.

    ``ci`` is a ``level`` (default 95%) interval for the slope: from a pairs bootstrap, or from the
    spread over fits (``method``) when the caller combined several fits.
    """

    slope: float
    prefactor: float
    ci: tuple[float, float]
    stderr: float
    n_points: int
    method: str = "bootstrap"

    @property
    def ci_width(self) -> float:
        return float(self.ci[1] - self.ci[0])

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the interval."""
        return bool(self.ci[0] <= value <= self.ci[1])

    def __str__(self) -> str:
        return f"{self.slope:.3f} [{self.ci[0]:.3f}, {self.ci[1]:.3f}]"


def _ols(lx: np.ndarray, ly: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float]:
    if w is None:
        w = np.ones_like(lx)
    W = w.sum()
    mx, my = (w * lx).sum() / W, (w * ly).sum() / W
    sxx = (w * (lx - mx) ** 2).sum()
    if sxx <= 0:
        return float("nan"), float("nan")
    slope = (w * (lx - mx) * (ly - my)).sum() / sxx
    return float(slope), float(my - slope * mx)


def fit_power_law(x, y, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                  weights=None) -> PowerLawFit:
    """Fit ``log y = slope * log x + const`` with a pairs-bootstrap interval.

    Parameters
    ----------
    x, y : array_like, shape ``(K,)``
        Positive values; ``K >= 3`` points with at least two distinct ``x``.
    n_boot : bootstrap resamples (>= 100).
    level : interval level in (0, 1).
    weights : array_like, shape ``(K,)``, optional
        Non-negative weights of the log-space least squares (e.g. inverse variances of ``log y``).

    Returns
    -------
    PowerLawFit
    """
    n_boot = check_int("n_boot", n_boot, minimum=100)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int("seed", seed, minimum=0)
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
    w = None if weights is None else np.asarray(weights, dtype=float).ravel()
    if w is not None and (w.shape != x.shape or np.any(w < 0) or not np.all(np.isfinite(w))):
        raise ValueError("weights must be finite, non-negative and of the same length as x")
    lx, ly = np.log(x), np.log(y)
    slope, icpt = _ols(lx, ly, w)
    resid = ly - (slope * lx + icpt)
    dof = max(x.size - 2, 1)
    stderr = float(np.sqrt((resid ** 2).sum() / dof / ((lx - lx.mean()) ** 2).sum()))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    boots = np.array([_ols(lx[i], ly[i], None if w is None else w[i])[0] for i in idx])
    boots = boots[np.isfinite(boots)]
    a = (1 - level) / 2
    lo, hi = np.quantile(boots, [a, 1 - a])
    return PowerLawFit(slope=slope, prefactor=float(np.exp(icpt)), ci=(float(lo), float(hi)),
                       stderr=stderr, n_points=int(x.size))
