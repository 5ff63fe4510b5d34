"""Finite-size scaling: the approach in ``d`` of a seed mean, fitted by each of
``a + b/d``, ``a + b/sqrt(d)``, ``a + b/d + c/d^2`` and the crossover ``a + b/sqrt(d) + c/d``
(:data:`FORMS`), with the limit ``a`` and its standard error per form.

Which forms are acceptable: :func:`choose_form` (four or more ``d``: the small-sample Akaike
criterion, every form within 2 of the best) and :func:`accept_forms` (three or more ``d``: every
two-parameter form whose fit is not rejected at 5%, as chapter 6's confirmatory run fixed in
advance). Either way, every acceptable form is judged with its **own** fit: :func:`form_z` gives
each one's limit, standard error and z-score against a theory (the book's rule that uses them is
:func:`stumplib.book.verdicts.per_form_theory`).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from stumplib.core.stats import Estimate

#: the candidate approaches in d: name -> the columns of the design matrix (the first is 1)
FORMS = {
    "1/d": lambda d: [d ** -1.0],
    "1/sqrt(d)": lambda d: [d ** -0.5],
    "1/d + 1/d^2": lambda d: [d ** -1.0, d ** -2.0],
    "crossover 1/sqrt(d) to 1/d": lambda d: [d ** -0.5, d ** -1.0],
}


def _fits(d: np.ndarray, y: np.ndarray, se: np.ndarray, names: Sequence[str], z: float,
          level: float, *, min_dof: int) -> dict[str, dict[str, Any]]:
    """:func:`_fit` of every form in ``names`` that keeps at least ``min_dof`` degrees of
    freedom."""
    fits = {name: _fit(d, y, se, name, z, level) for name in names}
    return {k: f for k, f in fits.items() if f["dof"] >= min_dof}


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
    ``delta_aic`` of the best (the uncertainty of the choice itself). The envelope is a range to
    show, not a standard error: a theory is judged against each acceptable form's own fit
    (:func:`form_z`).

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
        ``se`` (its standard error), ``chi2``, ``dof``, ``aic`` (AICc), ``p_value``, ``coef``),
        ``acceptable`` (names, the chosen form first).
    """
    d, y, se, names, z = _inputs(d, y, se, forms, level, min_points=3)
    fits = _fits(d, y, se, names, z, level, min_dof=2)
    if not fits:
        raise ValueError(f"d: {d.size} points leave no form two degrees of freedom (need >= 4)")
    best = min(fits, key=lambda f: fits[f]["aic"])
    ok = sorted((f for f in fits if fits[f]["aic"] < fits[best]["aic"] + delta_aic),
                key=lambda f: fits[f]["aic"])
    lim = fits[best]["limit"]
    env = Estimate(lim.value, min(fits[f]["limit"].lo for f in ok),
                   max(fits[f]["limit"].hi for f in ok), "seeds", level, None, int(d.size))
    return dict(form=best, limit=lim, envelope=env, fits=fits, acceptable=ok)


def accept_forms(d: Any, y: Any, se: Any, *, forms: Sequence[str] | None = None,
                 level: float = 0.95, p_min: float = 0.05) -> dict[str, Any]:
    """The approaches of a seed mean ``y(d)`` that its data do not reject: every two-parameter
    form of :data:`FORMS` whose weighted fit passes the chi-square test at ``p_min``.

    The rule chapter 6's confirmatory run fixed before its data (``scripts/PHASE_CONFIRM.md``):
    with three ``d``, a two-parameter form (``1/d``, ``1/sqrt(d)``) keeps one degree of freedom
    and a three-parameter form none (it cannot be tested, so it is not used; with more ``d`` a
    form is used when it keeps at least one). A form is **acceptable** when its chi-square
    p-value is at least ``p_min``; its standard error is the fit's, widened by
    ``sqrt(chi^2 / dof)`` when that exceeds 1 (as in :func:`choose_form`). Unlike
    :func:`choose_form` no form is preferred by a criterion that needs two degrees of freedom:
    ``form`` is only the acceptable one with the smallest chi-square (shown first).

    Parameters
    ----------
    d : array_like, shape ``(D,)``
        Dimensions (``> 0``, ``D >= 3``).
    y : array_like, shape ``(D,)``
        Seed means at each ``d``.
    se : array_like, shape ``(D,)``
        Their standard errors (``> 0``).
    forms : sequence of str or None, optional
        Names from :data:`FORMS` (default: all; those left without a degree of freedom are not
        fitted).
    level : float, optional
        Interval coverage, in ``(0, 1)`` (default 0.95).
    p_min : float, optional
        A fit whose chi-square p-value is below this is rejected (default 0.05), in ``(0, 1)``.

    Returns
    -------
    dict
        ``form`` (the acceptable form with the smallest chi-square, ``None`` when none is
        acceptable), ``limit`` (its Estimate; NaN when none), ``fits`` (name -> dict of
        ``limit``, ``se``, ``chi2``, ``dof``, ``p_value``, ``coef``, ``aic``), ``acceptable``
        (names, the smallest chi-square first).
    """
    if not (0.0 < p_min < 1.0):
        raise ValueError(f"p_min must lie in (0, 1); got {p_min!r}")
    d, y, se, names, z = _inputs(d, y, se, forms, level, min_points=3)
    fits = _fits(d, y, se, names, z, level, min_dof=1)
    if not fits:
        raise ValueError(f"d: {d.size} points leave no form a degree of freedom (need >= 3)")
    ok = sorted((f for f in fits if fits[f]["p_value"] >= p_min), key=lambda f: fits[f]["chi2"])
    lim = fits[ok[0]]["limit"] if ok else Estimate.nan("seeds")
    return dict(form=ok[0] if ok else None, limit=lim, fits=fits, acceptable=ok)


