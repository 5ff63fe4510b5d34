"""Population training dynamics of the stump model: gradient flow and gradient descent.

The population loss ``L(beta, b) = E_{tau ~ U[tau_lo, tau_hi]} (f_pop(tau; beta, b) - tau)^2`` and
its exact gradient come from :func:`stumplib.stump.population.population_loss_and_grad`. This module
follows

* the **gradient flow** ``d(beta, b)/dt = -grad L``, integrated in log time
  ``s = log(1 + t)`` (so that ``t = 0`` is the exact start and ``s ~ log t`` for ``t >> 1``) with a
  stiff adaptive solver (:func:`scipy.integrate.solve_ivp`, BDF by default), many initial conditions
  in one vectorised system: :func:`integrate_flow` (read between records with
  :func:`interpolate_flow`);
* **constant-step gradient descent** on the same loss, many runs (initial conditions and step
  sizes) at once: :func:`population_gd`.

What the chapter measures on these trajectories (the end of calibration, the exponents) is in
:mod:`stumplib.stump.exponents`; the landscape they move in (the gradient field, the valley, the
curvature, the asymptotic constants) in :mod:`stumplib.stump.landscape`.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import torch

from stumplib.core.device import resolve_device
from stumplib.core.errors import TrainingDiverged
from stumplib.core.validation import check_bool, check_choice, check_int, check_real
from stumplib.stump.population import population_loss_and_grad
from stumplib.stump.prior import DEFAULT_PRIOR, Prior, as_prior
from stumplib.stump.trainer import DEFAULT_TRAIN_OPTIONS, TrainOptions

#: parameters beyond this magnitude count as diverged
MAX_PARAM = 1e12
_METHODS = ("BDF", "Radau", "LSODA")


@contextlib.contextmanager
def one_thread(device: torch.device | None = None) -> Iterator[None]:
    """Run small batched CPU evaluations on one intra-op thread, restoring the setting afterwards.

    The right-hand sides of the population dynamics are a few thousand quadrature nodes: extra
    OpenMP threads only add synchronisation, and on a loaded machine they made each evaluation
    about 10x slower.

    Parameters
    ----------
    device : torch.device, optional
        Where the evaluations run: a device other than the CPU leaves the threads alone.

    Yields
    ------
    None
        Inside the ``with`` block, one intra-op thread on the CPU.
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
def check_vector(name: str, value: Any, *, positive: bool = False) -> np.ndarray:
    """A non-empty 1-D float64 array of finite reals (scalars become length 1).

    Parameters
    ----------
    name : str
        How the argument is named in an error message.
    value : float, sequence or torch.Tensor
        The values.
    positive : bool
        Require every value ``> 0``.

    Returns
    -------
    np.ndarray, shape ``(K,)``
        The values, each of magnitude at most :data:`MAX_PARAM`.

    Raises
    ------
    ValueError
        Naming ``name``, for anything else.
    """
    if isinstance(value, (str, bytes, bool)) or value is None:
        raise ValueError(f"{name} must be a finite real number or a non-empty 1-D sequence of "
                         f"them; got {value!r}")
    if torch.is_tensor(value):
        value = value.detach().cpu().numpy()
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite real number or a non-empty 1-D sequence of "
                         f"them; got {value!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf); got {arr.tolist()}")
    if positive and not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0 (in (0, inf)); got {arr.tolist()}")
    if np.any(np.abs(arr) > MAX_PARAM):
        raise ValueError(f"{name} must satisfy |value| <= {MAX_PARAM:g}; got {arr.tolist()}")
    return arr


def check_pair(beta0: Any, b0: Any, names: tuple[str, str] = ("beta0", "b0")
               ) -> tuple[np.ndarray, np.ndarray]:
    """Scales and label scores of ``R`` runs, checked (:func:`check_vector`) and broadcast.

    Parameters
    ----------
    beta0 : float or sequence, length ``R`` or 1
        The scales, ``> 0``.
    b0 : float or sequence, length ``R`` or 1
        The label scores.
    names : (str, str)
        How the two arguments are named in an error message.

    Returns
    -------
    beta0, b0 : np.ndarray, shape ``(R,)``
        A length-1 argument repeated to the other's length.
    """
    beta0 = check_vector(names[0], beta0, positive=True)
    b0 = check_vector(names[1], b0)
    if beta0.size != b0.size:
        if beta0.size == 1:
            beta0 = np.full(b0.size, beta0[0])
        elif b0.size == 1:
            b0 = np.full(beta0.size, b0[0])
        else:
            raise ValueError(f"{names[0]} and {names[1]} must have the same length (or one of them "
                             f"length 1); got {beta0.size} and {b0.size}")
    return beta0, b0


