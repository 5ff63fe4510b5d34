"""Tests of stumplib.stump.prior: the threshold prior, one frozen object checked where it is built."""
from __future__ import annotations

import dataclasses
import math

import pytest

from stumplib.stump.prior import DEFAULT_PRIOR, TAU_HI, TAU_LO, Prior, as_prior


def test_the_default_is_the_papers_prior_and_its_summaries():
    assert DEFAULT_PRIOR == Prior() == Prior(TAU_LO, TAU_HI) == Prior(0.2, 0.8)
    assert DEFAULT_PRIOR.as_tuple() == (0.2, 0.8)
    assert math.isclose(DEFAULT_PRIOR.width, 0.6) and math.isclose(DEFAULT_PRIOR.mid, 0.5)


def test_a_prior_is_frozen_hashable_and_holds_floats():
    p = Prior(0, 1)
    assert p.as_tuple() == (0.0, 1.0) and all(type(v) is float for v in p.as_tuple())
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.tau_lo = 0.5  # type: ignore[misc]
    assert len({Prior(0.2, 0.8), DEFAULT_PRIOR}) == 1


@pytest.mark.parametrize("lo, hi, word", [(0.9, 0.1, "tau_lo"), (0.5, 0.5, "tau_lo"),
                                          (-0.1, 0.8, "tau_lo"), (0.2, 1.5, "tau_hi"),
                                          (float("nan"), 0.8, "tau_lo")])
def test_a_bad_pair_is_refused_where_it_is_built(lo, hi, word):
    with pytest.raises(ValueError, match=word):
        Prior(lo, hi)


def test_functions_take_the_object_not_a_pair():
    assert as_prior(DEFAULT_PRIOR) is DEFAULT_PRIOR
    with pytest.raises(ValueError, match="prior must be a Prior"):
        as_prior((0.2, 0.8))
