"""Accuracy-controlled state evolution: :func:`state_evolution`.

The Gaussian averages of the state evolution (:mod:`.se`) are computed with a randomised quasi-Monte
Carlo rule: ``K`` independent scramblings of a Sobol sequence of ``2**p`` points, mapped to four
standard normals. Each scrambling gives its own fixed point; their spread (standard error over the
``K`` scramblings) is the quadrature error of the mean, reported for every output. The fixed points
also carry a bias that shrinks with the number of points, so the reported error combines the
standard error with the change from the nested rule of half as many points (same scramblings'
seeds): ``err = sqrt(se^2 + (mean_N - mean_{N/2})^2)``. The number of points is doubled until the
test error's error is below ``rtol`` times the test error.

Per scrambling, the fixed point is found by Anderson acceleration of the undamped map (depth 4,
falling back to a damped step when an extrapolated point leaves the admissible region), with the
proximal problems warm-started from their previous minimisers; the multi-start search for the
global minimiser of each node's proximal problem is run on the first update and again whenever a
fixed point is about to be accepted, and iteration resumes if it changes the update. Points of a
sweep in ``alpha`` are solved by continuation (each starts from its neighbour's fixed point, with
its neighbour's number of points).

Three named outcomes per ``alpha`` (:class:`Outcome`):

- ``converged``: every scrambling converged to a point on the branch and the test error's quadrature
  error meets the target;
- ``no_fixed_point``: on every scrambling the iteration leaves the branch (semantic: ``theta`` flows
  to 0; positional: ``m`` flows to 0);
- ``undecided``: the scramblings disagree (some converge, some leave the branch), or the branch's
  order parameter is zero within its quadrature error, or the iteration does not settle: the rule
  cannot decide within its error (near a branch's end).

A converged point whose accuracy target cannot be met within ``max_log2_points`` raises
:class:`AccuracyNotReached` (never a silent inaccurate point).

Stability of the imposed symmetry: on the semantic branch ``m = 0`` is imposed (swap-symmetric
``A``), on the positional branch ``theta = 0``. The suppressed direction decouples at the fixed point
(the other overlaps are even in it), so the derivative of the update along it, ``dF_m/dm`` at
``m = 0`` (or ``dF_theta/dtheta`` at ``theta = 0``), is an eigenvalue of the update's Jacobian
(central finite difference, same nodes, proximal problems started from the fixed point's global
minimisers). Its value is returned; ``unstable_undamped`` flags a magnitude above 1 (the undamped
iteration leaves the point), ``unstable`` a value above +1 (the damped iteration
``z <- eta z + (1 - eta) F(z)`` leaves it for every damping ``eta``; a value below -1 is an
oscillation that damping removes).
"""
from __future__ import annotations

import math
import time
from functools import lru_cache
from typing import Any

import numpy as np

from ..validation import check_choice, check_int, check_real
from .se import (BRANCHES, StateEvolutionError, _check_alphas, _initial_point, check_A, se_update)

__all__ = ["Outcome", "AccuracyNotReached", "state_evolution", "scrambled_rules", "estimate", "OUTPUT_KEYS"]

OUTPUT_KEYS = ("q", "m", "V", "theta", "test_error", "train_loss")


class Outcome:
    """Names of the three outcomes of :func:`state_evolution` (plain strings)."""
    CONVERGED = "converged"
    NO_FIXED_POINT = "no_fixed_point"
    UNDECIDED = "undecided"
    ALL = (CONVERGED, NO_FIXED_POINT, UNDECIDED)


class AccuracyNotReached(StateEvolutionError):
    """A fixed point was found on every scrambling but its quadrature error stays above the target
    at the largest number of points allowed."""


@lru_cache(maxsize=48)
def _sobol_normal(log2_points: int, seed: int) -> np.ndarray:
    from scipy.stats import norm, qmc
    u = qmc.Sobol(4, scramble=True, seed=seed).random_base2(log2_points)
    nodes = norm.ppf(np.clip(u, 1e-15, 1 - 1e-15))
    nodes.setflags(write=False)
    return nodes