def form_z(fits: Mapping[str, Mapping[str, Any]], acceptable: Sequence[str], theory: float,
           theory_err: float = 0.0) -> dict[str, dict[str, float]]:
    """Each acceptable form judged with its own fit: its limit, standard error and z-score
    against a theory, ``z = (limit - theory) / sqrt(SE^2 + theory_err^2)``.

    Parameters
    ----------
    fits : mapping
        The ``fits`` of :func:`choose_form` or :func:`accept_forms` (each with ``limit`` and
        ``se``).
    acceptable : sequence of str
        The forms to judge, in the order wanted (e.g. the chosen form first).
    theory : float
        The theory's value (NaN: every ``z`` is NaN).
    theory_err : float, optional
        The theory's own standard error (a quadrature error; default 0).

    Returns
    -------
    dict
        ``{form: {"limit", "se", "z"}}`` in the order of ``acceptable``.
    """
    if not (math.isfinite(theory_err) and theory_err >= 0):
        raise ValueError(f"theory_err must be finite and >= 0; got {theory_err!r}")
    missing = [f for f in acceptable if f not in fits]
    if missing:
        raise ValueError(f"acceptable forms without a fit: {missing}")
    out = {}
    for f in acceptable:
        lim, se = float(fits[f]["limit"].value), float(fits[f]["se"])
        out[f] = dict(limit=lim, se=se, z=(lim - theory) / math.hypot(se, theory_err))
    return out


def _inputs(d: Any, y: Any, se: Any, forms: Sequence[str] | None, level: float,
            min_points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], float]:
    """The checked arrays, the form names and the normal quantile of ``level``."""
    from scipy.stats import norm

    d, y, se = (np.asarray(v, dtype=float).ravel() for v in (d, y, se))
    if not (d.size == y.size == se.size >= min_points) \
            or not np.all(np.isfinite(np.r_[d, y, se])) or np.any(se <= 0) or np.any(d <= 0):
        raise ValueError(f"d, y, se: finite arrays of one length >= {min_points}, d > 0, se > 0")
    if not (0.0 < level < 1.0):
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    names = list(FORMS) if forms is None else list(forms)
    bad = [f for f in names if f not in FORMS]
    if bad:
        raise ValueError(f"forms must be among {list(FORMS)}; got {bad}")
    return d, y, se, names, float(norm.ppf(0.5 + level / 2))


def _fit(d: np.ndarray, y: np.ndarray, se: np.ndarray, name: str, z: float,
         level: float) -> dict[str, Any]:
    """One form's weighted least-squares fit: limit (Estimate), its standard error (widened by
    ``sqrt(chi^2 / dof)`` when above 1), ``chi2``, ``dof``, ``p_value``, ``coef`` and ``aic``
    (AICc; infinite with fewer than two degrees of freedom, where it is not defined)."""
    from scipy.stats import chi2 as chi2_dist

    X = np.column_stack([np.ones_like(d)] + FORMS[name](d))
    k = X.shape[1]
    dof = d.size - k
    if dof < 1:
        return dict(dof=dof)
    W = 1 / se ** 2
    cov = np.linalg.inv(X.T @ (X * W[:, None]))
    beta = cov @ (X.T @ (W * y))
    chi2 = float((((y - X @ beta) / se) ** 2).sum())
    s = math.sqrt(cov[0, 0] * max(1.0, chi2 / dof))
    aic = chi2 + 2 * k + 2 * k * (k + 1) / (dof - 1) if dof >= 2 else math.inf
    return dict(limit=Estimate(float(beta[0]), beta[0] - z * s, beta[0] + z * s, "seeds", level,
                               None, int(d.size)),
                se=s, chi2=chi2, dof=dof, aic=aic, p_value=float(chi2_dist.sf(chi2, dof)),
                coef=beta)
