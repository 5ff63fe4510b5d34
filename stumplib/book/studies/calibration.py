"""A corpus's own calibration: the label score GD reaches, and where finite m enters.

Two pieces of chapters 3 and 4.

**Own-calibration tracking** (chapter 3). At a scale ``beta`` a corpus has its own calibrated label
score: the local minimiser in ``b`` of the corpus loss that GD reaches coming down from a high start
``c0 >= tau_hi``. :func:`own_label_score` finds it by *continuation*: at the first scale of an
increasing grid it walks ``c`` down from ``c0`` until ``dL/db`` changes sign (the highest local
minimum below ``c0``) and bisects there; at each later scale it starts from the previous scale's
minimiser and walks to the nearest sign change. Plain bisection of ``dL/db`` on ``[tau_lo, tau_hi + 1]``
(the superseded method, removed) lands on whichever sign change the halvings meet, and once
``beta >> m`` the corpus loss has spurious lower minima (a label score just above one of the corpus's
few thresholds). At the minimiser ``dL/db = 0``, so the partial derivative ``dL/dbeta`` there is the
*reduced gradient* ``d/dbeta min_b L``; :func:`own_profile` compares it with the population's (at
its own ``c*(beta)``) over corpora.

**Calibration failure** (chapter 4). GD leaves a corpus with ``c_T ~ tau_top + s(tau_top, beta)``,
``tau_top`` its largest threshold and ``s`` the calibrated shift (:func:`calibrated_shift`). A fresh
threshold above ``c_T`` gets an O(1) error; with the prior uniform on ``[tau_lo, tau_hi]``,
``P(c_T < tau) = ((t*(tau) - tau_lo)/(tau_hi - tau_lo))^m`` with ``t* + s(t*, beta) = tau``
(:func:`failure_probability`); :func:`predicted_label_scores` samples ``c_T`` by this rule at no
training cost.

**Where the shift comes from** (``shared/design/MODEL.md``'s population limit, one task). For a
task with threshold ``tau``, large ``beta`` and ``c = b / beta > tau``, the positive side
``x in [tau, 1]`` carries attention mass ``e^{b - beta tau} / beta`` at mean ``tau + 1/beta``, the
negative side mass ``1/beta`` at mean ``1/beta``. With ``r = e^{-beta (c - tau)}`` their ratio,
``f - tau = (1/beta + r/beta - tau r) / (1 + r)``: the positive side's bias ``+1/beta`` is
cancelled by the negative side's pull when ``r = 1 / (tau beta - 1)``, i.e. at
``c = tau + log(tau beta - 1)/beta``. The corpus loss in ``b`` is dominated by the task whose
threshold is highest (the others sit further below ``c``: their ``r`` is smaller by
``e^{-beta (tau_top - tau_j)}``), so GD's label score is this value at ``tau = tau_top``. The
"0.8" of ``log(0.8 beta)/beta`` (MODEL.md) is ``tau_top`` at the default prior's top end
``tau_hi = 0.8`` (and ``log(tau beta - 1) ~ log(tau beta)`` for ``tau beta >> 1``). Checked: the
exact population loss of one task is minimised at this ``c`` to 1e-6 relative in the shift
(``tests/book/studies/test_calibration.py``). Assumptions: ``n`` large enough that the positive side is
resolved (``beta`` below the example spacing ``1/n``'s inverse), and ``beta (tau_top - tau_2) >> 1``
for the second-highest threshold ``tau_2``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.stats import Estimate, crossing, interval, resample
from stumplib.stump.corpus_grad import corpus_grad
from stumplib.book.studies.transfer import draw_corpus_batch, population_path
from stumplib.core.validation import check_choice, check_int, check_real
from stumplib.stump.prior import DEFAULT_PRIOR, Prior, as_prior


def _grads(tau: torch.Tensor, x: torch.Tensor, y: torch.Tensor, beta: float, c: torch.Tensor,
           work: list) -> tuple[torch.Tensor, torch.Tensor]:
    """``dL/dbeta, dL/db`` of every corpus at ``(beta, c * beta)``, shape ``(C,)``
    (:func:`stumplib.stump.corpus_grad.corpus_grad`)."""
    bt = torch.full_like(c, beta)
    _, gb, gbb = corpus_grad(x, y, tau, bt, c * beta, None, work)
    return gb, gbb


def _bisect(tau, x, y, beta, lo, hi, iters, work):
    """Bisection of ``dL/db`` between ``lo`` (``dL/db < 0``) and ``hi`` (``>= 0``), per corpus."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        _, g = _grads(tau, x, y, beta, mid, work)
        up = g < 0
        lo, hi = torch.where(up, mid, lo), torch.where(up, hi, mid)
    return 0.5 * (lo + hi)


