"""Chapter 5's two-head phrases (stumplib.book.sections.two_head): chosen from the numbers by
the stated thresholds, on each side of each threshold."""
from __future__ import annotations

import math

import pytest

from stumplib.book.sections.two_head import PHRASE_RULES, two_head_phrases


def test_phrases_follow_the_numbers():
    base = dict(count_slope=0.08, fallback=0.28, beta_two=19.0, beta_one=36.0, aware_own=3.6,
                bayes_ratio=1.9)
    p = two_head_phrases(**base)
    assert p == {"count_phrase": "does not move towards count weighting",
                 "fallback_phrase": "moves towards the Bayes rule's range-end fallback",
                 "sharpen_phrase": "stay below", "own_phrase": "above"}
    q = two_head_phrases(**{**base, "count_slope": -0.9, "fallback": 0.05, "beta_two": 35.0,
                            "aware_own": 1.5})
    assert q == {"count_phrase": "moves towards count weighting",
                 "fallback_phrase": "learns no range-end fallback",
                 "sharpen_phrase": "reach about the scale of", "own_phrase": "below"}
    edge = two_head_phrases(**{**base, "beta_two": PHRASE_RULES["scales"] * 36.0})
    assert edge["sharpen_phrase"] == "reach about the scale of"
    with pytest.raises(ValueError, match="fallback"):
        two_head_phrases(**{**base, "fallback": math.nan})
