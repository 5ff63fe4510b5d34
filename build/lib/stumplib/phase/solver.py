"""Accuracy-controlled state evolution: :func:`state_evolution`.

The Gaussian averages of the state evolution (:mod:`.replica`) are computed with a randomised quasi-Monte
Carlo rule: ``K`` independent scramblings of a Sobol sequence of ``2**p`` points each, mapped to four
standard normals. The ``K`` scramblings are pooled into one rule of ``K 2**p`` points and the fixed
point of the pooled rule is solved once. Its quadrature error comes from the delta method: at the
pooled fixed point ``z``, scrambling ``k``'s own update gives the residual ``F_k(z) - z``; propagated
through ``(I - J)^{-1}`` (``J`` the update's Jacobian along the free overlaps, by finite differences
with common nodes on the first ``2**11`` points of each scrambling: it enters only through
``(I - J)^{-1}``, where its own relative error of a few 1e-3 is immaterial) it is the offset of scrambling ``k``'s own fixed point, and one more Newton step
on scrambling ``k``'s map from there adds the second-order terms. The spread of these ``K`` fixed
points (standard error, scaled by ``t_{K-1} / z`` at 95% so that ``+-1.96 err`` is Student's
interval for ``K`` samples) combined with the pooled fixed point's bias estimate (the ``K``
single-scrambling fixed points have ``K`` times the pooled one's ``1/N`` bias: ``(mean_k z_k - z) /
(K - 1)``) is the reported error of every output (the losses move with the overlaps through their
gradients). The number of points is raised (about ``1/N`` for the error, measured) until the test
error's error is below ``rtol`` times the test error.

The pooled fixed point is found by Anderson acceleration of the undamped update far from it (scaled
residual above 0.05) and by a quasi-Newton method (finite-difference Jacobian, Broyden updates, the
neighbour's Jacobian in a sweep) near it, with every proximal problem followed from its previous
minimiser (the map is then smooth). A point is accepted only after an update whose proximal problems
were searched for their global minimisers from several starts meets the tolerance; iteration
resumes if that update differs (after a small difference, one Newton step and the global update
again). The multi-start search uses the centre, the current minimiser and
the default starts (origin, matching points, see :func:`.proximal.proximal`) on nodes met for the first
time; on the other nodes the minimisers that those default starts reached at the last multi-start
(nearby overlaps) are followed instead of starting again, and the centre is started afresh. Between
multi-starts every update also follows those tracked minimisers (and the centre's) at the few nodes
where they lie in another basin than the current minimiser (0.2% of the nodes at alpha = 1), so the
followed map switches basins where the global one does. Large rules are split by whole scramblings
over the cores (:func:`.parallel.num_threads`, ``STUMPLIB_THREADS``; the result does not depend on the
split). Points of a sweep in ``alpha`` are solved by continuation: the start is the quadratic through the
last three fixed points when they share the rule, else an Euler-Newton predictor from the last one
(the integrands do not depend on ``alpha``, so the update at the new ``alpha`` from the last point's
averages costs nothing; one Newton step with its Jacobian); the Jacobian extrapolated from the last
two, the neighbour's proximal minimisers and number of points, one level more when the error,
growing along the sweep as over its last two points, would miss the target, and a finer rule,
after a miss, verified at once. Sobol
nets are nested, so the first ``2**(p-1)`` points
of a scrambling are its ``2**(p-1)`` net and keep their minimisers when ``p`` grows).

Three named outcomes per ``alpha`` (:class:`Outcome`):

- ``converged``: the pooled rule's fixed point is on the branch and the test error's quadrature
  error meets the target;
- ``no_fixed_point``: the iteration leaves the branch (semantic: ``theta`` flows to 0; positional:
  ``m`` flows to 0);
- ``undecided``: the branch's order parameter is zero within its quadrature error, or the fixed
  point repels along the free overlaps (a Jacobian eigenvalue at or above 1: no error bound), or
  the iteration does not settle, or the fixed point moves with the rule: the rule cannot decide
  within its error (near a branch's end).

Delicate points. Where the order parameter's relative error exceeds 1% (near a branch's end), the
linearised error can fail: a coarse rule's fixed point was measured 6 to 10 of its errors away from
a finer rule's at alpha = 0.6 to 0.7 (semantic, omega = 0.3). Such a point is solved at two numbers
of points and is ``converged`` only if it moves between them by at most three combined errors, its
order parameter's error (with the move added) stays below 10% of its value and the test error's
below ``rtol``; the move is added to every reported error.

A converged point whose accuracy target cannot be met within ``max_log2_points`` raises
:class:`AccuracyNotReached` (never a silent inaccurate point).

Stability of the imposed symmetry: on the semantic branch ``m = 0`` is imposed (swap-symmetric
``A``), on the positional branch ``theta = 0``. The suppressed direction decouples at the fixed point
(the other overlaps are even in it), so the derivative of the update along it, ``dF_m/dm`` at
``m = 0`` (or ``dF_theta/dtheta`` at ``theta = 0``), is an eigenvalue of the update's Jacobian
(central finite difference, same nodes, proximal problems started from the fixed point's global
minimisers, on the first ``2**12`` points of each scrambling, with its standard error over the
scramblings). Its value is returned;
``unstable_undamped`` flags a magnitude above 1 (the undamped iteration leaves the point),
``unstable`` a value above +1 (the damped iteration ``z <- eta z + (1 - eta) F(z)`` leaves it for
every damping ``eta``; a value below -1 is an oscillation that damping removes).

The code, top down: :func:`state_evolution` validates (:func:`.setting.check_model`) and walks the sweep,
carrying a :class:`_Sweep` (the last points, Jacobian, minimisers and level) from one ``alpha`` to
the next; :func:`_solve_point` runs one ``alpha``'s :class:`_Search` over levels: the pooled rule's
fixed point (:func:`_pooled_solve`, :func:`_solve_pooled` with its :class:`_QuasiNewton` state), its
delta-method error (:func:`_delta_error`), then the outcome (:func:`_classify`, with
:func:`_delicate` near a branch's end) or the next level; the answer lands in a
:class:`StateEvolutionResult`, which reads like a dict of arrays.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Mapping

import numpy as np

from scipy.special import expit

from stumplib.core.validation import check_choice, check_int, check_real

from stumplib.phase.parallel import PARALLEL_MIN, num_threads, run_parallel

from stumplib.phase.proximal import proximal

from stumplib.phase.replica import geometry, initial_point

from stumplib.phase.setting import (DEFAULT_A, PhaseModel, StateEvolutionError, MappingResult, check_alphas, check_model, teacher_rows)

__all__ = ["Outcome", "AccuracyNotReached", "state_evolution", "StateEvolutionResult", "scrambled_rules",
           "estimate", "OUTPUT_KEYS"]

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


@lru_cache(maxsize=160)
def _sobol_normal(log2_points: int, seed: int) -> np.ndarray:
    from scipy.stats import norm, qmc
    u = qmc.Sobol(4, scramble=True, seed=seed).random_base2(log2_points)
    nodes = norm.ppf(np.clip(u, 1e-15, 1 - 1e-15))
    nodes.setflags(write=False)
    return nodes


def scrambled_rules(log2_points: int, n_scramblings: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``K`` independent scramblings of a Sobol rule of ``2**log2_points`` points.

    Parameters
    ----------
    log2_points : int
        Base-2 logarithm of the number of points ``N`` of each scrambling (6 to 20).
    n_scramblings : int
        Number ``K`` of independent scramblings (2 to 64).
    seed : int, optional
        The family of scramblings (>= 0; default 0): scrambling ``k`` uses the seed ``1000 * seed + k``.

    Returns
    -------
    nodes : numpy.ndarray, shape ``(K, N, 4)``
        Standard normal nodes ``(xi_1, xi_2, Y_1, Y_2)`` of each scrambling, ``N = 2**log2_points``.
    weights : numpy.ndarray, shape ``(K, N)``
        Equal weights ``1 / N``, each row summing to one.
    """
    log2_points = check_int("log2_points", log2_points, minimum=6, maximum=20)
    n_scramblings = check_int("n_scramblings", n_scramblings, minimum=2, maximum=64)
    seed = check_int("seed", seed, minimum=0)
    nodes = np.stack([_sobol_normal(log2_points, 1000 * seed + k) for k in range(n_scramblings)])
    w = np.full(nodes.shape[:2], 1.0 / nodes.shape[1])
    return nodes, w


