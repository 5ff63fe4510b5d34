"""Transition points and theory curves: where one branch's curve crosses another's, with intervals.

Crossings go through :func:`stumplib.core.stats.crossing` (the book's one crossing function); intervals
through :class:`stumplib.core.stats.Estimate`.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from stumplib.book import verdicts
from stumplib.core.stats import Estimate, crossing
from stumplib.book.verdicts import Verdict
from stumplib.book.typeset import plural

__all__ = ["first_crossing", "theory_curves", "accurate_curves", "crossing_estimate", "branch_end",
           "stability_verdict", "replay_verdict", "read_published", "published_curves",
           "replay_authors", "AUTHORS_START", "semantic_end_verdict", "published_crossings", "branch_gaps",
           "theory_at", "published_at", "decision_rows", "replay_rows", "theta_deviation_at", "branch_tail",
           "tail_rows", "window_profiles", "lowest_points", "dynamics_verdict", "FORM_NAMES",
           "gd_decision_verdict", "limit_position", "extrapolation_rows"]

#: how the page names the extrapolations of :data:`stumplib.phase.minimise.EXTRAPOLATIONS`
FORM_NAMES = {"line": "straight line in 1/d", "quadratic": "with a 1/d^2 term",
              "drop_smallest": "without the smallest d"}


def first_crossing(x: Any, above: Any, below: Any) -> float:
    """Smallest ``x`` (linear interpolation) after which ``below < above`` holds to the end of the grid.

    Parameters
    ----------
    x : (K,) increasing grid.
    above, below : (K,) curves.

    Returns
    -------
    The interpolated crossing of ``above - below`` through 0 that starts the final run of positive
    differences; ``x[0]`` if positive everywhere; NaN if not positive at the end of the grid.
    """
    x = np.asarray(x, dtype=np.float64)
    diff = np.asarray(above, dtype=np.float64) - np.asarray(below, dtype=np.float64)
    if x.ndim != 1 or x.size < 2 or diff.shape != x.shape:
        raise ValueError("x, above and below must be 1-D arrays of the same length >= 2")
    if not np.all(np.diff(x) > 0):
        raise ValueError("x must be strictly increasing")
    if not np.all(np.isfinite(diff)):
        raise ValueError("above and below must be finite")
    return crossing(x, diff, 0.0, direction="up", which="last")


def crossing_estimate(x: Any, y: Any, err: Any, *, direction: str = "up", nsig: float = 3.0) -> Estimate:
    """Where ``y(x)`` crosses 0 (the crossing that starts the final run on the far side), with an
    interval from the crossings of ``y -+ nsig err`` (kind ``"quadrature"``: the curve's own
    numerical error; the linear interpolation between grid points is not included).

    Parameters
    ----------
    x : array_like, shape ``(K,)``
        Increasing grid.
    y, err : array_like, shape ``(K,)``
        The curve and its numerical error.
    direction : str
        ``"up"`` or ``"down"`` (:func:`stumplib.core.stats.crossing`).
    nsig : float
        Errors on each side that make the interval.

    Returns
    -------
    Estimate
        NaN value when the curve does not end on the far side.
    """
    x, y, err = (np.asarray(v, dtype=np.float64) for v in (x, y, err))
    c = crossing(x, y, 0.0, direction=direction, which="last")
    ends = np.array([crossing(x, y + s * nsig * err, 0.0, direction=direction, which="last")
                     for s in (-1, 1)])
    if not np.isfinite(ends).any():  # neither shifted curve ends on the far side: the whole grid
        lo, hi = float(x[0]), float(x[-1])
    else:  # a shifted curve that does not end on the far side crosses beyond the grid's end
        ends = np.where(np.isfinite(ends), ends, x[-1])
        lo, hi = float(ends.min()), float(ends.max())
    lo, hi = (min(lo, c), max(hi, c)) if np.isfinite(c) else (lo, hi)
    return Estimate(float(c), float(lo), float(hi), "quadrature", float("nan"))


def branch_end(alphas: Any, outcomes: Any) -> Estimate:
    """Where a branch followed down in ``alpha`` ends, bracketed by the grid.

    ``hi``: the smallest ``alpha`` at which the branch converged; ``lo``: the largest ``alpha`` below
    it with no fixed point, or the grid's smallest ``alpha`` if none (undecided points in between
    widen the bracket). If every point converged, the branch continues: an upper-censored estimate
    (the end, if any, lies below ``alpha.min()``); if none converged, a lower-censored one.

    Parameters
    ----------
    alphas : array_like, shape ``(A,)``
        The points followed down.
    outcomes : array_like of str, shape ``(A,)``
        Their named outcomes (:class:`stumplib.phase.solver.Outcome`).

    Returns
    -------
    Estimate
    """
    a = np.asarray(alphas, dtype=np.float64)
    o = np.asarray(outcomes, dtype=object)
    conv = o == "converged"
    if conv.all():
        return Estimate(float(a.min()), -np.inf, float(a.min()), "censored", float("nan"), "upper", a.size)
    if not conv.any():
        return Estimate(float(a.max()), float(a.max()), np.inf, "censored", float("nan"), "lower", a.size)
    hi = float(a[conv].min())
    below = (a < hi) & (o == "no_fixed_point")
    lo = float(a[below].max()) if below.any() else float(a.min())
    if lo == hi:  # the lowest grid point converged and nothing below: the branch continues
        return Estimate(hi, -np.inf, hi, "censored", float("nan"), "upper", a.size)
    return Estimate(0.5 * (lo + hi), lo, hi, "plain", float("nan"), None, a.size)


def semantic_end_verdict(end: Estimate, alphas: Any, outcomes: Any) -> Verdict:
    """Where the semantic branch ends, from :func:`branch_end` and the points' named outcomes.

    Parameters
    ----------
    end : :func:`branch_end`'s estimate.
    alphas, outcomes : (A,) the points followed down.

    Returns
    -------
    ``holds`` when the end is bracketed by a converged point and a point without a fixed point
    with nothing undecided between; ``undecided`` when undecided points lie in the bracket or the
    grid does not reach the end (censored).
    """
    a, o = np.asarray(alphas, dtype=float), np.asarray(outcomes, dtype=object)
    if end.censored == "upper":
        return Verdict("undecided", f"the semantic branch continues down to alpha = {end.value:.3g}, "
                                    "the grid's end.")
    if end.censored == "lower":
        return Verdict("undecided", f"no semantic fixed point at alpha <= {end.value:.3g} on the grid.")
    und = int(np.sum((a < end.hi) & (a >= end.lo) & (o == "undecided")))
    if und:
        return Verdict("undecided", f"semantic branch established down to alpha = {end.hi:.3g}; "
                                    f"{plural(und, 'undecided point')} down to {end.lo:.3g}.")
    return Verdict("holds", f"the semantic branch ends between alpha = {end.lo:.3g} and {end.hi:.3g}.")


def stability_verdict(derivative: Any, outcome: Any, *, direction: str = "m") -> Verdict:
    """Whether imposing the suppressed overlap's value is stable at the converged points.

    Parameters
    ----------
    derivative : (A,) derivatives of the update along the suppressed direction at the points
        (:func:`stumplib.phase.state_evolution`'s ``suppressed_derivative``; NaN where not computed).
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
    return Verdict(v.status, f"{sym} = {mx:.2g} at {int(ok.sum())} converged points (stable up to +1).")



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
             f"beyond both theories, on the side of the {'accurate' if abs(za) < abs(zp) else 'published'} one")
    return (f"{what} lies {where}, {abs(za):.1f} standard errors {side(za)} the accurate one and "
            f"{abs(zp):.1f} {side(zp)} the published one")


