"""Frozen estimators: GD stopped at a scale, frozen, and measured on fresh contexts (chapter 4).

The abstract of the stump paper (arXiv:2610.07074) bounds the error of the estimator that GD
produces on ``m`` tasks of ``n`` examples, once frozen, on a fresh context of ``N`` examples with a
fixed interior threshold, by ``Õ((m ∧ n)^-1 + N^-1)``. This module holds

- :func:`sq_errors`: squared errors of frozen heads ``(beta, b)`` on the same fresh contexts (common
  random numbers), per threshold and context; the estimator is :func:`stumplib.stump.model.estimate`;
- :func:`fit_two_term`, :func:`bootstrap_two_term`: the law ``y^2 = A x^(-2p) + B N^(-2q)`` fitted in
  log space, with a bootstrap over independent units (contexts, runs);
- :func:`train_staged`: GD on corpora of one shape from a start ``beta0`` that records each run at
  the first step where ``beta >= beta_stop`` (the certified stop) and continues it to ``beta_end``;
  the step is reset to ``frac`` times the population stability limit at the start, at ``beta_stop``
  and at each doubling of ``beta`` (a piecewise-constant schedule). It is one call of
  :func:`stumplib.stump.trainer.train_gd` (the book's only training loop) with the schedule as
  ``RunConfig.lr_marks``, the log-spaced scales as ``RunConfig.record_scales`` and ``beta_end`` as the
  stop scale; the corpora are the trainer's (same seed, same corpus) and the stop is exact, to the step;
- :func:`bound_form_spread`: the spread of ``error / (A1 (m∧n)^-1 + B1 N^-1)`` with ``A1, B1`` fitted.

**Error.** For a fixed threshold ``tau`` the error is the root-mean-square over fresh contexts of
``f - tau``; over several thresholds, the root of the mean MSE.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE, make_generator, resolve_device
from stumplib.stump.model import estimate
from stumplib.core.stats import Estimate, interval, resample, resample_indices
from stumplib.stump.certified import worst_per_value
from stumplib.stump.tasks import labels
from stumplib.stump.trainer import RunConfig, train_gd
from stumplib.stump.transfer import population_path, step_size_limit
from stumplib.core.memo import remember
from stumplib.core.validation import check_grid, check_int, check_prior, check_real

__all__ = ["FIXED_TAUS", "fresh_contexts", "sq_errors", "fit_two_term", "bootstrap_two_term",
           "head_mse", "bootstrap_stop_law", "gain_past_stop", "law_kept_past_stop", "StagedRuns", "train_staged",
           "stage_marks", "train_to_certified_stop", "stop_errors", "end_errors", "bound",
           "bound_form_spread", "head_law_grid"]

#: fixed interior thresholds (inside the prior [0.2, 0.8], away from its upper end)
FIXED_TAUS = (0.3, 0.4, 0.5)

#: :func:`train_staged` counts a run as diverged only on non-finite parameters, ``beta <= 0`` or
#: ``|beta|, |b|`` above :data:`stumplib.stump.trainer.MAX_PARAM`, not on its loss growing (the loss is
#: at most 1 and the initial loss at least ~1e-8 at the scales of this book)
_NO_LOSS_LIMIT = 1e12


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
    if be.ndim != 1 or be.shape != bb.shape or not (np.all(np.isfinite(be)) and np.all(np.isfinite(bb))):
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
    """:func:`fit_two_term` of the mean squared error of each grid cell, with a bootstrap over units.

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
    head : ``{"A", "p", "B", "q"}`` of the frozen head's law (:func:`fit_two_term` on measurement 1).
    n_boot : replicates asked for (>= 10).
    seed : seed of the context and run resamples.
    level : the intervals' coverage.
    worst : fit only the worst shape at each ``m ∧ n`` (the largest mean squared error at the
        largest ``N``, where the ``m ∧ n`` term dominates), chosen again in every replicate
        (:func:`stumplib.stump.certified.worst_per_value`): the statistic of an upper bound in
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