def log_time_rhs(s: float, y: np.ndarray, prior: Prior = DEFAULT_PRIOR) -> np.ndarray:
    """Right-hand side of the flow in log time ``s = log(1 + t)``:
    ``dy/ds = (1 + t) dy/dt = -e^s grad L``.

    Unchecked (it is the solver's inner loop; :func:`integrate_flow` checks its arguments).

    Parameters
    ----------
    s : float
        Log time.
    y : np.ndarray, shape ``(2R,)`` or ``(2R, k)``
        ``y[:R]`` the scales ``beta``, ``y[R:]`` the label scores ``b`` of ``R`` runs (``k`` columns
        when the solver evaluates several states at once).
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).

    Returns
    -------
    np.ndarray, the shape of ``y``
    """
    R = y.shape[0] // 2
    yt = torch.from_numpy(np.ascontiguousarray(y, dtype=np.float64))
    _, g_beta, g_b = population_loss_and_grad(yt[:R], yt[R:], prior)
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


@dataclass(frozen=True)
class FlowOptions:
    """The stiff solver's settings for :func:`integrate_flow`: one frozen object, checked where
    it is built.

    Attributes
    ----------
    rtol : float
        Relative tolerance, in ``[1e-12, 1e-3]`` (default 1e-7).
    atol : float
        Absolute tolerance, in ``[1e-14, 1e-3]`` (default 1e-9).
    method : str
        ``"BDF"`` (default), ``"Radau"`` or ``"LSODA"`` (:func:`scipy.integrate.solve_ivp`).

    Examples
    --------
    >>> FlowOptions(rtol=1e-6, atol=1e-8).method
    'BDF'
    """

    rtol: float = 1e-7
    atol: float = 1e-9
    method: str = "BDF"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rtol", check_real("rtol", self.rtol, low=1e-12, high=1e-3))
        object.__setattr__(self, "atol", check_real("atol", self.atol, low=1e-14, high=1e-3))
        object.__setattr__(self, "method", check_choice("method", self.method, _METHODS))


#: the flow solver's default settings
DEFAULT_FLOW_OPTIONS = FlowOptions()


