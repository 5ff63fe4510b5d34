"""State evolution of the tied rank-one attention layer (Cui et al., arXiv:2402.03902, Result 4.2).

The fixed point of eight scalar equations describes the global (or a local) minimiser of the
empirical risk in the limit ``d, n -> infinity`` with ``alpha = n / d`` fixed. Overlaps (the published
files' normalisation, ``rho = sigma^2``):

- ``q = sigma^2 |Q|^2 / d``   (variance of a student pre-activation's noise part),
- ``m = p_1 . Q / sqrt(d)``   (positional overlap),
- ``theta = sigma^2 Q* . Q / d`` (semantic overlap; the empirical ``Q* . Q / d`` is ``theta / sigma^2``),
- ``V``                       (the "variance" of the estimator, conjugate to ``V_hat``).

Conjugate updates are Gaussian averages over ``xi, Y ~ N(0, I_2)`` of a two-dimensional proximal
problem (see :func:`proximal`), computed here with a tensor Gauss-Hermite rule over the four
Gaussian variables, all quadrature nodes, all starts and all ``alpha`` values at once (numpy,
float64). The proximal problem is not convex: it is solved by a safeguarded Newton method
(Hessian shifted to be positive definite, backtracking line search) from several starts, keeping
the lowest value.

Per-row reduction used throughout: the softmax of the 2x2 score matrix ``x x^T`` has rows
``(s_l, 1 - s_l)`` with ``s_l = sigmoid(x_l (x_1 - x_2))``, and the teacher's rows are
``(t_l, 1 - t_l)`` with ``t_l = (1 - omega) sigmoid(u_l (u_1 - u_2)) + omega A_l1`` (rows of ``A``
sum to one), so ``|S - T|_F^2 = 2 sum_l (s_l - t_l)^2`` and the per-sample loss
``|y_hat - y|^2 / (2 d)`` tends to ``ell = sigma^2 sum_l (s_l - t_l)^2``.
"""
from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np
from scipy.special import expit

from stumplib.core.validation import check_choice, check_grid, check_int, check_real

__all__ = [
    "StateEvolutionError",
    "gauss_hermite_4d",
    "sobol_normal_4d",
    "quadrature_4d",
    "teacher_rows",
    "prox_objective_and_derivatives",
    "proximal",
    "proximal_bfgs",
    "se_update",
    "solve_fixed_rule",
    "stroud_secrest_4d",
    "test_error_from_overlaps",
    "check_A",
    "check_alphas",
    "check_model",
    "PhaseModel",
    "FixedRuleResult",
    "theta_profile",
]

BRANCHES = ("semantic", "positional")
RULES = ("gauss-hermite", "sobol", "stroud")


class StateEvolutionError(RuntimeError):
    """The damped fixed-point iteration did not converge (or left the admissible region)."""


# ----------------------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------------------
def check_A(A: Any) -> np.ndarray:
    """Validate the 2x2 positional mixing matrix (finite, rows summing to one, entries in [0, 1])."""
    try:
        arr = np.asarray(A, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"A must be a 2x2 row-stochastic matrix; got {A!r}") from None
    if arr.shape != (2, 2) or not np.all(np.isfinite(arr)):
        raise ValueError(f"A must be a finite 2x2 row-stochastic matrix; got {A!r}")
    if np.any(arr < 0) or np.any(arr > 1) or not np.allclose(arr.sum(1), 1.0, atol=1e-12):
        raise ValueError(f"A must have entries in [0, 1] and rows summing to 1; got {arr.tolist()}")
    return arr


def check_alphas(alpha: Any) -> tuple[np.ndarray, bool]:
    """Validate sample ratios ``alpha = n / d``.

    Parameters
    ----------
    alpha : a positive number or a non-empty 1-D sequence of positive numbers (each at most 1000).

    Returns
    -------
    alphas : (A,) float64 array; scalar : whether ``alpha`` was a single number.

    Raises
    ------
    ValueError
        Naming ``alpha`` and its allowed range.
    """
    scalar = np.isscalar(alpha) or (isinstance(alpha, np.ndarray) and alpha.ndim == 0)
    vals = [alpha] if scalar else alpha
    if isinstance(vals, np.ndarray):
        vals = vals.tolist()
    a = check_grid("alpha", vals, kind="real", minimum=0.0)
    arr = np.asarray(a, dtype=np.float64)
    if np.any(arr <= 0):
        raise ValueError(f"alpha must be > 0 (sample ratio n/d); got {arr[arr <= 0][0]}")
    if np.any(arr > 1e3):
        raise ValueError(f"alpha must be <= 1000; got {arr.max()}")
    return arr, scalar



#: the paper's positional mixing matrix (swap-symmetric)
DEFAULT_A = ((0.6, 0.4), (0.4, 0.6))


class PhaseModel(NamedTuple):
    """The validated phase model (see :func:`check_model`); unpacks as
    ``omega, sigma, lam, A, branch``."""
    omega: float
    sigma: float
    lam: float
    A: np.ndarray
    branch: str

    @property
    def rho(self) -> float:
        """``sigma^2``, the token noise variance."""
        return self.sigma * self.sigma

    @property
    def swap_symmetric(self) -> bool:
        """``A[::-1, ::-1] == A``: then ``m = 0`` is an invariant subspace of the semantic branch."""
        return bool(np.allclose(self.A, self.A[::-1, ::-1]))


