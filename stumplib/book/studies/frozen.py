"""Frozen estimators: heads ``(beta, b)`` fixed and measured on fresh contexts (chapter 4).

The abstract of the stump paper (arXiv:2610.07074) bounds the error of the estimator that GD
produces on ``m`` tasks of ``n`` examples, once frozen, on a fresh context of ``N`` examples with a
fixed interior threshold, by ``Õ((m ∧ n)^-1 + N^-1)``. This module holds

- :func:`sq_errors`: squared errors of frozen heads ``(beta, b)`` on the same fresh contexts (common
  random numbers, :func:`fresh_contexts`), per threshold and context; the estimator is
  :func:`stumplib.stump.model.estimate`; :func:`head_law_grid` evaluates them on a grid of scales
  and context sizes at the population's calibrated label score;
- :func:`fit_two_term`, :func:`bootstrap_two_term`: the law ``y^2 = A x^(-2p) + B N^(-2q)``
  fitted in log space, with a bootstrap over independent units (contexts, runs); :func:`head_mse`
  the frozen head's law, and :func:`bootstrap_stop_law` the law of the error at the certified stop
  with every source of uncertainty;
- :func:`bound`, :func:`bound_form_spread`: the abstract's rate and the spread of
  ``error / (A1 (m∧n)^-1 + B1 N^-1)`` with ``A1, B1`` fitted.

The heads come from training stopped at the certified scale, :mod:`stumplib.book.studies.staged`.

**Error.** For a fixed threshold ``tau`` the error is the root-mean-square over fresh contexts of
``f - tau``; over several thresholds, the root of the mean MSE.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE, make_generator, resolve_device
from stumplib.core.memo import remember
from stumplib.core.stats import Estimate, interval, resample, resample_indices
from stumplib.core.validation import check_grid, check_int
from stumplib.book.studies.certified import worst_per_value
from stumplib.stump.model import estimate
from stumplib.stump.tasks import labels
from stumplib.book.studies.transfer import population_path
from stumplib.stump.prior import DEFAULT_PRIOR, Prior, as_prior

#: fixed interior thresholds (inside the prior [0.2, 0.8], away from its upper end)
FIXED_TAUS = (0.3, 0.4, 0.5)


def fresh_contexts(N: int, taus: torch.Tensor, n_ctx: int, *, seed: int = 0
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh contexts; the same uniforms serve every threshold, and the draw depends only on
    ``(seed, N)``.

    Parameters
    ----------
    N : int
        Context size.
    taus : torch.Tensor, shape ``(T,)``
        The thresholds (labels ``y = 1{x >= tau}``).
    n_ctx : int
        Contexts per threshold.
    seed : int
        The draw's seed.

    Returns
    -------
    x, y : torch.Tensor, shape ``(T, n_ctx, N)``
    """
    N, n_ctx = check_int("N", N), check_int("n_ctx", n_ctx)
    gen = make_generator(check_int("seed", seed, minimum=0) * 1_000_003 + N, taus.device)
    u = torch.rand(n_ctx, N, generator=gen, device=taus.device, dtype=taus.dtype)
    x = u.expand(taus.numel(), n_ctx, N)
    return x, labels(x, taus[:, None].expand(-1, n_ctx))


