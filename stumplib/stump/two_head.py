"""Two heads trained end to end: the head of chapter 1, its mirror, and a learned combination.

The model (chapter 5, "does gradient descent discover the symmetrization?")::

    f1 = f_{beta1, b1}(x, y)               # the head: the smallest positive example
    f2 = 1 - f_{beta2, b2}(1 - x, 1 - y)   # the mirror, on the reflected context:
                                           # the largest negative example
    F  = w1 f1 + w2 f2 + w0                # (w1, w2, w0) = A phi, A of shape (3, 4)

with ``f`` the estimator of :mod:`stumplib.stump.model` and the context features::

    phi = (1, q, pos, neg),   q = n1 / N,   pos = 1{n1 > 0},   neg = 1{n0 > 0}

(``n1``, ``n0`` the numbers of positive and negative examples). Each feature is something an
attention head reads off the context: ``q`` is what a head with uniform attention and value ``y``
returns, and ``pos`` (``neg``) says whether the head (the mirror) has any example on its own side:
it is 0 exactly when the head's attention mass on positive examples, ``sum_i w_i y_i``, is 0,
whatever its scale.

**Why this family.** It is the smallest family that is linear in its parameters and holds every
hand-made rule of chapter 5 *exactly* (:data:`RULES`): one head (``w = (1, 0, 0)``), the plain
symmetrization (fixed halves), count weighting (``w1 = q``, ``w2 = 1 - q``) and the boundary-aware
rule (``w1 = pos / 2``, ``w2 = neg / 2``, ``w0 = (1 - pos) / 2``: average the two ends, an empty
side replaced by the end of the range), which in the sharp limit is the Bayes estimator under the
prior [0, 1]. Linearity keeps the combination's gradient trivial (``dF/dA_kj = h_k phi_j`` with
``h = (f1, f2, 1)``) and its loss quadratic for fixed heads, so its stable step is known exactly
(:func:`combination_step`). A softmax gate over log-counts would also hold count weighting, but
neither the fixed halves with a fallback nor the one head except as a limit.

Gradients are analytic: ``dF/dbeta1 = -w1 Var_w(x)``, ``dF/db1 = w1 Cov_w(x, y)`` (chapter 1's
covariances), and for the mirror the same on the reflected context with the sign flipped.
Training (:func:`train_two_head`) is constant-step full-batch gradient descent on the corpora of
:func:`stumplib.stump.trainer.make_corpora`, all runs at once (in chunks of
:data:`CHUNK_ELEMENTS` examples), float64, one CPU/CUDA path; the heads take the step ``lr`` of
their :class:`~stumplib.stump.trainer.RunConfig` and the combination a fixed fraction of its own
stable step (the two blocks differ in curvature by orders of magnitude, so one common step would
either freeze the combination or throw the heads). With the combination frozen at one head the
loop is one-head gradient descent, the same path as :func:`stumplib.stump.trainer.train_gd`.

The evaluation on chapter 5's axes (:func:`sq_errors`, :func:`rule_sq_errors`,
:func:`profile_summary`, :func:`paired_ratio`: intervals over contexts and corpora) completes the
module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE, resolve_device
from stumplib.core.errors import TrainingDiverged
from stumplib.core.stats import Estimate, two_way_ratio
from stumplib.core.validation import (as_real_tensor, check_choice, check_int, check_prior,
                                      check_real, check_tensor_finite)
from stumplib.stump.model import check_context, estimate_and_grad_unchecked
from stumplib.stump.trainer import DEFAULT_TRAIN_OPTIONS, TrainOptions

#: the context features of the combination, in the order of ``A``'s columns
FEATURES = ("1", "q = n1/N", "pos = 1{n1 > 0}", "neg = 1{n0 > 0}")
#: the combined terms, in the order of ``A``'s rows
TERMS = ("head f1", "mirror f2", "constant")

#: chapter 5's hand-made combinations as weight matrices ``A`` (rows :data:`TERMS`, columns
#: :data:`FEATURES`)
RULES: dict[str, tuple[tuple[float, ...], ...]] = {
    "one-head": ((1, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0)),
    "symmetrized": ((0.5, 0, 0, 0), (0.5, 0, 0, 0), (0, 0, 0, 0)),
    "count-weighted": ((0, 1, 0, 0), (1, -1, 0, 0), (0, 0, 0, 0)),
    "boundary-aware": ((0, 0, 0.5, 0), (0, 0, 0, 0.5), (0.5, 0, -0.5, 0)),
}


def rule(name: str, *, device: Any = "cpu", dtype: torch.dtype = DEFAULT_DTYPE) -> torch.Tensor:
    """The weight matrix of a hand-made rule.

    Parameters
    ----------
    name : a key of :data:`RULES`.
    device, dtype : where and in which type.

    Returns
    -------
    torch.Tensor, shape ``(3, 4)``
    """
    name = check_choice("name", name, tuple(RULES))
    return torch.tensor(RULES[name], dtype=dtype, device=resolve_device(device))


def features(y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The context features ``phi = (1, n1/N, 1{n1 > 0}, 1{n0 > 0})``.

    Parameters
    ----------
    y : torch.Tensor, shape ``(..., N)``: 0/1 labels.
    mask : optional bool tensor like ``y``: ``False`` marks padding (not counted).

    Returns
    -------
    torch.Tensor, shape ``(..., 4)``, dtype of ``y``.
    """
    if not torch.is_tensor(y) or y.ndim < 1 or y.shape[-1] < 1:
        raise ValueError("y must be a torch tensor of labels of shape (..., N) with N >= 1")
    if mask is not None and (not torch.is_tensor(mask) or mask.shape != y.shape or mask.dtype != torch.bool):
        raise ValueError(f"mask must be a bool tensor of shape {tuple(y.shape)}")
    if mask is None:
        n1 = y.sum(-1)
        N = torch.full_like(n1, y.shape[-1])
    else:
        m = mask.to(y.dtype)
        n1 = (y * m).sum(-1)
        N = m.sum(-1)
    return _phi(n1, N)


