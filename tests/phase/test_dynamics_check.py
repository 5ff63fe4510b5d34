"""Tests of stumplib.phase.dynamics_check: the start at a fixed point's overlaps, the
classification of the dynamics, and the stability flag checked by minimisation."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase.dynamics_check import (classify_dynamics, median_interval, semantic_start,
                                           stability_by_dynamics)
from stumplib.phase.problem import make_problem, summaries
from stumplib.phase import check_model


def test_dynamics_classification_on_a_constructed_map():
    """A linear map with a known unstable direction (m multiplied by 1.5 a step) and a stable one
    (0.5): iterated from m0, the classification finds growth and decay, and the table's agreement
    with a solver flag follows."""
    rng = np.random.default_rng(0)
    m0 = 3.0
    for factor, expected in ((1.5, "grows"), (0.5, "decays")):
        finals = {d: m0 * factor ** 8 * (1 + 0.1 * rng.standard_normal(4)) for d in (100, 400)}
        assert classify_dynamics(m0, finals) == expected
    assert classify_dynamics(m0, {100: np.full(4, 4.0), 400: np.full(4, 3.5)}) == "unclear"


def test_median_interval_is_the_order_statistics_interval():
    """(x_(j), x_(n+1-j)) with coverage 1 - 2 P(Binomial(n, 1/2) <= j - 1): j = 1 up to n = 8,
    j = 2 at n = 9 (96.1%), j = 3 at n = 12; below n = 6 the range, with its lower coverage."""
    assert median_interval(np.arange(6.0)) == (0.0, 5.0, pytest.approx(1 - 2 / 64))
    lo, hi, cover = median_interval(np.arange(9.0)[::-1])
    assert (lo, hi) == (1.0, 7.0) and cover == pytest.approx(1 - 2 * 10 / 512)
    assert median_interval(np.arange(12.0))[:2] == (2.0, 9.0)
    assert median_interval([3.0, 1.0, np.nan])[:2] == (1.0, 3.0)
    assert median_interval([1.0, 2.0, 3.0])[2] == pytest.approx(0.75)
    assert np.isnan(median_interval([])[0])


def test_a_median_below_the_start_whose_interval_reaches_it_is_not_a_decay():
    """Issue 47, part 7: the dynamics are judged on the median's interval at the largest d."""
    m0 = 3.0
    spread = {100: np.full(6, 2.0), 400: np.array([0.5, 1.0, 2.0, 2.5, 4.0, 6.0])}
    assert np.median(spread[400]) < m0 and classify_dynamics(m0, spread) == "unclear"
    tight = {100: np.full(6, 2.0), 400: np.array([0.5, 1.0, 2.0, 2.5, 2.6, 2.9])}
    assert classify_dynamics(m0, tight) == "decays"


def test_stability_by_dynamics_at_a_stable_semantic_point():
    from stumplib.phase.replica import solve_fixed_rule
    fp = solve_fixed_rule(1.5, n_nodes=6, model=check_model(omega=0.3, branch="semantic"))
    pt = dict(omega=0.3, alpha=1.5, theta=float(fp["theta"]), q=float(fp["q"]), derivative=-1.6)
    rows = stability_by_dynamics([pt], [40, 160], 3, cache=False)
    assert rows[0]["solver"] == "stable" and rows[0]["dynamics"] == "decays" and rows[0]["agree"] is True
    assert rows[0]["median_lo"] <= rows[0]["median_abs_m"][-1] <= rows[0]["median_hi"] < 3.0
    unstable = dict(pt, derivative=1.4)  # the same point with a flag saying otherwise: a disagreement
    assert stability_by_dynamics([unstable], [40, 160], 3, cache=False)[0]["agree"] is False


def test_semantic_start_has_the_requested_overlaps():
    pb = make_problem(200, [0, 1], 10, model=check_model(omega=0.3))
    s = summaries(semantic_start(pb, 0.1, 0.08, 0.05), pb.q_star, 0.5)
    np.testing.assert_allclose(s["m"], 0.05, rtol=1e-10)
    np.testing.assert_allclose(s["theta_emp"], 0.4, rtol=1e-10)
    np.testing.assert_allclose(s["q_emp"], 0.08, rtol=1e-10)


def _stored_names(results):
    """The array names of every results file under ``results`` (the keys the cache writes)."""
    names = []
    for p in results.glob("*.npz"):
        with np.load(p) as f:
            names += list(f.files)
    return names


def test_stability_by_dynamics_cache_is_structured_and_reloads_the_same_rows(tmp_path, monkeypatch,
                                                                            book_cache):
    from stumplib import book
    from stumplib.phase.replica import solve_fixed_rule

    monkeypatch.setenv(book.RESULTS_ENV, str(tmp_path))
    monkeypatch.delenv(book.CACHE_ENV, raising=False)
    fp = solve_fixed_rule(1.5, n_nodes=6, model=check_model(omega=0.3, branch="semantic"))
    pts = [dict(omega=0.3, alpha=a, theta=float(fp["theta"]), q=float(fp["q"]), derivative=-1.6)
           for a in (1.5, 2.0)]
    direct = stability_by_dynamics(pts, [20, 30], 2, cache=False)
    assert direct[0] != direct[1]  # two points, two different rows: the index is not lost
    assert stability_by_dynamics(pts, [20, 30], 2) == direct
    assert stability_by_dynamics(pts, [20, 30], 2) == direct  # reloaded
    assert len(list(tmp_path.glob("stability_by_dynamics-*.npz"))) == 1
    assert not [n for n in _stored_names(tmp_path) if n.startswith("p0_") or n.startswith("p1_")]


def test_stability_by_dynamics_leaves_out_runs_that_did_not_converge(monkeypatch):
    """A run reported as not converged is left out of the medians and counted."""
    import stumplib.phase.dynamics_check as dc
    from stumplib.phase.replica import solve_fixed_rule

    fp = solve_fixed_rule(1.5, n_nodes=6, model=check_model(omega=0.3, branch="semantic"))
    pt = dict(omega=0.3, alpha=1.5, theta=float(fp["theta"]), q=float(fp["q"]), derivative=-1.6)
    seen, real = [], dc.minimise

    def flaky(pb, s, n, Q0, **kw):
        r = real(pb, s, n, Q0, **kw)
        seen.append(float(summaries(r["Q"][None], pb.q_star[s:s + 1], 0.5)["m"][0]))
        if pb.d == 20 and s == 0:  # seed 0 at d = 20 reported as not converged
            r = dict(r, converged=False)
        return r

    monkeypatch.setattr(dc, "minimise", flaky)
    row = stability_by_dynamics([pt], [20], 3, cache=False)[0]
    assert row["not_converged"] == 1
    assert row["median_abs_m"][0] == pytest.approx(
        float(np.median(np.abs(seen[1:]))) * np.sqrt(20), rel=1e-12)