def sq_errors(beta: Any, b: Any, N: int, *, taus: Sequence[float] = FIXED_TAUS, n_ctx: int = 500,
              seed: int = 0, device: Any = "cpu", max_elems: int = 2 ** 23) -> np.ndarray:
    """Squared errors ``(f - tau)^2`` of frozen heads on common fresh contexts.

    Parameters
    ----------
    beta, b : array_like, shape ``(P,)``, finite.
    N : context size.
    taus : fixed thresholds in (0, 1).
    n_ctx : contexts per threshold.
    seed : the contexts' seed (:func:`fresh_contexts`).
    device : where to evaluate.
    max_elems : elements evaluated at once (heads are processed in chunks of this size).

    Returns
    -------
    np.ndarray, shape ``(P, len(taus), n_ctx)``
    """
    be = np.atleast_1d(np.asarray(beta, float))
    bb = np.atleast_1d(np.asarray(b, float))
    if be.ndim != 1 or be.shape != bb.shape or not (np.all(np.isfinite(be))
                                                    and np.all(np.isfinite(bb))):
        raise ValueError("beta and b must be finite 1-d arrays of the same length")
    N = check_int("N", N, minimum=1)
    n_ctx = check_int("n_ctx", n_ctx, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    t = check_grid("taus", list(taus), kind="real", minimum=1e-9, maximum=1 - 1e-9)
    dev = resolve_device(device)
    tt = torch.tensor(t, dtype=DEFAULT_DTYPE, device=dev)
    x, y = fresh_contexts(N, tt, n_ctx, seed=seed)
    per = max(1, max_elems // (len(t) * n_ctx * N))
    out = np.empty((be.size, len(t), n_ctx))
    for p0 in range(0, be.size, per):
        sl = slice(p0, min(be.size, p0 + per))
        B = torch.tensor(be[sl], dtype=DEFAULT_DTYPE, device=dev)[:, None, None]
        Bb = torch.tensor(bb[sl], dtype=DEFAULT_DTYPE, device=dev)[:, None, None]
        f = estimate(x, y, B, Bb)  # (p, KT, n_ctx)
        out[sl] = ((f - tt[None, :, None]) ** 2).cpu().numpy()
    return out


def head_law_grid(betas: Sequence[float], Ns: Sequence[int], *, n_ctx: int, seed: int = 0,
                  taus: Sequence[float] = FIXED_TAUS, prior: Prior = DEFAULT_PRIOR,
                  device: Any = "cpu") -> np.ndarray:
    """Squared errors of the head at the population's calibrated label score on a grid (cached).

    Parameters
    ----------
    betas : sequence of float, length ``B``
        The scales of the grid.
    Ns : sequence of int, length ``K``
        The context sizes of the grid.
    n_ctx : int
        Fresh contexts per cell.
    seed : int
        Seed of the contexts.
    taus : sequence of float
        The thresholds averaged over.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    device : str or torch.device
        Where to compute.

    Returns
    -------
    np.ndarray, shape ``(len(betas), len(Ns), n_ctx)``.
    """
    hb = np.asarray(check_grid("betas", list(betas), kind="real", minimum=1e-9), float)
    hN = check_grid("Ns", list(Ns), kind="int")
    tau_lo, tau_hi = as_prior(prior).as_tuple()

    def compute() -> dict[str, np.ndarray]:
        c = population_path(hb, prior)["c"].numpy()
        sq = [sq_errors(hb, c * hb, N, taus=taus, n_ctx=n_ctx, seed=seed, device=device)
              for N in hN]
        return {"sq": np.stack(sq, 1).mean(2)}

    cfg = {"betas": hb.tolist(), "Ns": hN, "taus": list(taus), "n_ctx": n_ctx, "seed": seed,
           "prior": [tau_lo, tau_hi]}
    return remember("head_law_grid", cfg, compute)["sq"]


# ------------------------------------------------------------------------------- two-term law
def _law(theta: np.ndarray, lx: np.ndarray, lN: np.ndarray) -> np.ndarray:
    la, p, lb, q = theta
    return np.logaddexp(la - 2 * p * lx, lb - 2 * q * lN)


def fit_two_term(x: Any, N: Any, y2: Any) -> dict[str, float]:
    """Fit ``y2 = A x^(-2p) + B N^(-2q)`` by least squares on ``log y2``.

    ``A, B > 0``; ``p, q`` in ``[0, 4]``; the best of four starts.

    Parameters
    ----------
    x, N, y2 : array_like, shape ``(K,)``, ``K >= 4``
        The two variables and the mean squared error, finite and positive.

    Returns
    -------
    dict
        ``{"A", "p", "B", "q"}`` (floats).
    """
    from scipy.optimize import least_squares

    x, N, y2 = (np.asarray(v, float).ravel() for v in (x, N, y2))
    if not (x.shape == N.shape == y2.shape) or x.size < 4:
        raise ValueError("x, N, y2 must have the same length >= 4")
    if not all(np.all(np.isfinite(v) & (v > 0)) for v in (x, N, y2)):
        raise ValueError("x, N and y2 must be finite and positive")
    lx, lN, ly = np.log(x), np.log(N), np.log(y2)
    best = None
    for p0, q0 in ((1.0, 1.0), (0.5, 0.5), (1.5, 1.0), (1.0, 1.5)):
        th0 = np.array([ly.max() + 2 * p0 * lx.min(), p0, ly.max() + 2 * q0 * lN.min(), q0])
        r = least_squares(lambda th: _law(th, lx, lN) - ly, th0,
                          bounds=([-60, 0, -60, 0], [60, 4, 60, 4]))
        if best is None or r.cost < best.cost:
            best = r
    la, p, lb, q = best.x
    return {"A": float(np.exp(la)), "p": float(p), "B": float(np.exp(lb)), "q": float(q)}


def _fit_vector(x: np.ndarray, N: np.ndarray, y2: np.ndarray) -> np.ndarray:
    """:func:`fit_two_term` as ``[A, p, B, q]`` (NaN where a cell is not positive)."""
    if not np.all(np.isfinite(y2) & (y2 > 0)):
        return np.full(4, np.nan)
    f = fit_two_term(x, N, y2)
    return np.array([f["A"], f["p"], f["B"], f["q"]])


def _estimates(fit: np.ndarray, reps: np.ndarray, level: float, n_boot: int,
               n_missing: int = 0, why_missing: str = "") -> dict[str, Estimate]:
    """``{"A", "p", "B", "q"}`` from the fit and its replicates (percentile intervals, widened to
    contain the point estimate), each counting the replicates it leaves out: ``n_missing`` never
    made (``why_missing``) and those whose refit is not finite."""
    out = {}
    for j, k in enumerate(("A", "p", "B", "q")):
        lo, hi = interval(reps[:, j], level)
        v = float(fit[j])
        n_bad = int((~np.isfinite(reps[:, j])).sum()) - n_missing
        why = "; ".join(w for w in (why_missing * bool(n_missing),
                                    f"{n_bad} refits not finite" * bool(n_bad)) if w)
        out[k] = Estimate(v, float(min(lo, v)), float(max(hi, v)), "bootstrap", level, None,
                          n_boot - n_missing - n_bad, n_missing + n_bad, why)
    return out


def bootstrap_two_term(x: Any, N: Any, sq: Any, *, n_boot: int = 200, seed: int = 0,
                       level: float = 0.95) -> dict[str, Estimate]:
    """:func:`fit_two_term` of the mean squared error of each grid cell, with a bootstrap over
    units.

    Parameters
    ----------
    x, N : shape ``(G,)``: the grid cells.
    sq : shape ``(G, U)``: squared errors per cell and independent unit (context, or run x context);
        units are resampled jointly across cells (common random numbers stay paired), through
        :func:`stumplib.core.stats.resample`.
    n_boot, seed, level : resamples, seed, interval level.

    Returns
    -------
    ``{"p", "q", "A", "B"}`` as :class:`~stumplib.core.stats.Estimate` (percentile bootstrap).
    """
    sq = np.asarray(sq, float)
    if sq.ndim != 2 or sq.shape[1] < 2:
        raise ValueError("sq must have shape (G, U) with U >= 2 units")
    n_boot = check_int("n_boot", n_boot, minimum=10)
    x, N = np.asarray(x, float).ravel(), np.asarray(N, float).ravel()
    fit = _fit_vector(x, N, sq.mean(1))
    reps = resample(sq.T, lambda s: _fit_vector(x, N, s.mean(0)), n_boot=n_boot, seed=seed)
    return _estimates(fit, reps, level, n_boot)


def head_mse(beta: Any, N: Any, head: dict[str, float]) -> np.ndarray:
    """The frozen head's law ``A_h beta^(-2p) + B_h N^(-2q)`` (mean squared error).

    Parameters
    ----------
    beta, N : array_like, broadcast against each other.
    head : ``{"A", "p", "B", "q"}`` (e.g. :func:`fit_two_term` of measurement 1).

    Returns
    -------
    np.ndarray of the broadcast shape.
    """
    beta, N = np.asarray(beta, float), np.asarray(N, float)
    return head["A"] * beta ** (-2 * head["p"]) + head["B"] * N ** (-2 * head["q"])


def _stop_cells(sq_runs: Sequence[np.ndarray], run_idx: Sequence[np.ndarray] | None,
                ctx_idx: np.ndarray | None) -> np.ndarray:
    """Mean squared error per (shape, N) over the chosen runs and contexts, shape ``(P, K)``."""
    out = []
    for i, s in enumerate(sq_runs):  # s: (runs, K, contexts)
        r = s if run_idx is None else s[run_idx[i]]
        r = r if ctx_idx is None else r[:, :, ctx_idx]
        out.append(r.mean((0, 2)))
    return np.stack(out)


def bootstrap_stop_law(mn: Any, Ns: Any, sq_runs: Sequence[np.ndarray], beta_star: Any,
                       beta_boot: Any, head: dict[str, float], *, n_boot: int = 200,
                       seed: int = 0, level: float = 0.95, worst: bool = False
                       ) -> dict[str, Estimate]:
    """The two-term law of the error at the certified stop, with an interval that holds every
    source of uncertainty: the certified scales, the trained runs and the fresh contexts.

    Each replicate (i) resamples the fresh contexts (shared by all cells, so paired), (ii) resamples
    the trained runs of every shape, and (iii) moves every shape's stop to a bootstrap replicate
    ``beta*_b`` of its certified scale (corpora resampled, ``beta*`` re-derived), carrying the
    error along the frozen head's law: the cell's mean squared error is multiplied by
    ``head_mse(beta*_b, N) / head_mse(beta*, N)``. Then :func:`fit_two_term` is refitted.

    Parameters
    ----------
    mn : shape ``(P,)``: ``m ∧ n`` per shape.
    Ns : shape ``(K,)``: the fresh-context sizes.
    sq_runs : ``P`` arrays of shape ``(R_i, K, U)``: squared errors per run, ``N`` and context
        (``R_i >= 1`` runs; the same ``U`` contexts everywhere).
    beta_star : shape ``(P,)``: the certified scales.
    beta_boot : shape ``(B, P)``: replicates of the certified scales.
        Replicate ``b`` of the law uses the ``b``-th row of ``beta_boot`` that is finite and
        positive at every shape, each row once: with fewer such rows than ``n_boot`` the law has
        fewer replicates, and each estimate counts the missing ones (``n_dropped``, ``dropped``).
    head : ``{"A", "p", "B", "q"}`` of the frozen head's law (:func:`fit_two_term` on
        measurement 1).
    n_boot : replicates asked for (>= 10).
    seed : seed of the context and run resamples.
    level : the intervals' coverage.
    worst : fit only the worst shape at each ``m ∧ n`` (the largest mean squared error at the
        largest ``N``, where the ``m ∧ n`` term dominates), chosen again in every replicate
        (:func:`stumplib.book.studies.certified.worst_per_value`): the statistic of an upper bound in
        ``m ∧ n``. ``False``: every shape.

    Returns
    -------
    ``{"p", "q", "A", "B"}`` as :class:`~stumplib.core.stats.Estimate` (``n``: the replicates
    used; ``n_dropped`` and ``dropped``: those left out and why).
    """
    mn, Ns = np.asarray(mn, float).ravel(), np.asarray(Ns, float).ravel()
    bs, bb = np.asarray(beta_star, float).ravel(), np.asarray(beta_boot, float)
    P, K = mn.size, Ns.size
    if len(sq_runs) != P or bs.size != P or bb.ndim != 2 or bb.shape[1] != P:
        raise ValueError("sq_runs, beta_star and beta_boot must have one entry (column) per shape")
    if any(np.ndim(s) != 3 or np.shape(s)[1] != K for s in sq_runs):
        raise ValueError("each sq_runs[i] must have shape (runs, len(Ns), contexts)")
    U = {np.shape(s)[2] for s in sq_runs}
    if len(U) != 1 or min(U) < 2:
        raise ValueError("every shape needs the same number (>= 2) of contexts")
    n_boot = check_int("n_boot", n_boot, minimum=10)
    X, NN = np.meshgrid(mn, Ns, indexing="ij")

    def fit_cells(cells: np.ndarray) -> np.ndarray:
        if not worst:
            return _fit_vector(X.ravel(), NN.ravel(), cells.ravel())
        xs, idx = worst_per_value(mn, cells[:, -1], worst="max")
        return _fit_vector(np.repeat(xs, K), np.tile(Ns, xs.size), cells[idx].ravel())

    fit = fit_cells(_stop_cells(sq_runs, None, None))
    ctx = resample_indices(U.pop(), n_boot, seed)
    runs = [resample_indices(len(s), n_boot, seed + 1 + i) for i, s in enumerate(sq_runs)]
    rows = np.flatnonzero(np.all(np.isfinite(bb) & (bb > 0), axis=1))  # usable beta* replicates
    n_use = min(n_boot, rows.size)  # each usable row once: no reuse
    reps = np.full((n_boot, 4), np.nan)
    for b in range(n_use):
        bsb = bb[rows[b]]  # independent of the run and context draws: pair by index
        move = head_mse(bsb[:, None], Ns[None, :], head) / head_mse(bs[:, None], Ns[None, :], head)
        cells = _stop_cells(sq_runs, [r[b] for r in runs], ctx[b]) * move
        reps[b] = fit_cells(cells)
    why = (f"{n_boot - n_use} of {n_boot} replicates without a beta* replicate: only "
           f"{rows.size} of {bb.shape[0]} are finite at every shape")
    return _estimates(fit, reps, level, n_boot, n_boot - n_use, why)


# ------------------------------------------------------------------------------- the bound
def bound(mn: Any, N: Any) -> np.ndarray:
    """The abstract's rate without constants or logs: ``(m ∧ n)^-1 + N^-1``.

    Parameters
    ----------
    mn, N : array_like
        ``m ∧ n`` and the context size, finite and positive (broadcast).

    Returns
    -------
    np.ndarray of the broadcast shape
    """
    mn, N = np.asarray(mn, float), np.asarray(N, float)
    if not (np.all(np.isfinite(mn) & (mn > 0)) and np.all(np.isfinite(N) & (N > 0))):
        raise ValueError("mn and N must be finite and > 0")
    return 1.0 / mn + 1.0 / N


def bound_form_spread(mn: Any, N: Any, err: Any) -> tuple[float, float, float]:
    """Fit ``err ≈ A1 / mn + B1 / N`` (least squares on relative errors, ``A1, B1 >= 0``).

    Parameters
    ----------
    mn, N, err : array_like, shape ``(K,)``
        The grid cells and their errors.

    Returns
    -------
    (spread, A1, B1) : tuple of float
        ``spread`` is the largest over the smallest ``err / (A1/mn + B1/N)``.
    """
    from scipy.optimize import nnls

    mn, N, e = (np.asarray(v, float).ravel() for v in (mn, N, err))
    M = np.stack([1 / mn, 1 / N], 1) / e[:, None]
    (A1, B1), _ = nnls(M, np.ones_like(e))
    r = e / (A1 / mn + B1 / N)
    return float(r.max() / r.min()), float(A1), float(B1)
