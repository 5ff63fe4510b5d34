"""Tests of stumplib.phase.positional_baseline: the linear positional baseline."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from stumplib.phase.positional_baseline import baseline_test_error_of, linear_baseline_test_error, teacher_moments
from stumplib.book.studies.published import reference_file

from conftest import A0
from stumplib.phase import check_model


def test_linear_baseline_matches_published_empirics():
    with reference_file("empirics_mean_sigma0.5_omega0.3.csv").open() as fh:  # shipped with stumplib
        emp = [float(r["linear_gen_error_mean"]) for r in csv.DictReader(fh)]
    ours = linear_baseline_test_error(model=check_model(omega=0.3))
    assert abs(ours - np.mean(emp)) / np.mean(emp) < 0.02


def test_baseline_by_monte_carlo():
    rng = np.random.default_rng(0)
    u = rng.normal(0, 0.5, (400_000, 2))
    d = u[:, 0] - u[:, 1]
    s = 1 / (1 + np.exp(-u * d[:, None]))
    t = 0.7 * s + 0.3 * A0[:, 0]
    mc = 0.25 * t.var(0).sum()  # sigma^2/2 sum_lk Var T_lk = sigma^2 sum_l Var t_l (Var T_l2 = Var T_l1)
    assert abs(linear_baseline_test_error(model=check_model(omega=0.3)) - mc) / mc < 0.01
    mean, _ = teacher_moments(omega=0.3)
    ours = linear_baseline_test_error(check_model(omega=0.3))
    assert baseline_test_error_of(mean, omega=0.3) == pytest.approx(ours)
    assert baseline_test_error_of(np.eye(2), omega=0.3) > ours