def own_label_score(tau: torch.Tensor, x: torch.Tensor, y: torch.Tensor, betas: Sequence[float], *,
                    c0: float = 1.0, iters: int = 24, max_walk: int = 60) -> torch.Tensor:
    """The corpus's own calibrated label score ``c(beta)`` by continuation.

    Parameters
    ----------
    tau : torch.Tensor, shape ``(C, m)``
        The thresholds of ``C`` corpora.
    x, y : torch.Tensor, shape ``(C, m, n)``
        Their examples and labels.
    betas : sequence of float, shape ``(K,)``
        Increasing scales.
    c0 : float
        The high start (``>= tau_hi``) of the first scale.
    iters : int
        Bisection halvings once a sign change is bracketed.
    max_walk : int
        Walking steps (each 1.5 times the last, from ``0.25 / beta``) before giving up (NaN).

    Returns
    -------
    torch.Tensor, shape ``(K, C)``
        NaN where no minimiser was found.
    """
    b = np.asarray(betas, dtype=float)
    if b.ndim != 1 or b.size == 0 or np.any(np.diff(b) <= 0) or np.any(b <= 0):
        raise ValueError("betas must be a non-empty increasing array of positive scales")
    check_int("iters", iters)
    C = x.shape[0]
    c = torch.full((C,), float(c0), dtype=x.dtype, device=x.device)
    work: list = []
    out = torch.empty((b.size, C), dtype=x.dtype, device=x.device)
    for k, beta in enumerate(b.tolist()):
        _, g = _grads(tau, x, y, beta, c, work)
        down = g >= 0  # loss not decreasing in b: the nearest minimiser lies below (or flat: go down)
        lo, hi = c.clone(), c.clone()
        found = torch.zeros(C, dtype=torch.bool, device=x.device)
        step = torch.full_like(c, 0.25 / beta)
        prev = c.clone()
        for _ in range(max_walk):
            trial = torch.where(down, prev - step, prev + step)
            _, gt = _grads(tau, x, y, beta, trial, work)
            hit = ~found & torch.where(down, gt < 0, gt >= 0)
            lo = torch.where(hit, torch.where(down, trial, prev), lo)
            hi = torch.where(hit, torch.where(down, prev, trial), hi)
            found |= hit
            if bool(found.all()):
                break
            prev = torch.where(found, prev, trial)
            step = step * 1.5
        cc = _bisect(tau, x, y, beta, lo, hi, iters, work)
        c = torch.where(found, cc, torch.full_like(cc, float("nan")))
        out[k] = c
        c = torch.where(found, c, torch.full_like(c, float(c0)))
    return out


