"""stumplib.stump.certified: the one beta*(m, n) computation, its bootstrap and its cache."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.stump import certified as ce
from stumplib.stump.trainer import corpus_grad
from stumplib.stump.transfer import TransferProfile, certified_scale, draw_corpus_batch, population_path


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
    dense = certified_scale(m, n, n_corpora=C, seed=5, device="cpu")
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


def test_certified_scales_are_one_computation_shared_through_the_cache(tmp_path, monkeypatch):
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