# ----------------------------------------------------------------------------------------------
# the pooled rule: one fixed point for all K scramblings, solved by (quasi-)Newton
# ----------------------------------------------------------------------------------------------
_FLOOR = np.array([1e-4, 1e-3, 1e-2, 1e-4])  # scales of q, m, V, theta for relative changes
_NEWTON_ZONE = 0.05  # scaled residual below which quasi-Newton steps are taken
_JAC_POINTS = 2 ** 11  # points per scrambling for the Jacobian and loss gradients at the accepted point
_STAB_POINTS = 2 ** 12  # points per scrambling for the derivative along the suppressed direction
_DELICATE = 0.01  # relative error of the order parameter above which two levels must agree
_ORDER_RTOL = 0.1  # largest relative error of the order parameter of a delicate point
_LEVEL_NSIG = 3.0  # how many combined errors two levels may differ by
_N_TRACKED = 4  # tracked starts per node: the origin, the two matching points, the centre
_FD_STEP = 1e-4  # relative finite-difference step for the Jacobian (common nodes, warm minimisers)


def _admissible(z: np.ndarray, rho: float) -> bool:
    q, m, V, th = z
    return bool(np.all(np.isfinite(z)) and q > 0 and V > 0 and th * th < rho * q * (1 - 1e-9))


def _pooled_nodes(log2_points: int, K: int, seed: int) -> np.ndarray:
    """The ``K`` scramblings of ``2**log2_points`` points stacked into one (K N, 4) rule (scrambling
    ``k`` is the block ``k N : (k + 1) N``)."""
    nodes, _ = scrambled_rules(log2_points, K, seed)
    return nodes.reshape(-1, 4)


def _follow_alts(center, t, Vb, sigma, sel, warm, xw, xb, Gb, alts, new_alts) -> None:
    """Newton from the tracked minimisers ``alts`` (_N_TRACKED, K N, 2) of the other starts at the
    nodes ``sel`` (an index array or a slice), where they lie in another basin than the current
    minimiser ``warm`` (a start in the same basin leads where ``warm`` leads, ``xw``); keeps, in
    ``xb, Gb`` ``(1, |sel|, ...)``, the lower minimum, and writes where each start now leads into
    ``new_alts``."""
    w_sel = warm[sel]
    js, ks = [], []
    for k in range(alts.shape[0]):
        new_alts[k, sel] = xw
        d = np.abs(alts[k, sel] - w_sel)
        j = np.flatnonzero(np.maximum(d[:, 0], d[:, 1]) > 1e-6)
        js.append(j)
        ks.append(np.full(j.size, k))
    j, kk = np.concatenate(js), np.concatenate(ks)
    if j.size == 0:
        return
    node = j if isinstance(sel, slice) else sel[j]
    # one batch for all tracked starts (small batches cost their per-call overhead)
    xj, Gj, _ = proximal(center[:, node], t[:, node], Vb, sigma, match_starts=False, default_starts=False,
                         extra_starts=[alts[kk, node][None]])
    new_alts[kk, node] = xj[0]
    for k in range(alts.shape[0]):  # the lowest of the tracked minima per node, in start order
        sk = kk == k
        better = Gj[0, sk] < Gb[0, j[sk]]
        jb = j[sk][better]
        xb[0, jb], Gb[0, jb] = xj[0, sk][better], Gj[0, sk][better]


