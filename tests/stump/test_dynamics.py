"""Population dynamics: the flow is minus the exact gradient, reaches 1e12, shows the t^(1/4) law,
GD with a small step follows it (bad inputs: ``tests/test_bad_input.py``)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from stumplib.stump import dynamics as D
from stumplib.core.stats import window_refits
from stumplib.stump.population import population_loss, population_loss_and_grad

POINTS = [(5.0, 0.0), (3.0, 2.5), (20.0, 18.0), (300.0, 245.0)]


@pytest.fixture(scope="module")
def long_flow():
    """Two runs to t = 1e12: a small uncalibrated start and an already calibrated one."""
    return D.integrate_flow([5.0, 5.0], [0.0, 5.0], 1e12, rtol=1e-6, atol=1e-8, n_records=161)


# ---------------------------------------------------------------------------------------------
# the right-hand side
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("beta,b", POINTS)
def test_velocity_is_minus_finite_difference_gradient(beta, b):
    vb, vB = D.flow_velocity(beta, b)
    h = 1e-5 * max(1.0, beta)
    fd_beta = (population_loss(beta + h, b) - population_loss(beta - h, b)) / (2 * h)
    fd_b = (population_loss(beta, b + h) - population_loss(beta, b - h)) / (2 * h)
    scale = max(abs(float(fd_beta)), abs(float(fd_b)))
    assert abs(float(vb) + float(fd_beta)) < 1e-5 * scale
    assert abs(float(vB) + float(fd_b)) < 1e-5 * scale


def test_log_time_rhs_is_minus_exact_gradient_times_one_plus_t():
    beta = np.array([p[0] for p in POINTS])
    b = np.array([p[1] for p in POINTS])
    _, gb, gB = population_loss_and_grad(torch.tensor(beta), torch.tensor(b), 0.3, 0.7)
    s = np.log1p(123.0)
    out = D.log_time_rhs(s, np.concatenate([beta, b]), 0.3, 0.7)
    np.testing.assert_allclose(out, -124.0 * np.concatenate([gb.numpy(), gB.numpy()]), rtol=1e-12)
    # vectorised call (2R, k): columns are independent states
    Y = np.stack([np.concatenate([beta, b]), np.concatenate([beta * 2, b * 2])], 1)
    outv = D.log_time_rhs(s, Y, 0.3, 0.7)
    np.testing.assert_allclose(outv[:, 0], out, rtol=1e-12)
    np.testing.assert_allclose(outv[:, 1], D.log_time_rhs(s, Y[:, 1].copy(), 0.3, 0.7), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# long-time behaviour
# ---------------------------------------------------------------------------------------------
def test_flow_reaches_1e12_finite(long_flow):
    r = long_flow
    assert r.t[-1] == pytest.approx(1e12)
    for arr in (r.beta, r.b, r.loss, r.dbeta_dt, r.db_dt):
        assert np.all(np.isfinite(arr))
    late = r.t > 1e3
    assert np.all(np.diff(r.beta[:, late], axis=1) > 0)          # the scale keeps growing
    assert np.all(np.diff(r.loss[:, late], axis=1) < 0)          # the loss keeps falling
    # derived limits: beta^4 / t -> 8 / (1 + tau_hi^2), beta * RMSE -> 1, c -> tau_hi from above
    ratio = r.beta[:, -1] ** 4 / r.t[-1]
    assert np.all(np.abs(ratio / D.scale_constant(0.8) - 1) < 0.02)
    assert np.all(np.abs(r.beta[:, -1] * r.rmse[:, -1] - 1) < 0.005)
    assert np.all((r.c[:, -1] > 0.8) & (r.c[:, -1] < 0.81))


def test_exponents_of_a_short_run_are_one_quarter():
    r = D.integrate_flow(20.0, 18.0, 1e9, rtol=1e-6, atol=1e-8, n_records=91)
    fb = D.fit_exponent(r.t, r.beta[0], 1e5, 1e9)
    fe = D.fit_exponent(r.t, r.rmse[0], 1e5, 1e9)
    assert abs(fb.slope - 0.25) < 0.03
    assert abs(fe.slope + 0.25) < 0.03
    assert fb.ci[0] <= fb.slope <= fb.ci[1]


def test_local_exponent_approaches_one_quarter_from_above(long_flow):
    p = long_flow.dlogbeta_dlogt[0]
    late = long_flow.t >= 1e6
    assert np.all(np.diff(p[late]) < 0) and np.all(p[late] > 0.25)
    assert p[-1] - 0.25 < 1e-3
    est = D.extrapolate_exponent(long_flow.beta[0], p, beta_min=50)
    assert abs(est.value - 0.25) < 1e-3 and est.lo <= est.value <= est.hi and est.kind == "windows"


def test_valley_matches_numerical_minimiser():
    for beta in (200.0, 800.0):
        res = minimize_scalar(lambda c: float(population_loss(beta, c * beta)),
                              bounds=(0.8, 0.9), method="bounded", options={"xatol": 1e-9})
        pred = D.valley_c(beta, 0.8)
        assert abs(res.x - pred) < 0.3 / beta                     # O(1/beta) beyond the leading term
        assert abs((res.x - 0.8) / (pred - 0.8) - 1) < 0.1


def test_calibration_time_definition(long_flow):
    tc = D.calibration_time(long_flow)
    assert tc[0] > 10 and tc[1] == 0.0                             # c0 = 1 >= tau_hi and beta grows at once
    beta, b = D.interpolate_flow(long_flow, [tc[0] * 1.05], run=0)
    assert b[0] / beta[0] >= 0.8
    r = long_flow
    before = (r.t > 0) & (r.t < tc[0] * 0.95)
    h = np.minimum(r.c[0] - 0.8, r.dlogbeta_dlogt[0] - np.abs(r.dc_dlogt[0]))
    assert np.all(h[before] < 0)


# ---------------------------------------------------------------------------------------------
# gradient descent
# ---------------------------------------------------------------------------------------------
def test_gd_with_small_step_follows_the_flow_with_first_order_error():
    flow = D.integrate_flow(5.0, 0.0, 150.0, rtol=1e-9, atol=1e-11, n_records=300, t_first=0.5)
    errs = []
    for lr in (1.0, 0.5):
        gd = D.population_gd(5.0, 0.0, lr, int(150 / lr), n_records=40)
        fb, fB = D.interpolate_flow(flow, gd.t[0])
        errs.append(max(np.max(np.abs(gd.beta[0] / fb - 1)), np.max(np.abs(gd.b[0] - fB))))
    assert errs[0] < 0.02
    assert 1.6 < errs[0] / errs[1] < 2.4                           # Euler: error ~ lr


def test_gd_batch_equals_single_runs_and_too_large_step_raises():
    batch = D.population_gd([5.0, 20.0], [0.0, 20.0], [1.0, 10.0], 50, n_records=10)
    one = D.population_gd(20.0, 20.0, 10.0, 50, n_records=10)
    np.testing.assert_allclose(batch.beta[1], one.beta[0], rtol=1e-12)
    with pytest.raises(D.TrainingDiverged, match="lr"):
        D.population_gd(5.0, 0.0, 1e4, 200, n_records=5)


def test_hessian_max_eig_at_one_point_matches_three_point_second_differences():
    """Diagonal three-point and mixed four-point differences with a step 1e-3: truncation error
    O(h^2), measured 6.4e-7 relative (6.6e-5 at h = 1e-2, the h^2 law); rounding ~1e-10."""
    beta, b = 20.0, 18.0
    h = 1e-3
    L = lambda x, y: float(population_loss(x, y))  # noqa: E731
    Hbb = (L(beta + h, b) - 2 * L(beta, b) + L(beta - h, b)) / h ** 2
    HBB = (L(beta, b + h) - 2 * L(beta, b) + L(beta, b - h)) / h ** 2
    HbB = (L(beta + h, b + h) - L(beta + h, b - h) - L(beta - h, b + h) + L(beta - h, b - h)) / (4 * h * h)
    lam = np.linalg.eigvalsh(np.array([[Hbb, HbB], [HbB, HBB]]))[-1]
    assert D.hessian_max_eig(beta, b)[0] == pytest.approx(lam, rel=1e-5)


# ---------------------------------------------------------------------------------------------
# fits and the field
# ---------------------------------------------------------------------------------------------
def test_fit_exponent_recovers_a_pure_power_law_and_brackets_a_drifting_one():
    t = np.geomspace(1e2, 1e10, 81)
    f = D.fit_exponent(t, 3 * t ** 0.37, 1e3, 1e9)
    assert f.slope == pytest.approx(0.37, abs=1e-12) and f.ci_width < 1e-10
    g = D.fit_exponent(t, t ** 0.25 * (1 + 30 * t ** -0.25), 1e3, 1e9)
    assert g.ci[0] < g.slope < g.ci[1] and g.ci_width > 1e-3 and g.method == "windows"


def test_extrapolate_exponent_on_synthetic_corrections():
    beta = np.geomspace(30, 3000, 60)
    p = 0.25 + 0.7 / beta + 0.1 * np.log(beta) / beta
    est = D.extrapolate_exponent(beta, p, beta_min=30)
    assert est.value == pytest.approx(0.25, abs=1e-9) and est.contains(0.25, tol=1e-6)
    assert (est.n, est.n_dropped) == (60, 0)
    holes = p.copy()
    holes[[5, 40]] = np.nan
    est2 = D.extrapolate_exponent(np.r_[10.0, beta], np.r_[0.3, holes], beta_min=30)
    assert (est2.n, est2.n_dropped) == (58, 2) and "2 records" in est2.dropped


def test_window_refits_draw_windows_of_the_requested_size():
    u = np.linspace(0.0, 10.0, 101)
    spans = window_refits(u, lambda m: (u[m].min(), u[m].max()), 200, min_fraction=0.5, seed=3)
    assert spans.shape == (200, 2)
    width = spans[:, 1] - spans[:, 0]
    assert np.all(width >= 5.0 - 0.1 - 1e-9) and np.all(spans[:, 0] >= 0) and np.all(spans[:, 1] <= 10)
    again = window_refits(u, lambda m: (u[m].min(), u[m].max()), 200, min_fraction=0.5, seed=3)
    np.testing.assert_array_equal(spans, again)


@pytest.mark.parametrize("beta, b", [(20.0, 18.0), (5.0, 0.0)])
def test_hessian_max_eig_matches_second_differences_of_the_loss(beta, b):
    """The stability limit's curvature against an independent Hessian: second differences of the
    population loss values (no gradient involved). Steps 1e-3 of each coordinate (mixed
    differences on the diagonal too, step 2h): measured errors 3.8e-4 at (20, 18) and 2.9e-6 at
    (5, 0), hence the tolerance 2e-3 (five times the larger)."""
    from stumplib.stump.population import population_loss
    x0, h = np.array([beta, b]), np.array([1e-3 * beta, 1e-3 * max(abs(b), 1.0)])
    L = lambda v: float(population_loss(*v))  # noqa: E731
    H = np.empty((2, 2))
    for i, j in np.ndindex(2, 2):
        ei, ej = np.eye(2)[i] * h[i], np.eye(2)[j] * h[j]
        H[i, j] = (L(x0 + ei + ej) - L(x0 + ei - ej) - L(x0 - ei + ej) + L(x0 - ei - ej)) / (
            4 * h[i] * h[j])
    lam = D.hessian_max_eig([beta], [b])[0]
    assert lam == pytest.approx(np.linalg.eigvalsh(H)[-1], rel=2e-3)


def test_gradient_field_is_the_flow_direction():
    f = D.gradient_field([0.0, 0.5, 0.9], [0.5, 1.0, 2.0])
    assert f["dc_dt"].shape == (3, 3)
    vb, vB = D.flow_velocity(10.0, 5.0)
    assert f["dc_dt"][1, 1] == pytest.approx(float((vB - 0.5 * vb) / 10.0), rel=1e-10)
    assert f["dlnbeta_dt"][1, 1] == pytest.approx(float(vb / 10.0), rel=1e-10)
    assert np.all(f["dc_dt"][:, 0] > 0)        # c = 0 lies below every threshold: c is pushed up


# ---------------------------------------------------------------------------------------------
# GD on CUDA
# ---------------------------------------------------------------------------------------------
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
def test_gd_on_cuda_matches_cpu():
    a = D.population_gd(5.0, 0.0, 1.0, 30, n_records=5, device="cpu")
    b = D.population_gd(5.0, 0.0, 1.0, 30, n_records=5, device="cuda")
    np.testing.assert_allclose(a.beta, b.beta, rtol=1e-10)


# ------------------------------------------------------------------------------------ verdicts
def _synthetic_flow(beta_rows):
    t = np.concatenate([[0.0], np.logspace(-2, 8, 61)])
    beta = np.array([f(t) for f in beta_rows])
    z = np.zeros_like(beta)
    return D.FlowResult(t=t, beta=beta, b=beta * 0.9, loss=1 / beta ** 2, dbeta_dt=z, db_dt=z,
                        beta0=beta[:, 0], b0=beta[:, 0] * 0.9, tau_lo=0.2, tau_hi=0.8)


def test_growth_share_is_the_fraction_of_log_growth_before_t_cal():
    # beta = 2 (1 + t)^(1/4): log growth from log 2 to log 2 + log(1 + 1e8)/4
    flow = _synthetic_flow([lambda t: 2 * (1 + t) ** 0.25, lambda t: 2 * (1 + t) ** 0.25])
    share = D.growth_share_at_calibration(flow, [0.0, 1e4])
    assert share[0] == pytest.approx(0.0, abs=1e-12)
    # interpolation is linear in log(1 + t): exact for log beta here
    assert share[1] == pytest.approx(np.log(1 + 1e4) / np.log(1 + 1e8), rel=1e-6)
    assert np.isnan(D.growth_share_at_calibration(flow, [np.nan, 1.0])[0])


def test_rmse_local_exponent_is_the_flow_derivative_of_log_rmse(long_flow):
    # exact -t|grad L|^2/(2L) against centred differences of log sqrt(L) in log t (161 records
    # over 14 decades: the difference error is below 1e-3 where the exponent varies slowly)
    t, r = long_flow.t[1:], long_flow.rmse[0][1:]
    num = np.gradient(np.log(r), np.log(t))
    late = t > 1e6
    np.testing.assert_allclose(long_flow.dlogrmse_dlogt[0][1:][late][1:-1], num[late][1:-1],
                               atol=1e-3)


def test_asymptotic_exponents_are_the_quarter_powers(long_flow):
    # the claim's limits: beta ~ t^(1/4), RMSE ~ t^(-1/4); corrections O(log beta / beta)
    p, q = D.asymptotic_exponents(long_flow, 0, t_from=1e8, seed=1)
    assert p.value == pytest.approx(0.25, abs=2e-3) and q.value == pytest.approx(-0.25, abs=2e-3)
    assert p.width < 0.01 and q.width < 0.01
    with pytest.raises(ValueError, match="run"):
        D.asymptotic_exponents(long_flow, 5, t_from=1e8)
