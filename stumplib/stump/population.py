"""Exact ``N -> infinity`` quantities of the stump model, in log space.

With ``x ~ U[0, 1]`` the attention weights become the density ``w(x) ∝ exp(-beta x + b 1{x >= tau})``
on ``[0, 1]``: a mixture of two truncated exponentials, on the negative side ``[0, tau]`` and on the
positive side ``[tau, 1]``. Each segment's log-mass, mean and variance have closed forms in
``z = beta * length`` (with series near ``z = 0``), so the population estimator

    f_pop(tau) = E_w[x],    df_pop/dbeta = -Var_w(x),    df_pop/db = Cov_w(x, y)

is exact and stable for any real ``beta`` (1e6 included) and ``b``. The population loss averages
``(f_pop(tau) - tau)^2`` over a uniform prior ``tau ~ U[tau_lo, tau_hi]`` with composite
Gauss-Legendre quadrature whose panels are refined geometrically (on the scale ``1/beta``) around
``c = b / beta``, where the integrand has a boundary layer of width ``~1/beta``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE
from stumplib.core.validation import as_real_tensor, check_int
from stumplib.stump.prior import DEFAULT_PRIOR, Prior, as_prior

_SMALL = 0.05  # |z| below which the series are used


def _logg(z: torch.Tensor) -> torch.Tensor:
    """log((1 - e^{-z}) / z), the log-mass of a unit segment with rate z."""
    a = z.abs()
    safe = torch.where(a < _SMALL, torch.ones_like(z), z)
    pos = torch.log(-torch.expm1(-safe.abs())) - torch.log(safe.abs())
    # z > 0: log(1 - e^-z) - log z;  z < 0: -z + log(1 - e^z) - log(-z)
    big = torch.where(z > 0, pos, pos + safe.abs())
    series = -z / 2 + z * z / 24 - z ** 4 / 2880
    return torch.where(a < _SMALL, series, big)


def _mu(z: torch.Tensor) -> torch.Tensor:
    """Mean of the density ∝ e^{-z u} on [0, 1]."""
    a = z.abs()
    safe = torch.where(a < _SMALL, torch.ones_like(a), a)
    mu_pos = 1.0 / safe - 1.0 / torch.expm1(safe)  # mean for rate +|z|
    big = torch.where(z > 0, mu_pos, 1.0 - mu_pos)
    series = 0.5 - z / 12 + z ** 3 / 720 - z ** 5 / 30240
    return torch.where(a < _SMALL, series, big)


def _var(z: torch.Tensor) -> torch.Tensor:
    """Variance of the density ∝ e^{-z u} on [0, 1] (even in z)."""
    a = z.abs()
    safe = torch.where(a < _SMALL, torch.ones_like(a), a)
    e = torch.exp(-safe)
    big = 1.0 / safe ** 2 - e / torch.expm1(-safe) ** 2
    series = 1.0 / 12 - z * z / 240 + z ** 4 / 6048
    return torch.where(a < _SMALL, series, big)


def _broadcast(tau: Any, beta: Any, b: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    ref = next((t for t in (tau, beta, b) if torch.is_tensor(t)), None)
    dtype = ref.dtype if ref is not None and ref.is_floating_point() else DEFAULT_DTYPE
    device = ref.device if ref is not None else torch.device("cpu")
    out = []
    for name, v in (("tau", tau), ("beta", beta), ("b", b)):
        out.append(as_real_tensor(name, v, dtype=dtype, device=device))
    tau_t = out[0]
    if tau_t.numel() and (tau_t.min() < 0 or tau_t.max() > 1):
        raise ValueError(f"tau must lie in [0, 1]; got values in [{tau_t.min().item()}, {tau_t.max().item()}]")
    return tuple(torch.broadcast_tensors(*out))  # type: ignore[return-value]


def population_moments(tau: Any, beta: Any, b: Any) -> dict[str, torch.Tensor]:
    """Exact population moments of the attention distribution for threshold ``tau``.

    Parameters
    ----------
    tau, beta, b : float or torch.Tensor, broadcastable to a common shape ``S``
        ``tau`` in ``[0, 1]``; ``beta``, ``b`` any finite reals.

    Returns
    -------
    dict of torch.Tensor, each of shape ``S``
        ``f`` (the estimate), ``err`` (``f - tau``, computed without cancellation), ``var``
        (``Var_w(x)``, so ``df/dbeta = -var``), ``cov`` (``Cov_w(x, y) = df/db``), ``p_pos`` (attention
        mass on the positive side) and ``log_mass_neg`` / ``log_mass_pos`` (log of the unnormalised
        segment masses).
    """
    tau, beta, b = _broadcast(tau, beta, b)
    L0, L1 = tau, 1.0 - tau
    z0, z1 = beta * L0, beta * L1
    with np.errstate(divide="ignore"):
        log0 = torch.log(L0) + _logg(z0)
        log1 = b - beta * tau + torch.log(L1) + _logg(z1)
    p1 = torch.sigmoid(log1 - log0)
    p0 = torch.sigmoid(log0 - log1)
    # segment means measured from tau: neg side m0 - tau = -L0 mu(-z0), pos side m1 - tau = L1 mu(z1)
    d0 = -L0 * _mu(-z0)
    d1 = L1 * _mu(z1)
    err = p0 * d0 + p1 * d1
    v0 = L0 ** 2 * _var(z0)
    v1 = L1 ** 2 * _var(z1)
    gap = d1 - d0
    var = p0 * v0 + p1 * v1 + p0 * p1 * gap ** 2
    cov = p0 * p1 * gap
    return {"f": tau + err, "err": err, "var": var, "cov": cov, "p_pos": p1,
            "log_mass_neg": log0, "log_mass_pos": log1}


def population_estimate(tau: Any, beta: Any, b: Any) -> torch.Tensor:
    """The population (``N -> infinity``) estimate ``f_pop(tau; beta, b)``; see
    :func:`population_moments`.

    Parameters
    ----------
    tau : thresholds (number, array or tensor).
    beta, b : attention scale and label score, broadcastable with ``tau``.

    Returns
    -------
    torch.Tensor of the broadcast shape (float64): the estimate ``f_pop``.
    """
    return population_moments(tau, beta, b)["f"]


def population_error(tau: Any, beta: Any, b: Any) -> torch.Tensor:
    """``f_pop(tau; beta, b) - tau`` without cancellation; see :func:`population_moments`.

    Parameters
    ----------
    tau, beta, b : as in :func:`population_estimate`.

    Returns
    -------
    torch.Tensor of the broadcast shape (float64): the error ``f_pop - tau``.
    """
    return population_moments(tau, beta, b)["err"]


def prior_quadrature(beta: torch.Tensor, b: torch.Tensor, prior: Prior,
                     order: int = 8, uniform_panels: int = 8
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Quadrature nodes and weights for ``E_{tau ~ U[tau_lo, tau_hi]}``, adapted to ``(beta, b)``.

    Panels: ``uniform_panels`` equal panels plus breakpoints at ``c ± 2^k / |beta|``
    (``k = -3..16``) with ``c = b / beta``, clipped to the prior; ``order`` Gauss-Legendre nodes per
    panel.

    Unchecked: an internal step of :func:`population_loss_and_grad`, which checks its arguments.

    Parameters
    ----------
    beta, b : torch.Tensor, shape ``S`` (same shape)
        The parameters the panels adapt to.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    order : int
        Gauss-Legendre nodes per panel.
    uniform_panels : int
        Equal panels before the breakpoints are added.

    Returns
    -------
    nodes, weights : torch.Tensor, shape ``S + (K,)``
        The weights sum to 1 along the last axis.
    """
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    dtype, device = beta.dtype, beta.device
    abs_beta = beta.abs().clamp_min(1e-300)
    c = torch.where(beta != 0, b / torch.where(beta != 0, beta, torch.ones_like(beta)),
                    torch.full_like(beta, 0.5 * (tau_lo + tau_hi)))
    scales = torch.tensor([2.0 ** k for k in range(-3, 17)], dtype=dtype, device=device)
    d = scales / abs_beta[..., None]
    uni = torch.linspace(tau_lo, tau_hi, uniform_panels + 1, dtype=dtype, device=device)
    br = torch.cat([uni.expand(*beta.shape, -1), c[..., None] - d, c[..., None] + d], dim=-1)
    br = br.clamp(tau_lo, tau_hi).sort(dim=-1).values  # (S, P+1)
    x, w = np.polynomial.legendre.leggauss(order)
    x = torch.as_tensor(x, dtype=dtype, device=device)
    w = torch.as_tensor(w, dtype=dtype, device=device)
    left, right = br[..., :-1], br[..., 1:]
    half = 0.5 * (right - left)
    mid = 0.5 * (right + left)
    nodes = (mid[..., None] + half[..., None] * x).flatten(-2)
    weights = (half[..., None] * w).flatten(-2) / (tau_hi - tau_lo)
    return nodes, weights


