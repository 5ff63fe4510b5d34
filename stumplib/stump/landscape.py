"""The landscape of the population loss: the gradient field, the curvature and the valley.

The population loss ``L(beta, b)`` (:func:`stumplib.stump.population.population_loss_and_grad`)
seen as a landscape: the gradient-flow velocity on a ``(c, log beta)`` grid
(:func:`gradient_field`), the largest curvature that sets the stable step of gradient descent
(:func:`hessian_max_eig`), and the leading-order valley that the flow follows at large ``beta``
with the constant of its growth law (:func:`valley_c`, :func:`scale_constant`).

**Asymptotics** (derived in chapter 2; :func:`valley_c`, :func:`scale_constant`).
For large ``beta`` and ``c = b/beta`` just above ``tau_hi`` the error of the population estimator is
``f_pop - tau ≈ 1/beta - tau exp(-beta (c - tau))``. Averaging its square over the prior (width
``w = tau_hi - tau_lo``) with ``x = exp(-beta (c - tau_hi))``,

    L ≈ 1/beta^2 - 2 tau_hi x / (w beta^2) + tau_hi^2 x^2 / (2 w beta),

minimised over ``x`` at ``x* = 2 / (tau_hi beta)``: the valley floor is
``c*(beta) = tau_hi + log(tau_hi beta / 2) / beta`` and ``L*(beta) = 1/beta^2 - 2/(w beta^3)``. The
valley is steep across (relaxation time ``~ beta^3``) and shallow along (time ``~ beta^4``), so the
flow follows it adiabatically; moving along it changes ``b`` by ``tau_hi`` per unit of ``beta``, and
gradient flow restricted to the curve ``b = b*(beta)`` gives
``dbeta/dt = -L*'(beta) / (1 + (db*/dbeta)^2) ≈ 2 / ((1 + tau_hi^2) beta^3)``, hence

    beta^4 / t -> 8 / (1 + tau_hi^2),    beta * RMSE -> 1.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE, resolve_device
from stumplib.core.validation import check_real
from stumplib.stump.flow import check_pair, check_vector, one_thread
from stumplib.stump.population import population_hessian, population_loss_and_grad
from stumplib.stump.prior import DEFAULT_PRIOR, TAU_HI, Prior


def gradient_field(c_grid: Any, log10_beta_grid: Any, prior: Prior = DEFAULT_PRIOR,
                   *, device: Any = "cpu") -> dict[str, np.ndarray]:
    """The gradient-flow velocity on a ``(c, log10 beta)`` grid, in the coordinates
    ``(c, ln beta)``.

    With ``(beta', b') = -grad L``: ``dc/dt = (b' - c beta') / beta`` and
    ``d ln beta/dt = beta'/beta``. Both components share the time unit, so the direction of the
    field is the direction of the flow in the ``(c, ln beta)`` plane.

    Parameters
    ----------
    c_grid : sequence, shape ``(Nc,)``, strictly increasing finite values.
    log10_beta_grid : sequence, shape ``(Nb,)``, strictly increasing, in ``[-3, 8]``.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    device : str or torch.device
        Where to evaluate the population gradient.

    Returns
    -------
    dict of np.ndarray, each of shape ``(Nb, Nc)`` (rows: beta, columns: c)
        ``c``, ``beta``, ``dc_dt``, ``dlnbeta_dt``, ``speed`` (Euclidean norm of the two), ``loss``.
    """
    cg = check_vector("c_grid", c_grid)
    lg = check_vector("log10_beta_grid", log10_beta_grid)
    for name, g in (("c_grid", cg), ("log10_beta_grid", lg)):
        if g.size < 2 or np.any(np.diff(g) <= 0):
            raise ValueError(f"{name} must hold at least 2 strictly increasing values")
    if lg.min() < -3 or lg.max() > 8:
        raise ValueError(f"log10_beta_grid must lie in [-3, 8]; got [{lg.min()}, {lg.max()}]")
    dev = resolve_device(device)
    C, LB = np.meshgrid(cg, lg)
    beta = torch.as_tensor(10.0 ** LB, dtype=DEFAULT_DTYPE, device=dev)
    c = torch.as_tensor(C, dtype=DEFAULT_DTYPE, device=dev)
    with one_thread(dev):
        L, g_beta, g_b = population_loss_and_grad(beta, c * beta, prior)
    vbeta, vb = -g_beta, -g_b
    dc = ((vb - c * vbeta) / beta).cpu().numpy()
    dl = (vbeta / beta).cpu().numpy()
    return {"c": C, "beta": 10.0 ** LB, "dc_dt": dc, "dlnbeta_dt": dl,
            "speed": np.hypot(dc, dl), "loss": L.cpu().numpy()}


def hessian_max_eig(beta: Any, b: Any, prior: Prior = DEFAULT_PRIOR,
                    rel_step: float = 1e-5) -> np.ndarray:
    """Largest eigenvalue of the population Hessian
    (:func:`stumplib.stump.population.population_hessian`).

    Constant-step GD is linearly stable where ``lr < 2 / lambda_max``.

    Parameters
    ----------
    beta, b : array_like, shape ``(P,)``; ``beta > 0``.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    rel_step : difference step relative to ``beta``, in ``[1e-8, 1e-2]``.

    Returns
    -------
    np.ndarray, shape ``(P,)``
    """
    beta, b = check_pair(beta, b, ("beta", "b"))
    with one_thread():
        H = population_hessian(beta, b, prior, rel_step=rel_step)
    return np.linalg.eigvalsh(H)[:, -1]


# --------------------------------------------------------------------------------------------------
# leading-order asymptotics (derivation in the module docstring)
# --------------------------------------------------------------------------------------------------
def valley_c(beta: Any, tau_hi: float = TAU_HI) -> np.ndarray:
    """Leading-order valley floor ``c*(beta) = tau_hi + log(tau_hi beta / 2) / beta``
    (``beta > 2/tau_hi``).

    Parameters
    ----------
    beta : array_like, values > 2 / tau_hi.
    tau_hi : upper end of the prior, in ``(0, 1]``.

    Returns
    -------
    np.ndarray of the shape of ``beta``.
    """
    tau_hi = check_real("tau_hi", tau_hi, low=0.0, high=1.0, low_open=True)
    try:
        beta = np.asarray(beta, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"beta must be an array of finite numbers > 2/tau_hi; "
                         f"got {beta!r}") from None
    if not (np.all(np.isfinite(beta)) and np.all(beta > 2 / tau_hi)):
        raise ValueError(f"beta must be finite and > 2/tau_hi = {2 / tau_hi:.3g}")
    return tau_hi + np.log(tau_hi * beta / 2) / beta


def scale_constant(tau_hi: float = TAU_HI) -> float:
    """Predicted limit of ``beta^4 / t`` under gradient flow: ``8 / (1 + tau_hi^2)``.

    Parameters
    ----------
    tau_hi : upper end of the prior, in ``(0, 1]``.

    Returns
    -------
    float
    """
    tau_hi = check_real("tau_hi", tau_hi, low=0.0, high=1.0, low_open=True)
    return 8.0 / (1.0 + tau_hi ** 2)