def gd_decision_verdict(decision: Mapping[str, Any], alphas: Any, *, qualifier: str = "",
                        follow: float = 2.0, separate: float = 4.0) -> Verdict:
    """The minimisers against the accurate and the published theory, decided only where the three
    extrapolations to ``d -> infinity`` agree.

    Each extrapolation of :func:`stumplib.phase.minimise.decide` (``forms``: a straight line in
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
        :func:`stumplib.phase.minimise.decide`'s output (its ``forms``, ``dmax``,
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
        parts[name] = (v, f"|z| {np.max(np.abs(za)):.1f} accurate, {np.max(np.abs(zp)):.1f} published")
    statuses = [v.status for v, _ in parts.values()]
    a0 = float(np.ravel(alphas)[0])
    line = decision["forms"].get("line", {})
    dm = ""
    if line:
        pos = limit_position(line["z_accurate"][0], line["z_published"][0], what="the straight-line limit")
        dm = f"; at alpha = {a0:g} {pos}" if "not measured" not in pos else ""
    za0, zp0 = float(decision["dmax_z_accurate"][0]), float(decision["dmax_z_published"][0])
    if np.isfinite(za0) and np.isfinite(zp0):
        dm += (f"{'; at alpha = ' + format(a0, 'g') if not dm else ','} the seed mean at d = "
               f"{int(decision['dmax'])} is {za0:+.1f} standard errors from the accurate theory and "
               f"{zp0:+.1f} from the published")
    qual = f" ({qualifier})" if qualifier else ""
    if len(set(statuses)) == 1:
        first = next(iter(parts.values()))[0]
        nums = "; ".join(f"{FORM_NAMES.get(k, k)}: {t}" for k, (_, t) in parts.items())
        body = first.sentence[:-1].split(":")[0]
        return Verdict(statuses[0], f"all three extrapolations agree, {body} ({nums}){dm}{qual}.")
    said = "; ".join(f"{FORM_NAMES.get(k, k)}: {v.status} ({t})" for k, (v, t) in parts.items())
    return Verdict("undecided", f"the three extrapolations disagree ({said}){dm}{qual}.")


def extrapolation_rows(decision: Mapping[str, Any], alphas: Any) -> list[dict]:
    """One table row per (extrapolation, alpha) of :func:`stumplib.phase.minimise.decide`'s
    ``forms``, and one per alpha for the seed mean at the largest ``d``.

    Parameters
    ----------
    decision : Mapping[str, Any]
        :func:`stumplib.phase.minimise.decide`'s output (its ``forms``, ``dmax``, ``dmax_mean``,
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
        rows.append({"extrapolation": f"none: mean at d = {int(decision['dmax'])}", "alpha": f"{a:g}",
                     "test error": f"{m:.6f} ± {s:.6f}", "z accurate": decision["dmax_z_accurate"][j],
                     "z published": decision["dmax_z_published"][j]})
    return rows


