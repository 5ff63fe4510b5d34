"""Decision-stump tasks: thresholds, labelled contexts, and the reflection.

A task is a threshold ``tau``; a context of a task is ``n`` examples ``x_i ~ U[0, 1]`` with labels
``y_i = 1{x_i >= tau}`` (fixed feature, fixed inequality direction).
"""
from __future__ import annotations

from typing import Any

import torch

from stumplib.core.device import DEFAULT_DTYPE, make_generator, resolve_device
from stumplib.core.validation import check_int, check_tensor_finite
from stumplib.stump.prior import DEFAULT_PRIOR, Prior, as_prior


def sample_thresholds(num_tasks: int, prior: Prior = DEFAULT_PRIOR, *, seed: int = 0,
                      device: Any = "auto", dtype: torch.dtype = DEFAULT_DTYPE,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw thresholds from the uniform prior ``U[tau_lo, tau_hi]``.

    Parameters
    ----------
    num_tasks : number of thresholds (>= 1).
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    seed : seed of the draw (ignored when ``generator`` is given).
    device : ``"auto"``, ``"cpu"``, ``"cuda"``, ... (:func:`stumplib.core.device.resolve_device`).
    dtype : floating dtype of the result.
    generator : an explicit :class:`torch.Generator` to draw from.

    Returns
    -------
    tau : torch.Tensor, shape ``(num_tasks,)``
    """
    num_tasks = check_int("num_tasks", num_tasks)
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    dev = resolve_device(device) if generator is None else generator.device
    gen = generator if generator is not None else make_generator(seed, dev)
    u = torch.rand(num_tasks, generator=gen, device=dev, dtype=dtype)
    return tau_lo + (tau_hi - tau_lo) * u


def labels(x: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """Stump labels ``y = 1{x >= tau}`` (same dtype as ``x``).

    Parameters
    ----------
    x : shape ``(..., n)``
    tau : shape ``(...)`` (one threshold per context), broadcastable to ``x.shape[:-1]``

    Returns
    -------
    torch.Tensor like ``x``: 1 where ``x >= tau``, else 0.
    """
    for name, v in (("x", x), ("tau", tau)):
        if not torch.is_tensor(v):
            raise ValueError(f"{name} must be a torch tensor; got {type(v).__name__}")
        check_tensor_finite(name, v)
    return _labels(x, tau)


def _labels(x: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """:func:`labels` without argument checks."""
    return (x >= tau[..., None]).to(x.dtype)


def sample_contexts(tau: torch.Tensor, n: int, *, seed: int = 0,
                    generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one context of ``n`` examples for each threshold in ``tau``.

    Parameters
    ----------
    tau : torch.Tensor, shape ``(...)``
        Thresholds in ``[0, 1]``; contexts are drawn on ``tau``'s device and dtype.
    n : int
        Examples per context (>= 1).
    seed, generator
        Either a seed or a ready :class:`torch.Generator` on ``tau``'s device.

    Returns
    -------
    x, y : torch.Tensor, shape ``(..., n)``
    """
    n = check_int("n", n)
    if not torch.is_tensor(tau):
        raise ValueError(f"tau must be a torch tensor of thresholds in [0, 1]; got {type(tau).__name__}")
    check_tensor_finite("tau", tau)
    if tau.numel() and (tau.min() < 0 or tau.max() > 1):
        raise ValueError(f"tau must lie in [0, 1]; got values in [{tau.min().item()}, {tau.max().item()}]")
    gen = generator if generator is not None else make_generator(seed, tau.device)
    x = torch.rand(*tau.shape, n, generator=gen, device=tau.device, dtype=tau.dtype)
    return x, _labels(x, tau)


def sample_tasks(m: int, n: int, prior: Prior = DEFAULT_PRIOR, *, seed: int = 0,
                 device: Any = "auto", dtype: torch.dtype = DEFAULT_DTYPE
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A pretraining corpus: ``m`` tasks from the prior, ``n`` labelled examples each.

    Parameters
    ----------
    m : number of tasks (>= 1).
    n : examples per task (>= 1).
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    seed : seed of every draw.
    device, dtype : where and in which floating type the tensors live.

    Returns
    -------
    tau : shape ``(m,)``; x, y : shape ``(m, n)``
    """
    m = check_int("m", m)
    n = check_int("n", n)
    dev = resolve_device(device)
    gen = make_generator(seed, dev)
    tau = sample_thresholds(m, prior, generator=gen, dtype=dtype)
    x, y = sample_contexts(tau, n, generator=gen)
    return tau, x, y


def reflect(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The reflection ``R(x, y) = (1 - x, 1 - y)``.

    A context with threshold ``tau`` maps to one with threshold ``1 - tau`` and the same inequality
    direction (up to the measure-zero tie ``x = tau``).

    Parameters
    ----------
    x, y : torch.Tensor of the same shape: features and labels.

    Returns
    -------
    (1 - x, 1 - y) : the reflected context.
    """
    for name, v in (("x", x), ("y", y)):
        if not torch.is_tensor(v):
            raise ValueError(f"{name} must be a torch tensor of shape (..., n); got {type(v).__name__}")
        check_tensor_finite(name, v)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape (..., n); got {tuple(x.shape)} and {tuple(y.shape)}")
    return 1.0 - x, 1.0 - y