@dataclass
class OwnProfile:
    """Reduced gradients along ``beta`` of corpora (each at its own calibrated ``c``) and of the
    population (at ``c*``) for one shape.

    ``beta (K,)``, ``g_pop (K,)``, ``g_corpus (K, C)``, ``c_own (K, C)``, ``c_pop (K,)``.
    """

    m: int
    n: int
    beta: np.ndarray
    g_pop: np.ndarray
    g_corpus: np.ndarray
    c_own: np.ndarray
    c_pop: np.ndarray

    @property
    def ratio(self) -> np.ndarray:
        """Corpus progress along ``beta`` over the population's, ``g_corpus / g_pop``, ``(K, C)``."""
        return self.g_corpus / self.g_pop[:, None]

    def curve(self, stat: str = "rms", corpora: np.ndarray | None = None) -> np.ndarray:
        """The error curve over corpora along ``beta``.

        NaN ratios (no minimiser found) count as an error of 1.

        Parameters
        ----------
        stat : str
            ``"rms"`` or ``"median"`` of ``|ratio - 1|``, or ``"short"``: the RMS of the shortfall
            ``max(0, 1 - ratio)`` (progress below the population's).
        corpora : np.ndarray of int, optional
            The corpora to aggregate (e.g. a bootstrap resample; default all).

        Returns
        -------
        np.ndarray, shape ``(K,)``
        """
        check_choice("stat", stat, ("rms", "median", "short"))
        r = self.ratio if corpora is None else self.ratio[:, corpora]
        e = np.abs(r - 1.0) if stat != "short" else np.clip(1.0 - r, 0.0, None)
        e = np.where(np.isfinite(e), e, 1.0)
        return np.median(e, 1) if stat == "median" else np.sqrt((e ** 2).mean(1))


def own_profile(m: int, n: int, betas: Sequence[float], *, n_corpora: int = 16, seed: int = 0,
                prior: Prior = DEFAULT_PRIOR, c0: float = 1.0, iters: int = 24,
                device: Any = "cpu") -> OwnProfile:
    """:class:`OwnProfile` of ``n_corpora`` seeded corpora of shape ``(m, n)`` on ``betas``.

    Parameters
    ----------
    m, n : int
        Tasks per corpus and examples per task.
    betas : sequence of float, shape ``(K,)``
        Increasing scales.
    n_corpora : int
        Corpora (>= 2).
    seed : int
        The corpora's seed.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    c0 : float
        The high start of :func:`own_label_score` (``>= tau_hi``).
    iters : int
        Bisection halvings of :func:`own_label_score`.
    device : str or torch.device
        Where to compute.

    Returns
    -------
    OwnProfile
    """
    m, n = check_int("m", m), check_int("n", n)
    n_corpora = check_int("n_corpora", n_corpora, minimum=2)
    tau_hi = as_prior(prior).tau_hi
    c0 = check_real("c0", c0, low=tau_hi)
    b = np.asarray(betas, dtype=float)
    tau, x, y = draw_corpus_batch(m, n, n_corpora, seed=seed, prior=prior, device=device)
    c = own_label_score(tau, x, y, b, c0=c0, iters=iters)
    work: list = []
    g = torch.stack([_grads(tau, x, y, float(bk), torch.nan_to_num(c[k], nan=c0), work)[0]
                     for k, bk in enumerate(b.tolist())])
    g = torch.where(torch.isfinite(c), g, torch.full_like(g, float("nan")))
    path = population_path(b, prior, device="cpu")
    return OwnProfile(m, n, b, path["g"][:, 0].numpy(), g.cpu().numpy(), c.cpu().numpy(),
                      path["c"].numpy())


def tracking_scale(betas: Any, curve: Any, level: float = 0.5) -> tuple[float, bool]:
    """Where ``curve`` first rises to ``level`` after first being below it (log-log interpolated).

    Parameters
    ----------
    betas : array_like, shape ``(K,)``
        Increasing scales.
    curve : array_like, shape ``(K,)``
        The error curve (e.g. :meth:`OwnProfile.curve`).
    level : float
        The level that ends tracking.

    Returns
    -------
    (scale, censored) : tuple of float and bool
        ``censored`` is True when the curve is still below ``level`` at the end of the grid (then
        ``scale`` is the last grid point: a lower bound); ``(nan, False)`` if the curve is never
        below ``level``.
    """
    betas = np.asarray(betas, float)
    curve = np.asarray(curve, float)
    below = np.flatnonzero(curve < level)
    if below.size == 0:
        return float("nan"), False
    x = crossing(betas, curve, level, direction="up", start=int(below[0]), log_x=True, log_y=True)
    if np.isnan(x):
        return float(betas[-1]), True
    return float(x), False