def _params(beta: Any, b: Any) -> tuple[torch.Tensor, torch.Tensor]:
    beta_t = as_real_tensor("beta", beta, dtype=beta.dtype if torch.is_tensor(beta) and beta.is_floating_point() else DEFAULT_DTYPE)
    if torch.is_tensor(beta):
        beta_t = beta_t.to(beta.device)
    b_t = as_real_tensor("b", b, dtype=beta_t.dtype, device=beta_t.device)
    return torch.broadcast_tensors(beta_t, b_t)  # type: ignore[return-value]


def population_loss_and_grad(beta: Any, b: Any, prior: Prior = DEFAULT_PRIOR,
                             order: int = 8) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Population loss ``L = E_tau (f_pop(tau) - tau)^2`` and its exact gradient.

    Parameters
    ----------
    beta, b : float or torch.Tensor, broadcastable to shape ``S``
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    order : Gauss-Legendre nodes per panel, in ``[1, 64]``.

    Returns
    -------
    L, dL_dbeta, dL_db : torch.Tensor, shape ``S``
    """
    order = check_int("order", order, minimum=1, maximum=64)
    beta_t, b_t = _params(beta, b)
    nodes, weights = prior_quadrature(beta_t, b_t, prior, order=order)
    mom = population_moments(nodes, beta_t[..., None], b_t[..., None])
    e = mom["err"]
    L = (weights * e * e).sum(-1)
    dL_dbeta = (weights * 2 * e * (-mom["var"])).sum(-1)
    dL_db = (weights * 2 * e * mom["cov"]).sum(-1)
    return L, dL_dbeta, dL_db


def population_loss(beta: Any, b: Any, prior: Prior = DEFAULT_PRIOR,
                    order: int = 8) -> torch.Tensor:
    """Population loss only; see :func:`population_loss_and_grad`.

    Parameters
    ----------
    beta, b : attention scale and label score (numbers or tensors of one shape).
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    order : Gauss-Legendre order per quadrature panel.

    Returns
    -------
    torch.Tensor of the shape of ``beta``: ``E_tau (f_pop - tau)^2``.
    """
    return population_loss_and_grad(beta, b, prior, order)[0]


def population_hessian(beta: Any, b: Any, prior: Prior = DEFAULT_PRIOR, *,
                       rel_step: float = 1e-5) -> np.ndarray:
    """Hessian of the population loss in ``(beta, b)``, by central differences of the exact gradient.

    The step is ``rel_step * |beta|`` in both directions; all ``4K`` gradients are one batched
    evaluation. Constant-step GD is linearly stable where ``lr < 2 / lambda_max(H)``.

    Parameters
    ----------
    beta, b : array_like, shape ``(K,)`` (same length), ``beta != 0``
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    rel_step : difference step relative to ``|beta|``.

    Returns
    -------
    np.ndarray, shape ``(K, 2, 2)``, symmetrised.
    """
    be = np.atleast_1d(np.asarray(beta, dtype=np.float64)).ravel()
    bb = np.atleast_1d(np.asarray(b, dtype=np.float64)).ravel()
    K = be.size
    h = rel_step * np.abs(be)
    # rows: beta + h, beta - h, b + h, b - h
    gb_ = np.concatenate([be + h, be - h, be, be])
    gB_ = np.concatenate([bb, bb, bb + h, bb - h])
    _, g_beta, g_b = population_loss_and_grad(torch.from_numpy(gb_), torch.from_numpy(gB_), prior)
    g = np.stack([g_beta.numpy(), g_b.numpy()], 1).reshape(4, K, 2)
    H = np.empty((K, 2, 2))
    H[:, :, 0] = (g[0] - g[1]) / (2 * h[:, None])
    H[:, :, 1] = (g[2] - g[3]) / (2 * h[:, None])
    return 0.5 * (H + H.transpose(0, 2, 1))
