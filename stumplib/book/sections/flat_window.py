"""Chapter 6's flat window on the page: the scaling table, the table of minima and the section's
verdict.

The science it presents (the overlaps of the minimisers, the landscape along theta, its theory,
the scaling forms) lives in :mod:`stumplib.book.studies.overlaps`, :mod:`stumplib.book.studies.held_theta`,
:mod:`stumplib.book.studies.held_theory`, :mod:`stumplib.phase.landscape_fit` and
:mod:`stumplib.book.studies.scaling_forms`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from stumplib.book.verdicts import Verdict, all_hold, per_form_theory
from stumplib.book.studies.scaling_forms import choose_form



def scaling_rows(table: Mapping[str, np.ndarray], alpha_index: int = 0, *,
                 quantities: Sequence[str] = ("train_loss", "theta", "q", "test_error"),
                 theory: Mapping[str, np.ndarray] | None = None
                 ) -> tuple[list[dict], dict[str, dict]]:
    """:func:`~stumplib.book.studies.scaling_forms.choose_form` for each overlap at one alpha, as table
    rows.

    Parameters
    ----------
    table : mapping
        :func:`stumplib.book.studies.overlaps.overlap_table`'s output.
    alpha_index : int, optional
        Row of ``table`` (index into its ``alphas``; default 0). Only ``d`` with a finite
        ``theta`` and more than one converged seed are used; a quantity with fewer than four such
        ``d`` gets no row.
    quantities : sequence of str, optional
        Keys of ``table`` to extrapolate (default ``train_loss``, ``theta``, ``q``,
        ``test_error``).
    theory : mapping or None, optional
        :func:`stumplib.book.studies.overlaps.theory_points`' output (the rows show the theory and the
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
    """One table row per ``d`` of :func:`stumplib.book.studies.lowest_summary.summary`, in two parts
    that each fit the page's column.

    Parameters
    ----------
    summ : mapping
        :func:`stumplib.book.studies.lowest_summary.summary`'s output.
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


def per_form(fit: Mapping[str, Any] | None, accurate: float, accurate_err: float,
             published: float) -> dict[str, dict[str, float]]:
    """Every acceptable form of an extrapolation in ``d`` judged with its own fit: limit,
    standard error, 95% interval and z-scores against the accurate and the published theory
    (:func:`stumplib.book.studies.scaling_forms.form_z`; the accurate theory's quadrature error is
    combined with each form's standard error, the published curve has none).

    Parameters
    ----------
    fit : mapping or None
        :func:`stumplib.book.studies.scaling_forms.choose_form`'s or ``accept_forms``' output (``None``:
        no extrapolation, an empty result).
    accurate, accurate_err : float
        The accurate theory's value and its quadrature error (one standard error).
    published : float
        The published theory's value (NaN: its z-scores are NaN).

    Returns
    -------
    dict
        ``{form: {"limit", "se", "lo", "hi", "z_accurate", "z_published", "chi2", "dof",
        "p_value"}}``, the chosen form first.
    """
    from stumplib.book.studies.scaling_forms import form_z

    if not fit or not fit.get("acceptable"):
        return {}
    order = list(fit["acceptable"])
    if fit.get("form") in order:  # the chosen form first
        order.remove(fit["form"])
        order.insert(0, fit["form"])
    za = form_z(fit["fits"], order, accurate, accurate_err)
    zp = form_z(fit["fits"], order, published)
    out = {}
    for f in order:
        ft, lim = fit["fits"][f], fit["fits"][f]["limit"]
        out[f] = dict(limit=za[f]["limit"], se=za[f]["se"], lo=float(lim.lo), hi=float(lim.hi),
                      z_accurate=za[f]["z"], z_published=zp[f]["z"], chi2=float(ft["chi2"]),
                      dof=int(ft["dof"]), p_value=float(ft["p_value"]))
    return out


def lowest_min_verdict(fit: Mapping[str, Any] | None, accurate: float, accurate_err: float,
                       published: float, *, follow: float | None = None,
                       separate: float | None = None,
                       what: str = "the lowest minima's test error") -> Verdict:
    """Whether an extrapolation in ``d`` of the lowest minima follows the accurate theory rather
    than the published one: every acceptable form judged with its own fit and standard error
    (:func:`per_form`, :func:`stumplib.book.verdicts.per_form_theory`).

    Parameters
    ----------
    fit : mapping or None
        :func:`stumplib.book.studies.scaling_forms.choose_form`'s or ``accept_forms``' output for the
        quantity (``None``: too few ``d`` to extrapolate, undecided).
    accurate, accurate_err : float
        The accurate theory's value and its quadrature error (one standard error).
    published : float
        The published theory's value.
    follow, separate : float or None
        The rule's thresholds in standard errors (``None``: the registry's, claim
        ``lowest_min``).
    what : str
        The sentence's subject.

    Returns
    -------
    Verdict
    """
    from stumplib.book.registry import rule_arguments

    args = rule_arguments("lowest_min")
    follow = args["follow"] if follow is None else follow
    separate = args["separate"] if separate is None else separate
    if not fit:
        return Verdict("undecided", f"{what}: too few dimensions to extrapolate.")
    if not (np.isfinite(published) and np.isfinite(accurate)):
        missing = [n for n, v in (("the accurate theory", accurate),
                                  ("the published curve (published at omega = 0.3 only)", published))
                   if not np.isfinite(v)]
        return Verdict("undecided", f"{what}: no theory to compare with: "
                                    f"{' and '.join(missing)} missing.")
    forms = per_form(fit, accurate, accurate_err, published)
    if any(not (np.isfinite(v["z_accurate"]) and np.isfinite(v["z_published"]))
           for v in forms.values()):
        return Verdict("undecided", f"{what}: an acceptable form has no finite limit.")
    return per_form_theory({f: v["z_accurate"] for f, v in forms.items()},
                                   {f: v["z_published"] for f, v in forms.items()},
                                   follow=follow, separate=separate, what=what)


def per_form_rows(fit: Mapping[str, Any] | None, accurate: float, accurate_err: float,
                  published: float, *, check: tuple[int, float, float, int] | None = None,
                  fmt: str = ".6f", quantity: str | None = None) -> list[dict[str, Any]]:
    """One table row per acceptable form (the chosen one first): its limit ± standard error,
    its 95% interval, its fit and its z-scores, from the same fit (:func:`per_form`); and, as a
    check that no extrapolation enters, the seed mean at the largest ``d``.

    Parameters
    ----------
    fit : mapping or None
        :func:`stumplib.book.studies.scaling_forms.choose_form`'s or ``accept_forms``' output.
    accurate, accurate_err, published : float
        The theories (the accurate one with its quadrature error).
    check : tuple or None
        ``(d, mean, standard error, seeds)`` at the largest ``d`` (shown, not judged).
    fmt : str
        Number format of the values.
    quantity : str or None
        Shown in a first column ``quantity`` (``None``: no such column).

    Returns
    -------
    list of dict
        Rows ``form``, ``limit ± SE``, ``95% interval``, ``chi2 / dof (p)``, ``z accurate``,
        ``z published`` (at least one: without a fit, a row saying so).
    """
    rows = []
    for f, v in per_form(fit, accurate, accurate_err, published).items():
        rows.append({"form": f, "limit ± SE": f"{v['limit']:{fmt}} ± {v['se']:{fmt}}",
                     "95% interval": f"[{v['lo']:{fmt}}, {v['hi']:{fmt}}]",
                     "chi2 / dof (p)": f"{v['chi2']:.1f} / {v['dof']} ({v['p_value']:.2f})",
                     "z accurate": f"{v['z_accurate']:+.1f}",
                     "z published": f"{v['z_published']:+.1f}"})
    if check is not None and np.isfinite(check[1]) and np.isfinite(check[2]):
        d, m, se, n = check
        za = (m - accurate) / math.hypot(se, accurate_err)
        zp = (m - published) / se
        rows.append({"form": f"seed mean at d = {int(d)} ({int(n)} seeds; a check)",
                     "limit ± SE": f"{m:{fmt}} ± {se:{fmt}}", "95% interval": "",
                     "chi2 / dof (p)": "", "z accurate": f"{za:+.1f}",
                     "z published": f"{zp:+.1f}" if np.isfinite(zp) else ""})
    if not rows or rows[0]["form"].startswith("seed mean"):
        why = "too few d to extrapolate" if not fit else "no acceptable form"
        rows.insert(0, {"form": f"none: {why}", "limit ± SE": "", "95% interval": "",
                        "chi2 / dof (p)": "", "z accurate": "", "z published": ""})
    if quantity is not None:
        rows = [{"quantity": quantity, **r} for r in rows]
    return rows


def confirm_rows(conf: Mapping[str, Any],
                 summ: Mapping[str, np.ndarray] | None) -> list[dict[str, Any]]:
    """One row per planned ``d`` of the confirmatory run: seeds done of those planned, and the
    lowest minima's theta and test error (seed mean ± standard error), or what is missing.

    Parameters
    ----------
    conf : mapping
        :func:`stumplib.book.runs.read_confirm`'s output (``seeds``: ``{d: seeds done}``).
    summ : mapping or None
        :func:`stumplib.book.studies.lowest_summary.summary` of its searches (``None``: none done).

    Returns
    -------
    list of dict
        Rows ``d``, ``seeds``, ``theta lowest``, ``test error lowest``; a ``d`` without a seed
        reads "not yet run", one seed "one seed: no standard error".
    """
    from stumplib.book.runs import CONFIRM_PLAN

    at = {int(d): i for i, d in enumerate(summ["ds"])} if summ is not None else {}
    rows = []
    for d in sorted(conf["seeds"]):
        n, plan = int(conf["seeds"][d]), CONFIRM_PLAN.get(d)
        row = {"d": d, "seeds": f"{n} of {plan}" if plan else n}
        for k, name, f in (("lowest_theta", "theta lowest", ".4f"),
                           ("lowest_test_error", "test error lowest", ".6f")):
            i = at.get(d)
            if i is None or n == 0:
                row[name] = "not yet run"
            elif not np.isfinite(summ[f"{k}_se"][i]):
                row[name] = f"{summ[k][i]:{f}} (one seed: no standard error)"
            else:
                row[name] = f"{summ[k][i]:{f}} ± {summ[f'{k}_se'][i]:{f}}"
        rows.append(row)
    return rows


def confirm_verdicts(conf: Mapping[str, Any],
                     theories: Mapping[str, tuple[float, float, float]], *,
                     follow: float | None = None,
                     separate: float | None = None) -> dict[str, Any]:
    """The confirmatory run's two claims and the landing row, by the rule fixed before its data
    (``scripts/PHASE_CONFIRM.md``).

    On the fresh seeds alone, the lowest minima's theta and their test error are each
    extrapolated in ``d`` by every form not rejected at 5%
    (:func:`stumplib.book.studies.lowest_summary.limits` with ``accept="p_value"``) and judged per form
    (:func:`lowest_min_verdict`). The landing row **holds** when both claims hold, **fails** when
    either fails (it follows the published theory, or lies beyond the separate threshold from
    both), and is **undecided** otherwise (:func:`stumplib.book.verdicts.all_hold`). Until every
    planned task is done, or when the store is refused, all three are undecided and say why.

    Parameters
    ----------
    conf : mapping
        :func:`stumplib.book.runs.read_confirm`'s output.
    theories : mapping
        ``{"theta": (accurate, accurate_err, published), "test_error": (...)}``.
    follow, separate : float or None
        The rule's thresholds (``None``: the registry's, claim ``lowest_min``).

    Returns
    -------
    dict
        ``summary`` (:func:`stumplib.book.studies.lowest_summary.summary` of the seeds done, ``None``
        when none), ``limits`` (per quantity, ``{}`` until complete), ``theta``, ``test``
        (Verdicts of the two claims) and ``landing`` (the landing row's Verdict).
    """
    from stumplib.book.studies.lowest_summary import limits, summary

    summ = summary(conf["searches"]) if conf.get("searches") else None
    if conf["state"] != "complete":
        why = conf["message"].rstrip(".")
        if conf["state"] in ("absent", "partial"):
            why = f"the confirmatory run is not complete: {why}"
        v = Verdict("undecided", f"{why}.")
        return dict(summary=summ, limits={}, theta=v, test=v, landing=v)
    lim = limits(summ, accept="p_value")
    kw = dict(follow=follow, separate=separate)
    v_theta = lowest_min_verdict(lim.get("lowest_theta"), *theories["theta"],
                                 what="θ of the lowest minima (fresh seeds)", **kw)
    v_test = lowest_min_verdict(lim.get("lowest_test_error"), *theories["test_error"],
                                what="their test error (fresh seeds)", **kw)
    word = {"holds": "follows the accurate theory",
            "fails": "does not follow the accurate theory",
            "undecided": "does not separate the theories"}
    def said(v: Verdict) -> str:
        if v.status == "undecided" and "no acceptable form" in v.sentence:
            return "has no acceptable extrapolation in d"  # every form rejected at 5%
        return word.get(v.status, word["undecided"])

    if v_theta.status == v_test.status == "holds":
        text = "on fresh seeds θ and the test error both follow the accurate theory"
    else:
        text = f"on fresh seeds θ {said(v_theta)} and the test error {said(v_test)}"
    landing = all_hold([v_theta, v_test], text)
    return dict(summary=summ, limits=lim, theta=v_theta, test=v_test, landing=landing)


def _lowest(r: Mapping[str, np.ndarray], i: int) -> dict[str, float]:
    """The lowest converged minimum of seed row ``i`` of stacked search records."""
    k = int(np.asarray(r["lowest"]).reshape(-1)[i])
    ok = k >= 0 and bool(np.asarray(r["converged"])[i, k])
    return {q: float(np.asarray(r[q], float)[i, k]) if ok else np.nan
            for q in ("loss", "theta", "test_error")}


def search_bias(recorded: Mapping[int, Mapping[str, np.ndarray]],
                rerun: Mapping[int, Mapping[str, np.ndarray]], *,
                loss_tol: float = 1e-9) -> dict[str, Any]:
    """How much a wider, denser search moves the lowest minima (``scripts/PHASE_BIAS.md``).

    For every seed searched again, its new lowest minimum is compared with the recorded one: a
    **still-lower minimum** has a loss below the recorded lowest by more than ``loss_tol``; its
    shift in ``theta`` and in the test error is the new minus the recorded value (0 for a seed
    without one). The bias at a dimension is the mean shift over **all** the recorded seeds of
    that dimension (the seeds not searched again count as unshifted), with its standard error.

    Parameters
    ----------
    recorded : mapping of int to mapping
        ``{d: search records, seeds stacked}`` of the recorded sweep (with ``s``, the seeds).
    rerun : mapping of int to mapping
        The same for the seeds searched again (any subset of the recorded seeds).
    loss_tol : float
        Absolute loss margin of a still-lower minimum.

    Returns
    -------
    dict
        ``rows`` (one dict per seed searched again: ``d``, ``seed``, ``loss_recorded``,
        ``loss_new``, ``lower`` (bool), ``higher`` (bool: the new search ended above the
        recorded lowest, missing it), ``d_theta``, ``d_test``) and ``per_d`` (``{d: dict(rerun,
        lower, higher, seeds, bias_theta, bias_theta_se, bias_test, bias_test_se)}``, ``seeds``
        the recorded seeds at ``d``).
    """
    rows: list[dict[str, Any]] = []
    per_d: dict[int, dict[str, float]] = {}
    for d in sorted(int(x) for x in rerun):
        if d not in recorded:
            raise ValueError(f"rerun: d = {d} is not in the recorded sweep ({sorted(recorded)})")
        rec, new = recorded[d], rerun[d]
        rec_s = [int(x) for x in np.asarray(rec["s"]).reshape(-1)]
        shifts = {q: np.zeros(len(rec_s)) for q in ("theta", "test_error")}
        n_new = n_lower = n_higher = 0
        for j, s in enumerate(int(x) for x in np.asarray(new["s"]).reshape(-1)):
            if s not in rec_s:
                raise ValueError(f"rerun: seed {s} at d = {d} is not in the recorded sweep")
            a, b = _lowest(rec, rec_s.index(s)), _lowest(new, j)
            lower = bool(b["loss"] < a["loss"] - loss_tol)
            higher = bool(b["loss"] > a["loss"] + loss_tol)  # the recorded minimum not re-found
            dth, dte = (b["theta"] - a["theta"], b["test_error"] - a["test_error"]) if lower \
                else (0.0, 0.0)
            shifts["theta"][rec_s.index(s)], shifts["test_error"][rec_s.index(s)] = dth, dte
            n_new, n_lower, n_higher = n_new + 1, n_lower + lower, n_higher + higher
            rows.append(dict(d=d, seed=s, loss_recorded=a["loss"], loss_new=b["loss"],
                             lower=lower, higher=higher, d_theta=dth, d_test=dte))
        S_ = len(rec_s)
        per_d[d] = dict(rerun=n_new, lower=n_lower, higher=n_higher, seeds=S_,
                        bias_theta=float(shifts["theta"].mean()),
                        bias_theta_se=float(shifts["theta"].std(ddof=1) / math.sqrt(S_)),
                        bias_test=float(shifts["test_error"].mean()),
                        bias_test_se=float(shifts["test_error"].std(ddof=1) / math.sqrt(S_)))
    return dict(rows=rows, per_d=per_d)


def shifted_summary(summ: Mapping[str, np.ndarray],
                    per_d: Mapping[int, Mapping[str, float]]) -> dict[str, np.ndarray]:
    """A :func:`stumplib.book.studies.lowest_summary.summary` with the lowest minima's seed means moved
    by a measured search bias (:func:`search_bias`'s ``per_d``) at the dimensions it covers; the
    standard errors are kept.

    Parameters
    ----------
    summ : mapping
        The summary (``ds``, ``lowest_theta``, ``lowest_test_error``, ...).
    per_d : mapping
        ``{d: {"bias_theta", "bias_test", ...}}``.

    Returns
    -------
    dict of np.ndarray
        A copy of ``summ`` with the two seed means moved.
    """
    out = {k: np.array(v, copy=True) for k, v in summ.items()}
    for i, d in enumerate(np.asarray(summ["ds"]).astype(int)):
        if int(d) in per_d:
            out["lowest_theta"][i] += per_d[int(d)]["bias_theta"]
            out["lowest_test_error"][i] += per_d[int(d)]["bias_test"]
    return out


def bias_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """:func:`search_bias`'s seeds as table rows (losses to 9 decimals, shifts signed).

    Parameters
    ----------
    rows : sequence of mapping
        :func:`search_bias`'s ``rows``.

    Returns
    -------
    list of dict
        ``d``, ``seed``, ``lowest loss (recorded)``, ``lowest loss (wider line)``,
        ``still lower``, ``Δθ``, ``Δ test error``.
    """
    from stumplib.book.typeset import number

    return [{"d": r["d"], "seed": r["seed"],
             "lowest loss (recorded)": f"{r['loss_recorded']:.9f}",
             "lowest loss (wider line)": f"{r['loss_new']:.9f}",
             "still lower": "yes" if r["lower"] else (
                 "no (this search ended higher)" if r.get("higher") else "no"),
             "Δθ": f"{r['d_theta']:+.5f}", "Δ test error": number(r["d_test"], "+.2e")}
            for r in rows]


def bias_sentence(per_d: Mapping[int, Mapping[str, float]], bias: Mapping[str, Any],
                  on_recorded: bool, summ: Mapping[str, np.ndarray] | None = None) -> str:
    """What the search-bias study measured, in a sentence per dimension.

    Parameters
    ----------
    per_d : mapping
        :func:`search_bias`'s ``per_d`` (the complete dimensions only).
    bias : mapping
        :func:`stumplib.book.runs.read_bias`'s output.
    on_recorded : bool
        Whether the page's lowest minima are the recorded sweep's (the study's seeds).
    summ : mapping or None
        The recorded sweep's :func:`stumplib.book.studies.lowest_summary.summary` (for the seed
        means' standard errors beside the bias).

    Returns
    -------
    str
    """
    from stumplib.book.typeset import number

    if not on_recorded:
        return ("This profile searched its own seeds; the study covers the recorded sweep's "
                "seeds only, so no bias is applied here.")
    if bias["state"] == "refused":
        return "No bias is used."
    at = ({int(d): i for i, d in enumerate(summ["ds"])} if summ is not None else {})
    out = []
    for d in sorted(bias["seeds"]):
        b = per_d.get(d)
        if b is None:
            planned = len(bias.get("picks", {}).get(d, ()))
            out.append(f"At d = {d} the study is not complete ({bias['seeds'][d]} of "
                       f"{planned} seeds done): no bias is used there.")
            continue
        se = (" (the seed mean's standard error: "
              f"{number(float(summ['lowest_test_error_se'][at[d]]), '.1e')})" if d in at else "")
        missed = int(b.get("higher", 0))
        also = (f" and for {missed} the new search ended above the recorded lowest minimum (it "
                "missed that one: neither search finds every minimum)" if missed else "")
        out.append(f"At d = {d}, {int(b['lower'])} of the {int(b['rerun'])} seeds searched "
                   f"again held a still-lower minimum{also}: the seed mean of the test error "
                   f"moves by "
                   f"{number(b['bias_test'], '+.1e')} ± {number(b['bias_test_se'], '.1e')}{se}, "
                   "and θ by "
                   f"{b['bias_theta']:+.5f} ± {b['bias_theta_se']:.5f}.")
    return " ".join(out)


def bias_survival(moved: Mapping[str, tuple[Mapping[str, np.ndarray] | None, str | None]],
                  per_d: Mapping[int, Mapping[str, float]],
                  theories: Mapping[str, tuple[float, float, float]], *,
                  complete: bool) -> str:
    """Whether the per-form verdicts on the lowest minima keep their status when the seed means
    move by the measured bias (``scripts/PHASE_BIAS.md``: reported, nothing re-decided).

    Parameters
    ----------
    moved : mapping
        ``{"recorded": (summary, accept), "confirm": (summary or None, accept)}``: the two
        judged sets of seeds and how :func:`stumplib.book.studies.lowest_summary.limits` accepts a form.
    per_d : mapping
        :func:`search_bias`'s ``per_d`` (the complete dimensions only).
    theories : mapping
        ``{"theta": (accurate, accurate_err, published), "test_error": (...)}``.
    complete : bool
        Whether the confirmatory run is complete (its verdicts exist).

    Returns
    -------
    str
    """
    from stumplib.book.studies.lowest_summary import limits

    if not per_d:
        return "Not measured yet: no dimension of the study is complete."
    used = ", ".join(f"d = {d}" for d in sorted(per_d))
    parts = []
    for name, (summ, accept) in moved.items():
        label = {"recorded": "Section 4.3 (recorded sweep)",
                 "confirm": "Section 4.4 (fresh seeds)"}.get(name, name)
        if summ is None or (name == "confirm" and not complete):
            parts.append(f"{label}: not yet (the run is not complete).")
            continue
        kw = {} if accept is None else dict(accept=accept)
        before, after = limits(summ, **kw), limits(shifted_summary(summ, per_d), **kw)
        said = []
        for q, sym in (("test_error", "test error"), ("theta", "θ")):
            v0 = lowest_min_verdict(before.get(f"lowest_{q}"), *theories[q], what=sym)
            v1 = lowest_min_verdict(after.get(f"lowest_{q}"), *theories[q], what=sym)
            same = v0.status == v1.status
            said.append(f"{sym} {v0.status}" + (" (survives)" if same
                                               else f", {v1.status} with the bias"))
        parts.append(f"{label}: " + "; ".join(said) + ".")
    return f"With the seed means moved by the bias at {used}: " + " ".join(parts)
