"""Tests of stumplib.phase.solver_qmc: the scrambled Sobol rules, pooled and nested, and the
state-evolution update on them."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase.replica import UpdateOptions, se_update
from stumplib.phase.setting import check_model
from stumplib.phase.solver_qmc import (nested_values, pooled_nodes, pooled_update, scrambled_rules,
                                       update_from_averages)

KW = dict(omega=0.3, sigma=0.5, lam=0.01, A=np.array([[0.6, 0.4], [0.4, 0.6]]))
Z = np.array([0.06, 0.0, 14.0, 0.08])  # a semantic point (q, m, V, theta) near alpha = 2


def test_scrambled_rules_are_independent_equal_weight_and_nested():
    """``K`` different scramblings of ``2**p`` normal nodes with equal weights; the first
    ``2**(p-1)`` points of a scrambling are its ``2**(p-1)`` rule (what the solver relies on to
    carry minimisers to a finer rule)."""
    nodes, w = scrambled_rules(8, 3, seed=1)
    assert nodes.shape == (3, 256, 4) and w.shape == (3, 256) and np.allclose(w.sum(1), 1.0)
    assert not np.allclose(nodes[0], nodes[1])
    coarse, _ = scrambled_rules(7, 3, seed=1)
    np.testing.assert_array_equal(nodes[:, :128], coarse)
    assert abs(nodes.reshape(-1, 4).mean()) < 0.05 and abs(nodes.std() - 1) < 0.05
    np.testing.assert_array_equal(pooled_nodes(8, 3, 1), nodes.reshape(-1, 4))


def test_nested_values_carry_to_a_finer_and_to_a_coarser_rule():
    K = 2
    prev = np.arange(K * 4 * 2, dtype=float).reshape(K * 4, 2)  # 2**2 points per scrambling
    fine, known = nested_values(prev, 2, 3, K, np.nan)
    assert fine.shape == (K * 8, 2) and known.tolist() == ([True] * 4 + [False] * 4) * K
    np.testing.assert_array_equal(fine[known], prev)
    assert np.isnan(fine[~known]).all()
    coarse, none = nested_values(prev, 2, 1, K, 0.0)
    assert none is None
    np.testing.assert_array_equal(coarse, prev.reshape(K, 4, 2)[:, :2].reshape(-1, 2))


def test_pooled_update_is_the_update_on_the_pooled_rule_and_on_each_scrambling():
    """With every default start, the pooled row is :func:`se_update` on all ``K N`` nodes with equal
    weights, and scrambling ``k``'s row is :func:`se_update` on its own block (to rounding: the
    averages are summed in another order)."""
    K, p, alpha = 3, 8, 2.0
    nodes = pooled_nodes(p, K, 0)
    ev = pooled_update(alpha, Z[None], nodes, K, KW, None, None, restart=True)
    assert ev["pooled"].shape == (1, 6) and ev["per"].shape == (1, K, 6)
    assert ev["prox"].shape == (1, K * 2 ** p, 2)
    keys = ("q", "m", "V", "theta")
    ref = se_update(alpha, *Z, model=check_model(**KW),
                    options=UpdateOptions(nodes=nodes, weights=np.full(len(nodes), 1 / len(nodes)),
                                          with_test_error=False))
    got = ev["pooled"][0]
    np.testing.assert_allclose(got[:4], [ref[k][0] for k in keys], rtol=1e-9, atol=1e-14)
    assert got[5] == pytest.approx(ref["train_loss"][0], rel=1e-9)
    for k in range(K):
        block = nodes[k * 2 ** p:(k + 1) * 2 ** p]
        own = se_update(alpha, *Z, model=check_model(**KW),
                        options=UpdateOptions(nodes=block, weights=np.full(2 ** p, 2.0 ** -p),
                                              with_test_error=False))
        np.testing.assert_allclose(ev["per"][0, k, :4], [own[c][0] for c in keys], rtol=1e-9,
                                   atol=1e-14)
    # the test error and the train loss are averages: the pooled one is the blocks' mean
    assert got[4] == pytest.approx(ev["per"][0, :, 4].mean(), rel=1e-12)


def test_update_from_averages_gives_the_update_at_another_alpha():
    """The integrands do not depend on alpha: the update at alpha = 1.8 from the averages taken at
    alpha = 2 is the update evaluated at alpha = 1.8."""
    K, p = 3, 7
    nodes = pooled_nodes(p, K, 0)
    ev2 = pooled_update(2.0, Z[None], nodes, K, KW, None, None, restart=True)
    ev18 = pooled_update(1.8, Z[None], nodes, K, KW, None, None, restart=True)
    got = update_from_averages(1.8, ev2["avg"], Z[0:1], Z[2:3], Z[3:4], ev2["vstar"], KW["lam"],
                               KW["sigma"] ** 2, (1,))
    np.testing.assert_allclose(got, ev18["pooled"], rtol=1e-12)
