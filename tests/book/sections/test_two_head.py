"""Chapter 5's two-head verdict (stumplib.book.sections.two_head): the rule fixed before the
numbers, on estimates wholly on either side of each requirement and straddling them."""
from __future__ import annotations

from stumplib.book.sections.two_head import two_head_verdict
from stumplib.core.stats import Estimate


def test_verdict_rule():
    good_gain, bad_gain = Estimate(6.0, 5.0, 7.0, "bootstrap"), Estimate(2.0, 1.5, 2.5, "bootstrap")
    good_bayes, bad_bayes = Estimate(1.2, 1.1, 1.4, "bootstrap"), Estimate(5.0, 4.0, 6.0, "bootstrap")
    assert two_head_verdict(good_bayes, good_gain).status == "holds"
    assert two_head_verdict(bad_bayes, bad_gain).status == "fails"
    assert two_head_verdict(bad_bayes, good_gain).status == "partly"
    wide = Estimate(2.0, 1.0, 3.0, "bootstrap")
    assert two_head_verdict(wide, Estimate(4.0, 3.0, 5.0, "bootstrap")).status == "undecided"