def gain_past_stop(stop_err: Sequence[np.ndarray], end_err: Sequence[np.ndarray], *,
                   n_boot: int = 400, seed: int = 0, level: float = 0.95) -> Estimate:
    """The median over shapes of ``mean(stop error) / mean(end error)`` (runs continued past their
    certified stop), with a bootstrap over the runs of every shape (paired: a run's two errors
    stay together).

    Parameters
    ----------
    stop_err, end_err : one array ``(R_i,)`` per shape: each run's error at the stop and at the end.
    n_boot : resamples (>= 10).
    seed : seed of the resamples (shape ``i`` uses ``seed + i``).
    level : the interval's coverage.

    Returns
    -------
    Estimate of kind ``"bootstrap"``.
    """
    if len(stop_err) != len(end_err) or not stop_err:
        raise ValueError("stop_err and end_err must hold one array per shape, at least one")
    pairs = [(np.asarray(a, float).ravel(), np.asarray(b, float).ravel())
             for a, b in zip(stop_err, end_err)]
    if any(a.shape != b.shape or a.size < 1 for a, b in pairs):
        raise ValueError("stop_err[i] and end_err[i] must be paired arrays of at least one run")
    n_boot = check_int("n_boot", n_boot, minimum=10)
    point = float(np.median([a.mean() / b.mean() for a, b in pairs]))
    per = []
    for i, (a, b) in enumerate(pairs):
        idx = resample_indices(a.size, n_boot, seed + i)
        per.append(a[idx].mean(1) / b[idx].mean(1))
    lo, hi = interval(np.median(np.stack(per, 1), axis=1), level)
    return Estimate(point, float(min(lo, point)), float(max(hi, point)), "bootstrap", level, None,
                    n_boot)


def law_kept_past_stop(stop_sq: Sequence[np.ndarray], end_sq: Sequence[np.ndarray],
                       stop_beta: Sequence[np.ndarray], end_beta: Sequence[np.ndarray], *,
                       n_boot: int = 400, seed: int = 0, level: float = 0.95) -> Estimate:
    """Whether GD keeps the head's law past its certified stop: the median over shapes of
    ``mean(beta_end x RMSE_end) / mean(beta_stop x RMSE_stop)`` over runs (1 when the error stays
    at ``1/beta``), with a bootstrap over runs (per shape) *and* fresh contexts (shared by every
    run and both ends, so the pairing is kept): the context draw moves the ratio from one seed to
    the next as much as the runs do.

    Parameters
    ----------
    stop_sq, end_sq : one array ``(R_i, U)`` per shape: squared errors per run and context at the
        stop and at the end (the same ``U`` contexts).
    stop_beta, end_beta : one array ``(R_i,)`` per shape: each run's scale at the stop and at the end.
    n_boot : int
        Bootstrap resamples (at least 10); each redraws the contexts once (shared by every shape,
        run and both ends) and, per shape, the runs.
    seed : int
        Seed of the resampling: the contexts use ``seed``, shape ``i``'s runs ``seed + 1 + i``.
    level : float
        Coverage of the percentile interval, in (0, 1) (default 0.95); the interval is widened to
        contain the point estimate.

    Returns
    -------
    Estimate of kind ``"bootstrap"``.
    """
    if not (len(stop_sq) == len(end_sq) == len(stop_beta) == len(end_beta)) or not stop_sq:
        raise ValueError("stop_sq, end_sq, stop_beta and end_beta must hold one entry per shape")
    S_, E_ = [np.asarray(a, float) for a in stop_sq], [np.asarray(a, float) for a in end_sq]
    bS, bE = [np.asarray(a, float).ravel() for a in stop_beta], [np.asarray(a, float).ravel()
                                                                 for a in end_beta]
    if any(a.ndim != 2 or a.shape != b.shape or a.shape[0] != x.size or x.size != y.size
           for a, b, x, y in zip(S_, E_, bS, bE)) or len({a.shape[1] for a in S_}) != 1:
        raise ValueError("each shape needs (runs, contexts) squared errors at both ends, the same "
                         "contexts everywhere, and one scale per run")
    n_boot = check_int("n_boot", n_boot, minimum=10)

    def stat(ctx, runs):
        out = []
        for i, (a, b, x, y) in enumerate(zip(S_, E_, bS, bE)):
            r = slice(None) if runs is None else runs[i]
            c = slice(None) if ctx is None else ctx
            stop = (x[r] * np.sqrt(a[r][:, c].mean(-1))).mean()
            out.append((y[r] * np.sqrt(b[r][:, c].mean(-1))).mean() / stop)
        return float(np.median(out))

    point = stat(None, None)
    ctx = resample_indices(S_[0].shape[1], n_boot, seed)
    runs = [resample_indices(x.size, n_boot, seed + 1 + i) for i, x in enumerate(bS)]
    reps = np.array([stat(ctx[b], [r[b] for r in runs]) for b in range(n_boot)])
    lo, hi = interval(reps, level)
    return Estimate(point, float(min(lo, point)), float(max(hi, point)), "bootstrap", level, None,
                    n_boot)


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