def check_model(*, omega: Any, sigma: Any = 0.5, lam: Any = 0.01, A: Any = DEFAULT_A,
                branch: Any = "semantic") -> PhaseModel:
    """Validate the phase model's parameters (the one checker of the phase package's entry points).

    Parameters
    ----------
    omega : positional share of the teacher, in [0, 1].
    sigma : token noise standard deviation, in (0, 100].
    lam : ridge penalty ``lambda``, in (0, 1000].
    A : 2x2 row-stochastic positional matrix (see :func:`check_A`).
    branch : ``"semantic"`` or ``"positional"``.

    Returns
    -------
    PhaseModel
        ``(omega, sigma, lam, A, branch)`` as floats, a float64 (2, 2) array and a string.

    Raises
    ------
    ValueError
        Naming the first bad parameter and its allowed range.
    """
    return PhaseModel(omega=check_real("omega", omega, low=0.0, high=1.0),
                      sigma=check_real("sigma", sigma, low=0.0, low_open=True, high=100.0),
                      lam=check_real("lam", lam, low=0.0, low_open=True, high=1e3),
                      A=check_A(A), branch=check_choice("branch", branch, BRANCHES))


class _MappingResult(Mapping):
    """Read access by key to a result dataclass's fields (``r["q"]`` as well as ``r.q``), so that a
    result reads like the dict of arrays it replaces: ``keys()``, ``items()``, ``in``, ``**r``."""

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def first(self):
        """The same result with every field's entry 0 (the scalar result of a scalar ``alpha``)."""
        return type(self)(**{k: (v[0] if isinstance(v, np.ndarray) else v) for k, v in self.items()})


