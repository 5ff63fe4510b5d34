"""Tests of stumplib.book.studies.held_theory: the fixed point along theta by the second route."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.book.studies.held_theory import held_root

SIGMA = 0.5


def test_held_root_finds_known_roots_and_curvature():
    """Synthetic curves in the layout of held_theory: g(theta) = -k (theta - r_k) (1 + 20 (theta -
    r_k)), E with E' = -g / (sigma^2 V): the root, the loss's minimum and both curvatures are known."""
    th = np.linspace(0.09, 0.104, 5)
    r = np.array([0.0965, 0.0968, 0.0962])
    k, V = 0.7, 20.0
    x = th[None] - r[:, None]
    g = -k * x * (1 + 20 * x)
    E = 0.0024 + k * (x ** 2 / 2 + 20 * x ** 3 / 3) / (SIGMA ** 2 * V)
    out = held_root({"thetas": th, "residual": g, "train_loss": E, "V": np.full_like(g, V)},
                       sigma=SIGMA)
    assert out["root"].value == pytest.approx(r.mean(), abs=1e-12)
    assert out["loss_min"].value == pytest.approx(r.mean(), abs=1e-9)
    assert out["curvature"].value == pytest.approx(k / (SIGMA ** 2 * V), rel=1e-6)
    # a line through the curved residual: its slope is the curvature's over the window, 3% off here
    assert out["curvature_from_g"].value == pytest.approx(k / (SIGMA ** 2 * V), rel=0.05)
