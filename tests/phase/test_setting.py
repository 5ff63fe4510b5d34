"""Tests of ``stumplib.phase.setting``: the model's parameters and their checks (``check_model``,
``check_alphas``)."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase.setting import PhaseModel, check_alphas, check_model

from conftest import A0

#: the semantic branch's ill-conditioned window (see chapter 6)


def test_check_model_returns_the_validated_model():
    m = check_model(omega=0.3)
    omega, sigma, lam, A, branch = m
    assert isinstance(m, PhaseModel) and (omega, sigma, lam, branch) == (0.3, 0.5, 0.01, "semantic")
    assert A.dtype == np.float64 and np.array_equal(A, A0)
    assert m.rho == 0.25 and m.swap_symmetric
    assert not check_model(omega=0.3, A=((0.7, 0.3), (0.4, 0.6)), branch="positional").swap_symmetric


def test_check_alphas():
    a, scalar = check_alphas(2.0)
    assert scalar and a.tolist() == [2.0]
    a, scalar = check_alphas(np.array([1.0, 0.5]))
    assert not scalar and a.dtype == np.float64 and a.tolist() == [1.0, 0.5]
    for bad in (-1.0, 0.0, [], [1.0, float("nan")], 2e3):
        with pytest.raises(ValueError, match="alpha"):
            check_alphas(bad)


# ---------------------------------------------------------------- quadrature rules
