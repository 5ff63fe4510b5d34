"""Frozen estimators (chapter 4): regimes, slope fits, batched evaluation, stopping rules, bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from stumplib.stats import fit_power_law
from stumplib.frozen import (bound, certified_scale_fallback, certified_scales, evaluate_frozen,
                             freeze_at_scale, freeze_final, fresh_contexts, error_by_shape, baseline_error, grid_configs,
                             mn_cross_grid, regime_points, resolve_certified_scale, seed_interval,
                             train_grid)
from stumplib.model import estimate
from stumplib.trainer import TrainResult


# ------------------------------------------------------------------------------ slope fitting
def test_fit_power_law_recovers_known_exponent():
    rng = np.random.default_rng(1)
    x = np.geomspace(1, 1e3, 15)
    y = 2.5 * x ** -0.75 * np.exp(0.05 * rng.standard_normal(x.size))
    fit = fit_power_law(x, y, n_boot=500)
    assert abs(fit.slope + 0.75) < 0.03
    assert fit.contains(-0.75)
    assert not fit.contains(-1.0) and not fit.contains(-0.5)
    assert abs(fit.prefactor / 2.5 - 1) < 0.1


def test_fit_power_law_interval_coverage():
    """Over many noisy synthetic data sets the 95% interval covers the true slope most of the time
    (a pairs bootstrap on 20 points is slightly anti-conservative: we require >= 85%), and the
    interval is not absurdly wide."""
    rng = np.random.default_rng(7)
    x = np.geomspace(1, 100, 20)
    hits, widths = 0, []
    n_rep = 120
    for k in range(n_rep):
        y = x ** -1.0 * np.exp(0.2 * rng.standard_normal(x.size))
        fit = fit_power_law(x, y, n_boot=200, seed=k)
        hits += fit.contains(-1.0)
        widths.append(fit.ci_width)
    assert hits / n_rep >= 0.85
    # the OLS standard error is 0.2 / sqrt(sum (log x - mean)^2) ~ 0.047: 95% width ~ 0.18
    assert 0.08 < np.median(widths) < 0.35


def test_regime_fits_recover_both_exponents():
    """On a synthetic error surface with slope -1 in N (small N) and -0.5 in m∧n (large N), the
    chapter's regime selection + power-law fit recovers both exponents within their intervals."""
    rng = np.random.default_rng(3)
    mn = np.array([8, 16, 32, 64, 128, 256])[:, None] * np.ones((1, 12))
    N = np.geomspace(2, 4096, 12)[None, :] * np.ones((6, 1))
    err = np.where(N < mn, 1.0 / N, mn ** -0.5)
    err = err * np.exp(0.05 * rng.standard_normal(err.shape))
    small, large = regime_points(mn, N, separation=4.0)
    assert np.all(N[small] * 4 <= mn[small]) and np.all(N[large] >= 4 * mn[large])
    assert small.sum() >= 3 and large.sum() >= 3
    fN = fit_power_law(N[small], err[small], n_boot=500)
    fmn = fit_power_law(mn[large], err[large], n_boot=500)
    assert fN.contains(-1.0) and abs(fN.slope + 1) < 0.05
    assert fmn.contains(-0.5) and abs(fmn.slope + 0.5) < 0.05
    assert not fmn.contains(-1.0)


def test_error_by_shape_pools_seeds_and_skips_invalid():
    rng = np.random.default_rng(0)
    mse = rng.uniform(0.5, 1.5, size=(6, 2, 3))
    si = np.array([0, 0, 0, 1, 1, 1])
    valid = np.array([True, True, False, True, True, True])
    out = error_by_shape(mse, si, 2, valid=valid)
    assert out["n_valid"].tolist() == [2, 3]
    assert np.allclose(out["err"][0], np.sqrt(mse[:2].mean((0, 2))))
    assert np.allclose(out["err_tau"][1], np.sqrt(mse[3:].mean(0)))
    assert np.all(out["lo"] <= out["err"]) and np.all(out["err"] <= out["hi"])
    one = error_by_shape(mse, si, 2, valid=[True, False, False, True, True, True])
    assert np.all(np.isnan(one["lo"][0])) and np.allclose(one["err"][0], np.sqrt(mse[0].mean(-1)))
    none = error_by_shape(mse, si, 2, valid=[False, False, False, True, True, True])
    assert np.all(np.isnan(none["err"][0])) and np.all(np.isnan(none["err_tau"][0]))


