"""The estimator (``stumplib.stump.model``) against a brute-force loop, finite differences and its
sharp-attention limit."""
from __future__ import annotations

import math

import pytest
import torch

from stumplib.stump import baselines
from stumplib.stump.model import attention_weights, estimate, estimate_and_grad
from stumplib.stump.tasks import sample_tasks
from stumplib.stump import Prior


def _brute_estimate(x, y, beta, b):
    """Plain Python loop with exact rational-style evaluation in float64 via math.fsum."""
    s = [-beta * xi + b * yi for xi, yi in zip(x, y)]
    smax = max(s)
    e = [math.exp(si - smax) for si in s]
    Z = math.fsum(e)
    return math.fsum(ei * xi for ei, xi in zip(e, x)) / Z


@pytest.mark.parametrize("beta,b", [(0.0, 0.0), (3.0, 1.0), (50.0, 45.0), (-7.0, 2.0), (1e4, 9e3), (1e6, 8.5e5)])
def test_estimate_matches_brute_force_loop(beta, b):
    tau, x, y = sample_tasks(5, 17, seed=3, device="cpu")
    f = estimate(x, y, beta, b)
    for j in range(5):
        ref = _brute_estimate(x[j].tolist(), y[j].tolist(), beta, b)
        assert f[j].item() == pytest.approx(ref, rel=1e-12, abs=1e-14)


def test_estimate_batches_over_parameter_vectors():
    _, x, y = sample_tasks(4, 9, seed=1, device="cpu")
    beta = torch.tensor([[1.0], [10.0], [100.0]])
    b = torch.tensor([[0.5], [9.0], [90.0]])
    f = estimate(x, y, beta, b)
    assert f.shape == (3, 4)
    for p in range(3):
        assert torch.allclose(f[p], estimate(x, y, beta[p, 0].item(), b[p, 0].item()))
    w = attention_weights(x, y, beta, b)
    assert torch.allclose(w.sum(-1), torch.ones(3, 4))


def test_mask_equals_dropping_examples():
    _, x, y = sample_tasks(3, 12, seed=2, device="cpu")
    mask = torch.ones_like(x, dtype=torch.bool)
    mask[:, 7:] = False
    f, g1, g2 = estimate_and_grad(x, y, 30.0, 25.0, mask)
    f2, h1, h2 = estimate_and_grad(x[:, :7], y[:, :7], 30.0, 25.0)
    assert torch.allclose(f, f2) and torch.allclose(g1, h1) and torch.allclose(g2, h2)


@pytest.mark.parametrize("beta,b", [(2.0, 1.0), (40.0, 35.0), (300.0, 250.0), (-5.0, 3.0)])
def test_analytic_derivatives_match_finite_differences(beta, b):
    _, x, y = sample_tasks(6, 25, seed=4, device="cpu")
    f, g_beta, g_b = estimate_and_grad(x, y, beta, b)
    h = 1e-6 * max(1.0, abs(beta))
    fd_beta = (estimate(x, y, beta + h, b) - estimate(x, y, beta - h, b)) / (2 * h)
    fd_b = (estimate(x, y, beta, b + h) - estimate(x, y, beta, b - h)) / (2 * h)
    assert torch.allclose(g_beta, fd_beta, rtol=1e-5, atol=1e-9)
    assert torch.allclose(g_b, fd_b, rtol=1e-5, atol=1e-9)


def test_sharp_attention_is_min_positive():
    tau, x, y = sample_tasks(50, 40, prior=Prior(0.2, 0.8), seed=5, device="cpu")
    has_pos = y.sum(-1) > 0
    f = estimate(x, y, 1e6, 0.95e6)
    mp = baselines.min_positive(x, y)
    assert torch.allclose(f[has_pos], mp[has_pos], atol=1e-5)


def _brute_moments(x, y, beta, b):
    """``f``, ``Var_w(x)`` and ``Cov_w(x, y)`` by a plain loop (max-shifted weights, ``math.fsum``,
    centred sums)."""
    s = [-beta * xi + b * yi for xi, yi in zip(x, y)]
    smax = max(s)
    e = [math.exp(si - smax) for si in s]
    Z = math.fsum(e)
    f = math.fsum(ei * xi for ei, xi in zip(e, x)) / Z
    var = math.fsum(ei * (xi - f) ** 2 for ei, xi in zip(e, x)) / Z
    cov = math.fsum(ei * (xi - f) * yi for ei, xi, yi in zip(e, x, y)) / Z
    return f, var, cov


def _balanced_near_ties(beta: float):
    """Contexts where, at scale ``beta``, three examples carry comparable weight: the smallest
    positive ``x_p``, a second positive at ``x_p + 1/beta`` and the smallest ``x`` (a negative),
    with ``b`` per task chosen so that the two sides balance; ``(x, y, b)``."""
    _, x, y = sample_tasks(8, 40, prior=Prior(0.4, 0.6), seed=6, device="cpu")
    b = torch.empty(8)
    for j in range(8):
        pos = torch.nonzero(y[j] > 0).flatten()
        p = pos[x[j, pos].argmin()]
        other = pos[pos != p][0]
        x[j, other] = x[j, p] + 1.0 / beta
        b[j] = beta * (x[j, p] - x[j].min()) + 0.3
    return x, y, b


@pytest.mark.parametrize("beta", [1e4, 1e6, 1e8])
def test_value_and_derivatives_at_huge_beta_match_brute_force(beta):
    """At beta up to 1e8, with weight spread over a near tie (gap 1/beta) and both label sides, the
    estimate and both derivatives (``-Var_w``, ``Cov_w``) equal the brute-force centred sums."""
    x, y, b = _balanced_near_ties(beta)
    f, g_beta, g_b = estimate_and_grad(x, y, beta, b)
    for j in range(x.shape[0]):
        rf, rvar, rcov = _brute_moments(x[j].tolist(), y[j].tolist(), beta, b[j].item())
        assert rvar > 1e-3 and abs(rcov) > 1e-3  # the weights are spread: the test has teeth
        assert f[j].item() == pytest.approx(rf, rel=1e-12, abs=1e-15)
        assert g_beta[j].item() == pytest.approx(-rvar, rel=1e-7)
        assert g_b[j].item() == pytest.approx(rcov, rel=1e-7)
