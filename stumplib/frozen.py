"""Frozen estimators: train on (m, n) grids, freeze, and measure the fresh-context error.

The abstract of the stump paper (arXiv:2610.07074) bounds the error of the estimator that gradient descent produces on
``m`` pretraining tasks of ``n`` examples, once frozen, on a fresh context of ``N`` examples with a
fixed interior threshold ``tau``, by ``Õ((m ∧ n)^-1 + N^-1)``. This module

1. trains one GD run per ``(m, n, seed)`` on a grid (:func:`mn_cross_grid`, :func:`train_grid`,
   batched over seeds with :func:`stumplib.trainer.train_gd`, cached under ``results/``);
2. freezes every run under two stopping rules: (a) the end of the certified interval, the first
   recorded step at which ``beta`` reaches the certified scale ``beta*(m, n)`` of chapter 3
   (:func:`freeze_at_scale`), and (b) a fixed long step budget (the last record,
   :func:`freeze_final`);
3. evaluates all frozen estimators and the statistical baselines on the same fresh contexts
   (common random numbers), batched over estimators x thresholds x contexts
   (:func:`evaluate_frozen`);
4. summarises errors with 95% intervals over seeds (:func:`error_by_shape`, :func:`seed_interval`;
   :func:`baseline_error` for the baselines), divides them by the bound's rate (:func:`bound`), and
   selects the two regimes for the slope fits (:func:`regime_points`).

The certified scale comes from chapter 3 (``stumplib.transfer.certified_scale``) when available;
:func:`certified_scale_fallback` implements the design note's rougher definition.

**Error.** For a fixed threshold ``tau`` the error of an estimator is its root-mean-square error
over fresh contexts, ``RMSE(tau) = sqrt(E_context (f - tau)^2)``; over several fixed thresholds we
report the root of the mean MSE (the thresholds' errors are also kept separately). The bound is a
high-probability bound on ``|f - tau|``; the RMSE bounds it in probability (Chebyshev) and is the
quantity the training loss and the classical order-statistic results (``MSE ≈ 2/N^2``) use. The
mean absolute error is returned too.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from .baselines import BASELINES
from .device import DEFAULT_DTYPE, make_generator, resolve_device
from .model import _estimate_and_grad
from .population import population_loss_and_grad
from .tasks import labels
from .trainer import RunConfig, TrainResult, record_steps, train_gd
from .validation import check_choice, check_grid, check_int, check_prior, check_real

__all__ = ["FIXED_TAUS", "mn_cross_grid", "grid_configs", "train_grid", "freeze_at_scale",
           "freeze_final", "fresh_contexts", "evaluate_frozen", "seed_interval", "error_by_shape",
           "baseline_error", "bound",
           "regime_points", "certified_scale_fallback", "resolve_certified_scale",
           "certified_scales"]

#: default fixed interior thresholds (inside the prior [0.2, 0.8])
FIXED_TAUS = (0.3, 0.5, 0.7)


# --------------------------------------------------------------------------------------- grids
def mn_cross_grid(m_values: Sequence[int], n_values: Sequence[int], m_fixed: int, n_fixed: int
                  ) -> list[tuple[int, int]]:
    """A cross-shaped ``(m, n)`` design: ``m`` varied at ``n = n_fixed``, ``n`` varied at ``m = m_fixed``.

    Returns
    -------
    list of ``(m, n)`` pairs, sorted and without duplicates.
    """
    m_values = check_grid("m_values", m_values)
    n_values = check_grid("n_values", n_values)
    m_fixed = check_int("m_fixed", m_fixed)
    n_fixed = check_int("n_fixed", n_fixed)
    shapes = {(m, n_fixed) for m in m_values} | {(m_fixed, n) for n in n_values}
    return sorted(shapes)


def _check_shapes(shapes: Any) -> list[tuple[int, int]]:
    if isinstance(shapes, (str, bytes)) or not isinstance(shapes, (list, tuple)) or len(shapes) == 0:
        raise ValueError(f"shapes must be a non-empty list of (m, n) pairs; got {shapes!r}")
    out = []
    for i, s in enumerate(shapes):
        if not isinstance(s, (list, tuple)) or len(s) != 2:
            raise ValueError(f"shapes[{i}] must be an (m, n) pair of positive integers; got {s!r}")
        out.append((check_int(f"shapes[{i}].m", s[0]), check_int(f"shapes[{i}].n", s[1])))
    if len(set(out)) != len(out):
        raise ValueError("shapes must not contain duplicate (m, n) pairs")
    return out


def grid_configs(shapes: Sequence[tuple[int, int]], n_seeds: int, *, lr: float = 1e3,
                 beta0: float = 20.0, b0: float = 20.0, tau_lo: float = 0.2, tau_hi: float = 0.8,
                 seed: int = 0) -> list[RunConfig]:
    """One :class:`RunConfig` per ``(shape, seed)``, shape-major: run ``r = i * n_seeds + s``.

    Corpus seeds are ``seed + 1000 * i + s`` so that different shapes never share a corpus.
    """
    shapes = _check_shapes(shapes)
    n_seeds = check_int("n_seeds", n_seeds)
    seed = check_int("seed", seed, minimum=0)
    return [RunConfig(m, n, seed=seed + 1000 * i + s, lr=lr, beta0=beta0, b0=b0, tau_lo=tau_lo,
                      tau_hi=tau_hi).validated(f"configs[{i * n_seeds + s}]")
            for i, (m, n) in enumerate(shapes) for s in range(n_seeds)]


def train_grid(configs: Sequence[RunConfig], steps: int, *, n_records: int = 200,
               grouping: str = "shape", device: Any = "auto", dtype: torch.dtype = DEFAULT_DTYPE,
               progress: bool = True, cache: str | Path | None = None) -> TrainResult:
    """Train every run of ``configs`` for ``steps`` constant-step GD steps, in one batched call.

    A thin wrapper of :func:`stumplib.trainer.train_gd` (one call for the whole grid x seeds, runs
    grouped by shape so that no work is spent on padding) with ``on_diverge="stop"``: a run whose
    loss leaves the trainer's stability criterion is frozen and recorded as NaN from then on
    (``result.diverged_at``), the others carry on. Results are cached.

    Parameters
    ----------
    configs : list of RunConfig, length ``R``
    steps : step budget of every run (the fixed budget of stopping rule (b)).
    n_records : log-spaced records per run (dense records make stopping rule (a) precise: with
        200 records over ``10^4`` steps consecutive records differ by about 5% in step count, about
        1.2% in ``beta`` on the ``t^{1/4}`` law).
    grouping : passed to :func:`~stumplib.trainer.train_gd` (``"shape"``, ``"pad"`` or ``"auto"``).
    cache : ``.npz`` path; reloaded when it holds exactly these configs, steps and records, written
        otherwise.

    Returns
    -------
    TrainResult with runs in the order of ``configs``; ``beta, b, loss`` of shape ``(R, K)``.
    """
    if not isinstance(configs, (list, tuple)) or len(configs) == 0:
        raise ValueError("configs must be a non-empty list of RunConfig")
    if not all(isinstance(c, RunConfig) for c in configs):
        raise ValueError("configs must contain only RunConfig instances")
    configs = [c.validated(f"configs[{i}]") for i, c in enumerate(configs)]
    steps = check_int("steps", steps)
    n_records = check_int("n_records", n_records, minimum=2)
    grouping = check_choice("grouping", grouping, ("shape", "pad", "auto"))
    if cache is not None:
        hit = TrainResult.load(cache, configs, steps)
        if hit is not None and hit.beta.shape[1] == record_steps(steps, n_records).size:
            return hit
    out = train_gd(list(configs), steps, n_records=n_records, device=device, dtype=dtype,
                   progress=progress, grouping=grouping, on_diverge="stop")
    if cache is not None:
        out.save(cache)
    return out


# ------------------------------------------------------------------------------ stopping rules
def freeze_at_scale(result: TrainResult, beta_star: Any) -> dict[str, np.ndarray]:
    """Stopping rule (a): freeze each run at the end of its certified interval.

    Run ``r`` is frozen at the first recorded step ``k`` with ``beta[r, k] >= beta_star[r]`` (the
    parameters are a GD iterate, not an interpolation). If the start already satisfies it
    (``beta0 >= beta*``: an empty certified interval) that is step 0; if no record reaches
    ``beta*`` within the budget, the run is frozen at its last record and ``reached`` is False.

    Parameters
    ----------
    result : TrainResult with ``beta, b`` of shape ``(R, K)``
    beta_star : array_like, shape ``(R,)`` or scalar; finite and positive.

    Returns
    -------
    dict with ``beta, b, step`` (shape ``(R,)``), ``index`` (record index), ``reached`` (bool) and
    ``valid`` (bool: finite parameters; False for a run that diverged before its stop).
    """
    if not isinstance(result, TrainResult):
        raise ValueError(f"result must be a TrainResult; got {type(result).__name__}")
    R = result.beta.shape[0]
    bs = np.broadcast_to(np.asarray(beta_star, dtype=float), (R,))
    if not (np.all(np.isfinite(bs)) and np.all(bs > 0)):
        raise ValueError("beta_star must be finite and > 0 for every run")
    hit = result.beta >= bs[:, None]  # NaN records (a run stopped by divergence) never hit
    reached = hit.any(1)
    idx = np.where(reached, hit.argmax(1), result.beta.shape[1] - 1)
    rows = np.arange(R)
    beta, b = result.beta[rows, idx], result.b[rows, idx]
    return {"beta": beta, "b": b, "step": np.asarray(result.steps)[idx], "index": idx,
            "reached": reached, "valid": np.isfinite(beta) & np.isfinite(b)}


def freeze_final(result: TrainResult) -> dict[str, np.ndarray]:
    """Stopping rule (b): freeze each run at the end of the fixed step budget (its last record)."""
    if not isinstance(result, TrainResult):
        raise ValueError(f"result must be a TrainResult; got {type(result).__name__}")
    R, K = result.beta.shape
    beta, b = result.beta[:, -1].copy(), result.b[:, -1].copy()
    return {"beta": beta, "b": b, "step": np.full(R, int(result.steps[-1])),
            "index": np.full(R, K - 1), "reached": np.ones(R, dtype=bool),
            "valid": np.isfinite(beta) & np.isfinite(b)}


# --------------------------------------------------------------------------- fresh contexts
def fresh_contexts(N: int, taus: torch.Tensor, n_ctx: int, *, seed: int = 0
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh contexts for fixed thresholds: ``x, y`` of shape ``(len(taus), n_ctx, N)``.

    The draw depends only on ``(seed, N)``, and the same uniforms serve every threshold (common
    random numbers across thresholds and estimators).
    """
    N = check_int("N", N)
    n_ctx = check_int("n_ctx", n_ctx)
    seed = check_int("seed", seed, minimum=0)
    gen = make_generator(seed * 1_000_003 + N, taus.device)
    u = torch.rand(n_ctx, N, generator=gen, device=taus.device, dtype=taus.dtype)
    x = u.expand(taus.numel(), n_ctx, N)
    return x, labels(x, taus[:, None].expand(-1, n_ctx))


