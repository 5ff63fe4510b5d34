"""The pooled rule's fixed point ``z = F(z)`` of the state evolution, by a quasi-Newton method.

:func:`solve_pooled` iterates on the free overlaps (``m`` is held at 0 on a swap-symmetric
semantic branch, ``theta`` on the positional one: :func:`constrain`) in scaled variables:
Anderson acceleration of the undamped update far from the fixed point (scaled residual above
0.05), Newton steps near it with a finite-difference Jacobian (common nodes, proximal problems
followed from their current minimisers, so the map is smooth), updated by Broyden's rank-one
formula, or the neighbour's Jacobian in a sweep. A point is accepted only after an update whose
proximal problems were searched for their global minimisers from several starts meets the
tolerance; iteration resumes if that update differs (after a small difference, one Newton step
and the global update again).

Along a sweep in ``alpha`` the start comes from :func:`predict_start` (the quadratic through the
last three fixed points when they share the rule, else an Euler-Newton predictor from the last
one). At the accepted point :func:`jacobian_pass` takes the finite differences that the
delta-method error (:mod:`.solver_search`) and the stability of the imposed symmetry need, on the
first points of each scrambling (a nested net: :mod:`.solver_qmc`).

The pooled solve (:func:`solve_pooled`): the Jacobian of ``F`` on the free coordinates comes from
the neighbouring point or from finite differences (common nodes, proximal problems followed from
their current minimisers, so the map is smooth) and is updated by Broyden's rank-one formula. The
proximal problems are followed from the previous update's minimisers; when the residual is below
the tolerance the update is repeated at the same point with the full multi-start search, and the
point is accepted only if that global update also meets the tolerance (without verification, the
point is returned with status "local": the minimisers followed, not verified to be global).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stumplib.phase.solver_qmc import pooled_update, update_from_averages

_FLOOR = np.array([1e-4, 1e-3, 1e-2, 1e-4])  # scales of q, m, V, theta for relative changes
_NEWTON_ZONE = 0.05  # scaled residual below which quasi-Newton steps are taken
_JAC_POINTS = 2 ** 11  # points per scrambling for the Jacobian and loss gradients at the point
_STAB_POINTS = 2 ** 12  # points per scrambling for the derivative along the suppressed direction
_FD_STEP = 1e-4  # relative finite-difference step for the Jacobian (common nodes, warm minimisers)


def admissible(z: np.ndarray, rho: float) -> bool:
    """Whether overlaps are admissible: finite, ``q > 0``, ``V > 0`` and ``theta**2 < rho q``.

    Parameters
    ----------
    z : numpy.ndarray, shape ``(4,)``
        The overlaps ``(q, m, V, theta)``.
    rho : float
        ``sigma**2``.

    Returns
    -------
    bool
    """
    q, m, V, th = z
    return bool(np.all(np.isfinite(z)) and q > 0 and V > 0 and th * th < rho * q * (1 - 1e-9))


def constrain(z: np.ndarray, branch: str, free: np.ndarray) -> np.ndarray:
    """Overlaps with the imposed symmetry: ``theta = 0`` on the positional branch, ``m = 0`` on the
    semantic one where ``m`` is not free.

    Parameters
    ----------
    z : numpy.ndarray, shape ``(..., 4)``
        Overlaps ``(q, m, V, theta)``.
    branch : str
        ``"semantic"`` or ``"positional"``.
    free : numpy.ndarray of bool, shape ``(4,)``
        The overlaps that are solved for.

    Returns
    -------
    numpy.ndarray, shape ``(..., 4)``
        A copy of ``z`` with the imposed overlap set to 0.
    """
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


def _on_branch(new: np.ndarray, z: np.ndarray, branch: str, rho: float, *,
               keep: float = 0.0) -> bool:
    """Admissible, with the branch's order parameter above ``keep`` times its value at ``z``."""
    j = 3 if branch == "semantic" else 1
    return admissible(new, rho) and new[j] > keep * z[j]


