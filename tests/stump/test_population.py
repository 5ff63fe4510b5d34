"""Exact N -> infinity quantities (``stumplib.stump.population``) against Monte Carlo, finite differences,
known limits and dense quadrature."""
from __future__ import annotations

import math

import pytest
import torch

from stumplib.stump.model import estimate
from stumplib.stump.population import (population_error, population_estimate, population_loss,
                                 population_loss_and_grad, population_moments, prior_quadrature)
from stumplib.stump.tasks import sample_contexts
from stumplib.stump import Prior


def test_population_estimate_matches_monte_carlo():
    """f_pop(tau) against the mean of the finite-N estimate over many large contexts (the
    ratio estimator's O(1/N) bias is far below the tolerance at N = 20000)."""
    tau = torch.tensor([0.25, 0.5, 0.75])
    for beta, b in [(8.0, 6.0), (60.0, 55.0), (-4.0, 2.0)]:
        x, y = sample_contexts(tau.repeat(400, 1), 20000, seed=11)
        f = estimate(x, y, beta, b)
        mean, se = f.mean(0), f.std(0) / math.sqrt(f.shape[0])
        pop = population_estimate(tau, beta, b)
        z = ((mean - pop) / se).abs()
        assert (z < 4.5).all(), (beta, b, z)


def test_population_derivatives_match_finite_differences():
    tau = torch.linspace(0.05, 0.95, 19)
    for beta, b in [(5.0, 0.0), (30.0, 27.0), (1e3, 850.0), (-2.0, 1.0), (1e-4, 0.3)]:
        mom = population_moments(tau, beta, b)
        h = 1e-6 * max(1.0, abs(beta))
        fdb = (population_estimate(tau, beta + h, b) - population_estimate(tau, beta - h, b)) / (2 * h)
        fdB = (population_estimate(tau, beta, b + h) - population_estimate(tau, beta, b - h)) / (2 * h)
        assert torch.allclose(-mom["var"], fdb, rtol=1e-5, atol=1e-10)
        assert torch.allclose(mom["cov"], fdB, rtol=1e-5, atol=1e-10)


def test_population_known_limits():
    tau = torch.tensor([0.3, 0.6])
    # beta = 0, b = 0: uniform attention, f = 1/2, Var = 1/12
    mom = population_moments(tau, 0.0, 0.0)
    assert torch.allclose(mom["f"], torch.full_like(tau, 0.5))
    assert torch.allclose(mom["var"], torch.full_like(tau, 1 / 12))
    # calibrated, large beta: f - tau -> (1 - tau) * mean of truncated exp ~ 1/beta
    beta = 1e5
    err = population_error(tau, beta, beta * 0.9)
    assert torch.allclose(err, torch.full_like(tau, 1 / beta), rtol=1e-6)


def test_population_loss_gradient_and_quadrature():
    for beta, b in [(5.0, 0.0), (50.0, 44.0), (400.0, 330.0), (5e4, 4.1e4)]:
        L, gb, gB = population_loss_and_grad(beta, b)
        h = 1e-5 * beta
        fd_b = (population_loss(beta + h, b) - population_loss(beta - h, b)) / (2 * h)
        fd_B = (population_loss(beta, b + h) - population_loss(beta, b - h)) / (2 * h)
        assert gb.item() == pytest.approx(fd_b.item(), rel=1e-5, abs=1e-20)
        assert gB.item() == pytest.approx(fd_B.item(), rel=1e-4, abs=1e-20)
        # dense uniform quadrature reference
        taus = torch.linspace(0.2, 0.8, 400001)
        e = population_error(taus, beta, b)
        ref = torch.trapezoid(e * e, taus) / 0.6
        assert L.item() == pytest.approx(ref.item(), rel=1e-6)
    nodes, weights = prior_quadrature(torch.tensor([30.0]), torch.tensor([25.0]), Prior(0.2, 0.8))
    assert weights.sum().item() == pytest.approx(1.0, rel=1e-12)
    assert nodes.min() >= 0.2 and nodes.max() <= 0.8
