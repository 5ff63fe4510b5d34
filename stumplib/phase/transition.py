"""Transition points and theory curves: where one branch's curve crosses another's, with intervals.

Crossings go through :func:`stumplib.stats.crossing` (the book's one crossing function); intervals
through :class:`stumplib.stats.Estimate`.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..stats import Estimate, crossing

__all__ = ["first_crossing", "theory_curves", "accurate_curves", "crossing_estimate", "branch_end",
           "stability_verdict",
           "read_published", "published_curves", "replay_authors", "AUTHORS_START", "replay_verdict"]


def first_crossing(x: Any, above: Any, below: Any) -> float:
    """Smallest ``x`` (linear interpolation) after which ``below < above`` holds to the end of the grid.

    Parameters
    ----------
    x : (K,) increasing grid. above, below : (K,) curves.

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

    Returns an :class:`Estimate`; NaN value when the curve does not end on the far side.
    """
    x, y, err = (np.asarray(v, dtype=np.float64) for v in (x, y, err))
    c = crossing(x, y, 0.0, direction=direction, which="last")
    ends = [crossing(x, y + s * nsig * err, 0.0, direction=direction, which="last") for s in (-1, 1)]
    lo, hi = float(np.nanmin(ends)) if np.isfinite(ends).any() else np.nan, float(np.nanmax(ends)) if np.isfinite(ends).any() else np.nan
    if not np.all(np.isfinite(ends)):  # one shifted curve does not cross inside the grid
        lo = min(lo, float(x[0])) if np.isfinite(lo) else float(x[0])
        hi = float(x[-1]) if not np.isfinite(hi) else hi
    lo, hi = (min(lo, c), max(hi, c)) if np.isfinite(c) else (lo, hi)
    return Estimate(float(c), float(lo), float(hi), "quadrature", float("nan"))


def branch_end(alphas: Any, outcomes: Any) -> Estimate:
    """Where a branch followed down in ``alpha`` ends, bracketed by the grid.

    ``hi``: the smallest ``alpha`` at which the branch converged; ``lo``: the largest ``alpha`` below
    it with no fixed point, or the grid's smallest ``alpha`` if none (undecided points in between
    widen the bracket). If every point converged, the branch continues: an upper-censored estimate
    (the end, if any, lies below ``alpha.min()``); if none converged, a lower-censored one.
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


def stability_verdict(derivative: Any, outcome: Any, *, direction: str = "m") -> str:
    """A sentence on the derivative of the update along the suppressed direction at the converged
    points (:func:`stumplib.phase.state_evolution`'s ``suppressed_derivative``): its range, how many
    points exceed +1 (the fixed point repels along ``direction`` for every damping: imposing the
    symmetry holds the iteration on an unstable point) and how many exceed 1 in magnitude (the
    undamped update is unstable there; below -1 it oscillates, which damping removes).

    Parameters
    ----------
    derivative : (A,) derivatives (NaN where not computed). outcome : (A,) named outcomes.
    direction : the suppressed overlap's name, for the sentence.
    """
    d = np.asarray(derivative, dtype=np.float64)
    ok = (np.asarray(outcome, dtype=object) == "converged") & np.isfinite(d)
    if not ok.any():
        return f"no converged point carries a derivative along {direction}"
    d = d[ok]
    up, mag = int(np.sum(d > 1)), int(np.sum(np.abs(d) > 1))
    return (f"at the {d.size} converged points dF_{direction}/d{direction} lies between {d.min():.3g} and "
            f"{d.max():.3g}: above +1 (unstable along {direction} for every damping) at {up}, of magnitude "
            f"above 1 (the undamped update unstable along {direction}) at {mag}"
            + ("; all of those are oscillations (below -1), which the damped iteration removes"
               if mag and not up else ""))