@dataclass(eq=False)
class _QuasiNewton:
    """The iteration state of :func:`solve_pooled` on the scaled free coordinates."""
    JG: np.ndarray | None  # Jacobian of F - z (scaled), None: take fixed-point steps
    want_fd: bool = False  # take finite differences at the next update
    prev: tuple | None = None  # (scaled step, residual) of the last step, for Broyden's update
    res_prev: float = math.inf
    hx: list = field(default_factory=list)  # Anderson history: iterates and residuals
    hf: list = field(default_factory=list)

    def anderson(self, z: np.ndarray, F: np.ndarray, g: np.ndarray, free: np.ndarray,
                 scale: np.ndarray, branch: str, rho: float) -> np.ndarray | None:
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
                if (np.all(np.isfinite(cand))
                        and np.max(np.abs(cand - xs)) > 1e-3 * np.max(np.abs(fs))):
                    stp = cand
                else:
                    self.hx.clear(); self.hf.clear()
            except np.linalg.LinAlgError:
                self.hx.clear(); self.hf.clear()
        new = z.copy(); new[fi] = stp * scale
        new = constrain(new, branch, free)
        if not _on_branch(new, z, branch, rho):
            self.hx.clear(); self.hf.clear()
            new = z + 0.5 * (F - z)
        if not admissible(new, rho):
            new = z + 0.5 * (F - z)
            if not admissible(new, rho):
                return None
        return new

    def newton(self, z: np.ndarray, F: np.ndarray, g: np.ndarray, fi: np.ndarray,
               scale: np.ndarray, branch: str, rho: float) -> tuple[np.ndarray | None, np.ndarray]:
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
        return (new if admissible(new, rho) else None), step

    def learn(self, ev: dict, F: np.ndarray, g: np.ndarray, h: np.ndarray | None,
              free: np.ndarray, scale: np.ndarray, branch: str, verify: bool) -> None:
        """Update the model from an evaluation: the finite-difference Jacobian from its rows
        ``z + h_j e_j`` (with ``h``), else Broyden's rank-one update from the last step (not across
        a global update)."""
        fi = np.flatnonzero(free)
        if h is not None:
            # (nf, nf): row j = F(z + h_j e_j)
            Fj = constrain(ev["pooled"][1:, :4], branch, free)[:, fi]
            self.JG = (((Fj - F[fi]) / h[:, None]).T * scale[None, :] / scale[:, None]
                       - np.eye(fi.size))
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
        return constrain(new, branch, free)


def _first_minimisers(alpha: float, z: np.ndarray, nodes: np.ndarray, K: int, kw: dict
                      ) -> tuple[np.ndarray, np.ndarray | None, None, int]:
    """A full multi-start update at ``z``: ``(warm, alts, known, n_updates)`` for
    :func:`solve_pooled` to follow from (``known`` is reset, one update spent)."""
    e0 = pooled_update(alpha, z[None], nodes, K, kw, None, None, restart=True)
    return e0["prox"][0], e0["alts"], None, 1


