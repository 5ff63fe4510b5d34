"""Chapter 6's converged minimisers on the page: the dynamics check's table rows and the sentence
on the seeds the gradient-descent gap leaves out.

The science (the minimisers, the decision between the theories, the dynamics check) lives in
:mod:`stumplib.phase.minimise`, :mod:`stumplib.book.studies.decision` and
:mod:`stumplib.phase.dynamics_check`; this module only says what they found.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence


def dropped_seeds(gap: Mapping[str, Any]) -> str:
    """Which seeds :func:`stumplib.book.studies.decision.gd_gap` left out, and why.

    Parameters
    ----------
    gap : Mapping[str, Any]
        :func:`stumplib.book.studies.decision.gd_gap`'s output (``ds``, ``n_ran``, ``n_dropped``).

    Returns
    -------
    str
        ``"1 of the 3 seeds GD ran on at d = 8, without a finite test error (GD or
        minimiser)"`` (one part per ``d`` that lost seeds), or ``""`` when no seed was left out.
    """
    why = ", ".join(f"{k} of the {r} seeds GD ran on at d = {d}"
                    for d, k, r in zip(gap["ds"], gap["n_dropped"], gap["n_ran"]) if k)
    return f"{why}, without a finite test error (GD or minimiser)" if why else ""


def dynamics_rows(checks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The table of the solver's stability flag checked by minimisation, one row per point.

    Parameters
    ----------
    checks : sequence of mapping
        :func:`stumplib.phase.dynamics_check.stability_by_dynamics`' output.

    Returns
    -------
    list of dict
        Rows ``alpha``, ``∂F_m/∂m``, ``solver``, ``|m| sqrt(d), d = <d>`` (the median over the
        converged runs, one column per ``d``), ``interval`` (at the largest ``d``: the median's
        distribution-free interval and its coverage, where the checks carry it), ``dynamics``,
        ``agree`` and ``unconverged`` (omega, the same for every row, is stated beside the table).
    """
    rows = []
    for c in checks:
        row = {"alpha": c["alpha"], "∂F_m/∂m": c["derivative"], "solver": c["solver"]}
        row.update({f"|m| sqrt(d), d = {d}": m for d, m in zip(c["ds"], c["median_abs_m"])})
        if "median_lo" in c:
            row["interval"] = (f"[{c['median_lo']:.3g}, {c['median_hi']:.3g}] "
                               f"({c['median_coverage']:.0%})")
        row.update(dynamics=c["dynamics"], agree=c["agree"])
        row["unconverged"] = c["not_converged"]
        rows.append(row)
    return rows
