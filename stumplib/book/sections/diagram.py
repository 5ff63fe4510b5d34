"""Chapter 6's phase-diagram section: the table of the crossings over omega, why a crossing is
absent, and the verdict on the diagram.

The numbers come from :func:`stumplib.book.studies.diagram.phase_diagram` (read through
:func:`stumplib.book.studies.diagram.crossing`); the verdict follows
:func:`stumplib.book.verdicts.ordering`.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from stumplib.book import verdicts
from stumplib.book.verdicts import Verdict
from stumplib.book.studies.diagram import crossing

#: what a missing crossing means, per quantity and outcome
_ABSENT = {("alpha_c", "above_range"): "the semantic training loss stays above the positional one",
           ("alpha_c", "below_range"): "the semantic training loss is lower everywhere on the grid",
           ("alpha_l", "above_range"): "the semantic test error stays above the linear baseline's",
           ("alpha_l", "below_range"): "the semantic test error is below the baseline's everywhere",
           ("alpha_c", "no_points"): "fewer than two points with both branches converged",
           ("alpha_l", "no_points"): "fewer than two converged semantic points"}


def absent_reason(diag: Mapping[str, np.ndarray], name: str, i: int) -> str | None:
    """Why the crossing ``name`` at the ``i``-th omega is NaN when the search showed it absent from
    the grid's range.

    Parameters
    ----------
    diag : mapping
        :func:`stumplib.book.studies.diagram.phase_diagram`'s result.
    name : str
        ``"alpha_c"`` or ``"alpha_l"``.
    i : int
        The omega's index.

    Returns
    -------
    str or None
        ``None`` when found or when no points were available.
    """
    out = str(diag[f"{name}_outcome"][i])
    if out in ("found", "no_points"):
        return None
    return _ABSENT[(name, out)] + " on the grid"


def crossing_rows(diag: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """One table row per omega: both crossings with their intervals, or the reason they are NaN.

    Parameters
    ----------
    diag : mapping
        :func:`stumplib.book.studies.diagram.phase_diagram`'s result.

    Returns
    -------
    list of dict
    """
    rows = []
    for i, w in enumerate(diag["omega"]):
        row: dict[str, Any] = {"omega": float(w)}
        for name in ("alpha_c", "alpha_l"):
            est, out = crossing(diag, name, i), str(diag[f"{name}_outcome"][i])
            row[name] = f"{est:.3f}" if out == "found" else f"NaN: {_ABSENT[(name, out)]}"
        row["points solved"] = int(np.sum(diag["pt_w"] == i))
        rows.append(row)
    return rows


def diagram_verdict(diag: Mapping[str, np.ndarray]) -> Verdict:
    """The claim ``phase_diagram``: at every omega both crossings found and
    ``alpha_l >= alpha_c``; the sentence quotes alpha_c at the smallest and the largest omega (the
    landing row's numbers).

    Parameters
    ----------
    diag : mapping
        :func:`stumplib.book.studies.diagram.phase_diagram`'s result.

    Returns
    -------
    Verdict
        :func:`stumplib.book.verdicts.combine` of one :func:`stumplib.book.verdicts.ordering` per
        omega.
    """
    parts, good = [], []
    for i, w in enumerate(diag["omega"]):
        v = verdicts.ordering(crossing(diag, "alpha_l", i), crossing(diag, "alpha_c", i),
                              symbols=("alpha_l", "alpha_c"))
        parts.append(v)
        good += [f"{w:g}"] if v.status == "holds" else []
    om = np.asarray(diag["omega"], dtype=float)
    ends = [int(np.argmin(om)), int(np.argmax(om))]
    a_c = [crossing(diag, "alpha_c", i) for i in ends]
    span = (f"goes from {a_c[0].value:.2f} at omega = {om[ends[0]]:g} to {a_c[1].value:.2f} at "
            f"omega = {om[ends[1]]:g}" if om.size > 1 else
            f"= {a_c[0].value:.2f} at omega = {om[0]:g}")
    intervals = "intervals " + ", ".join(f"{e:.2f} at omega = {om[i]:g}"
                                         for e, i in zip(a_c, ends[:om.size]))
    return verdicts.combine(parts, (
        f"alpha_c {span}; alpha_l >= alpha_c at {len(good)} of "
        f"{om.size} omega ({intervals}"
        f"{'; omega = ' + ', '.join(f'{w:g}' for w in om) if om.size > 1 else ''})"))
