"""Full-batch constant-step gradient descent on finite corpora, many runs at once.

Each run ``r`` has its own corpus (``m_r`` tasks of ``n_r`` examples drawn with ``seed_r`` from the
prior), step size, initialisation and optional stop scale. Runs that share ``(m, n)`` are stacked
into one dense group (no padding); with many different shapes and little waste, all runs are padded
to the largest ``m`` and ``n`` instead. Every step advances all groups with the analytic gradient:

    L_r = (1/m_r) sum_j (f_j - tau_j)^2,
    dL/dbeta = (2/m_r) sum_j (f_j - tau_j) (-Var_w(x)),   dL/db = (2/m_r) sum_j (f_j - tau_j) Cov_w(x, y).

The fast kernel (:func:`_fast_grad`) is a specialised path of :mod:`stumplib.stump.model`, the single
definition of the estimator, and is tested against :func:`stumplib.stump.model.estimate_and_grad`. Within
a task only six sums matter: for each label group
``g`` (negatives, positives), ``S_k^g = sum_{i in g} dx_i^k e^{-beta dx_i}``, ``k = 0, 1, 2``, with
``dx_i = x_i - x_g`` measured from the group's smallest ``x`` (the example of largest weight when
``beta > 0``, so ``1 <= S_0^g`` and nothing overflows). ``b`` enters only through the weight of the
positive group, combined in log space (``p = sigmoid(log S_0^+ - log S_0^- + b - beta (x_+ - x_-))``,
no ``e^b``), and the variance is pooled group by group (``Var = sum_g w_g Var_g + p (1 - p) gap^2``,
``Cov_w(x, y) = p (1 - p) gap`` with ``gap`` the difference of the group means), so neither loses
digits at large ``beta`` or ``b``. Each task is sorted once when the corpora are drawn, positives
ascending from the first column and negatives descending from the last; one step is then one
``exp`` pass over ``(R, m, n)`` and one batched matrix product against the fixed features
``[1, dx, dx^2]`` of each group. Terms whose exponent lies more than :data:`TAIL_EXPONENT` below
their group's largest change nothing in float64: as ``beta`` grows, only the first and last columns
that can hold such terms are kept (chosen again whenever a run's ``beta`` has grown by
:data:`TAIL_RENEW` or fallen to :data:`TAIL_FLOOR` times the scale they were chosen for), so a step
gets cheaper as ``beta`` grows. Runs whose ``beta <= 0`` (where the largest weight sits at the other end of each group) go
through :func:`stumplib.stump.model.estimate_and_grad_unchecked` instead.

In the training loop most steps need no ``exp`` at all. The sums are smooth in ``beta``:
``S_k(beta) = sum_j (-(beta - beta_a))^j / j! mu_{k+j}`` with the moments
``mu_j = sum dx^j e^{-beta_a dx}`` of each group at an anchor ``beta_a``. Each run keeps its own
anchor (:data:`SERIES_ORDER` + 3 moments per group, computed in a few passes of the direct kernel's
cost) and, while ``|beta - beta_a| max(dx) <= SERIES_RADIUS``, a step costs one small batched product
per task (:func:`_series_sums`; the truncation is below 1e-16 relative). A new anchor is placed ahead
of ``beta`` in the direction it moves; a run moving so fast that a window would last fewer than
:data:`ANCHOR_MIN_STEPS` steps gets the direct sums for that step instead. Small runs
(:data:`SERIES_MIN_COLUMNS`, :data:`SERIES_MIN_ELEMENTS`) and single evaluations
(:func:`corpus_loss_and_grad`) always use the direct kernel.

Each run's corpus depends only on its own configuration, and every anchor decision is per run, so a
batch of runs gives the same numbers as the same runs one by one (bit for bit while every column is
kept, see :data:`TASK_MULTIPLE`; to
rounding once the tail is dropped, as a group shares its kept columns), and the same seeds give the
same numbers on the same device.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE, resolve_device
from stumplib.stump.model import estimate_and_grad_unchecked
from stumplib.stump.tasks import sample_tasks
from stumplib.core.validation import check_choice, check_int, check_prior, check_real, check_tensor_finite
from stumplib.core.errors import TrainingDiverged  # noqa: F401 (re-exported: raised by train_gd)

__all__ = ["RunConfig", "TrainResult", "make_corpora", "corpus_loss_and_grad",
           "corpus_grad", "corpus_moments", "train_gd", "record_steps"]

#: A run counts as diverged once ``|beta|`` or ``|b|`` exceeds this. The scales GD reaches in this
#: book are a few tens over the spacing of the examples (``beta`` of order ``1e4`` for ``n ~ 2000``);
#: at ``1e7`` neighbouring examples (spacing ``>= 1e-5`` for ``n <= 1e5``) differ by ``>= 100`` in
#: score, the attention is saturated and the loss flat in ``beta``, so a parameter that big can only
#: come from a step that overshot (``lr = 1e12`` throws ``beta`` to ``-3e8`` in one step while the
#: loss stays bounded, which the loss criterion alone does not catch).
MAX_PARAM = 1e7

#: Exponential terms more than this below their group's largest are dropped
#: (``e^-50 ~ 2e-22``: even ``10^4`` of them change no float64 sum whose largest term is 1).
TAIL_EXPONENT = 50.0

#: The kept columns are chosen for ``beta >= TAIL_FLOOR * beta_now``; a run falling below that
#: triggers a new choice before its next step.
TAIL_FLOOR = 0.8

#: The task axis is padded to a multiple of this (dummy tasks of weight 0): vectorised CPU kernels
#: of ``exp``, ``log`` and ``sigmoid`` then treat every task of every run alike whatever the batch
#: (a scalar remainder loop rounds differently), so a batch gives the same bits as its runs one by one.
TASK_MULTIPLE = 16

#: The kept columns are chosen again once a run's ``beta`` has grown by this factor (they shrink).
TAIL_RENEW = 1.25

#: Order ``K`` of the expansion of the group sums in ``beta`` about an anchor (:func:`_series_sums`):
#: ``K + 3`` moments per group, a multiple of 3. Its remainder is at most ``r^(K+1) e^r / (K+1)!``
#: relative with ``r = SERIES_RADIUS``: 1.2e-20 here.
SERIES_ORDER = 21

#: A run's sums come from its anchor while ``|beta - beta_anchor| max(dx) <= SERIES_RADIUS``; a
#: new anchor is placed that far ahead of ``beta`` in the direction it moves, so that it lasts.
SERIES_RADIUS = 1.0

#: A run leaving its anchor's window is anchored again (``(SERIES_ORDER + 3) / 3`` passes of the
#: direct kernel's cost) only if, at its last step's speed, the new window lasts at least this many
#: steps; else its sums are computed directly (one ``exp`` pass) for that step.
ANCHOR_MIN_STEPS = 8

#: The expansion is used for a run of ``M`` tasks and ``K`` kept columns only if ``K`` and ``M K``
#: reach these (per run, so that a batch and its runs one by one take the same path): below them
#: a few small operations per step cost more than the direct kernel they replace.
SERIES_MIN_COLUMNS = 48
SERIES_MIN_ELEMENTS = 4096


@dataclass(frozen=True)
class RunConfig:
    """One training run.

    Attributes
    ----------
    m, n : tasks in the corpus and examples per task.
    seed : seed of the corpus.
    lr : constant step size (> 0), per run.
    beta0, b0 : initial attention scale and label score (any finite values, e.g. the frozen
        parameters of an earlier run to chain runs); the default ``beta0 = b0 = 20`` is a
        "large-resolution" start with ``c0 = 1 >= tau_hi``.
    tau_lo, tau_hi : the uniform threshold prior.
    beta_stop : optional stop scale (> 0): the run freezes at the first step whose ``beta`` is
        ``>= beta_stop`` (see :func:`train_gd`); ``None`` never stops.
    lr_marks : optional piecewise-constant step schedule keyed on ``beta``: pairs
        ``(beta_mark, lr)`` with marks positive and strictly increasing and steps ``> 0``. At the
        first step where the run's ``beta >= beta_mark`` its step becomes ``lr`` (``lr`` above is
        the step before the first mark); that step and the parameters there are recorded in
        :attr:`TrainResult.mark_step` etc. Lists are stored as tuples of float pairs.
    record_scales : optional positive, strictly increasing scales at which the state is recorded
        (the first step where ``beta >= scale``, in :attr:`TrainResult.scale_step` etc.) without
        changing the step.
    """

    m: int
    n: int
    seed: int = 0
    lr: float = 1e3
    beta0: float = 20.0
    b0: float = 20.0
    tau_lo: float = 0.2
    tau_hi: float = 0.8
    beta_stop: float | None = None
    lr_marks: tuple[tuple[float, float], ...] | None = None
    record_scales: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        # normalise lists (e.g. from JSON) to hashable tuples of floats before validating
        if self.lr_marks is not None:
            try:
                marks = tuple((float(a), float(v)) for a, v in self.lr_marks)
            except (TypeError, ValueError):
                raise ValueError(f"RunConfig.lr_marks must be a sequence of (beta_mark, lr) pairs; "
                                 f"got {self.lr_marks!r}") from None
            object.__setattr__(self, "lr_marks", marks)
        if self.record_scales is not None:
            try:
                scales = tuple(float(v) for v in self.record_scales)
            except (TypeError, ValueError):
                raise ValueError(f"RunConfig.record_scales must be a sequence of scales; "
                                 f"got {self.record_scales!r}") from None
            object.__setattr__(self, "record_scales", scales)
        self.validated("RunConfig")

    def validated(self, where: str = "config") -> "RunConfig":
        """This configuration with every field checked (lists of marks stored as tuples).

        Parameters
        ----------
        where : str
            How the configuration is named in an error message (e.g. ``"configs[3]"``).

        Returns
        -------
        RunConfig
        """
        check_int(f"{where}.m", self.m)
        check_int(f"{where}.n", self.n)
        check_int(f"{where}.seed", self.seed, minimum=0)
        check_real(f"{where}.lr", self.lr, low=0.0, low_open=True)
        check_real(f"{where}.beta0", self.beta0)
        check_real(f"{where}.b0", self.b0)
        check_prior(self.tau_lo, self.tau_hi)
        if self.beta_stop is not None:
            check_real(f"{where}.beta_stop", self.beta_stop, low=0.0, low_open=True)
        if self.lr_marks is not None:
            prev = 0.0
            for i, (a, v) in enumerate(self.lr_marks):
                check_real(f"{where}.lr_marks[{i}] (beta_mark)", a, low=prev, low_open=True)
                check_real(f"{where}.lr_marks[{i}] (lr)", v, low=0.0, low_open=True)
                prev = a
        if self.record_scales is not None:
            prev = 0.0
            for i, a in enumerate(self.record_scales):
                check_real(f"{where}.record_scales[{i}]", a, low=prev, low_open=True)
                prev = a
        return self


def record_steps(steps: int, n_records: int = 60) -> np.ndarray:
    """Log-spaced unique step counts in ``[0, steps]`` (0 and ``steps`` included).

    Parameters
    ----------
    steps : int
        The last step.
    n_records : int
        Records asked for (fewer come back where log spacing repeats a step).

    Returns
    -------
    np.ndarray of int, shape ``(K,)``, ``K <= n_records``
    """
    steps = check_int("steps", steps, minimum=1)
    n_records = check_int("n_records", n_records, minimum=2)
    if n_records == 2:  # geomspace with one point would give [1], not [steps]
        return np.array([0, steps], dtype=np.int64)
    s = np.unique(np.round(np.geomspace(1, steps, n_records - 1)).astype(np.int64))
    return np.concatenate([[0], s])


def make_corpora(configs: Sequence[RunConfig], device: Any = "auto", dtype: torch.dtype = DEFAULT_DTYPE
                 ) -> dict[str, torch.Tensor]:
    """Draw each run's corpus and pad them into one batch.

    Parameters
    ----------
    configs : sequence of RunConfig, length ``R``
        The runs (their shapes, seeds and priors).
    device : str or torch.device
        Where the corpora live (``"auto"``: CUDA when available).
    dtype : torch.dtype
        Their precision.

    Returns
    -------
    dict with ``tau (R, M)``, ``x, y (R, M, N)``, ``mask (R, M, N)`` (bool, real examples),
    ``task_mask (R, M)`` (bool, real tasks), where ``M = max m_r`` and ``N = max n_r``. Examples
    keep the order in which they were drawn; the sorted layout of the fast kernel is built from
    this dict on first use (and cached in it under a private key).
    """
    if not isinstance(configs, (list, tuple)) or len(configs) == 0 or not all(
            isinstance(c, RunConfig) for c in configs):
        raise ValueError("configs must be a non-empty list of RunConfig")
    configs = [c.validated(f"configs[{i}]") for i, c in enumerate(configs)]
    dev = resolve_device(device)
    R, M, N = len(configs), max(c.m for c in configs), max(c.n for c in configs)
    tau = torch.full((R, M), 0.5, dtype=dtype, device=dev)
    x = torch.full((R, M, N), 0.5, dtype=dtype, device=dev)
    y = torch.zeros((R, M, N), dtype=dtype, device=dev)
    mask = torch.zeros((R, M, N), dtype=torch.bool, device=dev)
    task_mask = torch.zeros((R, M), dtype=torch.bool, device=dev)
    for r, c in enumerate(configs):
        t, xx, yy = sample_tasks(c.m, c.n, c.tau_lo, c.tau_hi, seed=c.seed, device=dev, dtype=dtype)
        tau[r, :c.m] = t
        x[r, :c.m, :c.n] = xx
        y[r, :c.m, :c.n] = yy
        mask[r, :c.m, :c.n] = True
        task_mask[r, :c.m] = True
    # padded tasks keep one dummy example so every softmax row is well defined
    mask[:, :, 0] |= ~task_mask
    return {"tau": tau, "x": x, "y": y, "mask": mask, "task_mask": task_mask}


def _layout(tau: torch.Tensor, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None,
            task_weight: torch.Tensor) -> dict[str, Any]:
    """The sorted layout of the fast kernel for corpora ``x, y (R, M, N)``, ``tau (R, M)``.

    Each task row holds its positives in ascending ``x`` from column 0, then padding, then its
    negatives in descending ``x`` up to column ``N - 1``, so for ``beta > 0`` the largest weight
    of each group sits at an end of the row. ``task_weight (R, M)`` is ``1/m_r`` for real tasks
    and 0 for padded ones (which must keep at least one example, see :func:`make_corpora`).
    """
    R, M, N = x.shape
    pad = -M % TASK_MULTIPLE
    if pad:  # dummy tasks of weight 0 with one example, so every run's block is a whole number of vectors
        if mask is None:
            mask = torch.ones(x.shape, dtype=torch.bool, device=x.device)
        dummy = torch.zeros((R, pad, N), dtype=torch.bool, device=x.device)
        dummy[..., 0] = True
        x = torch.cat([x, x.new_full((R, pad, N), 0.5)], 1)
        y = torch.cat([y, y.new_zeros((R, pad, N))], 1)
        mask = torch.cat([mask, dummy], 1)
        tau = torch.cat([tau, tau.new_full((R, pad), 0.5)], 1)
        task_weight = torch.cat([task_weight, task_weight.new_zeros((R, pad))], 1)
        M += pad
    pos = y > 0.5
    neg = ~pos
    if mask is not None:
        pos = pos & mask
        neg = neg & mask
    lo, hi = float(x.min()), float(x.max())
    span = hi - lo + 1.0
    # positives (key x <= hi) < padding (hi + span) < negatives (hi + 2 span + (hi - x)), descending x
    key = torch.where(pos, x, torch.where(neg, (hi + 2 * span) + (hi - x), torch.full_like(x, hi + span)))
    order = key.argsort(-1)
    xs, pos, neg = x.gather(-1, order), pos.gather(-1, order), neg.gather(-1, order)
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    npos, nneg = pos.sum(-1), neg.sum(-1)
    xref = torch.stack([torch.where(nneg > 0, xs[..., -1], zero), torch.where(npos > 0, xs[..., 0], zero)], -1)
    ref = torch.where(pos, xref[..., 1:], torch.where(neg, xref[..., :1], xs))
    dx = (xs - ref).contiguous()  # 0 on padding (finite exponent, zero features)
    fp, fn = pos.to(x.dtype), neg.to(x.dtype)
    feat = torch.stack([fn, fn * dx, fn * dx * dx, fp, fp * dx, fp * dx * dx], -1).reshape(R * M, N, 6)
    return {"tau": tau, "tw": task_weight, "x": xs, "pos": pos, "neg": neg, "dx": dx, "feat": feat,
            "xref": xref, "dxref": xref[..., 1] - xref[..., 0], "xref_tau": xref[..., 0] - tau,
            "signs": torch.tensor([1.0, -2.0, 2.0], dtype=x.dtype, device=x.device),
            "floor": None}


def _dense_corpora(configs: Sequence[RunConfig], device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
    """The fast-kernel layout of runs that share ``(m, n)``, stacked without padding."""
    out = [sample_tasks(c.m, c.n, c.tau_lo, c.tau_hi, seed=c.seed, device=device, dtype=dtype)
           for c in configs]
    tau = torch.stack([o[0] for o in out])
    tw = torch.full_like(tau, 1.0 / configs[0].m)
    return _layout(tau, torch.stack([o[1] for o in out]), torch.stack([o[2] for o in out]), None, tw)


def _padded_layout(corpora: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The fast-kernel layout of :func:`make_corpora`'s padded batch (built once, cached in it)."""
    lay = corpora.get("_layout")
    if lay is None:
        tm = corpora["task_mask"].to(corpora["x"].dtype)
        lay = _layout(corpora["tau"], corpora["x"], corpora["y"], corpora["mask"], tm / tm.sum(-1, keepdim=True))
        corpora["_layout"] = lay
    return lay