def test_baseline_error_interval_covers_monte_carlo_truth():
    """The Bayes estimator's RMSE from 400 contexts: its 95% interval contains a 40x larger
    Monte Carlo estimate."""
    res = evaluate_frozen([20.0], [20.0], [8], n_ctx=400, seed=1, device="cpu", baselines=["Bayes"])
    ref = evaluate_frozen([20.0], [20.0], [8], n_ctx=16000, seed=2, device="cpu", baselines=["Bayes"])
    be = baseline_error(res["baselines"]["Bayes"], 400)
    truth = np.sqrt(ref["baselines"]["Bayes"]["mse"].mean())
    assert be["lo"][0] <= truth <= be["hi"][0]
    assert be["hi"][0] - be["lo"][0] < 0.3 * be["err"][0]


def test_bound_and_seed_interval():
    assert np.allclose(bound([4, 100], [100, 4]), [0.26, 0.26])
    v = np.array([[1.0, 2.0], [3.0, 2.0], [2.0, 2.0]])
    mean, lo, hi = seed_interval(v)
    assert np.allclose(mean, [2.0, 2.0])
    # t_{0.975, 2} = 4.303; sd = 1; half = 4.303 / sqrt(3)
    assert np.isclose(hi[0] - mean[0], 4.302652729911275 / math.sqrt(3))
    assert np.isclose(lo[1], 2.0) and np.isclose(hi[1], 2.0)


# ----------------------------------------------------------------------- batched evaluation
def test_fresh_contexts_share_uniforms_and_label_correctly():
    taus = torch.tensor([0.3, 0.6])
    x, y = fresh_contexts(7, taus, 4, seed=2)
    assert x.shape == (2, 4, 7)
    assert torch.equal(x[0], x[1])
    assert torch.equal(y, (x >= taus[:, None, None]).to(x.dtype))
    x2, _ = fresh_contexts(7, taus, 4, seed=2)
    assert torch.equal(x, x2)
    x3, _ = fresh_contexts(8, taus, 4, seed=2)
    assert not torch.equal(x3[..., :7], x)


def test_evaluate_frozen_matches_direct_loop():
    beta = np.array([20.0, 55.0, 300.0])
    b = np.array([20.0, 48.0, 250.0])
    N_grid, taus, n_ctx = [3, 17], [0.3, 0.6], 5
    res = evaluate_frozen(beta, b, N_grid, taus=taus, n_ctx=n_ctx, seed=4, device="cpu",
                          baselines=["min positive", "midpoint", "Bayes"], max_elems=50)
    tt = torch.tensor(taus, dtype=torch.float64)
    for k, N in enumerate(N_grid):
        x, y = fresh_contexts(N, tt, n_ctx, seed=4)
        for i, tau in enumerate(taus):
            errs = {p: [] for p in range(3)}
            berrs = {"min positive": [], "midpoint": [], "Bayes": []}
            for c in range(n_ctx):
                xs, ys = x[i, c].tolist(), y[i, c].tolist()
                for p in range(3):
                    f = float(estimate(x[i, c], y[i, c], beta[p], b[p]))
                    errs[p].append(f - tau)
                pos = [v for v, l in zip(xs, ys) if l == 1.0]
                neg = [v for v, l in zip(xs, ys) if l == 0.0]
                mp = min(pos) if pos else 1.0
                mneg = max(neg) if neg else 0.0
                berrs["min positive"].append(mp - tau)
                berrs["midpoint"].append(0.5 * (mp + mneg) - tau)
                berrs["Bayes"].append(0.5 * (max(mneg, 0.2) + min(mp, 0.8)) - tau)
            for p in range(3):
                e = np.array(errs[p])
                assert np.isclose(res["mse"][p, k, i], np.mean(e ** 2), rtol=1e-10)
                assert np.isclose(res["mae"][p, k, i], np.mean(np.abs(e)), rtol=1e-10)
                assert np.isclose(res["bias"][p, k, i], np.mean(e), rtol=1e-9, atol=1e-14)
                assert np.isclose(res["sq_sd"][p, k, i], np.std(e ** 2, ddof=1), rtol=1e-8)
            for nm, e in berrs.items():
                e = np.array(e)
                assert np.isclose(res["baselines"][nm]["mse"][k, i], np.mean(e ** 2), rtol=1e-12)


