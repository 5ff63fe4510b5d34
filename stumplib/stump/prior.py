"""The threshold prior of the stump model: ``tau ~ U[tau_lo, tau_hi]``, one frozen object.

Every function of :mod:`stumplib.stump` that averages over thresholds (the population loss, the
flow, the Bayes baseline, the task sampler) draws or integrates ``tau`` from this prior. Build it
once (:class:`Prior`, checked where it is built) and pass it on; :data:`DEFAULT_PRIOR` is the
papers' ``U[0.2, 0.8]``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stumplib.core.validation import check_prior

#: the prior's default ends: the papers' ``U[0.2, 0.8]``
TAU_LO, TAU_HI = 0.2, 0.8


@dataclass(frozen=True)
class Prior:
    """The uniform threshold prior ``U[tau_lo, tau_hi]`` with ``0 <= tau_lo < tau_hi <= 1``.

    Frozen and checked once, where it is built (a bad pair raises :class:`ValueError` naming the
    argument); functions that take a ``Prior`` do not check it again.

    Attributes
    ----------
    tau_lo, tau_hi : float
        The prior's ends (default ``0.2, 0.8``).

    Examples
    --------
    >>> Prior(0.1, 0.9).width
    0.8
    """

    tau_lo: float = TAU_LO
    tau_hi: float = TAU_HI

    def __post_init__(self) -> None:
        lo, hi = check_prior(self.tau_lo, self.tau_hi)
        object.__setattr__(self, "tau_lo", lo)
        object.__setattr__(self, "tau_hi", hi)

    @property
    def width(self) -> float:
        """The prior's width ``tau_hi - tau_lo``."""
        return self.tau_hi - self.tau_lo

    @property
    def mid(self) -> float:
        """The prior's centre ``(tau_lo + tau_hi) / 2``."""
        return 0.5 * (self.tau_lo + self.tau_hi)

    def as_tuple(self) -> tuple[float, float]:
        """The ends as a pair.

        Returns
        -------
        tuple of float
            ``(tau_lo, tau_hi)``.
        """
        return self.tau_lo, self.tau_hi


#: the papers' prior, ``U[0.2, 0.8]``
DEFAULT_PRIOR = Prior()


def as_prior(prior: Any) -> Prior:
    """``prior`` itself if it is a :class:`Prior` (already checked where it was built).

    Parameters
    ----------
    prior : Prior
        The threshold prior a function was given.

    Returns
    -------
    Prior

    Raises
    ------
    ValueError
        If ``prior`` is not a :class:`Prior` (e.g. a pair of ends: build ``Prior(lo, hi)``).
    """
    if not isinstance(prior, Prior):
        raise ValueError(f"prior must be a Prior (e.g. Prior(0.2, 0.8)); got {prior!r}")
    return prior