def scrambled_rules(log2_points: int, n_scramblings: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``K`` independent scramblings of a Sobol rule of ``2**log2_points`` points.

    Returns
    -------
    nodes : (K, N, 4); weights : (K, N), each row summing to one. Scrambling ``k`` uses the seed
    ``1000 * seed + k`` (so ``seed`` selects a family of independent scramblings).
    """
    log2_points = check_int("log2_points", log2_points, minimum=6, maximum=20)
    n_scramblings = check_int("n_scramblings", n_scramblings, minimum=2, maximum=64)
    seed = check_int("seed", seed, minimum=0)
    nodes = np.stack([_sobol_normal(log2_points, 1000 * seed + k) for k in range(n_scramblings)])
    w = np.full(nodes.shape[:2], 1.0 / nodes.shape[1])
    return nodes, w


# ----------------------------------------------------------------------------------------------
# fixed points per scrambling: Anderson acceleration with warm-started proximal problems
# ----------------------------------------------------------------------------------------------
_FLOOR = np.array([1e-4, 1e-3, 1e-2, 1e-4])  # scales of q, m, V, theta for relative changes


def _admissible(z: np.ndarray, rho: float) -> bool:
    q, m, V, th = z
    return bool(q > 0 and V > 0 and th * th < rho * q * (1 - 1e-9) and np.all(np.isfinite(z)))


def _solve_rows(alpha: float, z0: np.ndarray, nodes: np.ndarray, w: np.ndarray, *, free: np.ndarray,
                branch: str, kw: dict, rho: float, ftol: float, max_updates: int, depth: int = 4,
                beta: float = 1.0, max_checks: int = 6, warm0: np.ndarray | None = None) -> dict[str, Any]:
    """Fixed points of the update on each of the K rules (rows). ``z0`` (4,) or (K, 4).

    Returns dict: z (K, 4), status (K,) in {"converged", "left_branch", "not_settled"}, test_error,
    train_loss (K,) from the last multi-start update at the accepted point, n_updates, prox (K, N, 2).
    """
    K = nodes.shape[0]
    z = np.broadcast_to(np.asarray(z0, dtype=np.float64), (K, 4)).copy()
    if branch == "positional":
        z[:, 3] = 0.0
    elif not free[1]:
        z[:, 1] = 0.0
    status = np.array(["running"] * K, dtype=object)
    hist_x = [[] for _ in range(K)]
    hist_f = [[] for _ in range(K)]
    warm = None if warm0 is None else warm0.copy()
    restart = warm is None  # with proximal solutions from a neighbour, the first update is warm
    checks = np.zeros(K, dtype=int)
    te = np.full(K, np.nan)
    tl = np.full(K, np.nan)
    n_up = 0
    fi = np.flatnonzero(free)
    scale0 = np.maximum(np.abs(z), _FLOOR)
    while n_up < max_updates:
        act = np.flatnonzero(status == "running")
        if act.size == 0:
            # every row has reached the tolerance with warm-started proximal problems: verify all of
            # them with one multi-start update
            act = np.flatnonzero(status == "ready")
            if act.size == 0:
                break
            status[act] = "running"
            restart = True
        up = se_update(np.full(act.size, alpha), z[act, 0], z[act, 1], z[act, 2], z[act, 3],
                       nodes=nodes[act], weights=w[act], warm=None if warm is None else warm[act],
                       restart=restart, with_test_error=restart, **kw)
        n_up += 1
        if warm is None:
            warm = np.zeros((K,) + up["prox"].shape[1:])
        warm[act] = up["prox"]
        F = np.stack([up["q"], up["m"], up["V"], up["theta"]], -1)
        if branch == "positional":
            F[:, 3] = 0.0
        elif not free[1]:
            F[:, 1] = 0.0
        was_restart = restart
        restart = False
        for j, r in enumerate(act):
            x = z[r]
            scale = np.maximum(np.abs(x), _FLOOR)
            f = (F[j] - x) / scale  # scaled residual
            if not np.all(np.isfinite(F[j])):
                status[r] = "left_branch"
                continue
            res = float(np.max(np.abs(f[fi])))
            # at a multi-start check, nodes whose global minimiser switched move the update by
            # O(1/N) each: the tolerance grows with the number of checks (at most 100 ftol, far
            # below the quadrature error) so that such switches cannot cycle for ever
            tol_r = ftol * min(100.0, 3.0 ** checks[r]) if was_restart else ftol
            if res < tol_r:
                if was_restart:
                    status[r] = "converged"
                    te[r] = up["test_error"][j]
                    tl[r] = up["train_loss"][j]
                    continue
                checks[r] += 1
                if checks[r] > max_checks:
                    status[r] = "not_settled"
                    continue
                status[r] = "ready"  # to be verified with the multi-start proximal search
                hist_x[r].clear(); hist_f[r].clear()
                continue
            # left the branch: the order parameter flows to zero
            if branch == "semantic" and F[j, 3] <= 1e-4 * math.sqrt(rho * max(F[j, 0], 1e-300)) and \
                    x[3] <= 2e-3 * math.sqrt(rho * x[0]):
                status[r] = "left_branch"
                continue
            if branch == "positional" and abs(F[j, 1]) <= 1e-4 and abs(x[1]) <= 2e-3:
                status[r] = "left_branch"
                continue
            # Anderson (type II) on the free coordinates, in variables scaled by the start's size
            hx, hf = hist_x[r], hist_f[r]
            scale = scale0[r]
            xs = x[fi] / scale[fi]
            fs = (F[j, fi] - x[fi]) / scale[fi]
            hx.append(xs.copy()); hf.append(fs.copy())
            if len(hx) > depth + 1:
                hx.pop(0); hf.pop(0)
            new = x.copy()
            step = xs + beta * fs
            if len(hx) >= 2:
                dX = np.diff(np.array(hx), axis=0).T
                dF = np.diff(np.array(hf), axis=0).T
                try:
                    gam, *_ = np.linalg.lstsq(dF, fs, rcond=1e-10)
                    cand = xs + beta * fs - (dX + beta * dF) @ gam
                    if np.all(np.isfinite(cand)) and np.max(np.abs(cand - xs)) > 1e-3 * np.max(np.abs(fs)):
                        step = cand
                    else:  # stagnation: restart the history with a plain step
                        hx.clear(); hf.clear()
                except np.linalg.LinAlgError:
                    hx.clear(); hf.clear()
            new[fi] = step * scale[fi]
            if not _admissible(new, rho) or (branch == "semantic" and new[3] <= 0) or \
                    (branch == "positional" and new[1] <= 0):
                new = x + 0.5 * (F[j] - x)  # damped fallback, history reset
                hx.clear(); hf.clear()
                if not _admissible(new, rho):
                    status[r] = "left_branch"
                    continue
            z[r] = new
        if n_up % 40 == 0 and (status == "running").any():
            restart = True
    status[(status == "running") | (status == "ready")] = "not_settled"
    return dict(z=z, status=status, test_error=te, train_loss=tl, n_updates=n_up, prox=warm)


def _suppressed_derivative(alpha: float, z: np.ndarray, nodes, w, branch: str, kw: dict,
                           prox: np.ndarray, eps: float = 1e-4) -> np.ndarray:
    """dF_m/dm at m = 0 (semantic) or dF_theta/dtheta at theta = 0 (positional), per row; the
    proximal problems start from the fixed point's (global) minimisers ``prox`` (K, N, 2)."""
    K = z.shape[0]
    j = 1 if branch == "semantic" else 3
    zz = np.concatenate([z, z])
    zz[:K, j] = eps
    zz[K:, j] = -eps
    up = se_update(np.full(2 * K, alpha), zz[:, 0], zz[:, 1], zz[:, 2], zz[:, 3],
                   nodes=np.concatenate([nodes, nodes]), weights=np.concatenate([w, w]),
                   warm=np.concatenate([prox, prox]), restart=False, with_test_error=False, **kw)
    key = "m" if branch == "semantic" else "theta"
    return (up[key][:K] - up[key][K:]) / (2 * eps)


# ----------------------------------------------------------------------------------------------
# the public solver
# ----------------------------------------------------------------------------------------------
def state_evolution(alpha: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                    A: Any = ((0.6, 0.4), (0.4, 0.6)), branch: str = "semantic", rtol: float = 1e-3,
                    n_scramblings: int = 6, min_log2_points: int = 10, max_log2_points: int = 16,
                    seed: int = 0, init: dict[str, Any] | None = None, continuation: bool = True,
                    stability: bool = True, max_updates: int = 300,
                    on_accuracy: str = "raise") -> dict[str, np.ndarray]:
    """Fixed points of the state evolution with an estimate of their quadrature error.

    Parameters
    ----------
    alpha : positive number or 1-D sequence (a sweep; solved by continuation from the largest
        ``alpha`` down, results returned in the input order).
    omega, sigma, lam, A : the model (positional share, token noise, ridge, positional matrix).
    branch : ``"semantic"`` (``theta > 0``; ``m = 0`` imposed for a swap-symmetric ``A``) or
        ``"positional"`` (``m > 0``, ``theta = 0`` imposed).
    rtol : accuracy target: quadrature error of the test error (standard error over the scramblings
        combined with the change from the nested rule of half as many points) at most ``rtol``
        times the test error (1e-5 to 0.1).
    n_scramblings : number ``K`` of independent scramblings (3 to 32).
    min_log2_points, max_log2_points : range of the number of points per scrambling, ``2**p``
        (6 to 18); doubled from the minimum (or the neighbour's) until the target is met.
    seed : selects the family of scramblings (independent families for different seeds).
    init : optional dict of initial ``q, m, V, theta`` (scalars) for the first point solved.
    continuation : start each point from the previous point's fixed point and number of points.
    stability : compute the derivative along the suppressed direction (two extra updates per
        scrambling at the final rule).
    max_updates : cap on the updates of one fixed-point solve.
    on_accuracy : ``"raise"`` (default: :class:`AccuracyNotReached` when a converged point misses
        the target at ``max_log2_points``) or ``"undecided"`` (report such a point as undecided).

    Returns
    -------
    dict of (A,) arrays (scalars for scalar ``alpha``): for ``k`` in ``q, m, V, theta, test_error,
    train_loss`` the mean over scramblings ``k`` and its quadrature error ``k_err`` (NaN unless
    converged or undecided with every scrambling on the branch); ``outcome`` (one of
    :class:`Outcome`), ``reason`` (a sentence), ``log2_points``, ``n_scramblings``, ``n_updates``
    (total updates), ``suppressed_derivative`` (``dF_m/dm`` or ``dF_theta/dtheta``, mean over
    scramblings; NaN if not computed), ``suppressed_derivative_err``, ``unstable`` (bool: the
    derivative exceeds +1, so the fixed point repels along the suppressed direction under the
    update with any damping), ``unstable_undamped`` (bool: its magnitude exceeds 1, so the undamped
    update is unstable there; a derivative below -1 is an oscillation that damping removes),
    ``seconds`` (wall time per point), ``alpha``.

    Raises
    ------
    ValueError for bad arguments (named); AccuracyNotReached (see ``on_accuracy``).
    """
    alphas, scalar = _check_alphas(alpha)
    omega = check_real("omega", omega, low=0.0, high=1.0)
    sigma = check_real("sigma", sigma, low=0.0, low_open=True, high=100.0)
    lam = check_real("lam", lam, low=0.0, low_open=True, high=1e3)
    A_ = check_A(A)
    branch = check_choice("branch", branch, BRANCHES)
    rtol = check_real("rtol", rtol, low=1e-5, high=0.1)
    K = check_int("n_scramblings", n_scramblings, minimum=3, maximum=32)
    pmin = check_int("min_log2_points", min_log2_points, minimum=6, maximum=18)
    pmax = check_int("max_log2_points", max_log2_points, minimum=pmin + 1, maximum=18)
    seed = check_int("seed", seed, minimum=0)
    max_updates = check_int("max_updates", max_updates, minimum=5, maximum=100_000)
    on_accuracy = check_choice("on_accuracy", on_accuracy, ("raise", "undecided"))
    rho = sigma * sigma
    symmetric = bool(np.allclose(A_, A_[::-1, ::-1]))
    free = np.array([True, not (branch == "semantic" and symmetric), True, branch == "semantic"])
    kw = dict(omega=omega, sigma=sigma, lam=lam, A=A_)
    ftol = min(1e-6, rtol * 1e-2)
    # t quantile for a 95% interval of a mean over K scramblings (used for "zero within its error")
    from scipy.stats import t as student_t
    tq = float(student_t.ppf(0.975, K - 1))

    nA = alphas.size
    out = {k: np.full(nA, np.nan) for k in OUTPUT_KEYS}
    out.update({f"{k}_err": np.full(nA, np.nan) for k in OUTPUT_KEYS})
    out.update(outcome=np.empty(nA, dtype=object), reason=np.empty(nA, dtype=object),
               log2_points=np.zeros(nA, dtype=int), n_updates=np.zeros(nA, dtype=int),
               suppressed_derivative=np.full(nA, np.nan), suppressed_derivative_err=np.full(nA, np.nan),
               unstable=np.zeros(nA, dtype=bool), unstable_undamped=np.zeros(nA, dtype=bool),
               seconds=np.zeros(nA))
    order = np.argsort(-alphas, kind="stable")
    z_prev, p_prev, prox_store = None, pmin + 1, {}
    for i in order:
        t0 = time.perf_counter()
        a = float(alphas[i])
        if z_prev is not None and continuation:
            z0, p = z_prev, min(max(pmin, p_prev - 1), pmax - 1)
        elif init is not None:
            z0 = np.array([float(init[k]) for k in ("q", "m", "V", "theta")])
            p = pmin
        else:
            z0 = np.array([v[0] for v in _initial_point(np.array([a]), branch, sigma)])
            p = pmin
        n_up = 0
        coarse = None  # the mean at the previous (nested, half as many points) level for this alpha
        while True:
            nodes, w = scrambled_rules(p, K, seed)
            warm0 = prox_store.get(p) if continuation else None
            r = _solve_rows(a, z0, nodes, w, free=free, branch=branch, kw=kw, rho=rho, ftol=ftol,
                            max_updates=max_updates, warm0=warm0)
            if continuation:
                prox_store[p] = r["prox"]
            n_up += r["n_updates"]
            st = r["status"]
            conv = st == "converged"
            vals = np.column_stack([r["z"], r["test_error"], r["train_loss"]])
            if conv.all():
                mean = vals.mean(0)
                se = vals.std(0, ddof=1) / math.sqrt(K)
                if coarse is None and p >= pmax:  # solve the nested level below instead of going up
                    nc, wc = scrambled_rules(p - 1, K, seed)
                    rc = _solve_rows(a, mean[:4], nc, wc, free=free, branch=branch, kw=kw, rho=rho,
                                     ftol=ftol, max_updates=max_updates)
                    n_up += rc["n_updates"]
                    if not (rc["status"] == "converged").all():
                        outcome, reason = Outcome.UNDECIDED, (
                            f"converged on all {K} scramblings of 2^{p} points but not on the nested "
                            f"rule of 2^{p - 1}: no error estimate")
                        err = np.full(6, np.nan)
                        break
                    coarse = np.column_stack([rc["z"], rc["test_error"], rc["train_loss"]]).mean(0)
                if coarse is None:  # need the nested level's mean before judging the error
                    coarse = mean
                    z0 = mean[:4]
                    p += 1
                    continue
                # quadrature error: standard error over scramblings, combined with the change from
                # the nested rule of half as many points (a bias of the fixed point that shrinks
                # with N; over-estimated by the change, which errs on the safe side)
                err = np.sqrt(se ** 2 + (mean - coarse) ** 2)
                order_par = 3 if branch == "semantic" else 1
                if mean[order_par] - tq * err[order_par] <= 0:
                    outcome, reason = Outcome.UNDECIDED, (
                        f"{'theta' if branch == 'semantic' else 'm'} is zero within its quadrature error "
                        f"({mean[order_par]:.2e} +- {err[order_par]:.1e}, {K} scramblings of 2^{p})")
                    break
                if err[4] <= rtol * abs(mean[4]):
                    outcome, reason = Outcome.CONVERGED, (
                        f"test error to {err[4] / abs(mean[4]):.1e} relative (standard error over {K} "
                        f"scramblings of 2^{p} points combined with the change from 2^{p - 1})")
                    break
                if p >= pmax:
                    msg = (f"state evolution ({branch}, alpha={a:.4g}, omega={omega}): fixed point found "
                           f"on all {K} scramblings of 2^{p} points but the test error's quadrature error "
                           f"{err[4] / abs(mean[4]):.1e} (relative) exceeds rtol={rtol}; raise "
                           f"max_log2_points (now {pmax}) or rtol")
                    if on_accuracy == "raise":
                        raise AccuracyNotReached(msg)
                    outcome, reason = Outcome.UNDECIDED, msg
                    break
                coarse = mean
                z0 = mean[:4]
            elif (st == "left_branch").all():
                outcome, reason = Outcome.NO_FIXED_POINT, (
                    f"the iteration leaves the {branch} branch "
                    f"({'theta' if branch == 'semantic' else 'm'} flows to 0) on all {K} scramblings of 2^{p} points")
                mean = np.full(6, np.nan); err = np.full(6, np.nan)
                break
            else:
                counts = {s_: int((st == s_).sum()) for s_ in ("converged", "left_branch", "not_settled")}
                if p >= pmax:
                    outcome, reason = Outcome.UNDECIDED, (
                        f"the scramblings disagree at 2^{p} points: {counts['converged']} converged, "
                        f"{counts['left_branch']} left the branch, {counts['not_settled']} did not settle")
                    mean = vals[conv].mean(0) if conv.any() else np.full(6, np.nan)
                    err = np.full(6, np.nan)
                    break
                coarse = None
                if conv.any():
                    z0 = vals[conv].mean(0)[:4]
            p += 1
        mean = np.asarray(mean); err = np.asarray(err)
        for k, key in enumerate(OUTPUT_KEYS):
            out[key][i] = mean[k]
            out[f"{key}_err"][i] = err[k]
        out["outcome"][i], out["reason"][i] = outcome, reason
        out["log2_points"][i] = p
        if outcome == Outcome.CONVERGED and stability and (branch == "positional" or symmetric):
            dv = _suppressed_derivative(a, r["z"], nodes, w, branch, kw, r["prox"])
            out["suppressed_derivative"][i] = dv.mean()
            out["suppressed_derivative_err"][i] = dv.std(ddof=1) / math.sqrt(K)
            out["unstable"][i] = dv.mean() > 1
            out["unstable_undamped"][i] = abs(dv.mean()) > 1
            n_up += 1
        out["n_updates"][i] = n_up
        if outcome == Outcome.CONVERGED:
            z_prev, p_prev = mean[:4], p
        out["seconds"][i] = time.perf_counter() - t0
    out["alpha"] = alphas
    out["n_scramblings"] = np.full(nA, K)
    if scalar:
        out = {k: v[0] for k, v in out.items()}
    return out


def estimate(result: dict, key: str, index: int | None = None):
    """One output of :func:`state_evolution` as a :class:`stumplib.stats.Estimate` (kind
    ``"quadrature"``: value +- its quadrature error), for a scalar result or entry ``index``."""
    from ..stats import Estimate
    if key not in OUTPUT_KEYS:
        raise ValueError(f"key must be one of {OUTPUT_KEYS}; got {key!r}")
    v, e = result[key], result[f"{key}_err"]
    if index is not None:
        v, e = v[index], e[index]
    return Estimate.with_error(float(v), float(e), kind="quadrature")
