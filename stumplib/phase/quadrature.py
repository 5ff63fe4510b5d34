"""Quadrature rules for four-dimensional Gaussian averages ``E f(xi_1, xi_2, Y_1, Y_2)``.

One job: nodes and weights. The tensor Gauss-Hermite rule, scrambled Sobol points mapped to normals
(randomised QMC, the accurate solver's rule), and the authors' 144-node Stroud-Secrest product rule
(used to replay their procedure).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from stumplib.core.validation import check_choice, check_int

RULES = ("gauss-hermite", "sobol", "stroud")

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

    ``rule="gauss-hermite"``: :func:`gauss_hermite_4d` with ``n_nodes`` nodes per axis (2 to 60 here;
    the entry points allow 4 to 30, :func:`check_n_nodes`).
    ``rule="sobol"``: :func:`sobol_normal_4d` with ``2**n_nodes`` points (``n_nodes`` 8 to 20), seed 0.
    ``rule="stroud"``: :func:`stroud_secrest_4d` (144 nodes; ``n_nodes`` ignored).

    Parameters
    ----------
    rule : str, optional
        One of :data:`RULES`: ``"gauss-hermite"`` (default), ``"sobol"`` or ``"stroud"``.
    n_nodes : int, optional
        The rule's size: nodes per axis for ``"gauss-hermite"`` (default 10), the base-2 logarithm
        of the number of points for ``"sobol"``; ignored by ``"stroud"``.

    Returns
    -------
    nodes : numpy.ndarray, shape ``(K, 4)``
        Standard normal nodes, columns ``xi_1, xi_2, Y_1, Y_2`` (read-only; ``K`` at most
        ``n_nodes**4`` after pruning, ``2**n_nodes`` or 144).
    weights : numpy.ndarray, shape ``(K,)``
        Positive weights summing to one (read-only).

    Raises
    ------
    ValueError
        For an unknown ``rule`` or an ``n_nodes`` out of its range.
    """
    rule = check_choice("rule", rule, RULES)
    if rule == "gauss-hermite":
        return gauss_hermite_4d(check_int("n_nodes", n_nodes, minimum=2, maximum=60))
    if rule == "stroud":
        return stroud_secrest_4d()
    return sobol_normal_4d(check_int("n_nodes", n_nodes, minimum=8, maximum=20))


def check_n_nodes(rule: str, n_nodes: Any) -> int:
    """Check a rule's size parameter at an entry point.

    Parameters
    ----------
    rule : one of :data:`RULES`.
    n_nodes : nodes per axis (``"gauss-hermite"``: 4 to 30) or log2 of the number of points
        (``"sobol"``: 8 to 20); ignored by ``"stroud"`` (a fixed rule).

    Returns
    -------
    int : the checked value (0 for ``"stroud"``).
    """
    if rule == "gauss-hermite":
        return check_int("n_nodes", n_nodes, minimum=4, maximum=30)
    if rule == "sobol":
        return check_int("n_nodes", n_nodes, minimum=8, maximum=20)
    return 0