def scale_with_bootstrap(prof: Any, level: float = 0.5, *, stat: str = "rms", n_boot: int = 200,
                         seed: int = 0, n_corpora: int | None = None, ci_level: float = 0.95
                         ) -> tuple[Estimate, np.ndarray]:
    """A tracking or certified scale with a bootstrap over corpora.

    Parameters
    ----------
    prof : an :class:`OwnProfile` (scale from :func:`tracking_scale` of ``prof.curve(stat)``) or a
        :class:`stumplib.book.studies.transfer.TransferProfile` (``prof.certified``).
    level : the relative-error level that ends tracking.
    stat : the aggregate over corpora of an :class:`OwnProfile` (see :meth:`OwnProfile.curve`).
    n_boot, seed : resamples of the corpora (:func:`stumplib.core.stats.resample_indices`).
    n_corpora : unused (kept for callers that pass it).
    ci_level : the interval's level.

    Returns
    -------
    (Estimate, replicates): the estimate (a censored lower bound where the point estimate is
    censored; ``Estimate.nan`` where fewer than 10 replicates are finite; otherwise ``n`` the
    finite replicates and ``n_dropped`` the resamples without a scale, left out of the interval)
    and the replicates ``(n_boot,)`` (the grid end where a replicate is censored, NaN where it has
    no scale).
    """
    n_boot = check_int("n_boot", n_boot, minimum=10)
    if isinstance(prof, OwnProfile):
        C = prof.g_corpus.shape[1]
        f = lambda idx: tracking_scale(prof.beta, prof.curve(stat, idx), level)  # noqa: E731
    else:
        C = prof.n_corpora
        f = lambda idx: (prof.certified(level, corpora=idx), False)  # noqa: E731
    val, cens = f(None)
    boots = resample(np.arange(C), lambda idx: f(idx.astype(int))[0], n_boot=n_boot, seed=seed)
    if cens:
        return Estimate.lower_bound(val, n=C), boots
    lo, hi = interval(boots, ci_level)
    if not np.isfinite(val):
        return Estimate.nan("bootstrap"), boots
    n_bad = int((~np.isfinite(boots)).sum())  # resamples without a scale: left out, counted
    why = f"{n_bad} of {n_boot} resamples without a scale" if n_bad else ""
    if not np.isfinite(lo):  # a scale, but too few finite replicates for an interval
        return Estimate(val, float("nan"), float("nan"), "bootstrap", ci_level, None, n_boot - n_bad,
                        n_bad, why), boots
    return Estimate(val, float(min(lo, val)), float(max(hi, val)), "bootstrap", ci_level, None,
                    n_boot - n_bad, n_bad, why), boots


# ------------------------------------------------------------------------- calibration failure
def calibrated_shift(tau: Any, beta: float) -> np.ndarray:
    """The calibrated label score's offset above a task's threshold, ``log(tau beta - 1) / beta``.

    Where the population estimate of a task with threshold ``tau`` is unbiased at scale ``beta``
    (the module docstring derives it); ``-inf`` where ``tau beta <= 1`` (no label score above the
    threshold calibrates it: the head then fails on that task).

    Parameters
    ----------
    tau : array_like
        Thresholds (any shape).
    beta : float
        The attention scale (> 0).

    Returns
    -------
    np.ndarray of the shape of ``tau``
        The shift ``c - tau``.
    """
    t = np.asarray(tau, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t * beta > 1, np.log(np.maximum(t * beta - 1, 1e-300)) / beta, -np.inf)