# ------------------------------------------------------------------------------- staged GD
def stage_marks(beta0: float, beta_stop: float, beta_end: float) -> np.ndarray:
    """The scales where the step is reset.

    Parameters
    ----------
    beta0, beta_stop, beta_end : float
        The start, the certified stop and the end scale.

    Returns
    -------
    np.ndarray
        Every doubling of ``beta0`` below ``beta_end``, plus ``beta_stop`` and ``beta_end``
        (sorted, unique).
    """
    beta0 = check_real("beta0", beta0, low=0.0, low_open=True)
    beta_stop = check_real("beta_stop", beta_stop, low=beta0, low_open=True)
    beta_end = check_real("beta_end", beta_end, low=beta_stop)
    k = int(np.floor(np.log2(beta_end / beta0) + 1e-9))
    marks = [beta0 * 2.0 ** j for j in range(1, k + 1)] + [beta_stop, beta_end]
    return np.unique(np.round(np.asarray(marks, float), 12))


@dataclass(frozen=True)
class StagedRuns:
    """The runs of :func:`train_staged`: ``S`` corpora of one shape, ``J`` marks, ``L`` log scales.

    Attributes
    ----------
    marks, lr_marks : shape ``(J,)``: the marks of :func:`stage_marks` and the step used after each.
    stop_index : the index of ``beta_stop`` (the certified stop) in ``marks``.
    mark_step, mark_beta, mark_b : shape ``(S, J)``: the first step at or past each mark and the
        state there (``-1`` / NaN where not reached).
    log_scales : shape ``(L,)``; log_step, log_beta, log_b : shape ``(S, L)``: the state at the first
        step past each log-spaced scale (``-1`` / NaN where not reached).
    diverged : shape ``(S,)``: runs stopped for non-finite, too large or negative parameters.
    final_beta, final_b : shape ``(S,)``: the state at the end; NaN for a diverged run.
    final_step : the step at which the loop ended (the same for every run: the last run's arrival
        at ``beta_end``, or the step cap).
    """

    marks: np.ndarray
    lr_marks: np.ndarray
    stop_index: int
    mark_step: np.ndarray
    mark_beta: np.ndarray
    mark_b: np.ndarray
    log_scales: np.ndarray
    log_step: np.ndarray
    log_beta: np.ndarray
    log_b: np.ndarray
    diverged: np.ndarray
    final_beta: np.ndarray
    final_b: np.ndarray
    final_step: int

    @property
    def stop_step(self) -> np.ndarray:
        """shape ``(S,)``: the first step at or past ``beta_stop`` (``-1`` where not reached)."""
        return self.mark_step[:, self.stop_index]

    @property
    def kept(self) -> np.ndarray:
        """shape ``(S,)``: the runs that did not diverge (every per-run result below keeps these)."""
        return ~np.asarray(self.diverged, bool)

    def at_stop(self) -> tuple[np.ndarray, np.ndarray]:
        """The state frozen at the certified stop (or the last state where a run met the step cap
        first); diverged runs are left out.

        Returns
        -------
        beta, b : np.ndarray, each of shape ``(kept runs,)``
        """
        ok = self.stop_step >= 0
        j = self.stop_index
        beta = np.where(ok, self.mark_beta[:, j], self.final_beta)
        b = np.where(ok, self.mark_b[:, j], self.final_b)
        return beta[self.kept], b[self.kept]

    def at_end(self) -> tuple[np.ndarray, np.ndarray]:
        """The state at the end of the runs that did not diverge.

        Returns
        -------
        beta, b : np.ndarray, each of shape ``(kept runs,)``
        """
        return self.final_beta[self.kept], self.final_b[self.kept]


