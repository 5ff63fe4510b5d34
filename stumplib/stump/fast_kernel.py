"""The trainer's fast kernel: each run's corpus loss and exact gradient from six sums per task.

:func:`stumplib.stump.trainer.train_gd` and :func:`stumplib.stump.trainer.corpus_loss_and_grad`
evaluate, for every run ``r`` of a batch,

    L_r = (1/m_r) sum_j (f_j - tau_j)^2,
    dL/dbeta = (2/m_r) sum_j (f_j - tau_j) (-Var_w(x)),
    dL/db = (2/m_r) sum_j (f_j - tau_j) Cov_w(x, y),

through this module. The fast kernel (:func:`_fast_grad`) is a specialised path of
:mod:`stumplib.stump.model`, the single definition of the estimator, and is tested against
:func:`stumplib.stump.model.estimate_and_grad`. Within a task only six sums matter: for each label
group ``g`` (negatives, positives), ``S_k^g = sum_{i in g} dx_i^k e^{-beta dx_i}``, ``k = 0, 1, 2``,
with ``dx_i = x_i - x_g`` measured from the group's smallest ``x`` (the example of largest weight
when ``beta > 0``, so ``1 <= S_0^g`` and nothing overflows). ``b`` enters only through the weight of
the positive group, combined in log space (``p = sigmoid(log S_0^+ - log S_0^- + b - beta (x_+ -
x_-))``, no ``e^b``), and the variance is pooled group by group (``Var = sum_g w_g Var_g + p (1 - p)
gap^2``, ``Cov_w(x, y) = p (1 - p) gap`` with ``gap`` the difference of the group means), so neither
loses digits at large ``beta`` or ``b``. Each task is sorted once when the corpora are laid out
(:func:`dense_layout`, :func:`padded_layout`), positives ascending from the first column and
negatives descending from the last; one step is then one ``exp`` pass over ``(R, m, n)`` and one
batched matrix product against the fixed features ``[1, dx, dx^2]`` of each group. Terms whose
exponent lies more than :data:`TAIL_EXPONENT` below their group's largest change nothing in
float64: as ``beta`` grows, only the first and last columns that can hold such terms are kept
(chosen again whenever a run's ``beta`` has grown by :data:`TAIL_RENEW` or fallen to
:data:`TAIL_FLOOR` times the scale they were chosen for, :func:`group_grad`), so a step gets
cheaper as ``beta`` grows. Runs whose ``beta <= 0`` (where the largest weight sits at the other end
of each group) go through :func:`stumplib.stump.model.estimate_and_grad_unchecked` instead.

In the training loop most steps need no ``exp`` at all. The sums are smooth in ``beta``:
``S_k(beta) = sum_j (-(beta - beta_a))^j / j! mu_{k+j}`` with the moments
``mu_j = sum dx^j e^{-beta_a dx}`` of each group at an anchor ``beta_a``. Each run keeps its own
anchor (:data:`SERIES_ORDER` + 3 moments per group, computed in a few passes of the direct kernel's
cost) and, while ``|beta - beta_a| max(dx) <= SERIES_RADIUS``, a step costs one small batched
product per task (:func:`_series_sums`; the truncation is below 1e-16 relative). A new anchor is
placed ahead of ``beta`` in the direction it moves; a run moving so fast that a window would last
fewer than :data:`ANCHOR_MIN_STEPS` steps gets the direct sums for that step instead. Small runs
(:data:`SERIES_MIN_COLUMNS`, :data:`SERIES_MIN_ELEMENTS`) and single evaluations
(:func:`layout_grad`) always use the direct kernel.

Every anchor decision is per run, and the task axis is padded to a multiple of
:data:`TASK_MULTIPLE`, so a batch of runs gives the same numbers as the same runs one by one
(bit for bit while every column is kept; to rounding once the tail is dropped, as a group shares
its kept columns).

A layout is a dict of tensors (the sorted examples, their offsets ``dx`` and features, the task
weights) plus the kernel's state (the kept columns, the anchors, reusable buffers); the training
loop owns one per computation group (:func:`stumplib.stump.trainer.train_gd`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import torch

from stumplib.stump.model import estimate_and_grad_unchecked
from stumplib.stump.tasks import sample_tasks

if TYPE_CHECKING:
    from stumplib.stump.trainer import RunConfig

#: Exponential terms more than this below their group's largest are dropped
#: (``e^-50 ~ 2e-22``: even ``10^4`` of them change no float64 sum whose largest term is 1).
TAIL_EXPONENT = 50.0

#: The kept columns are chosen for ``beta >= TAIL_FLOOR * beta_now``; a run falling below that
#: triggers a new choice before its next step.
TAIL_FLOOR = 0.8

#: The task axis is padded to a multiple of this (dummy tasks of weight 0): vectorised CPU kernels
#: of ``exp``, ``log`` and ``sigmoid`` then treat every task of every run alike whatever the batch
#: (a scalar remainder loop rounds differently), so a batch gives the same bits as its runs one by
#: one.
TASK_MULTIPLE = 16

#: The kept columns are chosen again once a run's ``beta`` has grown by this factor (they shrink).
TAIL_RENEW = 1.25

#: Order ``K`` of the expansion of the group sums in ``beta`` about an anchor
#: (:func:`_series_sums`): ``K + 3`` moments per group, a multiple of 3. Its remainder is at most
#: ``r^(K+1) e^r / (K+1)!`` relative with ``r = SERIES_RADIUS``: 1.2e-20 here.
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


def dense_layout(configs: Sequence[RunConfig], device: torch.device, dtype: torch.dtype
                 ) -> dict[str, Any]:
    """The fast-kernel layout of runs that share ``(m, n)``, stacked without padding.

    Each run's corpus is drawn as :func:`stumplib.stump.trainer.make_corpora` draws it
    (:func:`stumplib.stump.tasks.sample_tasks` with the run's seed and prior).

    Parameters
    ----------
    configs : sequence of RunConfig, length ``R``
        Runs of one shape ``(m, n)`` (not checked).
    device : torch.device
        Where the layout lives.
    dtype : torch.dtype
        Its precision.

    Returns
    -------
    dict
        The layout: the sorted examples ``x``, their offsets ``dx`` and features (``(R, M, n)``,
        ``M`` the tasks padded to a multiple of :data:`TASK_MULTIPLE`), the task weights and
        thresholds, and the kernel's state.
    """
    out = [sample_tasks(c.m, c.n, c.prior, seed=c.seed, device=device, dtype=dtype)
           for c in configs]
    tau = torch.stack([o[0] for o in out])
    tw = torch.full_like(tau, 1.0 / configs[0].m)
    return _layout(tau, torch.stack([o[1] for o in out]), torch.stack([o[2] for o in out]), None, tw)


def padded_layout(corpora: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The fast-kernel layout of a padded batch (built once, cached in it).

    Parameters
    ----------
    corpora : dict of torch.Tensor
        :func:`stumplib.stump.trainer.make_corpora`'s padded batch (``tau``, ``x``, ``y``,
        ``mask``, ``task_mask``); the layout is cached in it under a private key.

    Returns
    -------
    dict
        The layout (as :func:`dense_layout`'s), padded tasks weighted 0.
    """
    lay = corpora.get("_layout")
    if lay is None:
        tm = corpora["task_mask"].to(corpora["x"].dtype)
        lay = _layout(corpora["tau"], corpora["x"], corpora["y"], corpora["mask"], tm / tm.sum(-1, keepdim=True))
        corpora["_layout"] = lay
    return lay


def _layout(tau: torch.Tensor, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None,
            task_weight: torch.Tensor) -> dict[str, Any]:
    """The sorted layout of the fast kernel for corpora ``x, y (R, M, N)``, ``tau (R, M)``.

    Each task row holds its positives in ascending ``x`` from column 0, then padding, then its
    negatives in descending ``x`` up to column ``N - 1``, so for ``beta > 0`` the largest weight
    of each group sits at an end of the row. ``task_weight (R, M)`` is ``1/m_r`` for real tasks
    and 0 for padded ones (which must keep at least one example, see
    :func:`stumplib.stump.trainer.make_corpora`).
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


def layout_grad(lay: dict[str, Any], beta: torch.Tensor, b: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss and gradient on all columns (the fast kernel where ``beta > 0``, else the model's).

    One evaluation (the direct sums, no anchor); the training loop chooses its columns afresh
    afterwards. No argument checks.

    Parameters
    ----------
    lay : dict
        A layout of ``R`` runs (:func:`dense_layout`, :func:`padded_layout`).
    beta, b : torch.Tensor, shape ``(R,)``
        Each run's parameters, on the layout's device and in its precision.

    Returns
    -------
    L, dL_dbeta, dL_db : torch.Tensor, shape ``(R,)``
    """
    _all_columns(lay)
    lay["use_series"] = False  # one evaluation: the direct kernel
    n_pos = int((beta > 0).sum())
    lay["mode"] = "fast" if n_pos == beta.numel() else "model" if n_pos == 0 else "mixed"
    lay["floor"] = None  # the training loop must choose its columns afresh
    return _grad(lay, beta, b)


def group_grad(lay: dict[str, Any], beta: torch.Tensor, b: torch.Tensor, alive: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One group's loss and gradient in the training loop: chooses the kept columns again when a
    live run's ``beta`` has left the range they were chosen for (one host sync per step).

    The group sums come from each run's anchor where ``lay["use_series"]`` is set and the run is
    large enough (:data:`SERIES_MIN_COLUMNS`, :data:`SERIES_MIN_ELEMENTS`). No argument checks.

    Parameters
    ----------
    lay : dict
        The group's layout; ``lay["floor"] = None`` asks for a fresh choice of columns.
    beta, b : torch.Tensor, shape ``(R,)``
        Each run's parameters.
    alive : torch.Tensor of bool, shape ``(R,)``
        The runs the choice of columns must serve (not diverged).

    Returns
    -------
    L, dL_dbeta, dL_db : torch.Tensor, shape ``(R,)``
    """
    if lay["floor"] is None or bool(((beta <= lay["floor"]) | (beta >= lay["ceil"])).any()):
        _choose_columns(lay, beta, alive)
    return _grad(lay, beta, b)