def replay_verdict(pub: Mapping[str, Any], *, target: float = 1e-3) -> Verdict:
    """Whether the authors' procedure, replayed and stopped where their rule stops it, reproduces the
    published overlaps to ``target`` (largest relative deviation over the overlaps), per branch.

    Parameters
    ----------
    pub : :func:`published_curves`' output (``{b}_stopped_{k}`` against ``{b}_{k}``).
    target : the relative deviation asked of the replay.

    Returns
    -------
    :func:`stumplib.book.verdicts.combine` of one :func:`stumplib.book.verdicts.at_most` per branch.
    """
    parts, devs = [], []
    for b, name, ks in (("sem", "semantic", ("q", "V", "theta")), ("pos", "positional", ("q", "m", "V"))):
        dev = max(float(np.max(np.abs(np.asarray(pub[f"{b}_stopped_{k}"]) / np.asarray(pub[f"{b}_{k}"]) - 1)))
                  for k in ks)
        devs.append(f"{dev:.1e} ({name})")
        parts.append(verdicts.at_most(Estimate(dev, dev, dev), target, symbol=f"{name} deviation"))
    return verdicts.combine(parts, f"replay of the 144-node rule within {', '.join(devs)} of the "
                                   f"published overlaps, target {target:.0e}")


def accurate_curves(alphas: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                    A: Any = ((0.6, 0.4), (0.4, 0.6)), rtol: float = 3e-3, max_log2_points: int = 14,
                    branches=("semantic", "positional"), **kw) -> dict[str, np.ndarray]:
    """Both branches with the accuracy-controlled solver (:func:`stumplib.phase.state_evolution`).

    Points that miss the target at ``max_log2_points`` are reported undecided, not raised.

    Parameters
    ----------
    alphas : array_like, shape ``(K,)``
        Sample ratios.
    omega, sigma, lam : float
        The model.
    A : array_like, shape ``(2, 2)``
        The positional attention matrix.
    rtol : float
        The solver's accuracy target.
    max_log2_points : int
        The solver's largest rule.
    branches : tuple of str
        The branches solved.
    **kw
        Passed to the solver.

    Returns
    -------
    dict of np.ndarray
        ``{sem,pos}_{alpha, q, m, V, theta, test_error, train_loss}``, their ``_err``,
        ``_outcome``, ``_seconds``, ``_log2_points``, ``_suppressed_derivative``, and the exact
        ``baseline``.
    """
    from stumplib.phase.positional_baseline import linear_baseline_test_error
    from stumplib.phase.solver import state_evolution

    out: dict[str, np.ndarray] = {}
    for br in branches:
        key = "sem" if br == "semantic" else "pos"
        r = state_evolution(alphas, omega=omega, sigma=sigma, lam=lam, A=A, branch=br, rtol=rtol,
                            max_log2_points=max_log2_points, on_accuracy="undecided", **kw)
        for k in ("alpha", "q", "m", "V", "theta", "test_error", "train_loss", "seconds", "log2_points",
                  "suppressed_derivative", "unstable", "unstable_undamped"):
            out[f"{key}_{k}"] = np.atleast_1d(r[k])
        for k in ("q", "m", "V", "theta", "test_error", "train_loss"):
            out[f"{key}_{k}_err"] = np.atleast_1d(r[f"{k}_err"])
        out[f"{key}_outcome"] = np.atleast_1d(r["outcome"]).astype(str)
    out["baseline"] = np.asarray(linear_baseline_test_error(omega=omega, sigma=sigma, A=A))
    return out


