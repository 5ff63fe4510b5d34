"""The one-head boundary limitation and reflected symmetrization (chapter 5).

Threshold prior ``[0, 1]``: every ``tau`` in the feature range can occur, the ends included.

Estimators of ``tau`` from a context ``(x, y)`` of ``N`` examples (one attention head with
parameters ``(beta, b)``; ``R(x, y) = (1 - x, 1 - y)`` is the reflection):

- ``one-head``: ``f(x, y)``; tends to the smallest positive example as ``beta -> inf`` (``c = b/beta > 1``).
- ``reflected``: ``1 - f(R(x, y))``; the same head applied to the reflected context, read back. It
  tends to the largest negative example.
- ``symmetrized``: the plain average of the two.
- ``count-weighted``: ``(n1 f + n0 (1 - f(R))) / N`` with ``n1``, ``n0`` the numbers of positive and
  negative examples (trust the side with more points; a rule a reader might try, kept as a contrast).
- ``boundary-aware``: ``(hi + lo) / 2`` with ``hi = f`` if the context has a positive example and
  ``hi = 1`` (the end of the feature range) if not, ``lo = 1 - f(R)`` if it has a negative example
  and ``lo = 0`` if not. Each head estimates one end of the posterior interval
  ``[max negative, min positive]``; when a side is empty that end is the end of the prior's range.
  In the sharp limit this is exactly the Bayes posterior mean under the prior ``[0, 1]``.
- ``min positive``, ``midpoint``, ``Bayes``: the statistical references of
  :mod:`stumplib.stump.baselines` (under the prior ``[0, 1]`` the Bayes posterior mean *is* the midpoint
  with range-end fallbacks).

Two evaluation paths:

- :func:`estimate_all` applies the definitions literally to any batch of contexts (reference path).
- :func:`profile_errors` evaluates every estimator on a grid of thresholds with *shared* contexts
  (common random numbers): the ``C`` contexts of ``N`` uniform features are sorted once, and for each
  threshold the attention sums over the negative prefix and positive suffix come from cumulative
  log-sum-exps, so ``T`` thresholds cost ``O(C N + T C)`` instead of ``O(T C N)``.

Exact sharp-limit (``beta -> inf``) MSEs of the order statistics, with the truncation at the ends of
the range, are in :func:`exact_mse`.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from stumplib.stump.baselines import bayes_posterior_mean, midpoint, min_positive
from stumplib.stump.model import estimate
from stumplib.core.stats import Estimate, interval, ratio_of_means, resample
from stumplib.stump.tasks import reflect
from stumplib.core.validation import check_choice, check_int, check_prior, check_real, check_tensor_finite
from stumplib.stump.prior import Prior

#: every estimator of the chapter, in plotting order
ESTIMATORS = ("one-head", "reflected", "symmetrized", "count-weighted", "boundary-aware",
              "min positive", "midpoint", "Bayes")
#: the estimators built from the attention head
HEAD_ESTIMATORS = ESTIMATORS[:5]


def _check_params(beta: Any, b: Any) -> tuple[float, float]:
    beta = check_real("beta", beta, low=0.0, low_open=True)
    b = check_real("b", b)
    return beta, b


def _check_estimators(estimators: Sequence[str]) -> tuple[str, ...]:
    if isinstance(estimators, str) or len(estimators) == 0:
        raise ValueError(f"estimators must be a non-empty list drawn from {list(ESTIMATORS)}; "
                         f"got {estimators!r}")
    return tuple(check_choice(f"estimators[{i}]", e, ESTIMATORS) for i, e in enumerate(estimators))


def _check_xy(x: torch.Tensor, y: torch.Tensor) -> None:
    if not (torch.is_tensor(x) and torch.is_tensor(y)) or x.shape != y.shape or x.ndim < 1:
        raise ValueError("x and y must be torch tensors of the same shape (..., N) with N >= 1")
    if x.shape[-1] < 1:
        raise ValueError(f"x must hold N >= 1 examples per context; got shape {tuple(x.shape)}")
    check_tensor_finite("x", x)
    check_tensor_finite("y", y)
    if x.numel() and (x.min() < 0 or x.max() > 1):
        raise ValueError("x must lie in the feature range [0, 1]")


def threshold_grid(n_tau: int, N: int, *, edge_points: int = 25, edge_step: float = 0.125
                   ) -> torch.Tensor:
    """Thresholds over ``[0, 1]``: ``n_tau`` equally spaced, refined near both ends on the scale 1/N.

    Adds ``j * edge_step / N`` and ``1 - j * edge_step / N`` for ``j = 0 .. edge_points - 1`` (the
    boundary layer where a side of the context is likely empty), sorted and de-duplicated.

    Parameters
    ----------
    n_tau : equally spaced thresholds (>= 2).
    N : context size (sets the refinement's scale).
    edge_points : refined thresholds at each end.
    edge_step : their spacing, in units of ``1/N``.

    Returns
    -------
    torch.Tensor, shape ``(T,)``, float64, with ``0`` and ``1`` included.
    """
    n_tau = check_int("n_tau", n_tau, minimum=2)
    N = check_int("N", N)
    edge_points = check_int("edge_points", edge_points, minimum=1)
    edge_step = check_real("edge_step", edge_step, low=0.0, low_open=True)
    d = np.minimum(np.arange(edge_points) * edge_step / N, 1.0)
    g = np.unique(np.round(np.concatenate([np.linspace(0, 1, n_tau), d, 1 - d]), 12))
    return torch.as_tensor(g, dtype=torch.float64)


def reflected_estimate(x: torch.Tensor, y: torch.Tensor, beta: Any, b: Any) -> torch.Tensor:
    """``1 - f_{beta,b}(R(x, y))``: the head applied to the reflected context, mapped back.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., N)``
    beta, b : float or tensor broadcastable to ``x.shape[:-1]`` (as in :func:`stumplib.stump.model.estimate`)

    Returns
    -------
    torch.Tensor, shape ``x.shape[:-1]`` (broadcast with ``beta``)
    """
    xr, yr = reflect(x, y)
    return 1.0 - estimate(xr, yr, beta, b)


def combine(f: torch.Tensor, f_ref: torch.Tensor, n_pos: torch.Tensor, N: int,
            rule: str) -> torch.Tensor:
    """Combine the head ``f`` and its reflection ``f_ref`` (same shape) by ``rule``.

    Parameters
    ----------
    f, f_ref : torch.Tensor, same shape ``S``
    n_pos : torch.Tensor, shape broadcastable to ``S``: number of positive examples in the context
    N : context size
    rule : ``"symmetrized"`` (plain average), ``"count-weighted"`` or ``"boundary-aware"``
        (see the module docstring; any other value gives the boundary-aware rule: callers pass
        names checked by :func:`estimate_all` or :func:`profile_errors`).

    Returns
    -------
    torch.Tensor, shape ``S``: the combined estimate.
    """
    if rule == "symmetrized":
        return 0.5 * (f + f_ref)
    n_pos = n_pos.to(f.dtype)
    if rule == "count-weighted":
        return (n_pos * f + (N - n_pos) * f_ref) / N
    hi = torch.where(n_pos > 0, f, torch.ones_like(f))
    lo = torch.where(n_pos < N, f_ref, torch.zeros_like(f_ref))
    return 0.5 * (hi + lo)


def estimate_all(x: torch.Tensor, y: torch.Tensor, beta: Any, b: Any,
                 estimators: Sequence[str] = ESTIMATORS) -> dict[str, torch.Tensor]:
    """Every estimator on a batch of contexts, from the literal definitions (reference path).

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., N)``; features in ``[0, 1]`` and 0/1 labels
    beta, b : floats, ``beta > 0``: the head's attention scale and label score
    estimators : names from :data:`ESTIMATORS`

    Returns
    -------
    dict name -> torch.Tensor of shape ``x.shape[:-1]``
    """
    estimators = _check_estimators(estimators)
    _check_xy(x, y)
    beta, b = _check_params(beta, b)
    N = x.shape[-1]
    out: dict[str, torch.Tensor] = {}
    f = estimate(x, y, beta, b)
    f_ref = reflected_estimate(x, y, beta, b)
    n_pos = (y > 0.5).sum(-1)
    for name in estimators:
        if name == "one-head":
            out[name] = f
        elif name == "reflected":
            out[name] = f_ref
        elif name in ("symmetrized", "count-weighted", "boundary-aware"):
            out[name] = combine(f, f_ref, n_pos, N, name)
        elif name == "min positive":
            out[name] = min_positive(x, y)
        elif name == "midpoint":
            out[name] = midpoint(x, y)
        else:
            out[name] = bayes_posterior_mean(x, y, Prior(0.0, 1.0))
    return out


def _sided_log_sums(xs: torch.Tensor, beta: float) -> tuple[torch.Tensor, ...]:
    """Cumulative log-sum-exps of ``-beta x`` and ``-beta x + log x`` over sorted contexts.

    ``xs`` has shape ``(C, N)`` sorted ascending. Returns ``(A, Ax, B, Bx)`` of shape ``(C, N + 1)``:
    ``A[:, k]`` is the log-sum over the first ``k`` examples (the negatives when ``k`` of them lie
    below the threshold), ``B[:, k]`` over the last ``N - k`` (the positives), without the label
    score; ``Ax``, ``Bx`` the same with the value ``x`` inside the sum.
    """
    C = xs.shape[0]
    s = -beta * xs
    sx = s + torch.log(xs)  # log 0 = -inf: a zero feature contributes nothing to sum w x
    ninf = torch.full((C, 1), float("-inf"), dtype=xs.dtype, device=xs.device)
    A = torch.cat([ninf, torch.logcumsumexp(s, -1)], -1)
    Ax = torch.cat([ninf, torch.logcumsumexp(sx, -1)], -1)
    B = torch.cat([torch.logcumsumexp(s.flip(-1), -1).flip(-1), ninf], -1)
    Bx = torch.cat([torch.logcumsumexp(sx.flip(-1), -1).flip(-1), ninf], -1)
    return A, Ax, B, Bx


def _head_on_grid(xs: torch.Tensor, tau: torch.Tensor, beta: float, b: float
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """The head's estimate for every threshold in ``tau`` (shape ``(T,)``) on sorted contexts
    ``xs`` (``(C, N)``) labelled by the stump. Returns ``f (T, C)`` and the number of negatives
    ``k (T, C)``."""
    T = tau.shape[0]
    C = xs.shape[0]
    k = torch.searchsorted(xs.contiguous(), tau[None, :].expand(C, T).contiguous(), right=False).T
    A, Ax, B, Bx = _sided_log_sums(xs, beta)
    g = lambda M: torch.gather(M, 1, k.T).T  # noqa: E731  (T, C)
    num = torch.logaddexp(g(Ax), g(Bx) + b)
    den = torch.logaddexp(g(A), g(B) + b)
    return torch.exp(num - den), k


def profile_errors(x: torch.Tensor, tau: torch.Tensor, beta: Any, b: Any,
                   estimators: Sequence[str] = ESTIMATORS) -> dict[str, torch.Tensor]:
    """Errors ``estimate - tau`` of every estimator on a threshold grid, with shared contexts.

    Each context's features ``x[c]`` are labelled by the stump of every threshold ``tau[t]``
    (``y = 1{x >= tau}``), so estimators and thresholds are compared on the same draws.

    Parameters
    ----------
    x : torch.Tensor, shape ``(C, N)``
        Features in ``[0, 1]`` (e.g. ``torch.rand``), any order.
    tau : torch.Tensor, shape ``(T,)``
        Thresholds in ``[0, 1]``.
    beta, b : floats, ``beta > 0``
    estimators : names from :data:`ESTIMATORS`

    Returns
    -------
    dict name -> torch.Tensor of shape ``(T, C)`` (errors), plus ``"n_pos"`` (``(T, C)``, the number
    of positive examples).
    """
    estimators = _check_estimators(estimators)
    beta, b = _check_params(beta, b)
    if not torch.is_tensor(x) or x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must be a torch tensor of shape (C, N) with C, N >= 1; got "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    if not torch.is_tensor(tau) or tau.ndim != 1 or tau.shape[0] < 1:
        raise ValueError("tau must be a non-empty 1-D torch tensor of thresholds in [0, 1]")
    check_tensor_finite("x", x)
    check_tensor_finite("tau", tau)
    if x.min() < 0 or x.max() > 1:
        raise ValueError("x must lie in the feature range [0, 1]")
    if tau.min() < 0 or tau.max() > 1:
        raise ValueError("tau must lie in [0, 1]")
    tau = tau.to(dtype=x.dtype, device=x.device)
    C, N = x.shape
    xs = torch.sort(x, -1).values
    f, k = _head_on_grid(xs, tau, beta, b)
    # the reflected context: features 1 - x (sorted ascending = reversed), threshold 1 - tau
    xr = (1.0 - xs).flip(-1)
    fr, _ = _head_on_grid(xr, 1.0 - tau, beta, b)
    f_ref = 1.0 - fr
    n_pos = N - k
    ones = torch.ones(tau.shape[0], C, dtype=x.dtype, device=x.device)
    pad_lo = torch.cat([torch.zeros(C, 1, dtype=x.dtype, device=x.device), xs], -1)  # max negative
    pad_hi = torch.cat([xs, torch.ones(C, 1, dtype=x.dtype, device=x.device)], -1)   # min positive
    maxneg = torch.gather(pad_lo, 1, k.T).T
    minpos = torch.gather(pad_hi, 1, k.T).T
    t = tau[:, None]
    out: dict[str, torch.Tensor] = {}
    for name in estimators:
        if name == "one-head":
            e = f
        elif name == "reflected":
            e = f_ref
        elif name in ("symmetrized", "count-weighted", "boundary-aware"):
            e = combine(f, f_ref, n_pos, N, name)
        elif name == "min positive":
            e = minpos
        else:  # midpoint, and Bayes under the prior [0, 1] (the same estimator)
            e = 0.5 * (maxneg + minpos)
        out[name] = e - t * ones
    out["n_pos"] = n_pos
    return out


def side_empty_probability(tau: Any, N: int) -> dict[str, np.ndarray]:
    """Probability that one side of a context of ``N`` uniform examples is empty.

    Parameters
    ----------
    tau : thresholds (array_like).
    N : context size.

    Returns
    -------
    dict of np.ndarray (shape of ``tau``): ``no_positive = tau^N``, ``no_negative = (1 - tau)^N``,
    and ``tail = exp(-N (1 - tau))``: the mass of the interior gap law ``Exp(N)`` beyond the
    distance ``1 - tau`` to the range end, the tail that the boundary truncates (``tau^N`` is
    ``exp(N log tau) <= exp(-N (1 - tau))``).
    """
    N = check_int("N", N)
    t = np.asarray(tau, dtype=float)
    if t.size == 0 or not np.all(np.isfinite(t)) or t.min() < 0 or t.max() > 1:
        raise ValueError("tau must be a non-empty array of finite thresholds in [0, 1]")
    return {"no_positive": t ** N, "no_negative": (1 - t) ** N, "tail": np.exp(-N * (1 - t))}


def exact_mse(name: str, tau: Any, N: int) -> np.ndarray:
    """Exact MSE of the sharp-limit (``beta -> inf``) estimators at a fixed threshold.

    With ``N`` uniform features, the gaps ``G+ = min positive - tau`` and ``G- = tau - max negative``
    satisfy ``P(G+ > a, G- > b) = (1 - a - b)^N``; each is truncated at the range end
    (``G+ <= 1 - tau``, ``G- <= tau``, reached exactly when that side is empty).

    Parameters
    ----------
    name : ``"min positive"`` (``E min(G+, 1 - tau)^2``; about ``2/N^2`` in the interior),
        ``"one-head"`` (the sharp head with ``c > 1``: the smallest positive, or the smallest example
        when no positive exists), ``"midpoint"`` / ``"Bayes"`` / ``"boundary-aware"`` (the same
        estimator under the prior ``[0, 1]``; about ``1/(2 N^2)`` in the interior).
    tau : array_like of thresholds in ``[0, 1]``
    N : context size (>= 1)

    Returns
    -------
    np.ndarray, shape of ``tau``
    """
    name = check_choice("name", name, ("min positive", "one-head", "midpoint", "Bayes",
                                       "boundary-aware"))
    N = check_int("N", N)
    t = np.asarray(tau, dtype=float)
    if t.size == 0 or not np.all(np.isfinite(t)) or t.min() < 0 or t.max() > 1:
        raise ValueError("tau must be a non-empty array of finite thresholds in [0, 1]")

    def second_moment(u: np.ndarray) -> np.ndarray:  # E min(G, 1 - u)^2 = 2 int_0^{1-u} s (1-s)^N ds
        return 2 * (1 / (N + 1) - 1 / (N + 2) - u ** (N + 1) / (N + 1) + u ** (N + 2) / (N + 2))

    A_pos = second_moment(t)
    if name == "min positive":
        return A_pos
    if name == "one-head":
        # no positive (prob tau^N): the head picks the smallest of N uniforms on [0, tau],
        # error tau (V - 1) with V ~ Beta(1, N): E (1 - V)^2 = N / (N + 2)
        return A_pos - (1 - t) ** 2 * t ** N + t ** (N + 2) * N / (N + 2)
    A_neg = second_moment(1 - t)
    cross = (1 - (1 - t) ** (N + 2) - t ** (N + 2)) / ((N + 1) * (N + 2))
    return 0.25 * (A_pos + A_neg - 2 * cross)


def _tau_mask(tau: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    m = (tau >= lo) & (tau <= hi)
    if not bool(m.any()):
        raise ValueError(f"no threshold of the grid lies in [{lo}, {hi}]")
    return m


def interior_ratio(err_num: torch.Tensor, err_den: torch.Tensor, tau: torch.Tensor,
                   interior: tuple[float, float] = (0.2, 0.8), *, n_boot: int = 2000,
                   level: float = 0.95, seed: int = 0) -> Estimate:
    """MSE of one estimator over another's, averaged over the interior thresholds (interval within
    the support: never below 0).

    Parameters
    ----------
    err_num, err_den : torch.Tensor, shape ``(T, C)``: errors on shared contexts (from
        :func:`profile_errors`)
    tau : torch.Tensor, shape ``(T,)``
    interior : the thresholds ``interior[0] <= tau <= interior[1]`` that are averaged
    n_boot, level, seed : bootstrap resamples, interval level and seed

    Returns
    -------
    Estimate
        :func:`stumplib.core.stats.ratio_of_means`: the interval resamples contexts (each context's
        squared errors averaged over the interior thresholds form one paired sample).
    """
    lo, hi = check_prior(*interior)
    if err_num.shape != err_den.shape or err_num.ndim != 2 or err_num.shape[0] != tau.shape[0]:
        raise ValueError("err_num and err_den must have the same shape (T, C) with T = len(tau)")
    m = _tau_mask(tau, lo, hi)
    return ratio_of_means((err_num[m] ** 2).mean(0), (err_den[m] ** 2).mean(0),
                          n_boot=n_boot, level=level, seed=seed)


def corpus_ratios(x: torch.Tensor, tau: torch.Tensor, heads: Any,
                  interior: tuple[float, float] = (0.2, 0.8), *, n_boot: int = 2000,
                  level: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """The interior ratios of the heads trained on several corpora, pooled: one number per ratio
    with an interval over contexts *and* corpora.

    Each head's errors come from :func:`profile_errors` on the same contexts; each context's squared
    errors are averaged over the interior thresholds, giving ``(C, R)`` arrays, and the ratios of
    their means get :func:`stumplib.core.stats.two_way_ratio`'s interval (contexts and corpora
    resampled, the few-corpora correction on the log scale, never below 0). The trained heads
    differ between corpora far more than the contexts make a head's ratio vary, so an interval over
    contexts alone (one head) would say little about "the trained head".

    Parameters
    ----------
    x : torch.Tensor, shape ``(C, N)``
        Shared contexts.
    tau : torch.Tensor, shape ``(T,)``
        The threshold grid.
    heads : array_like, shape ``(R, 2)``
        ``(beta, b)`` of the head trained on each of ``R`` corpora.
    interior : tuple of float
        The thresholds ``interior[0] <= tau <= interior[1]`` averaged per context.
    n_boot, level, seed : int, float, int
        Bootstrap resamples, interval level and seed.

    Returns
    -------
    dict
        ``ratio_sym`` (one-head over symmetrized interior MSE) and ``ratio_bayes`` (symmetrized over
        the Bayes estimator's, the prior ``[0, 1]``: no floor at fixed thresholds), both
        :class:`~stumplib.core.stats.Estimate`; ``mse_one`` (the pooled interior one-head MSE) and
        ``n_corpora``.
    """
    from stumplib.core.stats import two_way_ratio

    h = np.asarray(heads, dtype=float)
    if h.ndim != 2 or h.shape[1] != 2 or h.shape[0] < 1:
        raise ValueError(f"heads must have shape (R, 2): (beta, b) per corpus; got {h.shape}")
    lo, hi = check_prior(*interior)
    m = _tau_mask(tau, lo, hi)
    inner: dict[str, list[np.ndarray]] = {}
    for beta, b in h:
        err = profile_errors(x, tau, float(beta), float(b), ("one-head", "symmetrized", "Bayes"))
        for k in ("one-head", "symmetrized", "Bayes"):
            inner.setdefault(k, []).append((err[k][m] ** 2).mean(0).cpu().numpy())
    one, sym = np.stack(inner["one-head"], 1), np.stack(inner["symmetrized"], 1)
    bayes = inner["Bayes"][0]  # the Bayes estimator does not depend on the head
    boot = dict(n_boot=n_boot, level=level, seed=seed)
    return {"ratio_sym": two_way_ratio(one, sym, **boot),
            "ratio_bayes": two_way_ratio(sym, bayes, **boot),
            "mse_one": float(one.mean()), "n_corpora": int(h.shape[0])}


def boundary_excess(err: torch.Tensor, tau: torch.Tensor, N: int, *, width: float = 2.0,
                    interior: tuple[float, float] = (0.2, 0.8), n_boot: int = 2000,
                    level: float = 0.95, seed: int = 0) -> Estimate:
    """The largest MSE within ``width / N`` of the upper boundary over the interior average MSE.

    Parameters
    ----------
    err : torch.Tensor, shape ``(T, C)``: one estimator's errors on shared contexts
    tau : torch.Tensor, shape ``(T,)``
    N : context size
    width : the boundary zone is ``tau >= 1 - width / N``
    interior : the interior thresholds whose MSE is the reference
    n_boot, level, seed : bootstrap resamples (:func:`stumplib.core.stats.resample`), level, seed

    Returns
    -------
    Estimate
        with a percentile bootstrap interval over contexts.
    """
    N = check_int("N", N)
    width = check_real("width", width, low=0.0, low_open=True)
    lo, hi = check_prior(*interior)
    if err.ndim != 2 or err.shape[0] != tau.shape[0]:
        raise ValueError("err must have shape (T, C) with T = len(tau)")
    e2 = (err ** 2).detach().cpu().numpy()
    tau_np = tau.detach().cpu().numpy()
    mi = _tau_mask(tau, lo, hi).cpu().numpy()
    mb = tau_np >= 1 - width / N
    if not mb.any():
        raise ValueError(f"no threshold of the grid lies within {width}/N of the upper boundary")
    inner = e2[mi].mean(0)  # (C,)
    edge = e2[mb]  # (Tb, C)
    value = float(edge.mean(1).max() / inner.mean())
    reps = resample((edge.T, inner), lambda ed, inn: ed.mean(0).max() / inn.mean(),
                    n_boot=n_boot, seed=seed)
    lo_b, hi_b = interval(reps, level)
    return Estimate(value, float(lo_b), float(hi_b), "bootstrap", level, None, n_boot)


def mse_profile(err: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """MSE over contexts and its standard error, for errors of shape ``(T, C)``.

    Parameters
    ----------
    err : torch.Tensor, shape ``(T, C)``: errors at ``T`` thresholds on ``C`` contexts.

    Returns
    -------
    mse, se : np.ndarray, shape ``(T,)``
    """
    if not torch.is_tensor(err) or err.ndim != 2 or err.shape[1] < 2:
        raise ValueError("err must be a torch tensor of shape (T, C) with C >= 2")
    e2 = err ** 2
    return (e2.mean(1).cpu().numpy(), (e2.std(1) / e2.shape[1] ** 0.5).cpu().numpy())


# ----------------------------------------------------------------------------- chapter 5 runs
def train_heads(configs: Sequence[Any], steps: int, *, device: Any = "cpu") -> dict[str, np.ndarray]:
    """Train one head per corpus (:func:`stumplib.stump.trainer.train_gd`) and say how much of each final
    corpus loss comes from tasks whose context holds no positive example.

    Parameters
    ----------
    configs : one :class:`stumplib.stump.trainer.RunConfig` per corpus.
    steps : gradient-descent steps.
    device : where to train.

    Returns
    -------
    dict with ``beta, b, loss, n_empty, share_empty``, each of shape ``(R,)``.
    """
    from stumplib.stump.trainer import make_corpora, train_gd

    tr = train_gd(configs, steps, device=device, progress=True)
    corp = make_corpora(configs, device)
    f_c = estimate(corp["x"], corp["y"], torch.as_tensor(tr.final_beta, device=corp["x"].device)[:, None],
                   torch.as_tensor(tr.final_b, device=corp["x"].device)[:, None], mask=corp["mask"])
    tm = corp["task_mask"].double()
    e2_c = (f_c - corp["tau"]) ** 2 * tm
    empty_c = ((corp["y"] * corp["mask"]).sum(-1) == 0).double() * tm
    return {"beta": tr.final_beta, "b": tr.final_b, "loss": tr.loss[:, -1], "n_empty": empty_c.sum(-1).cpu().numpy(),
            "share_empty": ((e2_c * empty_c).sum(-1) / e2_c.sum(-1)).cpu().numpy()}


def profile_record(N: int, beta: float, b: float, tau: torch.Tensor, err: dict[str, torch.Tensor], *,
                   interior: tuple[float, float], boundary_width: float, n_boot: int, seed: int,
                   estimators: Sequence[str] = ESTIMATORS) -> dict[str, Any]:
    """MSE profiles (with standard errors) of :func:`profile_errors`' output, ``P(no positive)`` and
    the three headline ratios (interior one-head / symmetrized, symmetrized / Bayes, boundary excess).

    Parameters
    ----------
    N : context size.
    beta, b : the head's parameters.
    tau : torch.Tensor, shape ``(T,)``: the threshold grid.
    err : :func:`profile_errors`' output (errors of shape ``(T, C)`` per estimator, and ``n_pos``).
    interior : the interior thresholds averaged by the ratios.
    boundary_width : the boundary zone is ``tau >= 1 - boundary_width / N``.
    n_boot, seed : bootstrap resamples and seed of the intervals.
    estimators : the estimators to profile.

    Returns
    -------
    dict: ``tau, beta, b``, ``(mse, se)`` per estimator, ``p_no_pos``, and the estimates
    ``ratio_sym``, ``ratio_bayes``, ``excess``.
    """
    rec = {"tau": tau.cpu().numpy(), "beta": beta, "b": b, **{name: mse_profile(err[name]) for name in estimators}}
    rec["p_no_pos"] = (err["n_pos"] == 0).double().mean(1).cpu().numpy()
    boot = dict(n_boot=n_boot, seed=seed)
    rec["ratio_sym"] = interior_ratio(err["one-head"], err["symmetrized"], tau, interior, **boot)
    rec["ratio_bayes"] = interior_ratio(err["symmetrized"], err["Bayes"], tau, interior, **boot)
    rec["excess"] = boundary_excess(err["one-head"], tau, N, width=boundary_width, interior=interior, **boot)
    return rec

