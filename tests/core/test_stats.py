"""stumplib.core.stats: the estimate type, the one resampler and the crossings, against brute force."""
import math

import numpy as np
import pytest

from stumplib.core import stats
from stumplib.core.stats import Estimate


def test_estimate_nan_and_lower_bound_and_scaling():
    e = Estimate.nan("quadrature")
    assert math.isnan(e.value) and math.isnan(e.lo) and math.isnan(e.hi) and e.kind == "quadrature"
    lb = Estimate.lower_bound(3.0)
    assert format(lb, ".2g") == ">= 3" and lb.contains(100.0) and not lb.contains(2.0)
    s = Estimate(2.0, 1.0, 4.0, "seeds").scaled(-0.5)
    assert (s.value, s.lo, s.hi) == (-1.0, -2.0, -0.5)


def test_resample_indices_is_deterministic_and_uniform():
    a = stats.resample_indices(10, 5000, seed=3)
    assert a.shape == (5000, 10) and np.array_equal(a, stats.resample_indices(10, 5000, seed=3))
    counts = np.bincount(a.ravel(), minlength=10) / a.size
    assert np.allclose(counts, 0.1, atol=0.01)


def test_vectorised_and_looped_resampling_agree_and_pairs_stay_paired():
    rng = np.random.default_rng(0)
    x = rng.exponential(size=40)
    y = 2 * x + rng.normal(size=40) * 0.01
    loop = stats.resample((x, y), lambda a, b: a.mean() / b.mean(), n_boot=300, seed=1)
    vec = stats.resample((x, y), lambda a, b: a.mean(-1) / b.mean(-1), n_boot=300, seed=1,
                         vectorised=True)
    assert np.allclose(loop, vec)
    assert np.all(np.abs(vec - 0.5) < 0.01)  # paired: the ratio barely moves


def test_bootstrap_mean_interval_covers_and_matches_normal_theory():
    rng = np.random.default_rng(1)
    hits = 0
    for r in range(60):
        d = rng.normal(1.0, 2.0, size=100)
        e = stats.bootstrap(d, lambda a: a.mean(-1), n_boot=800, seed=r, vectorised=True)
        hits += e.contains(1.0)
        assert e.value == pytest.approx(d.mean())
        assert e.width == pytest.approx(2 * 1.96 * d.std() / 10, rel=0.2)
    assert hits >= 51  # 95% nominal, 60 replicates


def test_ratio_of_means_matches_direct_ratio():
    num, den = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 2.0, 2.0, 2.0])
    e = stats.ratio_of_means(num, den, n_boot=500)
    assert e.value == pytest.approx(1.25) and e.lo < 1.25 < e.hi and e.kind == "bootstrap"


def test_mean_interval_is_student_t():
    e = stats.mean_interval([1.0, 2.0, 3.0])
    assert e.value == 2.0 and e.hi - 2.0 == pytest.approx(4.302653 * 1.0 / math.sqrt(3), rel=1e-5)


def test_fit_replicates_recovers_known_slope():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    reps = np.stack([3 * x ** -0.7 * (1 + 0.01 * k) for k in range(-5, 6)])
    f = stats.fit_replicates(x, 3 * x ** -0.7, reps)
    assert f.slope == pytest.approx(-0.7) and f.prefactor == pytest.approx(3.0)
    assert (f.points_dropped, f.n_dropped, f.dropped) == (0, 0, "")


def test_fit_replicates_counts_what_it_leaves_out():
    """A point without a value and replicates with a NaN or a non-positive entry are left out and
    counted; the interval is the one of the kept replicates alone (brute force)."""
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    y = 3 * x ** -0.7
    y[4] = np.nan
    rng = np.random.default_rng(0)
    reps = y * np.exp(0.05 * rng.standard_normal((40, 5)))
    reps[3, 1] = np.nan
    reps[7, 2] = -1.0
    reps[9, 4] = np.nan  # in the dropped column: does not count
    f = stats.fit_replicates(x, y, reps)
    assert (f.n_points, f.points_dropped, f.n_dropped) == (4, 1, 2)
    assert "1 of 5 points" in f.dropped and "2 of 40 replicates" in f.dropped
    kept = np.delete(reps, [3, 7], 0)[:, :4]
    slopes = [np.polyfit(np.log(x[:4]), np.log(r), 1)[0] for r in kept]
    assert f.ci == pytest.approx(tuple(np.quantile(slopes, [0.025, 0.975])), rel=1e-12)
    assert (f.estimate.n_dropped, f.estimate.dropped) == (2, f.dropped)


