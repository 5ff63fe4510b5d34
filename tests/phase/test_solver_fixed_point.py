"""Tests of stumplib.phase.solver_fixed_point: the pooled rule's fixed point by a quasi-Newton
method, the continuation predictor, the finite differences at the accepted point."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase.replica import initial_point
from stumplib.phase.solver_fixed_point import (admissible, constrain, jacobian_pass, predict_start,
                                               solve_pooled)
from stumplib.phase.solver_qmc import pooled_nodes, pooled_update

KW = dict(omega=0.3, sigma=0.5, lam=0.01, A=np.array([[0.6, 0.4], [0.4, 0.6]]))
SEMANTIC_FREE = np.array([True, False, True, True])  # m = 0 imposed (swap-symmetric A)


def test_admissible_and_constrain():
    rho = 0.25
    assert admissible(np.array([0.06, 0.0, 14.0, 0.08]), rho)
    assert not admissible(np.array([0.06, 0.0, -1.0, 0.08]), rho)  # V <= 0
    assert not admissible(np.array([0.06, 0.0, 14.0, 0.2]), rho)  # theta^2 >= rho q
    assert not admissible(np.array([np.nan, 0.0, 14.0, 0.0]), rho)
    z = np.array([[0.1, 0.2, 3.0, 0.04]])
    np.testing.assert_array_equal(constrain(z, "positional", np.ones(4, bool)),
                                  [[0.1, 0.2, 3.0, 0.0]])
    np.testing.assert_array_equal(constrain(z, "semantic", SEMANTIC_FREE), [[0.1, 0.0, 3.0, 0.04]])
    np.testing.assert_array_equal(constrain(z, "semantic", np.ones(4, bool)), z)


@pytest.fixture(scope="module")
def solved():
    K, p, alpha = 3, 8, 2.0
    nodes = pooled_nodes(p, K, 0)
    z0 = np.array([v[0] for v in initial_point(np.array([alpha]), "semantic", 0.5)])
    r = solve_pooled(alpha, z0, nodes, K, free=SEMANTIC_FREE, branch="semantic", kw=KW, rho=0.25,
                     ftol=1e-7, max_updates=200, warm=None, known=None, jac=None)
    return alpha, nodes, K, r


def test_solve_pooled_reaches_a_fixed_point_of_the_pooled_update(solved):
    """Converged with globally verified minimisers: the pooled update at the returned point gives
    the point back to the tolerance, with its Jacobian on the free overlaps."""
    alpha, nodes, K, r = solved
    assert r["status"] == "converged" and r["z"][1] == 0 and r["z"][3] > 0.05
    assert r["jac"].shape == (3, 3) and r["prox"].shape == (len(nodes), 2)
    F = pooled_update(alpha, r["z"][None], nodes, K, KW, None, None, restart=True)["pooled"][0, :4]
    fi = np.flatnonzero(SEMANTIC_FREE)
    assert np.max(np.abs(F[fi] / r["z"][fi] - 1)) < 1e-5


def test_jacobian_pass_matches_the_solver_jacobian(solved):
    """The forward differences at the accepted point give the Jacobian of the update on the free
    overlaps (on the first 2**11 points of each scrambling: here all of them) and the central
    difference along the suppressed direction m (below -1 at alpha = 2, as
    ``tests/phase/test_solver.py`` finds with the full solver)."""
    alpha, nodes, K, r = solved
    jp = jacobian_pass(alpha, r["z"], nodes, K, free=SEMANTIC_FREE, branch="semantic", kw=KW,
                       prox=r["prox"], stability=True)
    fi = np.flatnonzero(SEMANTIC_FREE)
    J = ((jp["ev"]["pooled"][:, :4] - jp["base"][:4]) / jp["h"][:, None]).T[fi]
    np.testing.assert_allclose(J, r["jac"], atol=0.05 * np.abs(r["jac"]).max())
    assert jp["js"] == 1 and jp["n"] == fi.size + 1 + 2
    assert jp["stab"]["pooled"].shape == (2,) and jp["stab"]["per"].shape == (2, K)
    up, dn = jp["stab"]["pooled"]
    assert (up - dn) / (2 * jp["eps"]) < -1  # dF_m/dm at m = 0: the undamped update oscillates


def test_predict_start_extrapolates_a_quadratic_exactly():
    """Three points of one rule on a quadratic in alpha: the start at the next alpha is the
    quadratic there; without a shared rule and without a Jacobian, the last point."""
    a = np.array([2.0, 1.9, 1.8])
    zs = [np.array([0.05 + 0.01 * x ** 2, 0.0, 14.0 - x, 0.07 + 0.001 * x]) for x in a]
    hist = [(x, z, None, 10, None) for x, z in zip(a, zs)]
    z0, jac = predict_start(1.7, hist, 10, "semantic", SEMANTIC_FREE, 0.25, 0.01)
    np.testing.assert_allclose(z0, [0.05 + 0.01 * 1.7 ** 2, 0.0, 14.0 - 1.7, 0.07 + 0.0017],
                               rtol=1e-12)
    assert jac is None
    z0, _ = predict_start(1.7, hist, 11, "semantic", SEMANTIC_FREE, 0.25, 0.01)  # a finer rule
    np.testing.assert_array_equal(z0, zs[-1])