def evaluate_frozen(beta: Any, b: Any, N_grid: Sequence[int], *, taus: Sequence[float] = FIXED_TAUS,
                    n_ctx: int = 500, seed: int = 0, baselines: Sequence[str] = ("min positive",
                    "midpoint", "Bayes"), tau_lo: float = 0.2, tau_hi: float = 0.8,
                    device: Any = "auto", dtype: torch.dtype = DEFAULT_DTYPE,
                    max_elems: int = 2 ** 23, progress: bool = False,
                    cache: str | Path | None = None) -> dict[str, Any]:
    """Error of frozen estimators and baselines on the same fresh contexts.

    Every estimator ``p`` (parameters ``beta[p], b[p]``) and every baseline is applied to the same
    ``n_ctx`` contexts of each size ``N`` for each fixed threshold, in batches of estimators so that
    no intermediate exceeds ``max_elems`` entries.

    Parameters
    ----------
    beta, b : array_like, shape ``(P,)``
    N_grid : context sizes, shape ``(KN,)``
    taus : fixed thresholds in ``(0, 1)``, shape ``(KT,)``
    n_ctx : fresh contexts per ``(N, tau)``.
    baselines : names in :data:`stumplib.baselines.BASELINES`.
    cache : ``.npz`` path; reloaded when it was made with exactly these arguments.

    Returns
    -------
    dict with
      ``mse, mae, bias`` : np.ndarray ``(P, KN, KT)`` (mean of ``(f-tau)^2``, ``|f-tau|``, ``f-tau``
      over contexts); ``sq_sd`` : ``(P, KN, KT)`` standard deviation over contexts of ``(f-tau)^2``;
      ``baselines`` : ``{name: {"mse", "mae", "bias", "sq_sd": (KN, KT)}}``;
      ``N``, ``taus`` : the grids as arrays.
    """
    N_grid = check_grid("N_grid", N_grid)
    taus_l = check_grid("taus", taus, kind="real", minimum=0.0, maximum=1.0)
    if any(t <= 0 or t >= 1 for t in taus_l):
        raise ValueError(f"taus must be interior thresholds strictly inside (0, 1); got {taus_l}")
    n_ctx = check_int("n_ctx", n_ctx)
    seed = check_int("seed", seed, minimum=0)
    tau_lo, tau_hi = check_prior(tau_lo, tau_hi)
    max_elems = check_int("max_elems", max_elems, minimum=1)
    if isinstance(baselines, str):
        raise ValueError("baselines must be a list of names")
    baselines = [check_choice(f"baselines[{i}]", nm, list(BASELINES)) for i, nm in enumerate(baselines)]
    if not isinstance(progress, (bool, np.bool_)):
        raise ValueError(f"progress must be True or False; got {progress!r}")
    arrs = []
    for name, v in (("beta", beta), ("b", b)):
        try:
            arrs.append(np.atleast_1d(np.asarray(v, dtype=float)))
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a non-empty 1-d array of finite numbers; got {v!r}") from None
    beta_a = arrs[0]
    b_a = arrs[1]
    if beta_a.ndim != 1 or beta_a.shape != b_a.shape or beta_a.size == 0:
        raise ValueError(f"beta and b must be non-empty 1-d arrays of the same length; got shapes "
                         f"{beta_a.shape} and {b_a.shape}")
    if not (np.all(np.isfinite(beta_a)) and np.all(np.isfinite(b_a))):
        raise ValueError("beta and b must be finite (no NaN or inf)")
    dev = resolve_device(device)
    stats = ("mse", "mae", "bias", "sq_sd")
    config = {"beta": beta_a.tolist(), "b": b_a.tolist(), "N_grid": N_grid, "taus": taus_l,
              "n_ctx": n_ctx, "seed": seed, "baselines": baselines, "prior": [tau_lo, tau_hi],
              "dtype": str(dtype)}
    if cache is not None:
        from .results_io import load_results
        hit = load_results(cache, config)
        if hit is not None:
            return {**{k: hit[k] for k in stats},
                    "baselines": {nm: {k: hit[f"{nm}/{k}"] for k in stats} for nm in baselines},
                    "N": np.asarray(N_grid), "taus": np.asarray(taus_l)}
    P, KN, KT = beta_a.size, len(N_grid), len(taus_l)
    tt = torch.tensor(taus_l, dtype=dtype, device=dev)
    bt = torch.tensor(beta_a, dtype=dtype, device=dev)
    btb = torch.tensor(b_a, dtype=dtype, device=dev)
    out = {k: np.empty((P, KN, KT)) for k in ("mse", "mae", "bias", "sq_sd")}
    base = {nm: {k: np.empty((KN, KT)) for k in ("mse", "mae", "bias", "sq_sd")} for nm in baselines}
    it = range(KN)
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(it, desc="fresh contexts", mininterval=0.5)
    for k in it:
        N = N_grid[k]
        x, y = fresh_contexts(N, tt, n_ctx, seed=seed)  # (KT, C, N)
        x, y = x.reshape(KT * n_ctx, N), y.reshape(KT * n_ctx, N)
        tau_c = tt.repeat_interleave(n_ctx)  # (KT * C,)
        chunk = max(1, max_elems // (KT * n_ctx * N))
        for p0 in range(0, P, chunk):
            sl = slice(p0, min(P, p0 + chunk))
            s_ = -bt[sl, None, None] * x + btb[sl, None, None] * y  # (p, KT*C, N)
            f = (torch.softmax(s_, dim=-1) * x).sum(-1)  # (p, KT*C)
            _store(out, (sl, k), (f - tau_c).reshape(-1, KT, n_ctx))
        for nm in baselines:
            f = BASELINES[nm](x, y, tau_lo, tau_hi)
            _store(base[nm], (k,), (f - tau_c).reshape(KT, n_ctx))
    if cache is not None:
        from .results_io import save_results
        save_results(cache, {**out, **{f"{nm}/{k}": base[nm][k] for nm in baselines for k in stats}},
                     config)
    return {**out, "baselines": base, "N": np.asarray(N_grid), "taus": np.asarray(taus_l)}


def _store(dst: dict[str, np.ndarray], index: tuple, e: torch.Tensor) -> None:
    sq = e * e
    dst["mse"][index] = sq.mean(-1).cpu().numpy()
    dst["mae"][index] = e.abs().mean(-1).cpu().numpy()
    dst["bias"][index] = e.mean(-1).cpu().numpy()
    dst["sq_sd"][index] = sq.std(-1).cpu().numpy() if e.shape[-1] > 1 else 0.0


# ----------------------------------------------------------------------------- summaries
def seed_interval(values: Any, *, axis: int = 0, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over independent replicates with a Student-t interval.

    Parameters
    ----------
    values : array_like; replicates (e.g. per-seed MSEs) along ``axis`` (at least 2).

    Returns
    -------
    mean, lo, hi : np.ndarray, the shape of ``values`` without ``axis``.
    """
    from scipy import stats

    v = np.asarray(values, dtype=float)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    if v.ndim == 0 or v.shape[axis] < 2:
        raise ValueError("values must hold at least 2 replicates along axis")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    S = v.shape[axis]
    mean = v.mean(axis)
    half = stats.t.ppf(0.5 + level / 2, S - 1) * v.std(axis, ddof=1) / math.sqrt(S)
    return mean, mean - half, mean + half


def error_by_shape(mse: Any, shape_index: Any, n_shapes: int, *, valid: Any = None,
                   level: float = 0.95) -> dict[str, np.ndarray]:
    """Root-mean-square error per shape with a ``level`` interval over training seeds.

    For each run the MSE is averaged over the fixed thresholds; for each shape the runs' values
    (independent corpora and fresh contexts) give a Student-t interval for the mean MSE, whose
    square roots are the RMSE and its interval (the lower end is clipped at 0).

    Parameters
    ----------
    mse : array_like, shape ``(R, KN, KT)`` (from :func:`evaluate_frozen`)
    shape_index : int array, shape ``(R,)``: the shape of each run, in ``[0, n_shapes)``
    valid : bool array, shape ``(R,)``, optional: runs to use (e.g. not diverged)

    Returns
    -------
    dict with ``err, lo, hi`` of shape ``(n_shapes, KN)`` (``err`` NaN without valid runs, ``lo, hi``
    NaN with fewer than 2),
    ``err_tau`` of shape ``(n_shapes, KN, KT)`` (RMSE per threshold, mean over valid runs) and
    ``n_valid`` of shape ``(n_shapes,)``.
    """
    mse = np.asarray(mse, dtype=float)
    if mse.ndim != 3:
        raise ValueError(f"mse must have shape (R, KN, KT); got {mse.shape}")
    n_shapes = check_int("n_shapes", n_shapes)
    si = np.asarray(shape_index)
    if si.shape != (mse.shape[0],) or not np.issubdtype(si.dtype, np.integer) or si.min() < 0 \
            or si.max() >= n_shapes:
        raise ValueError(f"shape_index must be {mse.shape[0]} integers in [0, {n_shapes})")
    ok = np.ones(mse.shape[0], bool) if valid is None else np.asarray(valid, dtype=bool)
    if ok.shape != si.shape:
        raise ValueError(f"valid must have shape ({mse.shape[0]},)")
    KN, KT = mse.shape[1:]
    out = {k: np.full((n_shapes, KN), np.nan) for k in ("err", "lo", "hi")}
    out["err_tau"] = np.full((n_shapes, KN, KT), np.nan)
    out["n_valid"] = np.zeros(n_shapes, dtype=int)
    for i in range(n_shapes):
        sel = (si == i) & ok
        out["n_valid"][i] = int(sel.sum())
        if sel.sum() >= 1:
            out["err_tau"][i] = np.sqrt(mse[sel].mean(0))
            out["err"][i] = np.sqrt(mse[sel].mean((0, 2)))
        if sel.sum() >= 2:
            mean, lo, hi = seed_interval(mse[sel].mean(-1), level=level)
            out["err"][i], out["lo"][i], out["hi"][i] = np.sqrt(mean), np.sqrt(np.clip(lo, 0, None)), np.sqrt(hi)
    return out


def baseline_error(stats: dict[str, np.ndarray], n_ctx: int, *, level: float = 0.95) -> dict[str, np.ndarray]:
    """RMSE of a baseline over the fixed thresholds with a normal ``level`` interval over contexts.

    Parameters
    ----------
    stats : one entry of ``evaluate_frozen(...)["baselines"]`` (``mse``, ``sq_sd`` of shape ``(KN, KT)``)
    n_ctx : contexts per ``(N, tau)`` used for them.

    Returns
    -------
    dict with ``err, lo, hi`` of shape ``(KN,)``.
    """
    from scipy import stats as st

    n_ctx = check_int("n_ctx", n_ctx, minimum=2)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    mse, sd = np.asarray(stats["mse"], float), np.asarray(stats["sq_sd"], float)
    KT = mse.shape[-1]
    mean = mse.mean(-1)
    se = np.sqrt((sd ** 2).sum(-1) / n_ctx) / KT
    z = st.norm.ppf(0.5 + level / 2)
    return {"err": np.sqrt(mean), "lo": np.sqrt(np.clip(mean - z * se, 0, None)),
            "hi": np.sqrt(mean + z * se)}


def bound(mn: Any, N: Any) -> np.ndarray:
    """The abstract's rate without constants or logs: ``(m ∧ n)^-1 + N^-1`` (broadcast)."""
    mn = np.asarray(mn, dtype=float)
    N = np.asarray(N, dtype=float)
    if not (np.all(np.isfinite(mn)) and np.all(mn > 0) and np.all(np.isfinite(N)) and np.all(N > 0)):
        raise ValueError("mn and N must be finite and > 0")
    return 1.0 / mn + 1.0 / N


def regime_points(mn: Any, N: Any, *, separation: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the two regimes of the bound on a broadcast ``(m ∧ n, N)`` grid.

    Returns
    -------
    small_N, large_N : bool arrays of the broadcast shape: ``N <= (m ∧ n) / separation`` (the
    ``1/N`` regime, where the slope in ``N`` is fitted) and ``N >= separation * (m ∧ n)`` (the
    ``1/(m ∧ n)`` regime, where the slope in ``m ∧ n`` is fitted).
    """
    separation = check_real("separation", separation, low=1.0)
    mn, N = np.broadcast_arrays(np.asarray(mn, dtype=float), np.asarray(N, dtype=float))
    return N * separation <= mn, N >= separation * mn


# --------------------------------------------------------------------------- certified scale
def certified_scale_fallback(m: int, n: int, *, level: float = 1.0, n_corpora: int = 16,
                             seed: int = 0, device: Any = "auto", tau_lo: float = 0.2,
                             tau_hi: float = 0.8, beta_from: float = 20.0, beta_to: float = 1e4,
                             n_grid: int = 41) -> float:
    """The certified scale from MODEL.md's definition (used only if chapter 3's is unavailable).

    Along the calibrated path ``b = beta * (tau_hi + log(beta) / (2 beta))`` the relative gradient
    error ``|g_corpus - g_pop| / |g_pop|`` is computed for ``n_corpora`` corpora of ``m x n`` on
    ``n_grid`` log-spaced scales from ``beta_from`` (the training start) to ``beta_to``; the
    certified scale is the first scale (log-interpolated) where its median over corpora reaches
    ``level``. Returns ``beta_from`` if the error starts above ``level`` (an empty certified
    interval) and ``beta_to`` if it never gets there.
    """
    m = check_int("m", m)
    n = check_int("n", n)
    level = check_real("level", level, low=0.0, low_open=True)
    n_corpora = check_int("n_corpora", n_corpora)
    seed = check_int("seed", seed, minimum=0)
    tau_lo, tau_hi = check_prior(tau_lo, tau_hi)
    beta_from = check_real("beta_from", beta_from, low=0.0, low_open=True)
    beta_to = check_real("beta_to", beta_to, low=beta_from, low_open=True)
    n_grid = check_int("n_grid", n_grid, minimum=2)
    grid = np.geomspace(beta_from, beta_to, n_grid)
    dev = resolve_device(device)
    from .tasks import sample_tasks
    gen_taus, xs, ys = [], [], []
    for s in range(n_corpora):
        t, x, y = sample_tasks(m, n, tau_lo, tau_hi, seed=seed * 7919 + s, device=dev)
        gen_taus.append(t), xs.append(x), ys.append(y)
    tau = torch.stack(gen_taus)  # (S, m)
    x, y = torch.stack(xs), torch.stack(ys)  # (S, m, n)
    beta = torch.tensor(grid, device=dev, dtype=x.dtype)
    b = beta * (tau_hi + torch.log(beta) / (2 * beta))
    _, gp_beta, gp_b = population_loss_and_grad(beta, b, tau_lo, tau_hi)  # (G,)
    rel = []
    for g in range(grid.size):
        f, dfb, dfbb = _estimate_and_grad(x, y, beta[g], b[g], None)  # (S, m)
        e = f - tau
        gc_beta, gc_b = 2 * (e * dfb).mean(-1), 2 * (e * dfbb).mean(-1)
        num = torch.sqrt((gc_beta - gp_beta[g]) ** 2 + (gc_b - gp_b[g]) ** 2)
        den = torch.sqrt(gp_beta[g] ** 2 + gp_b[g] ** 2)
        rel.append(float(torch.median(num / den)))
    rel = np.array(rel)
    above = np.nonzero(rel >= level)[0]
    if above.size == 0:
        return float(grid[-1])
    j = int(above[0])
    if j == 0:
        return float(grid[0])
    r0, r1 = np.log(max(rel[j - 1], 1e-300)), np.log(rel[j])
    w = (np.log(level) - r0) / (r1 - r0) if r1 > r0 else 1.0
    return float(np.exp(np.log(grid[j - 1]) + w * (np.log(grid[j]) - np.log(grid[j - 1]))))


def resolve_certified_scale() -> tuple[Callable[..., float], str]:
    """Chapter 3's ``stumplib.transfer.certified_scale`` if present, else :func:`certified_scale_fallback`.

    Returns
    -------
    (function, source) with ``source`` either ``"stumplib.transfer.certified_scale"`` or
    ``"stumplib.frozen.certified_scale_fallback"``.
    """
    try:
        from .transfer import certified_scale  # type: ignore[attr-defined]
        return certified_scale, "stumplib.transfer.certified_scale"
    except ImportError:
        return certified_scale_fallback, "stumplib.frozen.certified_scale_fallback"


def certified_scales(shapes: Sequence[tuple[int, int]], *, level: float = 1.0, n_corpora: int = 16,
                     seed: int = 0, device: Any = "auto", cache: str | Path | None = None,
                     fn: Callable[..., float] | None = None, progress: bool = False,
                     cache_key: dict[str, Any] | None = None) -> np.ndarray:
    """``beta*(m, n)`` for every shape (cached), shape ``(len(shapes),)``.

    Parameters
    ----------
    shapes : list of ``(m, n)`` pairs.
    level, n_corpora, seed, device : passed to ``fn(m, n, level=, n_corpora=, seed=, device=)``.
    fn : the certified-scale function (default: :func:`resolve_certified_scale`).
    cache : ``.npz`` path; reloaded when shapes, arguments, ``fn``'s name and ``cache_key`` match.
    cache_key : extra settings that ``fn`` depends on (e.g. a closure's start scale), for the cache.
    """
    from .results_io import load_results, save_results

    shapes = _check_shapes(shapes)
    level = check_real("level", level, low=0.0, low_open=True)
    if not isinstance(progress, (bool, np.bool_)):
        raise ValueError(f"progress must be True or False; got {progress!r}")
    n_corpora = check_int("n_corpora", n_corpora)
    seed = check_int("seed", seed, minimum=0)
    if fn is None:
        fn, source = resolve_certified_scale()
    else:
        source = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"
    config = {"shapes": [list(s) for s in shapes], "level": level, "n_corpora": n_corpora,
              "seed": seed, "source": source, "extra": cache_key or {}}
    if cache is not None:
        hit = load_results(cache, config)
        if hit is not None:
            return hit["beta_star"]
    it = shapes
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(shapes, desc="certified scales", mininterval=0.5)
    bs = np.array([fn(m, n, level=level, n_corpora=n_corpora, seed=seed, device=device) for m, n in it],
                  dtype=float)
    if cache is not None:
        save_results(cache, {"beta_star": bs}, config)
    return bs
