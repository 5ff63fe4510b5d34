"""STUB (pages branch): the interface of the claims registry that another branch writes.

The integrator keeps the real module; this stub only lets :mod:`stumplib.core.sphinxext`'s claims
export (``claims.json`` / ``claims.csv``) be written and tested against the agreed interface. Its
two rows are examples.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Claim", "REGISTRY"]


@dataclass(frozen=True)
class Claim:
    """One landing-page claim: where its glued values live and what they are judged against.

    Attributes
    ----------
    key : glue prefix: ``<key>_status``, ``<key>_verdict``, ``<key>_reason``, ``<key>_estimate``
        (+ ``_lo``, ``_hi``), ``<key>_seed_agreement``.
    paper : ``"stump"`` or ``"phase"``.
    chapter : the chapter's document name, e.g. ``"chapters/04_error_bound"``.
    claim : the claim in the paper's words.
    statistic : what is measured.
    target : the target value or range, as text.
    tolerance : the tolerance and its justification.
    rule : the name of the verdict function in :mod:`stumplib.core.verdicts`.
    """

    key: str
    paper: str
    chapter: str
    claim: str
    statistic: str
    target: str
    tolerance: str
    rule: str


#: STUB: two example rows (the real registry lists every landing-page row)
REGISTRY: tuple[Claim, ...] = (
    Claim("head", "stump", "chapters/04_error_bound",
          "the head's error obeys error² = β⁻² + 2N⁻²", "exponents p and q of the two-term law",
          "p = q = 1", "0.05 (the fit's modelling error)", "against_target"),
    Claim("phase_transition", "phase", "chapters/06_positional_semantic",
          "a phase transition at αc", "the crossing αc of the two branches' training losses",
          "αc exists", "three quadrature errors", "located"),
)
