"""A corpus's own calibration (continuation) and the calibration-failure prediction."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.book.studies.calibration import (OwnProfile, failure_probability, own_label_score,
                                  predicted_label_scores, tracking_scale)
from stumplib.stump.corpus_grad import corpus_grad
from stumplib.book.studies.transfer import draw_corpus_batch
from stumplib.stump import Prior


def _corpus():
    """Seeded corpora of 16 tasks x 64 examples; at beta = 512 >> m the loss of corpora 1 and 4 in b
    has, besides the minimum just above their largest threshold, spurious lower ones."""
    tau, x, y = draw_corpus_batch(16, 64, 8, seed=1)
    return tau[[1, 4]], x[[1, 4]], y[[1, 4]]


def _loss(tau, x, y, beta, c):
    L, _, gb = corpus_grad(x, y, tau, torch.tensor([beta]), torch.tensor([c * beta]))
    return float(L), float(gb)


def _bisection_label_score(tau, x, y, beta, iters=60):
    """Plain bisection of ``dL/db`` on ``[tau_lo, tau_hi + 1]`` per corpus (the superseded method,
    kept here as the contrast): lands on whichever sign change the halvings meet."""
    out = []
    for k in range(x.shape[0]):
        lo, hi = 0.2, 1.8
        for _ in range(iters):
            mid = 0.5 * (lo + hi)
            if _loss(tau[k:k + 1], x[k:k + 1], y[k:k + 1], beta, mid)[1] > 0:
                hi = mid
            else:
                lo = mid
        out.append(0.5 * (lo + hi))
    return torch.tensor(out)


def test_continuation_finds_the_highest_local_minimum_where_bisection_does_not():
    tau, x, y = _corpus()
    betas = 2.0 ** np.arange(1, 9.01, 0.5)
    beta = betas[-1]
    c_cont = own_label_score(tau, x, y, betas)[-1].numpy()
    c_bis = _bisection_label_score(tau, x, y, beta).numpy()
    for k in range(2):
        t, xx, yy = tau[k:k + 1], x[k:k + 1], y[k:k + 1]
        for c in (c_cont[k], c_bis[k]):  # both are local minima of the loss in b
            L0, g0 = _loss(t, xx, yy, beta, c)
            assert abs(g0) < 1e-6
            assert _loss(t, xx, yy, beta, c + 1e-3)[0] >= L0 and _loss(t, xx, yy, beta, c - 1e-3)[0] >= L0
        top = float(t.max())
        # continuation stays at the corpus's largest threshold; bisection lands far lower
        assert c_cont[k] > top - 0.02 and c_bis[k] < c_cont[k] - 0.05
        # the highest one: dL/db >= 0 from c_cont up to the start c0 = 1 (no minimum in between)
        g = np.array([_loss(t, xx, yy, beta, c)[1] for c in np.linspace(c_cont[k] + 1e-3, 1.0, 300)])
        assert np.all(g >= -1e-12)


@pytest.mark.parametrize("tau", [0.3, 0.5, 0.8])
def test_calibrated_shift_minimises_the_exact_population_loss_of_one_task(tau):
    """Independent of the derivation: the label score minimising one task's exact population loss
    (closed-form f_pop of stump.population, bounded scalar search to 1e-12) at beta = 64 and 128.
    The derivation neglects the tails e^{-beta tau} and e^{-beta (1 - tau)} of the two sides:
    measured, beta x shift agrees to 3.8e-5 at tau = 0.8, beta = 64 (where e^{-beta (1 - tau)} =
    2.8e-6) and to 1.3e-7 elsewhere, hence 1e-4 (at beta = 32, tau = 0.8 the tail 1.7e-3 moves it
    by 0.012)."""
    from scipy.optimize import minimize_scalar

    from stumplib.book.studies.calibration import calibrated_shift
    from stumplib.stump.population import population_moments

    for beta in (64.0, 128.0):
        def loss(c):
            t = torch.tensor
            f = population_moments(t(tau, dtype=torch.float64), t(beta, dtype=torch.float64),
                                   t(c * beta, dtype=torch.float64))["f"]
            return float((f - tau) ** 2)

        r = minimize_scalar(loss, bounds=(tau, tau + 0.5), method="bounded", options={"xatol": 1e-12})
        assert beta * (r.x - tau) == pytest.approx(beta * float(calibrated_shift(tau, beta)), abs=1e-4)


@pytest.mark.parametrize("prior", [(0.2, 0.8), (0.1, 0.9)])
def test_failure_probability_inverts_the_forward_rule_on_a_direct_simulation(prior):
    """``failure_probability`` (the inverse: the largest threshold whose calibrated score stays
    below ``tau``) against the forward rule applied to directly drawn largest thresholds, on the
    default prior and on a wider one (the prior's ends enter). Tolerance: four binomial standard
    errors of 40,000 draws."""
    from stumplib.book.studies.calibration import calibrated_shift

    rng = np.random.default_rng(0)
    lo, hi = prior
    beta = 256.0
    for m in (2, 4, 8):
        top = lo + (hi - lo) * rng.random((40_000, m)).max(1)
        c = top + np.log(top * beta - 1) / beta  # the forward rule, written out
        np.testing.assert_array_equal(c, top + calibrated_shift(top, beta))
        sim = predicted_label_scores(m, beta, 40_000, seed=m, prior=Prior(lo, hi))
        for tau in (0.5, 0.7):
            p = failure_probability(tau, m, beta, Prior(lo, hi))
            se = np.sqrt(p * (1 - p) / 40_000)
            assert abs(np.mean(c < tau) - p) < 4 * se + 1e-12
            assert abs(np.mean(sim < tau) - p) < 4 * se + 1e-12
    assert failure_probability(0.1, 4, beta) == 0.0 and failure_probability(0.95, 4, beta) == 1.0
    with pytest.raises(ValueError, match="beta"):
        failure_probability(0.5, 4, 2.0)  # 2 / tau_hi = 2.5: the prior's top cannot be calibrated


def test_tracking_scale_censors_and_interpolates():
    b = np.array([1.0, 2.0, 4.0, 8.0])
    assert tracking_scale(b, [0.8, 0.2, 0.3, 0.4], 0.5) == (8.0, True)
    s, cens = tracking_scale(b, [0.8, 0.2, 0.25, 1.0], 0.5)
    assert not cens and s == pytest.approx(4 * 2 ** 0.5)  # log-log midpoint
    assert np.isnan(tracking_scale(b, [0.8, 0.9, 1.0, 2.0], 0.5)[0])
    p = OwnProfile(2, 2, b, -np.ones(4), -np.array([[1.0, 0.2], [1.0, 1.0], [np.nan, 1.0], [2.0, 2.0]]),
                   np.zeros((4, 2)), np.zeros(4))
    np.testing.assert_allclose(p.curve("short")[:2], [np.sqrt(0.32), 0.0])
    np.testing.assert_allclose(p.curve("rms")[2], np.sqrt(0.5))  # NaN counts as an error of 1


def test_scale_with_bootstrap_resamples_corpora_and_brackets_the_point():
    from stumplib.book.studies.calibration import scale_with_bootstrap

    betas = 2.0 ** np.arange(0, 12, 0.5)
    rng = np.random.default_rng(3)
    z = rng.standard_normal(40)
    g_pop = -np.ones(betas.size)
    g = g_pop[:, None] * (1 + betas[:, None] / 300 * z[None, :])  # |ratio - 1| grows like beta
    prof = OwnProfile(40, 40, betas, g_pop, g, np.ones((betas.size, 40)), np.ones(betas.size))
    est, boots = scale_with_bootstrap(prof, 0.5, n_boot=100, seed=0)
    truth = 150 / np.sqrt(np.mean(z ** 2))  # the RMS crosses 1/2 at beta = 150 / rms(z)
    assert est.value == pytest.approx(truth, rel=0.1)
    assert est.lo <= est.value <= est.hi and boots.shape == (100,)
    assert est.n + est.n_dropped == 100 and est.n_dropped == int((~np.isfinite(boots)).sum())


def test_scale_with_bootstrap_counts_the_resamples_without_a_scale():
    """10 of 24 corpora never drop below the level (error 2 at every scale), the others are exact
    until the last scale: the median curve has a scale, while resamples drawing 12 or more bad
    corpora (probability 0.26) have none; they are left out of the interval and counted."""
    from stumplib.book.studies.calibration import scale_with_bootstrap

    betas = 2.0 ** np.arange(0, 8, 0.5)
    g_pop = -np.ones(betas.size)
    g = np.repeat(g_pop[:, None], 24, 1).copy()
    g[:, :10] *= 3.0
    g[-1, 10:] *= 3.0
    prof = OwnProfile(4, 4, betas, g_pop, g, np.ones((betas.size, 24)), np.ones(betas.size))
    est, boots = scale_with_bootstrap(prof, 0.9, stat="median", n_boot=200, seed=1)
    bad = int((~np.isfinite(boots)).sum())
    assert np.isfinite(est.value) and 20 < bad < 90  # 52 expected, 200 draws
    assert (est.n, est.n_dropped) == (200 - bad, bad) and f"{bad} of 200" in est.dropped


def test_failure_fractions_and_mae_slope_on_a_synthetic_study():
    from stumplib.book.studies.calibration import failure_fractions, mae_by_m

    rng = np.random.default_rng(4)
    study = {m: {"c": rng.uniform(0.5, 0.9, 20), "abs": (1.0 / m) * rng.uniform(0.5, 1.5, 20)}
             for m in (8, 16, 32, 64)}
    frac, lo, hi = failure_fractions(study, taus=(0.7,))
    for (m, s), f in zip(study.items(), frac[:, 0]):
        assert f == np.mean(s["c"] < 0.7)
    assert np.all((lo <= frac) & (frac <= hi))
    mae, reps, slope = mae_by_m(study, n_boot=100, seed=0)
    assert reps.shape == (100, 4) and slope.contains(-1.0)
    assert slope.value == pytest.approx(-1.0, abs=0.15)
