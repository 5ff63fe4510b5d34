"""The landscape of the population loss (stumplib.stump.landscape): the valley against a
numerical minimiser, the largest curvature against second differences, the gradient field against
the flow's velocity."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from stumplib.stump import landscape as LA
from stumplib.stump.population import population_loss, population_loss_and_grad


def test_valley_matches_numerical_minimiser():
    for beta in (200.0, 800.0):
        res = minimize_scalar(lambda c: float(population_loss(beta, c * beta)),
                              bounds=(0.8, 0.9), method="bounded", options={"xatol": 1e-9})
        pred = LA.valley_c(beta, 0.8)
        assert abs(res.x - pred) < 0.3 / beta                     # O(1/beta) beyond the leading term
        assert abs((res.x - 0.8) / (pred - 0.8) - 1) < 0.1


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
    assert LA.hessian_max_eig(beta, b)[0] == pytest.approx(lam, rel=1e-5)


@pytest.mark.parametrize("beta, b", [(20.0, 18.0), (5.0, 0.0)])
def test_hessian_max_eig_matches_second_differences_of_the_loss(beta, b):
    """The stability limit's curvature against an independent Hessian: second differences of the
    population loss values (no gradient involved). Steps 1e-3 of each coordinate (mixed
    differences on the diagonal too, step 2h): measured errors 3.8e-4 at (20, 18) and 2.9e-6 at
    (5, 0), hence the tolerance 2e-3 (five times the larger)."""
    from stumplib.stump.population import population_loss, population_loss_and_grad
    x0, h = np.array([beta, b]), np.array([1e-3 * beta, 1e-3 * max(abs(b), 1.0)])
    L = lambda v: float(population_loss(*v))  # noqa: E731
    H = np.empty((2, 2))
    for i, j in np.ndindex(2, 2):
        ei, ej = np.eye(2)[i] * h[i], np.eye(2)[j] * h[j]
        H[i, j] = (L(x0 + ei + ej) - L(x0 + ei - ej) - L(x0 - ei + ej) + L(x0 - ei - ej)) / (
            4 * h[i] * h[j])
    lam = LA.hessian_max_eig([beta], [b])[0]
    assert lam == pytest.approx(np.linalg.eigvalsh(H)[-1], rel=2e-3)


def test_gradient_field_is_the_flow_direction():
    f = LA.gradient_field([0.0, 0.5, 0.9], [0.5, 1.0, 2.0])
    assert f["dc_dt"].shape == (3, 3)
    _, gb, gB = population_loss_and_grad(10.0, 5.0)
    vb, vB = -gb, -gB  # the flow's velocity
    assert f["dc_dt"][1, 1] == pytest.approx(float((vB - 0.5 * vb) / 10.0), rel=1e-10)
    assert f["dlnbeta_dt"][1, 1] == pytest.approx(float(vb / 10.0), rel=1e-10)
    assert np.all(f["dc_dt"][:, 0] > 0)        # c = 0 lies below every threshold: c is pushed up