def theory_curves(alphas: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                  A: Any = ((0.6, 0.4), (0.4, 0.6)), n_nodes: int = 10, rule: str = "gauss-hermite"
                  ) -> dict[str, np.ndarray]:
    """Both branches of the state evolution with a fixed rule (:func:`.replica.solve_fixed_rule`) on a
    grid of alpha and the linear baseline (no error estimate: see :func:`accurate_curves`).

    Parameters
    ----------
    alphas : array_like, shape ``(K,)``
        Sample ratios.
    omega, sigma, lam : float
        The model.
    A : array_like, shape ``(2, 2)``
        The positional attention matrix.
    n_nodes : int
        Nodes of the rule (per axis).
    rule : str
        The fixed rule (:func:`.replica.solve_fixed_rule`).

    Returns
    -------
    dict with ``alpha`` and, for ``br`` in (sem, pos), the arrays ``{br}_q``, ``{br}_m``,
    ``{br}_V``, ``{br}_theta``, ``{br}_test_error``, ``{br}_train_loss`` (K,), plus ``baseline`` (scalar array), ``alpha_c`` (global minimum switches:
    semantic training loss below the positional one) and ``alpha_l`` (semantic test error below the
    baseline).
    """
    from stumplib.phase.positional_baseline import linear_baseline_test_error
    from stumplib.phase.replica import solve_fixed_rule

    out: dict[str, np.ndarray] = {"alpha": np.asarray(alphas, dtype=np.float64)}
    for br, key in (("semantic", "sem"), ("positional", "pos")):
        r = solve_fixed_rule(alphas, omega=omega, sigma=sigma, lam=lam, A=A, branch=br, n_nodes=n_nodes, rule=rule)
        for k in ("q", "m", "V", "theta", "test_error", "train_loss"):
            out[f"{key}_{k}"] = np.atleast_1d(r[k])
    base = linear_baseline_test_error(omega=omega, sigma=sigma, A=A)
    out["baseline"] = np.asarray(base)
    out["alpha_c"] = np.asarray(first_crossing(out["alpha"], out["pos_train_loss"], out["sem_train_loss"]))
    out["alpha_l"] = np.asarray(first_crossing(out["alpha"], np.full_like(out["alpha"], base),
                                               out["sem_test_error"]))
    return out


FILES = {"sem": "theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3.csv",
         "pos": "theory_repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3_para.csv"}


def read_published(path: Path) -> dict[str, np.ndarray]:
    """One published theory file, rows sorted by increasing alpha.

    Parameters
    ----------
    path : Path
        A CSV with columns q, m, V, theta, mse, alpha, lambda, Phi.

    Returns
    -------
    dict of np.ndarray
        One array per column.
    """
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    d = {k: np.array([float(r[k]) for r in rows]) for k in rows[0] if k}
    o = np.argsort(d["alpha"])
    return {k: v[o] for k, v in d.items()}


#: starts of :func:`replay_authors` (``q, m, V, theta``), one per branch, the same for every alpha. The
#: authors' start is not published: these are the best found by a search over starts, judged by the
#: largest relative deviation from the published files at alpha >= 0.3: semantic, a grid (q over
#: 0.01-1, V over 1-50, theta over fractions of the admissible range), 6.1e-4; positional, a random
#: search (900 starts: q log-uniform over 1e-3-1, m over 0-0.8, V log-uniform over 0.3-100, a third
#: of them perturbations of the best so far), 1.8e-3 (the grid's best start, q 0.01, m 0.25, V 10,
#: gave 2.65e-3). Where the iteration stops depends on the side from which each overlap approaches
#: its fixed point, hence on the start. Found in the sessions of commits 0f7e4de (semantic grid)
#: and 3729e8f (positional random search); the search code is not in the repository. Because the start was fitted to
#: the published files (4 numbers per branch against the dozens of published points, the same start
#: for every alpha), the replay's deviation (tests/phase/test_transition.py ``STOPPED_TOL``) is the
#: best the procedure reaches, not an independent confirmation; the start-free comparison is the
#: exact fixed point of the same rule (within 3.5e-3 for alpha >= 1).
AUTHORS_START = {"semantic": {"q": 0.05, "m": 0.0, "V": 20.0, "theta": 0.0335},
                 "positional": {"q": 0.02203, "m": 0.222, "V": 13.0, "theta": 0.0}}


