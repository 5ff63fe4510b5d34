"""Tests of ``stumplib.book.glue``: numbers, figures and verdicts glued as the page cites them."""
from __future__ import annotations

import numpy as np
import pytest

from stumplib import book
from stumplib.book import glue


def test_a_verdict_glued_as_text_is_typeset(monkeypatch):
    seen = {}
    monkeypatch.setattr(glue, "_glue", lambda name, value: seen.__setitem__(name, value))
    book.glue_value("bound_reason", "N^-1 term holds, (m∧n)^-1 term undecided, on m∧n <= 512.")
    book.glue_value("gd_script_command", "python3 scripts/x.py --d_list 100")  # not a verdict
    assert seen["bound_reason"] == "N⁻¹ term holds, (m∧n)⁻¹ term undecided, on m∧n ≤ 512."
    assert seen["gd_script_command"] == "python3 scripts/x.py --d_list 100"


def test_a_number_glued_with_a_text_form_reads_in_plain_notation(monkeypatch):
    seen = {}
    monkeypatch.setattr(glue, "_glue", lambda name, value: seen.__setitem__(name, value))
    book.glue_value("replay_dev", np.float64(6.1087e-4), text=".1e")
    book.glue_value("hess_min", -9.93e-05, text=".2e")
    assert seen["replay_dev"] == pytest.approx(6.1087e-4) and isinstance(seen["replay_dev"], float)
    assert seen["replay_dev_text"] == "6.1 × 10⁻⁴" and seen["hess_min_text"] == "-9.93 × 10⁻⁵"
    with pytest.raises(TypeError, match="text= needs a real number; label is str"):
        book.glue_value("label", "x", text=".1e")


def test_a_hand_written_reason_is_typeset_and_ends_like_a_sentence():
    assert book.typeset_reason("alpha_l >= alpha_c at 3 of 3 omega") == "αₗ ≥ αc at 3 of 3 ω."
    assert book.typeset_reason("cut here …") == "cut here …"
    assert book.typeset_reason("done.") == "done."

