"""The setting of the solvable attention model (Cui et al., arXiv:2402.03902): its parameters, their
validation, the teacher's attention rows, and the error raised when the fixed-point equations fail.

One job: what a point of the model *is* (``omega, sigma, lambda, A``, the branch) and checking it
once, where :func:`check_model` builds the :class:`PhaseModel` that the functions of
:mod:`stumplib.phase` take (:func:`as_model` only confirms its type).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Iterator, NamedTuple

import numpy as np
from scipy.special import expit

from stumplib.core.validation import check_choice, check_grid, check_real

BRANCHES = ("semantic", "positional")


class StateEvolutionError(RuntimeError):
    """The damped fixed-point iteration did not converge (or left the admissible region)."""


# ----------------------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------------------
def check_A(A: Any) -> np.ndarray:
    """Validate the 2x2 positional mixing matrix (finite, rows summing to one, entries in [0, 1]).

    Parameters
    ----------
    A : array_like, shape ``(2, 2)``
        The teacher's positional attention matrix: finite entries in [0, 1], each row summing to
        one (within 1e-12).

    Returns
    -------
    numpy.ndarray, shape ``(2, 2)``
        ``A`` as a float64 array.

    Raises
    ------
    ValueError
        If ``A`` is not a finite row-stochastic 2x2 matrix.
    """
    try:
        arr = np.asarray(A, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"A must be a 2x2 row-stochastic matrix; got {A!r}") from None
    if arr.shape != (2, 2) or not np.all(np.isfinite(arr)):
        raise ValueError(f"A must be a finite 2x2 row-stochastic matrix; got {A!r}")
    if np.any(arr < 0) or np.any(arr > 1) or not np.allclose(arr.sum(1), 1.0, atol=1e-12):
        raise ValueError(f"A must have entries in [0, 1] and rows summing to 1; got {arr.tolist()}")
    return arr


def check_alphas(alpha: Any) -> tuple[np.ndarray, bool]:
    """Validate sample ratios ``alpha = n / d``.

    Parameters
    ----------
    alpha : a positive number or a non-empty 1-D sequence of positive numbers (each at most 1000).

    Returns
    -------
    alphas : (A,) float64 array; scalar : whether ``alpha`` was a single number.

    Raises
    ------
    ValueError
        Naming ``alpha`` and its allowed range.
    """
    scalar = np.isscalar(alpha) or (isinstance(alpha, np.ndarray) and alpha.ndim == 0)
    vals = [alpha] if scalar else alpha
    if isinstance(vals, np.ndarray):
        vals = vals.tolist()
    a = check_grid("alpha", vals, kind="real", minimum=0.0)
    arr = np.asarray(a, dtype=np.float64)
    if np.any(arr <= 0):
        raise ValueError(f"alpha must be > 0 (sample ratio n/d); got {arr[arr <= 0][0]}")
    if np.any(arr > 1e3):
        raise ValueError(f"alpha must be <= 1000; got {arr.max()}")
    return arr, scalar



#: the paper's positional mixing matrix (swap-symmetric)
DEFAULT_A = ((0.6, 0.4), (0.4, 0.6))


class PhaseModel(NamedTuple):
    """The validated phase model (see :func:`check_model`); unpacks as
    ``omega, sigma, lam, A, branch``."""
    omega: float
    sigma: float
    lam: float
    A: np.ndarray
    branch: str

    @property
    def rho(self) -> float:
        """``sigma^2``, the token noise variance."""
        return self.sigma * self.sigma

    @property
    def swap_symmetric(self) -> bool:
        """``A[::-1, ::-1] == A``: then ``m = 0`` is an invariant subspace of the semantic branch."""
        return bool(np.allclose(self.A, self.A[::-1, ::-1]))


def check_model(*, omega: Any, sigma: Any = 0.5, lam: Any = 0.01, A: Any = DEFAULT_A,
                branch: Any = "semantic") -> PhaseModel:
    """Validate the phase model's parameters (the one checker of the phase package's entry points).

    Parameters
    ----------
    omega : positional share of the teacher, in [0, 1].
    sigma : token noise standard deviation, in (0, 100].
    lam : ridge penalty ``lambda``, in (0, 1000].
    A : 2x2 row-stochastic positional matrix (see :func:`check_A`).
    branch : ``"semantic"`` or ``"positional"``.

    Returns
    -------
    PhaseModel
        ``(omega, sigma, lam, A, branch)`` as floats, a float64 (2, 2) array and a string.

    Raises
    ------
    ValueError
        Naming the first bad parameter and its allowed range.
    """
    return PhaseModel(omega=check_real("omega", omega, low=0.0, high=1.0),
                      sigma=check_real("sigma", sigma, low=0.0, low_open=True, high=100.0),
                      lam=check_real("lam", lam, low=0.0, low_open=True, high=1e3),
                      A=check_A(A), branch=check_choice("branch", branch, BRANCHES))


def as_model(model: Any) -> PhaseModel:
    """``model`` itself if it is a :class:`PhaseModel` (checked once, where :func:`check_model`
    built it).

    Parameters
    ----------
    model : PhaseModel
        The model a function was given.

    Returns
    -------
    PhaseModel

    Raises
    ------
    ValueError
        If ``model`` is not a :class:`PhaseModel` (build it with ``check_model(omega=...)``).
    """
    if not isinstance(model, PhaseModel):
        raise ValueError(f"model must be a PhaseModel, built by check_model(omega=..., sigma=..., "
                         f"lam=..., A=...); got {model!r}")
    return model


class MappingResult(Mapping):
    """Read access by key to a result dataclass's fields (``r["q"]`` as well as ``r.q``), so that a
    result reads like the dict of arrays it replaces: ``keys()``, ``items()``, ``in``, ``**r``."""

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def first(self):
        """The same result with every field's entry 0 (the scalar result of a scalar ``alpha``).

        Returns
        -------
        MappingResult
            A new instance of the same class: each array field replaced by its entry 0 along the first
            axis (a scalar for an ``(A,)`` field), the other fields unchanged.
        """
        return type(self)(**{k: (v[0] if isinstance(v, np.ndarray) else v) for k, v in self.items()})



def teacher_rows(u: np.ndarray, omega: float, A: np.ndarray) -> np.ndarray:
    """First-column entries ``t_l`` of the teacher matrix ``(1-omega) softmax(u u^T) + omega A``.

    Parameters
    ----------
    u : numpy.ndarray, shape ``(..., 2)``
        Teacher pre-activations ``u_l`` of the two tokens (the scores ``h*_l``).
    omega : float
        Positional share of the teacher, in [0, 1].
    A : numpy.ndarray, shape ``(2, 2)``
        Row-stochastic positional matrix of the teacher, already validated (:func:`check_A`).

    Returns
    -------
    t : numpy.ndarray, shape ``(..., 2)``
        ``t_l = (1 - omega) sigmoid(u_l (u_1 - u_2)) + omega A[l, 0]``, in [0, 1]; row ``l`` of the
        teacher matrix is ``(t_l, 1 - t_l)``.
    """
    du = u[..., 0] - u[..., 1]
    sem = expit(u * du[..., None])
    return (1.0 - omega) * sem + omega * A[:, 0]
