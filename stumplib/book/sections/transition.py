"""Chapter 6's transition section: the verdict sentences and table rows of the transition at
omega = 0.3, the published curves' replay, the branch's end and stability, and the minimisers'
decision between the two theories.

The numbers come from the science (:mod:`stumplib.phase.crossings`, :mod:`stumplib.book.studies.curves`,
:mod:`stumplib.book.studies.published`, :mod:`stumplib.phase.minimise`); the verdicts follow the rules of
:mod:`stumplib.book.verdicts`.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from stumplib.book import verdicts
from stumplib.book.verdicts import Verdict
from stumplib.core.stats import Estimate

#: how the page names the extrapolations of :data:`stumplib.book.studies.decision.EXTRAPOLATIONS`
FORM_NAMES = {"line": "straight line in 1/d", "quadratic": "with a 1/d^2 term",
              "drop_smallest": "without the smallest d"}


def semantic_end_verdict(end: Estimate) -> Verdict:
    """Where the semantic branch ends, from its fitted end
    (:func:`stumplib.book.studies.curves.branch_end_fit`), by the registry's rule of
    ``phase_semantic_end`` (:func:`stumplib.book.verdicts.located` with the registry's largest
    width).

    Parameters
    ----------
    end : the fitted ``alpha_end`` with its interval (NaN where no sweep fitted).

    Returns
    -------
    ``holds`` when the interval is finite and no wider than the registry's ``max_width``;
    ``undecided`` otherwise (wider, or not located).
    """
    from stumplib.book.registry import rule_arguments

    return verdicts.located(end, symbol="α_end", **rule_arguments("phase_semantic_end"))


def end_fit_rows(fit: Mapping[str, Any]) -> list[dict]:
    """One table row per sweep of :func:`stumplib.book.studies.curves.branch_end_fit`: its converged
    points, the fitted end and its error, the fit's chi-square and the sweep's time.

    Parameters
    ----------
    fit : mapping
        :func:`stumplib.book.studies.curves.branch_end_fit`'s result.

    Returns
    -------
    list of dict
    """
    rows = []
    for r, (sw, f) in enumerate(zip(fit["sweeps"], fit["fits"])):
        o = np.asarray(sw["outcome"], dtype=object)
        rows.append({"sweep": r + 1, "converged points": f"{int(np.sum(o == 'converged'))} of "
                                                          f"{o.size}",
                     "α_end": f["alpha_end"], "error": f["err"],
                     "χ²/dof": f["chi2"] / f["dof"] if f["dof"] else "—",  # no dof: no number
                     "seconds": float(np.sum(sw["seconds"]))})
    return rows


def end_fit_source(rec: Mapping[str, Any]) -> str:
    """Where the fitted end's sweeps come from, for the page: a phrase after "the sweeps are".

    Parameters
    ----------
    rec : Mapping[str, Any]
        :func:`stumplib.book.runs.read_branch_end`'s answer.

    Returns
    -------
    str
        ``"read from the recorded run PHASE_BRANCH_END.npz (commit ..., made with every argument
        of this page)"`` or ``"computed on this page (...why the recorded run does not apply)"``.
    """
    if rec.get("state") == "recorded":
        commit = str(rec["meta"].get("commit", "not recorded"))[:12]
        return (f"read from the recorded run scripts/{rec['name']} (commit {commit}, made with "
                "every argument of this page and the same solver code)")
    if rec.get("state") == "absent":
        return f"computed on this page (no recorded run {rec.get('name', '')} found)"
    why = "; ".join(rec.get("mismatch") or ["another run"])
    return f"computed on this page (the recorded run is for other arguments: {why})"


def published_tail(pub_sem: Mapping[str, np.ndarray], alpha_end: float) -> dict[str, float]:
    """How far down the published semantic curve keeps ``theta > 0``, and its ``theta`` at the
    published ``alpha`` nearest the accurate theory's fitted end.

    Parameters
    ----------
    pub_sem : mapping
        The published semantic file (:func:`stumplib.book.studies.published.read_published`), every
        ``alpha``.
    alpha_end : float
        The accurate theory's fitted end.

    Returns
    -------
    dict of float
        ``alpha_min_positive`` (the smallest published ``alpha`` with ``theta > 0``, NaN if none),
        ``alpha_near`` and ``theta_near`` (NaN where ``alpha_end`` is NaN).
    """
    a, t = np.asarray(pub_sem["alpha"], dtype=float), np.asarray(pub_sem["theta"], dtype=float)
    pos = t > 0
    out = dict(alpha_min_positive=float(a[pos].min()) if pos.any() else np.nan,
               alpha_near=np.nan, theta_near=np.nan)
    if np.isfinite(alpha_end):
        i = int(np.argmin(np.abs(a - alpha_end)))
        out.update(alpha_near=float(a[i]), theta_near=float(t[i]))
    return out


def stability_verdict(derivative: Any, outcome: Any, *, direction: str = "m") -> Verdict:
    """Whether imposing the suppressed overlap's value is stable at the converged points.

    Parameters
    ----------
    derivative : (A,) derivatives of the update along the suppressed direction at the points
        (:func:`stumplib.phase.state_evolution`'s ``suppressed_derivative``; NaN where not
        computed).
    outcome : (A,) named outcomes (only ``"converged"`` points count).
    direction : the suppressed overlap's symbol.

    Returns
    -------
    :func:`stumplib.book.verdicts.at_most` of the largest derivative against +1 (above +1 the point
    repels along ``direction`` for every damping); undecided when no point carries one.
    """
    d = np.asarray(derivative, dtype=np.float64)
    ok = (np.asarray(outcome, dtype=object) == "converged") & np.isfinite(d)
    sym = f"largest ∂F_{direction}/∂{direction}"
    if not ok.any():
        return Verdict("undecided", f"no converged point carries ∂F_{direction}/∂{direction}.")
    mx = float(d[ok].max())
    v = verdicts.at_most(Estimate(mx, mx, mx), 1.0, symbol=sym)
    return Verdict(v.status,
                   f"{sym} = {mx:.2g} at {int(ok.sum())} converged points (stable up to +1).")


def limit_position(z_accurate: float, z_published: float, *, what: str = "the limit") -> str:
    """Where a measured value lies relative to the two theories, from its two z-scores.

    Parameters
    ----------
    z_accurate, z_published : (value - theory) / combined standard error, per theory.
    what : the value's name in the sentence.

    Returns
    -------
    A phrase: ``"the limit lies between the theories, 4.4 standard errors below the accurate one
    and 5.0 above the published one"`` (or ``"beyond the accurate theory ..."``).
    """
    za, zp = float(z_accurate), float(z_published)
    if not (np.isfinite(za) and np.isfinite(zp)):
        return f"{what} is not measured"
    side = lambda z: "above" if z > 0 else "below"  # noqa: E731
    where = ("between the theories" if za * zp < 0 else
             f"beyond both theories, on the side of the "
             f"{'accurate' if abs(za) < abs(zp) else 'published'} one")
    return (f"{what} lies {where}, {abs(za):.1f} standard errors {side(za)} the accurate one and "
            f"{abs(zp):.1f} {side(zp)} the published one")


def gd_decision_verdict(decision: Mapping[str, Any], alphas: Any, *, qualifier: str = "",
                        follow: float = 2.0, separate: float = 4.0) -> Verdict:
    """The minimisers against the accurate and the published theory, decided only where the three
    extrapolations to ``d -> infinity`` agree.

    Each extrapolation of :func:`stumplib.book.studies.decision.decide` (``forms``: a straight line in
    ``1/d``, one with a ``1/d^2`` term, one without the smallest ``d``) is judged by
    :func:`stumplib.book.verdicts.choose_theory` (the accurate theory the claimed one; within
    ``follow`` standard errors at every alpha follows, ``separate`` or more tells apart). The
    verdict is their common status; where they differ it is *undecided*, with what each says. The
    sentence also says where the straight-line limit lies relative to both theories
    (:func:`limit_position`) and gives the seed mean at the largest ``d`` against both theories,
    which no extrapolation form enters, both at the first alpha.

    Parameters
    ----------
    decision : Mapping[str, Any]
        :func:`stumplib.book.studies.decision.decide`'s output (its ``forms``, ``dmax``,
        ``dmax_z_accurate`` and ``dmax_z_published`` are read).
    alphas : array_like, shape (A,)
        Its sample ratios; the sentence quotes the first.
    qualifier : str
        What the run is (``"stored run, d up to 4000"``), shown in brackets (``""``: nothing).
    follow, separate : float
        The rule of :func:`stumplib.book.verdicts.choose_theory`, in standard errors: within
        ``follow`` (default 2) of a theory at every alpha follows it; ``separate`` (default 4) or
        more from the other at one alpha tells them apart.

    Returns
    -------
    A :class:`~stumplib.book.verdicts.Verdict`.
    """
    parts = {}
    for name, f in decision["forms"].items():
        za, zp = np.asarray(f["z_accurate"], dtype=float), np.asarray(f["z_published"], dtype=float)
        if not (np.all(np.isfinite(za)) and np.all(np.isfinite(zp))):
            parts[name] = (Verdict("undecided", "too few d for this form."), "too few d")
            continue
        v = verdicts.choose_theory(za, zp, follow=follow, separate=separate, what="the minimisers")
        parts[name] = (v, f"|z| {np.max(np.abs(za)):.1f} accurate, "
                          f"{np.max(np.abs(zp)):.1f} published")
    statuses = [v.status for v, _ in parts.values()]
    a0 = float(np.ravel(alphas)[0])
    line = decision["forms"].get("line", {})
    dm = ""
    if line:
        pos = limit_position(line["z_accurate"][0], line["z_published"][0],
                             what="the straight-line limit")
        dm = f"; at alpha = {a0:g} {pos}" if "not measured" not in pos else ""
    za0, zp0 = float(decision["dmax_z_accurate"][0]), float(decision["dmax_z_published"][0])
    if np.isfinite(za0) and np.isfinite(zp0):
        dm += (f"{'; at alpha = ' + format(a0, 'g') if not dm else ','} the seed mean at d = "
               f"{int(decision['dmax'])} is {za0:+.1f} standard errors from the accurate theory "
               f"and {zp0:+.1f} from the published")
    qual = f" ({qualifier})" if qualifier else ""
    if len(set(statuses)) == 1:
        first = next(iter(parts.values()))[0]
        nums = "; ".join(f"{FORM_NAMES.get(k, k)}: {t}" for k, (_, t) in parts.items())
        body = first.sentence[:-1].split(":")[0]
        return Verdict(statuses[0], f"all three extrapolations agree, {body} ({nums}){dm}{qual}.")
    said = "; ".join(f"{FORM_NAMES.get(k, k)}: {v.status} ({t})" for k, (v, t) in parts.items())
    return Verdict("undecided", f"the three extrapolations disagree ({said}){dm}{qual}.")


def extrapolation_rows(decision: Mapping[str, Any], alphas: Any) -> list[dict]:
    """One table row per (extrapolation, alpha) of :func:`stumplib.book.studies.decision.decide`'s
    ``forms``, and one per alpha for the seed mean at the largest ``d``.

    Parameters
    ----------
    decision : Mapping[str, Any]
        :func:`stumplib.book.studies.decision.decide`'s output (its ``forms``, ``dmax``, ``dmax_mean``,
        ``dmax_se``, ``dmax_z_accurate`` and ``dmax_z_published`` are read).
    alphas : array_like, shape (A,)
        Its sample ratios (flattened), one row per alpha and form; the z-scores against the two
        theories come from ``decision``.

    Returns
    -------
    list[dict]
        ``(F + 1) * A`` rows (F forms), each with the keys ``"extrapolation"``, ``"alpha"``,
        ``"test error"`` (a string: the limit with its interval, or the mean ``±`` its standard
        error), ``"z accurate"`` and ``"z published"``.
    """
    rows = []
    for name, f in decision["forms"].items():
        for j, a in enumerate(np.ravel(alphas)):
            e = f["limit"][j]
            rows.append({"extrapolation": FORM_NAMES.get(name, name), "alpha": f"{a:g}",
                         "test error": f"{e.value:.6f} [{e.lo:.6f}, {e.hi:.6f}]",
                         "z accurate": f["z_accurate"][j], "z published": f["z_published"][j]})
    for j, a in enumerate(np.ravel(alphas)):
        m, s = decision["dmax_mean"][j], decision["dmax_se"][j]
        rows.append({"extrapolation": f"none: mean at d = {int(decision['dmax'])}",
                     "alpha": f"{a:g}", "test error": f"{m:.6f} ± {s:.6f}",
                     "z accurate": decision["dmax_z_accurate"][j],
                     "z published": decision["dmax_z_published"][j]})
    return rows


def decision_rows(dec: Mapping[str, Any], alphas: Any, accurate: Any, accurate_err: Any,
                  published: Any) -> list[dict]:
    """One table row per alpha of :func:`stumplib.book.studies.decision.decide`'s output.

    Parameters
    ----------
    dec : mapping
        :func:`stumplib.book.studies.decision.decide`'s result.
    alphas : array_like, shape ``(A,)``
        Its sample ratios.
    accurate, accurate_err, published : array_like, shape ``(A,)``
        The two theories (the accurate one with its quadrature error).

    Returns
    -------
    list of dict
    """
    rows = []
    for j, a in enumerate(alphas):
        lim = dec["limit"][j]
        rows.append({"alpha": a, "d -> infinity": f"{lim.value:.5f} [{lim.lo:.5f}, {lim.hi:.5f}]",
                     "accurate": f"{accurate[j]:.5f} +- {accurate_err[j]:.1g}",
                     "published": published[j], "z accurate": dec["z_accurate"][j],
                     "z published": dec["z_published"][j],
                     "seeds per d": int(dec["n"][:, j].min()),
                     "spread at largest d": dec["spread"][-1, j] / dec["mean"][-1, j]})
    return rows


def replay_verdict(pub: Mapping[str, Any], *, target: float = 1e-3) -> Verdict:
    """Whether the authors' procedure, replayed and stopped where their rule stops it, reproduces
    the published overlaps to ``target`` (largest relative deviation over the overlaps), per branch.

    Parameters
    ----------
    pub : :func:`stumplib.book.studies.published.published_curves`' output (``{b}_stopped_{k}`` against
        ``{b}_{k}``).
    target : the relative deviation asked of the replay.

    Returns
    -------
    :func:`stumplib.book.verdicts.combine` of one :func:`stumplib.book.verdicts.at_most` per branch.
    """
    parts, devs = [], []
    for b, name, ks in (("sem", "semantic", ("q", "V", "theta")),
                        ("pos", "positional", ("q", "m", "V"))):
        dev = max(float(np.max(np.abs(np.asarray(pub[f"{b}_stopped_{k}"])
                                      / np.asarray(pub[f"{b}_{k}"]) - 1)))
                  for k in ks)
        devs.append(f"{dev:.1e} ({name})")
        parts.append(verdicts.at_most(Estimate(dev, dev, dev), target, symbol=f"{name} deviation"))
    return verdicts.combine(parts, f"replay of the 144-node rule within {', '.join(devs)} of the "
                                   f"published overlaps, target {target:.0e}")


def replay_rows(pub: Mapping[str, np.ndarray]) -> list[dict]:
    """Largest relative difference from the published overlaps, per branch and overlap: the 144-node
    rule's exact fixed points (alpha >= 1 and the whole range) and the stopped replay.

    Parameters
    ----------
    pub : mapping
        :func:`stumplib.book.studies.published.published_curves`' result.

    Returns
    -------
    list of dict
    """
    rows = []
    for key, ks in (("sem", ("q", "V", "theta")), ("pos", ("q", "m", "V"))):
        hi = pub[f"{key}_alpha"] >= 1.0
        for k in ks:
            fix, stop = (np.abs(pub[f"{key}_{r}_{k}"] / pub[f"{key}_{k}"] - 1)
                         for r in ("replay", "stopped"))
            rows.append({"branch": key, "overlap": k,
                         "fixed point, alpha >= 1": float(fix[hi].max()),
                         "fixed point, alpha >= 0.3": float(fix.max()),
                         "stopped, alpha >= 0.3": float(stop.max())})
    return rows


def tail_rows(tail: Mapping[str, np.ndarray]) -> list[dict]:
    """One table row per point of :func:`stumplib.book.studies.curves.branch_tail`.

    Parameters
    ----------
    tail : mapping
        :func:`stumplib.book.studies.curves.branch_tail`'s result.

    Returns
    -------
    list of dict
        ``alpha``, ``outcome``, ``theta``, its ``error`` and the derivative of the free energy in
        ``m`` at ``m = 0``; a dash where the solver gave no number (a point that did not converge:
        its outcome says why).
    """
    def shown(v: Any) -> Any:  # what the solver did not give (a point not converged): a dash
        return v if np.isfinite(v) else "—"

    return [{"alpha": tail["alpha"][i], "outcome": str(tail["outcome"][i]).replace("_", " "),
             "theta": shown(tail["theta"][i]),
             "error": shown(tail["theta_err"][i]),
             "∂F_m/∂m at m = 0": shown(tail["suppressed_derivative"][i])}
            for i in range(tail["alpha"].size)]


def dynamics_verdict(rows: list[dict]) -> Verdict:
    """The solver's stability flag against what minimisation did: holds where they agree at every
    point, fails where they disagree at one, undecided where the dynamics were unclear.

    Parameters
    ----------
    rows : list of dict
        :func:`stumplib.book.sections.minimisers.dynamics_rows`' rows.

    Returns
    -------
    Verdict
    """
    parts = [Verdict({True: "holds", False: "fails", None: "undecided"}[r["agree"]], "row.")
             for r in rows]
    n_ok = sum(r["agree"] is True for r in rows)
    if not parts:
        return Verdict("undecided", "no semantic point to check by minimisation.")
    return verdicts.combine(parts,
                            f"minimisation agrees with that flag at {n_ok} of {len(rows)} points")