def train_staged(m: int, n: int, seeds: Sequence[int], *, beta0: float, beta_stop: float,
                 beta_end: float, frac: float = 0.3, tau_lo: float = 0.2, tau_hi: float = 0.8,
                 max_steps: int = 200_000, log_per_octave: int = 4, device: Any = "cpu",
                 steps: int | None = None) -> StagedRuns:
    """GD on ``len(seeds)`` corpora of shape ``(m, n)``, each frozen at ``beta_stop`` and continued.

    Every run starts at ``(beta0, c*(beta0) beta0)`` (the population's calibrated label score) with
    step ``frac * 2/lambda_max(beta0)`` (the population stability limit, see
    :func:`stumplib.stump.transfer.step_size_limit`). At the first step where its ``beta`` reaches a mark of
    :func:`stage_marks` the state is recorded and the step reset to ``frac`` times the limit at that
    mark; ``beta_stop`` is the certified stop, ``beta_end`` the end of the run. The log-spaced scales
    are ``log_per_octave`` per octave from ``beta0``.

    Parameters
    ----------
    m, n : the corpus shape.
    seeds : one corpus per seed (drawn as the trainer draws it).
    beta0, beta_stop, beta_end : the start, the certified stop and the end scale.
    frac : the step as a fraction of the population stability limit, in (0, 1].
    tau_lo, tau_hi : the prior.
    max_steps : the step cap.
    log_per_octave : recorded scales per octave.
    device : where to train.
    steps : optional, caps every run at that many steps (the token check of the ``full`` profile).

    Returns
    -------
    StagedRuns

    Notes
    -----
    The runs are one :func:`stumplib.stump.trainer.train_gd` call (the fast kernel) with
    ``RunConfig.lr_marks`` = ``(marks, lr_marks)``, ``record_scales = log_scales`` and
    ``beta_stop = beta_end``. A run counts as diverged on non-finite or too large parameters or
    ``beta < 0`` (checked every 64 steps and at every mark).
    """
    m, n = check_int("m", m), check_int("n", n)
    seeds = [check_int(f"seeds[{i}]", s, minimum=0) for i, s in enumerate(seeds)]
    if not seeds:
        raise ValueError("seeds must be a non-empty list")
    frac = check_real("frac", frac, low=0.0, high=1.0, low_open=True)
    tau_lo, tau_hi = check_prior(tau_lo, tau_hi)
    log_per_octave = check_int("log_per_octave", log_per_octave, minimum=1)
    marks = stage_marks(beta0, beta_stop, beta_end)
    lim = step_size_limit(np.concatenate([[beta0], marks]), tau_lo, tau_hi)
    lr_marks = frac * lim[1:]
    c0 = float(population_path([beta0], tau_lo, tau_hi)["c"][0])
    nL = int(np.floor(np.log2(beta_end / beta0) * log_per_octave + 1e-9))
    log_scales = beta0 * 2.0 ** (np.arange(1, nL + 1) / log_per_octave)
    cap = max_steps if steps is None else min(max_steps, check_int("steps", steps))
    # the last mark is beta_end, where the run stops (its step size is never used)
    configs = [RunConfig(m, n, s, lr=frac * float(lim[0]), beta0=float(beta0), b0=c0 * float(beta0),
                         tau_lo=tau_lo, tau_hi=tau_hi, beta_stop=float(marks[-1]),
                         lr_marks=tuple(zip(marks.tolist(), lr_marks.tolist())),
                         record_scales=tuple(log_scales.tolist()) or None) for s in seeds]
    res = train_gd(configs, cap, n_records=2, device=device, dtype=DEFAULT_DTYPE, progress=False,
                   check_every=64, max_loss_ratio=_NO_LOSS_LIMIT, grouping="shape", on_diverge="stop")
    S = len(seeds)
    diverged = res.diverged_at >= 0
    if nL:
        log_step, log_beta, log_b = res.scale_step, res.scale_beta, res.scale_b
    else:
        log_step = np.full((S, 0), -1, np.int64)
        log_beta, log_b = np.full((S, 0), np.nan), np.full((S, 0), np.nan)
    return StagedRuns(marks=marks, lr_marks=lr_marks,
                      stop_index=int(np.flatnonzero(np.isclose(marks, beta_stop))[0]),
                      mark_step=res.mark_step, mark_beta=res.mark_beta, mark_b=res.mark_b,
                      log_scales=log_scales, log_step=log_step, log_beta=log_beta, log_b=log_b,
                      diverged=diverged, final_beta=np.where(diverged, np.nan, res.final_beta),
                      final_b=np.where(diverged, np.nan, res.final_b),
                      final_step=int(res.last_step))


