"""Population training dynamics of the stump model: gradient flow, gradient descent, phases, rates.

The population loss ``L(beta, b) = E_{tau ~ U[tau_lo, tau_hi]} (f_pop(tau; beta, b) - tau)^2`` and its
exact gradient come from :func:`stumplib.stump.population.population_loss_and_grad`. This module follows

* the **gradient flow** ``d(beta, b)/dt = -grad L``, integrated in log time
  ``s = log(1 + t)`` (so that ``t = 0`` is the exact start and ``s ~ log t`` for ``t >> 1``) with a
  stiff adaptive solver (:func:`scipy.integrate.solve_ivp`, BDF by default), many initial conditions
  in one vectorised system: :func:`integrate_flow`;
* **constant-step gradient descent** on the same loss, many runs (initial conditions and step
  sizes) at once: :func:`population_gd`;

and measures what the chapter reports: the end of the calibration phase
(:func:`calibration_time`), power-law exponents over a late window with an interval from the spread
over fit windows (:func:`fit_exponent`), the extrapolated asymptotic exponent
(:func:`extrapolate_exponent`) and the gradient field on a ``(c, log beta)`` grid
(:func:`gradient_field`).

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

import contextlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE, resolve_device
from stumplib.stump.population import population_hessian, population_loss_and_grad
from stumplib.core.stats import Estimate, PowerLawFit, fit_power_law, interp_crossing, ols, window_interval, window_refits
from stumplib.core.errors import TrainingDiverged
from stumplib.core.validation import check_bool, check_choice, check_int, check_prior, check_real

__all__ = [
    "FlowDiverged",
    "FlowResult",
    "GDResult",
    "flow_velocity",
    "log_time_rhs",
    "integrate_flow",
    "population_gd",
    "calibration_time",
    "fit_exponent",
    "extrapolate_exponent",
    "asymptotic_exponents",
    "interpolate_flow",
    "hessian_max_eig",
    "gradient_field",
    "valley_c",
    "scale_constant",
    "growth_share_at_calibration",
    "TrainingDiverged",
]

#: parameters beyond this magnitude count as diverged
MAX_PARAM = 1e12
_METHODS = ("BDF", "Radau", "LSODA")


@contextlib.contextmanager
def _one_thread(device: torch.device | None = None):
    """Run small batched CPU evaluations on one intra-op thread, restoring the setting afterwards.

    The right-hand sides here are a few thousand quadrature nodes: extra OpenMP threads only add
    synchronisation, and on a loaded machine they made each evaluation about 10x slower.
    """
    if device is not None and device.type != "cpu":
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


class FlowDiverged(RuntimeError):
    """Raised when the gradient-flow solver fails or produces non-finite values."""


# --------------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------------
def _vector(name: str, value: Any, *, positive: bool = False) -> np.ndarray:
    """A non-empty 1-D float64 array of finite reals (scalars become length 1)."""
    if isinstance(value, (str, bytes, bool)) or value is None:
        raise ValueError(f"{name} must be a finite real number or a non-empty 1-D sequence of them; "
                         f"got {value!r}")
    if torch.is_tensor(value):
        value = value.detach().cpu().numpy()
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite real number or a non-empty 1-D sequence of them; "
                         f"got {value!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf); got {arr.tolist()}")
    if positive and not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0 (in (0, inf)); got {arr.tolist()}")
    if np.any(np.abs(arr) > MAX_PARAM):
        raise ValueError(f"{name} must satisfy |value| <= {MAX_PARAM:g}; got {arr.tolist()}")
    return arr


def _pair(beta0: Any, b0: Any, names: tuple[str, str] = ("beta0", "b0")) -> tuple[np.ndarray, np.ndarray]:
    beta0 = _vector(names[0], beta0, positive=True)
    b0 = _vector(names[1], b0)
    if beta0.size != b0.size:
        if beta0.size == 1:
            beta0 = np.full(b0.size, beta0[0])
        elif b0.size == 1:
            b0 = np.full(beta0.size, b0[0])
        else:
            raise ValueError(f"{names[0]} and {names[1]} must have the same length (or one of them length 1); "
                             f"got {beta0.size} and {b0.size}")
    return beta0, b0


# --------------------------------------------------------------------------------------------------
# gradient flow
# --------------------------------------------------------------------------------------------------
def flow_velocity(beta: Any, b: Any, tau_lo: float = 0.2, tau_hi: float = 0.8
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-hand side of the gradient flow in real time: ``(dbeta/dt, db/dt) = -grad L``.

    Parameters
    ----------
    beta, b : float or torch.Tensor, broadcastable to shape ``S``
    tau_lo, tau_hi : the uniform threshold prior.

    Returns
    -------
    dbeta_dt, db_dt : torch.Tensor, shape ``S``
    """
    tau_lo, tau_hi = check_prior(tau_lo, tau_hi)
    _, g_beta, g_b = population_loss_and_grad(beta, b, tau_lo, tau_hi)
    return -g_beta, -g_b


