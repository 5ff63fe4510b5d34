"""Tests of stumplib.book.sections.flat_window: the flat window's tables and verdict."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib.book.sections.flat_window import lowest_min_verdict, lowest_minima_rows, scaling_rows
from stumplib.core.stats import Estimate


def test_scaling_rows_extrapolate_each_quantity_and_compare_with_the_theory():
    """Seed means exactly a + b/d at four d: each row's limit is a, its distance to a theory at a
    is 0; a quantity at fewer than four usable d gets no row."""
    ds = np.array([100, 200, 400, 800])
    table = {"ds": ds, "n": np.full((1, 4), 8.0)}
    for k, a in (("theta", 0.097), ("test_error", 0.0028), ("train_loss", 0.0024), ("q", 0.12)):
        table[k] = (a + 0.5 / ds)[None]
        table[f"{k}_se"] = np.full((1, 4), 1e-5)
    theory = {"theta": np.array([0.097]), "test_error": np.array([0.0028])}
    rows, fits = scaling_rows(table, 0, quantities=("theta", "test_error"), theory=theory)
    assert [r["quantity"] for r in rows] == ["theta", "test error"] and set(fits) == {"theta",
                                                                                      "test_error"}
    assert rows[0]["limit"] == np.float64(fits["theta"]["limit"].value)
    assert abs(rows[0]["limit / theory - 1"]) < 1e-9 and abs(rows[1]["limit / theory - 1"]) < 1e-9
    table["n"][0, 0] = 1  # one seed at the smallest d: three d left, no form can be chosen
    assert scaling_rows(table, 0, theory=theory) == ([], {})


def test_lowest_min_verdict_applies_the_registry_rule_to_the_extrapolated_limit():
    """Within 2 SE of the accurate theory and 4 or more from the published: holds; the other way
    round: fails; an interval that reaches both: undecided; no published curve: undecided."""
    acc, err, pub = 0.002815, 1.4e-5, 0.002676
    near = Estimate(0.002812, 0.002780, 0.002844)
    assert lowest_min_verdict(near, acc, err, pub).status == "holds"
    assert lowest_min_verdict(Estimate(0.002676, 0.002650, 0.002702), acc, err,
                              pub).status == "fails"
    assert lowest_min_verdict(Estimate(0.00275, 0.0026, 0.0029), acc, err, pub).status == \
        "undecided"
    assert lowest_min_verdict(near, acc, err, float("nan")).status == "undecided"


def test_lowest_minima_rows_show_each_d_with_its_seeds_and_gap():
    n = np.array([8.0, 4.0])
    summ = {k: np.array([0.1, 0.2]) for k in (
        "informed_theta", "informed_theta_se", "lowest_theta", "lowest_theta_se",
        "informed_test_error", "informed_test_error_se", "lowest_test_error",
        "lowest_test_error_se", "theta_gap", "theta_gap_lo", "theta_gap_hi", "share_lower",
        "saturated", "distinct_mean", "distinct_max")}
    summ.update(ds=np.array([500, 1000]), seeds=n, seeds_ok=np.array([8.0, 3.0]))
    rows = lowest_minima_rows(summ)
    assert [r["d"] for r in rows] == [500, 1000]
    assert rows[0]["seeds"] == 8 and rows[1]["seeds"] == "3 of 4"
    assert rows[0]["theta gap [95%]"] == "0.1000 [0.1000, 0.1000]"
    minima = lowest_minima_rows(summ, "minima")
    assert [r["d"] for r in minima] == [500, 1000]
    assert minima[1]["test error lowest"] == "0.200000 ± 0.200000"
    with pytest.raises(ValueError, match="part"):
        lowest_minima_rows(summ, "both")