def integrate_flow(beta0: Any, b0: Any, t_max: float, *, prior: Prior = DEFAULT_PRIOR,
                   n_records: int = 241, t_first: float = 1e-2,
                   options: FlowOptions = DEFAULT_FLOW_OPTIONS) -> FlowResult:
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
    prior : :class:`~stumplib.stump.Prior`, the uniform threshold prior (default ``U[0.2, 0.8]``).
    n_records : recorded times (>= 3): ``t = 0`` and ``n_records - 1`` log-spaced times in
        ``[t_first, t_max]``.
    t_first : first positive recorded time, in ``(0, t_max)``.
    options : :class:`FlowOptions`, the solver's tolerances and method.

    Returns
    -------
    FlowResult
        numpy arrays.

    Raises
    ------
    FlowDiverged
        If the solver fails, or a recorded value is non-finite or beyond ``|.| <= 1e12``.
    """
    from scipy.integrate import solve_ivp

    beta0, b0 = check_pair(beta0, b0)
    t_max = check_real("t_max", t_max, low=0.0, high=1e20, low_open=True)
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    n_records = check_int("n_records", n_records, minimum=3, maximum=100_000)
    t_first = check_real("t_first", t_first, low=0.0, high=t_max, low_open=True, high_open=True)
    if not isinstance(options, FlowOptions):
        raise ValueError(f"options must be a FlowOptions; got {type(options).__name__}")
    rtol, atol, method = options.rtol, options.atol, options.method

    R = beta0.size
    y0 = np.concatenate([beta0, b0])
    t_rec = _record_times(t_max, n_records, t_first)
    s_rec = np.log1p(t_rec)
    kw: dict[str, Any] = {}
    if method != "LSODA":
        kw["vectorized"] = True
        kw["jac_sparsity"] = np.kron(np.ones((2, 2)), np.eye(R))
    with one_thread():
        sol = solve_ivp(log_time_rhs, (0.0, float(s_rec[-1])), y0, method=method, t_eval=s_rec,
                        rtol=rtol, atol=atol, args=(prior,), **kw)
    if sol.status != 0 or sol.y.shape[1] != t_rec.size:
        raise FlowDiverged(f"gradient flow solver ({method}) stopped at "
                           f"t = {np.expm1(sol.t[-1]):.3g} of t_max = {t_max:.3g}: {sol.message}")
    y = sol.y
    if not np.all(np.isfinite(y)) or np.any(np.abs(y) > MAX_PARAM):
        raise FlowDiverged("gradient flow produced non-finite or exploding parameters "
                           f"(|.| > {MAX_PARAM:g})")
    beta, b = y[:R], y[R:]
    with one_thread():
        L, g_beta, g_b = population_loss_and_grad(torch.from_numpy(beta.copy()),
                                                  torch.from_numpy(b.copy()), prior)
    return FlowResult(t=t_rec, beta=beta, b=b, loss=L.numpy(), dbeta_dt=-g_beta.numpy(),
                      db_dt=-g_b.numpy(), beta0=beta0, b0=b0, tau_lo=tau_lo, tau_hi=tau_hi,
                      nfev=int(sol.nfev))


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
    beta0_a, b0_a = check_pair(beta0, b0)
    lr_a = check_vector("lr", lr, positive=True)
    R = max(beta0_a.size, lr_a.size)
    for name, arr in (("beta0", beta0_a), ("b0", b0_a), ("lr", lr_a)):
        if arr.size not in (1, R):
            raise ValueError(f"{name} must have length 1 or {R} (the number of runs); "
                             f"got {arr.size}")
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


def population_gd(beta0: Any, b0: Any, lr: Any, steps: int, *, prior: Prior = DEFAULT_PRIOR,
                  device: Any = "cpu", progress: bool = False,
                  options: TrainOptions = DEFAULT_TRAIN_OPTIONS) -> GDResult:
    """Constant-step gradient descent ``theta <- theta - lr grad L`` on the exact population loss.

    All ``R`` runs (their own initial condition and step size) advance together in one batched
    evaluation of :func:`~stumplib.stump.population.population_loss_and_grad` per step.

    Parameters
    ----------
    beta0, b0, lr : float or sequence, shape ``(R,)`` (length-1 entries are broadcast);
        ``beta0 > 0``, ``lr > 0``.
    steps : number of steps (>= 1).
    prior : :class:`~stumplib.stump.Prior`, the threshold prior (default ``U[0.2, 0.8]``).
    device : where to compute.
    progress : show a tqdm bar.
    options : :class:`~stumplib.stump.TrainOptions`: ``n_records`` (log-spaced recorded step
        counts, step 0 included), ``dtype`` (``float32`` or ``float64``) and ``max_loss_ratio`` (a
        run whose loss exceeds this multiple of its initial loss counts as diverged; checked every
        step); ``check_every``, ``grouping`` and ``on_diverge`` must keep their defaults.

    Returns
    -------
    GDResult
        numpy arrays (the descent itself runs in torch on ``device``).

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
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    check_bool("progress", progress)
    if not isinstance(options, TrainOptions):
        raise ValueError(f"options must be a TrainOptions; got {type(options).__name__}")
    options.require_defaults("population_gd", ("check_every", "grouping", "on_diverge"))
    n_records, dtype, max_loss_ratio = options.n_records, options.dtype, options.max_loss_ratio
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
    with one_thread(dev):
        for k in tqdm(range(steps + 1), disable=not progress, desc="population GD",
                      mininterval=1.0):
            L, g_beta, g_b = population_loss_and_grad(beta, b, prior)
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