def test_evaluate_frozen_chunking_and_cache_do_not_change_numbers(tmp_path):
    beta, b = np.array([20.0, 80.0, 150.0, 40.0]), np.array([20.0, 70.0, 125.0, 35.0])
    a = evaluate_frozen(beta, b, [4, 64], n_ctx=30, device="cpu", max_elems=10)
    c = evaluate_frozen(beta, b, [4, 64], n_ctx=30, device="cpu", max_elems=2 ** 24,
                        cache=tmp_path / "ev.npz")
    for key in ("mse", "mae", "bias"):
        assert np.allclose(a[key], c[key], rtol=1e-13, atol=1e-16)
    again = evaluate_frozen(beta, b, [4, 64], n_ctx=30, device="cpu", cache=tmp_path / "ev.npz")
    assert np.array_equal(again["mse"], c["mse"])
    assert np.array_equal(again["baselines"]["Bayes"]["mse"], c["baselines"]["Bayes"]["mse"])
    other = evaluate_frozen(beta, b, [4, 64], n_ctx=31, device="cpu", cache=tmp_path / "ev.npz")
    assert other["mse"].shape == c["mse"].shape and not np.array_equal(other["mse"], c["mse"])


def test_sharper_estimator_has_smaller_large_N_error():
    """At N >> beta the error of a calibrated estimator is about 1/beta: 4x the scale, about 4x
    smaller RMSE (a known limit of the model)."""
    res = evaluate_frozen([25.0, 100.0], [0.9 * 25, 0.9 * 100], [4096], n_ctx=200, device="cpu",
                          baselines=[])
    rmse = np.sqrt(res["mse"][:, 0, :].mean(-1))
    assert 3.0 < rmse[0] / rmse[1] < 5.0


# --------------------------------------------------------------------------- stopping rules
def _synthetic_result():
    steps = np.array([0, 1, 2, 4, 8])
    beta = np.array([[20.0, 25.0, 30.0, 35.0, 40.0],
                     [20.0, 18.0, 17.0, 16.0, 15.0],
                     [20.0, 22.0, 21.0, 26.0, 29.0]])
    b = beta * 0.9
    return TrainResult([None] * 3, steps, beta, b, np.zeros_like(beta))  # type: ignore[list-item]


def test_freeze_at_scale_stops_at_first_record_reaching_beta_star():
    res = _synthetic_result()
    fr = freeze_at_scale(res, [28.0, 19.0, 25.0])
    assert fr["index"].tolist() == [2, 0, 3]
    assert fr["step"].tolist() == [2, 0, 4]
    assert fr["beta"].tolist() == [30.0, 20.0, 26.0]
    assert np.allclose(fr["b"], 0.9 * fr["beta"])
    assert fr["reached"].all()
    fr = freeze_at_scale(res, 100.0)
    assert fr["index"].tolist() == [4, 4, 4] and not fr["reached"].any()
    fin = freeze_final(res)
    assert fin["beta"].tolist() == [40.0, 15.0, 29.0] and fin["step"].tolist() == [8, 8, 8]


def test_freeze_at_scale_on_real_training_run():
    cfg = grid_configs([(8, 16), (16, 8)], 2, seed=5)
    res = train_grid(cfg, 200, n_records=40, device="cpu", progress=False)
    target = 0.5 * (res.beta[:, 0] + np.nanmax(res.beta, 1))  # runs may stop early (NaN)
    fr = freeze_at_scale(res, target)
    rows = np.arange(len(cfg))
    for r in rows:
        k = fr["index"][r]
        if fr["reached"][r]:
            assert res.beta[r, k] >= target[r]
            assert k == 0 or np.all(res.beta[r, :k] < target[r])
        assert fr["step"][r] == res.steps[k]
        assert fr["valid"][r] == np.isfinite(res.beta[r, k])
        if fr["valid"][r]:
            assert fr["b"][r] == res.b[r, k]


def test_train_grid_shape_batching_equals_one_padded_call(tmp_path):
    cfg = grid_configs([(4, 12), (10, 5)], 2, seed=1)
    a = train_grid(cfg, 60, n_records=10, device="cpu", progress=False, grouping="shape",
                   cache=tmp_path / "a.npz")
    c = train_grid(cfg, 60, n_records=10, device="cpu", progress=False, grouping="pad")
    assert np.allclose(a.beta, c.beta, rtol=1e-10, equal_nan=True)
    assert np.allclose(a.b, c.b, rtol=1e-10, equal_nan=True)
    again = train_grid(cfg, 60, n_records=10, device="cpu", progress=False, cache=tmp_path / "a.npz")
    assert np.array_equal(again.beta, a.beta, equal_nan=True)


