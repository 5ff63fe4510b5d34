"""The book's one estimate-with-interval type (:class:`Estimate`) and the Student-t interval over
independent replicates (:func:`mean_interval`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

KINDS = ("plain", "seeds", "bootstrap", "windows", "censored", "quadrature", "range")


@dataclass(frozen=True)
class Estimate:
    """A value with an interval.

    Attributes
    ----------
    value : the point estimate.
    lo, hi : the interval's ends (``lo <= value <= hi`` for every kind but ``"plain"``, where the
        caller vouches for it).
    kind : one of :data:`KINDS`: ``"plain", "seeds", "bootstrap", "windows", "censored",
        "quadrature"`` (an interval) or ``"range"`` (not an interval: the smallest and largest of
        several values, :meth:`range`; printed as ``"102 (range 48.2 to 138)"``, never in brackets).
    level : the interval's nominal coverage (``nan`` where it has none, e.g. a quadrature error bar).
    censored : ``None``, ``"lower"`` (``value`` is a lower bound: the truth lies in ``[value, inf]``) or
        ``"upper"`` (an upper bound).
    n : the number of replicates, points or resamples behind it, where meaningful.
    n_dropped : how many replicates (resamples, seeds, shapes) were left out of the interval
        (0: none); ``n`` counts the ones used.
    dropped : why they were left out (empty when ``n_dropped == 0``).
    """

    value: float
    lo: float
    hi: float
    kind: str = "plain"
    level: float = 0.95
    censored: str | None = None
    n: int | None = None
    n_dropped: int = 0
    dropped: str = ""

    @classmethod
    def lower_bound(cls, value: float, n: int | None = None) -> "Estimate":
        """A censored estimate: the quantity is at least ``value``.

        Parameters
        ----------
        value : float
            The lower bound.
        n : int, optional
            Replicates or points behind it.

        Returns
        -------
        Estimate
            Of kind ``"censored"``, ``censored="lower"``, interval ``[value, inf]``.
        """
        return cls(float(value), float(value), math.inf, "censored", float("nan"), "lower", n)

    @classmethod
    def range(cls, values: Any, center: str = "median") -> "Estimate":
        """The middle of several values with their range (not a confidence interval).

        Parameters
        ----------
        values : array_like
            The values (shapes, corpora); non-finite ones are ignored, at least one finite.
        center : str
            ``"median"`` or ``"mean"``: the value reported.

        Returns
        -------
        Estimate
            Of kind ``"range"``: ``lo`` and ``hi`` the smallest and largest value, ``level``
            NaN (a range has no coverage), ``n`` the number of values.
        """
        v = np.asarray(values, dtype=float).ravel()
        v = v[np.isfinite(v)]
        if v.size == 0:
            raise ValueError("values must hold at least one finite number")
        if center not in ("median", "mean"):
            raise ValueError(f"center must be 'median' or 'mean'; got {center!r}")
        mid = float(np.median(v) if center == "median" else v.mean())
        return cls(mid, float(v.min()), float(v.max()), "range", float("nan"), None, int(v.size))

    @property
    def is_range(self) -> bool:
        """Whether ``[lo, hi]`` is a range of values (kind ``"range"``), not an interval."""
        return self.kind == "range"

    @classmethod
    def nan(cls, kind: str = "plain", n: int | None = None) -> "Estimate":
        """An estimate that could not be made (value and interval ``nan``).

        Parameters
        ----------
        kind : str
            The kind it would have had.
        n : int, optional
            Replicates or points behind it.

        Returns
        -------
        Estimate
        """
        nan = float("nan")
        return cls(nan, nan, nan, kind, nan, None, n)

    @classmethod
    def with_error(cls, value: float, err: float, kind: str = "quadrature", n: int | None = None) -> "Estimate":
        """``value +- err`` (e.g. a quadrature error estimate).

        Parameters
        ----------
        value : float
            The point estimate.
        err : float
            The error bar (its absolute value is used).
        kind : str
            The interval's kind.
        n : int, optional
            Points behind it.

        Returns
        -------
        Estimate
            With ``level`` NaN (an error bar has no coverage).
        """
        return cls(float(value), float(value - abs(err)), float(value + abs(err)), kind, float("nan"), None, n)

    @property
    def ci(self) -> tuple[float, float]:
        """``(lo, hi)``."""
        return (self.lo, self.hi)

    @property
    def width(self) -> float:
        """``hi - lo``."""
        return float(self.hi - self.lo)

    @property
    def half_width(self) -> float:
        """Half of :attr:`width`."""
        return 0.5 * self.width

    def contains(self, v: float, tol: float = 0.0) -> bool:
        """Whether ``v`` lies in ``[lo - tol, hi + tol]``.

        Parameters
        ----------
        v : float
            The value.
        tol : float
            Slack on both ends.

        Returns
        -------
        bool
        """
        return bool(self.lo - tol <= v <= self.hi + tol)

    def scaled(self, factor: float) -> "Estimate":
        """The estimate of ``factor * quantity`` (the interval flips for a negative factor).

        Parameters
        ----------
        factor : float
            The multiplier.

        Returns
        -------
        Estimate
            Every other field kept (a censored bound changes side for a negative factor).
        """
        lo, hi = sorted((self.lo * factor, self.hi * factor))
        cens = self.censored
        if factor < 0 and cens is not None:
            cens = "upper" if cens == "lower" else "lower"
        return replace(self, value=self.value * factor, lo=lo, hi=hi, censored=cens)

    def __format__(self, spec: str) -> str:
        spec = spec or ".3g"
        if self.censored == "lower":
            return f">= {self.value:{spec}}"
        if self.censored == "upper":
            return f"<= {self.value:{spec}}"
        if self.kind == "range":
            return f"{self.value:{spec}} (range {self.lo:{spec}} to {self.hi:{spec}})"
        if self.lo == self.value == self.hi:  # a deterministic result: no interval to print
            return f"{self.value:{spec}} (deterministic)"
        spec = _resolving(spec, self.lo, self.hi)
        return f"{self.value:{spec}} [{self.lo:{spec}}, {self.hi:{spec}}]"

    def __str__(self) -> str:
        return format(self, ".3g")


def _resolving(spec: str, lo: float, hi: float, extra: int = 4) -> str:
    """A fixed-point ``spec`` (``".4f"``) with up to ``extra`` more digits, until the interval's
    two ends print apart: a real interval never prints as ``0.2500 [0.2500, 0.2500]``."""
    import re

    m = re.fullmatch(r"([^.]*)\.(\d+)f", spec)
    if m is None or not (np.isfinite(lo) and np.isfinite(hi)) or lo == hi:
        return spec
    digits = int(m.group(2))
    for k in range(digits, digits + extra + 1):
        if f"{lo:{m.group(1)}.{k}f}" != f"{hi:{m.group(1)}.{k}f}":
            return f"{m.group(1)}.{k}f"
    return f"{m.group(1)}.{digits + extra}f"


def quantile_interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    """The central ``level`` interval of resampled values (NaN ends with fewer than 10 finite).

    Parameters
    ----------
    samples : np.ndarray
        Resampled values (non-finite ones ignored).
    level : float
        The interval's level, in (0, 1).

    Returns
    -------
    tuple of float
        ``(lo, hi)``.
    """
    a = (1 - level) / 2
    s = samples[np.isfinite(samples)]
    if s.size < 10:
        return float("nan"), float("nan")
    lo, hi = np.quantile(s, [a, 1 - a])
    return float(lo), float(hi)


def mean_interval(values: Any, *, axis: int = 0, level: float = 0.95) -> Estimate | tuple[np.ndarray, ...]:
    """Mean over independent replicates with a Student-t interval.

    Parameters
    ----------
    values : array_like
        Replicates along ``axis`` (at least 2), finite.
    axis : int
        The replicates' axis.
    level : float
        The interval's coverage.

    Returns
    -------
    Estimate or tuple of np.ndarray
        An :class:`Estimate` (kind ``"seeds"``) for 1-D input; for higher dimensions the arrays
        ``(mean, lo, hi)`` of the shape of ``values`` without ``axis``.
    """
    from scipy import stats as st

    v = np.asarray(values, dtype=float)
    if v.ndim == 0 or v.shape[axis] < 2:
        raise ValueError("values must hold at least 2 replicates along axis")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    S = v.shape[axis]
    mean = v.mean(axis)
    half = st.t.ppf(0.5 + level / 2, S - 1) * v.std(axis, ddof=1) / math.sqrt(S)
    if v.ndim == 1:
        return Estimate(float(mean), float(mean - half), float(mean + half), "seeds", level, None, S)
    return mean, mean - half, mean + half

