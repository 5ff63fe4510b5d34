"""Tests of stumplib.book.studies.diagram: crossings by bracketing, the phase diagram's outcomes."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.book.studies.diagram import bracket_crossing, diagram_key, phase_diagram
from stumplib.core.stats import crossing


def _dense(f, lo, hi):
    x = np.linspace(lo, hi, 200_001)
    return crossing(x, f(x), 0.0, direction="down", which="last")


@pytest.mark.parametrize("f", [lambda a: 1.3 - a, lambda a: np.exp(-2 * a) - 0.1,
                               lambda a: (a - 0.7) * (a - 1.62) * (a - 2.4) * -1.0])
def test_bracketing_matches_a_dense_grid(f):
    calls = []

    def fn(a):
        calls.append(a)
        return float(f(a)), 1e-6

    est, outcome, *_ = bracket_crossing(fn, [2.6, 2.0, 1.5, 1.0, 0.5], xtol=1e-6, max_refine=30)
    assert outcome == "found"
    assert est.value == pytest.approx(_dense(f, 0.5, 2.6), abs=2e-5)
    assert est.lo <= est.value <= est.hi and est.hi - est.lo < 1e-3
    assert len(calls) < 5 + 30


def test_bracketing_named_outcomes():
    grid = [2.0, 1.0, 0.5]
    assert bracket_crossing(lambda a: (1.0, 0.0), grid)[1] == "above_range"
    assert bracket_crossing(lambda a: (-1.0, 0.0), grid)[1] == "below_range"
    assert bracket_crossing(lambda a: (np.nan, np.nan), grid)[1] == "no_points"
    est, out, *_ = bracket_crossing(lambda a: (1.0, 0.0), grid)
    assert np.isnan(est.value)


def test_bracketing_interval_from_the_curve_error():
    est, *_ = bracket_crossing(lambda a: (1.0 - a, 0.01), [2.0, 0.0], xtol=1e-6, max_refine=20)
    assert est.lo == pytest.approx(0.97, abs=1e-3) and est.hi == pytest.approx(1.03, abs=1e-3)


def test_diagram_key():
    assert diagram_key(0.2) == "w020" and diagram_key(0.3) == "w030" and diagram_key(0.05) == "w005"


def test_phase_diagram_at_omega_03_brackets_the_known_crossings():
    r = phase_diagram([0.3], [1.8, 1.4, 1.1], rtol=2e-2, cache=False, max_log2_points=11,
                      max_updates=120, max_refine=1)
    assert r["alpha_c_outcome"][0] == "found" and r["alpha_l_outcome"][0] == "found"
    assert 1.15 < r["alpha_c"][0] < 1.35 and 1.4 < r["alpha_l"][0] < 1.6
    assert r["alpha_c_lo"][0] <= r["alpha_c"][0] <= r["alpha_c_hi"][0]
    assert np.array_equal(np.unique(r["pt_w"]), [0]) and r["sem_test_error"].size == r["pt_alpha"].size
