"""Full-batch constant-step gradient descent on finite corpora, many runs at once.

Each run ``r`` has its own corpus (``m_r`` tasks of ``n_r`` examples drawn with ``seed_r`` from the
prior), step size, initialisation and optional stop scale. Runs that share ``(m, n)`` are stacked
into one dense group (no padding); with many different shapes and little waste, all runs are padded
to the largest ``m`` and ``n`` instead. Every step advances all groups with the analytic gradient

    L_r = (1/m_r) sum_j (f_j - tau_j)^2,
    dL/dbeta = (2/m_r) sum_j (f_j - tau_j) (-Var_w(x)),
    dL/db = (2/m_r) sum_j (f_j - tau_j) Cov_w(x, y),

computed by the sorted fast kernel of :mod:`stumplib.stump.fast_kernel` (no autograd, no argument
checks in the loop; most steps need no ``exp``); the loop's state and its divergence guard are
:mod:`stumplib.stump.train_loop`'s. The same loss and gradient at any parameters on fixed,
unsorted corpora is :func:`stumplib.stump.corpus_grad.corpus_grad`.

This module is the trainer's public face: the run configuration (:class:`RunConfig`), the corpora
(:func:`make_corpora`), one evaluation of every run's loss and gradient
(:func:`corpus_loss_and_grad`), the training call (:func:`train_gd`) and its result
(:class:`TrainResult`).

Each run's corpus depends only on its own configuration, and every anchor decision is per run, so a
batch of runs gives the same numbers as the same runs one by one (bit for bit while every column is
kept, see :data:`stumplib.stump.fast_kernel.TASK_MULTIPLE`; to rounding once the tail is dropped, as
a group shares its kept columns), and the same seeds give the same numbers on the same device.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.device import DEFAULT_DTYPE, resolve_device
from stumplib.core.errors import TrainingDiverged  # noqa: F401 (re-exported: raised by train_gd)
from stumplib.core.validation import (check_choice, check_int, check_prior, check_real,
                                      check_tensor_finite)
from stumplib.stump.fast_kernel import dense_layout, layout_grad, padded_layout
from stumplib.stump.prior import TAU_HI, TAU_LO, Prior
from stumplib.stump.tasks import sample_tasks
from stumplib.stump.train_loop import TrainLoop


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
    tau_lo: float = TAU_LO
    tau_hi: float = TAU_HI
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

    @property
    def prior(self) -> Prior:
        """The run's threshold prior ``U[tau_lo, tau_hi]`` as a :class:`~stumplib.stump.Prior`."""
        return Prior(self.tau_lo, self.tau_hi)


@dataclass(frozen=True)
class TrainOptions:
    """How a GD trainer records and guards its runs: one frozen object, checked where it is built.

    Taken by :func:`train_gd`, :func:`stumplib.stump.two_head.train_two_head` and
    :func:`stumplib.stump.flow.population_gd` (each reads the fields it uses; the two-head trainer
    and population GD need ``dtype`` (two-head), ``grouping`` and ``on_diverge`` at their
    defaults).

    Attributes
    ----------
    n_records : int
        Number of log-spaced records (>= 2, default 60), see :func:`record_steps`.
    dtype : torch.dtype
        The precision, ``torch.float64`` (default, the stump model's) or ``torch.float32``.
    check_every : int or None
        Steps between divergence checks (>= 1; also checked at every record); ``None`` (default):
        the trainer's own, 256 for :func:`train_gd`, 64 for the two-head trainer (population GD
        checks every step).
    max_loss_ratio : float
        A run whose loss exceeds this multiple (>= 1, default 2) of its initial loss counts as
        diverged (a too-large step throws GD into a saturated region where it stalls higher).
    grouping : str
        :func:`train_gd`'s batching: ``"auto"`` (default; groups by shape, or one padded batch
        when there are more than 8 shapes and padding wastes at most 25% of the work),
        ``"shape"`` or ``"pad"`` (one padded batch with masks).
    on_diverge : str
        :func:`train_gd`'s reaction to a diverged run: ``"raise"`` (default, stop everything with
        :class:`TrainingDiverged`) or ``"stop"`` (freeze the run, record NaN for it from then on,
        note the step in ``diverged_at``, carry on with the others: for step-size sweeps).

    Examples
    --------
    >>> TrainOptions(n_records=12, check_every=16).max_loss_ratio
    2.0
    """

    n_records: int = 60
    dtype: torch.dtype = DEFAULT_DTYPE
    check_every: int | None = None
    max_loss_ratio: float = 2.0
    grouping: str = "auto"
    on_diverge: str = "raise"

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_records", check_int("n_records", self.n_records, minimum=2))
        if self.dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64; got {self.dtype!r}")
        if self.check_every is not None:
            object.__setattr__(self, "check_every",
                               check_int("check_every", self.check_every, minimum=1))
        object.__setattr__(self, "max_loss_ratio",
                           check_real("max_loss_ratio", self.max_loss_ratio, low=1.0))
        object.__setattr__(self, "grouping",
                           check_choice("grouping", self.grouping, ("auto", "shape", "pad")))
        object.__setattr__(self, "on_diverge",
                           check_choice("on_diverge", self.on_diverge, ("raise", "stop")))

    def require_defaults(self, where: str, names: Sequence[str]) -> None:
        """Raise :class:`ValueError` if a field that ``where`` does not use was changed.

        Parameters
        ----------
        where : str
            The trainer, for the message.
        names : sequence of str
            The fields it does not use.
        """
        default = TrainOptions()
        for name in names:
            if getattr(self, name) != getattr(default, name):
                raise ValueError(f"{where} does not use TrainOptions.{name}; leave it at "
                                 f"{getattr(default, name)!r}")