def gd_comparison(gd: Mapping[int, Mapping[str, np.ndarray]], theory: Mapping[str, np.ndarray],
                  published: Mapping[str, np.ndarray] | None, *, alphas: Any, grad_tol: float) -> list[dict]:
    """Gradient descent against the accurate and the published semantic theory, one row per (d, alpha).

    Parameters
    ----------
    gd : {d: :func:`.attention.train_attention_gd` output} with one init (semantic) and a checkpoint
        at mid-run (``test_error_at[0]``).
    theory : :func:`accurate_curves` output (``sem_alpha``, ``sem_test_error``, its ``_err``,
        ``sem_outcome``); the theory point nearest each alpha is used.
    published : :func:`published_curves` output or None (then NaN).
    alphas : the sample ratios of ``gd`` (its alpha axis). grad_tol : gradient-norm tolerance.

    Returns
    -------
    rows with ``d, alpha, theory_outcome``; ``gd, gd_se`` (mean test error over seeds and its
    standard error); ``accurate, accurate_err, published``; ``z_accurate`` (distance in combined
    standard errors) and ``z_published`` (in GD standard errors); ``grad_ok`` (fraction of runs below
    ``grad_tol``); ``moved_last_half, moved_se`` (relative change of the mean test error from the
    checkpoint to the end, and its standard error over seeds: the same test draws at both times).
    """
    def nearest(xs, a):
        return int(np.argmin(np.abs(np.asarray(xs) - a)))

    rows = []
    for d, r in gd.items():
        for j, a in enumerate(alphas):
            runs = np.asarray(r["test_error"])[:, j, 0]
            S_ = runs.size
            mean, se = float(runs.mean()), float(runs.std(ddof=1) / np.sqrt(S_))
            moved = runs - np.asarray(r["test_error_at"])[0][:, j, 0]
            i = nearest(theory["sem_alpha"], a)
            acc, acc_err = float(theory["sem_test_error"][i]), float(theory["sem_test_error_err"][i])
            pv = float(published["sem_test_error"][nearest(published["sem_alpha"], a)]) if published else float("nan")
            rows.append(dict(d=d, alpha=a, theory_outcome=theory["sem_outcome"][i], gd=mean, gd_se=se,
                             accurate=acc, accurate_err=acc_err, published=pv,
                             z_accurate=(mean - acc) / np.hypot(se, acc_err), z_published=(mean - pv) / se,
                             grad_ok=float(np.mean(np.asarray(r["grad_norm"])[:, j, 0] < grad_tol)),
                             moved_last_half=float(moved.mean() / mean),
                             moved_se=float(moved.std(ddof=1) / np.sqrt(S_) / mean)))
    return rows


def gd_verdict(rows: list[dict], *, grad_tol: float, nsep: float = 4.0, nagree: float = 3.0) -> str:
    """Chapter 6's verdict on gradient descent at the largest d of ``rows`` (:func:`gd_comparison`).

    The theories are separated only where they differ by at least ``nsep`` GD standard errors at
    every alpha; GD then sides with the one it is within ``nagree`` (combined) errors of while at
    least ``nagree`` from the other. Clauses are added when the runs still move (the mean's change
    over the second half of the steps exceeds twice its own error and the mean's standard error) and
    when not every run reached ``grad_tol``."""
    dmax = max(r["d"] for r in rows)
    top = [r for r in rows if r["d"] == dmax]
    sep = [abs(r["accurate"] - r["published"]) / r["gd_se"] for r in top]
    if min(sep) < nsep:
        v = (f"does not separate the two theories at d = {dmax}: the two differ by only "
             f"{min(sep):.1f} standard errors of the gradient-descent mean")
    elif all(abs(r["z_accurate"]) < nagree <= abs(r["z_published"]) for r in top):
        v = f"separates them at d = {dmax}: it agrees with the accurate theory and not with the published one"
    elif all(abs(r["z_published"]) < nagree <= abs(r["z_accurate"]) for r in top):
        v = f"separates them at d = {dmax}, in favour of the published theory"
    else:
        v = (f"resolves the difference at d = {dmax} but agrees with neither theory at both alphas "
             f"(largest |z| from the accurate theory {max(abs(r['z_accurate']) for r in top):.1f}): "
             "finite-size or unconverged gradient descent")
    drift = max(top, key=lambda r: abs(r["moved_last_half"]))
    if abs(drift["moved_last_half"]) > 2 * drift["moved_se"] and abs(drift["moved_last_half"]) * drift["gd"] > drift["gd_se"]:
        v += (f"; the runs still move: over the second half of the steps the mean test error changed by "
              f"{drift['moved_last_half']:+.1%} (+- {drift['moved_se']:.1%}) at alpha = {drift['alpha']}, more than "
              "its standard error, so the final values are not yet the minimiser's")
    conv_frac = min(r["grad_ok"] for r in top)
    if conv_frac < 1:
        v += (f"; note that only {conv_frac:.0%} of the runs at d = {dmax} reached the gradient-norm "
              f"tolerance {grad_tol:.0e}, so part of the difference may be unconverged descent")
    return v