def solve_pooled(alpha: float, z0: np.ndarray, nodes: np.ndarray, K: int, *, free: np.ndarray,
                 branch: str, kw: dict, rho: float, ftol: float, max_updates: int,
                 warm: np.ndarray | None, known: np.ndarray | None, jac: np.ndarray | None,
                 max_checks: int = 6, verify_global: bool = True, alts: np.ndarray | None = None,
                 verify_first: bool = False) -> dict[str, Any]:
    """Fixed point ``z = F(z)`` of the pooled rule by a quasi-Newton method on the free coordinates
    (the method: this module's docstring, "The pooled solve").

    Parameters
    ----------
    alpha : float
        The sample ratio.
    z0 : numpy.ndarray, shape ``(4,)``
        The start ``(q, m, V, theta)``.
    nodes, K : numpy.ndarray, shape ``(K N, 4)``; int
        The pooled rule (:func:`.solver_qmc.pooled_nodes`) and its number of scramblings.
    free : numpy.ndarray of bool, shape ``(4,)``
        The overlaps solved for.
    branch, kw, rho : str; dict; float
        ``"semantic"`` or ``"positional"``; the model (``omega``, ``sigma``, ``lam``, ``A``);
        ``sigma**2``.
    ftol, max_updates : float; int
        Tolerance on the scaled residual; cap on the map evaluations (rows evaluated).
    warm, known : numpy.ndarray, shapes ``(K N, 2)`` and ``(K N,)`` of bool, or None
        Proximal minimisers to follow (None: found by a full multi-start update first), and the
        nodes where ``warm`` holds one (None: all).
    jac : numpy.ndarray, shape ``(free, free)``, or None
        A Jacobian of ``F`` on the free overlaps to start from (None: fixed-point steps, then
        finite differences).
    max_checks, verify_global, verify_first : int; bool; bool
        Most global (multi-start) verifications; verify the global minimisers before accepting
        (else status ``"local"``); ``z0`` was already solved with followed minimisers (verify at
        once).
    alts : numpy.ndarray, shape ``(4, K N, 2)``, optional
        The tracked starts' minimisers (:func:`.solver_qmc.pooled_update`).

    Returns
    -------
    dict
        ``status`` in {"converged", "local", "left_branch", "not_settled"}, ``z`` (4,), ``ev``
        (the last update, rows ``[z, ...]``), ``prox`` (K N, 2), ``n_updates`` (rows evaluated),
        ``jac`` (free x free, or None), ``alts`` (the tracked starts' minimisers; None unless
        converged).
    """
    fi = np.flatnonzero(free)
    nf = fi.size
    z = constrain(np.asarray(z0, dtype=np.float64), branch, free)
    scale = np.maximum(np.abs(z), _FLOOR)[fi]
    n_up = 0
    if warm is None:  # no minimisers to follow: a full multi-start update finds them
        warm, alts, known, n_up = _first_minimisers(alpha, z, nodes, K, kw)
    verify = bool(verify_first and warm is not None)  # z0 already solved with followed minimisers
    checks = int(verify)
    qn = _QuasiNewton(None if jac is None else jac / scale[:, None] * scale[None, :] - np.eye(nf))
    ev = None

    def result(status: str, with_jac: bool = False) -> dict[str, Any]:
        J = ((qn.JG + np.eye(nf)) * scale[:, None] / scale[None, :]
             if with_jac and qn.JG is not None else None)
        return dict(status=status, z=z, ev=ev, prox=warm, n_updates=n_up, jac=J,
                    alts=alts if status == "converged" else None)

    while n_up < max_updates:
        rows, h = [z], None
        if qn.JG is None and qn.want_fd and not verify:
            rows, h = _fd_rows(z, fi)
        ev = pooled_update(alpha, np.array(rows), nodes, K, kw, warm, known, restart=verify,
                           alts=alts)
        if ev["alts"] is not None:
            alts = ev["alts"]
        n_up += len(rows)
        warm, known = ev["prox"][0], None
        F = constrain(ev["pooled"][0, :4], branch, free)
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
            # a small jump at the global update (a few proximal problems switched basins): the
            # Newton step from it lands within the tolerance, so the next update is the global one
            # at once
            checks += 1
            verify = True
        if n_up % 40 < len(rows) and n_up > 40:
            # slow progress: refresh the Jacobian by finite differences
            qn.JG, qn.want_fd = None, True
    return result("not_settled")


