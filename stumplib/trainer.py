"""Full-batch constant-step gradient descent on finite corpora, many runs at once.

Each run ``r`` has its own corpus (``m_r`` tasks of ``n_r`` examples drawn with ``seed_r`` from the
prior), step size, and initialisation. Runs that share ``(m, n)`` are stacked into one dense group
(no padding); with many different shapes and little waste, all runs are padded to the largest ``m``
and ``n`` instead, masks becoming ``-inf`` scores. Every step advances all groups with the fused
analytic gradient (:func:`_moments`; no autograd, no argument checks in the loop), on CPU or CUDA:

    L_r = (1/m_r) sum_j (f_j - tau_j)^2,
    dL/dbeta = (2/m_r) sum_j (f_j - tau_j) (-Var_w(x)),   dL/db = (2/m_r) sum_j (f_j - tau_j) Cov_w(x, y).

Each run's corpus depends only on its own configuration, so a batch of runs gives the same numbers
as the same runs one by one (bit for bit with shape groups; to rounding with padding), and the same
seeds give the same numbers on the same device.

Performance notes (CPU): the kernel makes about 13 passes over the ``(R, m, n)`` arrays and reuses
two work buffers (fresh large temporaries cost page faults at every step). On a small shared CPU,
``torch.set_num_threads(1)`` can be many times faster than two threads for these tensor sizes.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Sequence

import numpy as np
import torch

from .device import DEFAULT_DTYPE, resolve_device
from .model import _estimate_and_grad
from .results_io import load_results, save_results
from .tasks import sample_tasks
from .validation import check_choice, check_int, check_prior, check_real, check_tensor_finite

__all__ = ["RunConfig", "TrainResult", "TrainingDiverged", "make_corpora", "corpus_loss_and_grad",
           "train_gd", "record_steps"]

#: parameters beyond this magnitude count as diverged (the softmax is saturated far before)
MAX_PARAM = 1e12


class TrainingDiverged(RuntimeError):
    """Raised when a run's loss or parameters become non-finite (or leave ``|.| <= MAX_PARAM``)."""


@dataclass(frozen=True)
class RunConfig:
    """One training run.

    Attributes
    ----------
    m, n : tasks in the corpus and examples per task.
    seed : seed of the corpus.
    lr : constant step size (> 0).
    beta0, b0 : initial attention scale and label score; the default ``beta0 = b0 = 20`` is a
        "large-resolution" start with ``c0 = 1 >= tau_hi``.
    tau_lo, tau_hi : the uniform threshold prior.
    """

    m: int
    n: int
    seed: int = 0
    lr: float = 1e3
    beta0: float = 20.0
    b0: float = 20.0
    tau_lo: float = 0.2
    tau_hi: float = 0.8

    def __post_init__(self) -> None:
        self.validated("RunConfig")

    def validated(self, where: str = "config") -> "RunConfig":
        check_int(f"{where}.m", self.m)
        check_int(f"{where}.n", self.n)
        check_int(f"{where}.seed", self.seed, minimum=0)
        check_real(f"{where}.lr", self.lr, low=0.0, low_open=True)
        check_real(f"{where}.beta0", self.beta0)
        check_real(f"{where}.b0", self.b0)
        check_prior(self.tau_lo, self.tau_hi)
        return self


def record_steps(steps: int, n_records: int = 60) -> np.ndarray:
    """Log-spaced unique step counts in ``[0, steps]`` (0 and ``steps`` included)."""
    steps = check_int("steps", steps, minimum=1)
    n_records = check_int("n_records", n_records, minimum=2)
    if n_records == 2:  # geomspace with one point would give [1], not [steps]
        return np.array([0, steps], dtype=np.int64)
    s = np.unique(np.round(np.geomspace(1, steps, n_records - 1)).astype(np.int64))
    return np.concatenate([[0], s])


