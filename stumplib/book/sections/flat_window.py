"""Chapter 6's flat window on the page: the scaling table, the table of minima and the section's
verdict.

The science it presents (the overlaps of the minimisers, the landscape along theta, its theory,
the scaling forms) lives in :mod:`stumplib.phase.overlaps`, :mod:`stumplib.phase.held_theta`,
:mod:`stumplib.phase.held_theory`, :mod:`stumplib.phase.landscape_fit` and
:mod:`stumplib.phase.scaling_forms`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from stumplib.book.verdicts import Verdict, against_target, choose_theory
from stumplib.core.stats import Estimate
from stumplib.phase.scaling_forms import choose_form

__all__ = ["scaling_rows", "minima_rows", "explanation_verdict", "lowest_minima_rows",
           "lowest_min_verdict"]


def scaling_rows(table: Mapping[str, np.ndarray], alpha_index: int = 0, *,
                 quantities: Sequence[str] = ("train_loss", "theta", "q", "test_error"),
                 theory: Mapping[str, np.ndarray] | None = None
                 ) -> tuple[list[dict], dict[str, dict]]:
    """:func:`~stumplib.phase.scaling_forms.choose_form` for each overlap at one alpha, as table
    rows.

    Parameters
    ----------
    table : mapping
        :func:`stumplib.phase.overlaps.overlap_table`'s output.
    alpha_index : int, optional
        Row of ``table`` (index into its ``alphas``; default 0). Only ``d`` with a finite
        ``theta`` and more than one converged seed are used; a quantity with fewer than four such
        ``d`` gets no row.
    quantities : sequence of str, optional
        Keys of ``table`` to extrapolate (default ``train_loss``, ``theta``, ``q``,
        ``test_error``).
    theory : mapping or None, optional
        :func:`stumplib.phase.overlaps.theory_points`' output (the rows show the theory and the
        distance to it).

    Returns
    -------
    tuple
        ``(rows, fits)``: one row per quantity (chosen form, its limit and interval, the
        acceptable forms' hull, the theory, the limit's relative distance to it), and
        ``{quantity: choose_form output}``.
    """
    rows, fits = [], {}
    ok = np.isfinite(table["theta"][alpha_index]) & (table["n"][alpha_index] > 1)
    d = table["ds"][ok]
    for k in quantities:
        y, se = table[k][alpha_index][ok], table[f"{k}_se"][alpha_index][ok]
        if d.size < 4:
            continue
        f = choose_form(d, y, se)
        fits[k] = f
        row = {"quantity": k.replace("_", " "), "form": f["form"], "limit": f["limit"].value,
               "95% interval": f"[{f['limit'].lo:.5g}, {f['limit'].hi:.5g}]",
               "forms within 2 AIC": f"[{f['envelope'].lo:.5g}, {f['envelope'].hi:.5g}]",
               "chi2 / dof": f"{f['fits'][f['form']]['chi2']:.1f} / {f['fits'][f['form']]['dof']}"}
        if theory is not None and k in theory:
            t = float(theory[k][alpha_index])
            row.update(theory=t, **{"limit / theory - 1": f["limit"].value / t - 1})
        rows.append(row)
    return rows, fits


def minima_rows(land: Mapping[int, Mapping[str, np.ndarray]],
                theory: Mapping[str, float] | None = None) -> list[dict]:
    """The minimisers reached from ``Q*`` and the lowest minima found, per ``d`` of a
    :func:`stumplib.phase.held_theta.landscape` run (seed means and standard errors), and each
    extrapolated to ``d -> infinity`` with :func:`~stumplib.phase.scaling_forms.choose_form`
    (needs four ``d``).

    Parameters
    ----------
    land : mapping
        ``{d: landscape output}``.
    theory : mapping or None, optional
        ``theta`` and ``test_error`` of the theory, added as a last row (``None``: no row).

    Returns
    -------
    list of dict
        Rows ``d``, ``seeds``, ``theta from Q*``, ``theta lowest``, ``test error from Q*``,
        ``test error lowest`` (``mean +- se`` strings); then ``d -> infinity`` (limit [interval],
        the chosen form) and ``theory``.
    """
    ds = sorted(int(d) for d in land)
    cols = {"theta from Q*": "free_theta", "theta lowest": "best_theta",
            "test error from Q*": "free_test_error", "test error lowest": "best_test_error"}
    stats_ = {c: [] for c in cols}
    rows = []
    for d in ds:
        row: dict[str, Any] = {"d": d, "seeds": len(land[d]["seeds"])}
        for c, k in cols.items():
            v = np.asarray(land[d][k], dtype=float)
            m, s = v.mean(), v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else np.nan
            stats_[c].append((m, s))
            fmt = ".4f" if c.startswith("theta") else ".6f"
            row[c] = f"{m:{fmt}} +- {s:{fmt}}"
        rows.append(row)
    if len(ds) >= 4:
        row = {"d": "infinity", "seeds": ""}
        for c in cols:
            m, s = (np.array(x) for x in zip(*stats_[c]))
            f = choose_form(ds, m, s)
            row[c] = f"{f['limit']:{'.4f' if c.startswith('theta') else '.6f'}} ({f['form']})"
        rows.append(row)
    if theory is not None:
        rows.append({"d": "theory", "seeds": "", **{c: f"{theory[cols[c].split('_', 1)[1]]:.6f}"
                                                    for c in cols}})
    return rows


def explanation_verdict(theta_limit: Estimate, theory_theta: Estimate, theta_dmax: float,
                        landscape_min: Estimate, *, dmax: int, d_landscape: int,
                        form: str, start_bias: Estimate | None = None,
                        bias_where: str = "") -> Verdict:
    """Is the minimisers' departure from the accurate theory at this point a finite-size effect?

    ``holds`` ("finite-size"): the extrapolated ``theta`` (the hull of the acceptable scaling
    forms, :func:`~stumplib.phase.scaling_forms.choose_form`) contains the theory's (widened by
    its quadrature error) and excludes the mean at the largest ``d`` (so the data say the
    minimisers are still moving towards it). ``fails`` ("theory"): it excludes the theory's, and
    so does the minimum of the landscape at the largest ``d`` measured (the seed-mean constrained
    training loss, :func:`~stumplib.phase.landscape_fit.landscape_fit`). ``undecided`` otherwise
    (an interval holding both the theory and the largest-``d`` mean cannot tell them apart),
    saying what would decide.

    Parameters
    ----------
    theta_limit : Estimate
        The extrapolated theta (interval: the forms' hull,
        :func:`~stumplib.phase.scaling_forms.choose_form`'s ``envelope``).
    theory_theta : Estimate
        The accurate theory's theta (interval: its quadrature error, the tolerance).
    theta_dmax : float
        The seed mean of theta at the largest ``d``.
    landscape_min : Estimate
        The seed-mean landscape's minimum at ``d_landscape``.
    dmax : int
        The largest ``d`` of the minimisers (named in the sentence).
    d_landscape : int
        The ``d`` of the landscape (named in the sentence).
    form : str
        The chosen scaling form (named in the sentence).
    start_bias : Estimate or None, optional
        The paired seed mean of theta reached from ``Q*`` minus the lowest minimum's
        (:func:`~stumplib.phase.landscape_fit.landscape_summary`); when it excludes 0 the
        sentence says so (the status does not change: it names a cause, the rule decides).
    bias_where : str, optional
        Where ``start_bias`` was measured (text added in parentheses; default none).

    Returns
    -------
    Verdict
        The status and its sentence.
    """
    tol = theory_theta.half_width if math.isfinite(theory_theta.half_width) else 0.0
    ext = against_target(theta_limit, theory_theta.value, symbol=f"theta at d -> infinity ({form})",
                         tol=tol, fmt=".4f", target_text=f"the theory's {theory_theta.value:.4f}")
    land = against_target(landscape_min, theory_theta.value, tol=tol, fmt=".4f",
                          symbol=f"the landscape's minimum at d = {d_landscape}",
                          target_text=f"{theory_theta.value:.4f}")
    moving = not theta_limit.contains(theta_dmax)
    if ext.status == "holds" and moving:
        return Verdict("holds", f"Finite-size: {ext.sentence}")
    if ext.status == "holds":
        return Verdict("undecided", f"{ext.sentence.rstrip('.')}, but the interval also holds the "
                       f"mean at d = {dmax} ({theta_dmax:.4f}): larger d would decide.")
    if ext.status == "fails" and land.status == "fails":
        return Verdict("fails", f"Theory: {ext.sentence.rstrip('.')}, and "
                       f"{land.sentence[0].lower()}{land.sentence[1:]}")
    if ext.status == "fails":
        why = ""
        if start_bias is not None and math.isfinite(start_bias.lo) and not start_bias.contains(0.0):
            why = (f"; the minimisers reached from Q* are not the lowest: theta differs by "
                   f"{start_bias:.4f}{' (' + bias_where + ')' if bias_where else ''}")
        return Verdict("undecided", f"{ext.sentence.rstrip('.')}, but {land.sentence[0].lower()}"
                       f"{land.sentence[1:].rstrip('.')}{why}: the lowest minima followed to "
                       "larger d would decide.")
    return Verdict("undecided", f"{ext.sentence.rstrip('.')}: more d or seeds would decide.")


def lowest_minima_rows(summ: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """One table row per ``d`` of :func:`stumplib.phase.lowest_minima.summary`: seeds, how many
    have a lower minimum than the informed start's, the search's saturation, the minima found,
    theta and test error of the informed start's minimum and of the lowest, and their paired
    theta gap with its 95% interval.

    Parameters
    ----------
    summ : mapping
        :func:`stumplib.phase.lowest_minima.summary`'s output.

    Returns
    -------
    list of dict
        The rows (numbers formatted: ``mean ± standard error``; the gap ``[lo, hi]``).
    """
    rows = []
    for i, d in enumerate(summ["ds"]):
        n, ok = int(summ["seeds"][i]), int(summ["seeds_ok"][i])

        def pm(k: str, f: str = ".4f") -> str:
            return f"{summ[k][i]:{f}} ± {summ[k + '_se'][i]:{f}}"

        rows.append({"d": int(d), "seeds": n if ok == n else f"{ok} of {n}",
                     "lower minimum than from Q*": f"{summ['share_lower'][i]:.0%}",
                     "saturated": f"{summ['saturated'][i]:.0%}",
                     "minima per seed (mean, max)": f"{summ['distinct_mean'][i]:.1f}, "
                                                    f"{int(summ['distinct_max'][i])}",
                     "theta from Q*": pm("informed_theta"), "theta lowest": pm("lowest_theta"),
                     "theta gap [95%]": f"{summ['theta_gap'][i]:.4f} "
                                        f"[{summ['theta_gap_lo'][i]:.4f}, "
                                        f"{summ['theta_gap_hi'][i]:.4f}]",
                     "test error from Q*": pm("informed_test_error", ".6f"),
                     "test error lowest": pm("lowest_test_error", ".6f")})
    return rows


def lowest_min_verdict(limit: Estimate, accurate: float, accurate_err: float, published: float,
                       *, follow: float | None = None, separate: float | None = None,
                       what: str = "the lowest minima") -> Verdict:
    """Whether the lowest minima's extrapolated test error follows the accurate theory rather
    than the published one (:func:`stumplib.book.verdicts.choose_theory` on the two z-scores).

    The limit's standard error is its interval's half-width over the normal quantile of its
    level (for an envelope over forms: conservative); the accurate theory's quadrature error is
    combined with it, the published curve has none.

    Parameters
    ----------
    limit : Estimate
        The extrapolated test error (an envelope over acceptable forms).
    accurate, accurate_err : float
        The accurate theory's test error and its quadrature error (one standard error).
    published : float
        The published theory's test error.
    follow, separate : float or None
        The rule's thresholds in standard errors (``None``: the registry's, claim
        ``lowest_min``).
    what : str
        The sentence's subject.

    Returns
    -------
    Verdict
    """
    from scipy.stats import norm

    from stumplib.book.registry import rule_arguments

    args = rule_arguments("lowest_min")
    follow = args["follow"] if follow is None else follow
    separate = args["separate"] if separate is None else separate
    se = (limit.hi - limit.lo) / (2 * norm.ppf(0.5 + limit.level / 2))
    if not (np.isfinite(se) and se > 0 and np.isfinite(limit.value)):
        return Verdict("undecided", f"{what}: no finite extrapolated test error.")
    z_acc = (limit.value - accurate) / math.hypot(se, accurate_err)
    z_pub = (limit.value - published) / se
    return choose_theory([z_acc], [z_pub], follow=follow, separate=separate, what=what)
