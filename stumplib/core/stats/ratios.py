"""Intervals for ratios that respect their support: never below 0, never below a proven floor.

A ratio of mean squared errors is positive, and an estimator's risk over the Bayes risk (under the
prior the Bayes estimator uses) is at least 1. An interval built on the linear scale (a Student
correction of bootstrap deviations, a normal approximation) can leave that support when the
spread is large: "7.39 [-2.52, 24.8]" is no interval for a ratio. This module builds ratio
intervals that cannot:

- :func:`ratio_of_means`: the pairs-bootstrap percentile interval of ``mean(num) / mean(den)``
  (positive data give positive replicates), clipped to ``[floor, inf)``;
- :func:`two_way_ratio`: the same with units resampled along two axes (contexts and corpora),
  with the few-corpora Student correction applied on the **log scale**, so the widened interval
  stays positive and is asymmetric as a ratio's uncertainty is;
- :func:`clip_to_support`: an interval intersected with the support ``[floor, ceiling]``. The
  truth lies in the support, so an interval clipped to it covers the truth whenever the unclipped
  one did: clipping never lowers coverage.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from stumplib.core.stats.estimate import Estimate, quantile_interval


def clip_to_support(est: Estimate, floor: float = 0.0, ceiling: float = math.inf) -> Estimate:
    """``est`` projected onto the support ``[floor, ceiling]``: value and interval.

    The truth lies in the support, so the projected value is never further from it than the raw
    one, and the clipped interval covers it whenever the raw interval did (clipping never lowers
    coverage); the interval is first widened to hold the value (a percentile interval may miss a
    skewed estimate). An interval wholly outside the support becomes the support's nearest end.

    Parameters
    ----------
    est : Estimate
        The estimate; a NaN stays NaN.
    floor : float
        The smallest value the quantity can take (0 for a ratio of risks, 1 for a risk over the
        Bayes risk).
    ceiling : float
        The largest (``inf``: none).

    Returns
    -------
    Estimate
        The same estimate with ``value``, ``lo`` and ``hi`` in ``[floor, ceiling]``,
        ``lo <= value <= hi``.
    """
    if not floor <= ceiling:
        raise ValueError(f"floor must not exceed ceiling; got {floor!r} > {ceiling!r}")

    def clip(v: float) -> float:
        return v if math.isnan(v) else min(max(v, floor), ceiling)
    v, lo, hi = est.value, est.lo, est.hi
    if not math.isnan(v):
        lo = lo if math.isnan(lo) else min(lo, v)
        hi = hi if math.isnan(hi) else max(hi, v)
    return replace(est, value=clip(v), lo=clip(lo), hi=clip(hi))


def student_factor(units: int, level: float = 0.95) -> float:
    """How much wider a bootstrap over ``units`` independent units must be to cover like Student's
    interval: ``t_{R-1} / z * sqrt(R / (R - 1))`` at ``level`` (a percentile bootstrap over few
    units uses the normal quantile and the biased ``(R - 1) / R`` variance). 1 for ``R < 2``.

    Parameters
    ----------
    units : int
        The number of independent units ``R`` (corpora).
    level : float
        The interval's level, in (0, 1).

    Returns
    -------
    float
        The factor, at least 1 and tending to 1 as ``R`` grows (2.69 at ``R = 3``, 1.12 at 16).
    """
    from scipy.stats import norm, t

    if units < 2:
        return 1.0
    q = (1 + level) / 2
    return float(t.ppf(q, units - 1) / norm.ppf(q) * math.sqrt(units / (units - 1)))


def _as_array(v: Any) -> np.ndarray:
    return np.asarray(v.detach().cpu() if hasattr(v, "detach") else v, dtype=float)


def _check_level_floor(level: float, floor: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    if not (math.isfinite(floor) and floor >= 0.0):
        raise ValueError(f"floor must be a finite number >= 0 (a ratio's support); got {floor!r}")


def ratio_of_means(num: Any, den: Any, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                   floor: float = 0.0) -> Estimate:
    """``mean(num) / mean(den)`` over paired samples with a pairs-bootstrap percentile interval,
    within the ratio's support ``[floor, inf)``.

    Parameters
    ----------
    num, den : array_like or torch.Tensor, shape ``(C,)``
        Paired samples, finite and non-negative (squared errors), with a positive mean denominator.
    n_boot, level, seed : int, float, int
        Resamples, interval level, seed (:func:`stumplib.core.stats.resample_indices`).
    floor : float
        The smallest value the true ratio can take: 0 for a ratio of risks, 1 for an estimator's
        risk over the Bayes risk (the Bayes estimator of the prior the thresholds are drawn from).

    Returns
    -------
    Estimate
        Of kind ``"bootstrap"``, its interval in ``[floor, inf)``.
    """
    from stumplib.core.stats.resampling import bootstrap

    a, d = _as_array(num).ravel(), _as_array(den).ravel()
    if a.shape != d.shape or a.size < 2:
        raise ValueError("num and den must be paired samples of the same length >= 2")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(d))) or d.mean() <= 0:
        raise ValueError("num and den must be finite with a positive mean denominator")
    if np.any(a < 0) or np.any(d < 0):
        raise ValueError("num and den must be non-negative (a ratio of risks)")
    _check_level_floor(level, floor)
    est = bootstrap((a, d), lambda x, y: x.mean(-1) / y.mean(-1), n_boot=n_boot, level=level,
                    seed=seed, vectorised=True)
    return clip_to_support(est, floor)


def two_way_ratio(num: Any, den: Any, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                  floor: float = 0.0) -> Estimate:
    """``mean(num) / mean(den)`` with an interval over contexts *and* corpora, within the ratio's
    support ``[floor, inf)``.

    Each bootstrap draw resamples the contexts (rows) and, independently, the corpora (columns)
    (:func:`stumplib.core.stats.resample_indices` with seeds ``seed`` and ``seed + 1``), the same
    draws for numerator and denominator. A percentile bootstrap over few corpora under-covers
    (three corpora have ten distinct resamples, and their spread is biased low by
    ``(R - 1) / R``): the replicates' deviations from the estimate are therefore scaled by
    :func:`student_factor` ``(R)``, **on the log scale** (``log r* -> log r + k (log r* - log r)``),
    where a ratio's sampling distribution is close to symmetric; the interval is then positive by
    construction and clipped to ``[floor, inf)``. On simulated corpora
    (``tests/core/test_ratios.py``, corpus means log-normal with SD 0.3) the 95% interval holds
    the true ratio in 93% of draws at 3 corpora and 95% at 16; the uncorrected percentile
    bootstrap in 71% at 3.

    The denominator may come from *other* corpora than the numerator (shape ``(C, R')`` with
    ``R' != R``: a comparator trained on corpora of its own): its corpora are then resampled
    independently (seed ``seed + 2``) and the Student factor is that of the smaller count (on
    simulated corpora, 16 against 8: 96% coverage at 95%; one comparator corpus held fixed: 61%).

    Parameters
    ----------
    num, den : array_like, shape ``(C, R)`` and ``(C, R)``, ``(C, R')`` or ``(C,)``
        Non-negative losses (squared errors) of ``C`` contexts under the models of ``R`` corpora
        (the same contexts in both; the same corpora where the column counts agree); a ``(C,)``
        array (the Bayes estimator's, which no corpus changes) is broadcast over corpora.
    n_boot, level, seed : int, float, int
        Resamples (>= 10), interval level and seed.
    floor : float
        The smallest value the true ratio can take (see :func:`ratio_of_means`).

    Returns
    -------
    Estimate
        Of kind ``"bootstrap"`` (``n``: the resamples), its interval in ``[floor, inf)``.
    """
    from stumplib.core.stats.resampling import resample_indices

    if not (isinstance(n_boot, (int, np.integer)) and n_boot >= 10):
        raise ValueError(f"n_boot must be an integer >= 10; got {n_boot!r}")
    _check_level_floor(level, floor)
    a, d = _as_array(num), _as_array(den)
    a, d = (v[:, None] if v.ndim == 1 else v for v in (a, d))
    if a.ndim != 2 or d.ndim != 2 or a.shape[0] != d.shape[0] or a.shape[0] < 2:
        raise ValueError("num and den must have shapes (C, R) and (C, R), (C, R') or (C,), "
                         "with C >= 2")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(d))) or d.mean() <= 0:
        raise ValueError("num and den must be finite with a positive mean denominator")
    if np.any(a < 0) or np.any(d < 0):
        raise ValueError("num and den must be non-negative (a ratio of risks)")
    paired = d.shape[1] in (1, a.shape[1])  # the same corpora (or none) in both
    if paired:
        d = np.broadcast_to(d, a.shape)
    C, R = a.shape
    ic = resample_indices(C, n_boot, seed)
    ir = resample_indices(R, n_boot, seed + 1)
    jr = ir if paired else resample_indices(d.shape[1], n_boot, seed + 2)
    reps = np.empty(n_boot)
    for k in range(n_boot):
        ra, rd = a[ic[k]][:, ir[k]], d[ic[k]][:, jr[k]]
        reps[k] = ra.mean() / rd.mean()
    R = R if paired else min(R, d.shape[1])  # the Student factor of the fewer corpora
    value = float(a.mean() / d.mean())
    tiny = np.finfo(float).tiny
    if value > 0:  # the Student correction, on the log scale
        lv = math.log(value)
        logs = np.log(np.maximum(reps, tiny))
        reps = np.exp(lv + (logs - lv) * student_factor(R, level))
    lo, hi = quantile_interval(reps, level)
    return clip_to_support(Estimate(value, lo, hi, "bootstrap", level, None, n_boot), floor)
