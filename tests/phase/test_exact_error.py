"""Tests of stumplib.phase.exact_error: the exact test error against its definition."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.phase.exact_error import exact_test_error
from stumplib.phase.problem import make_problem
from stumplib.phase import check_model


A = ((0.6, 0.4), (0.4, 0.6))


def _brute_force_test_error(Q, q_star, omega, sigma, n, seed):
    """Fresh tokens in all d dimensions, no reduction: the definition itself."""
    from stumplib.phase.data import positional_encodings, softmax_rows, teacher_matrix

    d = Q.shape[0]
    g = torch.Generator().manual_seed(seed)
    z = sigma * torch.randn(n, 2, d, generator=g, dtype=torch.float64)
    x = z + positional_encodings(d)
    S = softmax_rows(x @ Q / d ** 0.5)
    T = teacher_matrix(z, q_star, omega=omega, A=A)
    err = ((S @ x - T @ z) ** 2).sum((-1, -2)) / (2 * d)
    return float(err.mean()), float(err.std() / n ** 0.5)


@pytest.mark.parametrize("omega", [0.0, 0.3, 0.8])
def test_exact_test_error_matches_monte_carlo(omega):
    pb = make_problem(60, [0], 10, model=check_model(omega=omega))
    g = torch.Generator().manual_seed(3)
    Q = 0.8 * pb.q_star[0] + 0.5 * torch.randn(60, generator=g, dtype=torch.float64) + 0.7
    exact = exact_test_error(Q, pb.q_star[0], model=check_model(omega=omega, A=A))
    mc, se = _brute_force_test_error(Q, pb.q_star[0], omega, 0.5, 100_000, 1)
    assert abs(exact - mc) < 4 * se, (exact, mc, se)


def test_exact_test_error_converges_in_the_rule_and_batches():
    pb = make_problem(50, [0, 1, 2], 10, model=check_model(omega=0.3))
    Q = 0.9 * pb.q_star + 0.2
    a = exact_test_error(Q, pb.q_star, n_nodes=16, model=check_model(omega=0.3))  # the default rule
    b = exact_test_error(Q, pb.q_star, n_nodes=24, model=check_model(omega=0.3))
    np.testing.assert_allclose(a, b, rtol=1e-6)  # far below any seed-to-seed spread
    one = [exact_test_error(Q[i], pb.q_star[i], n_nodes=12, model=check_model(omega=0.3))
           for i in range(3)]
    a = exact_test_error(Q, pb.q_star, n_nodes=12, model=check_model(omega=0.3))
    np.testing.assert_allclose(a, one, rtol=1e-12)
