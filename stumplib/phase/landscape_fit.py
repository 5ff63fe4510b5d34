"""Where a loss curve along theta has its minimum and how curved it is there, with intervals
over replicates (seeds or scramblings): :func:`landscape_fit` for curves, :func:`landscape_summary`
for a :func:`.held_theta.landscape` run at every ``d`` and its theory
(:func:`.held_theory.held_theory`).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from stumplib.core.stats import Estimate


def _cubic(theta: np.ndarray, E: np.ndarray, centre: float) -> dict[str, float]:
    """Least-squares cubic through ``E(theta)``: its minimum inside the window, the curvature there
    and the curvatures of quadratic fits on either side of it."""
    x = theta - centre
    c = np.polyfit(x, E, 3)
    d1, d2 = np.polyder(c), np.polyder(c, 2)
    roots = np.roots(d1)
    roots = roots[np.isreal(roots)].real
    roots = roots[(np.polyval(d2, roots) > 0) & (roots >= x.min()) & (roots <= x.max())]
    xm = float(roots[0]) if roots.size else float(x[np.argmin(E)])
    res = {"theta_min": xm + centre, "curvature": float(np.polyval(d2, xm)),
           "third": float(6 * c[0]), "E_min": float(np.polyval(c, xm))}
    for side, sel in (("left", x <= xm), ("right", x >= xm)):
        pts = np.flatnonzero(sel)
        if pts.size < 3:  # the minimum's nearest three points on that side
            near = np.argsort(np.abs(x - xm))
            pts = np.sort(np.r_[pts, near[~np.isin(near, pts)]][:3])
        res[f"curvature_{side}"] = float(2 * np.polyfit(x[pts], E[pts], 2)[0])
    return res


def landscape_fit(theta: np.ndarray, E: np.ndarray, *, centre: float | None = None,
                  level: float = 0.95) -> dict[str, Estimate]:
    """Minimum and curvatures of loss curves along ``theta``, one curve per replicate (seed or
    scrambling), with intervals over the replicates.

    Each curve gets a least-squares cubic; its minimum (inside the window), the second
    derivative there (``curvature``), quadratic fits on the points left and right of the minimum
    (``curvature_left``, ``curvature_right``: how asymmetric the well is) and the third derivative
    (``third``). ``mean_curve_min`` is the minimum of the replicates' mean curve, the others are
    means of per-curve values (Student intervals). ``bias_predicted`` is what the asymmetry does
    to the mean of the per-curve minima when the curves differ by random tilts:
    ``-(E''' / 2 E'') Var(theta_min)``; ``bias_measured`` the mean of the minima minus the mean
    curve's minimum (bootstrap interval over replicates).

    Parameters
    ----------
    theta : np.ndarray, shape ``(T,)``
        The grid (``T >= 4``).
    E : np.ndarray, shape ``(R, T)``
        The loss curves, one per replicate (``R >= 2``).
    centre : float or None, optional
        Expansion point of the cubics (default: the grid's mean).
    level : float, optional
        Interval coverage, in ``(0, 1)`` (default 0.95).

    Returns
    -------
    dict of :class:`~stumplib.core.stats.Estimate`: ``theta_min``, ``curvature``,
    ``curvature_left``, ``curvature_right``, ``third``, ``mean_curve_min``, ``bias_measured``,
    ``bias_predicted``.
    """
    from stumplib.core.stats import bootstrap, mean_interval

    theta, E = np.asarray(theta, dtype=float), np.atleast_2d(np.asarray(E, dtype=float))
    if E.shape[1] != theta.size or theta.size < 4 or E.shape[0] < 2:
        raise ValueError("E must be (R >= 2, T) with T = len(theta) >= 4")
    c0 = float(theta.mean() if centre is None else centre)
    fits = [_cubic(theta, e, c0) for e in E]
    out = {k: mean_interval(np.array([f[k] for f in fits]), level=level)
           for k in ("theta_min", "curvature", "curvature_left", "curvature_right", "third")}
    E0 = E - E.mean(1, keepdims=True)  # the level per curve does not move the minimum

    def mean_min(e):
        return _cubic(theta, e.mean(0), c0)["theta_min"]

    out["mean_curve_min"] = bootstrap(E0, mean_min, n_boot=400, level=level)
    tmins = np.array([f["theta_min"] for f in fits])
    out["bias_measured"] = bootstrap((E0, tmins), lambda e, tm: tm.mean() - mean_min(e),
                                     n_boot=400, level=level)
    pred = np.array([-f["third"] / (2 * f["curvature"]) for f in fits])
    v = -out["third"].value / (2 * out["curvature"].value) * tmins.var(ddof=1)
    half = abs(v) * (pred.std(ddof=1) / math.sqrt(pred.size) / abs(pred.mean()) if pred.mean()
                     else np.inf)
    out["bias_predicted"] = Estimate(v, v - 1.96 * half, v + 1.96 * half, "seeds", level, None,
                                     pred.size)
    return out


def landscape_summary(land: Mapping[int, Mapping[str, np.ndarray]], held: Mapping[str, np.ndarray],
                      level: float = 0.95) -> dict[str, Any]:
    """Per ``d`` of a :func:`.held_theta.landscape` run, and for the theory
    (:func:`.held_theory.held_theory`): where the minimum lies and how curved the loss is there.

    Parameters
    ----------
    land : mapping
        ``{d: landscape output}``; only seeds converged at every ``theta`` are used.
    held : mapping
        :func:`.held_theory.held_theory`'s output along the same line (``thetas`` and
        ``train_loss``, shape ``(K, T)``).
    level : float, optional
        Interval coverage, in ``(0, 1)`` (default 0.95).

    Returns
    -------
    dict
        ``ds`` (increasing); lists over ``ds`` of Estimates ``free`` and ``best`` (seed means of
        the minimisers' theta from ``Q*`` and of the lowest found), ``mean_curve_min``,
        ``curvature``, ``curvature_left``, ``curvature_right``, ``third``, ``bias_measured``,
        ``bias_predicted`` (:func:`landscape_fit` over seeds); ``other_minimum`` (fraction of
        seeds whose lowest minimum is not the one reached from ``Q*``), ``free_sd`` (spread of
        the free theta over seeds), ``start_bias`` (Estimates: seed mean of the free minus the
        best theta, paired), ``free_test_error``, ``best_test_error`` (Estimates);
        ``start_bias_pooled`` (Estimate: the paired difference over the seeds of every ``d``);
        ``theory``: :func:`landscape_fit` over the scramblings, with ``theory_left``,
        ``theory_right`` (its side curvatures).
    """
    from stumplib.core.stats import mean_interval

    ds = sorted(int(d) for d in land)
    out: dict[str, Any] = {"ds": np.asarray(ds)}
    keys = ("mean_curve_min", "curvature", "curvature_left", "curvature_right", "third",
            "bias_measured", "bias_predicted", "free", "best", "other_minimum", "free_sd",
            "start_bias", "free_test_error", "best_test_error")
    for k in keys:
        out[k] = []
    for d in ds:
        L = land[d]
        ok = np.asarray(L["converged"], dtype=bool).all(1)
        fit = landscape_fit(L["thetas"], np.asarray(L["train_loss"])[ok], level=level)
        for k in keys[:7]:
            out[k].append(fit[k])
        for w in ("free", "best"):
            out[w].append(mean_interval(np.asarray(L[f"{w}_theta"])[ok], level=level))
            out[f"{w}_test_error"].append(mean_interval(np.asarray(L[f"{w}_test_error"])[ok],
                                                        level=level))
        out["start_bias"].append(mean_interval((np.asarray(L["free_theta"])
                                                - np.asarray(L["best_theta"]))[ok], level=level))
        moved = np.abs(np.asarray(L["best_theta"]) - np.asarray(L["free_theta"])) > 1e-6
        out["other_minimum"].append(float(moved[ok].mean()))
        out["free_sd"].append(float(np.asarray(L["free_theta"])[ok].std(ddof=1)))
    diffs = np.concatenate([(np.asarray(land[d]["free_theta"]) - np.asarray(land[d]["best_theta"]))
                            [np.asarray(land[d]["converged"], dtype=bool).all(1)] for d in ds])
    out["start_bias_pooled"] = mean_interval(diffs, level=level)
    th = landscape_fit(held["thetas"], held["train_loss"], level=level)
    out.update(theory=th, theory_left=th["curvature_left"], theory_right=th["curvature_right"])
    return out