def _check_calibration(m: int, beta: float, prior: Any) -> tuple[int, float, float, float]:
    tau_lo, tau_hi = as_prior(prior).as_tuple()
    m = check_int("m", m)
    beta = check_real("beta", beta, low=2.0 / tau_hi, low_open=True)  # the prior's top calibrates
    return m, beta, tau_lo, tau_hi


def _top_threshold_at(tau: np.ndarray, beta: float) -> np.ndarray:
    """The ``t`` with ``t + calibrated_shift(t, beta) = tau`` (increasing in ``t``: bisection)."""
    lo = np.full(tau.shape, 1.0 / beta)  # the left side tends to -inf here
    hi = np.maximum(tau, lo) + 1.0 + 1.0 / beta  # above: hi beta - 1 >= beta > 1, a shift >= 0
    for _ in range(100):  # halves the bracket to below 1e-16 relative
        mid = 0.5 * (lo + hi)
        above = mid + calibrated_shift(mid, beta) > tau
        hi, lo = np.where(above, mid, hi), np.where(above, lo, mid)
    return 0.5 * (lo + hi)


def failure_probability(tau: Any, m: int, beta: float, prior: Prior = DEFAULT_PRIOR
                        ) -> np.ndarray:
    """``P(c_T < tau)``: the probability that a corpus's calibrated label score lies below ``tau``.

    With ``c_T = tau_top + calibrated_shift(tau_top, beta)``, increasing in ``tau_top`` (the largest
    of ``m`` thresholds drawn uniformly on ``[tau_lo, tau_hi]``), ``c_T < tau`` exactly when
    ``tau_top < t*`` with ``t* + calibrated_shift(t*, beta) = tau``, so the probability is
    ``clip((t* - tau_lo) / (tau_hi - tau_lo), 0, 1) ** m``.

    Parameters
    ----------
    tau : array_like
        Fresh thresholds (any shape).
    m : int
        Tasks per corpus.
    beta : float
        The trained scale (``> 2 / tau_hi``: the prior's top end can be calibrated).
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).

    Returns
    -------
    np.ndarray of the shape of ``tau``
    """
    m, beta, tau_lo, tau_hi = _check_calibration(m, beta, prior)
    t_star = _top_threshold_at(np.asarray(tau, float), beta)
    return np.clip((t_star - tau_lo) / (tau_hi - tau_lo), 0.0, 1.0) ** m


def predicted_label_scores(m: int, beta: float, n_draws: int, *, seed: int = 0,
                           prior: Prior = DEFAULT_PRIOR) -> np.ndarray:
    """Label scores ``c_T = tau_top + calibrated_shift(tau_top, beta)`` of random corpora.

    Parameters
    ----------
    m : int
        Tasks per corpus (``tau_top`` is the largest of ``m`` prior draws).
    beta : float
        The trained scale (``> 2 / tau_hi``).
    n_draws : int
        Corpora drawn.
    seed : int
        Seed of ``numpy.random.default_rng``.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).

    Returns
    -------
    np.ndarray, shape ``(n_draws,)``
    """
    m, beta, tau_lo, tau_hi = _check_calibration(m, beta, prior)
    n_draws = check_int("n_draws", n_draws)
    rng = np.random.default_rng(seed)
    top = tau_lo + (tau_hi - tau_lo) * rng.random((n_draws, m)).max(1)
    return top + calibrated_shift(top, beta)


# ------------------------------------------------------------------------- the calibration study
#: thresholds at which the fraction of failed calibrations is shown
FAIL_TAUS = (0.5, 0.6, 0.7)


