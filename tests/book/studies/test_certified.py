"""stumplib.book.studies.certified: the one beta*(m, n) computation, its bootstrap and its cache."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.book.studies import certified as ce
from stumplib.stump.corpus_grad import corpus_grad
from stumplib.book.studies.transfer import (TransferProfile, default_beta_grid, draw_corpus_batch, population_path,
                                     transfer_profile)


def test_blocked_gradients_equal_the_trainer_gradient():
    tau, x, y = draw_corpus_batch(40, 300, 3, seed=1)
    p = population_path([8.0, 30.0])
    for k in range(2):
        beta, b = float(p["beta"][k]), float(p["b"][k])
        _, gb, gbb = corpus_grad(x, y, tau, torch.full((3,), beta), torch.full((3,), b))
        got = ce._blocked_grads(tau, x, y, beta, b)
        np.testing.assert_allclose(got, torch.stack([gb, gbb], -1).numpy(), rtol=1e-10, atol=1e-16)


def test_adaptive_scan_gives_the_dense_grid_crossing():
    """The adaptive grid holds the dense grid's points around the crossing: same corpora, same beta*."""
    m, n, C = 128, 128, 16
    prof = ce.scan_profile(m, n, n_corpora=C, seed=5)
    grid = default_beta_grid(1.0, 2.0 ** 12, 4)  # the dense quarter-octave grid
    dense = transfer_profile(m, n, grid, n_corpora=C, seed=5, device="cpu").certified()
    assert np.isfinite(dense)
    assert prof.certified() == pytest.approx(dense, rel=1e-9)
    assert prof.beta.size < 20  # fewer points than the dense quarter-octave grid


def _synthetic(x: float, slope: float, C: int, rng) -> TransferProfile:
    """Corpora whose relative error along the progress direction is ``(beta / x^slope) z`` with
    ``z`` standard normal: the RMS over corpora crosses 1/2 at ``beta* = x^slope / (2 rms(z))``."""
    betas = 2.0 ** np.arange(-4, 12, 0.25)
    z = rng.standard_normal(C)
    r = betas[:, None] / x ** slope * z[None, :]
    gp = np.tile([-1.0, 0.0], (betas.size, 1))
    g = gp[:, None, :] + np.stack([-r, np.zeros_like(r)], -1)
    return TransferProfile(int(x), int(x), C, 0, betas, np.ones_like(betas), gp, g)


def test_bootstrap_of_beta_star_recovers_a_known_slope():
    rng = np.random.default_rng(0)
    xs, slope, cover = [64.0, 128.0, 256.0, 512.0], 0.8, 0
    for rep in range(20):
        vals, boots, shapes = [], [], []
        for x in xs:
            v, b = ce.bootstrap_scales(_synthetic(x, slope, 64, rng), 0.5, n_boot=200, seed=rep)
            vals.append(v), boots.append(b), shapes.append((int(x), int(x)))
        cs = ce.CertifiedScales(tuple(shapes), np.full(4, 64), np.array(vals), np.ones(4),
                                np.stack(boots, 1), ())
        fit = ce.slope(cs, "mn")
        cover += fit.contains(slope)
        assert abs(fit.slope - slope) < 0.25
    assert cover >= 16  # a 95% interval covers the true slope in most of 20 replicate sets


def test_certified_scales_are_one_computation_shared_through_the_cache(tmp_path, monkeypatch,
                                                                       book_cache):
    """Chapters 3 and 4 call the same function: for a shared shape the same beta* and replicates,
    whatever the other shapes, reloaded from the cache or computed afresh."""
    monkeypatch.setenv("STUMPBOOK_RESULTS", str(tmp_path))
    a = ce.certified_scales([(64, 64), (128, 128)], 12, seed=2, n_boot=20)
    b = ce.certified_scales([(64, 64), (128, 128)], 12, seed=2, n_boot=20)  # reloaded
    c = ce.certified_scales([(128, 128)], 12, seed=2, n_boot=20, cache=False)
    assert list(tmp_path.glob("certified_scales-*.npz"))
    np.testing.assert_array_equal(a.value, b.value)
    np.testing.assert_array_equal(a.boot, b.boot)
    assert c.of((128, 128)) == a.of((128, 128))
    np.testing.assert_array_equal(c.boot[:, 0], a.boot[:, 1])
    assert np.isfinite(a.of((128, 128)))


def test_kept_leaves_out_exactly_the_shapes_without_a_scale_and_counts_them():
    nan = float("nan")
    cs = ce.CertifiedScales(((8, 8), (16, 16), (32, 32)), np.array([4, 4, 4]),
                            np.array([nan, 3.0, 5.0]), np.array([nan, 1.0, 1.0]),
                            np.ones((10, 3)), ())
    assert cs.kept() == ([1, 2], 1, cs.kept()[2]) and "1 of 3 shapes" in cs.kept()[2]
    assert "8x8" in cs.kept()[2] and "16x16" not in cs.kept()[2]
    assert cs.kept(keep_all=True) == ([0, 1, 2], 0, "")
    # stopping scales: the certified beta*, a token run's stand-in 0.08 (m∧n) where there is none
    np.testing.assert_array_equal(cs.stop_scales([1, 2]), [3.0, 5.0])
    np.testing.assert_allclose(cs.stop_scales([0, 2]), [0.64, 5.0])


