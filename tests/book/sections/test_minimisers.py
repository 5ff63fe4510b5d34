"""Tests of stumplib.book.sections.minimisers: the dynamics check's rows and the sentence on the
seeds the gradient-descent gap leaves out."""
from __future__ import annotations

import math

import numpy as np

from stumplib.book.sections.minimisers import dropped_seeds, dynamics_rows
from stumplib.book.studies.decision import gd_gap


def test_dropped_seeds_names_each_d_that_lost_seeds_and_is_empty_otherwise():
    te = np.array([[0.2, 0.4], [0.2, 0.4], [0.25, 0.5], [0.2, 0.4]])
    gd = np.array([[0.22, 0.42], [np.nan, 0.5], [0.3, 0.55], [np.nan, np.nan]])  # GD not on seed 3
    nan = np.nan
    runs = {8: dict(test_error=te, gd_test_error=gd, gd_rel_grad=np.array([1e-3, 2e-3, 4e-3, nan])),
            16: dict(test_error=te, gd_test_error=te * 1.1, gd_rel_grad=np.array([1e-4] * 4))}
    assert dropped_seeds(gd_gap(runs)) == ("1 of the 3 seeds GD ran on at d = 8, without a finite "
                                           "test error (GD or minimiser)")
    assert list(gd_gap(runs)["n_ran"]) == [3, 4]
    runs[8]["gd_test_error"] = np.vstack([te[:3] * 1.1, [nan, nan]])
    assert dropped_seeds(gd_gap(runs)) == ""


def test_dynamics_rows_have_one_column_per_d_in_the_order_of_the_check():
    checks = [dict(omega=0.3, alpha=1.5, derivative=-1.6, solver="stable", ds=[40, 160],
                   median_abs_m=[2.0, math.nan], dynamics="decays", agree=True, not_converged=3)]
    (row,) = dynamics_rows(checks)
    assert list(row) == ["alpha", "∂F_m/∂m", "solver", "|m| sqrt(d), d = 40",
                         "|m| sqrt(d), d = 160", "dynamics", "agree", "unconverged"]
    assert row["∂F_m/∂m"] == -1.6 and row["|m| sqrt(d), d = 40"] == 2.0
    assert math.isnan(row["|m| sqrt(d), d = 160"]) and row["unconverged"] == 3
    assert row["agree"] is True and dynamics_rows([]) == []