# ------------------------------------------------------------------------------- chapter 4 runs
def head_law_grid(betas: Sequence[float], Ns: Sequence[int], *, n_ctx: int, seed: int = 0,
                  taus: Sequence[float] = FIXED_TAUS, tau_lo: float = 0.2, tau_hi: float = 0.8,
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
    tau_lo, tau_hi : float
        The prior's ends (they set the population's calibrated label score ``c*(beta)``).
    device : str or torch.device
        Where to compute.

    Returns
    -------
    np.ndarray, shape ``(len(betas), len(Ns), n_ctx)``.
    """
    hb = np.asarray(check_grid("betas", list(betas), kind="real", minimum=1e-9), float)
    hN = check_grid("Ns", list(Ns), kind="int")
    tau_lo, tau_hi = check_prior(tau_lo, tau_hi)

    def compute() -> dict[str, np.ndarray]:
        c = population_path(hb, tau_lo, tau_hi)["c"].numpy()
        sq = [sq_errors(hb, c * hb, N, taus=taus, n_ctx=n_ctx, seed=seed, device=device)
              for N in hN]
        return {"sq": np.stack(sq, 1).mean(2)}

    cfg = {"betas": hb.tolist(), "Ns": hN, "taus": list(taus), "n_ctx": n_ctx, "seed": seed,
           "prior": [tau_lo, tau_hi]}
    return remember("head_law_grid", cfg, compute)["sq"]


def train_to_certified_stop(shapes: Sequence[tuple[int, int]], beta_star: Sequence[float],
                            n_seeds: Sequence[int], *, continue_to: Sequence[float | None],
                            seed: int = 0, frac: float = 0.3, tau_lo: float = 0.2,
                            tau_hi: float = 0.8, max_steps: int = 200_000,
                            steps: int | None = None, device: Any = "cpu") -> list[StagedRuns]:
    """:func:`train_staged` for every shape: ``n_seeds[i]`` corpora from ``beta*/4``, frozen at
    ``beta*`` and continued to ``continue_to[i]`` (``None``: stop at ``beta*``). Cached per shape.

    Parameters
    ----------
    shapes : ``(m, n)`` pairs.
    beta_star : the certified stop of each.
    n_seeds : corpora per shape.
    continue_to : per shape, the scale to continue to, or ``None``.
    seed, frac, tau_lo, tau_hi, max_steps, steps, device : see :func:`train_staged`.

    Returns
    -------
    list of :class:`StagedRuns`, one per shape.
    """
    if not (len(shapes) == len(beta_star) == len(n_seeds) == len(continue_to)):
        raise ValueError("shapes, beta_star, n_seeds and continue_to must have the same length")
    out = []
    for i, ((m, n), bs, S, end) in enumerate(zip(shapes, beta_star, n_seeds, continue_to)):
        bs = float(bs)
        end = bs if end is None else float(end)
        seeds = [seed + 1000 * i + s for s in range(check_int(f"n_seeds[{i}]", S))]

        def compute(m=m, n=n, bs=bs, end=end, seeds=seeds) -> StagedRuns:
            return train_staged(m, n, seeds, beta0=bs / 4, beta_stop=bs, beta_end=end, frac=frac,
                                tau_lo=tau_lo, tau_hi=tau_hi, device=device, steps=steps,
                                max_steps=max_steps)

        cfg = {"m": m, "n": n, "seeds": seeds, "beta_star": bs, "beta_end": end, "frac": frac,
               "prior": [tau_lo, tau_hi], "steps": steps, "cap": max_steps}
        out.append(remember(f"staged_runs_{m}x{n}", cfg, compute))
    return out


def stop_errors(runs: Sequence[StagedRuns], Ns: Sequence[int], *, n_ctx: int, seed: int = 0,
                taus: Sequence[float] = FIXED_TAUS, extra_tau: float = 0.7,
                device: Any = "cpu") -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Squared errors of every run frozen at its stop (:meth:`StagedRuns.at_stop`: diverged runs
    left out) on common fresh contexts (cached).

    Parameters
    ----------
    runs : :func:`train_to_certified_stop` results.
    Ns : context sizes.
    n_ctx, seed : fresh contexts per threshold and ``N``, and their seed.
    taus : thresholds pooled.
    extra_tau : one threshold kept apart.
    device : where to evaluate.

    Returns
    -------
    (sq, sq_extra): per shape, arrays ``(kept runs, len(Ns), n_ctx)``: the mean over ``taus`` and
    the error at ``extra_tau`` alone (near the prior's upper end, reported separately).
    """
    T = list(taus) + [extra_tau]

    def compute() -> dict[str, list[np.ndarray]]:
        out: dict[str, list[np.ndarray]] = {"sq": [], "extra": []}
        for r in runs:
            sq = np.stack([sq_errors(*r.at_stop(), int(N), taus=T, n_ctx=n_ctx, seed=seed,
                                     device=device) for N in Ns], 1)  # (run, N, tau, ctx)
            out["sq"].append(sq[:, :, :-1].mean(2))
            out["extra"].append(sq[:, :, -1])
        return out

    cfg = {"stops": [r.at_stop()[0].tolist() for r in runs], "Ns": [int(N) for N in Ns],
           "n_ctx": n_ctx, "seed": seed, "taus": T}
    d = remember("stop_errors", cfg, compute)
    return d["sq"], d["extra"]


