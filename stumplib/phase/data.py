"""Data of the solvable attention model: positional encodings, teacher and samples (torch, any device).

``L = 2`` tokens of dimension ``d``: token ``l`` is ``x_l = p_l + z_l`` with ``z_l ~ N(0, sigma^2 I_d)``
and ``p_1 = -p_2 = (1, ..., 1) / sqrt(d)``. The teacher direction is ``Q* ~ N(0, I_d)`` and the label
is ``y = T z`` with ``T = (1 - omega) softmax(h* h*^T) + omega A`` and ``h*_l = z_l . Q* / sqrt(d)``.
"""
from __future__ import annotations

from typing import Any

import torch

from stumplib.core.validation import check_int, check_real
from stumplib.phase.setting import DEFAULT_A, check_A


def positional_encodings(d: int, *, device: Any = "cpu", dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``P`` of shape (2, d): rows ``p_1 = (1, ..., 1) / sqrt(d)`` and ``p_2 = -p_1`` (unit norm).

    Parameters
    ----------
    d : int
        Token dimension (>= 2).
    device : str or torch.device, optional
        Where the tensor is allocated (default ``"cpu"``).
    dtype : torch.dtype, optional
        Floating type of the result (default float64).

    Returns
    -------
    torch.Tensor, shape ``(2, d)``
        The positional encodings ``p_1`` (row 0) and ``p_2 = -p_1`` (row 1).
    """
    d = check_int("d", d, minimum=2)
    p = torch.full((d,), d ** -0.5, device=device, dtype=dtype)
    return torch.stack([p, -p])


def sample_teacher(d: int, *, generator: torch.Generator, device: Any = "cpu",
                   dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Teacher direction ``Q* ~ N(0, I_d)``, shape (d,).

    Parameters
    ----------
    d : int
        Token dimension (>= 2).
    generator : torch.Generator
        Source of the draw (on ``device``).
    device : str or torch.device, optional
        Where the tensor is allocated (default ``"cpu"``).
    dtype : torch.dtype, optional
        Floating type of the result (default float64).

    Returns
    -------
    torch.Tensor, shape ``(d,)``
        ``Q*``, independent standard normal entries (norm about ``sqrt(d)``).
    """
    d = check_int("d", d, minimum=2)
    return torch.randn(d, generator=generator, device=device, dtype=dtype)


def sample_tokens(n: int, d: int, *, sigma: float = 0.5, generator: torch.Generator,
                  device: Any = "cpu", dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Token noises ``z`` of shape (n, 2, d), entries ``N(0, sigma^2)``.

    Parameters
    ----------
    n : int
        Number of samples (>= 1).
    d : int
        Token dimension (>= 2).
    sigma : float, optional
        Standard deviation of each noise entry, in (0, 100] (default 0.5).
    generator : torch.Generator
        Source of the draws (on ``device``).
    device : str or torch.device, optional
        Where the tensor is allocated (default ``"cpu"``).
    dtype : torch.dtype, optional
        Floating type of the result (default float64).

    Returns
    -------
    torch.Tensor, shape ``(n, 2, d)``
        The noises ``z_l`` of the two tokens of each sample (positions not added: ``x = z + P``,
        :func:`positional_encodings`).
    """
    n = check_int("n", n, minimum=1)
    d = check_int("d", d, minimum=2)
    sigma = check_real("sigma", sigma, low=0.0, low_open=True, high=100.0)
    return sigma * torch.randn(n, 2, d, generator=generator, device=device, dtype=dtype)


def softmax_rows(h: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax of the 2x2 score matrices ``h h^T``; ``h`` (..., 2) -> (..., 2, 2).

    Parameters
    ----------
    h : torch.Tensor, shape ``(..., 2)``
        Scores ``h_l`` of the two tokens (e.g. ``h_l = x_l . Q / sqrt(d)``), any batch shape.

    Returns
    -------
    torch.Tensor, shape ``(..., 2, 2)``
        Attention matrices: entry ``(l, k)`` is ``exp(h_l h_k) / sum_k' exp(h_l h_k')`` (rows sum to one).
    """
    return torch.softmax(h[..., :, None] * h[..., None, :], dim=-1)


def teacher_of_scores(hs: torch.Tensor, *, omega: float, A: Any) -> torch.Tensor:
    """The teacher formula, once: ``T = (1 - omega) softmax(h* h*^T) + omega A``.

    Parameters
    ----------
    hs : (..., 2) teacher scores ``h*_l = z_l . Q* / sqrt(d)``.
    omega : positional share, in [0, 1].
    A : the fixed 2x2 positional matrix.

    Returns
    -------
    (..., 2, 2) teacher matrices.
    """
    A_ = torch.as_tensor(check_A(A), dtype=hs.dtype, device=hs.device)
    return (1 - omega) * softmax_rows(hs) + omega * A_


def teacher_matrix(z: torch.Tensor, q_star: torch.Tensor, *, omega: float,
                   A: Any = DEFAULT_A) -> torch.Tensor:
    """Teacher matrices ``T`` for tokens ``z`` (..., n, 2, d) and teachers ``q_star`` (d,) or (..., d).

    Parameters
    ----------
    z : token noises; a batch of teachers ``q_star`` of shape (S, d) pairs with ``z`` of shape
        (S, n, 2, d).
    q_star : teacher direction(s).
    omega : positional share, in [0, 1].
    A : the fixed 2x2 positional matrix.

    Returns
    -------
    (..., n, 2, 2) teacher matrices (:func:`teacher_of_scores` of ``h*_l = z_l . Q* / sqrt(d)``).
    """
    omega = check_real("omega", omega, low=0.0, high=1.0)
    d = z.shape[-1]
    h = (z * q_star[..., None, None, :]).sum(-1) / d ** 0.5
    return teacher_of_scores(h, omega=omega, A=A)