def log_time_rhs(s: float, y: np.ndarray, tau_lo: float = 0.2, tau_hi: float = 0.8) -> np.ndarray:
    """Right-hand side of the flow in log time ``s = log(1 + t)``: ``dy/ds = (1 + t) dy/dt = -e^s grad L``.

    Unchecked (it is the solver's inner loop; :func:`integrate_flow` checks its arguments).

    Parameters
    ----------
    s : float
        Log time.
    y : np.ndarray, shape ``(2R,)`` or ``(2R, k)``
        ``y[:R]`` the scales ``beta``, ``y[R:]`` the label scores ``b`` of ``R`` runs (``k`` columns
        when the solver evaluates several states at once).
    tau_lo, tau_hi : float
        The threshold prior's ends.

    Returns
    -------
    np.ndarray, the shape of ``y``
    """
    R = y.shape[0] // 2
    yt = torch.from_numpy(np.ascontiguousarray(y, dtype=np.float64))
    _, g_beta, g_b = population_loss_and_grad(yt[:R], yt[R:], tau_lo, tau_hi)
    out = np.concatenate([g_beta.numpy(), g_b.numpy()], axis=0)
    out *= -math.exp(s)
    if not np.all(np.isfinite(out)):
        raise FlowDiverged(f"non-finite gradient at s = {s:.3f} (t = {math.expm1(s):.3g})")
    return out


class _Trajectory:
    """What flow and GD records share: the relative label score and the RMSE of each record."""

    b: np.ndarray
    beta: np.ndarray
    loss: np.ndarray

    @property
    def c(self) -> np.ndarray:
        """Relative label score ``b / beta``, shape ``(R, K)``."""
        return self.b / self.beta

    @property
    def rmse(self) -> np.ndarray:
        """Population threshold RMSE ``sqrt(L)``, shape ``(R, K)``."""
        return np.sqrt(self.loss)


@dataclass(frozen=True)
class FlowResult(_Trajectory):
    """Gradient-flow trajectories of ``R`` runs recorded at ``K`` common times.

    Attributes
    ----------
    t : np.ndarray, shape ``(K,)``; ``t[0] = 0``, then log-spaced up to ``t_max``.
    beta, b : np.ndarray, shape ``(R, K)``
    loss : np.ndarray, shape ``(R, K)``, the population loss ``L``.
    dbeta_dt, db_dt : np.ndarray, shape ``(R, K)``, the velocity ``-grad L`` at each record.
    beta0, b0 : np.ndarray, shape ``(R,)``
    tau_lo, tau_hi : the prior.
    nfev : right-hand-side evaluations used by the solver.
    """

    t: np.ndarray
    beta: np.ndarray
    b: np.ndarray
    loss: np.ndarray
    dbeta_dt: np.ndarray
    db_dt: np.ndarray
    beta0: np.ndarray
    b0: np.ndarray
    tau_lo: float
    tau_hi: float
    nfev: int = 0

    @property
    def dlogbeta_dlogt(self) -> np.ndarray:
        """Local exponent ``d log beta / d log t = t beta'/beta``, shape ``(R, K)``."""
        return self.t * self.dbeta_dt / self.beta

    @property
    def dlogrmse_dlogt(self) -> np.ndarray:
        """Local exponent of the RMSE, ``d log sqrt(L) / d log t = -t |grad L|^2 / (2 L)`` (the
        flow's velocity is ``-grad L``), shape ``(R, K)``."""
        return -0.5 * self.t * (self.dbeta_dt ** 2 + self.db_dt ** 2) / self.loss

    @property
    def dc_dlogt(self) -> np.ndarray:
        """``dc / d log t = t (b' - c beta') / beta``, shape ``(R, K)``."""
        return self.t * (self.db_dt - self.c * self.dbeta_dt) / self.beta



def _record_times(t_max: float, n_records: int, t_first: float) -> np.ndarray:
    return np.concatenate([[0.0], np.geomspace(t_first, t_max, n_records - 1)])