def _choose_columns(lay: dict[str, Any], beta: torch.Tensor, keep: torch.Tensor) -> None:
    """Choose the columns of the fast kernel for the current ``beta`` of the runs in ``keep``.

    Keeps the first and last columns that can hold a term within :data:`TAIL_EXPONENT` of its
    group's largest for any ``beta >= TAIL_FLOOR * beta`` (all columns when that is most of them),
    and sets ``lay["floor"]`` and ``lay["ceil"]``, the scales at or beyond which the choice must be
    renewed, and ``lay["mode"]``: ``"fast"``, ``"model"`` (every kept run has ``beta <= 0``) or
    ``"mixed"``.
    """
    dx = lay["dx"]
    R, M, N = dx.shape
    ok = keep & (beta > 0)
    inf = torch.full_like(beta, float("inf"))
    # a kept run with beta <= 0 renews the choice at every step (to see it turn positive)
    lay["floor"] = torch.where(ok, TAIL_FLOOR * beta, torch.where(keep, inf, -inf))
    lay["ceil"] = torch.where(ok, TAIL_RENEW * beta, inf)
    near = dx <= torch.where(ok, TAIL_EXPONENT / (TAIL_FLOOR * beta), -inf)[:, None, None]
    kp, kn, n_ok, n_keep = (int(v) for v in torch.stack([
        (near & lay["pos"]).sum(-1).amax(), (near & lay["neg"]).sum(-1).amax(), ok.sum(), keep.sum()]).tolist())
    lay["mode"] = "fast" if n_ok == n_keep else "model" if n_ok == 0 else "mixed"
    if kp + kn >= 0.75 * N:
        _all_columns(lay)
        lay["floor"] = torch.where(ok, torch.zeros_like(beta), lay["floor"])  # beta <= 0 only
    elif lay.get("kept") != (kp, kn):
        feat = lay["feat"]
        lay["dx_k"] = torch.cat([dx[..., :kp], dx[..., N - kn:]], -1)
        lay["feat_k"] = torch.cat([feat[:, :kp], feat[:, N - kn:]], 1)
        lay["kept"], lay["series"] = (kp, kn), None