# --- the worst case at each m∧n (the statistic of an upper bound) ---------------------------------
GRID_SHAPES = [(128, 128), (256, 256), (512, 512), (1024, 1024),
               (128, 512), (256, 512), (512, 128), (512, 256)]


def _grid(diag_slope: float, seed: int = 0, n_boot: int = 400) -> ce.CertifiedScales:
    """Synthetic certified scales: ``beta* = 0.08 (m∧n)^diag_slope (max/min)^0.6``, so the diagonal
    is the worst shape at each m∧n and an off-diagonal shape's larger side raises its beta*
    (as measured in chapter 3); replicates scatter by 5% in log."""
    rng = np.random.default_rng(seed)
    v = np.array([0.08 * min(s) ** diag_slope * (max(s) / min(s)) ** 0.6 for s in GRID_SHAPES])
    boot = v[None, :] * np.exp(0.05 * rng.standard_normal((n_boot, v.size)))
    P = len(GRID_SHAPES)
    return ce.CertifiedScales(tuple(GRID_SHAPES), np.full(P, 64), v, v / 8, boot, (None,) * P)


def test_worst_per_value_picks_the_extreme_column_per_value_in_every_row():
    x = np.array([1, 2, 1, 2, 3])
    y = np.array([[5.0, 1.0, 4.0, 2.0, 7.0], [3.0, np.nan, 6.0, 0.5, 1.0]])
    xs, i_min = ce.worst_per_value(x, y, worst="min")
    np.testing.assert_array_equal(xs, [1, 2, 3])
    np.testing.assert_array_equal(i_min, [[2, 1, 4], [0, 1, 4]])  # NaN counts as the worst
    _, i_max = ce.worst_per_value(x, y, worst="max")
    np.testing.assert_array_equal(i_max, [[0, 3, 4], [2, 1, 4]])
    with pytest.raises(ValueError, match="worst"):
        ce.worst_per_value(x, y, worst="median")


def test_worst_case_growth_holds_where_the_all_shape_fit_is_shallow():
    from stumplib.book import verdicts as V

    cs = _grid(1.0)
    fit, worst = ce.worst_slope(cs)
    assert worst == [(128, 128), (256, 256), (512, 512), (1024, 1024)]  # found, not assumed
    assert fit.slope == pytest.approx(1.0, abs=1e-9)  # exactly the diagonal's law
    mid = float(np.sqrt(128 * 1024))
    assert V.growth_up_to_logs(fit.estimate, x_mid=mid, variable="m∧n").status == "holds"
    every = ce.slope(cs, "mn").estimate  # off-diagonal shapes at small m∧n flatten the fit
    g1 = 1 - 1 / np.log(mid)
    assert every.hi < g1
    assert V.growth_up_to_logs(every, x_mid=mid, variable="m∧n").status != "holds"


def test_worst_case_growth_fails_where_the_worst_shape_grows_too_slowly():
    from stumplib.book import verdicts as V

    fit, _ = ce.worst_slope(_grid(0.5))
    # slope 0.5 with a 5% scatter (interval half-width ~0.03) lies below 1 - 2/ln(362) = 0.66
    assert fit.slope == pytest.approx(0.5, abs=1e-9) and fit.estimate.hi < 0.6
    v = V.growth_up_to_logs(fit.estimate, x_mid=float(np.sqrt(128 * 1024)), variable="m∧n")
    assert v.status == "fails"


def test_worst_case_is_chosen_in_every_replicate():
    # two shapes at each m∧n with equal beta*: the replicate minimum sits below both replicates,
    # so the worst-case line is lower than either shape's own line and its interval is narrower
    # than a fit that chose one shape by the point estimate would make it look
    cs = _grid(1.0, n_boot=2000)
    v = cs.value.copy()
    v[4:] = [v[0], v[1], v[0], v[1]]  # off-diagonal shapes tie with the diagonal
    boot = v[None, :] * np.exp(0.05 * np.random.default_rng(3).standard_normal(cs.boot.shape))
    tied = ce.CertifiedScales(cs.shapes, cs.n_corpora, v, cs.beta_lo, boot, cs.profiles)
    fit, _ = ce.worst_slope(tied, shapes=GRID_SHAPES[:2] + GRID_SHAPES[4:6])
    assert fit.slope == pytest.approx(1.0, abs=1e-9)
    assert fit.estimate.contains(1.0)
