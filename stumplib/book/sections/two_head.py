"""Chapter 5's two-head section: the words that describe what gradient descent learned.

The science (the two-head model, its training and its errors on chapter 5's axes) is
:mod:`stumplib.stump.two_head`; the claim "a trained two-head model learns the symmetrization" is
judged by the registry's rule (:mod:`stumplib.book.registry`, key ``two_head``: the paired ratio of
its whole-prior MSE to that of the best rule measured on trained heads). This module chooses the
section's phrases from the measured numbers, by thresholds stated here, so that no sentence is
typed by hand to match a number.
"""
from __future__ import annotations

import math

from stumplib.core.validation import check_real

#: the thresholds behind the phrases: a count slope below ``count`` in absolute value is "not
#: count weighting" (count weighting has slope 1); a fallback weight above ``fallback`` moves
#: "towards the Bayes rule's range-end fallback" (Bayes: 1/2, the other rules 0); two heads whose
#: mean scale is below ``scales`` times the lone head's "stay below" it
PHRASE_RULES = {"count": 0.5, "fallback": 0.1, "scales": 0.8}


def two_head_phrases(count_slope: float, fallback: float, beta_two: float, beta_one: float,
                     aware_own: float, bayes_ratio: float) -> dict[str, str]:
    """The section's phrases, chosen from the numbers by :data:`PHRASE_RULES`.

    Parameters
    ----------
    count_slope : float
        The learned ``dw1/dq`` (mean over corpora).
    fallback : float
        The learned constant ``w0`` where the positive side is empty.
    beta_two, beta_one : float
        The two-head model's mean scale and the lone head's (trained with the same steps).
    aware_own : float
        The boundary-aware rule on the two-head model's own heads, over the Bayes risk.
    bayes_ratio : float
        The two-head model's whole-prior MSE over the Bayes risk.

    Returns
    -------
    dict of str
        ``count_phrase``, ``fallback_phrase``, ``sharpen_phrase`` and ``own_phrase``.
    """
    vals = dict(count_slope=count_slope, fallback=fallback, beta_two=beta_two,
                beta_one=beta_one, aware_own=aware_own, bayes_ratio=bayes_ratio)
    for name, v in vals.items():
        check_real(name, v, low=-math.inf)
    return {"count_phrase": ("does not move towards count weighting"
                             if abs(count_slope) < PHRASE_RULES["count"]
                             else "moves towards count weighting"),
            "fallback_phrase": ("moves towards the Bayes rule's range-end fallback"
                                if fallback > PHRASE_RULES["fallback"]
                                else "learns no range-end fallback"),
            "sharpen_phrase": ("stay below" if beta_two < PHRASE_RULES["scales"] * beta_one
                               else "reach about the scale of"),
            "own_phrase": "above" if aware_own > bayes_ratio else "below"}