def calibration_study(ms: Sequence[int], n: int, n_corpora: int, beta_T: float, *, n_ctx: int,
                      seed: int = 0, frac: float = 0.3, prior: Prior = DEFAULT_PRIOR,
                      max_steps: int = 60_000, steps: int | None = None, n_taus: int = 24,
                      device: Any = "cpu") -> dict[int, dict[str, np.ndarray]]:
    """Train ``n_corpora`` corpora of ``m`` tasks x ``n`` examples for each ``m`` from ``beta_T/2``
    to ``beta_T`` (:func:`stumplib.book.studies.staged.train_staged`) and measure the trained heads at ``N = 1024``
    over a midpoint grid of ``n_taus`` thresholds covering the prior (cached).

    Parameters
    ----------
    ms : sequence of int
        Numbers of tasks, one study per ``m``.
    n : int
        Examples per task.
    n_corpora : int
        Corpora per ``m``.
    beta_T : float
        The scale the runs reach (they start at ``beta_T / 2``).
    n_ctx : int
        Fresh contexts per threshold at ``N = 1024``.
    seed : int
        Seed of the corpora (``seed + 7000 + 100 m + k``) and of the contexts (``seed + 2``).
    frac, prior, max_steps, steps, device
        As for :func:`stumplib.book.studies.staged.train_staged`.
    n_taus : int
        Thresholds of the midpoint grid over the prior.

    Returns
    -------
    ``{m: {"c", "abs", "sq", "reached", "diverged"}}``: per non-diverged corpus the label score
    ``c_T = b / beta``, the mean absolute error and the mean squared error per threshold
    ``(corpus, n_taus)``; ``reached`` (did the run reach ``beta_T`` before the cap) and
    ``diverged`` (per corpus, diverged runs are left out of the others).
    """
    from stumplib.book.studies.frozen import sq_errors
    from stumplib.book.studies.staged import train_staged
    from stumplib.core.memo import remember

    tau_lo, tau_hi = as_prior(prior).as_tuple()
    ms = [check_int(f"ms[{i}]", m) for i, m in enumerate(ms)]
    grid = list(tau_lo + (tau_hi - tau_lo) * (np.arange(n_taus) + 0.5) / n_taus)

    def compute() -> list[dict[str, np.ndarray]]:
        out = []
        for m in ms:
            r = train_staged(m, n, [seed + 7000 + 100 * m + k for k in range(n_corpora)],
                             beta0=beta_T / 2, beta_stop=beta_T, beta_end=beta_T, frac=frac,
                             prior=prior, device=device, steps=steps,
                             max_steps=max_steps)
            be, bb = r.at_stop()
            sq = sq_errors(be, bb, 1024, taus=grid, n_ctx=n_ctx, seed=seed + 2, device=device)
            out.append({"c": bb / be, "abs": np.sqrt(sq).mean((1, 2)), "sq": sq.mean(2),
                        "reached": r.stop_step[r.kept] >= 0, "diverged": r.diverged})
        return out

    cfg = {"ms": ms, "n": n, "K": n_corpora, "beta": beta_T, "ctx": n_ctx, "seed": seed,
           "frac": frac, "prior": [tau_lo, tau_hi], "steps": steps, "cap": max_steps,
           "n_taus": n_taus}
    return dict(zip(ms, remember("calibration_study", cfg, compute)))


