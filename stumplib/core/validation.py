"""Argument checks shared by every public function.

Every check raises :class:`ValueError` whose message names the argument and the allowed range, so
that bad input fails before any work starts (and, in a notebook, in the first cell after the
parameters).
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Iterable, Sequence

import numpy as np
import torch


def check_int(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` if it is an integer in ``[minimum, maximum]``.

    Booleans and floats (even integral ones such as ``3.0``) are rejected: a size given as a float
    is usually a mistake.

    Parameters
    ----------
    name : the parameter's name, used in the error message.
    value : the value to check.
    minimum, maximum : the allowed range (``maximum=None``: no upper limit).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        naming ``name`` and the allowed range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Integral, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}"
                         + (f" and <= {maximum}" if maximum is not None else "")
                         + f"; got {value!r} of type {type(value).__name__}")
    v = int(value)
    if v < minimum or (maximum is not None and v > maximum):
        rng = f"[{minimum}, {maximum}]" if maximum is not None else f">= {minimum}"
        raise ValueError(f"{name} must be an integer in {rng}; got {v}")
    return v


def check_real(name: str, value: Any, *, low: float = -math.inf, high: float = math.inf,
               low_open: bool = False, high_open: bool = False) -> float:
    """Return ``value`` as a finite ``float`` inside the interval from ``low`` to ``high``.

    ``low_open`` / ``high_open`` make the corresponding end exclusive. NaN and infinities are
    always rejected.

    Parameters
    ----------
    name : the parameter's name, used in the error message.
    value : the value to check.
    low, high : the interval's ends.
    low_open, high_open : whether each end is excluded.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        naming ``name`` and the allowed range.
    """
    lo_b = "(" if low_open else "["
    hi_b = ")" if high_open else "]"
    rng = f"{lo_b}{low}, {high}{hi_b}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.floating, np.integer)):
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        else:
            raise ValueError(f"{name} must be a finite real number in {rng}; got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite real number in {rng}; got {v}")
    if (v < low or (low_open and v == low)) or (v > high or (high_open and v == high)):
        raise ValueError(f"{name} must be in {rng}; got {v}")
    return v


def check_prior(tau_lo: Any, tau_hi: Any) -> tuple[float, float]:
    """Check a uniform threshold prior ``[tau_lo, tau_hi]`` with ``0 <= tau_lo < tau_hi <= 1``.

    Parameters
    ----------
    tau_lo, tau_hi : the prior's ends.

    Returns
    -------
    (tau_lo, tau_hi) as floats.
    """
    lo = check_real("tau_lo", tau_lo, low=0.0, high=1.0)
    hi = check_real("tau_hi", tau_hi, low=0.0, high=1.0)
    if not lo < hi:
        raise ValueError(f"tau_lo must be < tau_hi (prior [tau_lo, tau_hi] inside [0, 1]); "
                         f"got tau_lo={lo}, tau_hi={hi}")
    return lo, hi


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices`` (strings).

    Parameters
    ----------
    name : the parameter's name, used in the error message.
    value : the value to check.
    choices : the allowed strings.

    Returns
    -------
    str
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (not a number, not a string).

    Parameters
    ----------
    name : the parameter's name, used in the error message.
    value : the value to check (``True`` or ``False``).

    Returns
    -------
    bool
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_tensor_finite(name: str, value: torch.Tensor) -> torch.Tensor:
    """Raise if a tensor holds NaN or infinite entries.

    Parameters
    ----------
    name : the parameter's name, used in the error message.
    value : the tensor to check.

    Returns
    -------
    torch.Tensor: ``value`` itself.
    """
    if not torch.is_tensor(value):
        raise ValueError(f"{name} must be a torch tensor; got {type(value).__name__}")
    if value.is_floating_point() and not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf); got non-finite entries")
    return value


def as_real_tensor(name: str, value: Any, *, dtype: torch.dtype | None = None,
                   device: torch.device | str | None = None) -> torch.Tensor:
    """Convert a real number, array or tensor to a finite floating tensor, naming ``name`` on failure.

    ``None``, strings, booleans, complex or non-numeric values, and NaN / inf entries raise
    :class:`ValueError`.

    Parameters
    ----------
    name : the parameter's name, used in the error message.
    value : the value to check.
    dtype : floating dtype (``None``: the default dtype).
    device : target device (``None``: the tensor's own, or the CPU).

    Returns
    -------
    torch.Tensor
    """
    if value is None or isinstance(value, (str, bytes, bool, np.bool_, complex)):
        raise ValueError(f"{name} must be a finite real number or a tensor of them; got {value!r}")
    try:
        t = torch.as_tensor(value, dtype=dtype, device=device)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"{name} must be a finite real number or a tensor of them; got {value!r} "
                         f"({exc})") from None
    if t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"{name} must be real; got a tensor of dtype {t.dtype}")
    return check_tensor_finite(name, t)


def check_grid(name: str, values: Iterable[Any], *, kind: str = "int", minimum: float = 1,
               maximum: float | None = None) -> list:
    """Check a non-empty grid of sizes (``kind='int'``) or reals (``kind='real'``).

    Each entry is checked like :func:`check_int` / :func:`check_real` and the error names the
    entry, e.g. ``m_grid[2]``.

    Parameters
    ----------
    name : the grid's name, used in the error message.
    values : the grid (an iterable).
    kind : ``"int"`` or ``"real"``.
    minimum, maximum : the allowed range of every entry.

    Returns
    -------
    list of the checked entries.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a non-empty list of {'integers' if kind == 'int' else 'numbers'}"
                         f"; got {values!r}")
    vals = list(values)
    if len(vals) == 0:
        raise ValueError(f"{name} must be a non-empty list; got an empty grid")
    if kind == "int":
        return [check_int(f"{name}[{i}]", v, minimum=int(minimum),
                          maximum=None if maximum is None else int(maximum)) for i, v in enumerate(vals)]
    return [check_real(f"{name}[{i}]", v, low=minimum,
                       high=math.inf if maximum is None else maximum) for i, v in enumerate(vals)]


def check_shapes(shapes: Any, name: str = "shapes") -> list[tuple[int, int]]:
    """Check a non-empty list of corpus shapes ``(m, n)``, each a pair of integers >= 1.

    Parameters
    ----------
    shapes : the list of pairs.
    name : the parameter's name, used in the error message (which names the entry, e.g.
        ``shapes[2][0] (m)``).

    Returns
    -------
    list of ``(m, n)`` tuples of ints.
    """
    if isinstance(shapes, (str, bytes)) or not isinstance(shapes, (list, tuple)) or len(shapes) == 0:
        raise ValueError(f"{name} must be a non-empty list of (m, n) pairs")
    out = []
    for i, sh in enumerate(shapes):
        if not isinstance(sh, (list, tuple)) or len(sh) != 2:
            raise ValueError(f"{name}[{i}] must be an (m, n) pair; got {sh!r}")
        out.append((check_int(f"{name}[{i}][0] (m)", sh[0]), check_int(f"{name}[{i}][1] (n)", sh[1])))
    return out
