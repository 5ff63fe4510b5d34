"""Tests of ``stumplib.book.registry``: every landing row has a claim with a stated rule."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from stumplib.book import claims as K
from stumplib.book import registry as R
from stumplib.book import verdicts as V
from stumplib.core.stats import Estimate

ROOT = Path(__file__).resolve().parents[2]


def est(v, lo, hi):
    return Estimate(v, lo, hi, "bootstrap")


def landing_rows() -> list[tuple[str, str]]:
    """``(chapter, key)`` of every ``<key>_status`` glued into intro.md's tables (the rows; a
    status quoted in a sentence below the tables is not a row)."""
    text = "\n".join(line for line in (ROOT / "intro.md").read_text().splitlines()
                     if line.startswith("| "))
    return re.findall(r"\{glue:text\}`(chapters/[^`:]+)\.ipynb::(\w+)_status(?::s)?`", text)


def test_the_registry_covers_every_landing_row():
    rows = landing_rows()
    assert len(rows) >= 20  # both dashboards
    for chapter, key in rows:
        c = R.claim(key)  # KeyError names the missing key
        assert c.chapter == chapter, f"{key}: registry says {c.chapter}, landing row {chapter}"
    assert len({k for _, k in rows}) == len(rows), "a claim appears twice on the landing page"


def test_every_claim_names_an_existing_verdict_function_and_states_its_rule():
    keys = [c.key for c in R.REGISTRY]
    assert len(keys) == len(set(keys))
    for c in R.REGISTRY:
        assert not c.rule.startswith("_") and inspect.isfunction(getattr(V, c.rule, None)), c.key
        assert getattr(V, c.rule).__module__ == V.__name__, c.key
        assert c.paper in ("stump", "phase") and (ROOT / f"{c.chapter}.ipynb").is_file(), c.key
        for field in (c.claim, c.statistic, c.target, c.tolerance):
            assert field.strip(), f"{c.key} leaves a field empty"
        # the registry's arguments are arguments of the named rule
        params = inspect.signature(getattr(V, c.rule)).parameters
        for name in R.rule_arguments(c.key):
            assert name in params or name in ("bound", "target"), (c.key, name)


def test_the_chapter_decision_and_two_head_rows_have_entries():
    assert R.claim("lowest_min").rule == "per_form_theory"
    assert R.claim("two_head").chapter == "chapters/05_two_heads"
    rows = {c.key: row for c, row in zip(R.REGISTRY, R.registry_rows())}
    assert rows["two_head"][1] == "5.1" and rows["sym_trained"][1] == "5"
    with pytest.raises(KeyError, match="no claim 'nope'"):
        R.claim("nope")


def test_the_worst_case_bound_rules_are_the_log_rate_rules():
    # a slope of -0.90 [-1.00, -0.83] at m∧n ~ 362 holds; -0.50 [-0.55, -0.45] fails
    assert K.judge("bound_mn", est(-0.9, -1.0, -0.83), x_mid=362.0,
                   variable="m∧n").status == "holds"
    assert K.judge("bound_mn", est(-0.5, -0.55, -0.45), x_mid=362.0,
                   variable="m∧n").status == "fails"
    assert K.judge("certified_scale", est(0.9, 0.8, 1.0), x_mid=362.0,
                   variable="m∧n").status == "holds"
    assert K.judge("certified_scale", est(0.5, 0.45, 0.55), x_mid=362.0,
                   variable="m∧n").status == "fails"