def replay_authors(alphas: Any, branch: str, *, start: Mapping[str, float] | None = None,
                   damping: float = 0.8, tol: float = 1e-4, max_iter: int = 300, omega: float = 0.3,
                   sigma: float = 0.5, lam: float = 0.01, A: Any = ((0.6, 0.4), (0.4, 0.6))
                   ) -> dict[str, np.ndarray]:
    """The authors' state-evolution procedure, stopped where they stopped it.

    Per ``alpha`` (all at once, each from the same ``start``): the 144-node Stroud-Secrest product
    rule (:func:`.quadrature.stroud_secrest_4d`); each node's proximal problem solved for its global
    minimiser (:func:`.replica.se_update`'s multi-start search: the authors' BFGS from the origin reaches
    the global minimiser at every node where a local Newton method from the origin may stop in
    another basin, see ``tests/test_phase.py``); the update ``z <- damping z + (1 - damping) F(z)`` on ``z = (q, m, V,
    theta)``; stop at the first iterate whose undamped change ``|F(z) - z|`` is below ``tol``
    (absolute) in each of ``q, m, theta`` (``V`` is not watched), keeping the damped update made
    there; at most ``max_iter`` updates (then the last iterate is kept, ``n_iter == max_iter``).
    On the semantic branch ``m = 0`` is imposed, on the positional one ``theta = 0``.

    Parameters
    ----------
    alphas : positive number or 1-D sequence.
    branch : ``"semantic"`` or ``"positional"``.
    start : dict of ``q, m, V, theta`` (default :data:`AUTHORS_START` of the branch).
    damping : weight of the old iterate, in [0, 1).
    tol : stopping threshold (> 0).
    max_iter : iteration cap (>= 1).
    omega, sigma, lam, A : the model, as in :func:`.replica.solve_fixed_rule`.

    Returns
    -------
    dict of (K,) arrays ``alpha, q, m, V, theta, n_iter`` and ``residual`` (the last ``max |F(z) - z|``
    over ``q, m, theta``).
    """
    from stumplib.core.validation import check_int, check_real
    from stumplib.phase.quadrature import stroud_secrest_4d
    from stumplib.phase.replica import se_update
    from stumplib.phase.setting import check_alphas, check_model

    a, _ = check_alphas(alphas)
    omega, sigma, lam, A_, branch = check_model(omega=omega, sigma=sigma, lam=lam, A=A, branch=branch)
    damping = check_real("damping", damping, low=0.0, high=1.0, high_open=True)
    tol = check_real("tol", tol, low=0.0, low_open=True, high=1.0)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    start = AUTHORS_START[branch] if start is None else start
    if not isinstance(start, Mapping) or set(start) != {"q", "m", "V", "theta"}:
        raise ValueError(f"start must be a dict with keys q, m, V, theta; got {start!r}")
    st = {k: check_real(f"start[{k!r}]", start[k]) for k in ("q", "m", "V", "theta")}
    if st["q"] <= 0 or st["V"] <= 0 or st["theta"] ** 2 >= sigma ** 2 * st["q"]:
        raise ValueError(f"start needs q > 0, V > 0 and theta^2 < sigma^2 q; got {st}")
    nodes, w = stroud_secrest_4d()
    keys = ("q", "m", "V", "theta")
    z = np.tile(np.array([st[k] for k in keys]), (a.size, 1))
    watch = [0, 1, 3]
    active = np.ones(a.size, dtype=bool)
    n_iter = np.zeros(a.size, dtype=int)
    resid = np.full(a.size, np.inf)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        up = se_update(a[idx], *z[idx].T, omega=omega, sigma=sigma, lam=lam, A=A_, nodes=nodes, weights=w,
                       with_test_error=False)
        f = np.stack([up[k] for k in keys], -1)
        f[:, 1 if branch == "semantic" else 3] = 0.0
        r = np.abs(f - z[idx])[:, watch].max(-1)
        z[idx] = damping * z[idx] + (1 - damping) * f
        n_iter[idx] += 1
        resid[idx] = r
        active[idx[r < tol]] = False
        if not active.any():
            break
    out = {k: z[:, i].copy() for i, k in enumerate(keys)}
    return dict(alpha=a, **out, n_iter=n_iter, residual=resid)


