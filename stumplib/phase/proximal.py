"""The two-dimensional proximal problem behind the conjugate updates of the state evolution.

One job: ``argmin_x |x - center|^2 / (2 V) + sigma^2 sum_l (s_l(x) - t_l)^2`` for many problems at once.
The problem is not convex: it is solved by a safeguarded Newton method (Hessian shifted to be
positive definite, backtracking line search) from several starts, keeping the lowest value;
:func:`proximal_bfgs` is a slow scipy reference used by the tests.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy.special import expit

from stumplib.core.validation import check_real
from stumplib.phase.parallel import PARALLEL_MIN, num_threads, run_parallel

# ----------------------------------------------------------------------------------------------
# the two-dimensional proximal problem
# ----------------------------------------------------------------------------------------------
def prox_objective_and_derivatives(x: np.ndarray, center: np.ndarray, t: np.ndarray,
                                   V: np.ndarray, sigma: float, order: int = 2):
    """``G(x) = |x - center|^2 / (2 V) + sigma^2 sum_l (s_l(x) - t_l)^2`` and its derivatives.

    ``G`` is half the objective written in the paper's notes (same minimiser).

    Parameters
    ----------
    x : numpy.ndarray, shape ``(..., 2)``
        Points at which ``G`` is evaluated (student pre-activations of the two tokens).
    center : numpy.ndarray, shape ``(..., 2)``
        Centres of the quadratic term (broadcast with ``x``).
    t : numpy.ndarray, shape ``(..., 2)``
        Targets ``t_l`` in [0, 1]: the teacher attention's first-column entries (row ``l``'s weight
        on token 1), compared with the student's ``s_l(x) = sigmoid(x_l (x_1 - x_2))``.
    V : numpy.ndarray, shape ``(...)``
        Variances of the quadratic term (> 0; not checked here).
    sigma : float
        Standard deviation of the token noise entries; the loss term is weighted by ``sigma^2``.
    order : int, optional
        0 (value), 1 (value, gradient) or 2 (value, gradient, Hessian; default).

    Returns
    -------
    G : numpy.ndarray, shape ``(...)``
        The value (alone for ``order=0``).
    grad : numpy.ndarray, shape ``(..., 2)``
        The gradient in ``x`` (for ``order >= 1``).
    hess : numpy.ndarray, shape ``(..., 2, 2)``
        The Hessian in ``x`` (for ``order=2``).
    """
    x1, x2 = x[..., 0], x[..., 1]
    d = x1 - x2
    a1 = x1 * d
    a2 = x2 * d
    s1, s2 = expit(a1), expit(a2)
    e1, e2 = s1 - t[..., 0], s2 - t[..., 1]
    r1, r2 = x1 - center[..., 0], x2 - center[..., 1]
    s2_ = sigma * sigma
    G = (r1 * r1 + r2 * r2) / (2.0 * V) + s2_ * (e1 * e1 + e2 * e2)
    if order == 0:
        return G
    # da1 = (2 x1 - x2, -x1), da2 = (x2, x1 - 2 x2)
    g11, g12 = 2 * x1 - x2, -x1
    g21, g22 = x2, x1 - 2 * x2
    sp1, sp2 = s1 * (1 - s1), s2 * (1 - s2)
    c1, c2 = 2 * s2_ * e1 * sp1, 2 * s2_ * e2 * sp2
    grad = np.stack([r1 / V + c1 * g11 + c2 * g21, r2 / V + c1 * g12 + c2 * g22], axis=-1)
    if order == 1:
        return G, grad
    # second derivatives: 2 sigma^2 [ (s'^2 + e s'') da da^T + e s' Hess(a) ]
    spp1, spp2 = sp1 * (1 - 2 * s1), sp2 * (1 - 2 * s2)
    k1 = 2 * s2_ * (sp1 * sp1 + e1 * spp1)
    k2 = 2 * s2_ * (sp2 * sp2 + e2 * spp2)
    # Hess a1 = [[2, -1], [-1, 0]], Hess a2 = [[0, 1], [1, -2]]
    iv = 1.0 / V
    h11 = iv + k1 * g11 * g11 + k2 * g21 * g21 + 2 * c1
    h12 = k1 * g11 * g12 + k2 * g21 * g22 - c1 + c2
    h22 = iv + k1 * g12 * g12 + k2 * g22 * g22 - 2 * c2
    hess = np.stack([np.stack([h11, h12], -1), np.stack([h12, h22], -1)], -2)
    return G, grad, hess


def _prox_terms(x1, x2, c1, c2, t1, t2, iv, s2_):
    """Value, gradient and the Hessian's pieces of ``G`` on flat arrays (see
    :func:`prox_objective_and_derivatives`, the same formulas without stacking)."""
    d = x1 - x2
    s1, s2 = expit(x1 * d), expit(x2 * d)
    e1, e2 = s1 - t1, s2 - t2
    r1, r2 = x1 - c1, x2 - c2
    G = 0.5 * (r1 * r1 + r2 * r2) * iv + s2_ * (e1 * e1 + e2 * e2)
    g11, g22 = 2 * x1 - x2, x1 - 2 * x2  # da1 = (g11, -x1), da2 = (x2, g22)
    sp1, sp2 = s1 * (1 - s1), s2 * (1 - s2)
    k1c, k2c = 2 * s2_ * e1 * sp1, 2 * s2_ * e2 * sp2
    gx = r1 * iv + k1c * g11 + k2c * x2
    gy = r2 * iv - k1c * x1 + k2c * g22
    return G, gx, gy, s1, s2, e1, e2, sp1, sp2, k1c, k2c, g11, g22


def _newton(x: np.ndarray, center: np.ndarray, t: np.ndarray, V: np.ndarray, sigma: float,
            tol: float, max_iter: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Safeguarded Newton from ``x`` (batched, flattened internally; converged problems are dropped
    from the working set). Returns ``(x, G, |grad|)`` with the broadcast shape of the inputs.

    Per problem: stop when ``|grad G| <= tol (1 + 1/V)``; Hessian shifted to have its smallest
    eigenvalue at least ``1/(20 V)``; Armijo backtracking (at most 30 halvings; a step that still
    fails is at the rounding floor of ``G`` and the problem stops); near a minimum with a positive
    definite Hessian (``|grad| < 1e-6``) the full step is taken. Component arrays, no stacking.
    Large batches are split into contiguous chunks solved in :func:`num_threads` threads (numpy
    releases the GIL in its element-wise kernels)."""
    shape = np.broadcast_shapes(x.shape, center.shape, t.shape, V.shape + (2,))
    X = np.broadcast_to(x, shape).reshape(-1, 2)
    C = np.broadcast_to(center, shape).reshape(-1, 2)
    T = np.broadcast_to(t, shape).reshape(-1, 2)
    IV = np.ascontiguousarray(1.0 / np.broadcast_to(V[..., None], shape)[..., 0].reshape(-1))
    X1, X2 = X[:, 0].copy(), X[:, 1].copy()
    C1, C2, T1, T2 = (np.ascontiguousarray(v) for v in (C[:, 0], C[:, 1], T[:, 0], T[:, 1]))
    s2_ = sigma * sigma
    n_thr = min(num_threads(), X1.size // PARALLEL_MIN)
    bounds = np.linspace(0, X1.size, max(n_thr, 1) + 1).astype(int)
    run_parallel(_newton_flat, [(X1[a:b], X2[a:b], C1[a:b], C2[a:b], T1[a:b], T2[a:b], IV[a:b], s2_, tol, max_iter)
                                for a, b in zip(bounds[:-1], bounds[1:])])
    G, gx, gy = _prox_terms(X1, X2, C1, C2, T1, T2, IV, s2_)[:3]
    gn = np.sqrt(gx * gx + gy * gy)
    return np.stack([X1, X2], -1).reshape(shape), G.reshape(shape[:-1]), gn.reshape(shape[:-1])


def _newton_flat(X1: np.ndarray, X2: np.ndarray, C1: np.ndarray, C2: np.ndarray, T1: np.ndarray,
                 T2: np.ndarray, IV: np.ndarray, s2_: float, tol: float, max_iter: int) -> None:
    """The Newton iteration of :func:`_newton` on flat (P,) arrays, writing the minimisers into
    ``X1, X2`` in place (which may be views of a larger batch)."""
    idx = np.arange(X1.size)
    x1, x2, c1, c2, t1, t2, iv = X1.copy(), X2.copy(), C1, C2, T1, T2, IV
    for _ in range(max_iter):
        G, gx, gy, s1, s2, e1, e2, sp1, sp2, k1c, k2c, g11, g22 = _prox_terms(x1, x2, c1, c2, t1, t2, iv, s2_)
        gnorm = np.sqrt(gx * gx + gy * gy)
        keep = gnorm > tol * (1.0 + iv)
        if not keep.all():
            if not keep.any():
                break
            (idx, x1, x2, c1, c2, t1, t2, iv, G, gx, gy, s1, s2, e1, e2, sp1, sp2, k1c, k2c, g11, g22,
             gnorm) = (v[keep] for v in (idx, x1, x2, c1, c2, t1, t2, iv, G, gx, gy, s1, s2, e1, e2, sp1,
                                         sp2, k1c, k2c, g11, g22, gnorm))
        k1 = 2 * s2_ * (sp1 * sp1 + e1 * sp1 * (1 - 2 * s1))
        k2 = 2 * s2_ * (sp2 * sp2 + e2 * sp2 * (1 - 2 * s2))
        a = iv + k1 * g11 * g11 + k2 * x2 * x2 + 2 * k1c
        b = -k1 * g11 * x1 + k2 * x2 * g22 - k1c + k2c
        c = iv + k1 * x1 * x1 + k2 * g22 * g22 - 2 * k2c
        lmin = 0.5 * (a + c) - np.sqrt(0.25 * (a - c) ** 2 + b * b)
        shift = np.maximum(0.0, 0.05 * iv - lmin)
        a = a + shift
        c = c + shift
        det = a * c - b * b
        px = -(c * gx - b * gy) / det
        py = -(a * gy - b * gx) / det
        slope = px * gx + py * gy
        step = np.ones_like(G)
        near = (shift == 0.0) & (gnorm < 1e-6)
        todo = np.flatnonzero(~near)
        for _ in range(30):
            if todo.size == 0:
                break
            st = step[todo]
            n1, n2 = x1[todo] + st * px[todo], x2[todo] + st * py[todo]
            dd = n1 - n2
            f1, f2 = expit(n1 * dd) - t1[todo], expit(n2 * dd) - t2[todo]
            q1, q2 = n1 - c1[todo], n2 - c2[todo]
            Gn = 0.5 * (q1 * q1 + q2 * q2) * iv[todo] + s2_ * (f1 * f1 + f2 * f2)
            ok = Gn <= G[todo] + 1e-4 * st * slope[todo]
            todo = todo[~ok]
            step[todo] *= 0.5
        step[todo] = 0.0
        x1 = x1 + step * px
        x2 = x2 + step * py
        X1[idx], X2[idx] = x1, x2
        moved = step > 0
        if not moved.all():
            if not moved.any():
                break
            idx, x1, x2, c1, c2, t1, t2, iv = (v[moved] for v in (idx, x1, x2, c1, c2, t1, t2, iv))


def _matching_point(t: np.ndarray) -> np.ndarray:
    """Points with ``x_l (x_1 - x_2) = logit(t_l)`` (``s(x) = t``); zeros where ``t_1 < t_2``."""
    tc = np.clip(t, 1e-12, 1 - 1e-12)
    lg = np.log(tc) - np.log1p(-tc)
    d2 = lg[..., 0] - lg[..., 1]
    ok = d2 > 1e-12
    d = np.sqrt(np.where(ok, d2, 1.0))
    return np.where(ok[..., None], lg / d[..., None], 0.0)


def proximal(center: np.ndarray, t: np.ndarray, V: Any, sigma: float = 0.5, *,
             extra_starts: Sequence[np.ndarray] = (), match_starts: bool = True, tol: float = 1e-10,
             max_iter: int = 100, return_all: bool = False, default_starts: bool = True):
    """Global minimiser (over several starts) of the 2-D proximal problem.

    Minimises ``G(x) = |x - center|^2 / (2 V) + sigma^2 sum_l (s_l(x) - t_l)^2`` over ``x in R^2``
    with ``s_l = sigmoid(x_l (x_1 - x_2))``, starting from ``center``, from the origin, from the two
    points where the loss term vanishes and from each of ``extra_starts``, and keeps, per problem,
    the start that reaches the lowest ``G``. (Centre and origin alone miss the global minimum in
    about 0.5% of random problems; with the two extra starts none was missed against a brute-force
    grid, see ``tests/phase/test_proximal.py``.)

    Parameters
    ----------
    center : array_like, shape ``(..., 2)``
        Centres of the quadratic term (finite).
    t : array_like, shape ``(..., 2)``
        Targets ``t_l`` in [0, 1]: the teacher attention's first-column entries (finite; broadcast
        with ``center``).
    V : float or array_like, shape ``(...)``
        Variances of the quadratic term (finite, > 0).
    sigma : float, optional
        Standard deviation of the token noise entries (> 0; default 0.5); the loss term is weighted
        by ``sigma^2``.
    extra_starts : sequence of array_like, each of shape ``(..., 2)``, optional
        Further starting points (e.g. the previous iterate's solution).
    match_starts : bool, optional
        Also start from the two points ``+-x_t`` where the student's attention equals the teacher's
        (``s_l(x) = t_l``; they exist when ``t_1 >= t_2``, otherwise the origin is used): the loss
        term has its two symmetric minima there (default True).
    tol : float, optional
        Stopping rule of each Newton run, ``|grad G| <= tol (1 + 1/V)`` (default 1e-10).
    max_iter : int, optional
        Newton iterations per start (default 100); a run still above ``tol`` then stops where it is
        (its ``gnorm`` shows it).
    return_all : bool, optional
        Also return the per-start minimisers and values (default False).
    default_starts : bool, optional
        Include the centre and the origin (default True; ``False``: only the matching points and
        ``extra_starts``, used by the solver between full restarts).

    Returns
    -------
    x : numpy.ndarray, shape ``(..., 2)``
        The minimiser: the end point of the start with the lowest ``G`` (``...`` is the broadcast
        shape of the inputs).
    G : numpy.ndarray, shape ``(...)``
        Its value.
    gnorm : numpy.ndarray, shape ``(...)``
        The gradient norm ``|grad G|`` at ``x``.
    xs : numpy.ndarray, shape ``(S, ..., 2)``
        With ``return_all``: the end point of each of the ``S`` starts, in the order centre, origin
        (with ``default_starts``), ``+x_t``, ``-x_t`` (with ``match_starts``), ``extra_starts``.
    Gs : numpy.ndarray, shape ``(S, ...)``
        With ``return_all``: their values.

    Raises
    ------
    ValueError
        For non-finite or misshaped ``center``, ``t``, a ``V`` that is not finite and positive, a bad
        ``sigma``, or no start at all.
    """
    center = np.asarray(center, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if center.shape[-1:] != (2,) or t.shape[-1:] != (2,):
        raise ValueError("center and t must have a last axis of length 2")
    if not (np.all(np.isfinite(center)) and np.all(np.isfinite(t))):
        raise ValueError("center and t must be finite")
    if not np.all(np.isfinite(V)) or np.any(V <= 0):
        raise ValueError("V must be finite and > 0")
    sigma = check_real("sigma", sigma, low=0.0, low_open=True)
    shape = np.broadcast_shapes(center.shape, t.shape, V.shape + (2,))
    starts = [np.broadcast_to(center, shape), np.zeros(shape)] if default_starts else []
    if match_starts:
        xm = _matching_point(np.broadcast_to(t, shape))
        starts += [xm, -xm]
    starts += [np.broadcast_to(np.asarray(s, dtype=np.float64), shape) for s in extra_starts]
    if not starts:
        raise ValueError("proximal needs at least one start")
    S = len(starts)
    x0 = np.stack(starts)  # (S, ..., 2)
    xs, Gs, gn = _newton(x0, center[None], t[None], V[None], sigma, tol, max_iter)
    best = np.argmin(Gs, axis=0)  # (...)
    x = np.take_along_axis(xs, best[None, ..., None], axis=0)[0]
    G = np.take_along_axis(Gs, best[None], axis=0)[0]
    gnorm = np.take_along_axis(gn, best[None], axis=0)[0]
    if return_all:
        return x, G, gnorm, xs, Gs
    del S
    return x, G, gnorm


def proximal_bfgs(center: np.ndarray, t: np.ndarray, V: float, sigma: float = 0.5) -> np.ndarray:
    """The authors' minimiser of the proximal problem, one node at a time: scipy's BFGS with
    finite-difference gradients, started at the origin, on the objective as the paper writes it,
    ``|x - c|^2 / V + tr(S sigma^2 S^T) - 2 tr(T sigma^2 S^T)`` with ``S = softmax(x x^T)`` and ``T``
    the teacher's 2x2 attention (twice :func:`prox_objective_and_derivatives`' ``G`` plus a constant).
    Slow (a Python loop, about 2 ms a node); for replaying their procedure, not for solving.

    Parameters
    ----------
    center : array_like, shape ``(P, 2)``
        Centres of the quadratic term (any ``(..., 2)`` is flattened to ``(P, 2)``).
    t : array_like, shape ``(P, 2)``
        Targets ``t_l`` in [0, 1]: the teacher attention's first-column entries (flattened likewise).
    V : float
        Variance of the quadratic term (> 0), one for all ``P`` problems.
    sigma : float, optional
        Standard deviation of the token noise entries (default 0.5); the attention terms are
        weighted by ``sigma^2``.

    Returns
    -------
    x : numpy.ndarray, shape ``(P, 2)``
        The minimisers BFGS stops at (its default gradient tolerance, 1e-5).
    """
    from scipy.optimize import minimize
    center = np.asarray(center, dtype=np.float64).reshape(-1, 2)
    t = np.asarray(t, dtype=np.float64).reshape(-1, 2)
    s2_ = sigma * sigma

    def obj(x, c, T):
        M = np.outer(x, x)
        E = np.exp(M - M.max(1, keepdims=True))
        S = E / E.sum(1, keepdims=True)
        return float(((x - c) ** 2).sum() / V + s2_ * np.trace(S @ S.T) - 2 * s2_ * np.trace(T @ S.T))

    out = np.empty_like(center)
    for k in range(center.shape[0]):
        T = np.array([[t[k, 0], 1 - t[k, 0]], [t[k, 1], 1 - t[k, 1]]])
        out[k] = minimize(obj, np.zeros(2), args=(center[k], T), method="BFGS").x
    return out