def make_corpora(configs: Sequence[RunConfig], device: Any = "auto", dtype: torch.dtype = DEFAULT_DTYPE
                 ) -> dict[str, torch.Tensor]:
    """Draw each run's corpus and pad them into one batch.

    Returns
    -------
    dict with ``tau (R, M)``, ``x, y (R, M, N)``, ``mask (R, M, N)`` (bool, real examples),
    ``task_mask (R, M)`` (bool, real tasks), where ``M = max m_r`` and ``N = max n_r``.
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


def _dense_corpora(configs: Sequence[RunConfig], device: torch.device, dtype: torch.dtype
                   ) -> dict[str, torch.Tensor]:
    """Corpora of runs that share ``(m, n)``, stacked without padding: ``tau (R, m)``, ``x, y (R, m, n)``."""
    out = [sample_tasks(c.m, c.n, c.tau_lo, c.tau_hi, seed=c.seed, device=device, dtype=dtype)
           for c in configs]
    y = torch.stack([o[2] for o in out])
    return {"tau": torch.stack([o[0] for o in out]), "x": torch.stack([o[1] for o in out]),
            "y": y, "ny": 1.0 - y, "work": []}


def _moments(x: torch.Tensor, y: torch.Tensor, beta: torch.Tensor, b: torch.Tensor,
             bias: torch.Tensor | None = None, ny: torch.Tensor | None = None,
             work: list | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fused ``f, -Var_w(x), Cov_w(x, y)`` over the last axis (the hot loop; no argument checks).

    ``x, y`` have shape ``(..., n)``; ``beta, b`` broadcast against ``x.shape[:-1]``; ``bias`` is an
    optional additive score (``0`` for real examples, ``-inf`` for padding); ``ny`` optionally the
    precomputed ``1 - y``; ``work`` an optional list holding two reusable buffers of the broadcast
    shape (filled on first use): fresh large temporaries cost page faults at every step, which made
    up a third of the time. Centred moments (two passes: the mean, then the centred sums), so no
    cancellation at large ``beta``. Dot products over the last axis go through ``einsum`` (batched
    matrix products) instead of temporaries.
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
    if bias is not None:
        s.add_(bias)
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


def _dense_corpus_grad(x: torch.Tensor, y: torch.Tensor, tau: torch.Tensor, beta: torch.Tensor,
                       b: torch.Tensor, ny: torch.Tensor | None = None, work: list | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss and gradient of unpadded corpora ``x, y (..., m, n)``, ``tau (..., m)``; ``beta, b``
    broadcast against ``tau.shape[:-1]``. Returns ``L, dL_dbeta, dL_db`` of the broadcast shape."""
    f, dfb, dfbb = _moments(x, y, beta[..., None], b[..., None], ny=ny, work=work)
    e = f - tau
    m = tau.shape[-1]
    return (e * e).sum(-1) / m, 2 * (e * dfb).sum(-1) / m, 2 * (e * dfbb).sum(-1) / m


def _corpus_bias(corpora: dict[str, torch.Tensor]) -> torch.Tensor:
    """Additive score of the padding: ``0`` on real examples, ``-inf`` on padding (cached)."""
    bias = corpora.get("_bias")
    if bias is None:
        mask = corpora["mask"]
        bias = torch.zeros(mask.shape, dtype=corpora["x"].dtype, device=mask.device)
        bias.masked_fill_(~mask, float("-inf"))
        corpora["_bias"] = bias
    return bias