def replay_verdict(pub: Mapping[str, Any], *, tol: float = 1e-4, target: float = 1e-3) -> str:
    """A sentence, per branch, on whether the published points are where the authors' stopping rule
    stops an iteration with exact minimisers, and whether the stopped replay meets ``target``.

    Parameters
    ----------
    pub : :func:`published_curves`' output (uses ``{b}_resid_{k}``, the undamped change of ``q, m,
        theta`` at the published points, ``{b}_bfgs_resid_{k}`` if present, the same with the
        authors' minimiser, and ``{b}_stopped_{k}`` against ``{b}_{k}``).
    tol : the authors' stopping threshold. target : the relative deviation asked of the replay.
    """
    parts = []
    for b, name, ks in (("sem", "semantic", ("q", "V", "theta")), ("pos", "positional", ("q", "m", "V"))):
        res = np.max([np.abs(np.asarray(pub[f"{b}_resid_{k}"], dtype=np.float64)) for k in ("q", "m", "theta")], 0)
        dev = max(float(np.max(np.abs(np.asarray(pub[f"{b}_stopped_{k}"]) / np.asarray(pub[f"{b}_{k}"]) - 1)))
                  for k in ks)
        n_over = int(np.sum(res > tol))
        where = (f"at all {res.size} published {name} points the rule's own update changes q, m and theta by "
                 f"at most {res.max():.2g}, below the {tol:g} at which their rule stops"
                 if n_over == 0 else
                 f"at {n_over} of {res.size} published {name} points the rule's own update (exact "
                 f"minimisers) changes q, m or theta by more than the {tol:g} at which their rule stops (up to "
                 f"{res.max():.2g}): an iteration with exact minimisers would not stop there")
        met = (f"the stopped replay meets the {target:g} target ({dev:.1e})" if dev <= target else
               f"the stopped replay misses the {target:g} target ({dev:.1e})")
        gap = ""
        if n_over and f"{b}_bfgs_resid_q" in pub:
            g = max(float(np.max(np.abs(np.asarray(pub[f"{b}_bfgs_resid_{k}"]) - np.asarray(pub[f"{b}_resid_{k}"]))))
                    for k in ("q", "m", "theta"))
            gap = (f"; the authors' minimiser (finite-difference BFGS) changes that update by up to {g:.2g}, "
                   + ("of the threshold's size: the files carry their minimiser's error there"
                      if g >= 0.3 * tol else "far below the threshold"))
        parts.append(f"{where}{gap}; {met}")
    return "; ".join(parts)


def accurate_curves(alphas: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                    A: Any = ((0.6, 0.4), (0.4, 0.6)), rtol: float = 3e-3, max_log2_points: int = 14,
                    branches=("semantic", "positional"), **kw) -> dict[str, np.ndarray]:
    """Both branches with the accuracy-controlled solver (:func:`stumplib.phase.state_evolution`):
    ``{sem,pos}_{alpha, q, m, V, theta, test_error, train_loss}``, their ``_err``, ``_outcome``,
    ``_seconds``, ``_log2_points``, ``_suppressed_derivative``, and the exact ``baseline``.
    Points that miss the target at ``max_log2_points`` are reported undecided, not raised."""
    from .baseline import linear_baseline_test_error
    from .solver import state_evolution

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
    """Both branches of the state evolution with a fixed rule (:func:`.se.solve_fixed_rule`) on a
    grid of ``alpha`` and the linear baseline (no error estimate: see :func:`accurate_curves`).

    Returns
    -------
    dict with ``alpha`` and, for ``br`` in (sem, pos), ``{br}_{q, m, V, theta, test_error,
    train_loss}`` (K,), plus ``baseline`` (scalar array), ``alpha_c`` (global minimum switches:
    semantic training loss below the positional one) and ``alpha_l`` (semantic test error below the
    baseline).
    """
    from .baseline import linear_baseline_test_error
    from .se import solve_fixed_rule

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
    """One published theory file (columns q, m, V, theta, mse, alpha, lambda, Phi), rows sorted by
    increasing alpha."""
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
#: its fixed point, hence on the start.
AUTHORS_START = {"semantic": {"q": 0.05, "m": 0.0, "V": 20.0, "theta": 0.0335},
                 "positional": {"q": 0.02203, "m": 0.222, "V": 13.0, "theta": 0.0}}


