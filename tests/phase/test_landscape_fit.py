"""Tests of stumplib.phase.landscape_fit: minimum and curvatures of loss curves along theta."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase.landscape_fit import landscape_fit


def test_landscape_fit_recovers_a_known_cubic():
    th = np.linspace(0.08, 0.11, 7)
    rng = np.random.default_rng(0)
    t0 = 0.095 + 0.002 * rng.standard_normal(12)  # per-curve minima
    E = np.array([0.5 * 0.2 * (th - t) ** 2 - 3.0 / 6 * (th - t) ** 3 + 0.002 for t in t0])
    f = landscape_fit(th, E)
    assert f["theta_min"].value == pytest.approx(t0.mean(), abs=1e-9)
    assert f["curvature"].value == pytest.approx(0.2, rel=1e-6)
    assert f["third"].value == pytest.approx(-3.0, rel=1e-6)
    # asymmetric well: flatter on the right (E''' < 0)
    assert f["curvature_right"].value < f["curvature"].value < f["curvature_left"].value
