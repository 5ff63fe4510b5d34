"""Tests of stumplib.phase.scaling_forms: the choice of the approach in d."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.phase.scaling_forms import FORMS, choose_form


@pytest.mark.parametrize("form, coef", [("1/d", [0.1, 5.0]), ("1/sqrt(d)", [0.1, 0.3]),
                                        ("1/d + 1/d^2", [0.1, -3.0, 1500.0])])
def test_choose_form_finds_the_form_of_synthetic_sequences(form, coef):
    d = np.array([250.0, 500, 1000, 2000, 4000, 8000])
    X = np.column_stack([np.ones_like(d)] + FORMS[form](d))
    truth = X @ np.asarray(coef)
    se = np.full(d.size, 2e-5)
    rng = np.random.default_rng(1)
    chosen, covered = 0, 0
    for _ in range(40):
        f = choose_form(d, truth + se * rng.standard_normal(d.size), se)
        chosen += f["form"] == form
        covered += f["envelope"].contains(0.1)
    # noise of 2e-5 against differences between the forms of >= 1e-3 at the smallest d: the
    # right form wins unless a nested three-parameter form is preferred by chance (AICc's
    # penalty makes that rare); the hull covers the truth at least at the nominal 95%
    assert chosen >= 34, chosen
    assert covered >= 36, covered
