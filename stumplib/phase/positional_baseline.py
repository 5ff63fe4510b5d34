"""The linear positional baseline ``y_hat = B z`` (a trainable 2x2 matrix; it sees positions only).

With fresh tokens ``z`` and ``d -> infinity``, ``E |B z - T z|^2 / (2 d) = (sigma^2 / 2) E |B - T|_F^2``
(the teacher matrix ``T`` depends on ``z`` only through two projections). The risk is minimised by
``B* = E T`` and the exact asymptotic test error is ``(sigma^2 / 2) sum_{lk} Var T_lk``, with
``T = (1 - omega) softmax(u u^T) + omega A`` and ``u ~ N(0, sigma^2 I_2)``. The ridge of the fitted
baseline and the finite number of samples change this by ``O(1 / (n d))``: nothing at the sizes used.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stumplib.core.validation import check_int, check_real
from stumplib.phase.setting import DEFAULT_A, PhaseModel, as_model, check_A


def teacher_moments(*, omega: float, sigma: float = 0.5, A: Any = DEFAULT_A,
                    n_nodes: int = 80) -> tuple[np.ndarray, np.ndarray]:
    """Mean and entrywise variance of the teacher matrix ``T`` over ``u ~ N(0, sigma^2 I_2)``.

    Tensor Gauss-Hermite rule with ``n_nodes`` per axis (the integrand is smooth; 80 nodes give
    about 1e-10 relative accuracy).

    Parameters
    ----------
    omega : float
        The positional share.
    sigma : float
        The tokens' standard deviation.
    A : array_like, shape ``(2, 2)``
        The positional attention matrix.
    n_nodes : int
        Gauss-Hermite nodes per axis.

    Returns
    -------
    mean, var : np.ndarray, each of shape ``(2, 2)``
    """
    omega = check_real("omega", omega, low=0.0, high=1.0)
    sigma = check_real("sigma", sigma, low=0.0, low_open=True, high=100.0)
    A_ = check_A(A)
    n_nodes = check_int("n_nodes", n_nodes, minimum=4, maximum=400)
    import torch

    from stumplib.phase.data import teacher_of_scores

    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    u = torch.as_tensor(np.stack(np.meshgrid(sigma * x, sigma * x, indexing="ij"), -1))  # (n, n, 2)
    W = np.outer(w, w)
    T = np.moveaxis(teacher_of_scores(u, omega=omega, A=A_).numpy(), (0, 1), (-2, -1))  # (2, 2, n, n)
    mean = (T * W).sum((-1, -2))
    var = ((T - mean[:, :, None, None]) ** 2 * W).sum((-1, -2))
    return mean, var


def linear_baseline_test_error(model: PhaseModel) -> float:
    """Exact asymptotic per-sample test error of the best linear positional baseline,
    ``(sigma^2 / 2) sum_{lk} Var T_lk`` (independent of ``alpha``).

    Parameters
    ----------
    model : PhaseModel
        The model (:func:`~stumplib.phase.check_model`): the teacher's positional share ``omega``
        and matrix ``A`` and the token noise ``sigma`` (``lam`` and the branch are not used).

    Returns
    -------
    float
    """
    omega, sigma, _, A, _ = as_model(model)
    _, var = teacher_moments(omega=omega, sigma=sigma, A=A)
    return float(0.5 * sigma ** 2 * var.sum())


def baseline_test_error_of(B: Any, *, omega: float, sigma: float = 0.5,
                           A: Any = DEFAULT_A) -> np.ndarray:
    """Asymptotic test error ``(sigma^2/2) (|B - E T|_F^2 + sum Var T)`` of given matrices ``B``.

    Parameters
    ----------
    B : array_like, shape ``(..., 2, 2)``
        The linear baselines' matrices.
    omega, sigma : float
        The positional share and the tokens' standard deviation.
    A : array_like, shape ``(2, 2)``
        The positional attention matrix.

    Returns
    -------
    np.ndarray, shape ``(...)``
    """
    B = np.asarray(B, dtype=np.float64)
    if B.shape[-2:] != (2, 2) or not np.all(np.isfinite(B)):
        raise ValueError(f"B must be a finite array of 2x2 matrices; got shape {B.shape}")
    mean, var = teacher_moments(omega=omega, sigma=sigma, A=A)
    return 0.5 * sigma ** 2 * (((B - mean) ** 2).sum((-1, -2)) + var.sum())