#: the trainers' default options
DEFAULT_TRAIN_OPTIONS = TrainOptions()


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


def make_corpora(configs: Sequence[RunConfig], device: Any = "auto",
                 dtype: torch.dtype = DEFAULT_DTYPE) -> dict[str, torch.Tensor]:
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
        t, xx, yy = sample_tasks(c.m, c.n, c.prior, seed=c.seed, device=dev, dtype=dtype)
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

    One evaluation of the trainer's fast kernel on every column (the direct sums,
    :func:`stumplib.stump.fast_kernel.layout_grad`), the kernel where ``beta > 0`` and the model's
    path elsewhere.

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
            raise ValueError(f"{name} must have shape ({R},) (one value per run); "
                             f"got {tuple(v.shape)}")
    x = corpora["x"]
    return layout_grad(padded_layout(corpora), beta.to(x.dtype).to(x.device),
                       b.to(x.dtype).to(x.device))


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
    mark_step, mark_beta, mark_b : np.ndarray, shape ``(R, J)`` with ``J`` the most marks of any
        run, or None when no run has ``lr_marks``: for each run and mark of its ``lr_marks``, the
        first step at which ``beta >= beta_mark`` and the parameters there (from that step on the
        run uses the mark's step size); ``-1`` / NaN where the mark was not reached (or the run
        has fewer marks).
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


def _computation_groups(configs: list[RunConfig], corpora: dict[str, torch.Tensor] | None,
                        grouping: str, dev: torch.device, dtype: torch.dtype
                        ) -> list[tuple[torch.Tensor | None, dict[str, Any]]]:
    """The training loop's groups: ``(run indices, or None for all runs; fast-kernel layout)``, with
    fresh column choices and anchors."""
    R = len(configs)
    if corpora is not None:
        if not isinstance(corpora, dict) or corpora.get("x") is None or corpora["x"].shape[0] != R:
            raise ValueError(f"corpora must be make_corpora(configs) for these {R} runs")
        groups = [(None, padded_layout(corpora))]
    else:
        groups = []
        for g in _groups(configs, grouping):
            sub = [configs[r] for r in g]
            idx = None if len(g) == R else torch.tensor(g, device=dev)
            if grouping == "pad" or len({(c.m, c.n) for c in sub}) > 1:
                groups.append((idx, padded_layout(make_corpora(sub, dev, dtype))))
            else:
                groups.append((idx, dense_layout(sub, dev, dtype)))
    for _, lay in groups:
        lay["floor"] = None  # choose the columns afresh for this run's parameters
        lay["use_series"], lay["series"] = True, None  # group sums from per-run anchors, fresh ones
    return groups


def train_gd(configs: Sequence[RunConfig], steps: int, *, device: Any = "auto",
             progress: bool = True, corpora: dict[str, torch.Tensor] | None = None,
             options: TrainOptions = DEFAULT_TRAIN_OPTIONS) -> TrainResult:
    """Constant-step full-batch GD for every run in ``configs``, all at once.

    Runs with the same ``(m, n)`` form one dense group (no padding); each step advances every group
    with the fast kernel (:mod:`stumplib.stump.fast_kernel`): no autograd, no argument checks in the
    loop. Each run has its own step size, start ``(beta0, b0)`` and optional stop scale
    ``beta_stop``: a run freezes at the first step ``t`` whose ``beta_t >= beta_stop`` (its
    parameters of that step are kept, recorded from then on, and ``t`` is reported in
    ``stop_step``); the others carry on. Once every run has stopped (or diverged,
    ``on_diverge="stop"``) the loop ends early, at a divergence check or at an event below
    (``TrainResult.last_step``), and the remaining records repeat the frozen values: the numbers are
    the same as without the early end.

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
    device : ``"auto"``, ``"cpu"``, ``"cuda"``...
    progress : show a tqdm progress bar.
    corpora : pre-drawn padded corpora from :func:`make_corpora` (to reuse them); implies
        ``grouping="pad"``.
    options : :class:`TrainOptions`: records (``n_records``), precision (``dtype``), divergence
        checks (``check_every``, default 256; ``max_loss_ratio``; ``on_diverge``) and
        ``grouping``.

    Returns
    -------
    TrainResult
        numpy arrays (the training itself runs in torch on ``device``).

    Raises
    ------
    TrainingDiverged
        Naming the first run found diverged at a check (its ``m, n, seed, lr``, the step and the
        reason): non-finite loss or parameters, ``|beta|`` or ``|b|`` above
        :data:`stumplib.stump.train_loop.MAX_PARAM`, ``beta`` negative although ``beta0 > 0``, or
        a loss above ``max_loss_ratio`` times the initial loss.
    """
    if not isinstance(options, TrainOptions):
        raise ValueError(f"options must be a TrainOptions; got {type(options).__name__}")
    check_every = 256 if options.check_every is None else options.check_every
    configs, steps, check_every = _checked_run_arguments(configs, steps, check_every, progress,
                                                         options.dtype)
    dtype, max_loss_ratio = options.dtype, options.max_loss_ratio
    grouping, on_diverge = options.grouping, options.on_diverge
    rec = record_steps(steps, options.n_records)
    dev = resolve_device(device)
    groups = _computation_groups(configs, corpora, grouping, dev, dtype)
    loop = TrainLoop(configs, rec, max_loss_ratio, on_diverge, dtype, dev)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, desc=f"GD x{len(configs)} runs", mininterval=2.0)
    last = loop.run(groups, steps, check_every, bar)
    return TrainResult(**loop.result_fields(last))


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