def published_curves(ref_dir: Path, *, alpha_min: float = 0.3, cache: bool = False) -> dict[str, np.ndarray]:
    """The published omega = 0.3 curves (alpha >= alpha_min; test error = mse / 2, train loss =
    -Phi) and two replays of the authors' rule at the same alphas.

    ``{br}_replay_*``: the exact fixed points of the 144-node Stroud-Secrest product rule
    (:func:`.replica.solve_fixed_rule` with ``rule="stroud"``); ``{br}_stopped_*``: their procedure stopped
    by their rule (:func:`replay_authors`); ``{br}_resid_{k}``: the undamped change ``F(z) - z`` of
    ``k`` in ``q, m, theta`` that the 144-node rule (global proximal minimisers) gives at the
    published point ``z``, which the authors' stopping rule compares with 1e-4; ``{br}_bfgs_resid_{k}``:
    the same with the authors' minimiser (:func:`.proximal.proximal_bfgs`; about 5 s a branch).

    Parameters
    ----------
    ref_dir : Path
        The folder of the published files.
    alpha_min : float
        The smallest alpha kept.
    cache : bool
        Keep the result with :func:`stumplib.book.cache.cached` (no log).

    Returns
    -------
    dict of np.ndarray
    """
    if cache:
        from stumplib.core.memo import remember

        return remember("published_curves", dict(alpha_min=alpha_min, ref=str(ref_dir)),
                        lambda: published_curves(ref_dir, alpha_min=alpha_min))
    from stumplib.phase.quadrature import stroud_secrest_4d
    from stumplib.phase.replica import se_update, solve_fixed_rule, test_error_from_overlaps

    out: dict[str, np.ndarray] = {}
    for key, br in (("sem", "semantic"), ("pos", "positional")):
        d = read_published(Path(ref_dir) / FILES[key])
        sel = d["alpha"] >= alpha_min
        out[f"{key}_alpha"] = d["alpha"][sel]
        for k in ("q", "m", "V", "theta"):
            out[f"{key}_{k}"] = d[k][sel]
        out[f"{key}_test_error"] = d["mse"][sel] / 2
        out[f"{key}_train_loss"] = -d["Phi"][sel]
        st = replay_authors(d["alpha"][sel], br)
        z = {k: d[k][sel] * (0.0 if (k, br) in (("m", "semantic"), ("theta", "positional")) else 1.0)
             for k in ("q", "m", "V", "theta")}
        nodes, w = stroud_secrest_4d()
        up = se_update(d["alpha"][sel], z["q"], z["m"], z["V"], z["theta"], omega=0.3, nodes=nodes, weights=w,
                       with_test_error=False)
        for k in ("q", "m", "theta"):
            out[f"{key}_resid_{k}"] = up[k] - z[k]
        # the same update with the authors' minimiser (BFGS, finite differences, from the origin)
        bf = se_update(d["alpha"][sel], z["q"], z["m"], z["V"], z["theta"], omega=0.3, nodes=nodes, weights=w,
                       with_test_error=False, minimiser="bfgs")
        for k in ("q", "m", "theta"):
            out[f"{key}_bfgs_resid_{k}"] = bf[k] - z[k]
        for k in ("q", "m", "V", "theta"):
            out[f"{key}_stopped_{k}"] = np.asarray(st[k])
        r = solve_fixed_rule(d["alpha"][sel], omega=0.3, branch=br, rule="stroud", tol=1e-8, max_iter=3000)
        for k in ("q", "m", "V", "theta"):
            out[f"{key}_replay_{k}"] = np.asarray(r[k])
        # the test error at the replayed overlaps with an accurate rule (smooth integrand), as the
        # authors computed theirs with a finer rule than the one of the fixed point
        out[f"{key}_replay_test_error"] = test_error_from_overlaps(r["q"], r["m"], r["theta"], omega=0.3,
                                                                   n_nodes=16)
    return out


def published_crossings(pub: Mapping[str, np.ndarray] | None, baseline: float) -> tuple[float, float]:
    """alpha_c and alpha_l of the published curves (training losses; semantic test error against
    ``baseline``).

    Parameters
    ----------
    pub : mapping or None
        :func:`published_curves`' result (``None``: no files).
    baseline : float
        The linear baseline's test error.

    Returns
    -------
    (alpha_c, alpha_l) : tuple of float
        NaN without files.
    """
    if pub is None:
        return float("nan"), float("nan")
    pa = np.asarray(pub["sem_alpha"])
    o = np.argsort(pa)
    pc = crossing(pa[o], (pub["sem_train_loss"] - pub["pos_train_loss"])[o], 0.0, direction="down",
                  which="last")
    pl = crossing(pa[o], (pub["sem_test_error"] - baseline)[o], 0.0, direction="down", which="last")
    return float(pc), float(pl)


