"""The stumplib core against brute force, finite differences, Monte Carlo and definitions."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from stumplib import baselines
from stumplib.device import resolve_device
from stumplib.stats import fit_power_law
from stumplib.model import attention_weights, estimate, estimate_and_grad
from stumplib.population import (population_error, population_estimate, population_loss,
                                 population_loss_and_grad, population_moments, prior_quadrature)
from stumplib.book import resolve_profile, setup as setup_chapter
from stumplib.results_io import load_results, save_results
from stumplib.tasks import labels, reflect, sample_contexts, sample_tasks, sample_thresholds

# ---------------------------------------------------------------- model


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
    tau, x, y = sample_tasks(50, 40, tau_lo=0.2, tau_hi=0.8, seed=5, device="cpu")
    has_pos = y.sum(-1) > 0
    f = estimate(x, y, 1e6, 0.95e6)
    mp = baselines.min_positive(x, y)
    assert torch.allclose(f[has_pos], mp[has_pos], atol=1e-5)


def test_stable_at_huge_beta():
    _, x, y = sample_tasks(10, 50, seed=6, device="cpu")
    f, g1, g2 = estimate_and_grad(x, y, 1e8, 0.9e8)
    assert torch.isfinite(f).all() and torch.isfinite(g1).all() and torch.isfinite(g2).all()


# ---------------------------------------------------------------- population


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
    nodes, weights = prior_quadrature(torch.tensor([30.0]), torch.tensor([25.0]), 0.2, 0.8)
    assert weights.sum().item() == pytest.approx(1.0, rel=1e-12)
    assert nodes.min() >= 0.2 and nodes.max() <= 0.8


# ---------------------------------------------------------------- tasks, reflection


def test_tasks_shapes_labels_and_determinism():
    tau, x, y = sample_tasks(7, 11, 0.3, 0.6, seed=9, device="cpu")
    assert tau.shape == (7,) and x.shape == y.shape == (7, 11)
    assert (tau >= 0.3).all() and (tau <= 0.6).all()
    assert torch.equal(y, (x >= tau[:, None]).double())
    tau2, x2, _ = sample_tasks(7, 11, 0.3, 0.6, seed=9, device="cpu")
    assert torch.equal(tau, tau2) and torch.equal(x, x2)
    assert not torch.equal(x, sample_tasks(7, 11, 0.3, 0.6, seed=10, device="cpu")[1])


def test_reflection_maps_tau_to_one_minus_tau():
    tau, x, y = sample_tasks(20, 30, 0.0, 1.0, seed=12, device="cpu")
    xr, yr = reflect(x, y)
    # reflected labels are the stump labels of 1 - tau (ties x = tau have probability 0)
    assert torch.equal(yr, labels(xr, 1 - tau))
    # the head applied to the reflection, mapped back, is the mirror estimate
    f_ref = 1 - estimate(xr, yr, 1e6, 0.99e6)
    has_neg = y.sum(-1) < y.shape[-1]
    assert torch.allclose(f_ref[has_neg], baselines.max_negative(x, y)[has_neg], atol=1e-5)


# ---------------------------------------------------------------- baselines


def test_baselines_match_definitions():
    tau, x, y = sample_tasks(30, 15, seed=13, device="cpu")
    for j in range(30):
        xs, ys = x[j].tolist(), y[j].tolist()
        pos = [a for a, l in zip(xs, ys) if l == 1]
        neg = [a for a, l in zip(xs, ys) if l == 0]
        mp = min(pos) if pos else 1.0
        mn = max(neg) if neg else 0.0
        assert baselines.min_positive(x, y)[j].item() == mp
        assert baselines.max_negative(x, y)[j].item() == mn
        assert baselines.midpoint(x, y)[j].item() == pytest.approx((mp + mn) / 2)
        assert baselines.bayes_posterior_mean(x, y, 0.2, 0.8)[j].item() == pytest.approx(
            (max(mn, 0.2) + min(mp, 0.8)) / 2)
        assert baselines.erm_stump(x, y)[j].item() == pytest.approx((mp + mn) / 2)


def test_erm_stump_with_noisy_labels_minimises_errors():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(40, 12, generator=g)
    y = (x >= 0.5).double()
    flip = torch.rand(40, 12, generator=g) < 0.2
    y = torch.where(flip, 1 - y, y)
    t = baselines.erm_stump(x, y)
    for j in range(40):
        errs = lambda th: int(((x[j] >= th).double() != y[j]).sum())
        candidates = [0.0] + sorted(x[j].tolist()) + [1.0]
        best = min(errs(c) for c in candidates + [1.0 + 1e-9])
        assert errs(t[j].item()) == best


def test_bayes_has_lowest_mse_on_shared_sample():
    tau, x, y = sample_tasks(40000, 10, 0.2, 0.8, seed=14, device="cpu")
    mse = {name: ((fn(x, y, 0.2, 0.8) - tau) ** 2).mean().item() for name, fn in baselines.BASELINES.items()}
    mse["attention"] = ((estimate(x, y, 200.0, 170.0) - tau) ** 2).mean().item()
    for name, v in mse.items():
        if name != "Bayes":
            assert mse["Bayes"] < v, (name, mse)


def test_order_statistic_mse_rates():
    """Interior tau: min-positive MSE ~ 2/N^2, midpoint ~ 1/(2 N^2)."""
    N = 400
    tau = torch.full((20000,), 0.5)
    x, y = sample_contexts(tau, N, seed=15)
    mse_mp = ((baselines.min_positive(x, y) - tau) ** 2).mean().item() * N ** 2
    mse_mid = ((baselines.midpoint(x, y) - tau) ** 2).mean().item() * N ** 2
    assert mse_mp == pytest.approx(2.0, rel=0.06)
    assert mse_mid == pytest.approx(0.5, rel=0.06)


# ---------------------------------------------------------------- fitting, io, profiles


def test_fit_power_law_recovers_exponent_and_covers():
    rng = np.random.default_rng(0)
    x = np.geomspace(1, 1e4, 30)
    covered = 0
    for rep in range(40):
        y = 3.0 * x ** -0.25 * np.exp(rng.normal(0, 0.05, x.size))
        fit = fit_power_law(x, y, n_boot=400, seed=rep)
        covered += fit.contains(-0.25)
    assert abs(fit.slope + 0.25) < 0.02 and fit.prefactor == pytest.approx(3.0, rel=0.2)
    assert covered >= 32  # nominal 95% of 40 = 38; bootstrap intervals run a bit narrow


def test_results_io_roundtrip_and_mismatch(tmp_path):
    p = tmp_path / "r.npz"
    save_results(p, {"a": np.arange(3)}, {"m": 4, "grid": [1, 2]})
    assert np.array_equal(load_results(p, {"m": 4, "grid": [1, 2]})["a"], np.arange(3))
    assert load_results(p, {"m": 5, "grid": [1, 2]}) is None
    assert load_results(tmp_path / "missing.npz", {}) is None


def test_resolve_profile_and_device():
    assert resolve_profile("quick") == "quick"
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in ("cpu", "cuda")
    prof, dev = setup_chapter("smoke", "cpu", 0)
    assert prof == "smoke" and dev.type == "cpu"


# ---------------------------------------------------------------- validation


BAD = [
    (lambda: sample_thresholds(0), "num_tasks"),
    (lambda: sample_thresholds(3.0), "num_tasks"),
    (lambda: sample_thresholds(3, 0.8, 0.2), "tau_lo"),
    (lambda: sample_thresholds(3, -0.1, 0.5), "tau_lo"),
    (lambda: sample_thresholds(3, 0.1, float("nan")), "tau_hi"),
    (lambda: sample_tasks(-1, 5), "m"),
    (lambda: sample_tasks(5, 0), "n"),
    (lambda: sample_tasks(5, 5, device="tpu"), "device"),
    (lambda: sample_tasks(5, 5, seed=-1, device="cpu"), "seed"),
    (lambda: sample_contexts(torch.tensor([1.5]), 4), "tau"),
    (lambda: sample_contexts(torch.tensor([float("nan")]), 4), "tau"),
    (lambda: estimate(torch.rand(2, 3), torch.zeros(2, 3), float("nan"), 1.0), "beta"),
    (lambda: estimate(torch.rand(2, 3), torch.zeros(2, 3), 1.0, float("inf")), "b"),
    (lambda: estimate(torch.rand(2, 3), torch.zeros(2, 4), 1.0, 1.0), "x and y"),
    (lambda: population_estimate(1.2, 1.0, 1.0), "tau"),
    (lambda: population_loss(float("nan"), 1.0), "beta"),
    (lambda: population_loss(1.0, 1.0, 0.5, 0.5), "tau_lo"),
    (lambda: baselines.bayes_posterior_mean(torch.rand(2, 3), torch.zeros(2, 3), 0.9, 0.1), "tau_lo"),
    (lambda: fit_power_law([1, 2], [1, 2]), "x"),
    (lambda: fit_power_law([1, 2, 3], [1, -2, 3]), "x and y"),
    (lambda: resolve_profile("fast"), "profile"),
    (lambda: resolve_device("gpu"), "device"),
]


@pytest.mark.parametrize("call,name", BAD, ids=[f"{i}-{n}" for i, (_, n) in enumerate(BAD)])
def test_bad_input_raises_value_error_naming_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_requested_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA is not available"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="CUDA is not available"):
        sample_tasks(3, 3, device="cuda:0")
