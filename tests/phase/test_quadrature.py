"""Tests of ``stumplib.phase.quadrature``: the quadrature rules: the Sobol rule integrates normals, the
Stroud-Secrest rule is exact to degree seven."""
from __future__ import annotations

import itertools

import numpy as np

from stumplib.phase.quadrature import quadrature_4d, stroud_secrest_4d

#: the semantic branch's ill-conditioned window (see chapter 6)


def test_sobol_rule_is_a_normal_rule():
    """Moments of the Sobol rule: mean 0, identity covariance, E x^4 = 3 (to QMC accuracy)."""
    nodes, w = quadrature_4d("sobol", 14)
    assert nodes.shape == (2 ** 14, 4) and abs(w.sum() - 1) < 1e-12
    np.testing.assert_allclose(w @ nodes, 0, atol=5e-3)
    np.testing.assert_allclose((nodes * w[:, None]).T @ nodes, np.eye(4), atol=1e-2)
    np.testing.assert_allclose(w @ nodes ** 4, 3, rtol=3e-2)
    again, _ = quadrature_4d("sobol", 14)
    assert again is nodes or np.array_equal(again, nodes)


def test_stroud_secrest_rule_is_degree_seven():
    """The 144-node rule integrates every monomial of degree <= 7 of four standard normals exactly."""
    nodes, w = stroud_secrest_4d()
    assert nodes.shape == (144, 4) and abs(w.sum() - 1) < 1e-14
    mom = {0: 1, 1: 0, 2: 1, 3: 0, 4: 3, 5: 0, 6: 15, 7: 0}
    for e in itertools.product(range(8), repeat=4):
        if sum(e) <= 7 and max(e[0] + e[1], e[2] + e[3]) <= 7:
            exact = np.prod([mom[k] for k in e])
            got = float(w @ np.prod(nodes ** np.array(e), axis=1))
            assert abs(got - exact) < 1e-10, (e, got, exact)


# ---------------------------------------------------------------- proximal step
