"""stumplib.core.stats.ratios: ratio intervals cover at their level and never leave the support."""
import math

import numpy as np
import pytest

from stumplib.core.stats import (Estimate, clip_to_support, ratio_of_means, student_factor,
                                 two_way_ratio)


def _corpora(rng, R, C=200, sd=0.3):
    """``R`` corpora whose means differ (``sd`` around 1) seen through ``C`` shared contexts: the
    true ratio of the means of ``num`` over ``den`` is 1."""
    mu = np.exp(sd * rng.standard_normal(R) - sd ** 2 / 2)  # mean 1, positive
    ctx = rng.exponential(size=(C, 1))
    return ctx * mu, ctx[:, 0]


@pytest.mark.parametrize("R, lo, hi", [(3, 0.92, 0.995), (16, 0.92, 0.985)])
def test_two_way_ratio_covers_at_its_level(R, lo, hi):
    # 300 seeded draws (Monte Carlo error about 1.3%): the 95% interval holds the true ratio 1 in
    # 92.7% of them at R = 3 and 95.3% at R = 16; without the Student correction (a plain percentile bootstrap over the
    # corpora) about 71% at R = 3
    rng = np.random.default_rng(1)
    hits = 0
    for k in range(300):
        a, d = _corpora(rng, R)
        e = two_way_ratio(a, d, n_boot=200, seed=k)
        hits += e.lo <= 1.0 <= e.hi
    assert lo <= hits / 300 <= hi


def test_two_way_ratio_with_a_comparator_trained_on_its_own_corpora_covers():
    """A denominator from other corpora (8 against the numerator's 16, both with corpus effects):
    resampling both sets covers the true ratio 1 at about the level (96.3% of 300 draws, Monte
    Carlo error about 1.3%); one comparator corpus held fixed (as chapter 5 once did) covers 61%."""
    rng = np.random.default_rng(2)
    hits = fixed = 0
    for k in range(300):
        a, _ = _corpora(rng, 16)
        d, _ = _corpora(rng, 8)
        hits += (e := two_way_ratio(a, d, n_boot=200, seed=k)).lo <= 1.0 <= e.hi
        f = two_way_ratio(a, d[:, :1], n_boot=200, seed=k)  # one comparator, held fixed
        fixed += f.lo <= 1.0 <= f.hi
        assert e.value == pytest.approx(a.mean() / d.mean())
    assert 0.92 <= hits / 300 <= 0.99 and fixed / 300 < hits / 300 - 0.1, (hits, fixed)


def test_two_way_ratio_stays_positive_where_a_linear_correction_goes_below_zero():
    # three corpora with very different means (the chapter-5 situation): the Student correction
    # applied to linear deviations put the lower end below 0; on the log scale it cannot
    rng = np.random.default_rng(3)
    ctx = rng.exponential(size=(400, 1))
    a = ctx * np.array([0.3, 1.0, 6.0])
    d = ctx[:, 0]
    e = two_way_ratio(a, d, n_boot=400, seed=0)
    assert 0 < e.lo <= e.value <= e.hi and math.isfinite(e.hi)
    # the linear correction on the same replicates leaves the support
    from stumplib.core.stats import resample_indices

    ic, ir = resample_indices(400, 400, 0), resample_indices(3, 400, 1)
    reps = np.array([a[i][:, j].mean() / d[i].mean() for i, j in zip(ic, ir)])
    lin = e.value + (reps - e.value) * student_factor(3)
    assert np.quantile(lin, 0.025) < 0


def test_floor_one_against_bayes():
    # a risk over the Bayes risk: the truth is >= 1 and the sample ratio wobbles around 1.0001
    rng = np.random.default_rng(5)
    bayes = rng.exponential(size=(3000, 1))
    other = bayes * (1 + 1e-4) + 1e-3 * rng.standard_normal((3000, 1)) ** 2
    for f in (two_way_ratio, lambda a, d, **kw: ratio_of_means(a[:, 0], d[:, 0], **kw)):
        raw = f(other, bayes, n_boot=300, seed=2)
        floored = f(other, bayes, n_boot=300, seed=2, floor=1.0)
        assert floored.lo >= 1.0 and floored.value >= 1.0 and floored.lo <= floored.value
        assert floored.hi == pytest.approx(max(raw.hi, 1.0))


def test_student_factor():
    assert student_factor(1) == 1.0
    assert student_factor(3) == pytest.approx(4.3027 / 1.95996 * math.sqrt(1.5), rel=1e-4)
    assert 1.0 < student_factor(16) < student_factor(3)
    assert student_factor(10_000) == pytest.approx(1.0, abs=1e-3)


def test_clip_to_support():
    e = clip_to_support(Estimate(2.54, -0.4, 5.5, "bootstrap"), floor=1.0)
    assert (e.value, e.lo, e.hi) == (2.54, 1.0, 5.5) and e.kind == "bootstrap"
    e = clip_to_support(Estimate(0.9, 0.8, 0.95, "bootstrap"), floor=1.0)  # wholly below
    assert (e.value, e.lo, e.hi) == (1.0, 1.0, 1.0)
    e = clip_to_support(Estimate(3.0, 3.2, 4.0, "bootstrap"))  # a percentile interval missing it
    assert (e.lo, e.hi) == (3.0, 4.0)
    nan = clip_to_support(Estimate.nan("bootstrap"), floor=1.0)
    assert math.isnan(nan.value) and math.isnan(nan.lo)
    with pytest.raises(ValueError, match="floor"):
        clip_to_support(Estimate(1, 0, 2), floor=2.0, ceiling=1.0)


def test_range_is_not_an_interval():
    r = Estimate.range([48.2, 102.0, 138.0, 90.0, 120.0])
    assert (r.value, r.lo, r.hi, r.kind, r.n) == (102.0, 48.2, 138.0, "range", 5)
    assert r.is_range and math.isnan(r.level)
    assert format(r, ".3g") == "102 (range 48.2 to 138)"
    assert "[" not in str(r)
    assert Estimate.range([1.0, 3.0], center="mean").value == 2.0
    with pytest.raises(ValueError, match="finite"):
        Estimate.range([np.nan])
