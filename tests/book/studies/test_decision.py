"""Tests of stumplib.book.studies.decision: the extrapolations in 1/d, the decision between two theories,
the selection of a stored run's alphas and the gap of plain GD."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.book.studies.decision import at_alphas, consistency, decide, extrapolations, gd_gap


def _synthetic_runs(limit, slope, spread, seeds=400, ds=(100, 200, 400), seed=0):
    """Seed-by-seed test errors limit + slope / d + spread sqrt(100 / d) * N(0, 1), all converged."""
    rng = np.random.default_rng(seed)
    runs = {}
    for d in ds:
        e = rng.standard_normal((seeds, len(limit)))
        te = np.asarray(limit) + np.asarray(slope) / d + np.asarray(spread) * np.sqrt(100 / d) * e
        runs[d] = dict(test_error=te, converged=np.ones_like(te, dtype=bool))
    return runs


def test_decide_recovers_the_limit_and_sizes_the_seeds():
    runs = _synthetic_runs([0.0028, 0.0023], [0.01, 0.02], [2e-4, 2e-4])
    dec = decide(runs, [0.0028, 0.0023], [1e-6, 1e-6], [0.00268, 0.00227])
    for j, lim in enumerate([0.0028, 0.0023]):
        assert abs(dec["limit"][j].value - lim) < 4 * dec["limit_se"][j]
    assert np.all(np.abs(dec["z_accurate"]) < 4) and np.max(np.abs(dec["z_published"])) > 4
    assert dec["spread_slope"] == pytest.approx(-0.5, abs=0.1) and dec["converged_fraction"] == 1.0
    assert dec["seeds_to_decide"] < 400  # already decided with 400 seeds
    runs[400]["converged"][0, 0] = False  # a run that did not converge is left out and counted
    dec2 = decide(runs, [0.0028, 0.0023], [1e-6, 1e-6], [0.00268, 0.00227])
    assert dec2["n"][-1, 0] == 399 and dec2["converged_fraction"] < 1


def test_three_extrapolations_on_data_with_a_known_one_over_d_squared_term():
    """y = L + a/d + b/d^2 at d = 250 ... 4000 with seed-like errors (se ~ d^-1/2): the parabola in
    1/d recovers L exactly without noise and its 95% interval covers L in 95% of noisy replicates
    (400 replicates: binomial sd 1.1%, so >= 91%); its z-scores have unit spread (the stated error
    is the spread, within 10%: the sd of 400 z-scores is known to 3.5%). The straight line is biased
    by the 1/d^2 term (3.5 of its standard errors here, computed), the line without the smallest d
    less (1.3)."""
    ds = np.array([250, 500, 1000, 2000, 4000.0])
    L, a, b = 0.0028, 0.02, 5.0
    se = 2e-6 * np.sqrt(4000 / ds)
    y = L + a / ds + b / ds ** 2
    ex = extrapolations(ds, y[:, None], se[:, None])
    assert set(ex) == {"line", "quadratic", "drop_smallest"}
    assert ex["quadratic"][0][0].value == pytest.approx(L, abs=1e-15)
    z = {k: (lim[0].value - L) / s[0] for k, (lim, s) in ex.items()}
    assert z["line"] < -3 and -3 < z["drop_smallest"] < -1  # the 1/d^2 term biases the lines
    rng = np.random.default_rng(0)
    noisy = y[:, None] + se[:, None] * rng.standard_normal((5, 400))  # 400 replicates as columns
    lim, s = extrapolations(ds, noisy, np.repeat(se[:, None], 400, 1))["quadratic"]
    zq = (np.array([e.value for e in lim]) - L) / s
    assert sum(e.contains(L) for e in lim) >= 364 and np.std(zq) == pytest.approx(1.0, rel=0.1)
    few = extrapolations(ds[:2], y[:2, None], se[:2, None])  # two d: no parabola, one point left
    assert np.isnan(few["quadratic"][1][0]) and np.isnan(few["drop_smallest"][1][0])
    assert np.isfinite(few["line"][1][0])


def _flat_run(lam=0.01, params=True):
    """A stored run in scripts/phase_minimisers.py's layout, two d, two alphas."""
    rng = np.random.default_rng(1)
    flat = dict(ds=np.array([100, 200]), command=np.asarray("python3 scripts/phase_minimisers.py"),
                commit=np.asarray("0" * 40), machine=np.asarray("test"), seconds=np.asarray(1.0))
    for d in (100, 200):
        te = 0.0028 + 1e-4 * rng.standard_normal((6, 2))
        flat.update({f"d{d}_test_error": te, f"d{d}_converged": np.ones((6, 2), bool),
                     f"d{d}_alphas": np.array([1.0164, 1.25]), f"d{d}_seeds": np.arange(6)})
    if params:
        flat.update(omega=np.asarray(0.3), sigma=np.asarray(0.5), lam=np.asarray(lam),
                    A=np.array([[0.6, 0.4], [0.4, 0.6]]), seed=np.asarray(0), gtol=np.asarray(1e-8))
    return flat


