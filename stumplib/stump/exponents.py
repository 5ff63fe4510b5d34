"""What the chapter measures on population trajectories: the end of calibration and the rates.

On the flows of :func:`stumplib.stump.flow.integrate_flow` this module measures the end of the
calibration phase (:func:`calibration_time`) and how much of the growth of the scale came before it
(:func:`growth_share_at_calibration`), power-law exponents over a late window with an interval from
the spread over fit windows (:func:`fit_exponent`), and the asymptotic exponents, the local
exponents extrapolated to ``beta -> inf`` (:func:`extrapolate_exponent`,
:func:`asymptotic_exponents`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stumplib.core.stats import (Estimate, PowerLawFit, fit_power_law, interp_crossing, ols,
                                 window_interval, window_refits)
from stumplib.core.validation import check_int, check_real
from stumplib.stump.flow import FlowResult, interpolate_flow


def calibration_time(result: FlowResult) -> np.ndarray:
    """End of the calibration phase of each run.

    Definition: the first time ``t`` at which both

    1. ``c(t) >= tau_hi`` (every threshold of the prior lies below the relative label score), and
    2. ``d log beta >= |dc|`` along the trajectory (the path in the ``(c, log beta)`` plane has
       turned from mostly horizontal, label score moving, to mostly vertical, scale growing; the
       comparison does not depend on how time is parametrised).

    The crossing is located by linear interpolation in ``log t`` of
    ``h = min(c - tau_hi, d log beta/d log t - |dc/d log t|)`` between the bracketing records; a run
    for which both hold at ``t = 0`` gets ``0``, a run for which they never hold gets ``nan``.

    Parameters
    ----------
    result : FlowResult

    Returns
    -------
    np.ndarray, shape ``(R,)``
    """
    t = result.t
    # velocities per unit log time at t > 0; at t = 0 use the real-time velocities (same sign)
    scale = np.where(t > 0, t, 1.0)
    vlog = scale * result.dbeta_dt / result.beta
    vc = scale * (result.db_dt - result.c * result.dbeta_dt) / result.beta
    h = np.minimum(result.c - result.tau_hi, vlog - np.abs(vc))
    out = np.full(h.shape[0], np.nan)
    for r in range(h.shape[0]):
        ok = np.nonzero(h[r] >= 0)[0]
        if ok.size == 0:
            continue
        k = int(ok[0])
        # t[0] = 0 has no logarithm: a crossing in the first interval is put at t[1]
        out[r] = 0.0 if k == 0 else t[1] if k == 1 else interp_crossing(
            t[k - 1], t[k], h[r, k - 1], h[r, k], 0.0, log_x=True)
    return out


def growth_share_at_calibration(result: FlowResult, t_cal: Any) -> np.ndarray:
    """How much of each run's growth of ``log beta`` happened before calibration ended.

    The share is ``(log beta(t_cal) - log beta_min) / (log beta(t_max) - log beta_min)`` with
    ``beta_min`` the run's smallest recorded scale (a small uncalibrated start first *loses*
    scale): ``0`` when the scale has not grown at all by ``t_cal``, ``1`` when all of it came first.

    Parameters
    ----------
    result : the flow (:func:`stumplib.stump.flow.integrate_flow`).
    t_cal : array_like, shape ``(R,)``: :func:`calibration_time` of each run (``nan``: never).

    Returns
    -------
    np.ndarray, shape ``(R,)``: the share, ``nan`` for a run that never calibrates or whose scale
    does not grow (or crosses zero).
    """
    t_cal = np.asarray(t_cal, dtype=float).ravel()
    if t_cal.shape[0] != result.beta.shape[0]:
        raise ValueError(f"t_cal must have one entry per run ({result.beta.shape[0]}); "
                         f"got {t_cal.size}")
    out = np.full(t_cal.shape, np.nan)
    for r, tc in enumerate(t_cal):
        beta = result.beta[r]
        if not np.isfinite(tc) or np.any(beta <= 0):
            continue
        lo, end = np.log(beta.min()), np.log(beta[-1])
        if end - lo <= 0:
            continue
        at = np.log(interpolate_flow(result, [tc], r)[0][0])
        out[r] = float(np.clip((at - lo) / (end - lo), 0.0, 1.0))
    return out


def _window_mask(t: np.ndarray, t_lo: float, t_hi: float) -> np.ndarray:
    return (t >= t_lo * (1 - 1e-12)) & (t <= t_hi * (1 + 1e-12))


def fit_exponent(t: Any, y: Any, t_lo: float, t_hi: float, *, n_windows: int = 400,
                 min_fraction: float = 0.5, level: float = 0.95, seed: int = 0) -> PowerLawFit:
    """Power-law exponent of ``y(t)`` over ``[t_lo, t_hi]``, with an interval over fit windows.

    The point estimate is the log-log least-squares slope over all records in ``[t_lo, t_hi]``
    (:func:`stumplib.core.stats.fit_power_law`). A deterministic trajectory has no sampling noise;
    what is uncertain is the exponent's dependence on *where* one fits, since finite-time
    corrections make the local exponent drift. The interval is therefore the central ``level`` range
    of the slopes fitted on ``n_windows`` random sub-windows ``[10^u, 10^v]`` inside
    ``[t_lo, t_hi]`` whose length is at least ``min_fraction`` of the full window (in decades).
    ``method = "windows"``.

    Parameters
    ----------
    t, y : array_like, shape ``(K,)``, positive (``t = 0`` records are ignored).
    t_lo, t_hi : the fit window, ``0 < t_lo < t_hi``, holding at least 5 records.
    n_windows : random sub-windows (>= 20).
    min_fraction : minimal sub-window length as a fraction of the full window, in ``(0, 1]``.
    level : interval level in ``(0, 1)``.
    seed : seed of the sub-window draw.

    Returns
    -------
    PowerLawFit
    """
    t = np.asarray(t, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if t.shape != y.shape or t.size == 0:
        raise ValueError(f"t and y must be non-empty and of the same length; "
                         f"got {t.size} and {y.size}")
    t_lo = check_real("t_lo", t_lo, low=0.0, low_open=True)
    t_hi = check_real("t_hi", t_hi, low=t_lo, low_open=True)
    n_windows = check_int("n_windows", n_windows, minimum=20)
    min_fraction = check_real("min_fraction", min_fraction, low=0.0, high=1.0, low_open=True)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    check_int("seed", seed, minimum=0)
    sel = _window_mask(t, t_lo, t_hi) & (t > 0)
    if sel.sum() < 5:
        raise ValueError(f"the window [t_lo, t_hi] = [{t_lo:.3g}, {t_hi:.3g}] must hold at least 5 "
                         f"records; it holds {int(sel.sum())}")
    tt, yy = t[sel], y[sel]
    if not (np.all(np.isfinite(yy)) and np.all(yy > 0)):
        raise ValueError("y must be finite and positive inside the fit window")
    base = fit_power_law(tt, yy, n_boot=100, seed=seed)
    lt, ly = np.log10(tt), np.log10(yy)
    slopes = window_refits(lt, lambda m: ols(lt[m], ly[m])[0], n_windows,
                           min_fraction=min_fraction, min_points=3, seed=seed)
    return PowerLawFit(slope=base.slope, prefactor=base.prefactor,
                       ci=window_interval(base.slope, slopes, level), stderr=base.stderr,
                       n_points=base.n_points, method="windows", level=level)


def extrapolate_exponent(beta: Any, local: Any, *, beta_min: float, n_windows: int = 200,
                         level: float = 0.95, seed: int = 0) -> Estimate:
    """Asymptotic exponent: the limit of the local exponent as ``beta -> inf``.

    The local exponent ``p = d log beta / d log t`` approaches its limit with corrections of order
    ``1/beta`` up to logarithms. Over the records with ``beta >= beta_min`` we regress ``p`` on
    ``(1, 1/beta, log(beta)/beta)``; the intercept is the point estimate ``p_inf``. The interval is
    the central ``level`` range of the intercepts of both that model and the simpler
    ``(1, 1/beta)`` model, refitted on random sub-ranges of ``log beta`` (each at least half the
    span): it measures how much the extrapolation depends on the correction model and the range.

    Parameters
    ----------
    beta, local : array_like, shape ``(K,)``
    beta_min : smallest ``beta`` used (> 0); at least 6 records must satisfy it.
    n_windows : random sub-ranges (>= 20).
    level : interval level in ``(0, 1)``.
    seed : seed of the sub-range draw.

    Returns
    -------
    Estimate
        ``p_inf`` with its interval (kind ``"windows"``); ``n`` the records used, ``n_dropped``
        those left out because ``beta`` or the local exponent is not finite (records below
        ``beta_min`` are outside the window, not dropped).
    """
    beta = np.asarray(beta, dtype=float).ravel()
    local = np.asarray(local, dtype=float).ravel()
    if beta.shape != local.shape:
        raise ValueError(f"beta and local must have the same length; "
                         f"got {beta.size} and {local.size}")
    beta_min = check_real("beta_min", beta_min, low=0.0, low_open=True)
    n_windows = check_int("n_windows", n_windows, minimum=20)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    check_int("seed", seed, minimum=0)
    sel = np.isfinite(beta) & np.isfinite(local) & (beta >= beta_min)
    if sel.sum() < 6:
        raise ValueError(f"at least 6 records need beta >= beta_min = {beta_min:g}; "
                         f"got {int(sel.sum())}")
    bb, p = beta[sel], local[sel]

    def icpt(m: np.ndarray, with_log: bool) -> float:
        cols = [np.ones(m.sum()), 1 / bb[m]] + ([np.log(bb[m]) / bb[m]] if with_log else [])
        return float(np.linalg.lstsq(np.stack(cols, 1), p[m], rcond=None)[0][0])

    p_inf = icpt(np.ones(bb.size, bool), True)
    lb = np.log(bb)
    icpts = window_refits(lb, lambda m: (icpt(m, True), icpt(m, False)), n_windows,
                          min_fraction=0.5, min_points=4, seed=seed)
    lo, hi = window_interval(p_inf, icpts, level)
    n_bad = int((~(np.isfinite(beta) & np.isfinite(local)) & ~(beta < beta_min)).sum())
    why = f"{n_bad} records with a non-finite beta or local exponent" if n_bad else ""
    return Estimate(p_inf, lo, hi, "windows", level, None, int(bb.size), n_bad, why)


def asymptotic_exponents(result: "FlowResult", run: int = 0, *, t_from: float,
                         n_windows: int = 100, seed: int = 0) -> tuple[Estimate, Estimate]:
    """The exponents of ``beta(t)`` and of the RMSE of one flow run, extrapolated to
    ``beta -> inf``: the claim's asymptotic exponents (a finite-window fit is biased by the
    approach from above).

    Both local exponents are exact (from the flow's velocity:
    :attr:`~stumplib.stump.flow.FlowResult.dlogbeta_dlogt`,
    :attr:`~stumplib.stump.flow.FlowResult.dlogrmse_dlogt`) and are extrapolated over the records
    with ``t >= t_from`` by :func:`extrapolate_exponent`.

    Parameters
    ----------
    result : the flow.
    run : index of the run, in ``[0, R)``.
    t_from : first time of the extrapolation range (> 0; at least 6 records must follow it).
    n_windows : random sub-ranges of the interval (>= 20).
    seed : seed of the sub-range draw.

    Returns
    -------
    (p, q) : :class:`~stumplib.core.stats.Estimate` of the exponents of ``beta`` and of the RMSE.
    """
    if not isinstance(result, FlowResult):
        raise ValueError(f"result must be a FlowResult; got {type(result).__name__}")
    run = check_int("run", run, minimum=0, maximum=result.beta.shape[0] - 1)
    t_from = check_real("t_from", t_from, low=0.0, low_open=True)
    late = result.t >= t_from
    beta = result.beta[run][late]
    kw = dict(beta_min=float(beta.min()) if beta.size else 1.0, n_windows=n_windows, seed=seed)
    return (extrapolate_exponent(beta, result.dlogbeta_dlogt[run][late], **kw),
            extrapolate_exponent(beta, result.dlogrmse_dlogt[run][late], **kw))
