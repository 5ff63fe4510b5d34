"""Tests of ``stumplib.book.studies.lowest_summary``: the statistics of many seeds' searches."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.book.studies import lowest_summary as ls


def test_summary_of_synthetic_searches_has_the_known_statistics():
    """Two dimensions, three seeds each, start 0 the informed one: the lowest minima, the informed
    ones, their paired theta gap with a Student interval, the share of seeds whose lowest lies
    below, the saturation share and the minima counted are what the records say."""
    def rec(theta_inf, theta_low, loss_inf, loss_low, sat, nd):
        S = len(theta_inf)
        return dict(loss=np.column_stack([loss_inf, loss_low]),
                    theta=np.column_stack([theta_inf, theta_low]),
                    test_error=np.column_stack([np.full(S, 0.003), np.full(S, 0.0028)]),
                    converged=np.ones((S, 2), bool), label=np.zeros((S, 2), int),
                    lowest=np.where(np.asarray(loss_low) < loss_inf, 1, 0),
                    saturated=np.asarray(sat), n_distinct=np.asarray(nd),
                    seconds=np.full(S, 2.0), objective_seconds=np.full(S, 1e-3))
    a = rec([0.10, 0.11, 0.12], [0.09, 0.10, 0.11], [1.0, 1.0, 1.0], [0.9, 0.9, 0.9],
            [True, True, False], [2, 3, 4])
    b = rec([0.10, 0.10, 0.10], [0.10, 0.10, 0.10], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0],
            [True, True, True], [1, 1, 1])
    s = ls.summary({500: a, 1000: b})
    assert list(s["ds"]) == [500, 1000] and list(s["seeds"]) == [3, 3]
    assert s["theta_gap"][0] == pytest.approx(0.01) and s["theta_gap_se"][0] == pytest.approx(0.0)
    assert s["lowest_theta"][0] == pytest.approx(0.10) and s["informed_theta"][0] == pytest.approx(0.11)
    assert s["lowest_test_error"][0] == pytest.approx(0.0028)
    assert s["informed_test_error"][1] == pytest.approx(0.003)  # the informed one is the lowest
    assert list(s["share_lower"]) == [1.0, 0.0]
    assert s["saturated"][0] == pytest.approx(2 / 3) and s["saturated"][1] == 1.0
    assert s["distinct_mean"][0] == 3 and s["distinct_max"][0] == 4
    with pytest.raises(ValueError, match="at least one d"):
        ls.summary({})


def test_limits_recover_a_planted_approach_and_paired_gaps_pool_the_asked_d():
    """Seed means that approach 0.0028 like 1/d with known standard errors: the chosen form's
    limit holds the truth; the paired gaps pool only the dimensions asked for."""
    ds = np.array([500, 1000, 2000, 4000, 8000])
    y = 0.0028 + 0.05 / ds
    se = np.full(ds.size, 2e-6)
    summ = {"ds": ds, "lowest_test_error": y, "lowest_test_error_se": se,
            "lowest_theta": 0.095 + 1 / ds, "lowest_theta_se": np.full(ds.size, 1e-4),
            "informed_test_error": y, "informed_test_error_se": se,
            "informed_theta": np.full(ds.size, 0.1), "informed_theta_se": np.full(ds.size, 1e-4)}
    lim = ls.limits(summ)
    assert set(lim) == {"lowest_test_error", "lowest_theta", "informed_test_error",
                        "informed_theta"}
    e = lim["lowest_test_error"]["envelope"]
    assert e.lo <= 0.0028 <= e.hi and e.hi - e.lo < 1e-4
    assert lim["lowest_test_error"]["form"] in ("1/d", "1/d + 1/d^2")
    rec = {d: {"theta": np.array([[0.10, 0.09], [0.10, 0.10]]), "converged": np.ones((2, 2), bool),
               "lowest": np.array([1, 0])} for d in (500, 1000)}
    assert ls.paired_gaps(rec).tolist() == pytest.approx([0.01, 0.0, 0.01, 0.0])
    assert ls.paired_gaps(rec, [1000]).tolist() == pytest.approx([0.01, 0.0])


def test_pool_searches_joins_the_seeds_of_two_runs_per_dimension():
    """Two runs' seeds pooled per d give the summary of all seeds together; a d of one run only
    is that run's; runs with different numbers of starts are padded without changing anything."""
    def rec(S, K, theta, seed0):
        rng = np.random.default_rng(seed0)
        loss = 1.0 + rng.random((S, K))
        lowest = np.argmin(loss, 1)
        return dict(loss=loss, theta=np.full((S, K), theta) + 1e-3 * rng.random((S, K)),
                    test_error=np.full((S, K), 0.0028), converged=np.ones((S, K), bool),
                    label=np.tile(np.arange(K), (S, 1)), lowest=lowest,
                    saturated=lowest < K // 2, n_distinct=np.full(S, K),
                    seconds=np.full(S, 2.0), objective_seconds=np.full(S, 1e-3))
    old = {500: rec(3, 4, 0.10, 0), 1000: rec(2, 4, 0.10, 1)}
    new = {1000: rec(4, 3, 0.09, 2), 2000: rec(2, 3, 0.09, 3)}
    pooled = ls.pool_searches(old, new)
    assert sorted(pooled) == [500, 1000, 2000]
    assert pooled[1000]["loss"].shape == (6, 4) and pooled[1000]["seeds"].tolist() == [2, 4]
    assert np.isnan(pooled[1000]["loss"][2:, 3]).all() and not pooled[1000]["converged"][2:, 3].any()
    s = ls.summary(pooled)
    lows = np.r_[old[1000]["theta"][np.arange(2), old[1000]["lowest"]],
                 new[1000]["theta"][np.arange(4), new[1000]["lowest"]]]
    assert s["seeds"].tolist() == [3, 6, 2]
    assert s["lowest_theta"][1] == pytest.approx(lows.mean())
    assert s["lowest_theta"][0] == pytest.approx(ls.summary(old)["lowest_theta"][0])


def test_limits_with_three_d_use_the_forms_the_data_do_not_reject():
    """accept="p_value" (the confirmatory run's rule): three d suffice; the two-parameter forms
    are fitted, one rejected at 5% drops out; "aicc" needs four d and gives nothing here."""
    ds = np.array([2000, 4000, 8000])
    y = 0.0966 + 2.0 / ds
    summ = {"ds": ds, "lowest_theta": y, "lowest_theta_se": np.full(3, 1e-6),
            "lowest_test_error": 0.0028 + 0.02 / ds, "lowest_test_error_se": np.full(3, 1e-4),
            **{f"informed_{k}{s}": np.full(3, np.nan) for k in ("theta", "test_error")
               for s in ("", "_se")}}
    lim = ls.limits(summ, accept="p_value")
    assert set(lim) == {"lowest_theta", "lowest_test_error"}
    assert lim["lowest_theta"]["acceptable"] == ["1/d"]
    assert set(lim["lowest_test_error"]["acceptable"]) == {"1/d", "1/sqrt(d)"}
    assert all(f["limit"].lo >= 0 for f in lim["lowest_test_error"]["fits"].values())
    assert ls.limits(summ) == {}
    with pytest.raises(ValueError, match="accept"):
        ls.limits(summ, accept="envelope")
