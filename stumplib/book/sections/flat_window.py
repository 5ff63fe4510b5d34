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

from stumplib.book.verdicts import Verdict, choose_theory
from stumplib.core.stats import Estimate
from stumplib.phase.scaling_forms import choose_form

__all__ = ["scaling_rows", "lowest_minima_rows", "lowest_min_verdict"]


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


def lowest_minima_rows(summ: Mapping[str, np.ndarray],
                       part: str = "search") -> list[dict[str, Any]]:
    """One table row per ``d`` of :func:`stumplib.phase.lowest_summary.summary`, in two parts
    that each fit the page's column.

    Parameters
    ----------
    summ : mapping
        :func:`stumplib.phase.lowest_summary.summary`'s output.
    part : {"search", "minima"}
        ``"search"``: seeds, the share with a lower minimum than the informed start's, the
        search's saturation, the minima found per seed and the paired theta gap with its 95%
        interval; ``"minima"``: theta and test error of the informed start's minimum and of the
        lowest one.

    Returns
    -------
    list of dict
        The rows (numbers formatted: ``mean ± standard error``; the gap ``[lo, hi]``).
    """
    if part not in ("search", "minima"):
        raise ValueError(f"part must be 'search' or 'minima', got {part!r}")
    rows = []
    for i, d in enumerate(summ["ds"]):
        n, ok = int(summ["seeds"][i]), int(summ["seeds_ok"][i])

        def pm(k: str, f: str = ".4f") -> str:
            return f"{summ[k][i]:{f}} ± {summ[k + '_se'][i]:{f}}"

        if part == "search":
            rows.append({"d": int(d), "seeds": n if ok == n else f"{ok} of {n}",
                         "lower than from Q*": f"{summ['share_lower'][i]:.0%}",
                         "saturated": f"{summ['saturated'][i]:.0%}",
                         "minima per seed (mean, max)": f"{summ['distinct_mean'][i]:.1f}, "
                                                        f"{int(summ['distinct_max'][i])}",
                         "theta gap [95%]": f"{summ['theta_gap'][i]:.4f} "
                                            f"[{summ['theta_gap_lo'][i]:.4f}, "
                                            f"{summ['theta_gap_hi'][i]:.4f}]"})
        else:
            rows.append({"d": int(d), "theta from Q*": pm("informed_theta"),
                         "theta lowest": pm("lowest_theta"),
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
    if not (np.isfinite(published) and np.isfinite(accurate)):
        return Verdict("undecided", f"{what}: a theory to compare with is missing (the published "
                                    "curve needs the shared reference files).")
    z_acc = (limit.value - accurate) / math.hypot(se, accurate_err)
    z_pub = (limit.value - published) / se
    return choose_theory([z_acc], [z_pub], follow=follow, separate=separate, what=what)
