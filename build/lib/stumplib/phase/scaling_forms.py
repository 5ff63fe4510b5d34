"""Finite-size scaling: the approach in ``d`` of a seed mean, chosen by Akaike's criterion among
``a + b/d``, ``a + b/sqrt(d)``, ``a + b/d + c/d^2`` and the crossover ``a + b/sqrt(d) + c/d``
(:data:`FORMS`), with the limit ``a`` and its interval (:func:`choose_form`).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from stumplib.core.stats import Estimate

__all__ = ["FORMS", "choose_form"]


#: the candidate approaches in d: name -> the columns of the design matrix (the first is 1)
FORMS = {
    "1/d": lambda d: [d ** -1.0],
    "1/sqrt(d)": lambda d: [d ** -0.5],
    "1/d + 1/d^2": lambda d: [d ** -1.0, d ** -2.0],
    "crossover 1/sqrt(d) to 1/d": lambda d: [d ** -0.5, d ** -1.0],
}


def choose_form(d: Any, y: Any, se: Any, *, forms: Sequence[str] | None = None,
                level: float = 0.95, delta_aic: float = 2.0) -> dict[str, Any]:
    """The approach of a seed mean ``y(d)`` to its limit, chosen by fit quality.

    Each form of :data:`FORMS` is a weighted least-squares fit with the known standard errors
    ``se``; its limit is the constant term. Forms are ranked by Akaike's criterion with its
    small-sample correction, ``AICc = chi^2 + 2 k + 2 k (k + 1) / (D - k - 1)`` (``k``
    parameters, ``D`` points); a form needs ``D >= k + 2`` (a three-parameter form five ``d``).
    The chosen form's limit
    has a normal interval from the fit's covariance, widened by ``sqrt(chi^2 / dof)`` when the fit
    is worse than the errors allow; ``envelope`` spans the intervals of every form within
    ``delta_aic`` of the best (the uncertainty of the choice itself).

    Parameters
    ----------
    d : array_like, shape ``(D,)``
        Dimensions (``> 0``, ``D >= 3``; a form needs two degrees of freedom, so in practice
        ``D >= 4``).
    y : array_like, shape ``(D,)``
        Seed means at each ``d``.
    se : array_like, shape ``(D,)``
        Their standard errors (``> 0``).
    forms : sequence of str or None, optional
        Names from :data:`FORMS` (default: all).
    level : float, optional
        Interval coverage, in ``(0, 1)`` (default 0.95).
    delta_aic : float, optional
        Forms within this much AICc of the best count as acceptable (default 2).

    Returns
    -------
    dict
        ``form`` (the chosen name), ``limit`` (Estimate), ``envelope`` (Estimate: the chosen
        value, the hull of the acceptable forms' intervals), ``fits`` (name -> dict of ``limit``,
        ``chi2``, ``dof``, ``aic`` (AICc), ``p_value``, ``coef``), ``acceptable`` (names).
    """
    from scipy.stats import chi2 as chi2_dist, norm

    d, y, se = (np.asarray(v, dtype=float).ravel() for v in (d, y, se))
    if not (d.size == y.size == se.size >= 3) or not np.all(np.isfinite(np.r_[d, y, se])) \
            or np.any(se <= 0) or np.any(d <= 0):
        raise ValueError("d, y, se: finite arrays of one length >= 3, d > 0, se > 0")
    names = list(FORMS) if forms is None else list(forms)
    bad = [f for f in names if f not in FORMS]
    if bad:
        raise ValueError(f"forms must be among {list(FORMS)}; got {bad}")
    z = float(norm.ppf(0.5 + level / 2))
    fits = {}
    for name in names:
        X = np.column_stack([np.ones_like(d)] + FORMS[name](d))
        k = X.shape[1]
        if d.size - k < 2:
            continue
        W = 1 / se ** 2
        cov = np.linalg.inv(X.T @ (X * W[:, None]))
        beta = cov @ (X.T @ (W * y))
        chi2 = float((((y - X @ beta) / se) ** 2).sum())
        dof = d.size - k
        s = math.sqrt(cov[0, 0] * max(1.0, chi2 / dof))
        fits[name] = dict(limit=Estimate(float(beta[0]), beta[0] - z * s, beta[0] + z * s, "seeds",
                                         level, None, int(d.size)),
                          chi2=chi2, dof=dof, aic=chi2 + 2 * k + 2 * k * (k + 1) / (dof - 1),
                          p_value=float(chi2_dist.sf(chi2, dof)),
                          coef=beta)
    if not fits:
        raise ValueError(f"d: {d.size} points leave no form two degrees of freedom (need >= 4)")
    best = min(fits, key=lambda f: fits[f]["aic"])
    ok = [f for f in fits if fits[f]["aic"] < fits[best]["aic"] + delta_aic]
    lim = fits[best]["limit"]
    env = Estimate(lim.value, min(fits[f]["limit"].lo for f in ok),
                   max(fits[f]["limit"].hi for f in ok), "seeds", level, None, int(d.size))
    return dict(form=best, limit=lim, envelope=env, fits=fits, acceptable=ok)
