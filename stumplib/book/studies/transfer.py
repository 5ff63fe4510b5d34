"""Transfer from the population to a finite corpus: corpus gradient against population gradient.

The abstract's argument compares, at successive parameter scales ``beta`` along the population path,
the gradient of the finite-corpus loss (``m`` tasks, ``n`` examples each) with the exact population
gradient, *relative to the direction of progress*. While the error is a small fraction of the
population gradient, a GD step on the corpus is a descent step on the population loss, so the
population analysis carries over: this certifies a training interval ``beta <= beta*(m, n)``.

Definitions used here (stated in chapter 3):

* **Population path.** For each scale ``beta`` the calibrated label score ``b*(beta)`` minimises the
  population loss at fixed ``beta`` (``dL_pop/db = 0``; found by bisection, the sign of
  ``dL_pop/db`` changes once). ``c*(beta) = b*/beta`` decreases to ``tau_hi`` like
  ``tau_hi + O(log(beta)/beta)``. On the path the population gradient ``g_pop`` points along
  ``beta`` (progress is ``-g_pop``: ``beta`` grows).
* **Relative error.** For a corpus, ``e = g_corpus - g_pop`` (in the ``(beta, b)`` coordinates);
  ``rel = |e| / |g_pop|`` and its component along the progress direction
  ``rel_along = <e, u> / |g_pop|`` with ``u = g_pop / |g_pop|``. If ``rel < 1`` the corpus step is a
  population descent step; ``rel <= 1/2`` keeps the angle to the population gradient below 30
  degrees and at least half of its component along the progress direction.
* **Certified scale.** ``beta*(m, n)``: the first scale along the path where the root-mean-square
  over corpora of the error along the progress direction, ``|rel_along|``, reaches ``level``
  (log-log interpolation between grid points). The total error ``rel`` is also available; it is
  dominated by the stiff label-score direction ``b``, where an error only shifts the calibrated
  ``c`` (GD relaxes it fast) and does not stop progress in ``beta``. The root mean square (not the
  median) is used because the error is heavy-tailed: it comes from the few tasks whose threshold
  lies within ``~1/beta`` of the calibration edge, of which a corpus holds ``~m / beta``.

Corpora of the same ``(n, seed)`` are nested in ``m`` (corpus ``k`` holds tasks ``k m ... (k+1) m - 1``
of one seeded draw), so neighbouring ``m`` share random numbers and the curves are smooth in ``m``.
The certified scales the chapters report are computed by :mod:`stumplib.book.studies.certified` from the
profiles of this module (:func:`transfer_profile`, :func:`certified_interval`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE, resolve_device
from stumplib.core.stats import crossing
from stumplib.stump.population import population_hessian, population_loss_and_grad
from stumplib.stump.prior import Prior
from stumplib.stump.tasks import sample_tasks
from stumplib.stump.corpus_grad import corpus_grad
from stumplib.core.validation import check_choice, check_grid, check_int, check_real
from stumplib.stump.prior import DEFAULT_PRIOR, as_prior

#: default relative-error level defining the certified scale
DEFAULT_LEVEL = 0.5
#: elements of (beta, corpus, task, example) evaluated at once (memory bound)
_CHUNK_ELEMS = 2 ** 22


def default_beta_grid(beta_min: float = 1.0, beta_max: float = 2.0 ** 16, per_octave: int = 2
                      ) -> np.ndarray:
    """Log-spaced scales ``beta_min * 2^(k / per_octave)`` up to ``beta_max``.

    Parameters
    ----------
    beta_min, beta_max : float
        The first scale and the cap.
    per_octave : int
        Points per octave.

    Returns
    -------
    np.ndarray of float64, shape ``(K,)``
    """
    beta_min = check_real("beta_min", beta_min, low=0.0, low_open=True)
    beta_max = check_real("beta_max", beta_max, low=beta_min, low_open=True)
    per_octave = check_int("per_octave", per_octave, minimum=1, maximum=64)
    k = int(np.floor(np.log2(beta_max / beta_min) * per_octave + 1e-9))
    return beta_min * 2.0 ** (np.arange(k + 1) / per_octave)


def _betas_tensor(betas: Any, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    vals = check_grid("betas", np.asarray(betas, dtype=float).ravel().tolist() if not isinstance(betas, (list, tuple)) else betas,
                      kind="real", minimum=1e-12)
    return torch.tensor(vals, dtype=dtype, device=device)


def calibrated_label_score(betas: Any, prior: Prior = DEFAULT_PRIOR, *,
                           iters: int = 40, device: Any = "cpu", dtype: torch.dtype = DEFAULT_DTYPE
                           ) -> torch.Tensor:
    """The calibrated relative label score ``c*(beta) = argmin_b L_pop(beta, b) / beta``.

    Bisection on the sign of ``dL_pop/db`` for ``c`` in ``[tau_lo, tau_hi + 1]`` (it changes sign
    once: negative below the minimiser, positive, or exactly zero far above it, beyond). ``iters``
    halvings give ``c`` to ``2^-iters``; the population gradient along ``beta`` is insensitive to
    ``c`` at first order there (``dL/db = 0``), so 40 are plenty.

    Parameters
    ----------
    betas : array_like, shape ``(K,)``, positive scales.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    iters : int
        Bisection halvings.
    device, dtype : where and in which precision to compute.

    Returns
    -------
    c : torch.Tensor, shape ``(K,)``
    """
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    iters = check_int("iters", iters, minimum=1, maximum=200)
    dev = resolve_device(device)
    beta = _betas_tensor(betas, dev, dtype)
    lo = torch.full_like(beta, tau_lo)
    hi = torch.full_like(beta, tau_hi + 1.0)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        _, _, g_b = population_loss_and_grad(beta, mid * beta, prior)
        up = g_b < 0  # loss still decreases with b: the minimiser lies above
        lo = torch.where(up, mid, lo)
        hi = torch.where(up, hi, mid)
    return 0.5 * (lo + hi)


def population_path(betas: Any, prior: Prior = DEFAULT_PRIOR, *, device: Any = "cpu",
                    dtype: torch.dtype = DEFAULT_DTYPE) -> dict[str, torch.Tensor]:
    """Points of the population path and the population gradient there.

    Parameters
    ----------
    betas : array_like, shape ``(K,)``
        Positive scales.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    device, dtype : where and in which precision to compute.

    Returns
    -------
    dict with ``beta, c, b, L`` of shape ``(K,)`` and ``g`` of shape ``(K, 2)``
    (``(dL_pop/dbeta, dL_pop/db)``).
    """
    dev = resolve_device(device)
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    vals = tuple(float(v) for v in _betas_tensor(betas, torch.device("cpu"), torch.float64).tolist())
    c, L, g = _path_cached(vals, tau_lo, tau_hi)
    t = lambda a: torch.as_tensor(a, dtype=dtype, device=dev)  # noqa: E731
    beta = t(np.asarray(vals))
    return {"beta": beta, "c": t(c), "b": t(c) * beta, "L": t(L), "g": t(g)}


@lru_cache(maxsize=256)
def _path_cached(betas: tuple, tau_lo: float, tau_hi: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The path on CPU in float64, cached: it depends only on the scales and the prior."""
    c = calibrated_label_score(list(betas), Prior(tau_lo, tau_hi), device="cpu",
                               dtype=torch.float64)
    beta = torch.tensor(betas, dtype=torch.float64)
    L, g_beta, g_b = population_loss_and_grad(beta, c * beta, Prior(tau_lo, tau_hi))
    return c.numpy(), L.numpy(), torch.stack([g_beta, g_b], -1).numpy()