def branch_gaps(th: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """Where both branches converged (increasing alpha), the gaps between them.

    Parameters
    ----------
    th : mapping
        :func:`accurate_curves`' result.

    Returns
    -------
    (alpha, loss_gap, loss_gap_err, test_error, test_error_err) : tuple of np.ndarray
        The training-loss gap (semantic - positional) and its error, the semantic test error and its
        error.
    """
    ok = (th["sem_outcome"] == "converged") & (th["pos_outcome"] == "converged")
    o = np.argsort(th["sem_alpha"][ok])
    dl = (th["sem_train_loss"] - th["pos_train_loss"])[ok][o]
    de = np.hypot(th["sem_train_loss_err"], th["pos_train_loss_err"])[ok][o]
    return (th["sem_alpha"][ok][o], dl, de, th["sem_test_error"][ok][o],
            th["sem_test_error_err"][ok][o])


def theory_at(th: Mapping[str, np.ndarray], alphas: Any, key: str) -> tuple[np.ndarray, np.ndarray]:
    """The converged semantic point's ``key`` and its error at each of ``alphas``.

    Parameters
    ----------
    th : mapping
        :func:`accurate_curves`' result.
    alphas : array_like
        Where.
    key : str
        The quantity (``"test_error"``, ``"theta"``, ...).

    Returns
    -------
    (value, err) : tuple of np.ndarray
        NaN where absent.
    """
    val, err = [], []
    for a in np.atleast_1d(alphas):
        i = np.flatnonzero(np.isclose(th["sem_alpha"], a, rtol=0, atol=1e-4)
                           & (th["sem_outcome"] == "converged"))
        val.append(th[f"sem_{key}"][i[0]] if i.size else np.nan)
        err.append(th[f"sem_{key}_err"][i[0]] if i.size else np.nan)
    return np.asarray(val, dtype=float), np.asarray(err, dtype=float)


def published_at(pub: Mapping[str, np.ndarray] | None, alphas: Any, key: str) -> np.ndarray:
    """The published semantic ``key`` at the published alpha nearest each of ``alphas``.

    Parameters
    ----------
    pub : mapping or None
        :func:`published_curves`' result.
    alphas : array_like
        Where.
    key : str
        The quantity.

    Returns
    -------
    np.ndarray
        NaN without files.
    """
    a = np.atleast_1d(np.asarray(alphas, dtype=float))
    if pub is None:
        return np.full(a.size, np.nan)
    return np.array([pub[f"sem_{key}"][int(np.argmin(np.abs(pub["sem_alpha"] - x)))] for x in a])


def decision_rows(dec: Mapping[str, Any], alphas: Any, accurate: Any, accurate_err: Any,
                  published: Any) -> list[dict]:
    """One table row per alpha of :func:`stumplib.phase.minimise.decide`'s output.

    Parameters
    ----------
    dec : mapping
        :func:`stumplib.phase.minimise.decide`'s result.
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


def replay_rows(pub: Mapping[str, np.ndarray]) -> list[dict]:
    """Largest relative difference from the published overlaps, per branch and overlap: the 144-node
    rule's exact fixed points (alpha >= 1 and the whole range) and the stopped replay.

    Parameters
    ----------
    pub : mapping
        :func:`published_curves`' result.

    Returns
    -------
    list of dict
    """
    rows = []
    for key, ks in (("sem", ("q", "V", "theta")), ("pos", ("q", "m", "V"))):
        hi = pub[f"{key}_alpha"] >= 1.0
        for k in ks:
            fix, stop = (np.abs(pub[f"{key}_{r}_{k}"] / pub[f"{key}_{k}"] - 1) for r in ("replay", "stopped"))
            rows.append({"branch": key, "overlap": k, "fixed point, alpha >= 1": float(fix[hi].max()),
                         "fixed point, alpha >= 0.3": float(fix.max()),
                         "stopped, alpha >= 0.3": float(stop.max())})
    return rows


def theta_deviation_at(th: Mapping[str, np.ndarray], pub: Mapping[str, np.ndarray], alpha: float) -> float:
    """Relative difference of the accurate semantic theta from the published one at the published
    alpha nearest ``alpha``.

    Parameters
    ----------
    th : mapping
        :func:`accurate_curves`' result.
    pub : mapping
        :func:`published_curves`' result.
    alpha : float
        Where.

    Returns
    -------
    float
        NaN when the accurate point is not there.
    """
    i = int(np.argmin(np.abs(pub["sem_alpha"] - alpha)))
    acc, _ = theory_at(th, [float(pub["sem_alpha"][i])], "theta")
    return float(acc[0] / pub["sem_theta"][i] - 1)


def branch_tail(th: Mapping[str, np.ndarray], alphas: Any, *, omega: float, rtol: float,
                max_log2_points: int, cache: bool = True, **solver: Any) -> dict[str, np.ndarray]:
    """The semantic branch followed below the solved points (at ``alphas``, looser ``rtol``),
    continuing from the lowest converged point of ``th``, joined with ``th``'s semantic points.

    Parameters
    ----------
    th : mapping
        :func:`accurate_curves`' result.
    alphas : array_like
        The sample ratios below.
    omega : float
        The positional share.
    rtol : float
        The solver's accuracy target there.
    max_log2_points : int
        The solver's largest rule.
    cache : bool
        Keep the result with :func:`stumplib.book.cache.cached`.
    **solver
        Passed to the solver.

    Returns
    -------
    dict of np.ndarray
        ``alpha, theta, theta_err, q, outcome, suppressed_derivative`` (decreasing alpha).
    """
    ok = th["sem_outcome"] == "converged"
    j = int(np.argmin(np.where(ok, th["sem_alpha"], np.inf)))
    init = {k: float(th[f"sem_{k}"][j]) for k in ("q", "m", "V", "theta")} if ok.any() else None
    cfg = dict(alphas=list(map(float, alphas)), omega=omega, rtol=rtol, max_log2=max_log2_points,
               init=init, **solver)

    def compute():
        return accurate_curves(alphas, omega=omega, rtol=rtol, max_log2_points=max_log2_points,
                               branches=("semantic",), init=init, **solver)

    if cache:
        from stumplib.core.memo import remember

        t = remember("branch_tail", cfg, compute)
    else:
        t = compute()
    keys = ("alpha", "theta", "theta_err", "q", "outcome", "suppressed_derivative")
    solved = np.asarray(th["sem_outcome"]) != "not_solved"
    out = {k: np.concatenate([np.asarray(th[f"sem_{k}"])[solved], np.asarray(t[f"sem_{k}"])]) for k in keys}
    o = np.argsort(-out["alpha"])
    return {k: v[o] for k, v in out.items()}


def tail_rows(tail: Mapping[str, np.ndarray]) -> list[dict]:
    """One table row per point of :func:`branch_tail`.

    Parameters
    ----------
    tail : mapping
        :func:`branch_tail`'s result.

    Returns
    -------
    list of dict
    """
    return [{"alpha": tail["alpha"][i], "outcome": tail["outcome"][i], "theta": tail["theta"][i],
             "error": tail["theta_err"][i], "∂F_m/∂m at m = 0": tail["suppressed_derivative"][i]}
            for i in range(tail["alpha"].size)]


def window_profiles(alpha: float, thetas: Any, rules: Any, *, omega: float, sigma: float, lam: float,
                    tol: float | None = None, cache: bool = True) -> list[dict[str, np.ndarray]]:
    """:func:`.replica.theta_profile` at ``alpha`` along ``thetas`` for each rule.

    Parameters
    ----------
    alpha : sample ratio.
    thetas : the grid of semantic overlaps, shape ``(T,)``.
    rules : ``(label, rule, size)`` per rule (:func:`.quadrature.quadrature_4d`'s ``rule`` and ``n_nodes``).
    omega, sigma, lam : the model.
    tol : inner tolerance of :func:`.replica.theta_profile` (``None``: its default).
    cache : keep the result with :func:`stumplib.book.cache.cached` (no log).

    Returns
    -------
    list of dict
        One per rule, in the order of ``rules``: the arrays of :func:`.replica.theta_profile`
        (``theta``, ``F_theta``, ``residual``, ``q``, ``V``, ``test_error`` and ``train_loss``,
        each of shape ``(T,)``, and ``root``, 0-d).
    """
    from stumplib.phase.replica import theta_profile

    extra = {} if tol is None else dict(tol=tol)

    def compute() -> list[dict[str, np.ndarray]]:
        return [{key: np.asarray(v) for key, v in theta_profile(
                    alpha, thetas, omega=omega, sigma=sigma, lam=lam, rule=rule, n_nodes=nn, **extra).items()}
                for _, rule, nn in rules]

    if not cache:
        return compute()
    from stumplib.core.memo import remember

    cfg = dict(alpha=alpha, thetas=list(map(float, thetas)), rules=[list(r[1:]) for r in rules],
               omega=omega, sigma=sigma, lam=lam, **extra)
    return remember("window_profiles", cfg, compute)


def lowest_points(diag: Mapping[str, np.ndarray], tail: Mapping[str, np.ndarray] | None = None,
                  omega: float | None = None) -> list[dict[str, float]]:
    """At each omega of the diagram the converged semantic point of lowest alpha; at ``omega`` the
    lowest converged point of ``tail`` instead.

    Parameters
    ----------
    diag : mapping
        :func:`stumplib.phase.diagram.phase_diagram`'s result.
    tail : mapping, optional
        :func:`branch_tail`'s result.
    omega : float, optional
        The omega whose point comes from ``tail``.

    Returns
    -------
    list of dict
        ``omega, alpha, theta, q, derivative`` per omega.
    """
    pts = []
    for i, w in enumerate(np.asarray(diag["omega"], dtype=float)):
        if tail is not None and omega is not None and np.isclose(w, omega):
            src, sel = tail, np.asarray(tail["outcome"]) == "converged"
            a = np.asarray(tail["alpha"])
        else:
            src = {k[4:]: np.asarray(v) for k, v in diag.items() if k.startswith("sem_")}
            a = np.asarray(diag["pt_alpha"])
            sel = (np.asarray(diag["pt_w"]) == i) & (src["outcome"] == "converged")
        if not sel.any():
            continue
        j = np.flatnonzero(sel)[np.argmin(a[sel])]
        pts.append(dict(omega=float(w), alpha=float(a[j]), theta=float(src["theta"][j]),
                        q=float(src["q"][j]), derivative=float(src["suppressed_derivative"][j])))
    return pts


def dynamics_verdict(rows: list[dict]) -> Verdict:
    """The solver's stability flag against what minimisation did: holds where they agree at every
    point, fails where they disagree at one, undecided where the dynamics were unclear.

    Parameters
    ----------
    rows : list of dict
        :func:`stumplib.phase.minimise.stability_by_dynamics`' rows.

    Returns
    -------
    Verdict
    """
    parts = [Verdict({True: "holds", False: "fails", None: "undecided"}[r["agree"]], "row.") for r in rows]
    n_ok = sum(r["agree"] is True for r in rows)
    if not parts:
        return Verdict("undecided", "no semantic point to check by minimisation.")
    return verdicts.combine(parts, f"minimisation agrees with that flag at {n_ok} of {len(rows)} points")
