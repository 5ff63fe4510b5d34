"""Tests of stumplib.phase.crossings: crossings with intervals, where a branch ends."""
from __future__ import annotations

import math

import numpy as np
import pytest

from stumplib.phase.crossings import branch_end, first_crossing


def test_first_crossing():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    assert first_crossing(x, [0, 0, 1, 2], [1, 1, 0, 0]) == pytest.approx(1.5)
    assert math.isnan(first_crossing(x, [0, 0, 0, 0], [1, 1, 1, 1]))


def test_crossing_estimate_brackets_the_root_by_the_shifted_curves():
    """A straight line y = x - 0.5 with error 0.1: root 0.5, and y -+ 3 err cross at 0.8 and 0.2
    (exact under linear interpolation); a shifted curve that leaves the grid widens to its end."""
    from stumplib.phase.crossings import crossing_estimate
    x = np.linspace(0.0, 1.0, 11)
    e = crossing_estimate(x, x - 0.5, np.full_like(x, 0.1))
    assert (e.value, e.lo, e.hi) == pytest.approx((0.5, 0.2, 0.8), abs=1e-12)
    assert e.kind == "quadrature"
    d = crossing_estimate(x, 0.5 - x, np.full_like(x, 0.1), direction="down")
    assert (d.value, d.lo, d.hi) == pytest.approx((0.5, 0.2, 0.8), abs=1e-12)
    # y + 0.6 lies above 0 everywhere (crossing at or below x = 0), y - 0.6 crosses beyond x = 1
    wide = crossing_estimate(x, x - 0.5, np.full_like(x, 0.2))
    assert (wide.value, wide.lo, wide.hi) == pytest.approx((0.5, 0.0, 1.0), abs=1e-12)
    late = crossing_estimate(x, x - 0.5, np.r_[np.full(6, 0.1), np.full(5, 0.2)])
    assert (late.lo, late.hi) == pytest.approx((0.2, 1.0), abs=1e-12)  # y - 3 err never crosses
    down = crossing_estimate(x, 0.5 - x, np.r_[np.full(6, 0.1), np.full(5, 0.2)], direction="down")
    assert (down.lo, down.hi) == pytest.approx((0.2, 1.0), abs=1e-12)
    assert crossing_estimate(x, x + 2.0, np.full_like(x, 0.1)).value == 0.0  # all on the far side
    assert math.isnan(crossing_estimate(x, x - 2.0, np.full_like(x, 0.1)).value)  # never gets there


def test_branch_end_brackets_the_end_by_the_named_outcomes():
    """Bracketed by the lowest converged point and the largest point below it without a fixed
    point; every point converged: upper-censored at the grid's end; none: lower-censored."""
    a = np.array([1.0, 0.9, 0.8, 0.7])
    e = branch_end(a, ["converged", "converged", "no_fixed_point", "no_fixed_point"])
    assert (e.value, e.lo, e.hi) == pytest.approx((0.85, 0.8, 0.9)) and e.kind == "plain"
    e = branch_end(a, ["converged", "converged", "undecided", "no_fixed_point"])
    assert (e.lo, e.hi) == (0.7, 0.9)  # the undecided point widens the bracket
    up = branch_end(a, ["converged"] * 4)
    assert up.censored == "upper" and up.hi == 0.7 and up.lo == -np.inf
    low = branch_end(a, ["no_fixed_point"] * 4)
    assert low.censored == "lower" and low.lo == 1.0
