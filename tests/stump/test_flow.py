"""Population gradient flow and GD (stumplib.stump.flow): the flow is minus the exact gradient,
reaches 1e12 on its derived limits, GD with a small step follows it (bad inputs:
``tests/test_bad_input.py``)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.core.errors import TrainingDiverged
from stumplib.stump import flow as FL
from stumplib.stump import landscape as LA
from stumplib.stump.population import population_loss, population_loss_and_grad
from stumplib.stump import FlowOptions, TrainOptions
from stumplib.stump import Prior

POINTS = [(5.0, 0.0), (3.0, 2.5), (20.0, 18.0), (300.0, 245.0)]


@pytest.fixture(scope="module")
def long_flow():
    """Two runs to t = 1e12: a small uncalibrated start and an already calibrated one."""
    return FL.integrate_flow([5.0, 5.0], [0.0, 5.0], 1e12, n_records=161,
                             options=FlowOptions(rtol=1e-6, atol=1e-8))


# ---------------------------------------------------------------------------------------------
# the right-hand side
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("beta,b", POINTS)
def test_velocity_is_minus_finite_difference_gradient(beta, b):
    _, gb, gB = population_loss_and_grad(beta, b)
    vb, vB = -gb, -gB  # the flow's velocity
    h = 1e-5 * max(1.0, beta)
    fd_beta = (population_loss(beta + h, b) - population_loss(beta - h, b)) / (2 * h)
    fd_b = (population_loss(beta, b + h) - population_loss(beta, b - h)) / (2 * h)
    scale = max(abs(float(fd_beta)), abs(float(fd_b)))
    assert abs(float(vb) + float(fd_beta)) < 1e-5 * scale
    assert abs(float(vB) + float(fd_b)) < 1e-5 * scale


def test_log_time_rhs_is_minus_exact_gradient_times_one_plus_t():
    beta = np.array([p[0] for p in POINTS])
    b = np.array([p[1] for p in POINTS])
    _, gb, gB = population_loss_and_grad(torch.tensor(beta), torch.tensor(b), Prior(0.3, 0.7))
    s = np.log1p(123.0)
    out = FL.log_time_rhs(s, np.concatenate([beta, b]), Prior(0.3, 0.7))
    np.testing.assert_allclose(out, -124.0 * np.concatenate([gb.numpy(), gB.numpy()]), rtol=1e-12)
    # vectorised call (2R, k): columns are independent states
    Y = np.stack([np.concatenate([beta, b]), np.concatenate([beta * 2, b * 2])], 1)
    outv = FL.log_time_rhs(s, Y, Prior(0.3, 0.7))
    np.testing.assert_allclose(outv[:, 0], out, rtol=1e-12)
    np.testing.assert_allclose(outv[:, 1], FL.log_time_rhs(s, Y[:, 1].copy(), Prior(0.3, 0.7)), rtol=1e-12)


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
    assert np.all(np.abs(ratio / LA.scale_constant(0.8) - 1) < 0.02)
    assert np.all(np.abs(r.beta[:, -1] * r.rmse[:, -1] - 1) < 0.005)
    assert np.all((r.c[:, -1] > 0.8) & (r.c[:, -1] < 0.81))


def test_rmse_local_exponent_is_the_flow_derivative_of_log_rmse(long_flow):
    # exact -t|grad L|^2/(2L) against centred differences of log sqrt(L) in log t (161 records
    # over 14 decades: the difference error is below 1e-3 where the exponent varies slowly)
    t, r = long_flow.t[1:], long_flow.rmse[0][1:]
    num = np.gradient(np.log(r), np.log(t))
    late = t > 1e6
    np.testing.assert_allclose(long_flow.dlogrmse_dlogt[0][1:][late][1:-1], num[late][1:-1],
                               atol=1e-3)


# ---------------------------------------------------------------------------------------------
# gradient descent
# ---------------------------------------------------------------------------------------------
def test_gd_with_small_step_follows_the_flow_with_first_order_error():
    flow = FL.integrate_flow(5.0, 0.0, 150.0, n_records=300, t_first=0.5,
                             options=FlowOptions(rtol=1e-9, atol=1e-11))
    errs = []
    for lr in (1.0, 0.5):
        gd = FL.population_gd(5.0, 0.0, lr, int(150 / lr), options=TrainOptions(n_records=40))
        fb, fB = FL.interpolate_flow(flow, gd.t[0])
        errs.append(max(np.max(np.abs(gd.beta[0] / fb - 1)), np.max(np.abs(gd.b[0] - fB))))
    assert errs[0] < 0.02
    assert 1.6 < errs[0] / errs[1] < 2.4                           # Euler: error ~ lr


def test_gd_batch_equals_single_runs_and_too_large_step_raises():
    batch = FL.population_gd([5.0, 20.0], [0.0, 20.0], [1.0, 10.0], 50,
                             options=TrainOptions(n_records=10))
    one = FL.population_gd(20.0, 20.0, 10.0, 50, options=TrainOptions(n_records=10))
    np.testing.assert_allclose(batch.beta[1], one.beta[0], rtol=1e-12)
    with pytest.raises(TrainingDiverged, match="lr"):
        FL.population_gd(5.0, 0.0, 1e4, 200, options=TrainOptions(n_records=5))


# ---------------------------------------------------------------------------------------------
# GD on CUDA
# ---------------------------------------------------------------------------------------------
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
def test_gd_on_cuda_matches_cpu():
    a = FL.population_gd(5.0, 0.0, 1.0, 30, device="cpu", options=TrainOptions(n_records=5))
    b = FL.population_gd(5.0, 0.0, 1.0, 30, device="cuda", options=TrainOptions(n_records=5))
    np.testing.assert_allclose(a.beta, b.beta, rtol=1e-10)
