"""Resampling: bootstrap indices and intervals, binomial and coverage intervals (ratios of means:
:mod:`stumplib.core.stats.ratios`)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from stumplib.core.stats.estimate import Estimate, quantile_interval


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
    return quantile_interval(np.asarray(replicates, dtype=float).ravel(), level)


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
    lo, hi = quantile_interval(boots, level)
    if vectorised:
        point = float(np.asarray(statistic(*(a[None] for a in arrays)), dtype=float).ravel()[0])
    else:
        point = float(statistic(*arrays))
    return Estimate(point, lo, hi, "bootstrap", level, None, n_boot)


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