def test_certified_scale_fallback_limits_and_resolver():
    lo = certified_scale_fallback(8, 8, level=1e-9, n_corpora=3, device="cpu", n_grid=5)
    hi = certified_scale_fallback(8, 8, level=1e9, n_corpora=3, device="cpu", n_grid=5)
    assert lo == pytest.approx(20.0) and hi == pytest.approx(1e4)
    mid = certified_scale_fallback(8, 8, level=1.0, n_corpora=3, device="cpu", n_grid=5)
    assert 20.0 <= mid <= 1e4
    fn, src = resolve_certified_scale()
    assert callable(fn) and src.startswith("stumplib.")
    calls = []

    def fake(m, n, *, level, n_corpora, seed, device):
        calls.append((m, n))
        return float(m * n)

    assert certified_scales([(2, 3), (4, 5)], fn=fake).tolist() == [6.0, 20.0]
    assert calls == [(2, 3), (4, 5)]


def test_mn_cross_grid():
    assert mn_cross_grid([4, 16], [8], 16, 32) == [(4, 32), (16, 8), (16, 32)]


# ------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("call, match", [
    (lambda: mn_cross_grid([], [4], 4, 4), "m_values"),
    (lambda: mn_cross_grid([4, 0], [4], 4, 4), r"m_values\[1\]"),
    (lambda: mn_cross_grid([4], [4], 4.0, 4), "m_fixed"),
    (lambda: grid_configs([(4, 4)], 0), "n_seeds"),
    (lambda: grid_configs([], 2), "shapes"),
    (lambda: grid_configs([(4, -1)], 2), r"shapes\[0\].n"),
    (lambda: grid_configs([(4, 4), (4, 4)], 2), "duplicate"),
    (lambda: grid_configs([(4, 4)], 2, lr=float("nan")), "lr"),
    (lambda: train_grid([], 10), "configs"),
    (lambda: train_grid(grid_configs([(4, 4)], 1), 0), "steps"),
    (lambda: train_grid(grid_configs([(4, 4)], 1), 5, grouping="rows"), "grouping"),
    (lambda: error_by_shape(np.ones((2, 3)), [0, 1], 2), "mse"),
    (lambda: error_by_shape(np.ones((2, 3, 1)), [0, 2], 2), "shape_index"),
    (lambda: baseline_error({"mse": np.ones((2, 1)), "sq_sd": np.ones((2, 1))}, 1), "n_ctx"),
    (lambda: evaluate_frozen([20.0], [20.0], []), "N_grid"),
    (lambda: evaluate_frozen([20.0], [20.0], [0]), r"N_grid\[0\]"),
    (lambda: evaluate_frozen([20.0], [20.0], [4], taus=[1.0]), "taus"),
    (lambda: evaluate_frozen([20.0], [20.0], [4], taus=[float("nan")]), "taus"),
    (lambda: evaluate_frozen([20.0], [20.0], [4], n_ctx=0), "n_ctx"),
    (lambda: evaluate_frozen([float("nan")], [20.0], [4]), "beta and b must be finite"),
    (lambda: evaluate_frozen([20.0, 3.0], [20.0], [4]), "same length"),
    (lambda: evaluate_frozen([20.0], [20.0], [4], baselines=["oracle"]), "baselines"),
    (lambda: evaluate_frozen([20.0], [20.0], [4], tau_lo=0.9, tau_hi=0.1), "tau_lo"),
    (lambda: freeze_at_scale(_synthetic_result(), [1.0, float("nan"), 2.0]), "beta_star"),
    (lambda: freeze_at_scale(_synthetic_result(), -1.0), "beta_star"),
    (lambda: freeze_at_scale("result", 1.0), "TrainResult"),
    (lambda: regime_points([4], [4], separation=0.5), "separation"),
    (lambda: seed_interval([1.0]), "replicates"),
    (lambda: seed_interval([1.0, 2.0], level=1.5), "level"),
    (lambda: bound([0], [4]), "mn and N"),
    (lambda: certified_scale_fallback(0, 4), "m must"),
    (lambda: certified_scale_fallback(4, 4, level=0.0), "level"),
    (lambda: certified_scales([(4, 4)], n_corpora=0, fn=lambda *a, **k: 1.0), "n_corpora"),
])
def test_bad_input_raises_named_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()
