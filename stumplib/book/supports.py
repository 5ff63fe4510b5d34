"""Where each glued number can lie: the support of the book's ratios, risks and errors.

A chapter glues a number with its interval as ``name``, ``name_lo``, ``name_hi``
(:func:`stumplib.book.glue_estimate`). Some numbers cannot leave a known range, and an interval
that does is wrong however it was computed:

- a ratio of mean squared errors, a risk, an MSE or an error is at least 0 (glue names containing
  ``ratio``, ``mse``, ``risk``, ``rmse``, ``bayes``, ``gain`` or ``excess``: :data:`NONNEGATIVE`);
- an estimator's risk over the **Bayes risk** of the prior the thresholds are drawn from is at
  least 1 (:data:`BAYES_FLOOR`: the whole-prior ratios of chapter 5, where the Bayes estimator is
  the posterior mean under that prior). A ratio "to Bayes" at *fixed* thresholds (chapter 5's
  interior ratios, the Bayes estimator of the prior ``[0, 1]`` evaluated at interior ``tau``) has no
  such floor: the posterior mean is optimal averaged over its prior, not at each threshold.

:func:`support_floor` gives a name's floor; :func:`support_problems` scans a chapter's glued values
(every ``_lo``/``_hi`` pair) for intervals that leave their support or do not hold their own
value; ``tests/test_supports.py`` runs it on every executed chapter.
"""
from __future__ import annotations

import math
import re
from fnmatch import fnmatch
from typing import Any, Mapping

#: glue names (``fnmatch`` patterns) of risks over the Bayes risk of the prior the thresholds are
#: drawn from: at least 1
BAYES_FLOOR: tuple[str, ...] = (
    "prior_risk_*",            # chapter 5, hand-set head, tau ~ U[0, 1]
    "two_head_bayes_ratio",    # chapter 5, the trained two-head model over the whole prior
    "two_head_bayes_ratio_*",
    "ch5_th_*_bayes",          # chapter 5, every rule of the two-head section over the whole prior
)

#: words that mark a glue name as a ratio of risks, a risk or an error: at least 0
NONNEGATIVE = re.compile(r"(^|_)(ratio|mse|risk|rmse|bayes|gain|excess)(_|$)")

#: names with those words that are not ratios or risks (signed differences, slopes, counts)
SIGNED: tuple[str, ...] = ("*_slope*", "*_exponent*", "*_z_*", "*_diff*", "*_dev*")


def support_floor(name: str) -> float | None:
    """The smallest value the glued number ``name`` can take, where the book knows one.

    Parameters
    ----------
    name : str
        A glue name (without ``_lo`` / ``_hi``).

    Returns
    -------
    float or None
        1 for a risk over the Bayes risk (:data:`BAYES_FLOOR`), 0 for a ratio, risk or error
        (:data:`NONNEGATIVE`), ``None`` for a number with no known floor.
    """
    if any(fnmatch(name, p) for p in BAYES_FLOOR):
        return 1.0
    if any(fnmatch(name, p) for p in SIGNED):
        return None
    return 0.0 if NONNEGATIVE.search(name) else None


def _real(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def support_problems(glued: Mapping[str, Any]) -> list[str]:
    """The glued intervals of a chapter that leave their support or miss their own value.

    Every name ``x`` glued with ``x_lo`` and ``x_hi`` is checked: with a floor
    (:func:`support_floor`), ``x_lo`` must be at least the floor (a bootstrap sample ratio may sit
    a hair below 1 against Bayes: the *value* is not checked against the floor, only the interval);
    and, for every interval, ``x_lo <= x <= x_hi`` where all three are finite (a range or a
    censored bound included).

    Parameters
    ----------
    glued : Mapping[str, Any]
        Glue name to value, as :func:`stumplib.book.sphinxext.glued_values` reads them.

    Returns
    -------
    list of str
        One sentence per problem (empty: none).
    """
    out = []
    for name in sorted(glued):
        if not name.endswith("_lo") or f"{name[:-3]}_hi" not in glued:
            continue
        base = name[:-3]
        lo, hi, v = _real(glued[name]), _real(glued[f"{base}_hi"]), _real(glued.get(base))
        if lo is None or hi is None:
            continue
        floor = support_floor(base)
        if floor is not None and math.isfinite(lo) and lo < floor:
            out.append(f"{base}: interval [{lo:.4g}, {hi:.4g}] goes below {floor:g}, where "
                       f"{'a risk over the Bayes risk' if floor == 1 else 'a ratio or risk'} "
                       "cannot be")
        if v is not None and all(map(math.isfinite, (v, lo, hi))) and not lo <= v <= hi:
            out.append(f"{base}: value {v:.4g} outside its interval [{lo:.4g}, {hi:.4g}]")
    return out
