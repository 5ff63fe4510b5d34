"""Staged training: GD stopped at the certified scale, frozen there and continued (chapter 4).

- :func:`train_staged`: GD on corpora of one shape from a start ``beta0`` that records each run at
  the first step where ``beta >= beta_stop`` (the certified stop) and continues it to ``beta_end``;
  the step is reset to ``frac`` times the population stability limit at the start, at ``beta_stop``
  and at each doubling of ``beta`` (a piecewise-constant schedule, :func:`stage_marks`). It is one
  call of :func:`stumplib.stump.trainer.train_gd` (the book's only training loop) with the schedule
  as ``RunConfig.lr_marks``, the log-spaced scales as ``RunConfig.record_scales`` and ``beta_end``
  as the stop scale; the corpora are the trainer's (same seed, same corpus) and the stop is exact,
  to the step; :func:`train_to_certified_stop` runs it for every shape of chapter 4 (cached);
- :func:`stop_errors`, :func:`end_errors`: the errors of the runs frozen at their stop and at their
  end on fresh contexts (:func:`stumplib.book.studies.frozen.sq_errors`);
- :func:`gain_past_stop`, :func:`law_kept_past_stop`: what training past the certified stop
  changes, with bootstrap intervals over runs and contexts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from stumplib.core.device import DEFAULT_DTYPE
from stumplib.core.memo import remember
from stumplib.core.stats import Estimate, interval, resample_indices
from stumplib.core.validation import check_int, check_real
from stumplib.book.studies.frozen import FIXED_TAUS, sq_errors
from stumplib.stump.trainer import RunConfig, TrainOptions, train_gd
from stumplib.book.studies.transfer import population_path, step_size_limit
from stumplib.stump.prior import DEFAULT_PRIOR, Prior, as_prior

#: :func:`train_staged` counts a run as diverged only on non-finite parameters, ``beta <= 0`` or
#: ``|beta|, |b|`` above :data:`stumplib.stump.train_loop.MAX_PARAM`, not on its loss growing (the
#: loss is at most 1 and the initial loss at least ~1e-8 at the scales of this book)
_NO_LOSS_LIMIT = 1e12


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
    log_scales : shape ``(L,)``; log_step, log_beta, log_b : shape ``(S, L)``: the state at the
        first step past each log-spaced scale (``-1`` / NaN where not reached).
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
        """shape ``(S,)``: the runs that did not diverge (every per-run result below keeps
        these)."""
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
                 beta_end: float, frac: float = 0.3, prior: Prior = DEFAULT_PRIOR,
                 max_steps: int = 200_000, log_per_octave: int = 4, device: Any = "cpu",
                 steps: int | None = None) -> StagedRuns:
    """GD on ``len(seeds)`` corpora of shape ``(m, n)``, each frozen at ``beta_stop`` and continued.

    Every run starts at ``(beta0, c*(beta0) beta0)`` (the population's calibrated label score) with
    step ``frac * 2/lambda_max(beta0)`` (the population stability limit, see
    :func:`stumplib.book.studies.transfer.step_size_limit`). At the first step where its ``beta`` reaches
    a mark of :func:`stage_marks` the state is recorded and the step reset to ``frac`` times the
    limit at that mark; ``beta_stop`` is the certified stop, ``beta_end`` the end of the run. The
    log-spaced scales are ``log_per_octave`` per octave from ``beta0``.

    Parameters
    ----------
    m, n : the corpus shape.
    seeds : one corpus per seed (drawn as the trainer draws it).
    beta0, beta_stop, beta_end : the start, the certified stop and the end scale.
    frac : the step as a fraction of the population stability limit, in (0, 1].
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
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
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    log_per_octave = check_int("log_per_octave", log_per_octave, minimum=1)
    marks = stage_marks(beta0, beta_stop, beta_end)
    lim = step_size_limit(np.concatenate([[beta0], marks]), prior)
    lr_marks = frac * lim[1:]
    c0 = float(population_path([beta0], prior)["c"][0])
    nL = int(np.floor(np.log2(beta_end / beta0) * log_per_octave + 1e-9))
    log_scales = beta0 * 2.0 ** (np.arange(1, nL + 1) / log_per_octave)
    cap = max_steps if steps is None else min(max_steps, check_int("steps", steps))
    # the last mark is beta_end, where the run stops (its step size is never used)
    configs = [RunConfig(m, n, s, lr=frac * float(lim[0]), beta0=float(beta0), b0=c0 * float(beta0),
                         tau_lo=tau_lo, tau_hi=tau_hi, beta_stop=float(marks[-1]),
                         lr_marks=tuple(zip(marks.tolist(), lr_marks.tolist())),
                         record_scales=tuple(log_scales.tolist()) or None) for s in seeds]
    opts = TrainOptions(n_records=2, dtype=DEFAULT_DTYPE, check_every=64,
                        max_loss_ratio=_NO_LOSS_LIMIT, grouping="shape", on_diverge="stop")
    res = train_gd(configs, cap, device=device, progress=False, options=opts)
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


def train_to_certified_stop(shapes: Sequence[tuple[int, int]], beta_star: Sequence[float],
                            n_seeds: Sequence[int], *, continue_to: Sequence[float | None],
                            seed: int = 0, frac: float = 0.3, prior: Prior = DEFAULT_PRIOR,
                            max_steps: int = 200_000,
                            steps: int | None = None, device: Any = "cpu") -> list[StagedRuns]:
    """:func:`train_staged` for every shape: ``n_seeds[i]`` corpora from ``beta*/4``, frozen at
    ``beta*`` and continued to ``continue_to[i]`` (``None``: stop at ``beta*``). Cached per shape.

    Parameters
    ----------
    shapes : ``(m, n)`` pairs.
    beta_star : the certified stop of each.
    n_seeds : corpora per shape.
    continue_to : per shape, the scale to continue to, or ``None``.
    seed, frac, prior, max_steps, steps, device : see :func:`train_staged`.

    Returns
    -------
    list of :class:`StagedRuns`, one per shape.
    """
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    if not (len(shapes) == len(beta_star) == len(n_seeds) == len(continue_to)):
        raise ValueError("shapes, beta_star, n_seeds and continue_to must have the same length")
    out = []
    for i, ((m, n), bs, S, end) in enumerate(zip(shapes, beta_star, n_seeds, continue_to)):
        bs = float(bs)
        end = bs if end is None else float(end)
        seeds = [seed + 1000 * i + s for s in range(check_int(f"n_seeds[{i}]", S))]

        def compute(m=m, n=n, bs=bs, end=end, seeds=seeds) -> StagedRuns:
            return train_staged(m, n, seeds, beta0=bs / 4, beta_stop=bs, beta_end=end, frac=frac,
                                prior=prior, device=device, steps=steps,
                                max_steps=max_steps)

        cfg = {"m": m, "n": n, "seeds": seeds, "beta_star": bs, "beta_end": end, "frac": frac,
               "prior": [tau_lo, tau_hi], "steps": steps, "cap": max_steps}
        out.append(remember(f"staged_runs_{m}x{n}", cfg, compute))
    return out


# ------------------------------------------------------------------------------- their errors
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


# ------------------------------------------------------------------------------- past the stop
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
    stop_beta, end_beta : one array ``(R_i,)`` per shape: each run's scale at the stop and at the
        end.
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