def _phi(n1: torch.Tensor, N: torch.Tensor | float) -> torch.Tensor:
    ones = torch.ones_like(n1)
    return torch.stack([ones, n1 / N, (n1 > 0.5).to(n1.dtype), (n1 < N - 0.5).to(n1.dtype)], -1)


def _check_params(heads: Any, A: Any, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    heads = as_real_tensor("heads", heads, dtype=like.dtype, device=like.device)
    A = as_real_tensor("A", A, dtype=like.dtype, device=like.device)
    if heads.ndim < 1 or heads.shape[-1] != 4:
        raise ValueError(f"heads must have shape (..., 4) = (beta1, b1, beta2, b2); got {tuple(heads.shape)}")
    if A.ndim < 2 or A.shape[-2:] != (3, 4):
        raise ValueError(f"A must have shape (..., 3, 4) (terms x features); got {tuple(A.shape)}")
    return heads, A


def estimate(x: torch.Tensor, y: torch.Tensor, heads: Any, A: Any,
             mask: torch.Tensor | None = None) -> torch.Tensor:
    """The two-head estimate ``F = w1 f1 + w2 f2 + w0`` of each context's threshold.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., N)``: features and labels.
    heads : shape ``(4,)`` or ``(..., 4)`` broadcastable to ``x.shape[:-1]``: ``(beta1, b1, beta2, b2)``.
    A : shape ``(3, 4)`` or ``(..., 3, 4)``, broadcastable like ``heads``: the combination.
    mask : optional bool tensor like ``x``: ``False`` marks padding.

    Returns
    -------
    torch.Tensor, shape ``x.shape[:-1]`` (broadcast with the parameters' batch shape).
    """
    return estimate_and_grad(x, y, heads, A, mask)[0]


def estimate_and_grad(x: torch.Tensor, y: torch.Tensor, heads: Any, A: Any,
                      mask: torch.Tensor | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The estimate and its analytic derivatives in every parameter.

    Parameters
    ----------
    x, y, heads, A, mask : as in :func:`estimate`.

    Returns
    -------
    F : shape ``S`` (the broadcast batch shape).
    dF_dheads : shape ``S + (4,)``: derivatives in ``(beta1, b1, beta2, b2)``.
    dF_dA : shape ``S + (3, 4)``: ``h_k phi_j`` with ``h = (f1, f2, 1)``.
    """
    check_context(x, y, mask)
    heads, A = _check_params(heads, A, x)
    return _estimate_and_grad2(x, y, heads, A, mask)


def _estimate_and_grad2(x: torch.Tensor, y: torch.Tensor, heads: torch.Tensor, A: torch.Tensor,
                        mask: torch.Tensor | None):
    """:func:`estimate_and_grad` without checks (the training loop)."""
    f1, d1b, d1c = estimate_and_grad_unchecked(x, y, heads[..., 0], heads[..., 1], mask)
    g2, d2b, d2c = estimate_and_grad_unchecked(1.0 - x, 1.0 - y, heads[..., 2], heads[..., 3], mask)
    f2 = 1.0 - g2
    phi = features(y, mask)
    w = (A * phi[..., None, :]).sum(-1)  # (..., 3)
    F = w[..., 0] * f1 + w[..., 1] * f2 + w[..., 2]
    dH = torch.stack([w[..., 0] * d1b, w[..., 0] * d1c, -w[..., 1] * d2b, -w[..., 1] * d2c], -1)
    h = torch.stack([f1, f2, torch.ones_like(f1)], -1)
    dA = h[..., :, None] * phi[..., None, :]
    return F, dH, dA


def _corpus(corpora: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    x, y, tau = corpora["x"], corpora["y"], corpora["tau"]
    mask = corpora.get("mask")
    tm = corpora.get("task_mask")
    tm = torch.ones_like(tau) if tm is None else tm.to(tau.dtype)
    return x, y, tau, mask, tm


def loss_and_grad(corpora: dict[str, torch.Tensor], heads: Any, A: Any
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Corpus loss ``L_r = (1/m_r) sum_j (F_j - tau_j)^2`` of each run and its gradients.

    Parameters
    ----------
    corpora : :func:`stumplib.stump.trainer.make_corpora`'s dict (``tau (R, M)``, ``x, y (R, M, N)``,
        optional ``mask``, ``task_mask``) or any dict with ``tau, x, y`` of those shapes.
    heads : torch.Tensor, shape ``(R, 4)``
        ``(beta_1, b_1, beta_2, b_2)``: each head's scale and label score.
    A : torch.Tensor, shape ``(R, 3, 4)``
        The combination's parameters (weights ``A phi`` of the two heads and the constant).

    Returns
    -------
    L : shape ``(R,)``; dL_dheads : shape ``(R, 4)``; dL_dA : shape ``(R, 3, 4)``.
    """
    x, y, tau, mask, tm = _check_corpora(corpora)
    heads, A = _check_params(heads, A, x)
    if heads.shape != (x.shape[0], 4) or A.shape != (x.shape[0], 3, 4):
        raise ValueError(f"heads and A must have shapes ({x.shape[0]}, 4) and ({x.shape[0]}, 3, 4)")
    return _loss_and_grad(x, y, tau, mask, tm, heads, A)


def _check_corpora(corpora: Any) -> tuple[torch.Tensor, ...]:
    if not isinstance(corpora, dict) or not all(k in corpora for k in ("tau", "x", "y")):
        raise ValueError("corpora must be a dict with tau (R, M), x and y (R, M, N), as make_corpora gives")
    x, y, tau, mask, tm = _corpus(corpora)
    check_context(x, y, mask)
    if x.ndim != 3 or tau.shape != x.shape[:2]:
        raise ValueError(f"corpora: tau must have shape (R, M) and x, y shape (R, M, N); got "
                         f"{tuple(tau.shape)} and {tuple(x.shape)}")
    check_tensor_finite("tau", tau)
    return x, y, tau, mask, tm


#: runs are processed in chunks of at most this many examples (runs x tasks x examples), so that
#: the attention's temporaries of a paper-scale batch (48 runs of 1024 x 1024) stay near 1 GB
CHUNK_ELEMENTS = 1 << 24


def _chunks(x: torch.Tensor) -> list[slice]:
    step = max(1, CHUNK_ELEMENTS // max(1, x.shape[1] * x.shape[2]))
    return [slice(i, i + step) for i in range(0, x.shape[0], step)]


def _loss_and_grad(x, y, tau, mask, tm, heads, A):
    out = []
    for c in _chunks(x):
        mk = None if mask is None else mask[c]
        F, dH, dA = _estimate_and_grad2(x[c], y[c], heads[c, None], A[c, None], mk)
        m = tm[c].sum(-1)
        r = (F - tau[c]) * tm[c]
        out.append(((r * r).sum(-1) / m, 2 * (r[..., None] * dH).sum(1) / m[:, None],
                    2 * (r[..., None, None] * dA).sum(1) / m[:, None, None]))
    return tuple(torch.cat(v) for v in zip(*out))


def combination_step(corpora: dict[str, torch.Tensor], heads: Any, fraction: float = 1.0) -> torch.Tensor:
    """``fraction / lambda_max`` of the combination's Hessian, per run (stable below ``2 / lambda_max``).

    For fixed heads the loss is quadratic in ``A`` with Hessian ``(2/m) sum_j g_j g_j^T``,
    ``g_j = vec(h_j phi_j^T)``; constant-step GD on ``A`` is stable for steps below ``2 / lambda_max``.

    Parameters
    ----------
    corpora : as in :func:`loss_and_grad`.
    heads : torch.Tensor, shape ``(R, 4)``
        The heads, held fixed.
    fraction : the step in units of ``1 / lambda_max``, in ``(0, 2)``.

    Returns
    -------
    torch.Tensor, shape ``(R,)``
    """
    fraction = check_real("fraction", fraction, low=0.0, high=2.0, low_open=True, high_open=True)
    x, y, tau, mask, tm = _check_corpora(corpora)
    heads = as_real_tensor("heads", heads, dtype=x.dtype, device=x.device)
    A0 = torch.zeros(x.shape[0], 1, 3, 4, dtype=x.dtype, device=x.device)
    H = []
    for c in _chunks(x):
        mk = None if mask is None else mask[c]
        _, _, dA = _estimate_and_grad2(x[c], y[c], heads[c, None], A0[c], mk)
        g = dA.flatten(-2) * tm[c, :, None]  # (r, M, 12)
        H.append(2 * g.transpose(1, 2) @ g / tm[c].sum(-1)[:, None, None])
    return fraction / torch.linalg.eigvalsh(torch.cat(H))[:, -1]


@dataclass
class TwoHeadResult:
    """Trajectories of a batch of two-head runs.

    Attributes
    ----------
    start : list of ``R`` str: the rule each run's combination started from (keys of :data:`RULES`).
    steps : np.ndarray, shape ``(K,)``: the recorded step counts.
    heads : np.ndarray, shape ``(R, K, 4)``: ``(beta1, b1, beta2, b2)`` at each record.
    A : np.ndarray, shape ``(R, K, 3, 4)``: the combination at each record.
    loss : np.ndarray, shape ``(R, K)``: the corpus loss at each record.
    lr_head : np.ndarray, shape ``(R,)``: the heads' step. lr_comb : shape ``(R,)``: the combination's.
    """

    start: list[str]
    steps: np.ndarray
    heads: np.ndarray
    A: np.ndarray
    loss: np.ndarray
    lr_head: np.ndarray
    lr_comb: np.ndarray

    @property
    def final_heads(self) -> np.ndarray:
        """shape ``(R, 4)``"""
        return self.heads[:, -1]

    @property
    def final_A(self) -> np.ndarray:
        """shape ``(R, 3, 4)``"""
        return self.A[:, -1]


def train_two_head(configs: Sequence[Any], steps: int, *, start: str | Sequence[str] = "symmetrized",
                   comb_step: float | Sequence[float] = 1.0, corpora: dict[str, torch.Tensor] | None = None,
                   device: Any = "auto", progress: bool = False,
                   options: TrainOptions = DEFAULT_TRAIN_OPTIONS) -> TwoHeadResult:
    """Constant-step full-batch GD on the two-head model, one run per corpus, all at once.

    Both heads start at the run's ``(beta0, b0)`` (the mirror on the reflected context, so the two
    start as exact mirror images); the combination starts at the rule ``start``: ``"symmetrized"``
    (the symmetric start), ``"one-head"`` (the mirror switched off: ``w2 = 0``, so the mirror's
    parameters only move once GD has given it a weight), ``"count-weighted"`` or
    ``"boundary-aware"``. Every step moves the heads by ``-lr * grad`` (``lr`` of the run's config)
    and the combination by ``-lr_comb * grad`` with ``lr_comb = comb_step / lambda_max`` at the start
    (:func:`combination_step`; ``comb_step = 0`` freezes the combination).

    Parameters
    ----------
    configs : list of :class:`stumplib.stump.trainer.RunConfig`, length ``R`` (corpus, ``lr``,
        ``beta0``, ``b0``; ``beta_stop`` and schedules are not used).
    steps : GD steps (>= 1).
    start : the combination's start, a key of :data:`RULES`, or one per run.
    comb_step : the combination's step in units of ``1 / lambda_max``, in ``[0, 2)``, or one per run.
    corpora : optional corpora (as :func:`loss_and_grad` takes) to train on instead of drawing
        ``make_corpora(configs)``; their run axis must have length ``R``.
    device : where to train.
    progress : show a tqdm bar.
    options : :class:`stumplib.stump.trainer.TrainOptions`: ``n_records`` (log-spaced records),
        ``check_every`` (steps between divergence checks, default 64) and ``max_loss_ratio`` (a
        loss above this multiple of the initial loss counts as divergence); ``dtype``,
        ``grouping`` and ``on_diverge`` must keep their defaults.

    Returns
    -------
    TwoHeadResult

    Raises
    ------
    TrainingDiverged
        naming the run, the step and the reason (non-finite values, a parameter beyond
        :data:`stumplib.stump.train_loop.MAX_PARAM`, a head's scale turned negative, or the loss above
        ``max_loss_ratio`` times its initial value).
    """
    from stumplib.stump.train_loop import MAX_PARAM
    from stumplib.stump.trainer import RunConfig, make_corpora, record_steps

    if not isinstance(options, TrainOptions):
        raise ValueError(f"options must be a TrainOptions; got {type(options).__name__}")
    options.require_defaults("train_two_head", ("dtype", "grouping", "on_diverge"))

    if not isinstance(configs, (list, tuple)) or not configs or not all(isinstance(c, RunConfig) for c in configs):
        raise ValueError("configs must be a non-empty list of RunConfig")
    configs = [c.validated(f"configs[{i}]") for i, c in enumerate(configs)]
    steps = check_int("steps", steps)
    R = len(configs)
    starts = [start] * R if isinstance(start, str) else list(start)
    steps_c = [comb_step] * R if np.isscalar(comb_step) else list(comb_step)
    if len(starts) != R or len(steps_c) != R:
        raise ValueError(f"start and comb_step must be one value or one per run ({R})")
    starts = [check_choice("start", s, tuple(RULES)) for s in starts]
    steps_c = [check_real("comb_step", v, low=0.0, high=2.0, high_open=True) for v in steps_c]
    check_every = 64 if options.check_every is None else options.check_every
    max_loss_ratio = options.max_loss_ratio
    rec = record_steps(steps, options.n_records)
    dev = resolve_device(device)
    if corpora is None:
        corpora = make_corpora(configs, dev)
    x, y, tau, mask, tm = _check_corpora(corpora)
    if x.shape[0] != R:
        raise ValueError(f"corpora must hold one corpus per config ({R}); got {x.shape[0]}")
    x, y, tau, tm = x.to(dev, DEFAULT_DTYPE), y.to(dev, DEFAULT_DTYPE), tau.to(dev, DEFAULT_DTYPE), tm.to(dev, DEFAULT_DTYPE)
    mask = None if mask is None else mask.to(dev)
    heads = torch.tensor([[c.beta0, c.b0, c.beta0, c.b0] for c in configs], dtype=DEFAULT_DTYPE, device=dev)
    A = torch.stack([rule(s, device=dev) for s in starts])
    lr_h = torch.tensor([c.lr for c in configs], dtype=DEFAULT_DTYPE, device=dev)[:, None]
    box = {"tau": tau, "x": x, "y": y, "mask": mask, "task_mask": tm > 0}
    lr_a = combination_step(box, heads) * torch.tensor(steps_c, dtype=DEFAULT_DTYPE, device=dev)
    hist_h, hist_A, hist_L = [], [], []
    L0 = None
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, desc=f"two-head GD x{R} runs", mininterval=2.0)
    k = 0
    for t in range(steps + 1):
        L, gH, gA = _loss_and_grad(x, y, tau, mask, tm, heads, A)
        if L0 is None:
            L0 = L.clone()
        if t == rec[k]:
            hist_h.append(heads.clone()), hist_A.append(A.clone()), hist_L.append(L.clone())
            k += 1
        if t % check_every == 0 or t == steps or t == rec[k - 1]:
            _guard(configs, t, L, L0, heads, A, max_loss_ratio, MAX_PARAM)
        if t == steps:
            break
        heads = heads - lr_h * gH
        A = A - lr_a[:, None, None] * gA
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    np_ = lambda v: torch.stack(v, 1).cpu().numpy()  # noqa: E731
    return TwoHeadResult(starts, rec, np_(hist_h), np_(hist_A), np_(hist_L),
                         lr_h[:, 0].cpu().numpy(), lr_a.cpu().numpy())


def _guard(configs, t, L, L0, heads, A, max_loss_ratio, max_param) -> None:
    """Raise :class:`TrainingDiverged` for the first run that diverged at step ``t``."""
    finite = torch.isfinite(L) & torch.isfinite(heads).all(-1) & torch.isfinite(A).flatten(1).all(-1)
    big = heads.abs().amax(-1) > max_param
    neg = (heads[:, [0, 2]] < 0).any(-1)
    worse = L > max_loss_ratio * L0
    bad = ~finite | big | neg | worse
    if not bool(bad.any()):
        return
    r = int(torch.nonzero(bad)[0, 0])
    c = configs[r]
    why = ("non-finite loss or parameters" if not bool(finite[r]) else
           f"a parameter above {max_param:g}" if bool(big[r]) else
           "a head's scale turned negative" if bool(neg[r]) else
           f"loss above {max_loss_ratio:g} x its initial value")
    raise TrainingDiverged(
        f"two-head run {r} (m={c.m}, n={c.n}, seed={c.seed}) diverged at step {t} with head step "
        f"lr={c.lr:g} ({why}): heads (beta1, b1, beta2, b2) = {heads[r].tolist()}, loss={L[r].item():.3g} "
        f"(initial {L0[r].item():.3g}). Use a smaller lr, a smaller comb_step or a larger-resolution start.")


def weights(A: Any, n1: Any, N: int) -> np.ndarray:
    """The combination's weights ``(w1, w2, w0)`` for contexts of ``N`` examples with ``n1`` positives.

    Parameters
    ----------
    A : array_like, shape ``(..., 3, 4)``.
    n1 : array_like of ints in ``[0, N]``, shape ``(P,)``.
    N : context size (>= 1).

    Returns
    -------
    np.ndarray, shape ``(..., P, 3)``
    """
    N = check_int("N", N)
    n1 = np.asarray(n1, dtype=float)
    if n1.ndim != 1 or n1.size == 0 or n1.min() < 0 or n1.max() > N:
        raise ValueError(f"n1 must be a non-empty 1-D array of counts in [0, N = {N}]")
    A = np.asarray(A, dtype=float)
    if A.shape[-2:] != (3, 4):
        raise ValueError(f"A must have shape (..., 3, 4); got {A.shape}")
    phi = _phi(torch.as_tensor(n1, dtype=torch.float64), float(N)).numpy()  # (P, 4)
    return np.einsum("...kj,pj->...pk", A, phi)


def profile_errors(x: torch.Tensor, tau: torch.Tensor, heads: Any, A: Any) -> dict[str, torch.Tensor]:
    """Errors ``F - tau`` of one two-head model on a threshold grid with shared contexts.

    The heads come from :func:`stumplib.stump.boundary.profile_errors` (chapter 5's fast path: the
    head with ``(beta1, b1)`` and the reflected head with ``(beta2, b2)``), combined by ``A``.

    Parameters
    ----------
    x : torch.Tensor, shape ``(C, N)``: features in ``[0, 1]``.
    tau : torch.Tensor, shape ``(T,)``: thresholds in ``[0, 1]``.
    heads : torch.Tensor, shape ``(4,)``
        One model's heads.
    A : torch.Tensor, shape ``(3, 4)``
        Its combination.

    Returns
    -------
    dict with ``"two-head"`` (errors, shape ``(T, C)``) and ``"n_pos"`` (``(T, C)``).
    """
    from stumplib.stump.boundary import profile_errors as head_profile

    if not torch.is_tensor(x) or x.ndim != 2:
        raise ValueError("x must be a torch tensor of shape (C, N)")
    heads, A = _check_params(heads, A, x)
    if heads.shape != (4,) or A.shape != (3, 4):
        raise ValueError("heads must have shape (4,) and A shape (3, 4) (one model)")
    hp = heads.tolist()
    e1 = head_profile(x, tau, hp[0], hp[1], ("one-head",))
    e2 = head_profile(x, tau, hp[2], hp[3], ("reflected",))
    t = tau.to(dtype=x.dtype, device=x.device)[:, None]
    phi = _phi(e1["n_pos"].to(x.dtype), float(x.shape[1]))
    w = (A * phi[..., None, :]).sum(-1)
    F = w[..., 0] * (e1["one-head"] + t) + w[..., 1] * (e2["reflected"] + t) + w[..., 2]
    return {"two-head": F - t, "n_pos": e1["n_pos"]}


def _models(heads: Any, A: Any, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Models as ``(R, 4)`` heads and ``(R, 3, 4)`` combinations (one ``(3, 4)`` shared by all)."""
    heads, A = _check_params(heads, A, like)
    if heads.ndim != 2:
        raise ValueError(f"heads must have shape (R, 4), one row per model; got {tuple(heads.shape)}")
    A = A.expand(heads.shape[0], 3, 4) if A.ndim == 2 else A
    if A.shape != (heads.shape[0], 3, 4):
        raise ValueError(f"A must have shape (3, 4) or ({heads.shape[0]}, 3, 4); got {tuple(A.shape)}")
    return heads, A


def sq_errors(x: torch.Tensor, y: torch.Tensor, tau: torch.Tensor, heads: Any, A: Any) -> np.ndarray:
    """Squared errors of ``R`` two-head models on the same contexts (one model at a time, so the
    memory is that of one model's attention).

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(C, N)``: contexts.
    tau : torch.Tensor, shape ``(C,)``: their thresholds.
    heads : torch.Tensor, shape ``(R, 4)``: the models' heads.
    A : torch.Tensor, shape ``(R, 3, 4)``, or ``(3, 4)`` for every model.

    Returns
    -------
    np.ndarray, shape ``(C, R)``
    """
    check_context(x, y, None)
    heads, A = _models(heads, A, x)
    return np.stack([((_estimate_and_grad2(x, y, h, a, None)[0] - tau) ** 2).cpu().numpy()
                     for h, a in zip(heads, A)], 1)


def rule_sq_errors(x: torch.Tensor, y: torch.Tensor, tau: torch.Tensor, heads: Any,
                   names: Sequence[str]) -> dict[str, np.ndarray]:
    """Squared errors of chapter 5's estimators (:func:`stumplib.stump.boundary.estimate_all`) for
    ``R`` one-head models on the same contexts.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(C, N)``: contexts.
    tau : torch.Tensor, shape ``(C,)``: their thresholds.
    heads : array_like, shape ``(R, 2)``: ``(beta, b)`` of each one-head model.
    names : estimator names of :data:`stumplib.stump.boundary.ESTIMATORS`.

    Returns
    -------
    dict name -> np.ndarray of shape ``(C, R)``
    """
    from stumplib.stump.boundary import estimate_all

    h = np.asarray(heads, dtype=float)
    if h.ndim != 2 or h.shape[1] != 2 or h.shape[0] < 1:
        raise ValueError(f"heads must have shape (R, 2): (beta, b) per model; got {h.shape}")
    out: dict[str, list] = {}
    for beta, b in h:
        for k, e in estimate_all(x, y, float(beta), float(b), names).items():
            out.setdefault(k, []).append(((e - tau) ** 2).cpu().numpy())
    return {k: np.stack(v, 1) for k, v in out.items()}


def profile_summary(x: torch.Tensor, tau: torch.Tensor, one_heads: Any, heads: Any, A: Any,
                    names: Sequence[str], interior: tuple[float, float] = (0.2, 0.8)
                    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """MSE profiles over a threshold grid of ``R`` two-head models (``"two-head"``) and of chapter 5's
    estimators ``names`` on ``R`` one-head models, with shared contexts, and each context's interior
    MSE. The ``(T, C)`` errors are reduced model by model, so no such array is kept per model.

    Parameters
    ----------
    x : torch.Tensor, shape ``(C, N)``: features in ``[0, 1]``.
    tau : torch.Tensor, shape ``(T,)``: the grid.
    one_heads : shape ``(R, 2)``: the one-head models.
    heads : torch.Tensor, shape ``(R, 4)``: the two-head models' heads.
    A : torch.Tensor, shape ``(R, 3, 4)``: their combinations.
    names : estimators of :func:`stumplib.stump.boundary.profile_errors`.
    interior : the thresholds ``interior[0] <= tau <= interior[1]`` averaged per context.

    Returns
    -------
    mse : dict name -> np.ndarray, shape ``(T,)``: MSE over contexts and models.
    inner : dict name -> np.ndarray, shape ``(C, R)``: interior MSE per context and model.
    """
    from stumplib.stump.boundary import profile_errors as head_profile

    lo, hi = check_prior(*interior)
    one = np.asarray(one_heads, dtype=float)
    heads, A = _models(heads, A, x)
    if one.ndim != 2 or one.shape != (heads.shape[0], 2):
        raise ValueError(f"one_heads must have shape ({heads.shape[0]}, 2); got {one.shape}")
    inside = (tau >= lo) & (tau <= hi)
    if not bool(inside.any()):
        raise ValueError(f"no threshold of the grid lies in the interior [{lo}, {hi}]")
    mse: dict[str, Any] = {}
    inner: dict[str, list] = {}

    def add(k: str, e: torch.Tensor) -> None:
        mse[k] = mse.get(k, 0.0) + e.pow(2).mean(1).cpu().numpy() / heads.shape[0]
        inner.setdefault(k, []).append(e[inside.to(e.device)].pow(2).mean(0).cpu().numpy())

    for (beta, b), h, a in zip(one, heads, A):
        out = head_profile(x, tau, float(beta), float(b), names)
        for k in names:
            add(k, out[k])
        add("two-head", profile_errors(x, tau, h, a)["two-head"])
    return mse, {k: np.stack(v, 1) for k, v in inner.items()}


def paired_ratio(num: Any, den: Any, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                 floor: float = 0.0) -> Estimate:
    """``mean(num) / mean(den)`` with an interval over contexts *and* corpora, within the ratio's
    support: :func:`stumplib.core.stats.two_way_ratio` (contexts and corpora resampled, the
    few-corpora Student correction on the log scale, the interval clipped to ``[floor, inf)``).

    Parameters
    ----------
    num, den : array_like, shape ``(C, R)``: squared errors of ``C`` contexts under the models of
        ``R`` corpora (a ``(C,)`` array, e.g. the Bayes estimator's, is broadcast over corpora).
    n_boot, level, seed : resamples, interval level and seed.
    floor : the smallest value the true ratio can take: 0 for a ratio of risks, 1 for a risk over
        the Bayes risk of the prior the thresholds are drawn from.

    Returns
    -------
    Estimate of kind ``"bootstrap"``.
    """
    n_boot = check_int("n_boot", n_boot, minimum=10)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    return two_way_ratio(num, den, n_boot=n_boot, level=level, seed=seed, floor=floor)
