"""stumplib.core.validation: every checker accepts the edges of its range, rejects what lies outside,
and names the parameter (and, for lists, the entry) in the message. The entry points that use
them are driven in ``tests/test_bad_input.py``."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from stumplib.core import validation as v


def test_check_int_accepts_its_range_and_rejects_floats_bools_and_the_outside():
    assert v.check_int("m", 1) == 1 and v.check_int("m", np.int64(7), maximum=7) == 7
    assert type(v.check_int("m", np.int32(3))) is int
    for bad in (0, 8, 3.0, True, "3", None):
        with pytest.raises(ValueError, match=r"^m must be an integer"):
            v.check_int("m", bad, maximum=7)
    with pytest.raises(ValueError, match=r"in \[2, 7\]; got 1"):
        v.check_int("m", 1, minimum=2, maximum=7)


def test_check_real_open_and_closed_ends():
    assert v.check_real("lr", 0.0, low=0.0) == 0.0
    assert v.check_real("lr", torch.tensor(0.5), low=0.0, high=1.0) == 0.5
    with pytest.raises(ValueError, match=r"lr must be in \(0.0, 1.0\]; got 0.0"):
        v.check_real("lr", 0.0, low=0.0, high=1.0, low_open=True)
    with pytest.raises(ValueError, match=r"lr must be in \[0.0, 1.0\); got 1.0"):
        v.check_real("lr", 1.0, low=0.0, high=1.0, high_open=True)
    for bad in (math.nan, math.inf, True, "0.1", [0.1]):
        with pytest.raises(ValueError, match="lr must be a finite real number"):
            v.check_real("lr", bad)


def test_check_prior_needs_an_ordered_interval_inside_the_unit_interval():
    assert v.check_prior(0, 1) == (0.0, 1.0)
    with pytest.raises(ValueError, match="tau_lo must be < tau_hi"):
        v.check_prior(0.5, 0.5)
    with pytest.raises(ValueError, match="tau_hi"):
        v.check_prior(0.2, 1.5)


def test_check_choice_bool_and_tensors():
    assert v.check_choice("method", "rk", ("rk", "euler")) == "rk"
    with pytest.raises(ValueError, match=r"method must be one of \['rk', 'euler'\]"):
        v.check_choice("method", "RK", ("rk", "euler"))
    assert v.check_bool("token", np.bool_(True)) is True
    for bad in (1, 0, "yes", None):
        with pytest.raises(ValueError, match="token must be True or False"):
            v.check_bool("token", bad)
    t = v.as_real_tensor("beta", [1.0, 2.0], dtype=torch.float64)
    assert t.dtype == torch.float64 and t.tolist() == [1.0, 2.0]
    for bad in (None, "1", True, [1.0, math.nan], torch.tensor([True]), 1 + 2j):
        with pytest.raises(ValueError, match="beta"):
            v.as_real_tensor("beta", bad)


def test_check_grid_and_check_shapes_name_the_entry():
    assert v.check_grid("m_grid", (8, 16)) == [8, 16]
    assert v.check_grid("betas", [0.5, 2], kind="real", minimum=0.1) == [0.5, 2.0]
    with pytest.raises(ValueError, match=r"m_grid\[1\]"):
        v.check_grid("m_grid", [8, 0])
    with pytest.raises(ValueError, match="non-empty"):
        v.check_grid("m_grid", [])
    assert v.check_shapes([(8, 16), [4, np.int64(2)]]) == [(8, 16), (4, 2)]
    with pytest.raises(ValueError, match=r"shapes\[1\]\[0\] \(m\)"):
        v.check_shapes([(8, 16), (0, 2)])
    with pytest.raises(ValueError, match=r"grid\[0\] must be an \(m, n\) pair"):
        v.check_shapes([(8, 16, 2)], name="grid")
    for bad in ([], "8x8", None):
        with pytest.raises(ValueError, match="shapes must be a non-empty list"):
            v.check_shapes(bad)
