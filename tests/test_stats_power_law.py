"""``stumplib.stats.fit_power_law``: exponent recovered and nominal coverage (moved from the old
``tests/test_core.py``; belongs at the end of ``tests/test_stats.py``, which another engineer owns)."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.stats import fit_power_law


def test_fit_power_law_recovers_exponent_and_covers():
    rng = np.random.default_rng(0)
    x = np.geomspace(1, 1e4, 30)
    covered = 0
    for rep in range(40):
        y = 3.0 * x ** -0.25 * np.exp(rng.normal(0, 0.05, x.size))
        fit = fit_power_law(x, y, n_boot=400, seed=rep)
        covered += fit.contains(-0.25)
    assert abs(fit.slope + 0.25) < 0.02 and fit.prefactor == pytest.approx(3.0, rel=0.2)
    assert covered >= 32  # nominal 95% of 40 = 38; bootstrap intervals run a bit narrow