def integrate_flow(beta0: Any, b0: Any, t_max: float, *, tau_lo: float = 0.2, tau_hi: float = 0.8,
                   n_records: int = 241, t_first: float = 1e-2, rtol: float = 1e-7,
                   atol: float = 1e-9, method: str = "BDF") -> FlowResult:
    """Integrate the population gradient flow from ``R`` initial conditions up to ``t_max``.

    The ``2R``-dimensional system ``(beta_1..beta_R, b_1..b_R)`` is solved in log time
    ``s = log(1 + t)`` by one call of :func:`scipy.integrate.solve_ivp` (stiff method, vectorised
    right-hand side, block-diagonal Jacobian sparsity so that a finite-difference Jacobian costs two
    batched evaluations). Runs never interact; batching only shares the step-size sequence.

    Parameters
    ----------
    beta0 : float or sequence, shape ``(R,)``; initial scales, > 0.
    b0 : float or sequence, shape ``(R,)``; initial label scores (either may have length 1).
    t_max : final time, in ``(t_first, 1e20]``.
    tau_lo, tau_hi : the uniform threshold prior.
    n_records : recorded times (>= 3): ``t = 0`` and ``n_records - 1`` log-spaced times in
        ``[t_first, t_max]``.
    t_first : first positive recorded time, in ``(0, t_max)``.
    rtol, atol : solver tolerances (``rtol`` in ``[1e-12, 1e-3]``, ``atol`` in ``[1e-14, 1e-3]``).
    method : ``"BDF"``, ``"Radau"`` or ``"LSODA"``.

    Returns
    -------
    FlowResult

    Raises
    ------
    FlowDiverged
        If the solver fails, or a recorded value is non-finite or beyond ``|.| <= 1e12``.
    """
    from scipy.integrate import solve_ivp

    beta0, b0 = _pair(beta0, b0)
    t_max = check_real("t_max", t_max, low=0.0, high=1e20, low_open=True)
    tau_lo, tau_hi = check_prior(tau_lo, tau_hi)
    n_records = check_int("n_records", n_records, minimum=3, maximum=100_000)
    t_first = check_real("t_first", t_first, low=0.0, high=t_max, low_open=True, high_open=True)
    rtol = check_real("rtol", rtol, low=1e-12, high=1e-3)
    atol = check_real("atol", atol, low=1e-14, high=1e-3)
    method = check_choice("method", method, _METHODS)

    R = beta0.size
    y0 = np.concatenate([beta0, b0])
    t_rec = _record_times(t_max, n_records, t_first)
    s_rec = np.log1p(t_rec)
    kw: dict[str, Any] = {}
    if method != "LSODA":
        kw["vectorized"] = True
        kw["jac_sparsity"] = np.kron(np.ones((2, 2)), np.eye(R))
    with _one_thread():
        sol = solve_ivp(log_time_rhs, (0.0, float(s_rec[-1])), y0, method=method, t_eval=s_rec,
                        rtol=rtol, atol=atol, args=(tau_lo, tau_hi), **kw)
    if sol.status != 0 or sol.y.shape[1] != t_rec.size:
        raise FlowDiverged(f"gradient flow solver ({method}) stopped at t = {np.expm1(sol.t[-1]):.3g} "
                           f"of t_max = {t_max:.3g}: {sol.message}")
    y = sol.y
    if not np.all(np.isfinite(y)) or np.any(np.abs(y) > MAX_PARAM):
        raise FlowDiverged("gradient flow produced non-finite or exploding parameters "
                           f"(|.| > {MAX_PARAM:g})")
    beta, b = y[:R], y[R:]
    with _one_thread():
        L, g_beta, g_b = population_loss_and_grad(torch.from_numpy(beta.copy()),
                                                  torch.from_numpy(b.copy()), tau_lo, tau_hi)
    return FlowResult(t=t_rec, beta=beta, b=b, loss=L.numpy(), dbeta_dt=-g_beta.numpy(),
                      db_dt=-g_b.numpy(), beta0=beta0, b0=b0, tau_lo=tau_lo, tau_hi=tau_hi,
                      nfev=int(sol.nfev))


# --------------------------------------------------------------------------------------------------
# gradient descent
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GDResult(_Trajectory):
    """Constant-step GD on the population loss, ``R`` runs recorded at ``K`` common step counts.

    Attributes
    ----------
    steps : np.ndarray, shape ``(K,)``, recorded step counts (0 included).
    lr : np.ndarray, shape ``(R,)``, step sizes.
    beta, b, loss : np.ndarray, shape ``(R, K)``
    beta0, b0 : np.ndarray, shape ``(R,)``
    """

    steps: np.ndarray
    lr: np.ndarray
    beta: np.ndarray
    b: np.ndarray
    loss: np.ndarray
    beta0: np.ndarray
    b0: np.ndarray
    tau_lo: float
    tau_hi: float

    @property
    def t(self) -> np.ndarray:
        """Gradient-flow time of each record, ``steps * lr``, shape ``(R, K)``."""
        return self.lr[:, None] * self.steps[None, :]