def replay_authors(alphas: Any, branch: str, *, start: Mapping[str, float] | None = None,
                   damping: float = 0.8, tol: float = 1e-4, max_iter: int = 300, omega: float = 0.3,
                   sigma: float = 0.5, lam: float = 0.01, A: Any = ((0.6, 0.4), (0.4, 0.6))
                   ) -> dict[str, np.ndarray]:
    """The authors' state-evolution procedure, stopped where they stopped it.

    Per ``alpha`` (all at once, each from the same ``start``): the 144-node Stroud-Secrest product
    rule (:func:`.se.stroud_secrest_4d`); each node's proximal problem solved for its global
    minimiser (:func:`.se.se_update`'s multi-start search: the authors' BFGS from the origin reaches
    the global minimiser at every node where a local Newton method from the origin may stop in
    another basin, see ``tests/test_phase.py``); the update ``z <- damping z + (1 - damping) F(z)`` on ``z = (q, m, V,
    theta)``; stop at the first iterate whose undamped change ``|F(z) - z|`` is below ``tol``
    (absolute) in each of ``q, m, theta`` (``V`` is not watched), keeping the damped update made
    there; at most ``max_iter`` updates (then the last iterate is kept, ``n_iter == max_iter``).
    On the semantic branch ``m = 0`` is imposed, on the positional one ``theta = 0``.

    Parameters
    ----------
    alphas : positive number or 1-D sequence. branch : ``"semantic"`` or ``"positional"``.
    start : dict of ``q, m, V, theta`` (default :data:`AUTHORS_START` of the branch).
    damping : weight of the old iterate, in [0, 1). tol : stopping threshold (> 0).
    max_iter : iteration cap (>= 1). omega, sigma, lam, A : the model, as in :func:`.se.solve_fixed_rule`.

    Returns
    -------
    dict of (K,) arrays ``alpha, q, m, V, theta, n_iter`` and ``residual`` (the last ``max |F(z) - z|``
    over ``q, m, theta``).
    """
    from ..validation import check_choice, check_int, check_real
    from .se import BRANCHES, _check_alphas, check_A, se_update, stroud_secrest_4d

    a, _ = _check_alphas(alphas)
    branch = check_choice("branch", branch, BRANCHES)
    damping = check_real("damping", damping, low=0.0, high=1.0, high_open=True)
    tol = check_real("tol", tol, low=0.0, low_open=True, high=1.0)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    omega = check_real("omega", omega, low=0.0, high=1.0)
    sigma = check_real("sigma", sigma, low=0.0, low_open=True, high=100.0)
    lam = check_real("lam", lam, low=0.0, low_open=True, high=1e3)
    A_ = check_A(A)
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


def published_curves(ref_dir: Path, *, alpha_min: float = 0.3) -> dict[str, np.ndarray]:
    """The published omega = 0.3 curves (alpha >= alpha_min; test error = mse / 2, train loss =
    -Phi) and two replays of the authors' rule at the same alphas: ``{br}_replay_*``, the exact fixed
    points of the 144-node Stroud-Secrest product rule (:func:`.se.solve_fixed_rule` with
    ``rule="stroud"``), and ``{br}_stopped_*``, their procedure stopped by their rule
    (:func:`replay_authors`); ``{br}_resid_{k}``, the undamped change ``F(z) - z`` of ``k`` in
    ``q, m, theta`` that the 144-node rule (global proximal minimisers) gives at the published point
    ``z``, which the authors' stopping rule compares with 1e-4, and ``{br}_bfgs_resid_{k}``, the same
    with the authors' minimiser (:func:`.se.proximal_bfgs`; about 5 s a branch)."""
    from .se import se_update, solve_fixed_rule, stroud_secrest_4d, test_error_from_overlaps

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