def predict_start(a: float, hist: list, p: int, branch: str, free: np.ndarray, rho: float,
                  lam: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Starting overlaps and Jacobian at ``alpha = a`` from a sweep's converged points.

    Quadratic extrapolation through the last three when they share the rule ``p`` (their quadrature
    errors are then smooth in alpha; across rules they differ, and extrapolation would amplify the
    difference); otherwise an Euler-Newton predictor from the last point alone: the integrands do
    not depend on alpha, so the update at ``a`` from its averages is free, and one Newton step with
    its Jacobian follows the branch. The Jacobian is extrapolated linearly from the last two. A
    start that leaves the admissible region (or flips the order parameter's sign) is replaced by the
    last point.

    Parameters
    ----------
    a : float
        The sample ratio of the next point.
    hist : list
        The sweep's converged points ``(alpha, z, J, level, (averages, vstar))``.
    p : int
        The next point's level (base-2 logarithm of the points per scrambling).
    branch : str
        ``"semantic"`` or ``"positional"``.
    free : numpy.ndarray of bool, shape ``(4,)``
        The overlaps solved for.
    rho : float
        ``sigma**2``.
    lam : float
        The ridge.

    Returns
    -------
    z0 : numpy.ndarray, shape ``(4,)``
        The start.
    jac : numpy.ndarray, shape ``(free, free)``, or None
        The Jacobian to start from.
    """
    fi = np.flatnonzero(free)
    a1, z1, J1, p1, aux1 = hist[-1]
    close = len(hist) >= 2 and abs(a - a1) <= 1.5 * abs(a1 - hist[-2][0]) and a1 != hist[-2][0]
    z0 = z1
    if (close and len(hist) >= 3 and hist[-3][3] == hist[-2][3] == p1 == p
            and hist[-3][0] != hist[-2][0]):
        (a3, z3), (a2, z2) = hist[-3][:2], hist[-2][:2]
        zx = (z1 * (a - a2) * (a - a3) / ((a1 - a2) * (a1 - a3)) + z2 * (a - a1) * (a - a3) / (
            (a2 - a1) * (a2 - a3)) + z3 * (a - a1) * (a - a2) / ((a3 - a1) * (a3 - a2)))
    elif J1 is not None and aux1 is not None:
        avg1, vs1 = aux1
        F1 = update_from_averages(a, avg1[None], z1[0:1], z1[2:3], z1[3:4], np.atleast_1d(vs1),
                                  lam, rho, (1,))[0, :4]
        zx = z1.copy()
        try:
            zx[fi] += np.linalg.solve(np.eye(fi.size) - J1, (constrain(F1, branch, free) - z1)[fi])
        except np.linalg.LinAlgError:
            zx = z1
    else:
        zx = z1
    if (np.all(np.isfinite(zx)) and admissible(zx, rho)
            and (zx[3] > 0 if branch == "semantic" else zx[1] > 0)):
        z0 = zx
    jac = J1
    if close and J1 is not None and hist[-2][2] is not None:
        J2, a2 = hist[-2][2], hist[-2][0]
        jac = J1 + (a - a1) / (a1 - a2) * (J1 - J2)
    return z0, jac


def jacobian_pass(alpha: float, z: np.ndarray, nodes: np.ndarray, K: int, *, free: np.ndarray,
                  branch: str, kw: dict, prox: np.ndarray, stability: bool, eps: float = 1e-4
                  ) -> dict[str, Any]:
    """Finite differences at the accepted fixed point, proximal problems started from its global
    minimisers ``prox``.

    Forward differences along the free coordinates (the Jacobian of ``F`` and the gradients of the
    train loss and test error, pooled and per scrambling) and, with ``stability``, the central
    difference along the suppressed direction (semantic: ``m``; positional: ``theta``). Both on the
    first points of each scrambling (a nested net; common nodes, so the differences are smooth):
    the Jacobian on ``2**11`` of them (it enters the error estimate through ``(I - J)^{-1}`` and
    the eigenvalue test, where a relative error of a few 1e-3 is immaterial), the suppressed
    derivative, a reported number with its own error, on ``2**12``.

    Parameters
    ----------
    alpha : float
        The sample ratio.
    z : numpy.ndarray, shape ``(4,)``
        The fixed point.
    nodes : numpy.ndarray, shape ``(K N, 4)``
        The pooled rule.
    K : int
        Number of scramblings.
    free : numpy.ndarray of bool, shape ``(4,)``
        The overlaps solved for.
    branch : str
        ``"semantic"`` or ``"positional"``.
    kw : dict
        The model: ``omega``, ``sigma``, ``lam``, ``A``.
    prox : numpy.ndarray, shape ``(K N, 2)``
        The fixed point's global proximal minimisers.
    stability : bool
        Also differentiate along the suppressed direction.
    eps : float
        The central difference's step along the suppressed direction.

    Returns
    -------
    dict
        ``base`` (6,): the update and losses at ``z`` on the first points; ``ev``: ``pooled``
        (nf, 6) and ``per`` (nf, K, 6) at ``z + h_j e_j``; ``h`` (nf,) the steps; ``js`` the
        suppressed coordinate; ``eps``; ``n`` the rows evaluated; ``stab``: None or ``pooled`` (2,)
        and ``per`` (2, K) of the suppressed coordinate's update at ``+eps`` and ``-eps``.
    """
    fi = np.flatnonzero(free)
    rows, h = _fd_rows(z, fi)
    N = nodes.shape[0] // K
    nodes3, prox3 = nodes.reshape(K, N, 4), prox.reshape(K, N, 2)

    def on_first(Z, n):
        n = min(N, n)
        return pooled_update(alpha, np.array(Z), nodes3[:, :n].reshape(-1, 4), K, kw,
                             prox3[:, :n].reshape(-1, 2), None, restart=False)

    ev = on_first(rows, _JAC_POINTS)
    js = 1 if branch == "semantic" else 3
    out = dict(base=ev["pooled"][0], ev=dict(pooled=ev["pooled"][1:], per=ev["per"][1:]), h=h,
               js=js, eps=eps, n=len(rows), stab=None)
    if stability:
        zs = [z.copy(), z.copy()]
        zs[0][js], zs[1][js] = eps, -eps
        es = on_first(zs, _STAB_POINTS)
        out["stab"] = dict(pooled=es["pooled"][:, js], per=es["per"][:, :, js])
        out["n"] += 2
    return out
