"""Chapter 5: reflection, symmetrized estimators, boundary statistics (stumplib.stump.boundary)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.stump.boundary import (ESTIMATORS, boundary_excess, combine, estimate_all, exact_mse,
                               interior_ratio, mse_profile, profile_errors, reflected_estimate,
                               side_empty_probability, threshold_grid)
from stumplib.core.stats import Estimate, ratio_of_means
from stumplib.stump import boundary as B
from stumplib.stump.baselines import max_negative, midpoint
from stumplib.stump.model import estimate
from stumplib.stump.tasks import labels, reflect, sample_contexts


def _rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g, dtype=torch.float64)


def test_reflection_maps_threshold_tau_to_one_minus_tau():
    tau = _rand(500, seed=1)
    x, y = sample_contexts(tau, 20, seed=2)
    xr, yr = reflect(x, y)
    # the reflected context is a stump context of threshold 1 - tau (ties x = tau have probability 0)
    assert torch.equal(yr, labels(xr, 1.0 - tau))
    assert not torch.equal(yr, labels(xr, tau))  # and not of tau itself
    # the reflected estimate is the head on the reflected context, read back
    f_ref = reflected_estimate(x, y, 30.0, 33.0)
    assert torch.allclose(f_ref, 1.0 - estimate(xr, yr, 30.0, 33.0))
    # in the sharp limit it is the largest negative example (contexts with a negative example)
    has_neg = (y < 0.5).any(-1)
    f_sharp = reflected_estimate(x, y, 1e6, 1.1e6)
    assert torch.allclose(f_sharp[has_neg], max_negative(x, y)[has_neg], atol=1e-5)


@pytest.mark.parametrize("beta,b", [(3.0, 2.0), (40.0, 44.0), (5000.0, 5500.0), (1e6, 1.1e6)])
def test_fast_paths_match_model_estimate(beta, b):
    """The profile fast path (sorted contexts, cumulative log-sum-exps) and the reflection path give
    exactly what the one definition of the estimator, ``model.estimate``, gives."""
    C, N = 150, 10
    x = _rand(C, N, seed=5)
    tau = torch.tensor([0.0, 0.003, 0.31, 0.5, 0.97, 1.0], dtype=torch.float64)
    fast = profile_errors(x, tau, beta, b, estimators=("one-head", "reflected"))
    atol = 1e-11 * max(1.0, beta / 1e4)  # rounding of beta * x, relative 1e-16, grows with beta
    for t in range(tau.shape[0]):
        y = labels(x, tau[t].expand(C))
        f = estimate(x, y, beta, b)
        f_ref = 1.0 - estimate(1.0 - x, 1.0 - y, beta, b)
        assert torch.allclose(fast["one-head"][t], f - tau[t], atol=atol, rtol=0), t
        assert torch.allclose(fast["reflected"][t], f_ref - tau[t], atol=atol, rtol=0), t
        assert torch.allclose(reflected_estimate(x, y, beta, b), f_ref, atol=1e-13, rtol=0), t


@pytest.mark.parametrize("beta,b", [(3.0, 2.0), (40.0, 44.0), (5000.0, 5500.0)])
def test_fast_profile_matches_the_literal_definitions(beta, b):
    C, N = 200, 12
    x = _rand(C, N, seed=3)
    tau = torch.cat([torch.linspace(0, 1, 21, dtype=torch.float64), torch.tensor([0.013, 0.987])])
    fast = profile_errors(x, tau, beta, b)
    for t in range(tau.shape[0]):
        y = labels(x, tau[t].expand(C))
        ref = estimate_all(x, y, beta, b)
        for name in ESTIMATORS:
            assert torch.allclose(fast[name][t], ref[name] - tau[t], atol=1e-11, rtol=0), (name, t)
        assert torch.equal(fast["n_pos"][t], (y > 0.5).sum(-1))


@pytest.mark.parametrize("beta,b", [(24.0, 26.0), (64.0, 70.0)])
def test_bayes_beats_every_estimator_on_shared_samples(beta, b):
    # tau from the prior [0, 1]; the Bayes posterior mean minimises the MSE, and the excess of any
    # estimator g is E (g - Bayes)^2 (posterior-mean orthogonality), checked within sampling error
    M, N = 40000, 16
    tau = _rand(M, seed=4)
    x, y = sample_contexts(tau, N, seed=5)
    est = estimate_all(x, y, beta, b)
    e_bayes = est["Bayes"] - tau
    assert torch.allclose(est["midpoint"], est["Bayes"])  # the same estimator under the prior [0, 1]
    mse_bayes = (e_bayes ** 2).mean()
    for name in ESTIMATORS:
        if name in ("Bayes", "midpoint"):
            continue
        e = est[name] - tau
        assert (e ** 2).mean() > mse_bayes, name
        d = e ** 2 - e_bayes ** 2 - (est[name] - est["Bayes"]) ** 2  # mean zero
        assert abs(d.mean()) < 4 * d.std() / M ** 0.5, name


def test_four_fold_ratio_on_order_statistics_large_N():
    N, C = 300, 12000
    x = _rand(C, N, seed=6)
    tau = torch.linspace(0.2, 0.8, 25, dtype=torch.float64)
    err = profile_errors(x, tau, 1.0, 1.0, estimators=("min positive", "midpoint"))
    r = interior_ratio(err["min positive"], err["midpoint"], tau, n_boot=500)
    assert r.contains(4.0), r
    assert abs(r.value - 4.0) < 0.1
    # and the levels: MSE ~ 2/N^2 and ~ 1/(2 N^2) (exactly 2/((N+1)(N+2)) and 1/(2(N+1)(N+2)))
    for name, exact in (("min positive", 2.0), ("midpoint", 0.5)):
        e2 = (err[name] ** 2).mean(0)  # per context, averaged over tau
        level = e2.mean().item() * (N + 1) * (N + 2)
        se = e2.std().item() / C ** 0.5 * (N + 1) * (N + 2)
        assert abs(level - exact) < 4 * se, (name, level, se)


@pytest.mark.parametrize("N", [5, 20])
def test_exact_sharp_mse_matches_monte_carlo_including_the_boundary(N):
    C = 40000
    x = _rand(C, N, seed=7)
    tau = torch.tensor([0.0, 0.03, 0.5, 0.9, 0.97, 1.0], dtype=torch.float64)
    err = profile_errors(x, tau, 1e7, 1.1e7, estimators=("one-head", "min positive", "midpoint"))
    for name in ("one-head", "min positive", "midpoint"):
        mse, se = mse_profile(err[name])
        exact = exact_mse(name, tau.numpy(), N)
        assert np.all(np.abs(mse - exact) <= 5 * se + 1e-12), (name, mse, exact, se)
    # the one-head error jumps at the upper end: MSE(tau = 1) = N / (N + 2) exactly
    assert exact_mse("one-head", 1.0, N) == pytest.approx(N / (N + 2))
    # interior levels
    assert exact_mse("min positive", 0.5, 400) * 401 * 402 == pytest.approx(2.0, rel=1e-9)
    assert exact_mse("midpoint", 0.5, 400) * 401 * 402 == pytest.approx(0.5, rel=1e-9)


def test_side_empty_probability_matches_counts():
    N, C = 10, 50000
    x = _rand(C, N, seed=8)
    tau = torch.tensor([0.5, 0.8, 0.95], dtype=torch.float64)
    n_pos = profile_errors(x, tau, 1.0, 1.0, estimators=("midpoint",))["n_pos"]
    p = side_empty_probability(tau.numpy(), N)
    freq = (n_pos == 0).double().mean(1).numpy()
    assert np.all(np.abs(freq - p["no_positive"]) < 4 * np.sqrt(p["no_positive"] / C) + 1e-4)
    assert np.all(p["no_positive"] <= p["tail"])  # tau^N <= exp(-N (1 - tau))


def test_symmetrized_sharp_head_tends_to_the_midpoint():
    N, C = 16, 1500
    tau = _rand(C, seed=9)
    x, y = sample_contexts(tau, N, seed=10)
    both = ((y > 0.5).any(-1)) & ((y < 0.5).any(-1))
    gaps = []
    for beta in (1e2, 1e4, 1e7):
        est = estimate_all(x, y, beta, 1.1 * beta, estimators=("symmetrized", "boundary-aware", "Bayes"))
        gaps.append((est["symmetrized"] - midpoint(x, y))[both].abs().max().item())
        if beta == 1e7:
            assert torch.allclose(est["boundary-aware"], est["Bayes"], atol=1e-6)
    assert gaps[-1] < 1e-6
    assert gaps[0] > gaps[1] > gaps[2]
    # the plain average does not reach the Bayes estimator when one side is empty
    est = estimate_all(x, y, 1e7, 1.1e7, estimators=("symmetrized", "Bayes"))
    if bool((~both).any()):
        assert (est["symmetrized"] - est["Bayes"])[~both].abs().max() > 1e-2


def test_boundary_excess_of_the_sharp_head_matches_theory():
    N, C = 32, 5000
    x = _rand(C, N, seed=11)
    tau = torch.cat([torch.linspace(0.2, 0.8, 13), 1 - torch.arange(0, 9) / (4.0 * N)]).double()
    err = profile_errors(x, tau, 20.0 * N, 22.0 * N, estimators=("one-head", "boundary-aware"))
    r = boundary_excess(err["one-head"], tau, N, n_boot=300)
    ex = exact_mse("one-head", tau.numpy(), N)
    interior = (tau <= 0.8).numpy()
    pred = ex[~interior].max() / ex[interior].mean()
    assert r.value > 100
    assert abs(r.value / pred - 1) < 0.1
    # combining with the reflection and the range ends removes the excess
    assert boundary_excess(err["boundary-aware"], tau, N, n_boot=300).value < 1.5


def test_combination_rules():
    f = torch.tensor([0.6, 0.1, 0.95])
    fr = torch.tensor([0.5, 0.05, 0.9])
    n_pos = torch.tensor([4, 0, 10])
    N = 10
    assert torch.allclose(combine(f, fr, n_pos, N, "symmetrized"), (f + fr) / 2)
    assert torch.allclose(combine(f, fr, n_pos, N, "count-weighted"),
                          torch.tensor([0.4 * 0.6 + 0.6 * 0.5, 0.05, 0.95]))
    # no positive: the upper end is the range end 1; no negative: the lower end is 0
    assert torch.allclose(combine(f, fr, n_pos, N, "boundary-aware"), torch.tensor([0.55, 0.525, 0.475]))


def test_ratio_of_means_interval():
    a = _rand(4000, seed=12) * 4
    b = _rand(4000, seed=13)
    r = ratio_of_means(a, b, n_boot=500)
    assert isinstance(r, Estimate) and r.kind == "bootstrap"
    assert r.ci[0] < r.value < r.ci[1]
    assert r.contains(4.0)
    assert r.ci[1] - r.ci[0] < 0.5


def test_boundary_excess_interval_is_a_bootstrap_over_contexts():
    """The interval brackets the value and narrows like 1/sqrt(C) (4x contexts: about half)."""
    N = 32
    tau = threshold_grid(41, N)
    widths = []
    for C in (500, 2000):
        x = torch.rand(C, N, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
        err = profile_errors(x, tau, 1e4 * N, 1.1e4 * N, ("one-head",))
        r = boundary_excess(err["one-head"], tau, N, n_boot=400, seed=1)
        assert r.lo <= r.value <= r.hi
        widths.append(r.hi - r.lo)
    assert 0.3 < widths[1] / widths[0] < 0.8


def test_corpus_ratios_pool_the_corpora_with_one_interval():
    """One head: the pooled ratio is the head's own interior ratio (same contexts, same value); two
    heads of very different scale: one number for both, with an interval over corpora that holds
    each head's value between its ends' reach and stays above 0."""
    g = torch.Generator().manual_seed(3)
    x = torch.rand(300, 32, generator=g, dtype=torch.float64)
    tau = B.threshold_grid(31, 32)
    one = B.corpus_ratios(x, tau, [[40.0, 44.0]], n_boot=200)
    err = B.profile_errors(x, tau, 40.0, 44.0, ("one-head", "symmetrized"))
    ref = B.interior_ratio(err["one-head"], err["symmetrized"], tau, n_boot=200)
    assert one["ratio_sym"].value == pytest.approx(ref.value, rel=1e-12) and one["n_corpora"] == 1
    two = B.corpus_ratios(x, tau, [[10.0, 11.0], [400.0, 440.0]], n_boot=200)
    r = two["ratio_sym"]
    assert 0 < r.lo <= r.value <= r.hi and two["ratio_bayes"].lo > 0
    soft = B.corpus_ratios(x, tau, [[10.0, 11.0]], n_boot=50)["ratio_sym"].value
    sharp = B.corpus_ratios(x, tau, [[400.0, 440.0]], n_boot=50)["ratio_sym"].value
    assert min(soft, sharp) < r.value < max(soft, sharp)
    with pytest.raises(ValueError, match="heads"):
        B.corpus_ratios(x, tau, [1.0, 2.0])
