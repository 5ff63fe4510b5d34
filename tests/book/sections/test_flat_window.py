"""Tests of stumplib.book.sections.flat_window: the flat window's tables and verdict."""
from __future__ import annotations

import numpy as np

from stumplib.book.sections.flat_window import explanation_verdict, minima_rows, scaling_rows
from stumplib.core.stats import Estimate


def test_explanation_verdict_follows_its_rule():
    theory = Estimate.with_error(0.0966, 1e-4)
    near = Estimate(0.0970, 0.0960, 0.0980, "seeds")
    far = Estimate(0.0995, 0.0985, 0.1005, "seeds")
    v = explanation_verdict(near, theory, 0.0990, far, dmax=2000, d_landscape=2000, form="1/d")
    assert v.status == "holds" and v.sentence.startswith("Finite-size")
    v = explanation_verdict(far, theory, 0.0990, far, dmax=2000, d_landscape=2000, form="1/d")
    assert v.status == "fails" and v.sentence.startswith("Theory")
    v = explanation_verdict(far, theory, 0.0990, near, dmax=2000, d_landscape=2000, form="1/d")
    assert v.status == "undecided"
    wide = Estimate(0.0975, 0.0950, 0.1000, "seeds")  # holds both the theory and the last mean
    v = explanation_verdict(wide, theory, 0.0990, far, dmax=2000, d_landscape=2000, form="1/d")
    assert v.status == "undecided" and "larger d" in v.sentence


def test_minima_rows_extrapolate_each_kind_of_minimum():
    """Four d whose seed means follow a + b/d exactly: the d -> infinity row gives a."""
    rng = np.random.default_rng(0)
    land = {}
    for d in (500, 1000, 2000, 4000):
        noise = rng.standard_normal(8)
        noise = (noise - noise.mean()) / noise.std(ddof=1) * 1e-3  # seed spread, mean exactly 0
        land[d] = {"seeds": np.arange(8), "free_theta": 0.0990 - 1.0 / d + noise,
                   "best_theta": 0.0966 - 1.0 / d + noise, "free_test_error": 0.00277 + noise / 100,
                   "best_test_error": 0.00281 + 2e-2 / d + noise / 100}
    rows = minima_rows(land, {"theta": 0.0966, "test_error": 0.002815})
    assert [r["d"] for r in rows] == [500, 1000, 2000, 4000, "infinity", "theory"]
    assert rows[4]["theta from Q*"].startswith("0.0990 ") and rows[4]["theta lowest"].startswith("0.0966 ")
    assert rows[4]["test error lowest"].startswith("0.002810 ")


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
