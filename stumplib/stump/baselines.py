"""Statistical baselines for a stump threshold, batched over contexts.

All take ``x, y`` of shape ``(..., N)`` (0/1 labels) and return shape ``(...)``. Empty sides fall
back to the feature range: no positive example gives ``min_positive = 1``, no negative gives
``max_negative = 0``.
"""
from __future__ import annotations

import torch

from stumplib.stump.prior import DEFAULT_PRIOR, Prior, as_prior


def _check(x: torch.Tensor, y: torch.Tensor) -> None:
    if not (torch.is_tensor(x) and torch.is_tensor(y)) or x.shape != y.shape or x.ndim < 1:
        raise ValueError("x and y must be torch tensors of the same shape (..., N) with N >= 1")
    if x.shape[-1] < 1:
        raise ValueError(f"x must have N >= 1 examples per context; got shape {tuple(x.shape)}")
    if x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError("x must be finite (no NaN or inf)")
    if y.is_floating_point() and not bool(torch.isfinite(y).all()):
        raise ValueError("y must be finite 0/1 labels (no NaN or inf)")


def min_positive(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Smallest positive example ``min{x_i : y_i = 1}`` (1 if there is none): the one-sided order
    statistic.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., N)``: features and 0/1 labels of each context.

    Returns
    -------
    torch.Tensor, shape ``x.shape[:-1]``: the smallest positive feature of each context.
    """
    _check(x, y)
    return torch.where(y > 0.5, x, torch.ones_like(x)).amin(-1)


def max_negative(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Largest negative example ``max{x_i : y_i = 0}`` (0 if there is none).

    Parameters
    ----------
    x, y : as in :func:`min_positive`.

    Returns
    -------
    torch.Tensor, shape ``x.shape[:-1]``: the largest negative feature of each context.
    """
    _check(x, y)
    return torch.where(y > 0.5, torch.zeros_like(x), x).amax(-1)


def midpoint(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Midpoint of ``(max_negative, min_positive)``, the classical estimate of a stump threshold.

    Unbiased for an interior threshold, with mean squared error about ``1/(2 N^2)``.

    Parameters
    ----------
    x, y : as in :func:`min_positive`.

    Returns
    -------
    torch.Tensor, shape ``x.shape[:-1]``: the midpoint of the gap of each context.
    """
    return 0.5 * (max_negative(x, y) + min_positive(x, y))


def bayes_posterior_mean(x: torch.Tensor, y: torch.Tensor,
                         prior: Prior = DEFAULT_PRIOR) -> torch.Tensor:
    """Posterior mean of ``tau`` under the uniform prior ``U[tau_lo, tau_hi]``.

    The likelihood is flat on ``(max_negative, min_positive]`` and zero elsewhere, so the posterior
    is uniform on ``[max(max_negative, tau_lo), min(min_positive, tau_hi)]`` and its mean is that
    interval's midpoint. It minimises the MSE when ``tau`` is drawn from the prior.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., N)``: features and 0/1 labels of each context.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).

    Returns
    -------
    torch.Tensor, shape ``x.shape[:-1]``: the posterior mean of each context.
    """
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    lo = max_negative(x, y).clamp(min=tau_lo)
    hi = min_positive(x, y).clamp(max=tau_hi)
    return 0.5 * (lo + hi)


def erm_stump(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The empirical-risk-minimising stump threshold for the rule ``1{x >= t}``.

    Among thresholds ``t`` in ``[0, 1]`` minimising the number of training errors (labels may be
    noisy), returns the midpoint of the first optimal gap between consecutive sorted features (the
    classical decision-tree choice; ends of the feature range count as 0 and 1). On noise-free data
    this equals :func:`midpoint`.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., N)``: features and 0/1 labels (possibly noisy).

    Returns
    -------
    torch.Tensor, shape ``x.shape[:-1]``: the ERM threshold of each context.
    """
    _check(x, y)
    xs, order = torch.sort(x, dim=-1)
    ys = torch.gather(y, -1, order)
    N = x.shape[-1]
    # errors when the threshold sits just after the first k sorted points (k = 0..N):
    # negatives predicted among the first k are correct; positives there are errors, and vice versa.
    pos_before = torch.cumsum(ys, -1)
    neg_after = (1 - ys).sum(-1, keepdim=True) - torch.cumsum(1 - ys, -1)
    zero = torch.zeros_like(ys[..., :1])
    neg_total = (1 - ys).sum(-1, keepdim=True)
    errors = torch.cat([neg_total, pos_before + neg_after], -1)  # (..., N+1)
    k = torch.argmin(errors, dim=-1, keepdim=True)  # first optimum
    left = torch.cat([zero, xs], -1)
    right = torch.cat([xs, torch.ones_like(zero)], -1)
    return 0.5 * (torch.gather(left, -1, k) + torch.gather(right, -1, k)).squeeze(-1)


#: name -> callable(x, y, prior) for loops in chapters
BASELINES = {
    "min positive": lambda x, y, prior: min_positive(x, y),
    "max negative": lambda x, y, prior: max_negative(x, y),
    "midpoint": lambda x, y, prior: midpoint(x, y),
    "Bayes": lambda x, y, prior: bayes_posterior_mean(x, y, prior),
    "ERM stump": lambda x, y, prior: erm_stump(x, y),
}