def _evaluate_block(alpha: float, Z: np.ndarray, nodes: np.ndarray, K: int, kw: dict, warm: np.ndarray | None,
                    known: np.ndarray | None, restart: bool, alts: np.ndarray | None):
    """:func:`_evaluate` on the nodes of ``K`` whole scramblings: the per-scrambling averages of the
    six integrands (R, K, 6), the proximal minimisers (R, K N, 2), the tracked starts' minimisers
    (_N_TRACKED, K N, 2) or None, and ``vstar`` (R,)."""
    sigma, omega, lam, A_ = kw["sigma"], kw["omega"], kw["lam"], kw["A"]
    rho = sigma * sigma
    q, m, V, th = (np.ascontiguousarray(Z[:, j]) for j in range(4))
    R, KN = Z.shape[0], nodes.shape[-2]
    center, u, vstar, xi, Y = geometry(q, m, th, sigma, nodes)
    t = teacher_rows(u, omega, A_)
    Vb = V[:, None]
    new_alts = None
    if restart and R == 1 and warm is not None and alts is not None:
        # multi-start, tracked: the centre, the current minimiser and the minimisers that the other
        # default starts (origin, matching points) reached at the last full multi-start (nearby
        # overlaps), each followed by Newton to its minimum here; nodes without such (new nodes)
        # get every default start
        x = np.empty_like(center)
        new_alts = np.empty((_N_TRACKED,) + center.shape[1:])
        ok = np.all(np.isfinite(alts), axis=(0, 2))
        for sel, tracked in ((np.flatnonzero(ok), True), (np.flatnonzero(~ok), False)):
            if sel.size == 0:
                continue
            if tracked:
                xb, Gb, _, xs, _ = proximal(center[:, sel], t[:, sel], Vb, sigma, match_starts=False,
                                            default_starts=False, return_all=True,
                                            extra_starts=[center[:, sel], warm[None, sel]])
                _follow_alts(center, t, Vb, sigma, sel, warm, xs[1, 0], xb, Gb, alts, new_alts)
                new_alts[3, sel] = xs[0, 0]  # where the centre, started afresh, leads
            else:  # (new nodes of a finer rule have no minimiser yet: warm is the origin there)
                ws = warm[None, sel]
                xb, _, _, xs, _ = proximal(center[:, sel], t[:, sel], Vb, sigma, return_all=True,
                                           extra_starts=[ws] if np.any(ws) else [])
                new_alts[:, sel] = xs[[1, 2, 3, 0], 0]
            x[:, sel] = xb
    elif warm is None or restart:
        starts = [] if warm is None else [np.broadcast_to(warm, center.shape)]
        x, _, _, xs, _ = proximal(center, t, Vb, sigma, extra_starts=starts, return_all=True)
        if R == 1:
            new_alts = xs[[1, 2, 3, 0], 0]  # where the origin, the matching points and the centre led
    elif known is None:
        x, G, _ = proximal(center, t, Vb, sigma, default_starts=False, match_starts=False,
                           extra_starts=[np.broadcast_to(warm, center.shape)])
        if R == 1 and alts is not None and np.all(np.isfinite(alts)):
            # the tracked minimisers of the other starts are followed too (the few nodes where they
            # lie in another basin), so that the map switches basins where the global one does
            new_alts = np.empty((_N_TRACKED,) + center.shape[1:])
            _follow_alts(center, t, Vb, sigma, slice(None), warm, x[0].copy(), x, G, alts, new_alts)
    else:
        x = np.empty_like(center)
        kn = known
        if kn.any():
            i = np.flatnonzero(kn)
            x[:, i], _, _ = proximal(center[:, i], t[:, i], Vb, sigma, default_starts=False, match_starts=False,
                                     extra_starts=[np.broadcast_to(warm[i], (R, i.size, 2))])
        if not kn.all():  # new nodes: started from the centre and the origin (the multi-start
            i = np.flatnonzero(~kn)  # verification of the accepted point completes the search)
            x[:, i], _, _ = proximal(center[:, i], t[:, i], Vb, sigma, match_starts=False)
    r = x - center
    s = expit(x * (x[..., 0] - x[..., 1])[..., None])
    sc = expit(center * (center[..., 0] - center[..., 1])[..., None])
    integrands = np.stack([r[..., 0] - r[..., 1], (r * r).sum(-1), (r * Y).sum(-1), (r * xi).sum(-1),
                           rho * ((s - t) ** 2).sum(-1), rho * ((sc - t) ** 2).sum(-1)], -1)  # (R, KN, 6)
    return integrands.reshape(R, K, KN // K, 6).mean(2), x, new_alts, vstar  # (R, K, 6) averages



def _evaluate(alpha: float, Z: np.ndarray, nodes: np.ndarray, K: int, kw: dict, warm: np.ndarray | None,
              known: np.ndarray | None, restart: bool, alts: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The update at the rows ``Z`` (R, 4), all on the same nodes (K N, 4) (or row ``r`` on its own
    nodes ``nodes[r]``, (R, K N, 4), with ``warm`` (R, K N, 2) and ``known`` None).

    Proximal problems start from ``warm`` (K N, 2) where ``known`` (K N,) is true, and from every
    default start (centre, origin, matching points) elsewhere and everywhere when ``restart``.
    Large rules are split by whole scramblings (rows on their own nodes: by rows) over
    :func:`.parallel.num_threads` threads (each node's work is its own, so the result does not depend on
    the split).

    Returns dict: ``pooled`` (R, 6) and ``per`` (R, K, 6) values of the update ``(q, m, V, theta)``
    followed by the test error and train loss at the input rows, with the averages taken over all
    nodes or over scrambling ``k``'s block; ``prox`` (R, K N, 2).
    """
    sigma, lam = kw["sigma"], kw["lam"]
    rho = sigma * sigma
    q, V, th = (np.ascontiguousarray(Z[:, j]) for j in (0, 2, 3))
    R, KN = Z.shape[0], nodes.shape[-2]
    N = KN // K
    if nodes.ndim == 3 and K == 1 and R > 1 and alts is None and known is None:
        # rows on their own nodes (one scrambling each): split by rows
        n_blocks = max(1, min(num_threads(), R, (R * KN) // PARALLEL_MIN))
        rb = np.linspace(0, R, n_blocks + 1).astype(int)
        parts = run_parallel(_evaluate_block, [
            (alpha, Z[a:b], nodes[a:b], 1, kw, None if warm is None else warm[a:b], None, restart, None)
            for a, b in zip(rb[:-1], rb[1:])])
        per_avg = np.concatenate([p[0] for p in parts], 0)
        x = np.concatenate([p[1] for p in parts], 0)
        new_alts = None
        vstar = np.concatenate([p[3] for p in parts], 0)
    else:
        n_blocks = max(1, min(num_threads(), K, (R * KN) // PARALLEL_MIN))
        kb = np.linspace(0, K, n_blocks + 1).astype(int)
        parts = run_parallel(_evaluate_block, [
            (alpha, Z, nodes[..., a * N:b * N, :], b - a, kw, None if warm is None else warm[..., a * N:b * N, :],
             None if known is None else known[a * N:b * N], restart, None if alts is None else alts[:, a * N:b * N])
            for a, b in zip(kb[:-1], kb[1:])])
        per_avg = np.concatenate([p[0] for p in parts], 1)
        x = np.concatenate([p[1] for p in parts], 1)
        new_alts = None if parts[0][2] is None else np.concatenate([p[2] for p in parts], 1)
        vstar = parts[0][3]
    pooled_avg = per_avg.mean(1)  # equal block sizes: the pooled rule's averages

    return dict(pooled=_outputs(alpha, pooled_avg, q, V, th, vstar, lam, rho, (R,)),
                per=_outputs(alpha, per_avg, q, V, th, vstar, lam, rho, (R, 1)), prox=x, alts=new_alts,
                avg=pooled_avg, vstar=vstar)


def _outputs(alpha: float, avg: np.ndarray, q: np.ndarray, V: np.ndarray, th: np.ndarray, vstar: np.ndarray,
             lam: float, rho: float, b: tuple) -> np.ndarray:
    """The update ``(q, m, V, theta)``, the test error and the train loss (..., 6) from the averages
    ``avg`` (R, ..., 6) of the six integrands at the rows (q, V, theta, vstar: (R,)); ``b`` is the
    broadcast shape of a row parameter. ``alpha`` enters only here (the integrands do not depend on
    it), which gives the update at another ``alpha`` for free."""
    R = q.shape[0]
    al, qq, VV, tt, vs = (np.asarray(v).reshape(b) for v in (np.full(R, alpha), q, V, th, vstar))
    m_hat = al * avg[..., 0] / VV
    q_hat = al * avg[..., 1] / VV ** 2
    th_hat = al * avg[..., 2] / (VV * vs)
    V_hat = -al * avg[..., 3] / (VV * np.sqrt(qq)) + tt * th_hat / qq
    den = lam + V_hat * rho
    den = np.where(den > 0, den, np.nan)  # left the admissible region: NaN, judged by the caller
    return np.stack([rho * (q_hat * rho + m_hat ** 2 + th_hat ** 2 * rho * rho) / den ** 2, m_hat / den,
                     rho / den, rho * rho * th_hat / den, avg[..., 5] + 0 * al,
                     al * avg[..., 4] + lam * qq / (2 * rho)], -1)


def _constrain(z: np.ndarray, branch: str, free: np.ndarray) -> np.ndarray:
    z = z.copy()
    if branch == "positional":
        z[..., 3] = 0.0
    elif not free[1]:
        z[..., 1] = 0.0
    return z


def _left_branch(z: np.ndarray, F: np.ndarray, branch: str, rho: float) -> bool:
    """The order parameter flows to zero (semantic: ``theta``; positional: ``m``)."""
    if branch == "semantic":
        lim = 2e-3 * math.sqrt(rho * max(z[0], 1e-300))
        return bool(z[3] <= lim and F[3] <= lim)
    return bool(abs(z[1]) <= 2e-3 and abs(F[1]) <= 2e-3)


def _fd_rows(z: np.ndarray, fi: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """``z`` and ``z + h_j e_j`` along the free coordinates ``fi`` (forward differences, relative
    step ``_FD_STEP``), and the steps ``h``."""
    h = _FD_STEP * np.maximum(np.abs(z[fi]), _FLOOR[fi])
    rows = [z.copy() for _ in range(fi.size + 1)]
    for j in range(fi.size):
        rows[j + 1][fi[j]] += h[j]
    return rows, h


def _on_branch(new: np.ndarray, z: np.ndarray, branch: str, rho: float, *, keep: float = 0.0) -> bool:
    """Admissible, with the branch's order parameter above ``keep`` times its value at ``z``."""
    j = 3 if branch == "semantic" else 1
    return _admissible(new, rho) and new[j] > keep * z[j]


@dataclass(eq=False)
class _QuasiNewton:
    """The iteration state of :func:`_solve_pooled` on the scaled free coordinates."""
    JG: np.ndarray | None  # Jacobian of F - z (scaled), None: take fixed-point steps
    want_fd: bool = False  # take finite differences at the next update
    prev: tuple | None = None  # (scaled step, residual) of the last step, for Broyden's update
    res_prev: float = math.inf
    hx: list = field(default_factory=list)  # Anderson history: iterates and residuals
    hf: list = field(default_factory=list)

    def anderson(self, z: np.ndarray, F: np.ndarray, g: np.ndarray, free: np.ndarray, scale: np.ndarray,
                 branch: str, rho: float) -> np.ndarray | None:
        """Far from the fixed point: Anderson acceleration (type II, depth 4) of the undamped
        update in scaled variables, a damped update if it leaves the admissible region (or flips
        the order parameter's sign); None if that too leaves it."""
        fi = np.flatnonzero(free)
        xs, fs = z[fi] / scale, g
        self.hx.append(xs.copy()); self.hf.append(fs.copy())
        if len(self.hx) > 5:
            self.hx.pop(0); self.hf.pop(0)
        stp = xs + fs
        if len(self.hx) >= 2:
            dX = np.diff(np.array(self.hx), axis=0).T
            dF = np.diff(np.array(self.hf), axis=0).T
            try:
                gam, *_ = np.linalg.lstsq(dF, fs, rcond=1e-10)
                cand = xs + fs - (dX + dF) @ gam
                if np.all(np.isfinite(cand)) and np.max(np.abs(cand - xs)) > 1e-3 * np.max(np.abs(fs)):
                    stp = cand
                else:
                    self.hx.clear(); self.hf.clear()
            except np.linalg.LinAlgError:
                self.hx.clear(); self.hf.clear()
        new = z.copy(); new[fi] = stp * scale
        new = _constrain(new, branch, free)
        if not _on_branch(new, z, branch, rho):
            self.hx.clear(); self.hf.clear()
            new = z + 0.5 * (F - z)
        if not _admissible(new, rho):
            new = z + 0.5 * (F - z)
            if not _admissible(new, rho):
                return None
        return new

    def newton(self, z: np.ndarray, F: np.ndarray, g: np.ndarray, fi: np.ndarray, scale: np.ndarray,
               branch: str, rho: float) -> tuple[np.ndarray | None, np.ndarray]:
        """A Newton step on the scaled residual, capped at 30% of each coordinate's scale, halved
        until admissible (and the order parameter keeps its sign), else a damped fixed-point step
        (the model is dropped). Returns the new point (None: it leaves the admissible region) and
        the scaled step."""
        try:
            step = np.linalg.solve(self.JG, -g)
        except np.linalg.LinAlgError:
            step = g.copy()
        if not np.all(np.isfinite(step)):
            step = g.copy()
        cap = 0.3 * np.maximum(np.abs(z[fi]), _FLOOR[fi]) / scale
        big = float(np.max(np.abs(step) / cap))
        if big > 1:
            step = step / big
        for _ in range(8):
            new = z.copy(); new[fi] += step * scale
            if _on_branch(new, z, branch, rho, keep=0.1):
                return new, step
            step = 0.5 * step
        self.JG = None
        new = z + 0.5 * (F - z)
        return (new if _admissible(new, rho) else None), step

    def learn(self, ev: dict, F: np.ndarray, g: np.ndarray, h: np.ndarray | None, free: np.ndarray,
              scale: np.ndarray, branch: str, verify: bool) -> None:
        """Update the model from an evaluation: the finite-difference Jacobian from its rows
        ``z + h_j e_j`` (with ``h``), else Broyden's rank-one update from the last step (not across
        a global update)."""
        fi = np.flatnonzero(free)
        if h is not None:
            Fj = _constrain(ev["pooled"][1:, :4], branch, free)[:, fi]  # (nf, nf): row j = F(z + h_j e_j)
            self.JG = ((Fj - F[fi]) / h[:, None]).T * scale[None, :] / scale[:, None] - np.eye(fi.size)
            self.want_fd, self.prev = False, None
        elif self.prev is not None and self.JG is not None and not verify:
            s_, y_ = self.prev[0], g - self.prev[1]
            ss = float(s_ @ s_)
            if ss > 0:
                self.JG = self.JG + np.outer(y_ - self.JG @ s_, s_) / ss

    def missed(self, res: float, was_verify: bool) -> None:
        """After an update that misses the tolerance: no secant across a global update (it jumped,
        switching minimisers); a model whose residual doubled failed (back to fixed-point steps and
        new differences)."""
        if was_verify:
            self.prev = None
        if self.JG is not None and res > 2 * self.res_prev and not was_verify:
            self.JG = None
        self.res_prev = res

    def step(self, z: np.ndarray, F: np.ndarray, g: np.ndarray, res: float, free: np.ndarray,
             scale: np.ndarray, branch: str, rho: float) -> np.ndarray | None:
        """The next iterate: accelerated fixed-point steps far from the fixed point or without a
        model (the finite-difference Jacobian is taken once the residual is small), Newton steps
        near it; None if the iteration leaves the admissible region."""
        fi = np.flatnonzero(free)
        if self.JG is None or res > _NEWTON_ZONE:
            new = self.anderson(z, F, g, free, scale, branch, rho)
            if new is not None:
                self.prev = ((new - z)[fi] / scale, g) if self.JG is not None else None
                self.want_fd = self.JG is None and res <= _NEWTON_ZONE
            return new
        new, step = self.newton(z, F, g, fi, scale, branch, rho)
        if new is None:
            return None
        self.prev = (step, g) if self.JG is not None else None
        return _constrain(new, branch, free)


def _first_minimisers(alpha: float, z: np.ndarray, nodes: np.ndarray, K: int, kw: dict
                      ) -> tuple[np.ndarray, np.ndarray | None, None, int]:
    """A full multi-start update at ``z``: ``(warm, alts, known, n_updates)`` for
    :func:`_solve_pooled` to follow from (``known`` is reset, one update spent)."""
    e0 = _evaluate(alpha, z[None], nodes, K, kw, None, None, restart=True)
    return e0["prox"][0], e0["alts"], None, 1


def _solve_pooled(alpha: float, z0: np.ndarray, nodes: np.ndarray, K: int, *, free: np.ndarray, branch: str,
                  kw: dict, rho: float, ftol: float, max_updates: int, warm: np.ndarray | None,
                  known: np.ndarray | None, jac: np.ndarray | None, max_checks: int = 6,
                  verify_global: bool = True, alts: np.ndarray | None = None,
                  verify_first: bool = False) -> dict[str, Any]:
    """Fixed point ``z = F(z)`` of the pooled rule by a quasi-Newton method on the free coordinates.

    The Jacobian ``jac`` (free x free, of ``F``) comes from the neighbour or from finite differences
    (common nodes, proximal problems followed from their current minimisers, so the map is smooth),
    and is updated by Broyden's rank-one formula. The proximal problems are followed from the
    previous update's minimisers; when the residual is below ``ftol`` (relative) the update is
    repeated at the same point with the full multi-start search, and the point is accepted only if
    that global update also meets the tolerance (without ``verify_global``, the point is returned
    with status "local" at that stage: the minimisers followed, not verified to be global).

    Returns dict: status in {"converged", "local", "left_branch", "not_settled"}, z (4,), ev (the
    last update, rows [z, ...]), prox (K N, 2), n_updates (rows evaluated), jac (free x free, or
    None), alts (the tracked starts' minimisers; None unless converged).
    """
    fi = np.flatnonzero(free)
    nf = fi.size
    z = _constrain(np.asarray(z0, dtype=np.float64), branch, free)
    scale = np.maximum(np.abs(z), _FLOOR)[fi]
    n_up = 0
    if warm is None:  # no minimisers to follow: a full multi-start update finds them
        warm, alts, known, n_up = _first_minimisers(alpha, z, nodes, K, kw)
    verify = bool(verify_first and warm is not None)  # z0 already solved with followed minimisers
    checks = int(verify)
    qn = _QuasiNewton(None if jac is None else jac / scale[:, None] * scale[None, :] - np.eye(nf))
    ev = None

    def result(status: str, with_jac: bool = False) -> dict[str, Any]:
        J = (qn.JG + np.eye(nf)) * scale[:, None] / scale[None, :] if with_jac and qn.JG is not None else None
        return dict(status=status, z=z, ev=ev, prox=warm, n_updates=n_up, jac=J,
                    alts=alts if status == "converged" else None)

    while n_up < max_updates:
        rows, h = [z], None
        if qn.JG is None and qn.want_fd and not verify:
            rows, h = _fd_rows(z, fi)
        ev = _evaluate(alpha, np.array(rows), nodes, K, kw, warm, known, restart=verify, alts=alts)
        if ev["alts"] is not None:
            alts = ev["alts"]
        n_up += len(rows)
        warm, known = ev["prox"][0], None
        F = _constrain(ev["pooled"][0, :4], branch, free)
        if not np.all(np.isfinite(F)):
            return result("left_branch")
        g = (F - z)[fi] / scale
        qn.learn(ev, F, g, h, free, scale, branch, verify)
        res = float(np.max(np.abs(g))) if nf else 0.0
        if res < (ftol * min(100.0, 3.0 ** checks) if verify else ftol):
            if verify:
                return result("converged", with_jac=True)
            if not verify_global:
                return result("local", with_jac=True)
            checks += 1
            if checks > max_checks:
                break
            verify = True
            continue
        was_verify, verify = verify, False
        if _left_branch(z, F, branch, rho):
            return result("left_branch")
        qn.missed(res, was_verify)
        newton = qn.JG is not None and res <= _NEWTON_ZONE
        new = qn.step(z, F, g, res, free, scale, branch, rho)
        if new is None:
            return result("left_branch")
        z = new
        if not newton:
            continue
        if was_verify and qn.JG is not None and res < 100 * ftol and checks < max_checks:
            # a small jump at the global update (a few proximal problems switched basins): the Newton
            # step from it lands within the tolerance, so the next update is the global one at once
            checks += 1
            verify = True
        if n_up % 40 < len(rows) and n_up > 40:
            qn.JG, qn.want_fd = None, True  # slow progress: refresh the Jacobian by finite differences
    return result("not_settled")



def _predict(a: float, hist: list, p: int, branch: str, free: np.ndarray, rho: float,
             lam: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Starting overlaps (4,) and Jacobian (free x free, or None) at ``alpha = a`` from the sweep's
    converged points ``hist`` [(alpha, z, J, level, (averages, vstar))], the next at ``level = p``.

    Quadratic extrapolation through the last three when they share the rule ``p`` (their quadrature
    errors are then smooth in alpha; across rules they differ, and extrapolation would amplify the
    difference); otherwise an Euler-Newton predictor from the last point alone: the integrands do not
    depend on alpha, so the update at ``a`` from its averages is free, and one Newton step with its
    Jacobian follows the branch. The Jacobian is extrapolated linearly from the last two. A start
    that leaves the admissible region (or flips the order parameter's sign) is replaced by the last
    point."""
    fi = np.flatnonzero(free)
    a1, z1, J1, p1, aux1 = hist[-1]
    close = len(hist) >= 2 and abs(a - a1) <= 1.5 * abs(a1 - hist[-2][0]) and a1 != hist[-2][0]
    z0 = z1
    if close and len(hist) >= 3 and hist[-3][3] == hist[-2][3] == p1 == p and hist[-3][0] != hist[-2][0]:
        (a3, z3), (a2, z2) = hist[-3][:2], hist[-2][:2]
        zx = (z1 * (a - a2) * (a - a3) / ((a1 - a2) * (a1 - a3)) + z2 * (a - a1) * (a - a3) / (
            (a2 - a1) * (a2 - a3)) + z3 * (a - a1) * (a - a2) / ((a3 - a1) * (a3 - a2)))
    elif J1 is not None and aux1 is not None:
        avg1, vs1 = aux1
        F1 = _outputs(a, avg1[None], z1[0:1], z1[2:3], z1[3:4], np.atleast_1d(vs1), lam, rho, (1,))[0, :4]
        zx = z1.copy()
        try:
            zx[fi] += np.linalg.solve(np.eye(fi.size) - J1, (_constrain(F1, branch, free) - z1)[fi])
        except np.linalg.LinAlgError:
            zx = z1
    else:
        zx = z1
    if np.all(np.isfinite(zx)) and _admissible(zx, rho) and (zx[3] > 0 if branch == "semantic" else zx[1] > 0):
        z0 = zx
    jac = J1
    if close and J1 is not None and hist[-2][2] is not None:
        J2, a2 = hist[-2][2], hist[-2][0]
        jac = J1 + (a - a1) / (a1 - a2) * (J1 - J2)
    return z0, jac


def _jacobian_pass(alpha: float, z: np.ndarray, nodes: np.ndarray, K: int, *, free: np.ndarray, branch: str,
                   kw: dict, prox: np.ndarray, stability: bool, eps: float = 1e-4) -> dict[str, Any]:
    """At the accepted fixed point (proximal problems started from its global minimisers ``prox``):
    forward differences along the free coordinates (the Jacobian of ``F`` and the gradients of the
    train loss and test error, pooled and per scrambling) and, with ``stability``, the central
    difference along the suppressed direction (semantic: ``m``; positional: ``theta``).

    Both on the first points of each scrambling (a nested net; common nodes, so the differences are
    smooth): the Jacobian on ``_JAC_POINTS`` of them (it enters the error estimate through
    ``(I - J)^{-1}`` and the eigenvalue test, where a relative error of a few 1e-3 is immaterial),
    the suppressed derivative, a reported number with its own error, on ``_STAB_POINTS``."""
    fi = np.flatnonzero(free)
    rows, h = _fd_rows(z, fi)
    N = nodes.shape[0] // K
    nodes3, prox3 = nodes.reshape(K, N, 4), prox.reshape(K, N, 2)

    def on_first(Z, n):
        n = min(N, n)
        return _evaluate(alpha, np.array(Z), nodes3[:, :n].reshape(-1, 4), K, kw, prox3[:, :n].reshape(-1, 2),
                         None, restart=False)

    ev = on_first(rows, _JAC_POINTS)
    js = 1 if branch == "semantic" else 3
    out = dict(base=ev["pooled"][0], ev=dict(pooled=ev["pooled"][1:], per=ev["per"][1:]), h=h, js=js,
               eps=eps, n=len(rows), stab=None)
    if stability:
        zs = [z.copy(), z.copy()]
        zs[0][js], zs[1][js] = eps, -eps
        es = on_first(zs, _STAB_POINTS)
        out["stab"] = dict(pooled=es["pooled"][:, js], per=es["per"][:, :, js])
        out["n"] += 2
    return out


# ----------------------------------------------------------------------------------------------
# the public solver: its result, the sweep's state, one point's search, the delta-method error and
# the outcome classification
# ----------------------------------------------------------------------------------------------
_Z95 = 1.959963984540054  # the 0.975 quantile of the standard normal


@dataclass(eq=False)
class StateEvolutionResult(MappingResult):
    """The result of :func:`state_evolution`: (A,) arrays (scalars for a scalar ``alpha``), read as
    attributes or by key like the dict of arrays it replaces (``r.theta`` or ``r["theta"]``,
    ``r.keys()``, ``r.items()``). The fields are described in :func:`state_evolution`'s Returns."""
    q: Any
    m: Any
    V: Any
    theta: Any
    test_error: Any
    train_loss: Any
    q_err: Any
    m_err: Any
    V_err: Any
    theta_err: Any
    test_error_err: Any
    train_loss_err: Any
    outcome: Any
    reason: Any
    log2_points: Any
    n_updates: Any
    suppressed_derivative: Any
    suppressed_derivative_err: Any
    unstable: Any
    unstable_undamped: Any
    jacobian_eigenvalue: Any
    seconds: Any
    alpha: Any
    n_scramblings: Any

    @classmethod
    def empty(cls, alphas: np.ndarray, K: int) -> "StateEvolutionResult":
        """Arrays for ``alphas``, every point not yet solved (NaN values, no outcome).

        Parameters
        ----------
        alphas : numpy.ndarray, shape ``(A,)``
            The sample ratios of the sweep (stored as the ``alpha`` field).
        K : int
            Number of scramblings (stored in every entry of ``n_scramblings``).

        Returns
        -------
        StateEvolutionResult
            ``(A,)`` arrays: NaN overlaps, losses, errors, suppressed derivatives and Jacobian
            eigenvalues; ``outcome`` and ``reason`` object arrays of ``None``; ``log2_points`` and
            ``n_updates`` zero; ``unstable`` and ``unstable_undamped`` False; ``seconds`` zero.
        """
        nA = alphas.size
        nan = {k: np.full(nA, np.nan) for k in OUTPUT_KEYS}
        nan.update({f"{k}_err": np.full(nA, np.nan) for k in OUTPUT_KEYS})
        return cls(**nan, outcome=np.empty(nA, dtype=object), reason=np.empty(nA, dtype=object),
                   log2_points=np.zeros(nA, dtype=int), n_updates=np.zeros(nA, dtype=int),
                   suppressed_derivative=np.full(nA, np.nan), suppressed_derivative_err=np.full(nA, np.nan),
                   unstable=np.zeros(nA, dtype=bool), unstable_undamped=np.zeros(nA, dtype=bool),
                   jacobian_eigenvalue=np.full(nA, np.nan), seconds=np.zeros(nA), alpha=alphas,
                   n_scramblings=np.full(nA, K))


@dataclass(eq=False)
class _Setup:
    """The validated arguments of one :func:`state_evolution` call and what follows from them."""
    model: PhaseModel
    K: int
    pmin: int
    pmax: int
    seed: int
    rtol: float
    continuation: bool
    stability: bool  # compute the suppressed direction's derivative (where a symmetry is imposed)
    max_updates: int
    on_accuracy: str

    @property
    def branch(self) -> str:
        return self.model.branch

    @property
    def rho(self) -> float:
        return self.model.rho

    @cached_property
    def free(self) -> np.ndarray:
        """The overlaps that are solved for (``m`` is held at 0 on a swap-symmetric semantic branch,
        ``theta`` on the positional one)."""
        sem = self.branch == "semantic"
        return np.array([True, not (sem and self.model.swap_symmetric), True, sem])

    @property
    def order_par(self) -> int:
        """Index of the branch's order parameter (semantic: ``theta``; positional: ``m``)."""
        return 3 if self.branch == "semantic" else 1

    @property
    def order_name(self) -> str:
        return "theta" if self.branch == "semantic" else "m"

    @cached_property
    def kw(self) -> dict:
        return dict(omega=self.model.omega, sigma=self.model.sigma, lam=self.model.lam, A=self.model.A)

    @property
    def ftol(self) -> float:
        """Fixed-point residual: 1% of the accuracy target (at most 1e-5)."""
        return min(1e-5, self.rtol * 1e-2)

    @cached_property
    def tq(self) -> float:
        """The t quantile of a 95% interval of a mean over ``K`` scramblings."""
        from scipy.stats import t as student_t
        return float(student_t.ppf(0.975, self.K - 1))


@dataclass(eq=False)
class _Sweep:
    """What a sweep in ``alpha`` carries from one point to the next (continuation)."""
    p_next: int  # number of points (log2, per scrambling) for the next point
    hist: list = field(default_factory=list)  # converged (alpha, z, J, level, (averages, vstar))
    rel_hist: list = field(default_factory=list)  # (level, relative error) of converged points
    jac_prev: np.ndarray | None = None  # the last Jacobian computed
    prox_prev: np.ndarray | None = None  # the last accepted proximal minimisers and their level
    p_prox: int | None = None
    alt_store: tuple | None = None  # (level, minimisers the other default starts reached, alpha index)

    def start(self, a: float, init: dict[str, Any] | None, s: _Setup) -> "_Search":
        """The search at ``alpha = a``: predicted from the sweep's last points (continuation), else
        from ``init`` or the branch's default start, at the smallest number of points."""
        if self.hist and s.continuation:
            z0, jac = _predict(a, self.hist, self.p_next, s.branch, s.free, s.rho, s.model.lam)
            jac = self.jac_prev if jac is None else jac
            p = self.p_next
        else:
            if init is not None:
                z0 = np.array([float(init[k]) for k in ("q", "m", "V", "theta")])
            else:
                z0 = np.array([v[0] for v in initial_point(np.array([a]), s.branch, s.model.sigma)])
            p, jac = s.pmin, None
        if not s.continuation:
            self.alt_store = None
        # verify the global minimisers at the first level at once for a point of a sweep (the
        # neighbour's number of points is expected to suffice), after a first estimate otherwise
        return _Search(p=p, z0=z0, jac=jac, final=bool(self.hist) and s.continuation)

    def record(self, a: float, pt: "_Point", s: _Setup) -> None:
        """After a converged point: remember it for the predictor, and choose the next point's
        number of points (this one's, fewer if the target was met with a wide margin, error about
        ``1 / N``; one more level at once if the error, growing along the sweep as over the last
        two points at this level, would miss the target there)."""
        lv, p, rtol = pt.level, pt.p, s.rtol
        ev = lv.r["ev"]
        self.hist.append((a, pt.mean[:4].copy(), lv.J, p,
                          (ev["avg"][0], ev["vstar"][0]) if ev is not None else None))
        rel = lv.rel
        p_next = max(s.pmin, p - max(0, math.floor(math.log2(rtol / (1.2 * rel))))) if rel > 0 else p
        if self.rel_hist and self.rel_hist[-1][0] == p and rel > 0 and p_next == p < s.pmax:
            grow = min(4.0, max(1.0, rel / self.rel_hist[-1][1]))
            if rel * grow > rtol / 1.2:
                p_next = p + 1
        self.p_next = p_next
        self.rel_hist.append((p, rel))


@dataclass(eq=False)
class _Level:
    """The pooled rule's accepted fixed point at one number of points, with its delta-method error."""
    r: dict  # :func:`_solve_pooled`'s result
    local: bool  # minimisers followed, not yet verified global
    z: np.ndarray
    J: np.ndarray  # Jacobian of the update on the free overlaps
    lam_max: float  # its largest real eigenvalue
    mean: np.ndarray  # (6,): q, m, V, theta, test error, train loss
    err: np.ndarray  # (6,) their quadrature errors
    deriv: tuple | None  # derivative along the suppressed direction and its standard error
    rel: float  # relative error of the test error
    why_unbounded: str = ""  # why ``err`` is infinite where it is (empty: it is finite)


@dataclass(eq=False)
class _Point:
    """One ``alpha``'s answer: the outcome, its sentence, the values and errors, the level reached."""
    outcome: str
    reason: str
    mean: np.ndarray
    err: np.ndarray
    p: int
    n_up: int
    level: _Level | None = None  # the last level with an accepted fixed point (None: none)


@dataclass(eq=False)
class _Search:
    """One ``alpha``'s search over the number of points ``2**p`` per scrambling."""
    p: int
    z0: np.ndarray  # start of the next solve
    jac: np.ndarray | None  # its Jacobian
    final: bool  # the next solve verifies the global minimisers at once
    n_up: int = 0  # map evaluations so far
    prox_cur: np.ndarray | None = None  # this point's proximal minimisers and their level
    p_cur: int | None = None
    rel_prev: tuple | None = None  # (relative error, level) at the last level left for a finer one
    level_hist: list = field(default_factory=list)  # (level, values, errors) of a delicate point
    unsettled: int = 0  # levels at which the iteration did not settle
    recheck: bool = False  # the next solve starts at a point converged with followed minimisers

    def jump(self, rel: float, s: _Setup) -> int:
        """The number of points that should meet the target (the error falls about as ``1 / N``,
        measured ``N^-0.9`` to ``N^-1.1``; the estimate from ``K`` scramblings is noisy, so the
        previous level's enters too)."""
        rp = self.rel_prev
        rel_jump = rel if rp is None else math.sqrt(rel * rp[0] * 2.0 ** (rp[1] - self.p))
        return min(s.pmax, self.p + max(1, math.ceil(math.log2(1.2 * rel_jump / s.rtol))))

    def next_level(self, lv: _Level, p: int, final: bool) -> None:
        """Go on at ``2**p`` points from the level's fixed point and Jacobian."""
        self.rel_prev = (lv.rel, self.p)
        self.p, self.z0, self.jac, self.final = p, lv.z, lv.J, final

    def done(self, outcome: str, reason: str, mean: np.ndarray, err: np.ndarray,
             level: _Level | None = None) -> _Point:
        return _Point(outcome, reason, mean, err, self.p, self.n_up, level)


def _nested(prev: np.ndarray, p_prev: int, p: int, K: int, fill: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-node values (..., K 2**p_prev, 2) carried to the rule of ``2**p`` points per scrambling:
    Sobol nets are nested (the first ``2**p'`` points of a scrambling's ``2**p`` net are its
    ``2**p'`` net); new nodes get ``fill``. Returns the values and, for a finer rule, which nodes
    are known (else None)."""
    lead = prev.shape[:-2]
    pp = prev.reshape(lead + (K, -1, 2))
    N = 2 ** p
    if p_prev >= p:
        return pp[..., :N, :].reshape(lead + (-1, 2)), None
    out = np.full(lead + (K, N, 2), fill)
    out[..., :pp.shape[-2], :] = pp
    known = np.zeros((K, N), dtype=bool)
    known[:, :pp.shape[-2]] = True
    return out.reshape(lead + (-1, 2)), known.reshape(-1)


def _pooled_solve(a: float, i: int, st: _Search, sweep: _Sweep, s: _Setup) -> tuple[np.ndarray, dict, bool]:
    """The pooled rule's fixed point at the search's level: proximal minimisers carried over from
    this point's last level or the sweep's last point, tracked starts from the sweep. Returns the
    nodes, :func:`_solve_pooled`'s result (status "local" reported as "converged") and whether the
    minimisers were only followed."""
    K, p = s.K, st.p
    nodes = _pooled_nodes(p, K, s.seed)
    warm, known = None, None
    src, p_src = (st.prox_cur, st.p_cur) if st.prox_cur is not None else (
        (sweep.prox_prev, sweep.p_prox) if s.continuation else (None, None))
    if src is not None:
        warm, known = _nested(src, p_src, p, K, 0.0)
    alts = None
    if sweep.alt_store is not None:
        alts, _ = _nested(sweep.alt_store[1], sweep.alt_store[0], p, K, np.nan)
    r = _solve_pooled(a, st.z0, nodes, K, free=s.free, branch=s.branch, kw=s.kw, rho=s.rho, ftol=s.ftol,
                      max_updates=s.max_updates, warm=warm, known=known, jac=st.jac,
                      verify_global=st.final or p >= s.pmax, alts=alts, verify_first=st.recheck)
    st.recheck = False
    if r.get("alts") is not None and (s.continuation or sweep.alt_store is None or sweep.alt_store[2] == i):
        sweep.alt_store = (p, r["alts"], i)
    st.n_up += r["n_updates"]
    st.final = False
    local = r["status"] == "local"
    if local:
        r["status"] = "converged"
    return nodes, r, local


def _delta_error(a: float, r: dict, nodes: np.ndarray, local: bool, st: _Search, s: _Setup) -> _Level:
    """The accepted fixed point's quadrature error by the delta method.

    Scrambling ``k``'s residual at the pooled fixed point, propagated through ``(I - J)^{-1}``, is
    its linearised fixed point's offset (the losses move along with it); then one more Newton step
    on each scrambling's own map (its ``N`` points) from there carries the fixed point's
    second-order bias: scrambling ``k``'s fixed point has the bias ``b / N``, the pooled one
    ``b / (K N)``, so ``(mean_k z_k - z) / (K - 1)`` estimates the latter. The standard error over
    ``K`` scramblings is itself a ``K - 1`` degree-of-freedom estimate: scaled by ``t_{K-1} / z``
    (0.975 quantiles), ``+-1.96 err`` is the 95% interval of Student's t."""
    K, free, branch, rho = s.K, s.free, s.branch, s.rho
    fi = np.flatnonzero(free)
    z, ev = r["z"], r["ev"]
    jp = _jacobian_pass(a, z, nodes, K, free=free, branch=branch, kw=s.kw, prox=r["prox"],
                        stability=s.stability and not local)
    st.n_up += jp["n"]
    nf, h = fi.size, jp["h"]
    P0, Pk = ev["pooled"][0], ev["per"][0]  # (6,), (K, 6) at z
    Pj = jp["ev"]["pooled"][:nf]  # (nf, 6) at z + h_j e_j
    D = ((Pj - jp["base"]) / h[:, None]).T  # (6, nf): derivatives of the update and losses
    J = D[fi]  # (nf, nf) Jacobian of F on the free coordinates
    lam_max = float(np.max(np.linalg.eigvals(J).real)) if nf else float("nan")
    mean = np.concatenate([z, P0[4:]])
    vals = np.full((K, 6), np.inf)
    why = ""
    try:
        IJ = np.eye(nf) - J
        dz = np.linalg.solve(IJ, (Pk[:, fi] - z[fi]).T).T  # (K, nf)
        zk = np.repeat(z[None], K, 0)
        zk[:, fi] += dz
        if not all(_admissible(zk_, rho) for zk_ in zk):
            why = "a scrambling's own fixed point (one Newton step from the pooled one) is inadmissible"
        else:
            N = nodes.shape[0] // K
            ek = _evaluate(a, zk, nodes.reshape(K, N, 4), 1, s.kw, r["prox"].reshape(K, N, 2), None,
                           restart=False)["pooled"]  # (K, 6): F_k(z_k), losses at z_k
            st.n_up += 1
            dz2 = np.linalg.solve(IJ, (_constrain(ek[:, :4], branch, free)[:, fi] - zk[:, fi]).T).T
            vals[:, :4] = zk
            vals[:, fi] += dz2
            vals[:, 4:] = ek[:, 4:] + dz2 @ D[4:].T
    except np.linalg.LinAlgError:
        why = "I - J is singular (the delta method has no solution)"
    se_ = vals.std(0, ddof=1) / math.sqrt(K) * (s.tq / _Z95)
    bias = (vals.mean(0) - mean) / (K - 1)
    err = np.sqrt(se_ ** 2 + bias ** 2)
    err[:4][~free] = 0.0
    deriv = None
    if jp["stab"] is not None:
        eps = jp["eps"]
        up, dn = jp["stab"]["pooled"], jp["stab"]["per"]
        dk = (dn[0] - dn[1]) / (2 * eps)
        deriv = ((up[0] - up[1]) / (2 * eps), dk.std(ddof=1) / math.sqrt(K))
    return _Level(r=r, local=local, z=z, J=J, lam_max=lam_max, mean=mean, err=err, deriv=deriv,
                  rel=err[4] / abs(mean[4]), why_unbounded=why if not np.all(np.isfinite(err)) else "")


def _after_local(lv: _Level, st: _Search, s: _Setup) -> None:
    """Minimisers followed from the previous ones, not yet verified global: if the target looks
    met (or nothing else is left), verify at this level; otherwise go up."""
    op = s.order_par
    if (np.all(np.isfinite(lv.err)) and lv.lam_max < 1 and lv.rel > s.rtol and st.p < s.pmax
            and lv.mean[op] - _Z95 * lv.err[op] > 0):
        st.next_level(lv, st.jump(lv.rel, s), final=False)
        return
    st.final = st.recheck = True
    st.z0, st.jac = lv.z, lv.J


def _delicate(lv: _Level, st: _Search, s: _Setup) -> _Point | np.ndarray | None:
    """A point whose order parameter carries a relative error above ``_DELICATE`` (near a branch's
    end the fixed point of a coarse rule can sit many of its linearised errors away from a finer
    rule's): solved at two levels, it must not move between them by more than their errors, and
    carries the move in its error. Returns the errors with the move added (accepted), None (go on
    at a finer rule; the search is updated) or the undecided point."""
    p, op, mean, err = st.p, s.order_par, lv.mean, lv.err
    other = next((h for h in reversed(st.level_hist) if h[0] != p), None)
    st.level_hist.append((p, mean.copy(), err.copy()))
    moved, err_eff = math.inf, err
    if other is not None:
        shift = np.abs(mean - other[1])
        moved = max(shift[j_] / math.sqrt(err[j_] ** 2 + other[2][j_] ** 2) for j_ in (op, 4))
        err_eff = np.sqrt(err ** 2 + shift ** 2)
    coarse = err_eff[op] > _ORDER_RTOL * abs(mean[op])
    if not (moved > _LEVEL_NSIG or coarse or err_eff[4] > s.rtol * abs(mean[4])):
        return err_eff
    if p < s.pmax:
        st.next_level(lv, p + 1, final=True)
        return None
    name = s.order_name
    reason = (
        f"{name} carries a relative error above {_DELICATE} and no finer rule is allowed "
        f"(max_log2_points = {s.pmax}) to check it against" if other is None else
        f"the fixed point moves with the rule by {moved:.1f} combined errors between 2^{other[0]} "
        f"and 2^{p} points per scrambling (near the branch's end the linearised error does not "
        f"hold)" if moved > _LEVEL_NSIG else
        f"{name} = {mean[op]:.2e} +- {err_eff[op]:.1e} (with its move from 2^{other[0]} "
        f"to 2^{p} points per scrambling): a relative error above {_ORDER_RTOL}" if coarse else
        f"the test error moves from 2^{other[0]} to 2^{p} points per scrambling by more than rtol")
    return st.done(Outcome.UNDECIDED, reason, mean, np.full(6, np.nan), lv)


def _classify(a: float, lv: _Level, st: _Search, s: _Setup) -> _Point | None:
    """The outcome of a verified fixed point (:class:`Outcome`), or None after choosing a finer
    rule (the search is updated). Raises :class:`AccuracyNotReached` where ``on_accuracy`` says so."""
    K, p, op, mean, err, rel = s.K, st.p, s.order_par, lv.mean, lv.err, lv.rel
    if not np.all(np.isfinite(err)) and lv.lam_max < 1:
        return st.done(Outcome.UNDECIDED, (
            f"fixed point of the pooled rule ({K} scramblings of 2^{p}) whose quadrature error "
            f"cannot be estimated: {lv.why_unbounded or 'a non-finite error'} (Jacobian eigenvalue "
            f"{lv.lam_max:.3f} < 1)"), mean, np.full(6, np.nan), lv)
    if not np.all(np.isfinite(err)) or lv.lam_max >= 1:
        return st.done(Outcome.UNDECIDED, (
            f"fixed point of the pooled rule ({K} scramblings of 2^{p}) with a Jacobian eigenvalue "
            f"{lv.lam_max:.3f} >= 1 along the free overlaps: it repels the damped iteration, and its "
            f"quadrature error is unbounded"), mean, np.full(6, np.nan), lv)
    if mean[op] - _Z95 * err[op] <= 0:
        return st.done(Outcome.UNDECIDED, (
            f"{s.order_name} is zero within its quadrature error "
            f"({mean[op]:.2e} +- {err[op]:.1e}, {K} scramblings of 2^{p})"), mean, err, lv)
    if rel <= s.rtol and err[op] > _DELICATE * abs(mean[op]):
        got = _delicate(lv, st, s)
        if not isinstance(got, np.ndarray):
            return got
        err = got
    if rel <= s.rtol:
        return st.done(Outcome.CONVERGED, (
            f"test error to {rel:.1e} relative (standard error over {K} scramblings of 2^{p} points "
            f"of the pooled rule's fixed point, delta method; Jacobian eigenvalue {lv.lam_max:.3f})"),
            mean, err, lv)
    if p >= s.pmax:
        msg = (f"state evolution ({s.branch}, alpha={a:.4g}, omega={s.model.omega}): fixed point found with "
               f"the pooled rule of {K} scramblings of 2^{p} points but the test error's quadrature "
               f"error {rel:.1e} (relative) exceeds rtol={s.rtol}; raise max_log2_points (now {s.pmax}) "
               f"or rtol")
        if s.on_accuracy == "raise":
            raise AccuracyNotReached(msg)
        return st.done(Outcome.UNDECIDED, msg, mean, err, lv)
    # the finer rule is expected to meet the target: verify there at once
    st.next_level(lv, st.jump(rel, s), final=True)
    return None


def _solve_point(a: float, i: int, init: dict[str, Any] | None, sweep: _Sweep, s: _Setup) -> _Point:
    """One ``alpha`` (index ``i`` of the sweep): the pooled rule's fixed point at rising numbers of
    points until the outcome is decided."""
    st = sweep.start(a, init, s)
    nan6 = np.full(6, np.nan)
    while True:
        nodes, r, local = _pooled_solve(a, i, st, sweep, s)
        if r["status"] == "left_branch":
            return st.done(Outcome.NO_FIXED_POINT, (
                f"the iteration leaves the {s.branch} branch ({s.order_name} flows to 0) with the pooled "
                f"rule of {s.K} scramblings of 2^{st.p} points"), nan6, nan6)
        if r["status"] != "converged":
            # a rule twice as fine may settle (smaller jumps from switching minimisers); after two
            # levels that do not, the point is undecided (near a branch's end), with its last iterate
            st.unsettled += 1
            if st.p < s.pmax and st.unsettled < 2:
                st.p += 1
                continue
            mean = nan6
            if r["ev"] is not None and _admissible(r["z"], s.rho):
                mean = np.concatenate([r["z"], r["ev"]["pooled"][0, 4:]])
            return st.done(Outcome.UNDECIDED, (
                f"the iteration does not settle with the pooled rule of {s.K} scramblings of 2^{st.p} "
                f"points"), mean, np.full(6, np.nan))
        st.prox_cur, st.p_cur = r["prox"], st.p
        if s.continuation:
            sweep.prox_prev, sweep.p_prox = r["prox"], st.p
        lv = _delta_error(a, r, nodes, local, st, s)
        sweep.jac_prev = lv.J
        if local:
            _after_local(lv, st, s)
            continue
        pt = _classify(a, lv, st, s)
        if pt is not None:
            return pt


def _store(out: StateEvolutionResult, i: int, pt: _Point) -> None:
    """Write one point's answer into the result's arrays."""
    for k, key in enumerate(OUTPUT_KEYS):
        out[key][i] = pt.mean[k]
        out[f"{key}_err"][i] = pt.err[k]
    out.outcome[i], out.reason[i] = pt.outcome, pt.reason
    out.log2_points[i] = pt.p
    if pt.level is not None:
        out.jacobian_eigenvalue[i] = pt.level.lam_max
    if pt.outcome == Outcome.CONVERGED and pt.level.deriv is not None:
        deriv = pt.level.deriv
        out.suppressed_derivative[i], out.suppressed_derivative_err[i] = deriv
        out.unstable[i] = deriv[0] > 1
        out.unstable_undamped[i] = abs(deriv[0]) > 1
    out.n_updates[i] = pt.n_up


def state_evolution(alpha: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                    A: Any = DEFAULT_A, branch: str = "semantic", rtol: float = 1e-3,
                    n_scramblings: int = 12, min_log2_points: int = 10, max_log2_points: int = 16,
                    seed: int = 0, init: dict[str, Any] | None = None, continuation: bool = True,
                    stability: bool = True, max_updates: int = 300,
                    on_accuracy: str = "raise") -> StateEvolutionResult:
    """Fixed points of the state evolution with an estimate of their quadrature error.

    Parameters
    ----------
    alpha : positive number or 1-D sequence (a sweep; solved by continuation from the largest
        ``alpha`` down, results returned in the input order).
    omega, sigma, lam, A : the model (positional share, token noise, ridge, positional matrix).
    branch : ``"semantic"`` (``theta > 0``; ``m = 0`` imposed for a swap-symmetric ``A``) or
        ``"positional"`` (``m > 0``, ``theta = 0`` imposed).
    rtol : accuracy target: quadrature error of the test error (standard error over the scramblings
        of the pooled rule's fixed point, delta method) at most ``rtol`` times the test error
        (1e-5 to 0.1).
    n_scramblings : number ``K`` of independent scramblings (3 to 32); the cost depends on the total
        ``K 2**p`` points, and the error estimate is steadier with more scramblings.
    min_log2_points, max_log2_points : range of the number of points per scrambling, ``2**p``
        (6 to 18); raised from the minimum (or the neighbour's) until the target is met.
    seed : selects the family of scramblings (independent families for different seeds).
    init : optional dict of initial ``q, m, V, theta`` (scalars) for the first point solved.
    continuation : start each point from the previous points' fixed points (linear extrapolation),
        Jacobian, proximal minimisers and number of points.
    stability : compute the derivative along the suppressed direction (two extra updates at the
        final rule).
    max_updates : cap on the updates (map evaluations) of one fixed-point solve.
    on_accuracy : ``"raise"`` (default: :class:`AccuracyNotReached` when a converged point misses
        the target at ``max_log2_points``) or ``"undecided"`` (report such a point as undecided).

    Returns
    -------
    StateEvolutionResult
        (A,) arrays (scalars for scalar ``alpha``), read by attribute or by key like a dict: for
        ``k`` in ``q, m, V, theta, test_error, train_loss`` the pooled rule's value ``k`` and its
        quadrature error ``k_err`` (NaN unless converged or undecided with theta (m) zero within its
        error; an undecided point whose iteration does not settle has its last iterate's values and
        NaN errors; NaN for no fixed point); ``outcome`` (one of :class:`Outcome`), ``reason`` (a
        sentence), ``log2_points`` (per scrambling), ``n_scramblings``, ``n_updates`` (map
        evaluations, each over all ``K 2**p`` points), ``suppressed_derivative`` (``dF_m/dm`` or
        ``dF_theta/dtheta`` of the pooled rule; NaN if not computed), ``suppressed_derivative_err``,
        ``unstable`` (bool: the derivative exceeds +1, so the fixed point repels along the
        suppressed direction under the update with any damping), ``unstable_undamped`` (bool: its
        magnitude exceeds 1, so the undamped update is unstable there; a derivative below -1 is an
        oscillation that damping removes), ``jacobian_eigenvalue`` (the largest real part of the
        eigenvalues of the update's Jacobian along the free overlaps: the amplification
        ``1 / (1 - lambda)`` of quadrature errors), ``seconds`` (wall time per point), ``alpha``.

    Raises
    ------
    ValueError for bad arguments (named); AccuracyNotReached (see ``on_accuracy``).
    """
    alphas, scalar = check_alphas(alpha)
    model = check_model(omega=omega, sigma=sigma, lam=lam, A=A, branch=branch)
    rtol = check_real("rtol", rtol, low=1e-5, high=0.1)
    K = check_int("n_scramblings", n_scramblings, minimum=3, maximum=32)
    pmin = check_int("min_log2_points", min_log2_points, minimum=6, maximum=18)
    pmax = check_int("max_log2_points", max_log2_points, minimum=pmin + 1, maximum=18)
    seed = check_int("seed", seed, minimum=0)
    max_updates = check_int("max_updates", max_updates, minimum=5, maximum=100_000)
    on_accuracy = check_choice("on_accuracy", on_accuracy, ("raise", "undecided"))
    s = _Setup(model=model, K=K, pmin=pmin, pmax=pmax, seed=seed, rtol=rtol, continuation=continuation,
               stability=stability and (model.branch == "positional" or model.swap_symmetric),
               max_updates=max_updates, on_accuracy=on_accuracy)
    out = StateEvolutionResult.empty(alphas, K)
    sweep = _Sweep(p_next=pmin)
    for i in np.argsort(-alphas, kind="stable"):
        t0 = time.perf_counter()
        a = float(alphas[i])
        pt = _solve_point(a, i, init, sweep, s)
        _store(out, i, pt)
        if pt.outcome == Outcome.CONVERGED:
            sweep.record(a, pt, s)
        out.seconds[i] = time.perf_counter() - t0
    return out.first() if scalar else out


def estimate(result: Mapping[str, Any], key: str, index: int | None = None):
    """One output of :func:`state_evolution` as a :class:`stumplib.core.stats.Estimate`.

    Parameters
    ----------
    result : a :class:`StateEvolutionResult` (or a mapping with the same keys).
    key : one of :data:`OUTPUT_KEYS`.
    index : entry of an array result (None for a scalar result).

    Returns
    -------
    Estimate
        Kind ``"quadrature"``: the value +- its quadrature error.
    """
    from stumplib.core.stats import Estimate
    if key not in OUTPUT_KEYS:
        raise ValueError(f"key must be one of {OUTPUT_KEYS}; got {key!r}")
    v, e = result[key], result[f"{key}_err"]
    if index is not None:
        v, e = v[index], e[index]
    return Estimate.with_error(float(v), float(e), kind="quadrature")