def _padded_corpus_grad(beta: torch.Tensor, b: torch.Tensor, corpora: dict[str, torch.Tensor]
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`corpus_loss_and_grad` without checks (padded corpora, masks as ``-inf`` scores)."""
    tm = corpora["task_mask"].to(beta.dtype)
    m = tm.sum(-1)
    if "_ny" not in corpora:
        corpora["_ny"] = 1.0 - corpora["y"]
    f, dfb, dfbb = _moments(corpora["x"], corpora["y"], beta[:, None], b[:, None], _corpus_bias(corpora),
                            corpora["_ny"], corpora.setdefault("_work", []))
    e = (f - corpora["tau"]) * tm
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
    return _padded_corpus_grad(beta.to(corpora["x"].dtype), b.to(corpora["x"].dtype), corpora)


@dataclass
class TrainResult:
    """Trajectories of a batch of runs.

    Attributes
    ----------
    configs : list of RunConfig, length ``R``
    steps : np.ndarray, shape ``(K,)``: step counts at which the state was recorded
    beta, b, loss : np.ndarray, shape ``(R, K)``; NaN after a run stopped (``on_diverge="stop"``)
    diverged_at : np.ndarray of int, shape ``(R,)``, or None: the step at which each run was found
        diverged, ``-1`` for runs that did not (``None`` when the result predates this field).
    """

    configs: list[RunConfig]
    steps: np.ndarray
    beta: np.ndarray
    b: np.ndarray
    loss: np.ndarray
    diverged_at: np.ndarray | None = None

    @property
    def final_beta(self) -> np.ndarray:
        return self.beta[:, -1]

    @property
    def final_b(self) -> np.ndarray:
        return self.b[:, -1]

    def save(self, path) -> None:
        """Save atomically to ``.npz`` with the configuration (see :mod:`stumplib.results_io`)."""
        arrays = {"steps": self.steps, "beta": self.beta, "b": self.b, "loss": self.loss}
        if self.diverged_at is not None:
            arrays["diverged_at"] = self.diverged_at
        save_results(path, arrays, {"configs": [asdict(c) for c in self.configs]})

    @classmethod
    def load(cls, path, configs: Sequence[RunConfig], steps: int | None = None) -> "TrainResult | None":
        """Reload a saved result if it was made with exactly ``configs`` (and ``steps`` when given);
        ``None`` otherwise (the caller recomputes)."""
        data = load_results(path, {"configs": [asdict(c) for c in configs]})
        if data is None or (steps is not None and int(data["steps"][-1]) != steps):
            return None
        return cls(list(configs), data["steps"], data["beta"], data["b"], data["loss"],
                   data.get("diverged_at"))


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


def train_gd(configs: Sequence[RunConfig], steps: int, *, n_records: int = 60, device: Any = "auto",
             dtype: torch.dtype = DEFAULT_DTYPE, progress: bool = True, check_every: int = 256,
             max_loss_ratio: float = 2.0, corpora: dict[str, torch.Tensor] | None = None,
             grouping: str = "auto", on_diverge: str = "raise") -> TrainResult:
    """Constant-step full-batch GD for every run in ``configs``, all at once.

    Runs with the same ``(m, n)`` form one dense group (no padding); each step advances every group
    with the fused analytic gradient (:func:`_moments`): no autograd, no argument checks in the loop.

    Parameters
    ----------
    configs : list of RunConfig, length ``R``
    steps : GD steps for every run (>= 1).
    n_records : number of log-spaced records (>= 2), see :func:`record_steps`.
    device : ``"auto"``, ``"cpu"``, ``"cuda"``...
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
        Naming the first run whose loss or parameters became non-finite (or whose loss exceeded
        ``max_loss_ratio`` times its initial loss), and its step size.
    """
    if not isinstance(configs, (list, tuple)) or len(configs) == 0:
        raise ValueError("configs must be a non-empty list of RunConfig")
    if not all(isinstance(c, RunConfig) for c in configs):
        raise ValueError("configs must contain only RunConfig instances")
    configs = [c.validated(f"configs[{i}]") for i, c in enumerate(configs)]
    steps = check_int("steps", steps, minimum=1)
    check_every = check_int("check_every", check_every, minimum=1)
    max_loss_ratio = check_real("max_loss_ratio", max_loss_ratio, low=1.0)
    if not isinstance(progress, bool):
        raise ValueError(f"progress must be True or False; got {progress!r}")
    grouping = check_choice("grouping", grouping, ("auto", "shape", "pad"))
    on_diverge = check_choice("on_diverge", on_diverge, ("raise", "stop"))
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64; got {dtype!r}")
    rec = record_steps(steps, n_records)
    dev = resolve_device(device)
    R, K = len(configs), rec.size

    # ---- computation groups: (run indices, gradient function of (beta, b) for those runs)
    if corpora is not None:
        if not isinstance(corpora, dict) or corpora.get("x") is None or corpora["x"].shape[0] != R:
            raise ValueError(f"corpora must be make_corpora(configs) for these {R} runs")
        groups = [(torch.arange(R, device=dev), corpora)]
    else:
        groups = []
        for g in _groups(configs, grouping):
            sub = [configs[r] for r in g]
            idx = torch.tensor(g, device=dev)
            if grouping == "pad" or len({(c.m, c.n) for c in sub}) > 1:
                groups.append((idx, make_corpora(sub, dev, dtype)))
            else:
                groups.append((idx, _dense_corpora(sub, dev, dtype)))

    def grad(beta: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if len(groups) == 1:
            idx, corp = groups[0]
            if "mask" in corp:
                return _padded_corpus_grad(beta, b, corp)
            return _dense_corpus_grad(corp["x"], corp["y"], corp["tau"], beta, b, corp["ny"], corp["work"])
        L, gb, gbb = (torch.empty(R, dtype=dtype, device=dev) for _ in range(3))
        for idx, corp in groups:
            if "mask" in corp:
                out = _padded_corpus_grad(beta[idx], b[idx], corp)
            else:
                out = _dense_corpus_grad(corp["x"], corp["y"], corp["tau"], beta[idx], b[idx], corp["ny"],
                                         corp["work"])
            L[idx], gb[idx], gbb[idx] = out
        return L, gb, gbb

    beta = torch.tensor([c.beta0 for c in configs], dtype=dtype, device=dev)
    b = torch.tensor([c.b0 for c in configs], dtype=dtype, device=dev)
    lr = torch.tensor([c.lr for c in configs], dtype=dtype, device=dev)
    hist = torch.full((3, R, K), float("nan"), dtype=dtype, device=dev)
    rec_set = {int(s): k for k, s in enumerate(rec)}
    alive = torch.ones(R, dtype=torch.bool, device=dev)
    diverged_at = np.full(R, -1, dtype=np.int64)
    L0: list[torch.Tensor] = []

    def check(L: torch.Tensor, t: int) -> None:
        if not L0:
            L0.append(L.clone())
        ok = (torch.isfinite(L) & torch.isfinite(beta) & torch.isfinite(b)
              & (beta.abs() <= MAX_PARAM) & (b.abs() <= MAX_PARAM) & (L <= max_loss_ratio * L0[0]))
        bad = alive & ~ok
        if not bool(bad.any()):
            return
        rs = torch.nonzero(bad).flatten().tolist()
        if on_diverge == "stop":
            for r in rs:
                diverged_at[r] = t
            alive[bad] = False
            lr[bad] = 0.0
            return
        r = rs[0]
        c = configs[r]
        raise TrainingDiverged(
            f"run {r} (m={c.m}, n={c.n}, seed={c.seed}) diverged at step {t} with step size "
            f"lr={c.lr:g}: beta={beta[r].item():.3g}, b={b[r].item():.3g}, loss={L[r].item():.3g} "
            f"(initial loss {L0[0][r].item():.3g}). "
            f"Use a smaller lr or a larger-resolution start (beta0, b0).")

    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, desc=f"GD x{R} runs", mininterval=2.0)
    done = 0
    for t in range(steps + 1):
        L, g_beta, g_b = grad(beta, b)
        if t in rec_set or t % check_every == 0:
            check(L, t)
            if t in rec_set:
                k = rec_set[t]
                hist[0, :, k] = torch.where(alive, beta, float("nan"))
                hist[1, :, k] = torch.where(alive, b, float("nan"))
                hist[2, :, k] = torch.where(alive, L, float("nan"))
            if bar is not None:
                bar.update(t - done)
                done = t
        if t == steps:
            break
        # frozen runs (lr = 0) keep their values; their NaN gradients must not leak in
        if on_diverge == "stop" and not bool(alive.all()):
            g_beta = torch.where(alive, g_beta, 0.0)
            g_b = torch.where(alive, g_b, 0.0)
        beta = beta - lr * g_beta
        b = b - lr * g_b
    if bar is not None:
        bar.update(steps - done)
        bar.close()
    h = hist.cpu().numpy()
    return TrainResult(configs, rec, h[0], h[1], h[2], diverged_at)
