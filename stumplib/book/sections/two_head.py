"""Chapter 5's two-head section: the verdict on whether gradient descent finds a good combination.

The science (the two-head model, its training and its errors on chapter 5's axes) is
:mod:`stumplib.stump.two_head`; this module judges its numbers with the book's verdict language
(:mod:`stumplib.book.verdicts`), by a rule fixed before the numbers.
"""
from __future__ import annotations

from stumplib.book.verdicts import Verdict, at_least, at_most, combine
from stumplib.core.stats import Estimate
from stumplib.core.validation import check_real

__all__ = ["two_head_verdict"]


def two_head_verdict(bayes_ratio: Estimate, interior_gain: Estimate, *, gain_needed: float = 4.0,
                     bayes_factor: float = 2.0) -> Verdict:
    """Verdict on "gradient descent finds a good combination": the rule, fixed before the numbers.

    Parameters
    ----------
    bayes_ratio : the trained two-head model's whole-prior MSE over the Bayes MSE.
    interior_gain : the trained one head's interior MSE over the trained two-head model's.
    gain_needed : the interior gain required (the sharp-limit four-fold gain by default).
    bayes_factor : the largest whole-prior ratio to Bayes that counts as close to Bayes.

    Returns
    -------
    stumplib.book.verdicts.Verdict: ``holds`` when the gain's whole interval is at least
    ``gain_needed`` and the ratio's whole interval at most ``bayes_factor``; ``fails`` when both are
    wholly on the wrong side; ``undecided`` when both straddle; ``partly`` otherwise.
    """
    gain_needed = check_real("gain_needed", gain_needed, low=1.0)
    bayes_factor = check_real("bayes_factor", bayes_factor, low=1.0)
    parts = [at_least(interior_gain, gain_needed, symbol="interior gain"),
             at_most(bayes_ratio, bayes_factor, symbol="whole-prior MSE / Bayes")]
    return combine(parts, f"trained two heads: interior gain over one head {interior_gain:.3g} "
                          f"(at least {gain_needed:g} required), whole-prior MSE {bayes_ratio:.3g} "
                          f"times Bayes (at most {bayes_factor:g} required)")
