"""What chapter 2 measures on flows (stumplib.stump.exponents): the t^(1/4) exponents fitted and
extrapolated, the end of calibration and the growth before it."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.core.stats import window_refits
from stumplib.stump import exponents as EX
from stumplib.stump import flow as FL
from stumplib.stump import FlowOptions


@pytest.fixture(scope="module")
def long_flow():
    """Two runs to t = 1e12: a small uncalibrated start and an already calibrated one."""
    return FL.integrate_flow([5.0, 5.0], [0.0, 5.0], 1e12, n_records=161,
                             options=FlowOptions(rtol=1e-6, atol=1e-8))


def test_exponents_of_a_short_run_are_one_quarter():
    r = FL.integrate_flow(20.0, 18.0, 1e9, n_records=91, options=FlowOptions(rtol=1e-6, atol=1e-8))
    fb = EX.fit_exponent(r.t, r.beta[0], 1e5, 1e9)
    fe = EX.fit_exponent(r.t, r.rmse[0], 1e5, 1e9)
    assert abs(fb.slope - 0.25) < 0.03
    assert abs(fe.slope + 0.25) < 0.03
    assert fb.ci[0] <= fb.slope <= fb.ci[1]


def test_local_exponent_approaches_one_quarter_from_above(long_flow):
    p = long_flow.dlogbeta_dlogt[0]
    late = long_flow.t >= 1e6
    assert np.all(np.diff(p[late]) < 0) and np.all(p[late] > 0.25)
    assert p[-1] - 0.25 < 1e-3
    est = EX.extrapolate_exponent(long_flow.beta[0], p, beta_min=50)
    assert abs(est.value - 0.25) < 1e-3 and est.lo <= est.value <= est.hi and est.kind == "windows"


def test_calibration_time_definition(long_flow):
    tc = EX.calibration_time(long_flow)
    assert tc[0] > 10 and tc[1] == 0.0                             # c0 = 1 >= tau_hi and beta grows at once
    beta, b = FL.interpolate_flow(long_flow, [tc[0] * 1.05], run=0)
    assert b[0] / beta[0] >= 0.8
    r = long_flow
    before = (r.t > 0) & (r.t < tc[0] * 0.95)
    h = np.minimum(r.c[0] - 0.8, r.dlogbeta_dlogt[0] - np.abs(r.dc_dlogt[0]))
    assert np.all(h[before] < 0)


# ---------------------------------------------------------------------------------------------
# fits and the field
# ---------------------------------------------------------------------------------------------
def test_fit_exponent_recovers_a_pure_power_law_and_brackets_a_drifting_one():
    t = np.geomspace(1e2, 1e10, 81)
    f = EX.fit_exponent(t, 3 * t ** 0.37, 1e3, 1e9)
    assert f.slope == pytest.approx(0.37, abs=1e-12) and f.ci_width < 1e-10
    g = EX.fit_exponent(t, t ** 0.25 * (1 + 30 * t ** -0.25), 1e3, 1e9)
    assert g.ci[0] < g.slope < g.ci[1] and g.ci_width > 1e-3 and g.method == "windows"


def test_extrapolate_exponent_on_synthetic_corrections():
    beta = np.geomspace(30, 3000, 60)
    p = 0.25 + 0.7 / beta + 0.1 * np.log(beta) / beta
    est = EX.extrapolate_exponent(beta, p, beta_min=30)
    assert est.value == pytest.approx(0.25, abs=1e-9) and est.contains(0.25, tol=1e-6)
    assert (est.n, est.n_dropped) == (60, 0)
    holes = p.copy()
    holes[[5, 40]] = np.nan
    est2 = EX.extrapolate_exponent(np.r_[10.0, beta], np.r_[0.3, holes], beta_min=30)
    assert (est2.n, est2.n_dropped) == (58, 2) and "2 records" in est2.dropped


def test_window_refits_draw_windows_of_the_requested_size():
    u = np.linspace(0.0, 10.0, 101)
    spans = window_refits(u, lambda m: (u[m].min(), u[m].max()), 200, min_fraction=0.5, seed=3)
    assert spans.shape == (200, 2)
    width = spans[:, 1] - spans[:, 0]
    assert np.all(width >= 5.0 - 0.1 - 1e-9) and np.all(spans[:, 0] >= 0) and np.all(spans[:, 1] <= 10)
    again = window_refits(u, lambda m: (u[m].min(), u[m].max()), 200, min_fraction=0.5, seed=3)
    np.testing.assert_array_equal(spans, again)


# ------------------------------------------------------------------------------------ verdicts
def _synthetic_flow(beta_rows):
    t = np.concatenate([[0.0], np.logspace(-2, 8, 61)])
    beta = np.array([f(t) for f in beta_rows])
    z = np.zeros_like(beta)
    return FL.FlowResult(t=t, beta=beta, b=beta * 0.9, loss=1 / beta ** 2, dbeta_dt=z, db_dt=z,
                        beta0=beta[:, 0], b0=beta[:, 0] * 0.9, tau_lo=0.2, tau_hi=0.8)


def test_growth_share_is_the_fraction_of_log_growth_before_t_cal():
    # beta = 2 (1 + t)^(1/4): log growth from log 2 to log 2 + log(1 + 1e8)/4
    flow = _synthetic_flow([lambda t: 2 * (1 + t) ** 0.25, lambda t: 2 * (1 + t) ** 0.25])
    share = EX.growth_share_at_calibration(flow, [0.0, 1e4])
    assert share[0] == pytest.approx(0.0, abs=1e-12)
    # interpolation is linear in log(1 + t): exact for log beta here
    assert share[1] == pytest.approx(np.log(1 + 1e4) / np.log(1 + 1e8), rel=1e-6)
    assert np.isnan(EX.growth_share_at_calibration(flow, [np.nan, 1.0])[0])


def test_asymptotic_exponents_are_the_quarter_powers(long_flow):
    # the claim's limits: beta ~ t^(1/4), RMSE ~ t^(-1/4); corrections O(log beta / beta)
    p, q = EX.asymptotic_exponents(long_flow, 0, t_from=1e8, seed=1)
    assert p.value == pytest.approx(0.25, abs=2e-3) and q.value == pytest.approx(-0.25, abs=2e-3)
    assert p.width < 0.01 and q.width < 0.01
    with pytest.raises(ValueError, match="run"):
        EX.asymptotic_exponents(long_flow, 5, t_from=1e8)
