"""Tests of stumplib.book.studies.overlaps: the minimisers' overlaps per (alpha, d) and the theory at the
same alphas."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.book.studies.overlaps import QUANTITIES, overlap_table, theory_points


def _runs():
    """Two d; d = 100 ran alphas (1.0, 1.5), d = 200 only 1.5; one run at d = 100, alpha 1.0 did
    not converge."""
    rng = np.random.default_rng(0)
    runs = {}
    for d, alphas in ((100, [1.0, 1.5]), (200, [1.5])):
        shape = (4, len(alphas))
        runs[d] = dict(alphas=np.array(alphas), train_loss=rng.random(shape),
                       theta_emp=rng.random(shape), q_emp=rng.random(shape),
                       m=rng.standard_normal(shape), test_error=rng.random(shape),
                       converged=np.ones(shape, bool))
    runs[100]["converged"][0, 0] = False
    return runs


def test_overlap_table_averages_the_converged_runs_per_alpha_and_d():
    runs = _runs()
    tab = overlap_table(runs, [1.0, 1.5], sigma=0.5)
    assert tab["ds"].tolist() == [100, 200] and tab["n"].tolist() == [[3, 0], [4, 4]]
    x = runs[100]["theta_emp"][1:, 0] * 0.25  # theta in the theory's normalisation
    assert tab["theta"][0, 0] == pytest.approx(x.mean(), rel=1e-14)
    assert tab["theta_sd"][0, 0] == pytest.approx(x.std(ddof=1), rel=1e-14)
    assert tab["theta_se"][0, 0] == pytest.approx(x.std(ddof=1) / np.sqrt(3), rel=1e-14)
    assert tab["abs_m"][1, 1] == pytest.approx(np.abs(runs[200]["m"][:, 0]).mean(), rel=1e-14)
    assert all(np.isnan(tab[k][0, 1]) for k in QUANTITIES)  # alpha 1.0 not run at d = 200


def test_theory_points_reuses_known_converged_points_without_solving():
    known = {"sem_alpha": np.array([1.0, 1.5]), "sem_outcome": np.array(["converged"] * 2)}
    for key in ("q", "m", "V", "theta", "test_error", "train_loss"):
        known[f"sem_{key}"] = np.array([0.1, 0.2])
        known[f"sem_{key}_err"] = np.array([1e-4, 2e-4])
    th = theory_points([1.5, 1.0], known=known, cache=False)
    assert th["theta"].tolist() == [0.2, 0.1] and th["theta_err"].tolist() == [2e-4, 1e-4]
    assert th["alphas"].tolist() == [1.5, 1.0]