def end_errors(runs: Sequence[StagedRuns], N: int, *, n_ctx: int, n_ctx_path: int, seed: int = 0,
               taus: Sequence[float] = FIXED_TAUS, device: Any = "cpu") -> list[dict]:
    """The error at context size ``N`` along each continued run (at its log-spaced scales,
    ``n_ctx_path`` contexts) and at its end (``n_ctx`` contexts), cached; diverged runs left out.

    Parameters
    ----------
    runs : continued :func:`train_staged` results.
    N : the context size.
    n_ctx, n_ctx_path, seed, taus, device : contexts at the end and along the path, their seed,
        the thresholds pooled, the device.

    Returns
    -------
    per shape ``{"path": (kept runs, L), "end": (kept runs,), "end_sq": (kept runs, n_ctx)}``
    (NaN where a scale was not reached); ``end_sq`` holds the squared errors at the end per context
    (mean over ``taus``), on the same contexts as :func:`stop_errors` with the same ``seed``.
    """
    def sq(beta, b, k):
        return sq_errors(beta, b, int(N), taus=taus, n_ctx=k, seed=seed, device=device).mean(1)

    def rmse(beta, b, k):
        return np.sqrt(sq(beta, b, k).mean(-1))

    def compute() -> list[dict[str, np.ndarray]]:
        out = []
        for r in runs:
            be, bb = r.log_beta[r.kept].ravel(), r.log_b[r.kept].ravel()
            ok, e = np.isfinite(be), np.full(be.size, np.nan)
            if ok.any():
                e[ok] = rmse(be[ok], bb[ok], n_ctx_path)
            end_sq = sq(*r.at_end(), n_ctx)
            out.append({"path": e.reshape(-1, r.log_beta.shape[1]),
                        "end": np.sqrt(end_sq.mean(-1)), "end_sq": end_sq})
        return out

    cfg = {"ends": [r.at_end()[0].tolist() for r in runs], "N": int(N), "n_ctx": n_ctx,
           "path": n_ctx_path, "seed": seed, "taus": list(taus), "per_context": True}
    return remember("end_errors", cfg, compute)