def test_at_alphas_selects_columns_and_marks_a_missing_alpha_as_not_run():
    from stumplib.book.runs import read_runs

    flat = _flat_run()
    flat["d200_test_error"] = flat["d200_test_error"][:, :1]  # alpha 1.25 not run at d = 200
    flat["d200_converged"] = flat["d200_converged"][:, :1]
    flat["d200_alphas"] = np.array([1.0164])
    sel = at_alphas(read_runs(flat), [1.25, 1.0164])
    np.testing.assert_array_equal(sel[100]["test_error"], flat["d100_test_error"][:, ::-1])
    assert np.isnan(sel[200]["test_error"][:, 0]).all() and not sel[200]["converged"][:, 0].any()
    np.testing.assert_array_equal(sel[200]["test_error"][:, 1], flat["d200_test_error"][:, 0])
    assert at_alphas(read_runs(flat), [2.0]) == {}


def test_gd_gap_leaves_out_seeds_without_a_finite_error_and_counts_them():
    """Seed 1 at d = 8 has a NaN GD error: it is left out of the mean (brute force over the
    others) and counted with its reason."""
    te = np.array([[0.2, 0.4], [0.2, 0.4], [0.25, 0.5]])
    gd = np.array([[0.22, 0.42], [np.nan, 0.5], [0.3, 0.55]])
    runs = {8: dict(test_error=te, gd_test_error=gd, gd_rel_grad=np.array([1e-3, 2e-3, 4e-3])),
            16: dict(test_error=te, gd_test_error=te * 1.1, gd_rel_grad=np.array([1e-4] * 3))}
    g = gd_gap(runs)
    np.testing.assert_allclose(g["rel_diff"][0], (gd[[0, 2]] / te[[0, 2]] - 1).mean(0), rtol=1e-14)
    np.testing.assert_allclose(g["rel_diff"][1], [0.1, 0.1], rtol=1e-12)
    assert g["n_seeds"].tolist() == [2, 3] and g["n_dropped"].tolist() == [1, 0]
    assert g["rel_grad_max"] == 4e-3


def test_consistency_is_the_difference_of_the_limits_in_combined_standard_errors():
    a = decide(_synthetic_runs([0.0028, 0.0023], [0.01, 0.02], [2e-4, 2e-4]), [0.0028, 0.0023],
               [1e-6, 1e-6], [0.00268, 0.00227])
    b = decide(_synthetic_runs([0.0028, 0.0023], [0.01, 0.02], [2e-4, 2e-4], seed=1),
               [0.0028, 0.0023], [1e-6, 1e-6], [0.00268, 0.00227])
    z = consistency(a, b)
    want = [(x.value - y.value) / np.hypot(sa, sb)
            for x, y, sa, sb in zip(a["limit"], b["limit"], a["limit_se"], b["limit_se"])]
    np.testing.assert_allclose(z, want, rtol=1e-14)
    assert np.all(np.abs(z) < 4)  # independent seeds, one truth
    with pytest.raises(ValueError, match="alphas"):
        consistency(a, dict(b, limit=b["limit"][:1], limit_se=b["limit_se"][:1]))
