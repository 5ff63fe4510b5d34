"""The two-parameter softmax-attention estimator of a stump threshold.

    f_{beta,b}(context) = sum_i softmax_i(s) x_i,     s_i = -beta x_i + b y_i

Key ``(x_i, y_i)``, query ``(-beta, b)``, value ``x_i``. ``beta`` is the attention scale and
``c = b / beta`` the relative label score. For any parameter ``theta`` the derivative is a covariance
under the attention weights ``w``: ``df/dtheta = Cov_w(x, ds/dtheta)``, so

    df/dbeta = -Var_w(x),      df/db = Cov_w(x, y).

Everything is computed with a max-shifted softmax and centred moments, so it is stable for
``beta`` up to 1e6 and beyond in float64.
"""
from __future__ import annotations

from typing import Any

import torch

from stumplib.core.validation import as_real_tensor, check_tensor_finite


def _as_param(name: str, v: Any, like: torch.Tensor) -> torch.Tensor:
    return as_real_tensor(name, v, dtype=like.dtype, device=like.device)


def check_context(x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None) -> None:
    """Check a batch of contexts at an entry point (the one check of every estimator of a context).

    Parameters
    ----------
    x : torch.Tensor, shape ``(..., n)``
        Features, finite.
    y : torch.Tensor, shape ``(..., n)``
        0/1 labels, finite, the shape of ``x``.
    mask : torch.Tensor or None, shape ``(..., n)``, bool
        Which examples each context keeps (at least one per context); ``None``: all.

    Raises
    ------
    ValueError
        naming the argument that is wrong and what it must be.
    """
    if not (torch.is_tensor(x) and torch.is_tensor(y)):
        raise ValueError("x and y must be torch tensors of shape (..., n)")
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape (..., n); got {tuple(x.shape)} and {tuple(y.shape)}")
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"x must have shape (..., n) with n >= 1; got {tuple(x.shape)}")
    check_tensor_finite("x", x)
    check_tensor_finite("y", y)
    if mask is not None:
        if mask.shape != x.shape or mask.dtype != torch.bool:
            raise ValueError(f"mask must be a bool tensor of shape {tuple(x.shape)}")
        if not bool(mask.any(-1).all()):
            raise ValueError("mask must keep at least one example in every context")


def attention_weights(x: torch.Tensor, y: torch.Tensor, beta: Any, b: Any,
                      mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax attention weights over a context.

    Parameters
    ----------
    x : torch.Tensor, shape ``(..., n)``
        Features.
    y : torch.Tensor, shape ``(..., n)``
        Their 0/1 labels.
    beta, b : float or torch.Tensor broadcastable to ``x.shape[:-1]``
        Attention scale and label score. To evaluate ``P`` parameter vectors on ``T`` contexts,
        pass ``x`` of shape ``(T, n)`` and ``beta``, ``b`` of shape ``(P, 1)``.
    mask : torch.Tensor of bool, shape ``(..., n)``, optional
        ``False`` marks padding (weight 0).

    Returns
    -------
    torch.Tensor
        The weights ``w``, shape ``broadcast(beta, x.shape[:-1]) + (n,)``; rows sum to 1.
    """
    check_context(x, y, mask)
    beta = _as_param("beta", beta, x)
    b = _as_param("b", b, x)
    s = -beta[..., None] * x + b[..., None] * y
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, dim=-1)


def estimate(x: torch.Tensor, y: torch.Tensor, beta: Any, b: Any,
             mask: torch.Tensor | None = None) -> torch.Tensor:
    """The estimate ``f = sum_i w_i x_i`` of the context's threshold.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., N)``: features and labels of each context.
    beta, b : attention scale and label score: numbers or tensors broadcastable to ``x.shape[:-1]``.
    mask : optional bool tensor like ``x``: ``False`` marks padding (no weight).

    Returns
    -------
    torch.Tensor, shape ``broadcast(beta, x.shape[:-1])``: the estimate of each context.
    """
    w = attention_weights(x, y, beta, b, mask)
    return (w * x).sum(-1)


def estimate_and_grad(x: torch.Tensor, y: torch.Tensor, beta: Any, b: Any,
                      mask: torch.Tensor | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The estimate and its analytic derivatives.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., N)``: features and labels of each context.
    beta, b : attention scale and label score, broadcastable to ``x.shape[:-1]``.
    mask : optional bool tensor like ``x``: ``False`` marks padding.

    Returns
    -------
    f, df_dbeta, df_db : torch.Tensor, each of shape ``broadcast(beta, x.shape[:-1])``
        ``df_dbeta = -Var_w(x)`` and ``df_db = Cov_w(x, y)`` (centred sums, no cancellation).
    """
    check_context(x, y, mask)
    return estimate_and_grad_unchecked(x, y, _as_param("beta", beta, x), _as_param("b", b, x), mask)


def estimate_and_grad_unchecked(x: torch.Tensor, y: torch.Tensor, beta: torch.Tensor, b: torch.Tensor,
                                mask: torch.Tensor | None
                                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`estimate_and_grad` without argument checks (the trainer's hot loop).

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., N)``
        Features and labels of each context (already tensors of one dtype and device).
    beta, b : torch.Tensor
        Attention scale and label score, broadcastable to ``x.shape[:-1]``.
    mask : torch.Tensor or None
        Bool tensor like ``x``: ``False`` marks padding.

    Returns
    -------
    f, df_dbeta, df_db : torch.Tensor, each of shape ``broadcast(beta, x.shape[:-1])``
        As :func:`estimate_and_grad`.
    """
    s = -beta[..., None] * x + b[..., None] * y
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, dim=-1)
    f = (w * x).sum(-1)
    dx = x - f[..., None]
    if mask is not None:
        dx = dx.masked_fill(~mask, 0.0)
    var = (w * dx * dx).sum(-1)
    ybar = (w * y).sum(-1)
    cov = (w * dx * (y - ybar[..., None])).sum(-1)
    return f, -var, cov