def _direct_sums(dx: torch.Tensor, feat: torch.Tensor, beta: torch.Tensor, buf: torch.Tensor | None = None
                 ) -> torch.Tensor:
    """The six group sums ``S_k^g`` of every task, shape ``(R, M, 2, 3)``: one ``exp`` pass over
    ``dx (R, M, K)`` and one batched product with the features ``feat (R M, K, 6)``."""
    R, M, K = dx.shape
    e = torch.mul(dx, beta.neg().view(R, 1, 1), out=buf).exp_()
    return torch.bmm(e.view(R * M, 1, K), feat).view(R, M, 2, 3)


def _anchor_moments(dx: torch.Tensor, feat: torch.Tensor, d3: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Moments ``mu_j = sum_{i in g} dx_i^j e^{-beta dx_i}``, ``j = 0 .. SERIES_ORDER + 2``, of each
    label group ``g``, shape ``(R, M, 2, J)``, from ``dx (R, M, K)``, the direct kernel's features
    ``feat (R M, K, 6)`` and ``d3 = dx^3``: each batched product gives three moments of each group."""
    R, M, K = dx.shape
    J = SERIES_ORDER + 3
    p = torch.exp(dx * beta.neg().view(R, 1, 1)).view(R * M, 1, K)
    d3 = d3.reshape(R * M, 1, K)
    rounds = []
    for j in range(J // 3):  # (a plain product: one written into a slice of a larger array is slow)
        rounds.append(torch.bmm(p, feat))
        if j + 1 < J // 3:
            p = p * d3
    mom = torch.cat(rounds, 1)
    # (R M, round, group, k) -> (R, M, group, 3 round + k)
    return mom.view(R, M, J // 3, 2, 3).permute(0, 1, 3, 2, 4).reshape(R, M, 2, J)


def _series_sums(lay: dict[str, Any], beta: torch.Tensor) -> torch.Tensor:
    """The group sums of :func:`_direct_sums` from each run's anchor (training loop only).

    With the moments ``mu_j`` of a group at an anchor ``beta_a`` (:func:`_anchor_moments`),
    ``S_k(beta) = sum_{j <= SERIES_ORDER} (-(beta - beta_a))^j / j! mu_{k+j}`` while
    ``|beta - beta_a| max(dx) <= SERIES_RADIUS`` (remainder below 1e-16 relative; alternating terms
    of total size at most ``e^(2 r)`` times the sum: a digit at most). A step then costs a few
    operations per task instead of an ``exp`` per example. Every decision is per run (its own
    distance and speed), so a batch gives the same numbers as its runs one by one.
    """
    dx = lay["dx_k"]
    R, M, K = dx.shape
    J = SERIES_ORDER + 3
    st = lay.get("series")
    if st is None:
        # C[r, k + j, k] = c[r, j] (the coefficients below), as one gather from [c, 0]
        jk = torch.arange(J, device=dx.device)[:, None] - torch.arange(3, device=dx.device)
        st = lay["series"] = {"d3": dx * dx * dx, "dmax": dx.amax((1, 2)), "prev": beta.clone(),
                              "ref": torch.full_like(beta, float("nan")),
                              "mom": torch.zeros((R, M, 2, J), dtype=dx.dtype, device=dx.device),
                              "jk": torch.where((jk >= 0) & (jk <= SERIES_ORDER), jk, SERIES_ORDER + 1).view(-1),
                              "inv_j": 1.0 / torch.arange(1, SERIES_ORDER + 1, dtype=dx.dtype, device=dx.device)}
    move = (beta - st["prev"]) * st["dmax"]
    st["prev"] = beta.clone()
    far = ~((beta - st["ref"]).abs() * st["dmax"] <= SERIES_RADIUS)  # NaN (no anchor yet) is far
    renew = far & (move.abs() * ANCHOR_MIN_STEPS <= 2 * SERIES_RADIUS)
    direct = far & ~renew
    any_renew, any_direct = torch.stack([renew.any(), direct.any()]).tolist()  # one host sync
    if any_renew:
        i = torch.nonzero(renew).flatten()
        # ahead of beta in the direction it moves, so that beta crosses the whole window
        ahead = torch.where(move[i] < 0, -SERIES_RADIUS, SERIES_RADIUS) / st["dmax"][i].clamp_min(1e-300)
        ref = torch.where(move[i] == 0, beta[i], beta[i] + ahead)
        feat = lay["feat_k"].view(R, M * K, 6)[i].view(-1, K, 6)
        st["mom"][i] = _anchor_moments(dx[i], feat, st["d3"][i], ref)
        st["ref"][i] = ref
    # coefficients c_j = (-delta)^j / j! of each run, placed so that one batched product gives S_0..S_2
    c = torch.cat([torch.ones_like(beta)[:, None], ((st["ref"] - beta)[:, None] * st["inv_j"]).cumprod(-1),
                   torch.zeros_like(beta)[:, None]], -1)  # (R, K + 2): the last is the zero of the gather
    S = torch.bmm(st["mom"].view(R, M * 2, J), c[:, st["jk"]].view(R, J, 3)).view(R, M, 2, 3)
    if any_direct:
        i = torch.nonzero(direct).flatten()
        S[i] = _direct_sums(dx[i], lay["feat_k"].view(R, M * K, 6)[i].view(-1, K, 6), beta[i])
    return S


def _fast_grad(lay: dict[str, Any], beta: torch.Tensor, b: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss and gradient of every run from the six group sums (needs ``beta > 0``; no checks).

    The sums come from one ``exp`` pass and one batched product (:func:`_direct_sums`), or, in the
    training loop (``lay["use_series"]``), from each run's anchor (:func:`_series_sums`); then a
    few operations per task (few and fused: for small corpora they cost as much as the pass itself).
    """
    dx = lay["dx_k"]
    R, M, K = dx.shape
    if lay.get("use_series") and K >= SERIES_MIN_COLUMNS and M * K >= SERIES_MIN_ELEMENTS:
        S0, S1, S2 = _series_sums(lay, beta).unbind(-1)
    else:
        buf = lay.get("buf")
        if buf is None or buf.shape != dx.shape:
            buf = lay["buf"] = torch.empty_like(dx)
        S0, S1, S2 = _direct_sums(dx, lay["feat_k"], beta, buf).unbind(-1)  # (R, M, 2) each
    # S0 >= 1 for a non-empty group (its reference has weight exactly 1); 0 for an empty one
    inv = S0.clamp_min(1.0).reciprocal_()
    r1 = S1 * inv  # E_g[dx]
    var = (S2 * inv).addcmul_(r1, r1, value=-1.0).clamp_min_(0.0)  # Var_g: centred at x_g, no cancellation
    lg_neg, lg_pos = S0.contiguous().log_().unbind(-1)  # -inf for an empty group: its weight is then exactly 0
    d = (lg_pos - lg_neg).add_(b.view(R, 1)).addcmul_(beta.view(R, 1), lay["dxref"], value=-1.0)
    p, q = torch.sigmoid(d), torch.sigmoid(d.neg_())  # weight of the positives, 1 - p without cancellation
    r1_neg, r1_pos = r1.unbind(-1)
    var_neg, var_pos = var.unbind(-1)
    gap = (r1_pos - r1_neg).add_(lay["dxref"])  # mean_+ - mean_-
    cov = (p * q).mul_(gap)  # Cov_w(x, y) = p (1 - p) gap
    err = (r1_neg + lay["xref_tau"]).addcmul_(p, gap)  # f - tau
    var = (q * var_neg).addcmul_(p, var_pos).addcmul_(cov, gap)  # Var_w(x), pooled group by group
    # sum_j tw_j err_j [err_j, -2 Var_j, 2 Cov_j] for every run, in one batched product
    out = torch.bmm((err * lay["tw"]).unsqueeze(1), torch.stack([err, var, cov], -1)).view(R, 3)
    return out.mul_(lay["signs"]).unbind(-1)


def _model_grad(lay: dict[str, Any], beta: torch.Tensor, b: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The same as :func:`_fast_grad` through :func:`stumplib.stump.model.estimate_and_grad_unchecked` (any ``beta``)."""
    f, dfb, dfbb = estimate_and_grad_unchecked(lay["x"], lay["pos"].to(lay["x"].dtype), beta[:, None], b[:, None],
                                      lay["pos"] | lay["neg"])
    err = f - lay["tau"]
    ew = err * lay["tw"]
    return (ew * err).sum(-1), 2.0 * (ew * dfb).sum(-1), 2.0 * (ew * dfbb).sum(-1)


def _all_columns(lay: dict[str, Any]) -> None:
    """Use every column (no tail dropped)."""
    if lay.get("kept") != "all":
        lay["dx_k"], lay["feat_k"], lay["kept"], lay["series"] = lay["dx"], lay["feat"], "all", None


def _grad(lay: dict[str, Any], beta: torch.Tensor, b: torch.Tensor
          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss and gradient on the chosen columns in ``lay["mode"]``: the fast kernel, the model's
    (:func:`_model_grad`), or the fast one for ``beta > 0`` and the model's for the other runs."""
    if lay["mode"] == "model":
        return _model_grad(lay, beta, b)
    out = _fast_grad(lay, beta, b)
    if lay["mode"] == "mixed":
        pos = beta > 0
        out = tuple(torch.where(pos, f, g) for f, g in zip(out, _model_grad(lay, beta, b)))
    return out


def _layout_grad(lay: dict[str, Any], beta: torch.Tensor, b: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss and gradient on all columns (the fast kernel where ``beta > 0``, else the model's)."""
    _all_columns(lay)
    lay["use_series"] = False  # one evaluation: the direct kernel
    n_pos = int((beta > 0).sum())
    lay["mode"] = "fast" if n_pos == beta.numel() else "model" if n_pos == 0 else "mixed"
    lay["floor"] = None  # the training loop must choose its columns afresh
    return _grad(lay, beta, b)


def corpus_moments(x: torch.Tensor, y: torch.Tensor, beta: torch.Tensor, b: torch.Tensor,
                   ny: torch.Tensor | None = None, work: list | None = None
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fused ``f, -Var_w(x), Cov_w(x, y)`` over the last axis of unsorted corpora (no argument checks).

    The general-purpose kernel behind :func:`corpus_grad`, which :mod:`stumplib.stump.transfer`
    and :mod:`stumplib.stump.certified` use to evaluate many scales on one set of corpora
    (``beta`` broadcast against ``x``); the trainer itself uses the sorted fast kernel
    (:func:`_fast_grad`). Fresh large temporaries cost page faults at every step (a third of the
    time), hence the reusable buffers. Centred moments (two passes: the mean, then the centred
    sums), so no cancellation at large ``beta``. Dot products over the last axis go through
    ``einsum`` (batched matrix products) instead of temporaries.

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., n)``
        Examples and labels (0/1) of each context.
    beta, b : torch.Tensor
        Attention scale and label score, broadcast against ``x.shape[:-1]``.
    ny : torch.Tensor, optional
        The precomputed ``1 - y`` (shape of ``y``).
    work : list, optional
        Holds two reusable buffers of the broadcast shape (filled on first use).

    Returns
    -------
    f, df_dbeta, df_db : torch.Tensor, each of the broadcast shape of ``x.shape[:-1]``
        The estimate ``f = E_w[x]``, ``df_dbeta = -Var_w(x)`` and ``df_db = Cov_w(x, y)``.
    """
    shape = torch.broadcast_shapes(x.shape, beta.shape + (1,), b.shape + (1,))
    if work is not None and len(work) == 2 and work[0].shape == shape and work[0].dtype == x.dtype \
            and work[0].device == x.device:
        s_buf, d_buf = work
    else:
        s_buf = torch.empty(shape, dtype=x.dtype, device=x.device)
        d_buf = torch.empty(shape, dtype=x.dtype, device=x.device)
        if work is not None:
            work[:] = [s_buf, d_buf]
    s = torch.mul(y, b[..., None], out=s_buf).addcmul_(x, beta[..., None], value=-1.0)
    w = s.sub_(s.amax(-1, keepdim=True)).exp_()  # in place: s is a buffer
    Z = w.sum(-1)
    f = _dot(w, x) / Z
    p_pos = _dot(w, y) / Z
    dx = torch.sub(x, f[..., None], out=d_buf)
    wdx = w.mul_(dx)  # w is not needed any more
    var = _dot(wdx, dx) / Z
    # Cov_w(x, y) = sum w dx y = -sum w dx (1 - y): take the side holding less weight, whose rounding
    # error is proportional to that small weight (no cancellation when one side dominates)
    s_pos = _dot(wdx, y)
    s_neg = _dot(wdx, 1.0 - y) if ny is None else _dot(wdx, ny)
    cov = torch.where(p_pos > 0.5, -s_neg, s_pos) / Z
    return f, -var, cov


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(a * b).sum(-1)`` without the temporary (a batched matrix product)."""
    return torch.einsum("...n,...n->...", a, b)


def corpus_grad(x: torch.Tensor, y: torch.Tensor, tau: torch.Tensor, beta: torch.Tensor,
                b: torch.Tensor, ny: torch.Tensor | None = None, work: list | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss and exact gradient of corpora of equal shape at any parameters (no argument checks).

    The book's one corpus gradient for evaluating many ``(beta, b)`` on fixed corpora (chapters 3
    and 4: :mod:`stumplib.stump.transfer`, :mod:`stumplib.stump.calibration`); training goes through the sorted
    fast kernel of :func:`train_gd`, which computes the same quantity (both are tested against
    :func:`stumplib.stump.model.estimate_and_grad`). For each corpus

        L = (1/m) sum_j (f_j - tau_j)^2,
        dL/dbeta = (2/m) sum_j (f_j - tau_j) (-Var_w(x)),   dL/db = (2/m) sum_j (f_j - tau_j) Cov_w(x, y),

    with centred moments (no cancellation at large ``beta``).

    Parameters
    ----------
    x, y : torch.Tensor, shape ``(..., m, n)``: examples and labels (0/1) of unpadded corpora.
    tau : torch.Tensor, shape ``(..., m)``: the thresholds.
    beta, b : torch.Tensor, broadcast against ``tau.shape[:-1]`` (e.g. ``(K, C)`` scales for ``C``
        corpora, or ``(C,)``).
    ny : optional precomputed ``1 - y``.
    work : optional list holding two reusable buffers (filled on first use, see :func:`corpus_moments`).

    Returns
    -------
    L, dL_dbeta, dL_db : torch.Tensor, of the broadcast shape of ``tau.shape[:-1]`` and ``beta``.
    """
    f, dfb, dfbb = corpus_moments(x, y, beta[..., None], b[..., None], ny=ny, work=work)
    e = f - tau
    m = tau.shape[-1]
    return (e * e).sum(-1) / m, 2 * (e * dfb).sum(-1) / m, 2 * (e * dfbb).sum(-1) / m


def corpus_loss_and_grad(beta: torch.Tensor, b: torch.Tensor, corpora: dict[str, torch.Tensor]
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each run's corpus loss and its exact gradient.

    Parameters
    ----------
    beta, b : torch.Tensor, shape ``(R,)``
    corpora : as returned by :func:`make_corpora`

    Returns
    -------
    L, dL_dbeta, dL_db : torch.Tensor, shape ``(R,)``
    """
    need = ("tau", "x", "y", "mask", "task_mask")
    if not isinstance(corpora, dict) or any(k not in corpora for k in need):
        raise ValueError(f"corpora must be the dict returned by make_corpora (keys {list(need)}); "
                         f"got {type(corpora).__name__}")
    R = corpora["x"].shape[0]
    for name, v in (("beta", beta), ("b", b)):
        check_tensor_finite(name, v)
        if v.shape != (R,):
            raise ValueError(f"{name} must have shape ({R},) (one value per run); got {tuple(v.shape)}")
    x = corpora["x"]
    return _layout_grad(_padded_layout(corpora), beta.to(x.dtype).to(x.device), b.to(x.dtype).to(x.device))


@dataclass
class TrainResult:
    """Trajectories of a batch of runs.

    Attributes
    ----------
    configs : list of RunConfig, length ``R``
    steps : np.ndarray, shape ``(K,)``: step counts at which the state was recorded
    beta, b, loss : np.ndarray, shape ``(R, K)``; NaN after a run diverged (``on_diverge="stop"``);
        after a run stopped at its ``beta_stop`` they repeat its frozen values.
    diverged_at : np.ndarray of int, shape ``(R,)``, or None: the step at which each run was found
        diverged, ``-1`` for runs that did not (``None`` when the result predates this field).
    stop_step : np.ndarray of int, shape ``(R,)``, or None: the step at which each run reached its
        ``beta_stop`` and froze, ``-1`` for runs that never did (``None`` when the result predates
        this field).
    mark_step, mark_beta, mark_b : np.ndarray, shape ``(R, J)`` with ``J`` the most marks of any run,
        or None when no run has ``lr_marks``: for each run and mark of its ``lr_marks``, the first
        step at which ``beta >= beta_mark`` and the parameters there (from that step on the run
        uses the mark's step size); ``-1`` / NaN where the mark was not reached (or the run has
        fewer marks).
    scale_step, scale_beta, scale_b : np.ndarray, shape ``(R, L)``, or None: the same for the
        scales of ``record_scales``.
    last_step : int or None: the step at which the loop ended, ``steps`` unless every run had
        stopped or diverged before (then the records after it repeat the frozen values).
    """

    configs: list[RunConfig]
    steps: np.ndarray
    beta: np.ndarray
    b: np.ndarray
    loss: np.ndarray
    diverged_at: np.ndarray | None = None
    stop_step: np.ndarray | None = None
    mark_step: np.ndarray | None = None
    mark_beta: np.ndarray | None = None
    mark_b: np.ndarray | None = None
    scale_step: np.ndarray | None = None
    scale_beta: np.ndarray | None = None
    scale_b: np.ndarray | None = None
    last_step: int | None = None

    @property
    def final_beta(self) -> np.ndarray:
        """Each run's last recorded ``beta``, shape ``(R,)``."""
        return self.beta[:, -1]

    @property
    def final_b(self) -> np.ndarray:
        """Each run's last recorded ``b``, shape ``(R,)``."""
        return self.b[:, -1]


def _groups(configs: Sequence[RunConfig], grouping: str) -> list[list[int]]:
    """Run indices per computation group (see :func:`train_gd`, ``grouping``)."""
    if grouping == "pad":
        return [list(range(len(configs)))]
    keys: dict[tuple[int, int], list[int]] = {}
    for r, c in enumerate(configs):
        keys.setdefault((c.m, c.n), []).append(r)
    groups = list(keys.values())
    if grouping == "auto" and len(groups) > 8:
        M, N = max(c.m for c in configs), max(c.n for c in configs)
        waste = 1.0 - sum(c.m * c.n for c in configs) / (len(configs) * M * N)
        if waste <= 0.25:  # many shapes, little padding: one padded batch is cheaper
            return [list(range(len(configs)))]
    return groups


def _computation_groups(configs: list[RunConfig], corpora: dict[str, torch.Tensor] | None, grouping: str,
                        dev: torch.device, dtype: torch.dtype) -> list[tuple[torch.Tensor | None, dict[str, Any]]]:
    """The training loop's groups: ``(run indices, or None for all runs; fast-kernel layout)``, with
    fresh column choices and anchors."""
    R = len(configs)
    if corpora is not None:
        if not isinstance(corpora, dict) or corpora.get("x") is None or corpora["x"].shape[0] != R:
            raise ValueError(f"corpora must be make_corpora(configs) for these {R} runs")
        groups = [(None, _padded_layout(corpora))]
    else:
        groups = []
        for g in _groups(configs, grouping):
            sub = [configs[r] for r in g]
            idx = None if len(g) == R else torch.tensor(g, device=dev)
            if grouping == "pad" or len({(c.m, c.n) for c in sub}) > 1:
                groups.append((idx, _padded_layout(make_corpora(sub, dev, dtype))))
            else:
                groups.append((idx, _dense_corpora(sub, dev, dtype)))
    for _, lay in groups:
        lay["floor"] = None  # choose the columns afresh for this run's parameters
        lay["use_series"], lay["series"] = True, None  # group sums from per-run anchors, fresh ones
    return groups


def _group_grad(lay: dict[str, Any], beta: torch.Tensor, b: torch.Tensor, alive: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One group's loss and gradient in the training loop: chooses the kept columns again when a
    live run's ``beta`` has left the range they were chosen for (one host sync per step)."""
    if lay["floor"] is None or bool(((beta <= lay["floor"]) | (beta >= lay["ceil"])).any()):
        _choose_columns(lay, beta, alive)
    return _grad(lay, beta, b)


def train_gd(configs: Sequence[RunConfig], steps: int, *, n_records: int = 60, device: Any = "auto",
             dtype: torch.dtype = DEFAULT_DTYPE, progress: bool = True, check_every: int = 256,
             max_loss_ratio: float = 2.0, corpora: dict[str, torch.Tensor] | None = None,
             grouping: str = "auto", on_diverge: str = "raise") -> TrainResult:
    """Constant-step full-batch GD for every run in ``configs``, all at once.

    Runs with the same ``(m, n)`` form one dense group (no padding); each step advances every group
    with the fast kernel (see the module docstring): no autograd, no argument checks in the loop.
    Each run has its own step size, start ``(beta0, b0)`` and optional stop scale ``beta_stop``: a
    run freezes at the first step ``t`` whose ``beta_t >= beta_stop`` (its parameters of that step
    are kept, recorded from then on, and ``t`` is reported in ``stop_step``); the others carry on.
    Once every run has stopped (or diverged, ``on_diverge="stop"``) the loop ends early, at a
    divergence check or at an event below (``TrainResult.last_step``), and the remaining records
    repeat the frozen values: the numbers are the same as without the early end.

    A run may also change its step size with ``beta`` (``RunConfig.lr_marks``, a piecewise-constant
    schedule: at the first step ``t`` where ``beta_t >= beta_mark`` the step from ``t`` on is that
    mark's) and record its state at chosen scales (``RunConfig.record_scales``); the steps and
    parameters where each mark or scale was first reached are returned in
    ``TrainResult.mark_step, mark_beta, mark_b`` and ``scale_step, scale_beta, scale_b``. The loop
    stays batched: each step compares every moving run's ``beta`` with its next event scale (one
    host sync) and only a step where some run reached it goes through the (vectorised) bookkeeping,
    followed by a divergence check. Marks, scales and the stop are handled in that order within a
    step, so a mark at the stop scale is recorded at the stop step.

    Parameters
    ----------
    configs : list of RunConfig, length ``R``
    steps : GD steps for every run (>= 1).
    n_records : number of log-spaced records (>= 2), see :func:`record_steps`.
    device : ``"auto"``, ``"cpu"``, ``"cuda"``...
    dtype : the precision (``torch.float64`` by default, the stump model's).
    progress : show a tqdm progress bar.
    check_every : steps between divergence checks (also checked at every record).
    max_loss_ratio : a run whose loss exceeds this multiple of its initial loss counts as diverged
        (a too-large step throws GD into a saturated region where it stalls at a higher loss).
    corpora : pre-drawn padded corpora from :func:`make_corpora` (to reuse them); implies
        ``grouping="pad"``.
    grouping : ``"auto"`` (groups by shape, or one padded batch when there are more than 8 shapes and
        padding wastes at most 25% of the work), ``"shape"`` or ``"pad"`` (one padded batch with
        masks).
    on_diverge : ``"raise"`` (stop everything with :class:`TrainingDiverged`) or ``"stop"`` (freeze
        the diverged run, record NaN for it from then on, note the step in ``diverged_at``, carry on
        with the others: for step-size sweeps).

    Returns
    -------
    TrainResult

    Raises
    ------
    TrainingDiverged
        Naming the first run found diverged at a check (its ``m, n, seed, lr``, the step and the
        reason): non-finite loss or parameters, ``|beta|`` or ``|b|`` above :data:`MAX_PARAM`,
        ``beta`` negative although ``beta0 > 0``, or a loss above ``max_loss_ratio`` times the
        initial loss.
    """
    configs, steps, check_every = _checked_run_arguments(configs, steps, check_every, progress, dtype)
    max_loss_ratio = check_real("max_loss_ratio", max_loss_ratio, low=1.0)
    grouping = check_choice("grouping", grouping, ("auto", "shape", "pad"))
    on_diverge = check_choice("on_diverge", on_diverge, ("raise", "stop"))
    rec = record_steps(steps, n_records)
    dev = resolve_device(device)
    groups = _computation_groups(configs, corpora, grouping, dev, dtype)
    loop = _Loop(configs, rec, max_loss_ratio, on_diverge, dtype, dev)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, desc=f"GD x{len(configs)} runs", mininterval=2.0)
    last = loop.run(groups, steps, check_every, bar)
    return loop.result(last)


def _checked_run_arguments(configs: Any, steps: Any, check_every: Any, progress: Any, dtype: Any
                           ) -> tuple[list[RunConfig], int, int]:
    """:func:`train_gd`'s checks of its runs, step counts, ``progress`` and ``dtype``; returns the
    validated ``(configs, steps, check_every)``."""
    if not isinstance(configs, (list, tuple)) or len(configs) == 0:
        raise ValueError("configs must be a non-empty list of RunConfig")
    if not all(isinstance(c, RunConfig) for c in configs):
        raise ValueError("configs must contain only RunConfig instances")
    configs = [c.validated(f"configs[{i}]") for i, c in enumerate(configs)]
    steps = check_int("steps", steps, minimum=1)
    check_every = check_int("check_every", check_every, minimum=1)
    if not isinstance(progress, bool):
        raise ValueError(f"progress must be True or False; got {progress!r}")
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64; got {dtype!r}")
    return configs, steps, check_every


class _Loop:
    """The state of :func:`train_gd`'s loop: every run's parameters and step size, its stop scale,
    the beta-keyed events (step-size marks and record scales, :class:`_Watch`), the masks of live
    (not diverged) and moving (not diverged, not stopped) runs, the divergence guard and the
    recorded history ``(3, R, K)`` of ``beta, b, loss``."""

    def __init__(self, configs: list[RunConfig], rec: np.ndarray, max_loss_ratio: float, on_diverge: str,
                 dtype: torch.dtype, dev: torch.device) -> None:
        R = len(configs)
        self.configs, self.rec, self.dtype, self.dev = configs, rec, dtype, dev
        self.beta = torch.tensor([c.beta0 for c in configs], dtype=dtype, device=dev)
        self.b = torch.tensor([c.b0 for c in configs], dtype=dtype, device=dev)
        self.lr = torch.tensor([c.lr for c in configs], dtype=dtype, device=dev)
        self.has_stop = any(c.beta_stop is not None for c in configs)
        self.beta_stop = torch.tensor([float("inf") if c.beta_stop is None else c.beta_stop
                                       for c in configs], dtype=dtype, device=dev)
        # beta-keyed events: step-size marks and record scales, padded to (R, J + 1) with inf
        self.watch = [w for w in (_Watch([c.lr_marks for c in configs], True, dtype, dev),
                                  _Watch([c.record_scales for c in configs], False, dtype, dev)) if w.size]
        self.thr = self._next_threshold() if self.watch else None
        self.hist = torch.full((3, R, rec.size), float("nan"), dtype=dtype, device=dev)
        self.rec_set = {int(s): k for k, s in enumerate(rec)}
        self.alive = torch.ones(R, dtype=torch.bool, device=dev)  # not diverged
        self.moving = self.alive.clone()  # not diverged and not stopped
        self.stop_step = torch.full((R,), -1, dtype=torch.int64, device=dev)
        self.guard = _Guard(configs, self.beta, max_loss_ratio, on_diverge, self.alive, self.moving)
        #: whether runs may freeze (stop scale or on_diverge="stop"): the loop may then end early
        self.freezes = self.has_stop or on_diverge == "stop"

    def _next_threshold(self) -> torch.Tensor:
        return _next_threshold(self.watch, self.beta_stop if self.has_stop else None)

    def grad(self, groups: list[tuple[torch.Tensor | None, dict[str, Any]]]) -> tuple[torch.Tensor, ...]:
        """Every run's loss and gradient, group by group."""
        if len(groups) == 1:
            return _group_grad(groups[0][1], self.beta, self.b, self.alive)
        out = [torch.empty(len(self.configs), dtype=self.dtype, device=self.dev) for _ in range(3)]
        for idx, lay in groups:
            for o, v in zip(out, _group_grad(lay, self.beta[idx], self.b[idx], self.alive[idx])):
                o[idx] = v
        return tuple(out)

    def events(self, t: int) -> bool:
        """Marks, record scales and stops reached at step ``t`` (in that order); whether a mark or
        scale was crossed."""
        crossed = False
        if self.watch and bool((self.moving & (self.beta >= self.thr)).any()):
            crossed = True
            for w in self.watch:
                w.cross(t, self.beta, self.b, self.moving, self.lr)
            self.thr = self._next_threshold()
        if self.has_stop:
            hit = self.moving & (self.beta >= self.beta_stop)
            self.stop_step = torch.where(hit, t, self.stop_step)
            self.moving &= ~hit
        return crossed

    def record(self, t: int, L: torch.Tensor) -> None:
        """Store step ``t``'s state if it is a record step (NaN for diverged runs)."""
        if t in self.rec_set:
            k = self.rec_set[t]
            for i, v in enumerate((self.beta, self.b, L)):
                self.hist[i, :, k] = torch.where(self.alive, v, float("nan"))

    def repeat_frozen(self, t: int, L: torch.Tensor) -> None:
        """Every run has stopped or diverged at step ``t``: the later records repeat the frozen values."""
        later = torch.as_tensor(self.rec > t, device=self.dev)
        for i, v in enumerate((self.beta, self.b, L)):
            self.hist[i][:, later] = torch.where(self.alive, v, float("nan"))[:, None]

    def step(self, g_beta: torch.Tensor, g_b: torch.Tensor) -> None:
        """One GD step; frozen runs keep their values (their gradient may be NaN)."""
        if self.freezes:
            self.beta = torch.where(self.moving, self.beta - self.lr * g_beta, self.beta)
            self.b = torch.where(self.moving, self.b - self.lr * g_b, self.b)
        else:
            self.beta = self.beta - self.lr * g_beta
            self.b = self.b - self.lr * g_b

    def run(self, groups: list[tuple[torch.Tensor | None, dict[str, Any]]], steps: int, check_every: int,
            bar: Any) -> int:
        """Steps ``0 .. steps`` (or until every run froze); returns the step at which the loop ended."""
        done, last = 0, steps
        for t in range(steps + 1):
            L, g_beta, g_b = self.grad(groups)
            crossed = self.events(t)
            checked = t in self.rec_set or t % check_every == 0
            if checked or crossed:
                self.guard.check(L, self.beta, self.b, t)
                self.record(t, L)
                if bar is not None:
                    bar.update(t - done)
                    done = t
            if t == steps:
                break
            if (checked or crossed) and self.freezes and not bool(self.moving.any()):
                self.repeat_frozen(t, L)
                last = t
                break
            self.step(g_beta, g_b)
        if bar is not None:
            bar.update(last - done)
            bar.close()
        return last

    def result(self, last: int) -> TrainResult:
        """The loop's :class:`TrainResult`, ended at step ``last``."""
        h = self.hist.cpu().numpy()
        events = {}
        for w in self.watch:
            events.update(w.arrays())
        return TrainResult(self.configs, self.rec, h[0], h[1], h[2], self.guard.diverged_at,
                           self.stop_step.cpu().numpy(), last_step=last, **events)


class _Guard:
    """The divergence check of :func:`train_gd`: non-finite loss or parameters, ``|beta|`` or ``|b|``
    above :data:`MAX_PARAM`, ``beta`` turned from positive to negative, or a loss above
    ``max_loss_ratio`` times the first checked one. ``on_diverge="raise"`` raises
    :class:`TrainingDiverged` naming the first bad run; ``"stop"`` freezes bad runs (clearing them
    in the shared ``alive`` and ``moving`` masks) and notes the step in ``diverged_at``."""

    def __init__(self, configs: list[RunConfig], beta0: torch.Tensor, max_loss_ratio: float, on_diverge: str,
                 alive: torch.Tensor, moving: torch.Tensor) -> None:
        self.configs, self.max_loss_ratio, self.on_diverge = configs, max_loss_ratio, on_diverge
        self.positive0 = beta0 > 0
        self.alive, self.moving = alive, moving
        self.L0: torch.Tensor | None = None
        self.diverged_at = np.full(len(configs), -1, dtype=np.int64)

    def check(self, L: torch.Tensor, beta: torch.Tensor, b: torch.Tensor, t: int) -> None:
        if self.L0 is None:
            self.L0 = L.clone()
        finite = torch.isfinite(L) & torch.isfinite(beta) & torch.isfinite(b)
        big = (beta.abs() > MAX_PARAM) | (b.abs() > MAX_PARAM)
        flipped = self.positive0 & (beta < 0)
        worse = L > self.max_loss_ratio * self.L0
        bad = self.alive & (~finite | big | flipped | worse)
        if not bool(bad.any()):
            return
        rs = torch.nonzero(bad).flatten().tolist()
        if self.on_diverge == "stop":
            self.diverged_at[rs] = t
            self.alive[bad] = False
            self.moving[bad] = False
            return
        r = rs[0]
        c = self.configs[r]
        why = ("non-finite loss or parameters" if not bool(finite[r]) else
               f"|beta| or |b| above {MAX_PARAM:g}" if bool(big[r]) else
               f"beta turned negative (beta0 = {c.beta0:g})" if bool(flipped[r]) else
               f"loss above {self.max_loss_ratio:g} x its initial value")
        raise TrainingDiverged(
            f"run {r} (m={c.m}, n={c.n}, seed={c.seed}) diverged at step {t} with step size "
            f"lr={c.lr:g} ({why}): beta={beta[r].item():.3g}, b={b[r].item():.3g}, "
            f"loss={L[r].item():.3g} (initial loss {self.L0[r].item():.3g}). "
            f"Use a smaller lr or a larger-resolution start (beta0, b0).")


class _Watch:
    """Per-run ``beta`` thresholds of one kind (``lr_marks`` when ``sets_lr``, else ``record_scales``)
    and what happened at them: the thresholds padded to ``(R, J + 1)`` with ``inf``, each run's next
    one, and the step and parameters at each threshold reached."""

    def __init__(self, per_run: list, sets_lr: bool, dtype: torch.dtype, dev: torch.device) -> None:
        R = len(per_run)
        J = max((len(v) for v in per_run if v), default=0)
        self.size, self.sets_lr = J, sets_lr
        if not J:
            return
        at = np.full((R, J + 1), np.inf)
        lr = np.full((R, J + 1), np.nan)
        for r, v in enumerate(per_run):
            for j, e in enumerate(v or ()):
                if sets_lr:
                    at[r, j], lr[r, j] = e
                else:
                    at[r, j] = e
        self.at = torch.as_tensor(at, dtype=dtype, device=dev)
        self.lr = torch.as_tensor(lr, dtype=dtype, device=dev)
        self.nxt = torch.zeros(R, dtype=torch.int64, device=dev)
        self.step = torch.full((R, J), -1, dtype=torch.int64, device=dev)
        self.beta = torch.full((R, J), float("nan"), dtype=dtype, device=dev)
        self.b = torch.full((R, J), float("nan"), dtype=dtype, device=dev)

    def next(self) -> torch.Tensor:
        """Each run's next threshold (``inf`` when none is left)."""
        return self.at.gather(1, self.nxt[:, None])[:, 0]

    def cross(self, t: int, beta: torch.Tensor, b: torch.Tensor, moving: torch.Tensor,
              lr: torch.Tensor) -> None:
        """Record every threshold that the moving runs have reached at step ``t`` (several in one step
        if ``beta`` jumped over them) and, for marks, switch to the step of the last one reached."""
        while True:
            hit = moving & (beta >= self.next())
            rows = torch.nonzero(hit).flatten()
            if rows.numel() == 0:
                return
            cols = self.nxt[rows]
            self.step[rows, cols] = t
            self.beta[rows, cols] = beta[rows]
            self.b[rows, cols] = b[rows]
            if self.sets_lr:
                lr[rows] = self.lr[rows, cols]
            self.nxt[rows] += 1

    def arrays(self) -> dict[str, np.ndarray]:
        kind = "mark" if self.sets_lr else "scale"
        return {f"{kind}_step": self.step.cpu().numpy(), f"{kind}_beta": self.beta.cpu().numpy(),
                f"{kind}_b": self.b.cpu().numpy()}


def _next_threshold(watch: list[_Watch], beta_stop: torch.Tensor | None) -> torch.Tensor:
    """The smallest scale at which some event of each run happens next (its next mark or record
    scale, or its stop: reaching it ends the loop early once every run has stopped)."""
    thr = watch[0].next()
    for w in watch[1:]:
        thr = torch.minimum(thr, w.next())
    return thr if beta_stop is None else torch.minimum(thr, beta_stop)
