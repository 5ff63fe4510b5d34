"""Corpus gradient against population gradient along the path; the certified scale."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from stumplib.stump.population import population_loss_and_grad
from stumplib.book.studies.transfer import (TransferProfile, calibrated_label_score, certified_interval,
                                     crossing_scale, default_beta_grid, draw_corpus_batch,
                                     population_hessian, population_path, step_size_limit,
                                     transfer_profile)
from stumplib.stump.corpus_grad import corpus_grad


def test_calibrated_label_score_minimises_population_loss_in_b():
    betas = [8.0, 64.0, 1024.0]
    c = calibrated_label_score(betas)
    for beta, ci in zip(betas, c.tolist()):
        L0 = population_loss_and_grad(beta, ci * beta)[0]
        for d in (-2e-3, 2e-3):
            assert population_loss_and_grad(beta, (ci + d) * beta)[0] > L0
    # above the prior, decreasing towards tau_hi like log(beta)/beta
    assert c[0] > c[1] > c[2] > 0.8
    assert c[2] - 0.8 < 3 * math.log(1024) / 1024


def test_population_path_gradient_points_along_beta():
    p = population_path([16.0, 256.0])
    g = p["g"]
    assert bool((g[:, 0] < 0).all())  # progress increases beta
    assert bool((g[:, 1].abs() < 1e-6 * g[:, 0].abs()).all())


def test_corpus_gradient_tends_to_population_gradient_monte_carlo():
    """At a fixed point of the path, the mean corpus gradient approaches the population gradient
    as n grows (the bias), and the spread over corpora shrinks like 1/sqrt(m)."""
    betas = [8.0]
    path = population_path(betas)
    gp = path["g"][0, 0].item()
    prof_small = transfer_profile(32, 8, betas, n_corpora=64, device="cpu", path=path)
    prof_large = transfer_profile(32, 512, betas, n_corpora=64, device="cpu", path=path)
    bias_small = abs(prof_small.g_corpus[0, :, 0].mean() - gp)
    bias_large = abs(prof_large.g_corpus[0, :, 0].mean() - gp)
    se_large = prof_large.g_corpus[0, :, 0].std() / math.sqrt(64)
    assert bias_large < bias_small
    assert bias_large < 4 * se_large + 0.02 * abs(gp)  # consistent with zero bias at n = 512
    sd_m = [transfer_profile(m, 256, betas, n_corpora=48, device="cpu", path=path).g_corpus[0, :, 0].std()
            for m in (16, 256)]
    ratio = sd_m[0] / sd_m[1]
    # exactly sqrt(256 / 16) = 4 in expectation (a corpus gradient is a mean over m iid tasks); the
    # sampling error of a standard deviation from 48 corpora is sqrt((excess kurtosis + 2) / (4 48))
    # relative: 0.13 at m = 16 (measured excess kurtosis 1.3 over 768 corpora) and 0.10 at m = 256
    # (-0.2), so 0.166 in log(ratio); four of them: |log(ratio / 4)| < 0.66 (measured 0.45)
    assert abs(math.log(ratio / 4.0)) < 0.66, ratio


def test_transfer_profile_uses_the_trainer_gradient():
    tau, x, y = draw_corpus_batch(5, 7, 2, seed=3)
    prof = transfer_profile(5, 7, [10.0, 20.0], n_corpora=2, seed=3, device="cpu")
    b = prof.c[1] * 20.0
    _, gb, gbb = corpus_grad(x[1:2], y[1:2], tau[1:2], torch.tensor([20.0]), torch.tensor([b]))
    np.testing.assert_allclose(prof.g_corpus[1, 1], [gb.item(), gbb.item()], rtol=1e-12)


def test_certified_interval_on_synthetic_curves():
    betas = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    lo, hi = certified_interval(betas, [2.0, 0.25, 0.25, 1.0, 4.0], 0.5)
    assert lo == pytest.approx(2 ** (2 / 3)) and hi == pytest.approx(8 * 2 ** -0.5)
    assert crossing_scale(betas, [0.1, 0.1, 0.1, 0.1, 0.1], 0.5) == math.inf
    assert math.isnan(crossing_scale(betas, [1.0] * 5, 0.5))
    assert certified_interval(betas, [0.1, 0.2, 0.3, 0.4, 1.0], 0.5)[0] == 1.0


def test_certified_scale_grows_with_m_and_n_and_is_deterministic():
    grid = default_beta_grid(1.0, 2.0 ** 12, 4)

    def beta_star(m, n):
        return transfer_profile(m, n, grid, n_corpora=16, device="cpu").certified()

    a, b = beta_star(128, 128), beta_star(256, 256)
    assert 4.0 < a < b
    assert beta_star(128, 128) == a


def test_step_size_limit_grows_with_scale():
    lim = step_size_limit([16.0, 32.0, 64.0, 1024.0, 2048.0])
    assert np.all(np.diff(lim) > 0)
    # 2 / lambda_max grows like beta^3 with finite-beta corrections: per doubling of beta the
    # ratio is 6.16, 7.56 (deterministic: the constants below are printed to 8 digits, hence rtol
    # 1e-7) and 7.987
    # at 1024 -> 2048, tending to 2^3 = 8
    r = lim[[1, 2, 4]] / lim[[0, 1, 3]]
    np.testing.assert_allclose(r, [6.1563137, 7.5645416, 7.9874653], rtol=1e-7)
    assert abs(r[2] - 8) < 0.02
    H = population_hessian([32.0], [27.0])
    assert H.shape == (1, 2, 2) and H[0, 0, 1] == H[0, 1, 0]


@pytest.mark.parametrize("factor, grows", [(0.8, False), (1.2, True)])
def test_step_size_limit_separates_stable_from_oscillating_gd(factor, grows):
    """Two population-GD runs from the path point at beta = 32, 1e-7 apart in b: below the limit
    their difference shrinks, above it the stiff direction oscillates with growing amplitude."""
    from stumplib.stump.population import population_loss_and_grad

    path = population_path([32.0])
    lr = factor * float(step_size_limit([32.0])[0])
    runs = [torch.stack([path["beta"][0], path["b"][0] + eps]) for eps in (0.0, 1e-7)]
    for _ in range(40):
        for k, th in enumerate(runs):
            _, gbeta, gb = population_loss_and_grad(th[0], th[1])
            runs[k] = th - lr * torch.stack([gbeta, gb])
    gap = float((runs[1] - runs[0]).abs().max())
    assert (gap > 1e-6) if grows else (gap < 1e-7)