def draw_corpus_batch(m: int, n: int, n_corpora: int, *, seed: int = 0,
                      prior: Prior = DEFAULT_PRIOR, device: Any = "cpu",
                      dtype: torch.dtype = DEFAULT_DTYPE
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``n_corpora`` independent corpora of ``m`` tasks with ``n`` examples each.

    One seeded draw of ``n_corpora * m`` tasks, split into consecutive blocks of ``m``.

    Parameters
    ----------
    m, n : int
        Tasks per corpus and examples per task.
    n_corpora : int
        Corpora ``C``.
    seed : int
        The draw's seed.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    device, dtype : where and in which precision.

    Returns
    -------
    tau : torch.Tensor, shape ``(C, m)``
    x, y : torch.Tensor, shape ``(C, m, n)``
    """
    m = check_int("m", m)
    n = check_int("n", n)
    C = check_int("n_corpora", n_corpora)
    tau, x, y = sample_tasks(C * m, n, prior, seed=seed, device=device, dtype=dtype)
    return tau.reshape(C, m), x.reshape(C, m, n), y.reshape(C, m, n)


def _corpus_grads(tau: torch.Tensor, x: torch.Tensor, y: torch.Tensor, beta: torch.Tensor,
                  b: torch.Tensor) -> torch.Tensor:
    """Corpus gradients for every (scale, corpus): shape ``(K, C, 2)``; chunked over scales."""
    C, m, n = x.shape
    per = max(1, _CHUNK_ELEMS // (C * m * n))
    ny = 1.0 - y
    work: list = []  # reusable buffers (no page faults from fresh temporaries)
    out = []
    for k0 in range(0, beta.numel(), per):
        bk, bbk = beta[k0:k0 + per, None], b[k0:k0 + per, None]  # (k, 1) -> broadcast over C
        _, gb, gbb = corpus_grad(x, y, tau, bk.expand(-1, C), bbk.expand(-1, C), ny, work)
        out.append(torch.stack([gb, gbb], -1))
    return torch.cat(out, 0)


@dataclass
class TransferProfile:
    """Corpus against population gradients along the path, for one ``(m, n)``.

    Attributes
    ----------
    m, n, n_corpora, seed : the corpora.
    beta, c : np.ndarray, shape ``(K,)``: the path.
    g_pop : np.ndarray, shape ``(K, 2)``: population gradient ``(dL/dbeta, dL/db)``.
    g_corpus : np.ndarray, shape ``(K, C, 2)``: corpus gradients.
    """

    m: int
    n: int
    n_corpora: int
    seed: int
    beta: np.ndarray
    c: np.ndarray
    g_pop: np.ndarray
    g_corpus: np.ndarray

    @property
    def rel(self) -> np.ndarray:
        """``|g_corpus - g_pop| / |g_pop|``, shape ``(K, C)``."""
        e = self.g_corpus - self.g_pop[:, None, :]
        return np.linalg.norm(e, axis=-1) / np.linalg.norm(self.g_pop, axis=-1)[:, None]

    @property
    def rel_along(self) -> np.ndarray:
        """Signed component of the error along the progress direction, over ``|g_pop|``: ``(K, C)``.

        Negative values shorten the step along the progress direction; below ``-1`` the corpus step
        goes backwards.
        """
        gp = self.g_pop
        nrm = np.linalg.norm(gp, axis=-1)
        u = gp / nrm[:, None]
        e = self.g_corpus - gp[:, None, :]
        return (e * u[:, None, :]).sum(-1) / nrm[:, None]


    def curve(self, stat: str = "rms", which: str = "along", corpora: np.ndarray | None = None
              ) -> np.ndarray:
        """The relative gradient error aggregated over corpora, per scale.

        Parameters
        ----------
        stat : str
            ``"rms"``, ``"median"`` or ``"mean"``.
        which : str
            ``"rel"`` (the whole error vector) or ``"along"`` (``|rel_along|``).
        corpora : np.ndarray of int, optional
            Corpus indices (for a bootstrap; default all).

        Returns
        -------
        np.ndarray, shape ``(K,)``
        """
        check_choice("stat", stat, ("rms", "median", "mean"))
        check_choice("which", which, ("rel", "along"))
        r = self.rel if which == "rel" else np.abs(self.rel_along)
        if corpora is not None:
            r = r[:, corpora]
        if stat == "rms":
            return np.sqrt((r ** 2).mean(1))
        return np.median(r, 1) if stat == "median" else r.mean(1)

    def certified(self, level: float = DEFAULT_LEVEL, stat: str = "rms", which: str = "along",
                  corpora: np.ndarray | None = None) -> float:
        """The certified scale ``beta*`` of this profile (see :func:`crossing_scale`).

        Parameters
        ----------
        level : float
            The relative-error level.
        stat, which, corpora
            As in :meth:`curve`.

        Returns
        -------
        float
            NaN without a certified interval, ``inf`` past the grid.
        """
        return crossing_scale(self.beta, self.curve(stat, which, corpora), level)


def certified_interval(betas: Any, curve: Any, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """The first interval of scales on which ``curve < level``: ``(beta_lo, beta*)``.

    The relative error is U-shaped along the path: large at small scales (the population gradient
    is small against the task-to-task spread of per-task gradients), small in between, and growing
    again at large scales. Scanning upwards, ``beta_lo`` is where it first drops below ``level`` and
    ``beta*`` where it next reaches ``level`` again, both log-log interpolated.

    Parameters
    ----------
    betas : array_like, shape ``(K,)``
        Increasing scales.
    curve : array_like, shape ``(K,)``
        The error curve.
    level : float
        The level.

    Returns
    -------
    (beta_lo, beta_star) : floats. ``beta_lo = betas[0]`` if the curve starts below ``level``;
    ``beta_star = inf`` if it never comes back up on the grid; ``(nan, nan)`` if it never drops below
    ``level`` (no certified interval). NaN entries of ``curve`` count as above ``level``.
    """
    betas = np.asarray(betas, dtype=float).ravel()
    curve = np.asarray(curve, dtype=float).ravel()
    if betas.size == 0 or betas.shape != curve.shape:
        raise ValueError(f"betas and curve must be non-empty and of the same length; got {betas.size} "
                         f"and {curve.size}")
    if not np.all(np.isfinite(betas)) or np.any(betas <= 0) or np.any(np.diff(betas) <= 0):
        raise ValueError("betas must be positive, finite and strictly increasing")
    level = check_real("level", level, low=0.0, low_open=True)
    below = np.flatnonzero(curve < level)  # NaN counts as above
    if below.size == 0:
        return float("nan"), float("nan")
    k0 = int(below[0])
    lo = float(betas[0]) if k0 == 0 else crossing(betas, curve, level, direction="down", log_x=True, log_y=True)
    hi = crossing(betas, curve, level, direction="up", start=k0, log_x=True, log_y=True)
    return lo, (float("inf") if np.isnan(hi) else hi)


def crossing_scale(betas: Any, curve: Any, level: float = DEFAULT_LEVEL) -> float:
    """The end ``beta*`` of the first certified interval; see :func:`certified_interval`.

    Parameters
    ----------
    betas, curve : array_like, shape ``(K,)``
        Increasing scales and the error curve.
    level : float
        The level.

    Returns
    -------
    float
    """
    return certified_interval(betas, curve, level)[1]


def transfer_profile(m: int, n: int, betas: Any = None, *, n_corpora: int = 32, seed: int = 0,
                     prior: Prior = DEFAULT_PRIOR, device: Any = "auto",
                     dtype: torch.dtype = DEFAULT_DTYPE, path: dict | None = None) -> TransferProfile:
    """Corpus gradients of ``n_corpora`` corpora at every scale of ``betas`` along the path.

    Parameters
    ----------
    m, n : tasks per corpus and examples per task (>= 1).
    betas : array_like, shape ``(K,)``, increasing positive scales (default :func:`default_beta_grid`).
    n_corpora : independent corpora (>= 2).
    seed : the corpora's seed (:func:`draw_corpus_batch`).
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    device, dtype : where and in which precision.
    path : a precomputed :func:`population_path` on the same ``betas`` (to share it across ``(m, n)``).

    Returns
    -------
    TransferProfile
    """
    m = check_int("m", m)
    n = check_int("n", n)
    n_corpora = check_int("n_corpora", n_corpora, minimum=2)
    seed = check_int("seed", seed, minimum=0)
    if betas is None:
        betas = default_beta_grid()
    bvals = np.asarray(check_grid("betas", list(np.asarray(betas, dtype=float).ravel()), kind="real",
                                  minimum=1e-12))
    if np.any(np.diff(bvals) <= 0):
        raise ValueError("betas must be strictly increasing")
    dev = resolve_device(device)
    if path is None:
        path = population_path(bvals, prior, device=dev, dtype=dtype)
    beta, b = path["beta"].to(dev, dtype), path["b"].to(dev, dtype)
    if beta.numel() != bvals.size:
        raise ValueError("path must be computed on the same betas")
    tau, x, y = draw_corpus_batch(m, n, n_corpora, seed=seed, prior=prior, device=dev, dtype=dtype)
    g = _corpus_grads(tau, x, y, beta, b)
    return TransferProfile(m, n, n_corpora, seed, bvals, path["c"].cpu().numpy(),
                           path["g"].cpu().numpy(), g.cpu().numpy())


def step_size_limit(betas: Any, prior: Prior = DEFAULT_PRIOR) -> np.ndarray:
    """Linear-stability limit ``2 / lambda_max`` of constant-step GD at points of the population path.

    ``lambda_max`` is the largest eigenvalue of the population Hessian at ``(beta, c*(beta) beta)``
    (:func:`stumplib.stump.population.population_hessian`, the book's one definition);
    a step larger than the limit makes the stiff (label-score) direction oscillate with growing
    amplitude near the path.

    Parameters
    ----------
    betas : array_like, shape ``(K,)``
        Scales of the path.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).

    Returns
    -------
    np.ndarray, shape ``(K,)``
        ``inf`` where ``lambda_max <= 0``.
    """
    path = population_path(betas, prior, device="cpu")
    H = population_hessian(path["beta"].numpy(), path["b"].numpy(), prior)
    lam = np.linalg.eigvalsh(H)[:, -1]
    return np.where(lam > 0, 2.0 / np.where(lam > 0, lam, 1.0), np.inf)


def profile_grid(m: int, n: int, *, beta_min: float = 1.0, per_octave: int = 4,
                 top_factor: float = 0.5) -> np.ndarray:
    """Scales for the profile of ``(m, n)``.

    Parameters
    ----------
    m, n : int
        The shape.
    beta_min : float
        The first scale.
    per_octave : int
        Points per octave.
    top_factor : float
        The grid ends at ``top_factor * min(m, n)`` (the certified scale lies well below
        ``m ∧ n``), with at least 8 points.

    Returns
    -------
    np.ndarray, shape ``(K,)``
        ``beta_min * 2^(k/per_octave)``.
    """
    m, n = check_int("m", m), check_int("n", n)
    beta_min = check_real("beta_min", beta_min, low=0.0, low_open=True)
    per_octave = check_int("per_octave", per_octave, minimum=1, maximum=64)
    top_factor = check_real("top_factor", top_factor, low=0.0, low_open=True)
    top = max(top_factor * min(m, n), beta_min * 2.0 ** (8 / per_octave))
    return default_beta_grid(beta_min, top, per_octave)


def gd_against_flow(shapes: Sequence[tuple[int, int]], n_seeds: int, *, lr: float, beta0: float,
                    b0: float, steps: int, seed: int = 0, prior: Prior = DEFAULT_PRIOR,
                    rtol: float = 1e-6, device: Any = "cpu") -> dict[str, Any]:
    """Constant-step GD on ``n_seeds`` corpora of every shape and the population gradient flow from
    the same start, over the same time ``t = lr * steps`` (both cached).

    Parameters
    ----------
    shapes : sequence of (int, int)
        The ``(m, n)`` pairs.
    n_seeds : int
        Corpora per shape.
    lr : float
        The constant step size.
    beta0, b0 : float
        The start of GD and of the flow.
    steps : int
        GD steps.
    seed : int
        Seed of the first corpus of each shape (``seed, seed + 1, ...``).
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    rtol : float
        The flow integrator's relative tolerance.
    device : str or torch.device
        Where GD runs (the flow runs on the CPU).

    Returns
    -------
    dict: ``t (R,)``: GD time of the records; ``beta, c (runs, R)``; ``labels`` (one per run);
    ``flow_t, flow_beta, flow_c``: the flow, run 4 times longer so that it covers every scale the
    runs reach.
    """
    from stumplib.core.memo import remember
    from stumplib.stump.flow import FlowOptions, integrate_flow
    from stumplib.stump.trainer import RunConfig, TrainOptions, train_gd

    tau_lo, tau_hi = as_prior(prior).as_tuple()
    cfg = [RunConfig(m, n, seed=seed + s, lr=lr, beta0=beta0, b0=b0, tau_lo=tau_lo, tau_hi=tau_hi)
           for (m, n) in shapes for s in range(n_seeds)]

    def run() -> dict[str, np.ndarray]:
        r = train_gd(cfg, steps, device=device, progress=False, options=TrainOptions(n_records=40))
        return {"steps": r.steps, "beta": r.beta, "b": r.b}

    traj = remember("gd_trajectories", {"configs": [vars(c) for c in cfg], "steps": steps}, run)
    t = lr * traj["steps"].astype(float)

    def flow():
        return integrate_flow(beta0, b0, 4 * float(t[-1]), prior=prior,
                              n_records=40, t_first=float(t[1]), options=FlowOptions(rtol=rtol))

    fl = remember("population_flow", {"start": [beta0, b0], "t": 4 * float(t[-1]), "rtol": rtol,
                                  "prior": [tau_lo, tau_hi]}, flow)
    return {"t": t, "beta": traj["beta"], "c": traj["b"] / traj["beta"],
            "labels": [rf"GD, $m\times n$ = {c.m}x{c.n}" for c in cfg],
            "flow_t": fl.t, "flow_beta": fl.beta[0], "flow_c": fl.b[0] / fl.beta[0]}