def failure_fractions(study: dict[int, dict[str, np.ndarray]], taus: Sequence[float] = FAIL_TAUS,
                      level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fraction of corpora with ``c_T < tau`` per ``m`` and ``tau``, with Wilson intervals.

    Parameters
    ----------
    study : dict
        :func:`calibration_study`'s output.
    taus : sequence of float, length ``T``
        The thresholds ``tau`` of the failure ``c_T < tau``.
    level : float
        The Wilson intervals' coverage.

    Returns
    -------
    (fraction, lo, hi), each of shape ``(len(study), len(taus))``.
    """
    from stumplib.core.stats import wilson_interval

    k = np.array([[np.sum(s["c"] < t) for t in taus] for s in study.values()], float)
    n = np.array([[max(len(s["c"]), 1)] * len(taus) for s in study.values()], float)
    lo, hi = wilson_interval(k, n, level)
    return k / n, lo, hi


def mae_by_m(study: dict[int, dict[str, np.ndarray]], *, n_boot: int = 200, seed: int = 0,
             min_m: int = 8) -> tuple[np.ndarray, np.ndarray, Estimate]:
    """The prior-averaged MAE per ``m`` with a bootstrap over corpora, and its log-log slope in ``m``
    over ``m >= min_m`` (refitting every replicate; :func:`stumplib.core.stats.fit_replicates`).

    Parameters
    ----------
    study : dict
        :func:`calibration_study`'s output (``M`` values of ``m``).
    n_boot : int
        Bootstrap resamples of the corpora.
    seed : int
        Seed of the resampling (``seed + i`` for the ``i``-th ``m``).
    min_m : int
        The smallest ``m`` in the fit of the slope.

    Returns
    -------
    (mae ``(M,)``, replicates ``(n_boot, M)``, slope Estimate; ``Estimate.nan`` with fewer than two
    ``m``).
    """
    from stumplib.core.stats import fit_replicates

    ms = np.array(list(study), float)
    mae = np.array([s["abs"].mean() for s in study.values()])
    reps = np.stack([resample(s["abs"], lambda a: a.mean(1), n_boot=n_boot, seed=seed + i,
                              vectorised=True) if len(s["abs"]) >= 2 else np.full(n_boot, np.nan)
                     for i, s in enumerate(study.values())], 1)
    sel = ms >= min_m
    if np.unique(ms[sel]).size < 2:
        return mae, reps, Estimate.nan("bootstrap")
    return mae, reps, fit_replicates(ms[sel], mae[sel], reps[:, sel]).estimate


# ------------------------------------------------------------------------- own-calibration scales
def own_scales(shapes: Sequence[tuple[int, int]], betas: Sequence[float], *, n_corpora: int,
               seed: int = 0, level: float = 0.5, n_boot: int = 200,
               prior: Prior = DEFAULT_PRIOR, device: Any = "cpu"
               ) -> dict[tuple[int, int], tuple[OwnProfile, Estimate, np.ndarray]]:
    """:func:`own_profile` of every shape (cached) and its tracking scale with a bootstrap over
    corpora (:func:`scale_with_bootstrap`).

    Parameters
    ----------
    shapes : sequence of (int, int)
        The ``(m, n)`` pairs.
    betas : sequence of float
        The increasing scales of the grid.
    n_corpora : int
        Corpora per shape.
    seed : int
        Seed of the corpora (and ``seed + i`` of the ``i``-th shape's bootstrap).
    level : float
        The tracking level (relative gradient error) of :func:`scale_with_bootstrap`.
    n_boot : int
        Bootstrap resamples of the corpora.
    prior : Prior
        The threshold prior ``U[tau_lo, tau_hi]`` (a :class:`~stumplib.stump.Prior`, checked
        where it is built; default :data:`~stumplib.stump.DEFAULT_PRIOR`, ``U[0.2, 0.8]``).
    device : str or torch.device
        Where to compute.

    Returns
    -------
    ``{(m, n): (profile, Estimate, replicates)}``.
    """
    from stumplib.core.memo import remember

    tau_lo, tau_hi = as_prior(prior).as_tuple()
    shp = [(check_int("m", m), check_int("n", n)) for m, n in shapes]
    b = [float(v) for v in betas]

    def compute() -> list[OwnProfile]:
        return [own_profile(m, n, b, n_corpora=n_corpora, seed=seed, prior=prior,
                            device=device) for m, n in shp]

    cfg = {"shapes": shp, "grid": b, "C": n_corpora, "seed": seed, "prior": [tau_lo, tau_hi]}
    profs = remember("own_scales", cfg, compute)
    out = {}
    for i, (sh, prof) in enumerate(zip(shp, profs)):
        out[sh] = (prof, *scale_with_bootstrap(prof, level, n_boot=n_boot, seed=seed + i))
    return out
