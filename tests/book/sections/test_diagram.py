"""Tests of stumplib.book.sections.diagram: the verdict on the phase diagram, the crossings' table
rows and why a crossing is absent."""
from __future__ import annotations

import numpy as np

from stumplib.book.sections import diagram


def test_diagram_verdict_quotes_alpha_c_at_both_ends_and_judges_every_omega():
    from stumplib.book.verdicts import short_reason

    def diag(alpha_l):
        a = lambda v: np.asarray(v, dtype=float)  # noqa: E731
        return {"omega": a([0.2, 0.3, 0.4]), "alpha_c": a([0.95, 1.25, 1.77]),
                "alpha_c_lo": a([0.92, 1.24, 1.74]), "alpha_c_hi": a([0.97, 1.26, 1.79]),
                "alpha_l": a(alpha_l), "alpha_l_lo": a(alpha_l) - 0.01,
                "alpha_l_hi": a(alpha_l) + 0.01}
    v = diagram.diagram_verdict(diag([1.12, 1.49, 2.28]))
    assert v.status == "holds"
    assert "goes from 0.95 at ω = 0.2 to 1.77 at ω = 0.4" in v.sentence  # typeset
    assert "at 3 of 3 ω (" in v.sentence and "1.77 [1.74, 1.79] at ω = 0.4" in v.sentence
    why = short_reason(v.sentence)  # the landing row keeps both key numbers
    assert "0.95" in why and "1.77" in why and "…" not in why
    # alpha_l below alpha_c at the last omega: that part fails, so the claim is partly
    v = diagram.diagram_verdict(diag([1.12, 1.49, 1.5]))
    assert v.status == "partly" and "2 of 3 ω" in v.sentence


def test_crossing_rows_and_absent_reason_name_why_a_crossing_is_missing():
    """A found crossing is shown with its interval; a missing one with the reason its named
    outcome gives (:data:`stumplib.book.studies.diagram.CROSSING_OUTCOMES`)."""
    a = lambda v: np.asarray(v, dtype=float)  # noqa: E731
    diag = {"omega": a([0.2, 0.3]), "alpha_c": a([0.95, np.nan]), "alpha_c_lo": a([0.92, np.nan]),
            "alpha_c_hi": a([0.97, np.nan]), "alpha_c_outcome": np.array(["found", "above_range"]),
            "alpha_l": a([1.12, np.nan]), "alpha_l_lo": a([1.1, np.nan]),
            "alpha_l_hi": a([1.14, np.nan]), "alpha_l_outcome": np.array(["found", "no_points"]),
            "pt_w": np.array([0, 0, 0, 1, 1])}
    rows = diagram.crossing_rows(diag)
    assert [r["points solved"] for r in rows] == [3, 2] and rows[0]["omega"] == 0.2
    assert rows[0]["alpha_c"] == "0.950 [0.920, 0.970]"
    assert rows[1]["alpha_c"] == "NaN: the semantic training loss stays above the positional one"
    assert rows[1]["alpha_l"] == "NaN: fewer than two converged semantic points"
    assert diagram.absent_reason(diag, "alpha_c", 0) is None
    assert diagram.absent_reason(diag, "alpha_l", 1) is None  # no points: nothing to say
    assert diagram.absent_reason(diag, "alpha_c", 1) == (
        "the semantic training loss stays above the positional one on the grid")