def test_crossing_against_dense_grid():
    x = np.linspace(0, 1, 11)
    y = (x - 0.537) * 3
    assert stats.crossing(x, y, 0.0) == pytest.approx(0.537)
    assert math.isnan(stats.crossing(x, y, 10.0))
    assert stats.crossing(x, -y, 0.0, direction="down") == pytest.approx(0.537)
    assert stats.interp_crossing(1.0, 4.0, 1.0, 16.0, 4.0, log_x=True, log_y=True) == pytest.approx(2.0)


def test_wilson_interval_covers_at_its_level_and_matches_known_values():
    from stumplib.core.stats import wilson_interval

    lo, hi = wilson_interval(0, 10)  # known closed form at k = 0: [0, z^2 / (n + z^2)]
    assert lo == 0.0 and hi == pytest.approx(1.96 ** 2 / (10 + 1.96 ** 2), rel=1e-3)
    rng = np.random.default_rng(1)
    p, n = 0.2, 30
    k = rng.binomial(n, p, size=4000)
    lo, hi = wilson_interval(k, n)
    cover = np.mean((lo <= p) & (p <= hi))
    assert 0.92 < cover < 0.98
    assert np.all((lo <= k / n) & (k / n <= hi))

def test_fit_power_law_recovers_exponent_and_covers():
    fit_power_law = stats.fit_power_law
    rng = np.random.default_rng(0)
    x = np.geomspace(1, 1e4, 30)
    covered = 0
    for rep in range(40):
        y = 3.0 * x ** -0.25 * np.exp(rng.normal(0, 0.05, x.size))
        fit = fit_power_law(x, y, n_boot=400, seed=rep)
        covered += fit.contains(-0.25)
    assert abs(fit.slope + 0.25) < 0.02 and fit.prefactor == pytest.approx(3.0, rel=0.2)
    assert covered >= 32  # nominal 95% of 40 = 38; bootstrap intervals run a bit narrow


def test_extrapolate_linear_recovers_a_line_and_its_error_by_monte_carlo():
    rng = np.random.default_rng(0)
    x = np.array([0.004, 0.002, 0.001])
    se = np.array([3e-5, 2e-5, 1e-5])
    vals, errs = [], []
    for _ in range(2000):
        y = 0.002 + 0.1 * x + se * rng.standard_normal(3)
        e, s = stats.extrapolate_linear(x, y, se)
        vals.append(e.value)
        errs.append(s)
    assert np.mean(vals) == pytest.approx(0.002, abs=3 * np.std(vals) / np.sqrt(2000))
    assert np.std(vals) == pytest.approx(np.mean(errs), rel=0.05)  # the stated error is the spread
    one, s1 = stats.extrapolate_linear([0.001], [0.5], [0.1])
    assert one.value == 0.5 and s1 == 0.1


def test_coverage_ratio_range_holds_95_percent_of_nominal_monte_carlo_ratios():
    from stumplib.core.stats import coverage_ratio_range

    lo, hi = coverage_ratio_range(5)
    assert (round(lo, 2), round(hi, 2)) == (0.6, 2.87)
    rng = np.random.default_rng(0)
    s = rng.normal(size=(200_000, 5)).std(axis=1, ddof=1)  # sigma = 1, nominal h = 1.96
    r = 1.96 / (1.96 * s)
    inside = np.mean((r >= lo) & (r <= hi))
    assert abs(inside - 0.95) < 0.003  # Monte Carlo error about 5e-4
    assert coverage_ratio_range(50)[1] - coverage_ratio_range(50)[0] < hi - lo  # more seeds
    with pytest.raises(ValueError, match="k must be at least 2"):
        coverage_ratio_range(1)


def test_a_deterministic_result_prints_without_an_interval():
    """An estimate whose interval is the point itself (a deterministic result) prints as the value
    and the word "deterministic", never as "0.2500 [0.2500, 0.2500]"; a real interval keeps its
    brackets (issue 47, part 5)."""
    from stumplib.core.stats import Estimate

    assert format(Estimate(0.25, 0.25, 0.25, "quadrature"), ".4f") == "0.2500 (deterministic)"
    assert format(Estimate(0.25, 0.24, 0.26, "seeds"), ".2f") == "0.25 [0.24, 0.26]"
    # a real interval narrower than the printed digits gets the digits that show it
    e = Estimate(0.2500351, 0.2499505, 0.2500482, "windows")
    assert format(e, ".4f") == "0.25004 [0.24995, 0.25005]"
    assert format(Estimate(1.0, 1.0 - 1e-12, 1.0 + 1e-12, "fit"), ".2f") == (
        "1.000000 [1.000000, 1.000000]")  # at most four more digits