def _gd_runs(beta0: Any, b0: Any, lr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``beta0, b0, lr`` of :func:`population_gd` checked and broadcast to the number of runs."""
    beta0_a, b0_a = _pair(beta0, b0)
    lr_a = _vector("lr", lr, positive=True)
    R = max(beta0_a.size, lr_a.size)
    for name, arr in (("beta0", beta0_a), ("b0", b0_a), ("lr", lr_a)):
        if arr.size not in (1, R):
            raise ValueError(f"{name} must have length 1 or {R} (the number of runs); got {arr.size}")
    return tuple(np.broadcast_to(a, (R,)).copy() for a in (beta0_a, b0_a, lr_a))


def _raise_if_diverged(k: int, L: torch.Tensor, L0: torch.Tensor, beta: torch.Tensor,
                       b: torch.Tensor, max_loss_ratio: float,
                       runs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Raise :class:`TrainingDiverged` naming the first run (``runs = (lr, beta0, b0)``) whose loss
    or parameters at step ``k`` are non-finite, too large, or whose loss passed ``max_loss_ratio``
    times its initial loss ``L0``."""
    bad = ~torch.isfinite(L) | (L > max_loss_ratio * L0) | ~torch.isfinite(beta) | \
        ~torch.isfinite(b) | (beta.abs() > MAX_PARAM) | (b.abs() > MAX_PARAM)
    if bool(bad.any()):
        r = int(torch.nonzero(bad)[0])
        lr_a, beta0_a, b0_a = runs
        raise TrainingDiverged(f"population GD run {r} (lr = {lr_a[r]:g}, beta0 = {beta0_a[r]:g}, "
                               f"b0 = {b0_a[r]:g}) diverged at step {k}: loss {float(L[r]):.3g} "
                               f"vs initial {float(L0[r]):.3g}; use a smaller step size")


def population_gd(beta0: Any, b0: Any, lr: Any, steps: int, *, tau_lo: float = 0.2,
                  tau_hi: float = 0.8, n_records: int = 60, device: Any = "cpu",
                  dtype: torch.dtype = DEFAULT_DTYPE, progress: bool = False,
                  max_loss_ratio: float = 2.0) -> GDResult:
    """Constant-step gradient descent ``theta <- theta - lr grad L`` on the exact population loss.

    All ``R`` runs (their own initial condition and step size) advance together in one batched
    evaluation of :func:`~stumplib.stump.population.population_loss_and_grad` per step.

    Parameters
    ----------
    beta0, b0, lr : float or sequence, shape ``(R,)`` (length-1 entries are broadcast);
        ``beta0 > 0``, ``lr > 0``.
    steps : number of steps (>= 1).
    tau_lo, tau_hi : the threshold prior's ends.
    n_records : log-spaced recorded step counts (>= 2), step 0 included.
    device, dtype : where and in which precision to compute (``float32`` or ``float64``).
    progress : show a tqdm bar.
    max_loss_ratio : a run whose loss exceeds this multiple (>= 1) of its initial loss counts as
        diverged.

    Returns
    -------
    GDResult

    Raises
    ------
    TrainingDiverged
        Naming the run (and its step size) whose loss or parameters became non-finite, exceeded
        ``|.| <= 1e12``, or whose loss exceeded ``max_loss_ratio`` times its initial loss.
    """
    from tqdm.auto import tqdm

    from stumplib.stump.trainer import record_steps

    beta0_a, b0_a, lr_a = _gd_runs(beta0, b0, lr)
    R = beta0_a.size
    steps = check_int("steps", steps, minimum=1)
    tau_lo, tau_hi = check_prior(tau_lo, tau_hi)
    n_records = check_int("n_records", n_records, minimum=2)
    check_bool("progress", progress)
    max_loss_ratio = check_real("max_loss_ratio", max_loss_ratio, low=1.0)
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64; got {dtype!r}")
    dev = resolve_device(device)

    rec = record_steps(steps, n_records)
    K = rec.size
    beta = torch.as_tensor(beta0_a, dtype=dtype, device=dev)
    b = torch.as_tensor(b0_a, dtype=dtype, device=dev)
    eta = torch.as_tensor(lr_a, dtype=dtype, device=dev)
    out_beta = np.empty((R, K))
    out_b = np.empty((R, K))
    out_L = np.empty((R, K))
    L0 = None
    k_rec = 0
    with _one_thread(dev):
        for k in tqdm(range(steps + 1), disable=not progress, desc="population GD", mininterval=1.0):
            L, g_beta, g_b = population_loss_and_grad(beta, b, tau_lo, tau_hi)
            if L0 is None:
                L0 = L.clone()
            _raise_if_diverged(k, L, L0, beta, b, max_loss_ratio, (lr_a, beta0_a, b0_a))
            if k == rec[k_rec]:
                out_beta[:, k_rec] = beta.cpu().numpy()
                out_b[:, k_rec] = b.cpu().numpy()
                out_L[:, k_rec] = L.cpu().numpy()
                k_rec += 1
            if k == steps:
                break
            beta = beta - eta * g_beta
            b = b - eta * g_b
    return GDResult(steps=rec, lr=lr_a, beta=out_beta, b=out_b, loss=out_L, beta0=beta0_a, b0=b0_a,
                    tau_lo=tau_lo, tau_hi=tau_hi)


# --------------------------------------------------------------------------------------------------
# phases and rates
# --------------------------------------------------------------------------------------------------
def calibration_time(result: FlowResult) -> np.ndarray:
    """End of the calibration phase of each run.

    Definition: the first time ``t`` at which both

    1. ``c(t) >= tau_hi`` (every threshold of the prior lies below the relative label score), and
    2. ``d log beta >= |dc|`` along the trajectory (the path in the ``(c, log beta)`` plane has turned
       from mostly horizontal, label score moving, to mostly vertical, scale growing; the comparison
       does not depend on how time is parametrised).

    The crossing is located by linear interpolation in ``log t`` of
    ``h = min(c - tau_hi, d log beta/d log t - |dc/d log t|)`` between the bracketing records; a run
    for which both hold at ``t = 0`` gets ``0``, a run for which they never hold gets ``nan``.

    Parameters
    ----------
    result : FlowResult

    Returns
    -------
    np.ndarray, shape ``(R,)``
    """
    t = result.t
    # velocities per unit log time at t > 0; at t = 0 use the real-time velocities (same sign)
    scale = np.where(t > 0, t, 1.0)
    vlog = scale * result.dbeta_dt / result.beta
    vc = scale * (result.db_dt - result.c * result.dbeta_dt) / result.beta
    h = np.minimum(result.c - result.tau_hi, vlog - np.abs(vc))
    out = np.full(h.shape[0], np.nan)
    for r in range(h.shape[0]):
        ok = np.nonzero(h[r] >= 0)[0]
        if ok.size == 0:
            continue
        k = int(ok[0])
        # t[0] = 0 has no logarithm: a crossing in the first interval is put at t[1]
        out[r] = 0.0 if k == 0 else t[1] if k == 1 else interp_crossing(
            t[k - 1], t[k], h[r, k - 1], h[r, k], 0.0, log_x=True)
    return out


def _window_mask(t: np.ndarray, t_lo: float, t_hi: float) -> np.ndarray:
    return (t >= t_lo * (1 - 1e-12)) & (t <= t_hi * (1 + 1e-12))


def fit_exponent(t: Any, y: Any, t_lo: float, t_hi: float, *, n_windows: int = 400,
                 min_fraction: float = 0.5, level: float = 0.95, seed: int = 0) -> PowerLawFit:
    """Power-law exponent of ``y(t)`` over ``[t_lo, t_hi]``, with an interval over fit windows.

    The point estimate is the log-log least-squares slope over all records in ``[t_lo, t_hi]``
    (:func:`stumplib.core.stats.fit_power_law`). A deterministic trajectory has no sampling noise; what
    is uncertain is the exponent's dependence on *where* one fits, since finite-time corrections
    make the local exponent drift. The interval is therefore the central ``level`` range of the
    slopes fitted on ``n_windows`` random sub-windows ``[10^u, 10^v]`` inside ``[t_lo, t_hi]`` whose
    length is at least ``min_fraction`` of the full window (in decades). ``method = "windows"``.

    Parameters
    ----------
    t, y : array_like, shape ``(K,)``, positive (``t = 0`` records are ignored).
    t_lo, t_hi : the fit window, ``0 < t_lo < t_hi``, holding at least 5 records.
    n_windows : random sub-windows (>= 20).
    min_fraction : minimal sub-window length as a fraction of the full window, in ``(0, 1]``.
    level : interval level in ``(0, 1)``.
    seed : seed of the sub-window draw.

    Returns
    -------
    PowerLawFit
    """
    t = np.asarray(t, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if t.shape != y.shape or t.size == 0:
        raise ValueError(f"t and y must be non-empty and of the same length; got {t.size} and {y.size}")
    t_lo = check_real("t_lo", t_lo, low=0.0, low_open=True)
    t_hi = check_real("t_hi", t_hi, low=t_lo, low_open=True)
    n_windows = check_int("n_windows", n_windows, minimum=20)
    min_fraction = check_real("min_fraction", min_fraction, low=0.0, high=1.0, low_open=True)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    check_int("seed", seed, minimum=0)
    sel = _window_mask(t, t_lo, t_hi) & (t > 0)
    if sel.sum() < 5:
        raise ValueError(f"the window [t_lo, t_hi] = [{t_lo:.3g}, {t_hi:.3g}] must hold at least 5 "
                         f"records; it holds {int(sel.sum())}")
    tt, yy = t[sel], y[sel]
    if not (np.all(np.isfinite(yy)) and np.all(yy > 0)):
        raise ValueError("y must be finite and positive inside the fit window")
    base = fit_power_law(tt, yy, n_boot=100, seed=seed)
    lt, ly = np.log10(tt), np.log10(yy)
    slopes = window_refits(lt, lambda m: ols(lt[m], ly[m])[0], n_windows,
                           min_fraction=min_fraction, min_points=3, seed=seed)
    return PowerLawFit(slope=base.slope, prefactor=base.prefactor,
                       ci=window_interval(base.slope, slopes, level), stderr=base.stderr,
                       n_points=base.n_points, method="windows", level=level)


def extrapolate_exponent(beta: Any, local: Any, *, beta_min: float, n_windows: int = 200,
                         level: float = 0.95, seed: int = 0) -> Estimate:
    """Asymptotic exponent: the limit of the local exponent as ``beta -> inf``.

    The local exponent ``p = d log beta / d log t`` approaches its limit with corrections of order
    ``1/beta`` up to logarithms. Over the records with ``beta >= beta_min`` we regress ``p`` on
    ``(1, 1/beta, log(beta)/beta)``; the intercept is the point estimate ``p_inf``. The interval is
    the central ``level`` range of the intercepts of both that model and the simpler
    ``(1, 1/beta)`` model, refitted on random sub-ranges of ``log beta`` (each at least half the
    span): it measures how much the extrapolation depends on the correction model and the range.

    Parameters
    ----------
    beta, local : array_like, shape ``(K,)``
    beta_min : smallest ``beta`` used (> 0); at least 6 records must satisfy it.
    n_windows : random sub-ranges (>= 20).
    level : interval level in ``(0, 1)``.
    seed : seed of the sub-range draw.

    Returns
    -------
    Estimate
        ``p_inf`` with its interval (kind ``"windows"``); ``n`` the records used, ``n_dropped``
        those left out because ``beta`` or the local exponent is not finite (records below
        ``beta_min`` are outside the window, not dropped).
    """
    beta = np.asarray(beta, dtype=float).ravel()
    local = np.asarray(local, dtype=float).ravel()
    if beta.shape != local.shape:
        raise ValueError(f"beta and local must have the same length; got {beta.size} and {local.size}")
    beta_min = check_real("beta_min", beta_min, low=0.0, low_open=True)
    n_windows = check_int("n_windows", n_windows, minimum=20)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    check_int("seed", seed, minimum=0)
    sel = np.isfinite(beta) & np.isfinite(local) & (beta >= beta_min)
    if sel.sum() < 6:
        raise ValueError(f"at least 6 records need beta >= beta_min = {beta_min:g}; got {int(sel.sum())}")
    bb, p = beta[sel], local[sel]

    def icpt(m: np.ndarray, with_log: bool) -> float:
        cols = [np.ones(m.sum()), 1 / bb[m]] + ([np.log(bb[m]) / bb[m]] if with_log else [])
        return float(np.linalg.lstsq(np.stack(cols, 1), p[m], rcond=None)[0][0])

    p_inf = icpt(np.ones(bb.size, bool), True)
    lb = np.log(bb)
    icpts = window_refits(lb, lambda m: (icpt(m, True), icpt(m, False)), n_windows,
                          min_fraction=0.5, min_points=4, seed=seed)
    lo, hi = window_interval(p_inf, icpts, level)
    n_bad = int((~(np.isfinite(beta) & np.isfinite(local)) & ~(beta < beta_min)).sum())
    why = f"{n_bad} records with a non-finite beta or local exponent" if n_bad else ""
    return Estimate(p_inf, lo, hi, "windows", level, None, int(bb.size), n_bad, why)


def asymptotic_exponents(result: "FlowResult", run: int = 0, *, t_from: float,
                         n_windows: int = 100, seed: int = 0) -> tuple[Estimate, Estimate]:
    """The exponents of ``beta(t)`` and of the RMSE of one flow run, extrapolated to
    ``beta -> inf``: the claim's asymptotic exponents (a finite-window fit is biased by the
    approach from above).

    Both local exponents are exact (from the flow's velocity: :attr:`FlowResult.dlogbeta_dlogt`,
    :attr:`FlowResult.dlogrmse_dlogt`) and are extrapolated over the records with
    ``t >= t_from`` by :func:`extrapolate_exponent`.

    Parameters
    ----------
    result : the flow.
    run : index of the run, in ``[0, R)``.
    t_from : first time of the extrapolation range (> 0; at least 6 records must follow it).
    n_windows : random sub-ranges of the interval (>= 20).
    seed : seed of the sub-range draw.

    Returns
    -------
    (p, q) : :class:`~stumplib.core.stats.Estimate` of the exponents of ``beta`` and of the RMSE.
    """
    if not isinstance(result, FlowResult):
        raise ValueError(f"result must be a FlowResult; got {type(result).__name__}")
    run = check_int("run", run, minimum=0, maximum=result.beta.shape[0] - 1)
    t_from = check_real("t_from", t_from, low=0.0, low_open=True)
    late = result.t >= t_from
    beta = result.beta[run][late]
    kw = dict(beta_min=float(beta.min()) if beta.size else 1.0, n_windows=n_windows, seed=seed)
    return (extrapolate_exponent(beta, result.dlogbeta_dlogt[run][late], **kw),
            extrapolate_exponent(beta, result.dlogrmse_dlogt[run][late], **kw))


def interpolate_flow(result: FlowResult, t: Any, run: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(beta, b)`` of one flow run at times ``t`` (linear interpolation in ``log(1 + t)``).

    Parameters
    ----------
    result : FlowResult
    t : array_like, times in ``[0, result.t[-1]]``.
    run : index of the run, in ``[0, R)``.

    Returns
    -------
    beta, b : np.ndarray, the shape of ``t``
    """
    if not isinstance(result, FlowResult):
        raise ValueError(f"result must be a FlowResult; got {type(result).__name__}")
    run = check_int("run", run, minimum=0, maximum=result.beta.shape[0] - 1)
    t = np.asarray(t, dtype=float)
    if not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(t > result.t[-1] * (1 + 1e-12)):
        raise ValueError(f"t must lie in [0, {result.t[-1]:.3g}] (the integrated range)")
    s, sg = np.log1p(result.t), np.log1p(t)
    return np.interp(sg, s, result.beta[run]), np.interp(sg, s, result.b[run])


def hessian_max_eig(beta: Any, b: Any, tau_lo: float = 0.2, tau_hi: float = 0.8,
                    rel_step: float = 1e-5) -> np.ndarray:
    """Largest eigenvalue of the population Hessian (:func:`stumplib.stump.population.population_hessian`).

    Constant-step GD is linearly stable where ``lr < 2 / lambda_max``.

    Parameters
    ----------
    beta, b : array_like, shape ``(P,)``; ``beta > 0``.
    tau_lo, tau_hi : float
        The threshold prior's ends.
    rel_step : difference step relative to ``beta``, in ``[1e-8, 1e-2]``.

    Returns
    -------
    np.ndarray, shape ``(P,)``
    """
    beta, b = _pair(beta, b, ("beta", "b"))
    with _one_thread():
        H = population_hessian(beta, b, tau_lo, tau_hi, rel_step=rel_step)
    return np.linalg.eigvalsh(H)[:, -1]


def gradient_field(c_grid: Any, log10_beta_grid: Any, tau_lo: float = 0.2, tau_hi: float = 0.8,
                   *, device: Any = "cpu") -> dict[str, np.ndarray]:
    """The gradient-flow velocity on a ``(c, log10 beta)`` grid, in the coordinates ``(c, ln beta)``.

    With ``(beta', b') = -grad L``: ``dc/dt = (b' - c beta') / beta`` and ``d ln beta/dt = beta'/beta``.
    Both components share the time unit, so the direction of the field is the direction of the flow
    in the ``(c, ln beta)`` plane.

    Parameters
    ----------
    c_grid : sequence, shape ``(Nc,)``, strictly increasing finite values.
    log10_beta_grid : sequence, shape ``(Nb,)``, strictly increasing, in ``[-3, 8]``.
    tau_lo, tau_hi : float
        The threshold prior's ends.
    device : str or torch.device
        Where to evaluate the population gradient.

    Returns
    -------
    dict of np.ndarray, each of shape ``(Nb, Nc)`` (rows: beta, columns: c)
        ``c``, ``beta``, ``dc_dt``, ``dlnbeta_dt``, ``speed`` (Euclidean norm of the two), ``loss``.
    """
    tau_lo, tau_hi = check_prior(tau_lo, tau_hi)
    cg = _vector("c_grid", c_grid)
    lg = _vector("log10_beta_grid", log10_beta_grid)
    for name, g in (("c_grid", cg), ("log10_beta_grid", lg)):
        if g.size < 2 or np.any(np.diff(g) <= 0):
            raise ValueError(f"{name} must hold at least 2 strictly increasing values")
    if lg.min() < -3 or lg.max() > 8:
        raise ValueError(f"log10_beta_grid must lie in [-3, 8]; got [{lg.min()}, {lg.max()}]")
    dev = resolve_device(device)
    C, LB = np.meshgrid(cg, lg)
    beta = torch.as_tensor(10.0 ** LB, dtype=DEFAULT_DTYPE, device=dev)
    c = torch.as_tensor(C, dtype=DEFAULT_DTYPE, device=dev)
    with _one_thread(dev):
        L, g_beta, g_b = population_loss_and_grad(beta, c * beta, tau_lo, tau_hi)
    vbeta, vb = -g_beta, -g_b
    dc = ((vb - c * vbeta) / beta).cpu().numpy()
    dl = (vbeta / beta).cpu().numpy()
    return {"c": C, "beta": 10.0 ** LB, "dc_dt": dc, "dlnbeta_dt": dl,
            "speed": np.hypot(dc, dl), "loss": L.cpu().numpy()}


# --------------------------------------------------------------------------------------------------
# leading-order asymptotics (derivation in the module docstring)
# --------------------------------------------------------------------------------------------------
def valley_c(beta: Any, tau_hi: float = 0.8) -> np.ndarray:
    """Leading-order valley floor ``c*(beta) = tau_hi + log(tau_hi beta / 2) / beta`` (``beta > 2/tau_hi``).

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
        raise ValueError(f"beta must be an array of finite numbers > 2/tau_hi; got {beta!r}") from None
    if not (np.all(np.isfinite(beta)) and np.all(beta > 2 / tau_hi)):
        raise ValueError(f"beta must be finite and > 2/tau_hi = {2 / tau_hi:.3g}")
    return tau_hi + np.log(tau_hi * beta / 2) / beta


def scale_constant(tau_hi: float = 0.8) -> float:
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


# ------------------------------------------------------------------- calibration, measured
def growth_share_at_calibration(result: FlowResult, t_cal: Any) -> np.ndarray:
    """How much of each run's growth of ``log beta`` happened before calibration ended.

    The share is ``(log beta(t_cal) - log beta_min) / (log beta(t_max) - log beta_min)`` with
    ``beta_min`` the run's smallest recorded scale (a small uncalibrated start first *loses*
    scale): ``0`` when the scale has not grown at all by ``t_cal``, ``1`` when all of it came first.

    Parameters
    ----------
    result : the flow (:func:`integrate_flow`).
    t_cal : array_like, shape ``(R,)``: :func:`calibration_time` of each run (``nan``: never).

    Returns
    -------
    np.ndarray, shape ``(R,)``: the share, ``nan`` for a run that never calibrates or whose scale
    does not grow (or crosses zero).
    """
    t_cal = np.asarray(t_cal, dtype=float).ravel()
    if t_cal.shape[0] != result.beta.shape[0]:
        raise ValueError(f"t_cal must have one entry per run ({result.beta.shape[0]}); got {t_cal.size}")
    out = np.full(t_cal.shape, np.nan)
    for r, tc in enumerate(t_cal):
        beta = result.beta[r]
        if not np.isfinite(tc) or np.any(beta <= 0):
            continue
        lo, end = np.log(beta.min()), np.log(beta[-1])
        if end - lo <= 0:
            continue
        at = np.log(interpolate_flow(result, [tc], r)[0][0])
        out[r] = float(np.clip((at - lo) / (end - lo), 0.0, 1.0))
    return out
