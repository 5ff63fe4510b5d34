"""Full-batch constant-step gradient descent on finite corpora, many runs at once.

Each run ``r`` has its own corpus (``m_r`` tasks of ``n_r`` examples drawn with ``seed_r`` from the
prior), step size, and initialisation. All runs are padded to the largest ``m`` and ``n`` and advanced
together in one vectorised computation (masks remove the padding), on CPU or CUDA, with the analytic
gradients of :mod:`stumplib.model` (no autograd in the loop):

    L_r = (1/m_r) sum_j (f_j - tau_j)^2,
    dL/dbeta = (2/m_r) sum_j (f_j - tau_j) (-Var_w(x)),   dL/db = (2/m_r) sum_j (f_j - tau_j) Cov_w(x, y).

Each run's corpus depends only on its own configuration, so a batch of runs gives the same numbers
as the same runs one by one.
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
from .validation import check_int, check_prior, check_real

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
    if len(configs) == 0:
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
    tm = corpora["task_mask"].to(beta.dtype)
    m = tm.sum(-1)
    f, df_dbeta, df_db = _estimate_and_grad(corpora["x"], corpora["y"], beta[:, None], b[:, None],
                                           corpora["mask"])
    e = (f - corpora["tau"]) * tm
    L = (e * e).sum(-1) / m
    return L, 2 * (e * df_dbeta).sum(-1) / m, 2 * (e * df_db).sum(-1) / m


@dataclass
class TrainResult:
    """Trajectories of a batch of runs.

    Attributes
    ----------
    configs : list of RunConfig, length ``R``
    steps : np.ndarray, shape ``(K,)``: step counts at which the state was recorded
    beta, b, loss : np.ndarray, shape ``(R, K)``
    """

    configs: list[RunConfig]
    steps: np.ndarray
    beta: np.ndarray
    b: np.ndarray
    loss: np.ndarray

    @property
    def final_beta(self) -> np.ndarray:
        return self.beta[:, -1]

    @property
    def final_b(self) -> np.ndarray:
        return self.b[:, -1]

    def save(self, path) -> None:
        """Save atomically to ``.npz`` with the configuration (see :mod:`stumplib.results_io`)."""
        save_results(path, {"steps": self.steps, "beta": self.beta, "b": self.b, "loss": self.loss},
                     {"configs": [asdict(c) for c in self.configs]})

    @classmethod
    def load(cls, path, configs: Sequence[RunConfig], steps: int | None = None) -> "TrainResult | None":
        """Reload a saved result if it was made with exactly ``configs`` (and ``steps`` when given)."""
        data = load_results(path, {"configs": [asdict(c) for c in configs]})
        if data is None or (steps is not None and int(data["steps"][-1]) != steps):
            return None
        return cls(list(configs), data["steps"], data["beta"], data["b"], data["loss"])


def train_gd(configs: Sequence[RunConfig], steps: int, *, n_records: int = 60, device: Any = "auto",
             dtype: torch.dtype = DEFAULT_DTYPE, progress: bool = True, check_every: int = 256,
             max_loss_ratio: float = 2.0, corpora: dict[str, torch.Tensor] | None = None) -> TrainResult:
    """Constant-step full-batch GD for every run in ``configs``, all at once.

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
    corpora : pre-drawn corpora from :func:`make_corpora` (to reuse them).

    Raises
    ------
    TrainingDiverged
        Naming the first run whose loss or parameters became non-finite, and its step size.
    """
    if not isinstance(configs, (list, tuple)) or len(configs) == 0:
        raise ValueError("configs must be a non-empty list of RunConfig")
    configs = [c.validated(f"configs[{i}]") for i, c in enumerate(configs)]
    steps = check_int("steps", steps, minimum=1)
    check_every = check_int("check_every", check_every, minimum=1)
    max_loss_ratio = check_real("max_loss_ratio", max_loss_ratio, low=1.0)
    rec = record_steps(steps, n_records)
    dev = resolve_device(device)
    if corpora is None:
        corpora = make_corpora(configs, dev, dtype)
    beta = torch.tensor([c.beta0 for c in configs], dtype=dtype, device=dev)
    b = torch.tensor([c.b0 for c in configs], dtype=dtype, device=dev)
    lr = torch.tensor([c.lr for c in configs], dtype=dtype, device=dev)
    R, K = len(configs), rec.size
    hist = torch.empty((3, R, K), dtype=dtype, device=dev)
    rec_set = {int(s): k for k, s in enumerate(rec)}

    L0: list[torch.Tensor] = []

    def check(L: torch.Tensor, t: int) -> None:
        if not L0:
            L0.append(L.clone())
        bad = ~(torch.isfinite(L) & torch.isfinite(beta) & torch.isfinite(b)
                & (beta.abs() <= MAX_PARAM) & (b.abs() <= MAX_PARAM)
                & (L <= max_loss_ratio * L0[0]))
        if bool(bad.any()):
            r = int(torch.nonzero(bad)[0])
            c = configs[r]
            raise TrainingDiverged(
                f"run {r} (m={c.m}, n={c.n}, seed={c.seed}) diverged at step {t} with step size "
                f"lr={c.lr:g}: beta={beta[r].item():.3g}, b={b[r].item():.3g}, loss={L[r].item():.3g} "
                f"(initial loss {L0[0][r].item():.3g}). "
                f"Use a smaller lr or a larger-resolution start (beta0, b0).")

    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, desc=f"GD x{R} runs", mininterval=0.5)
    for t in range(steps + 1):
        L, g_beta, g_b = corpus_loss_and_grad(beta, b, corpora)
        if t in rec_set:
            k = rec_set[t]
            hist[0, :, k], hist[1, :, k], hist[2, :, k] = beta, b, L
            check(L, t)
        elif t % check_every == 0:
            check(L, t)
        if t == steps:
            break
        beta = beta - lr * g_beta
        b = b - lr * g_b
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    h = hist.cpu().numpy()
    return TrainResult(configs, rec, h[0], h[1], h[2])
