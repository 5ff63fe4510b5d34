"""Tests of ``stumplib.phase.proximal``: the two-dimensional proximal step against finite differences,
brute force and a global reference."""
from __future__ import annotations

import math

import numpy as np

from stumplib.phase.proximal import prox_objective_and_derivatives, proximal, proximal_bfgs
from stumplib.phase.quadrature import stroud_secrest_4d
from stumplib.phase.setting import check_A, teacher_rows

from conftest import A0

#: the semantic branch's ill-conditioned window (see chapter 6)


def _random_problems(k=400, seed=0):
    rng = np.random.default_rng(seed)
    center = rng.normal(0, 0.6, (k, 2))
    t = rng.uniform(0.05, 0.95, (k, 2))
    V = rng.uniform(2.0, 30.0, k)
    return center, t, V


def test_prox_derivatives_match_finite_differences():
    c, t, V = _random_problems(50)
    x = np.random.default_rng(1).normal(0, 1, (50, 2))
    G, g, H = prox_objective_and_derivatives(x, c, t, V, 0.5)
    eps = 1e-6
    for j in range(2):
        e = np.zeros(2); e[j] = eps
        Gp, gp = prox_objective_and_derivatives(x + e, c, t, V, 0.5, order=1)
        Gm, gm = prox_objective_and_derivatives(x - e, c, t, V, 0.5, order=1)
        np.testing.assert_allclose((Gp - Gm) / (2 * eps), g[:, j], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose((gp - gm) / (2 * eps), H[:, :, j], rtol=1e-5, atol=1e-8)


def test_prox_is_stationary_and_no_worse_than_other_starts():
    c, t, V = _random_problems(200)
    x, G, gnorm = proximal(c, t, V, 0.5)
    assert np.all(gnorm < 1e-8)
    # minimum: positive semi-definite Hessian
    _, _, H = prox_objective_and_derivatives(x, c, t, V, 0.5)
    assert np.all(np.linalg.eigvalsh(H)[:, 0] > -1e-8)
    # no worse than a local search from each of 25 other starts (a grid)
    grid = [np.broadcast_to(np.array([u, v]), c.shape) for u in np.linspace(-2, 2, 5) for v in np.linspace(-2, 2, 5)]
    *_, Gs = proximal(c, t, V, 0.5, default_starts=False, match_starts=False, extra_starts=grid, return_all=True)
    assert Gs.shape == (25, 200) and np.all(G <= Gs.min(0) + 1e-9)
    # the brute-force minimum on a fine grid is not lower either
    xx = np.linspace(-3, 3, 241)
    P = np.stack(np.meshgrid(xx, xx, indexing="ij"), -1).reshape(-1, 1, 2)
    Gb = prox_objective_and_derivatives(P, c[None], t[None], V[None], 0.5, order=0).min(0)
    assert np.all(G <= Gb + 1e-9)


def test_bfgs_from_the_origin_finds_the_global_minimiser_where_newton_does_not():
    """At the 144 nodes, at overlaps on the authors' path (V = 50), BFGS with finite-difference
    gradients from the origin (scipy's default, their minimiser) reaches the multi-start global
    minimiser at every node, while a local Newton method from the origin stops in another basin at
    some nodes. Centres and teacher pre-activations from the model's definition:
    ``h = sqrt(q) xi + (m, -m)``, ``u = V* Y + theta xi / sqrt(q)``, ``V* = sqrt(sigma^2 - theta^2 / q)``."""
    nodes, _ = stroud_secrest_4d()
    q, m, V, th = 0.05, 0.0, 50.0, 0.0335
    xi, Y = nodes[:, :2], nodes[:, 2:]
    center = math.sqrt(q) * xi + np.array([m, -m])
    u = math.sqrt(0.25 - th ** 2 / q) * Y + th / math.sqrt(q) * xi
    t = teacher_rows(u, 0.3, check_A(A0))
    xg, _, _ = proximal(center, t, V, 0.5)
    xo, _, _ = proximal(center, t, V, 0.5, default_starts=False, match_starts=False,
                        extra_starts=[np.zeros_like(center)])
    xb = proximal_bfgs(center, t, V, 0.5)
    assert np.abs(xb - xg).max() < 1e-3, np.abs(xb - xg).max()
    assert (np.abs(xo - xg).max(1) > 1e-2).sum() >= 1


# ---------------------------------------------------------------- one update