# ----------------------------------------------------------------------------------------------
# quadrature
# ----------------------------------------------------------------------------------------------
@lru_cache(maxsize=8)
def gauss_hermite_4d(n_nodes: int = 10, prune: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Tensor Gauss-Hermite rule for ``E f(xi_1, xi_2, Y_1, Y_2)`` with four standard normals.

    Parameters
    ----------
    n_nodes : nodes per axis.
    prune : nodes whose weight is below ``prune`` times the largest weight are dropped (their
        total weight is below 1e-9 for the defaults) and the rest renormalised.

    Returns
    -------
    nodes : (K, 4) array, columns ``xi_1, xi_2, Y_1, Y_2``.
    weights : (K,) array summing to one.
    """
    n_nodes = check_int("n_nodes", n_nodes, minimum=2, maximum=60)
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    grids = np.meshgrid(x, x, x, x, indexing="ij")
    wg = np.meshgrid(w, w, w, w, indexing="ij")
    nodes = np.stack([g.ravel() for g in grids], axis=1)
    weights = np.prod(np.stack([g.ravel() for g in wg], axis=1), axis=1)
    keep = weights >= prune * weights.max()
    nodes, weights = nodes[keep], weights[keep]
    nodes.setflags(write=False)
    weights = weights / weights.sum()
    weights.setflags(write=False)
    return nodes, weights


@lru_cache(maxsize=8)
def sobol_normal_4d(log2_points: int = 14, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Scrambled Sobol points mapped to four standard normals (randomised quasi-Monte Carlo).

    Unlike a tensor Gauss-Hermite rule, whose error is erratic when the integrand jumps (the
    proximal minimiser switches between minima along surfaces in ``(xi, Y)``), this rule has an
    error that shrinks steadily with the number of points and can be estimated from independent
    scramblings (``seed``).

    Parameters
    ----------
    log2_points : the rule has ``2**log2_points`` points (8 to 20).
    seed : scrambling seed (fixed: same seed, same nodes).

    Returns
    -------
    nodes : (2**log2_points, 4) array, columns ``xi_1, xi_2, Y_1, Y_2``; weights : equal, summing to one.
    """
    from scipy.stats import norm, qmc

    log2_points = check_int("log2_points", log2_points, minimum=8, maximum=20)
    seed = check_int("seed", seed, minimum=0)
    u = qmc.Sobol(4, scramble=True, seed=seed).random_base2(log2_points)
    nodes = norm.ppf(np.clip(u, 1e-15, 1 - 1e-15))
    weights = np.full(nodes.shape[0], 1.0 / nodes.shape[0])
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


@lru_cache(maxsize=1)
def stroud_secrest_4d() -> tuple[np.ndarray, np.ndarray]:
    """The authors' rule: the 12-point, degree-7 Stroud-Secrest rule for a standard 2-D Gaussian,
    applied once over ``xi`` and once over ``Y`` (product rule, 144 nodes).

    The 2-D rule: ``sqrt(2) (+-sqrt(3), 0)``, ``sqrt(2) (0, +-sqrt(3))`` with weight 1/36 each;
    ``sqrt(2) (+-a, +-a)`` with weight ``(5 + 2 sqrt 5)/45`` and ``sqrt(2) (+-b, +-b)`` with weight
    ``(5 - 2 sqrt 5)/45``, ``a = sqrt((9 - 3 sqrt 5)/8)``, ``b = sqrt((9 + 3 sqrt 5)/8)``.

    Returns
    -------
    nodes : (144, 4) array, columns ``xi_1, xi_2, Y_1, Y_2``; weights : (144,) summing to one.
    """
    r5 = math.sqrt(5.0)
    a, b = math.sqrt((9 - 3 * r5) / 8), math.sqrt((9 + 3 * r5) / 8)
    s3 = math.sqrt(3.0)
    pts, wts = [], []
    for p in ((s3, 0), (-s3, 0), (0, s3), (0, -s3)):
        pts.append(p); wts.append(1 / 36)
    for c, wc in ((a, (5 + 2 * r5) / 45), (b, (5 - 2 * r5) / 45)):
        for sx in (1, -1):
            for sy in (1, -1):
                pts.append((sx * c, sy * c)); wts.append(wc)
    p2 = math.sqrt(2.0) * np.array(pts, dtype=np.float64)
    w2 = np.array(wts, dtype=np.float64)
    if abs(w2.sum() - 1.0) > 1e-12:
        raise AssertionError(f"Stroud-Secrest weights sum to {w2.sum()}")
    i, j = np.meshgrid(np.arange(12), np.arange(12), indexing="ij")
    nodes = np.concatenate([p2[i.ravel()], p2[j.ravel()]], axis=1)
    weights = w2[i.ravel()] * w2[j.ravel()]
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def quadrature_4d(rule: str = "gauss-hermite", n_nodes: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """The four-dimensional Gaussian rule used by the state evolution.

    ``rule="gauss-hermite"``: :func:`gauss_hermite_4d` with ``n_nodes`` nodes per axis (4 to 30).
    ``rule="sobol"``: :func:`sobol_normal_4d` with ``2**n_nodes`` points (``n_nodes`` 8 to 20), seed 0.
    ``rule="stroud"``: :func:`stroud_secrest_4d` (144 nodes; ``n_nodes`` ignored).
    """
    rule = check_choice("rule", rule, RULES)
    if rule == "gauss-hermite":
        return gauss_hermite_4d(check_int("n_nodes", n_nodes, minimum=2, maximum=60))
    if rule == "stroud":
        return stroud_secrest_4d()
    return sobol_normal_4d(check_int("n_nodes", n_nodes, minimum=8, maximum=20))


def _check_n_nodes(rule: str, n_nodes: Any) -> int:
    if rule == "gauss-hermite":
        return check_int("n_nodes", n_nodes, minimum=4, maximum=30)
    if rule == "sobol":
        return check_int("n_nodes", n_nodes, minimum=8, maximum=20)
    return 0


def teacher_rows(u: np.ndarray, omega: float, A: np.ndarray) -> np.ndarray:
    """First-column entries ``t_l`` of the teacher matrix ``(1-omega) softmax(u u^T) + omega A``.

    Parameters
    ----------
    u : (..., 2) teacher pre-activations.

    Returns
    -------
    t : (..., 2), ``t_l = (1 - omega) sigmoid(u_l (u_1 - u_2)) + omega A[l, 0]``.
    """
    du = u[..., 0] - u[..., 1]
    sem = expit(u * du[..., None])
    return (1.0 - omega) * sem + omega * A[:, 0]


# ----------------------------------------------------------------------------------------------
# the two-dimensional proximal problem
# ----------------------------------------------------------------------------------------------
def prox_objective_and_derivatives(x: np.ndarray, center: np.ndarray, t: np.ndarray,
                                   V: np.ndarray, sigma: float, order: int = 2):
    """``G(x) = |x - center|^2 / (2 V) + sigma^2 sum_l (s_l(x) - t_l)^2`` and its derivatives.

    ``G`` is half the objective written in the paper's notes (same minimiser).

    Parameters
    ----------
    x, center, t : (..., 2) arrays (broadcastable).
    V : (...) array (> 0).
    order : 0 (value), 1 (value, gradient) or 2 (value, gradient, Hessian).

    Returns
    -------
    G : (...); grad : (..., 2); hess : (..., 2, 2) (as requested by ``order``).
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


#: problems per thread below which work runs in the calling thread
_PARALLEL_MIN = 2 ** 13
_POOL: list = []  # the lazily created thread pool (one per process)
_LOCAL = threading.local()  # marks the pool's threads while they work (no nested splitting)


def num_threads() -> int:
    """Threads used for large batches of proximal problems: ``STUMPLIB_THREADS`` if set, else the
    cores this process may use; 1 inside a worker thread. Every problem is solved on its own (no
    reduction across problems), so results do not depend on the number of threads (tested)."""
    if getattr(_LOCAL, "worker", False):
        return 1
    env = os.environ.get("STUMPLIB_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"STUMPLIB_THREADS must be an integer >= 1; got {env!r}") from None
        return check_int("STUMPLIB_THREADS", n, minimum=1, maximum=256)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


def run_parallel(fn, args_list: Sequence[tuple]) -> list:
    """``[fn(*a) for a in args_list]``, in the shared thread pool when there is more than one item
    (numpy releases the GIL in its element-wise kernels, so the items run on separate cores)."""
    if len(args_list) <= 1 or getattr(_LOCAL, "worker", False):
        return [fn(*a) for a in args_list]
    n = len(args_list)
    if not _POOL or _POOL[0][0] < n:
        from concurrent.futures import ThreadPoolExecutor
        if _POOL:
            _POOL.pop()[1].shutdown(wait=False)
        _POOL.append((n, ThreadPoolExecutor(max_workers=n, thread_name_prefix="stumplib")))

    def call(a):
        _LOCAL.worker = True
        try:
            return fn(*a)
        finally:
            _LOCAL.worker = False

    return list(_POOL[0][1].map(call, args_list))


def _newton(x: np.ndarray, center: np.ndarray, t: np.ndarray, V: np.ndarray, sigma: float,
            tol: float, max_iter: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Safeguarded Newton from ``x`` (batched, flattened internally; converged problems are dropped
    from the working set). Returns (x, G, |grad|) with the broadcast shape of the inputs.

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
    n_thr = min(num_threads(), X1.size // _PARALLEL_MIN)
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
    grid, see ``tests/test_phase.py``.)

    Parameters
    ----------
    center, t : (..., 2) arrays.
    V : scalar or (...) array, > 0.
    extra_starts : further (..., 2) starting points (e.g. the previous iterate's solution).
    match_starts : also start from the two points ``+-x_t`` where the student's attention equals the
        teacher's (``s_l(x) = t_l``; they exist when ``t_1 >= t_2``, otherwise the origin is used):
        the loss term has its two symmetric minima there.
    tol : stopping rule ``|grad G| <= tol (1 + 1/V)``.
    default_starts : include the centre and the origin (``False``: only ``extra_starts``, used by
        the solver between full restarts).
    return_all : also return the per-start minimisers and values.

    Returns
    -------
    x : (..., 2) minimiser; G : (...) value; gnorm : (...) gradient norm at ``x``;
    and, with ``return_all``, xs (S, ..., 2) and Gs (S, ...).
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
    center, t : (P, 2) arrays. V : scalar > 0.

    Returns
    -------
    x : (P, 2) the minimisers BFGS stops at (its default gradient tolerance, 1e-5).
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


# ----------------------------------------------------------------------------------------------
# one step of the state evolution (batched over alphas)
# ----------------------------------------------------------------------------------------------
def _geometry(q, m, theta, sigma, nodes):
    """Student centres and teacher pre-activations at the nodes; shapes (A, K, 2)."""
    rho = sigma * sigma
    sq = np.sqrt(q)[:, None, None]
    vstar2 = rho - theta ** 2 / q
    if np.any(vstar2 < -1e-12):
        raise StateEvolutionError("theta^2 > rho q: the overlaps left the admissible region "
                                  "(|theta| <= sigma sqrt(q))")
    vstar = np.sqrt(np.maximum(vstar2, 1e-300))[:, None, None]
    if nodes.ndim == 2:
        nodes = nodes[None]
    xi, Y = nodes[..., 0:2], nodes[..., 2:4]
    center = sq * xi + np.stack([m, -m], -1)[:, None, :]
    u = vstar * Y + (theta / np.sqrt(q))[:, None, None] * xi
    return center, u, vstar[:, 0, 0], xi, Y


def se_update(alpha: Any, q: Any, m: Any, V: Any, theta: Any, *, omega: float, sigma: float = 0.5,
              lam: float = 0.01, A: Any = ((0.6, 0.4), (0.4, 0.6)), n_nodes: int = 10,
              warm: np.ndarray | None = None, tol: float = 1e-10,
              restart: bool = True, rule: str = "gauss-hermite", nodes: np.ndarray | None = None,
              weights: np.ndarray | None = None, match_starts: bool = True,
              with_test_error: bool = True, minimiser: str = "newton") -> dict[str, np.ndarray]:
    """One undamped update of the state evolution (overlaps -> conjugates -> overlaps).

    Parameters
    ----------
    alpha, q, m, V, theta : arrays of shape (A,) (broadcast together).
    warm : optional (A, K, 2) proximal solutions used as an extra start.
    restart : also start from the centre and the origin (if ``False``, only from ``warm``).
    rule, n_nodes : the Gaussian quadrature, see :func:`quadrature_4d`.
    nodes, weights : an explicit rule instead, (K, 4) and (K,), or one rule per row, (A, K, 4) and
        (A, K) (e.g. independent scramblings).
    match_starts : also start the proximal problems from the two matching points (with ``restart``).
    with_test_error : also return the test error at the input overlaps (with the same rule).
    minimiser : ``"newton"`` (:func:`proximal`, the global minimiser over its starts) or ``"bfgs"``
        (:func:`proximal_bfgs`, the authors' minimiser, one node at a time: slow; ``warm``,
        ``restart`` and ``match_starts`` are then ignored).

    Returns
    -------
    dict with the new ``q, m, V, theta`` (A,), the conjugates ``q_hat, m_hat, V_hat, theta_hat``,
    ``prox`` (A, K, 2) solutions, ``gnorm`` (largest proximal gradient norm), ``train_loss`` and
    ``test_error`` evaluated at the *input* overlaps.
    """
    A_ = check_A(A)
    minimiser = check_choice("minimiser", minimiser, ("newton", "bfgs"))
    EIN = "ak,ak->a" if (weights is not None and np.ndim(weights) == 2) else "k,ak->a"
    alpha, q, m, V, theta = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.float64))
                                                  for v in (alpha, q, m, V, theta)))
    if nodes is None:
        nodes, w = quadrature_4d(rule, n_nodes)
    else:
        w = np.asarray(weights, dtype=np.float64)
    rho = sigma * sigma
    center, u, vstar, xi, Y = _geometry(q, m, theta, sigma, nodes)
    t = teacher_rows(u, omega, A_)
    Vb = V[:, None]
    if minimiser == "bfgs":
        x = np.stack([proximal_bfgs(center[i], t[i], float(V[i]), sigma) for i in range(V.size)])
        gnorm = np.zeros(1)
    else:
        extra = [] if warm is None else [warm]
        x, G, gnorm = proximal(center, t, Vb, sigma, extra_starts=extra, tol=tol,
                               default_starts=restart or warm is None,
                               match_starts=match_starts and (restart or warm is None))
    r = x - center
    Vc = V
    m_hat = alpha * np.einsum(EIN, w, r[..., 0] - r[..., 1]) / Vc
    q_hat = alpha * np.einsum(EIN, w, r[..., 0] ** 2 + r[..., 1] ** 2) / Vc ** 2
    theta_hat = alpha * np.einsum(EIN, w, (r * Y).sum(-1)) / (Vc * vstar)
    V_hat = -alpha * np.einsum(EIN, w, (r * xi).sum(-1)) / (Vc * np.sqrt(q)) + theta * theta_hat / q
    den = lam + V_hat * rho
    if np.any(den <= 0):
        raise StateEvolutionError("lambda + V_hat sigma^2 <= 0: the iteration left the admissible region")
    q_new = rho * (q_hat * rho + m_hat ** 2 + theta_hat ** 2 * rho * rho) / den ** 2
    V_new = rho / den
    m_new = m_hat / den
    theta_new = rho * theta_hat * rho / den
    # losses at the input point
    s = expit(x * (x[..., 0] - x[..., 1])[..., None])
    ell_train = rho * ((s - t) ** 2).sum(-1)
    train_loss = alpha * np.einsum(EIN, w, ell_train) + lam * q / (2 * rho)
    return dict(q=q_new, m=m_new, V=V_new, theta=theta_new, q_hat=q_hat, m_hat=m_hat, V_hat=V_hat,
                theta_hat=theta_hat, prox=x, gnorm=float(gnorm.max()), train_loss=train_loss,
                test_error=(_test_error_nodes(q, m, theta, sigma, omega, A_, nodes, w)
                            if with_test_error else None))


def _test_error(q, m, theta, sigma, omega, A_, n_nodes, rule="gauss-hermite"):
    nodes, w = quadrature_4d(rule, n_nodes)
    return _test_error_nodes(q, m, theta, sigma, omega, A_, nodes, w)


def _test_error_nodes(q, m, theta, sigma, omega, A_, nodes, w):
    center, u, _, _, _ = _geometry(q, m, theta, sigma, nodes)
    t = teacher_rows(u, omega, A_)
    s = expit(center * (center[..., 0] - center[..., 1])[..., None])
    ein = "ak,ak->a" if w.ndim == 2 else "k,ak->a"
    return sigma * sigma * np.einsum(ein, w, ((s - t) ** 2).sum(-1))


def test_error_from_overlaps(q: Any, m: Any, theta: Any, *, omega: float, sigma: float = 0.5,
                             A: Any = ((0.6, 0.4), (0.4, 0.6)), n_nodes: int = 12) -> np.ndarray:
    """Asymptotic per-sample test error ``E |y_hat - y|^2 / (2 d) = sigma^2 E sum_l (s_l - t_l)^2``.

    Student pre-activations ``h = sqrt(q) xi + (m, -m)``, teacher ``u = V* Y + theta xi / sqrt(q)``
    with ``V* = sqrt(sigma^2 - theta^2 / q)``; ``q, m, theta`` in the published normalisation.

    Returns
    -------
    (A,) array (broadcast of the inputs).
    """
    sigma = check_real("sigma", sigma, low=0.0, low_open=True)
    omega = check_real("omega", omega, low=0.0, high=1.0)
    q, m, theta = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in (q, m, theta)))
    if np.any(q <= 0) or not np.all(np.isfinite(q)):
        raise ValueError("q must be finite and > 0")
    if np.any(theta ** 2 > sigma ** 2 * q * (1 + 1e-9)):
        raise ValueError("theta must satisfy theta^2 <= sigma^2 q")
    return _test_error(q, m, theta, sigma, omega, check_A(A), check_int("n_nodes", n_nodes, minimum=2))


# ----------------------------------------------------------------------------------------------
# the solver
# ----------------------------------------------------------------------------------------------
def _initial_point(alpha: np.ndarray, branch: str, sigma: float):
    rho = sigma * sigma
    a = np.minimum(alpha, 2.0)
    if branch == "semantic":
        q = rho * (0.05 + 0.4 * a / (1 + a))
        V = np.full_like(alpha, 15.0)
        theta = 0.6 * np.sqrt(rho * q)
        m = np.zeros_like(alpha)
    else:
        # near the published positional fixed point (q ~ 0.2 rho, m ~ 0.25); starting from a larger
        # q the iteration can end on another fixed point with m ~ 0.12 and a higher test error
        q = 0.2 * rho * np.minimum(1.0, a + 0.05)
        V = np.full_like(alpha, 12.0)
        theta = np.zeros_like(alpha)
        m = np.full_like(alpha, 0.25)
    return q, m, V, theta


@dataclass(eq=False)
class FixedRuleResult(_MappingResult):
    """The fixed points of :func:`solve_fixed_rule`: (A,) arrays (scalars for a scalar ``alpha``),
    read as attributes or by key (``r.q`` or ``r["q"]``, ``r.keys()``, ``r.items()``, like a dict).

    ``q, m, V, theta``: the overlaps; ``q_hat, m_hat, V_hat, theta_hat``: their conjugates;
    ``train_loss`` (empirical risk divided by ``d``), ``test_error`` (per sample, = mse / 2 of the
    published files); ``n_iter`` (updates per ``alpha``), ``residual`` (last relative change),
    ``alpha``.
    """
    q: Any
    m: Any
    V: Any
    theta: Any
    q_hat: Any
    m_hat: Any
    V_hat: Any
    theta_hat: Any
    train_loss: Any
    test_error: Any
    n_iter: Any
    residual: Any
    alpha: Any


#: the outputs of one update that :func:`solve_fixed_rule` keeps besides the overlaps
_FIXED_RULE_KEYS = ("q_hat", "m_hat", "V_hat", "theta_hat", "train_loss", "test_error")
#: scales of q, m, V, theta below which changes are absolute (damped iteration)
_FIXED_RULE_FLOOR = np.array([1e-4, 1e-2, 1e-2, 1e-4])


@dataclass(eq=False)
class _DampedIteration:
    """State of the damped fixed-point iteration of :func:`solve_fixed_rule`, one entry per
    ``alpha``: the overlaps, the damping ``eta`` (raised where an update does not shrink the change),
    the last change ``prev``, ``pending`` (the change was small at a followed-only update: the next is
    a full multi-start), ``active`` (not converged), the proximal minimisers ``warm``."""
    alphas: np.ndarray
    model: PhaseModel
    symmetric: bool
    q: np.ndarray
    m: np.ndarray
    V: np.ndarray
    theta: np.ndarray
    eta: np.ndarray
    prev: np.ndarray
    pending: np.ndarray
    active: np.ndarray
    n_iter: np.ndarray
    resid: np.ndarray
    final: dict
    warm: np.ndarray | None = None

    @classmethod
    def start(cls, alphas: np.ndarray, model: PhaseModel, init: dict[str, Any] | None,
              damping: float) -> "_DampedIteration":
        """The branch's default start (or ``init``), ``m = 0`` imposed on a swap-symmetric semantic
        branch (the update is odd in ``m``: rounding noise cannot push the iteration off it)."""
        q, m, V, theta = _initial_point(alphas, model.branch, model.sigma)
        if init is not None:
            q, m, V, theta = (np.broadcast_to(np.asarray(init[k], dtype=np.float64), alphas.shape).copy()
                              for k in ("q", "m", "V", "theta"))
        nA = alphas.size
        symmetric = model.branch == "semantic" and np.allclose(model.A, model.A[::-1, ::-1])
        if symmetric:
            m = np.zeros_like(m)
        return cls(alphas=alphas, model=model, symmetric=symmetric, q=q, m=m, V=V, theta=theta,
                   eta=np.full(nA, damping), prev=np.full(nA, np.inf), pending=np.zeros(nA, dtype=bool),
                   active=np.ones(nA, dtype=bool), n_iter=np.zeros(nA, dtype=int),
                   resid=np.full(nA, np.inf), final={k: np.zeros(nA) for k in _FIXED_RULE_KEYS})

    def update(self, it: int, *, rule: str, n_nodes: int, tol: float, restart_every: int = 5) -> bool:
        """One damped update of the active entries (a full multi-start search every
        ``restart_every`` updates and before convergence is declared); True when none is left."""
        idx = np.flatnonzero(self.active)
        restart = it % restart_every == 0 or bool(self.pending[idx].any())
        omega, sigma, lam, A_, branch = self.model
        up = se_update(self.alphas[idx], self.q[idx], self.m[idx], self.V[idx], self.theta[idx], omega=omega,
                       sigma=sigma, lam=lam, A=A_, n_nodes=n_nodes,
                       warm=None if self.warm is None else self.warm[idx], restart=restart, rule=rule)
        if self.symmetric:
            up["m"] = np.zeros_like(up["m"])
        if branch == "positional":
            up["theta"] = np.zeros_like(up["theta"])
        if self.warm is None:
            self.warm = np.zeros((self.alphas.size,) + up["prox"].shape[1:])
        self.warm[idx] = up["prox"]
        old = np.stack([self.q[idx], self.m[idx], self.V[idx], self.theta[idx]], -1)
        new = np.stack([up["q"], up["m"], up["V"], up["theta"]], -1)
        if not np.all(np.isfinite(new)):
            raise StateEvolutionError(f"state evolution produced non-finite overlaps at alpha="
                                      f"{self.alphas[idx][~np.all(np.isfinite(new), -1)].tolist()}")
        rel = np.max(np.abs(new - old) / np.maximum(np.abs(old), _FIXED_RULE_FLOOR), axis=-1)
        self.resid[idx] = rel
        self.n_iter[idx] += 1
        for k in _FIXED_RULE_KEYS:
            self.final[k][idx] = up[k]
        small = rel < tol
        done = small & restart  # convergence is only declared after a full multi-start update
        self.pending[idx] = small & ~restart
        # adaptive damping: an update that does not shrink the change is an oscillation; damp more
        eta = self.eta
        grow = rel >= self.prev[idx]
        eta[idx] = np.where(grow, np.minimum(0.97, 1 - 0.7 * (1 - eta[idx])), eta[idx])
        self.prev[idx] = rel
        upd = eta[idx, None] * old + (1 - eta[idx, None]) * new
        upd[done] = old[done]  # a converged point keeps the point at which it was checked
        self.q[idx], self.m[idx], self.V[idx], self.theta[idx] = upd.T
        self.active[idx[done]] = False
        return not self.active.any()

    def result(self) -> FixedRuleResult:
        return FixedRuleResult(q=self.q, m=self.m, V=self.V, theta=self.theta, **self.final, n_iter=self.n_iter,
                               residual=self.resid, alpha=self.alphas)


def solve_fixed_rule(alpha: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                    A: Any = DEFAULT_A, branch: str = "semantic",
                    n_nodes: int = 10, damping: float = 0.5, tol: float = 1e-5,
                    max_iter: int = 600, init: dict[str, Any] | None = None,
                    rule: str = "gauss-hermite") -> FixedRuleResult:
    """Solve the state evolution on a batch of sample ratios ``alpha = n / d``.

    Damped fixed-point iteration ``z <- damping z + (1 - damping) F(z)`` on ``z = (q, m, V, theta)``
    for all ``alpha`` at once (converged points are frozen), from an initial point on the requested
    branch (semantic: ``theta > 0, m = 0``; positional: ``m > 0, theta = 0``). The proximal problems
    start from the previous iterate's solution, and every 5th update (and before convergence is
    declared) also from the centre and the origin, keeping the best. On the semantic branch with a
    swap-symmetric ``A`` (``A[::-1, ::-1] == A``, as the paper's), ``m = 0`` is imposed; on the
    positional branch ``theta = 0`` is imposed (the teacher is even in ``u``, so ``theta = 0`` is an
    invariant subspace of the exact update; without the constraint, ties between the proximal
    problem's symmetric minima let rounding push the iteration off the branch).

    Parameters
    ----------
    alpha : positive number or 1-D sequence of positive numbers.
    omega : positional share of the teacher, in [0, 1].
    sigma : token noise standard deviation (> 0); ``rho = sigma^2``.
    lam : ridge penalty ``lambda`` (> 0).
    A : 2x2 row-stochastic positional matrix of the teacher.
    branch : ``"semantic"`` or ``"positional"``.
    n_nodes : Gauss-Hermite nodes per axis (4-D tensor rule, tiny weights pruned, 4 to 30); with
        ``rule="sobol"``, the base-2 logarithm of the number of quasi-Monte Carlo points (8 to 20).
    rule : ``"gauss-hermite"`` (default) or ``"sobol"`` (see :func:`quadrature_4d`).
    damping : initial weight of the old iterate, in [0, 1); raised per ``alpha`` (up to 0.97)
        whenever an update does not shrink the change (oscillation).
    tol : convergence when every overlap changes by less than ``tol`` relative in one update
        (``|dz| <= tol max(|z|, floor)`` componentwise, floors 1e-4, 1e-2, 1e-2, 1e-4 for
        ``q, m, V, theta``: ``m`` is zero up to rounding on the semantic branch).
    max_iter : iteration cap; :class:`StateEvolutionError` if reached.
    init : optional dict of (A,) initial ``q, m, V, theta`` (overrides the branch's default).

    Returns
    -------
    FixedRuleResult
        (A,) arrays (scalars for scalar ``alpha``), read by attribute or key like a dict: ``q, m, V,
        theta``, the conjugates, ``test_error`` (per sample, = mse / 2 of the published files),
        ``train_loss`` (empirical risk divided by ``d``: ``alpha E[ell(prox)] + lambda q / (2
        sigma^2)``; lower is the global minimum), ``n_iter`` and ``residual`` (last relative change),
        ``alpha``.

    Raises
    ------
    ValueError
        For bad arguments (named).
    StateEvolutionError
        If the iteration does not converge within ``max_iter`` updates.
    """
    alphas, scalar = check_alphas(alpha)
    model = check_model(omega=omega, sigma=sigma, lam=lam, A=A, branch=branch)
    rule = check_choice("rule", rule, RULES)
    n_nodes = _check_n_nodes(rule, n_nodes)
    damping = check_real("damping", damping, low=0.0, high=1.0, high_open=True)
    tol = check_real("tol", tol, low=0.0, low_open=True, high=1e-2)
    max_iter = check_int("max_iter", max_iter, minimum=1)

    state = _DampedIteration.start(alphas, model, init, damping)
    for it in range(max_iter):
        if state.update(it, rule=rule, n_nodes=n_nodes, tol=tol):
            break
    else:
        bad = alphas[state.active]
        raise StateEvolutionError(
            f"state evolution ({model.branch} branch, omega={model.omega}) did not converge within max_iter="
            f"{max_iter} iterations for alpha={bad.tolist()} (last relative change "
            f"{state.resid[state.active].max():.2e} > tol={tol}); try more iterations or more damping")
    out = state.result()
    return out.first() if scalar else out


# ----------------------------------------------------------------------------------------------
# the semantic branch along theta: a one-dimensional view of the fixed-point problem
# ----------------------------------------------------------------------------------------------
def theta_profile(alpha: float, thetas: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                  A: Any = ((0.6, 0.4), (0.4, 0.6)), rule: str = "gauss-hermite", n_nodes: int = 10,
                  tol: float = 1e-4, max_iter: int = 300) -> dict[str, np.ndarray]:
    """The semantic branch's fixed-point problem restricted to a line in ``theta``.

    For each ``theta`` of the grid, ``m = 0`` (swap-symmetric ``A``) and ``theta`` are held fixed
    and ``q, V`` are iterated to their fixed point (damping from 0.5, raised where an update
    oscillates; these two directions are well conditioned); then one more update gives the ``theta`` the equations return, ``F(theta)``. The
    state evolution's semantic fixed points are the roots of the residual
    ``g(theta) = F(theta) - theta``. Where ``g`` stays small over a wide range of ``theta`` the
    fixed point is ill-conditioned: a small error in the Gaussian averages moves the root far.

    Parameters
    ----------
    alpha : sample ratio (> 0).
    thetas : 1-D grid of semantic overlaps, each in ``(0, sigma^2)``; all solved at once.
    rule, n_nodes : quadrature, see :func:`quadrature_4d`.
    tol : inner convergence, relative change of the damped ``q`` and ``V`` per update.

    Returns
    -------
    dict of (T,) arrays ``theta, F_theta, residual, q, V, test_error, train_loss`` (train loss from
    the last update's proximal solutions, test error at ``(q, 0, theta)``) and the scalar ``root``:
    the first sign change of ``residual`` from positive to negative along the grid, linearly
    interpolated (NaN if none: then no stable semantic fixed point lies inside the grid).

    Raises
    ------
    ValueError for bad arguments; StateEvolutionError if the inner iteration does not converge.
    """
    alphas, scalar = check_alphas(alpha)
    if not scalar:
        raise ValueError("alpha must be a single number for theta_profile")
    omega, sigma, lam, A_, _ = check_model(omega=omega, sigma=sigma, lam=lam, A=A)
    if not np.allclose(A_, A_[::-1, ::-1]):
        raise ValueError("theta_profile needs a swap-symmetric A (A[::-1, ::-1] == A), so that m = 0")
    rule = check_choice("rule", rule, RULES)
    n_nodes = _check_n_nodes(rule, n_nodes)
    rho = sigma * sigma
    th = np.asarray(check_grid("thetas", list(np.atleast_1d(np.asarray(thetas, dtype=np.float64))),
                               kind="real", minimum=0.0, maximum=rho), dtype=np.float64)
    if np.any(th <= 0) or np.any(th >= rho):
        raise ValueError(f"thetas must lie in (0, sigma^2) = (0, {rho})")
    tol = check_real("tol", tol, low=0.0, low_open=True, high=1e-2)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    a = np.full(th.shape, alphas[0])
    # start from q with theta^2 / q well inside rho (V* > 0), V as on the branch's default start
    q0, _, V0, _ = _initial_point(alphas, "semantic", sigma)
    q = np.maximum(np.full(th.shape, q0[0]), 1.5 * th ** 2 / rho)
    V = np.full(th.shape, V0[0])
    zeros = np.zeros_like(th)
    kw = dict(omega=omega, sigma=sigma, lam=lam, A=A_, n_nodes=n_nodes, rule=rule)
    eta = np.full(th.shape, 0.5)  # damping, raised per theta when an update does not shrink the change
    prev = np.full(th.shape, np.inf)
    for _ in range(max_iter):
        up = se_update(a, q, zeros, V, th, **kw)
        qn = np.maximum(up["q"], 1.05 * th ** 2 / rho)  # stay in the admissible region
        rel = np.maximum(np.abs(qn / q - 1), np.abs(up["V"] / V - 1))
        # the change of the damped iterate: with a finite rule the update can jump (a node's
        # proximal minimiser switching branch), leaving a small undamped cycle around the fixed point
        ch = float(((1 - eta) * rel).max())
        if ch < tol:
            break
        eta = np.where(rel >= prev, np.minimum(0.97, 1 - 0.7 * (1 - eta)), eta)
        prev = rel
        q, V = eta * q + (1 - eta) * qn, eta * V + (1 - eta) * up["V"]
    else:
        raise StateEvolutionError(f"theta_profile: q, V did not converge within max_iter={max_iter} "
                                  f"updates at alpha={alphas[0]} (last relative change {ch:.2e})")
    up = se_update(a, q, zeros, V, th, **kw)
    g = up["theta"] - th
    from stumplib.core.stats import crossing
    root = crossing(th, g, 0.0, direction="down", which="first") if th.size >= 2 else float("nan")
    return dict(theta=th, F_theta=up["theta"], residual=g, q=q, V=V, test_error=up["test_error"],
                train_loss=up["train_loss"], root=root)
