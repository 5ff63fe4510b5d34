"""Tests of stumplib.book.studies.held_theta: the minimiser with theta held."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from stumplib.book.studies.held_theta import constrained_minimise, hold_theta
from stumplib.phase.minimise import minimise
from stumplib.phase.problem import make_problem, summaries
from stumplib.phase import check_model

SIGMA = 0.5


def test_constrained_minimiser_at_the_free_theta_is_the_free_minimiser():
    d, alpha = 60, 1.5
    n = int(round(alpha * d))
    pb = make_problem(d, [0], n, model=check_model(omega=0.3))
    free = minimise(pb, 0, n, pb.q_star[0].clone())
    t_free = float(SIGMA ** 2 * summaries(free["Q"][None], pb.q_star, SIGMA)["theta_emp"][0])
    # start elsewhere on the plane (from Q*), not from the answer
    r = constrained_minimise(pb, 0, n, t_free, pb.q_star[0].clone())
    assert free["converged"] and r["converged"]
    # both stop at a relative gradient <= 1e-8; the minimiser is then known to ~1e-8 |Q| / curvature
    assert torch.linalg.norm(r["Q"] - free["Q"]) / torch.linalg.norm(free["Q"]) < 1e-6
    assert abs(r["loss"] / free["loss"] - 1) < 1e-12
    # the constraint holds to rounding
    assert abs(SIGMA ** 2 * float(pb.q_star[0] @ r["Q"]) / d - t_free) < 1e-12


def test_held_objective_is_the_risk_on_the_plane_and_its_gradient_the_projected_one():
    d, n = 40, 50
    pb = make_problem(d, [1], n, model=check_model(omega=0.3))
    hp = hold_theta(pb, 0.1)
    mask = torch.ones(1, n, 1, dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    Q = torch.randn(d, generator=g, dtype=torch.float64)
    qs = pb.q_star[0]
    Qp = Q + (hp.target[0] - qs @ Q) / (qs @ qs) * qs  # on the plane
    L_h, grad = hp.objective(Qp[None, :, None], mask)
    L_p, _ = pb.objective(Qp[None, :, None], mask)
    assert float(L_h) == pytest.approx(float(L_p), rel=1e-14)
    assert abs(float(grad[0, :, 0] @ qs)) < 1e-10 * float(grad.norm() * qs.norm())
    v = torch.randn(d, generator=g, dtype=torch.float64)
    v = v - (v @ qs) / (qs @ qs) * qs  # a direction in the plane
    h = 1e-5
    fd = (float(pb.objective((Qp + h * v)[None, :, None], mask)[0])
          - float(pb.objective((Qp - h * v)[None, :, None], mask)[0])) / (2 * h)
    # central difference: error ~ h^2 |L'''| ~ 1e-10 relative here
    assert fd == pytest.approx(float(grad[0, :, 0] @ v), rel=1e-6)
