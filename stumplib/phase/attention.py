"""The tied rank-one dot-product attention student, trained by full-batch gradient descent.

Student: ``y_hat = softmax(h h^T) x`` with ``h_l = x_l . Q / sqrt(d)``, ``Q in R^d``, tokens
``x_l = p_l + z_l`` (value weights the identity). Objective, as in the paper,

    ``L(Q) = sum_mu ||y_hat_mu - y_mu||^2 / (2 d) + (lambda / 2) ||Q||^2``,

minimised by plain gradient descent ``Q <- Q - lr grad L`` (the authors: ``lr = 0.15``, 5000 steps at
``d = 1000``). Many runs advance together: seeds (each its own teacher ``Q*`` and nested samples:
the run at ``alpha`` uses the first ``round(alpha d)`` samples of its seed) x sample ratios ``alpha``
x initialisations, as columns of one matrix ``Q`` of shape (seeds, d, runs), so each step is two
batched matrix products. The loss and its analytic gradient (no autograd in the loop) are written
entrywise in the rows of the 2x2 softmax with the precomputed Gram matrices ``X X^T``, ``X Z^T``,
``Z Z^T`` (:func:`objective_and_grad`). The data are those of :mod:`.problem`, the GD loop that
of :mod:`.minimise`, which also finds converged minimisers.

Initialisations: ``"semantic"`` (``Q = Q*``), ``"positional"`` (``Q = p_1``, the authors'
``(1, ..., 1) / sqrt(d)``), ``"random"`` (``Q ~ N(0, I_d / d)``, small).

Summary statistics: ``m = p_1 . Q / sqrt(d)``, ``theta_emp = Q* . Q / d`` (the theory's
``theta = sigma^2 theta_emp``), ``q_emp = sigma^2 |Q|^2 / d``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.device import make_generator, resolve_device
from stumplib.core.errors import TrainingDiverged
from stumplib.core.validation import check_choice, check_grid, check_int, check_real
from stumplib.phase.positional_baseline import baseline_test_error_of
from stumplib.phase.data import positional_encodings, softmax_rows, teacher_of_scores
from stumplib.phase.minimise import gradient_descent
from stumplib.phase.problem import Problem, initial_points, make_problem
from stumplib.phase.objective import INITS, objective_and_grad  # noqa: F401 (re-exported)
from stumplib.phase.setting import PhaseModel, as_model


def attention_test_error(Q: torch.Tensor, q_star: torch.Tensor, *, model: PhaseModel,
                         n_test: int, generator: torch.Generator,
                         chunk: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample test error ``E |y_hat - y|^2 / (2 d)`` of students ``Q`` (S, d, R) on fresh tokens.

    Rao-Blackwellised Monte Carlo: the tokens' components in ``span(p_1, Q*, Q)`` are sampled
    (``n_test`` draws), the expectation over the orthogonal complement (``d - 3`` dimensions, where
    the residual is ``(S - T) z_perp``) is exact, ``sigma^2 (d - 3) |S - T|_F^2``.

    Parameters
    ----------
    Q : torch.Tensor, shape ``(S, d, R)``
        Student vectors: ``R`` runs for each of ``S`` seeds (``d >= 3``).
    q_star : torch.Tensor, shape ``(S, d)``
        The teacher direction ``Q*`` of each seed.
    model : PhaseModel
        The model (:func:`~stumplib.phase.check_model`): the teacher's positional share ``omega``
        and matrix ``A`` and the token noise ``sigma`` (``lam`` and the branch are not used).
    n_test : int
        Monte Carlo test samples per run (each run, i.e. each ``(seed, run)`` pair, gets its own
        draws).
    generator : torch.Generator
        Source of the test tokens, on ``Q``'s device (the same seeded generator gives the same draws).
    chunk : int, optional
        Test samples drawn per batch (memory: ``S R chunk`` samples at once; default 4096). The
        estimator is the same for any ``chunk``, but a different ``chunk`` draws other test tokens.

    Returns
    -------
    mean : torch.Tensor, shape ``(S, R)``
        Monte Carlo mean of the per-sample test error ``|y_hat - y|^2 / (2 d)`` of each run.
    se : torch.Tensor, shape ``(S, R)``
        Its standard error, ``sqrt(var / n_test)`` over the ``n_test`` samples.
    """
    omega, sigma, _, A, _ = as_model(model)
    S_, d, R = Q.shape
    p1 = positional_encodings(d, device=Q.device, dtype=Q.dtype)[0]
    M = torch.stack([p1.expand(S_, R, d), q_star[:, None, :].expand(S_, R, d), Q.permute(0, 2, 1)], -1)
    B, _ = torch.linalg.qr(M)  # (S, R, d, 3), orthonormal, span contains p1, Q*, Q
    pc = (B * p1[:, None]).sum(-2)  # (S, R, 3)
    qsc = (B * q_star[:, None, :, None]).sum(-2)
    qc = (B * Q.permute(0, 2, 1)[..., None]).sum(-2)
    P = torch.stack([pc, -pc], -2)  # (S, R, 2, 3)
    tot = torch.zeros(S_, R, dtype=Q.dtype, device=Q.device)
    tot2 = torch.zeros_like(tot)
    done = 0
    while done < n_test:
        k = min(chunk, n_test - done)
        zeta = sigma * torch.randn(S_, R, k, 2, 3, generator=generator, device=Q.device, dtype=Q.dtype)
        h = ((P[:, :, None] + zeta) @ qc[:, :, None, :, None])[..., 0] / math.sqrt(d)  # (S, R, k, 2)
        hs = (zeta @ qsc[:, :, None, :, None])[..., 0] / math.sqrt(d)
        Sm = softmax_rows(h)
        Tm = teacher_of_scores(hs, omega=omega, A=A)
        res = Sm @ (P[:, :, None] + zeta) - Tm @ zeta
        err = ((res ** 2).sum((-1, -2)) + sigma ** 2 * (d - 3) * ((Sm - Tm) ** 2).sum((-1, -2))) / (2 * d)
        tot += err.sum(-1)
        tot2 += (err ** 2).sum(-1)
        done += k
    mean = tot / n_test
    var = (tot2 / n_test - mean ** 2).clamp_min(0)
    return mean, (var / n_test).sqrt()


@dataclass(frozen=True)
class AttentionGDOptions:
    """How :func:`train_attention_gd` descends, checks and scores: one frozen object, checked where
    it is built.

    Attributes
    ----------
    lr : float
        Step size, in (0, 100] (default 0.15, the authors').
    steps : int
        Number of gradient steps, 1 to 10,000,000 (default 5000).
    n_test : int
        Fresh test draws per run (>= 10; default 20000), Rao-Blackwellised, see
        :func:`attention_test_error`; drawn from the generator seeded ``seed * 1000 + 777``.
    lam_linear : float
        Ridge of the linear baseline fitted on the same samples, in [0, 1000] (default 1e-4).
    dtype : torch.dtype
        ``torch.float64`` (default) or ``torch.float32``; float32 is adequate on a GPU (losses
        ~1e-3, Grams of O(1) entries) but is not the default.
    check_every : int
        Steps between the checks that the objective and ``Q`` are finite (>= 1; default 250; the
        last step is always checked).
    progress : bool
        Show a tqdm progress bar over the steps (default True).
    checkpoints : sequence of int
        Steps (each in 1..steps) after which the test error (the same test draws as the final one)
        and the gradient norm are also recorded, to see whether the runs still move (default
        none); kept sorted, duplicates removed.

    Examples
    --------
    >>> AttentionGDOptions(steps=500, checkpoints=[100, 100, 50]).checkpoints
    (50, 100)
    """

    lr: float = 0.15
    steps: int = 5000
    n_test: int = 20000
    lam_linear: float = 1e-4
    dtype: torch.dtype = torch.float64
    check_every: int = 250
    progress: bool = True
    checkpoints: Sequence[int] = ()

    def __post_init__(self) -> None:
        check_real("lam_linear", self.lam_linear, low=0.0, high=1e3)
        check_real("lr", self.lr, low=0.0, low_open=True, high=100.0)
        check_int("steps", self.steps, minimum=1, maximum=10_000_000)
        check_int("n_test", self.n_test, minimum=10)
        check_int("check_every", self.check_every, minimum=1)
        if self.dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64; got {self.dtype}")
        object.__setattr__(self, "checkpoints", tuple(sorted({
            check_int(f"checkpoints[{i}]", c, minimum=1, maximum=self.steps)
            for i, c in enumerate(self.checkpoints)})))


#: :func:`train_attention_gd`'s default options
DEFAULT_GD_OPTIONS = AttentionGDOptions()


def train_attention_gd(alphas: Sequence[float], d: int, *, model: PhaseModel,
                       seeds: Sequence[int] | int = 4,
                       inits: Sequence[str] = ("semantic", "positional"), seed: int = 0,
                       device: Any = "cpu",
                       options: AttentionGDOptions = DEFAULT_GD_OPTIONS) -> dict[str, np.ndarray]:
    """Full-batch GD of the attention student for every (seed, alpha, init) at once.

    Parameters
    ----------
    alphas : sequence of float, length ``A``
        Sample ratios ``n / d``, each in [0, 100] with ``n = round(alpha d) >= 1``; the run at
        ``alpha`` uses the first ``n`` samples of its seed.
    d : int
        Token dimension, 4 to 1,000,000.
    seeds : int or sequence of int, optional
        Number of seeds ``S`` (int, 1 to 10000: offsets ``0, ..., S - 1``) or a list of seed offsets
        (>= 0); seed ``s`` draws its teacher and samples from the generator seeded ``seed * 1000 + s``
        (default 4).
    inits : sequence of str, optional
        The initialisations, length ``I``: a subset of ``("semantic", "positional", "random")``
        (default the first two).
    model : PhaseModel
        The model (:func:`~stumplib.phase.check_model`): the teacher's positional share ``omega``
        and matrix ``A``, the token noise ``sigma`` and the ridge ``lam`` of the objective (the
        branch is not used).
    seed : int, optional
        The chapter's seed (>= 0; default 0): it selects the teachers and samples (above), the
        ``"random"`` initial points (generator ``seed * 1000 + 999``) and the test draws.
    device : str or torch.device, optional
        Where the runs are computed: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:K"`` or a
        :class:`torch.device` (see :func:`stumplib.core.device.resolve_device`; default ``"cpu"``).
    options : AttentionGDOptions, optional
        Step size and steps, test draws, the baseline's ridge, precision, checks, progress bar and
        checkpoints (default :class:`AttentionGDOptions`).

    Returns
    -------
    dict of str to numpy.ndarray
        numpy arrays (the descent runs in torch on ``device``), with axes (seed, alpha, init),
        shape ``(S, A, I)``: ``m``, ``theta_emp``, ``q_emp``, ``test_error``, ``test_error_se``, ``train_loss`` (objective / d), ``grad_norm`` (final
        ``||grad L||``); ``baseline_test_error`` ``(S, A)``; ``alphas``, ``n`` ``(A,)``; ``d`` (0-d);
        with ``checkpoints``, ``checkpoints`` ``(C,)`` (sorted, duplicates removed) and
        ``test_error_at``, ``grad_norm_at`` ``(C, S, A, I)``.

    Raises
    ------
    ValueError
        For bad arguments.
    TrainingDiverged
        If the objective or ``Q`` becomes non-finite (checked every ``check_every`` steps).
    """
    if not isinstance(options, AttentionGDOptions):
        raise ValueError(f"options must be an AttentionGDOptions; got {type(options).__name__}")
    model = as_model(model)
    lr, steps, n_test, lam_linear = options.lr, options.steps, options.n_test, options.lam_linear
    dtype, check_every, progress = options.dtype, options.check_every, options.progress
    checkpoints = list(options.checkpoints)
    ns, seeds, inits, dev = _check_gd(alphas, d, seeds, inits, seed=seed, device=device)
    pb = make_problem(d, seeds, max(ns), model=model, seed=seed, device=dev, dtype=dtype)
    Q, mask = _initial_runs(pb, ns, inits, seed)

    def test_error_now(Q_):
        return attention_test_error(Q_, pb.q_star, model=model, n_test=n_test,
                                    generator=make_generator(seed * 1000 + 777, dev))

    watch = _GDWatch(pb, mask, test_error_now, checkpoints, (len(seeds), len(ns), len(inits)),
                     steps=steps, check_every=check_every, lr=lr, d=d, progress=progress)
    Q = gradient_descent(pb, Q, mask, lr=lr, steps=steps, on_step=watch)
    watch.close()
    out = _gd_outputs(pb, Q, mask, test_error_now(Q), ns, watch.shape, lam_linear)
    out.update(watch.recorded())
    return dict(out, alphas=np.asarray(alphas, dtype=float), n=np.asarray(ns), d=np.asarray(d))


class _GDWatch:
    """:func:`train_attention_gd`'s step callback: the checkpoints' test errors and gradient
    norms, the divergence check every ``check_every`` steps, the progress bar."""

    def __init__(self, pb, mask, test_error_now, checkpoints, shape, *, steps, check_every, lr, d,
                 progress):
        self.pb, self.mask, self.test_error_now = pb, mask, test_error_now
        self.checkpoints, self.shape, self.steps = checkpoints, shape, steps
        self.check_every, self.lr, self.d = check_every, lr, d
        self.bar = _progress(steps, d) if progress else None
        self.te: list[np.ndarray] = []
        self.gn: list[np.ndarray] = []

    def __call__(self, k: int, L: torch.Tensor, Q_: torch.Tensor) -> None:
        if k in self.checkpoints:
            _, g_ = self.pb.objective(Q_, self.mask)
            self.te.append(self.test_error_now(Q_)[0].reshape(self.shape).cpu().numpy())
            self.gn.append(g_.norm(dim=1).reshape(self.shape).cpu().numpy())
        if (k % self.check_every == 0 or k == self.steps) and not bool(
                torch.isfinite(L).all() and torch.isfinite(Q_).all()):
            raise TrainingDiverged(f"GD diverged (non-finite objective) at step {k} with "
                                   f"lr={self.lr}, d={self.d}; lower lr")
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def recorded(self) -> dict[str, np.ndarray]:
        if not self.checkpoints:
            return {}
        return dict(checkpoints=np.asarray(self.checkpoints), test_error_at=np.stack(self.te),
                    grad_norm_at=np.stack(self.gn))


def _progress(steps: int, d: int):
    from tqdm.auto import tqdm

    return tqdm(total=steps, desc=f"GD d={d}", mininterval=2.0)


def _check_gd(alphas, d, seeds, inits, *, seed, device):
    """Validate :func:`train_attention_gd`'s arguments (the model and the options are checked
    where they are built); returns ``(ns, seeds, inits, device)``."""
    alphas = check_grid("alphas", alphas, kind="real", minimum=0.0, maximum=100.0)
    d = check_int("d", d, minimum=4, maximum=1_000_000)
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        seeds = list(range(check_int("seeds", seeds, minimum=1, maximum=10_000)))
    seeds = check_grid("seeds", seeds, kind="int", minimum=0)
    inits = [check_choice(f"inits[{i}]", v, INITS) for i, v in enumerate(_check_grid_str(inits))]
    check_int("seed", seed, minimum=0)
    ns = [int(round(a * d)) for a in alphas]
    for a, n in zip(alphas, ns):
        if n < 1:
            raise ValueError(f"alphas: alpha={a} gives n = round(alpha d) = 0 samples at d={d}")
    return ns, seeds, inits, resolve_device(device)


def _initial_runs(pb: Problem, ns: list[int], inits: list[str], seed: int):
    """Columns ``r = alpha index * len(inits) + init index`` of ``Q`` (S, d, R) and the sample mask
    (1, n, R) of each run."""
    dev, dtype = pb.X.device, pb.X.dtype
    n_run = torch.tensor([n for n in ns for _ in inits], device=dev)
    mask = (torch.arange(pb.n, device=dev)[:, None] < n_run[None, :]).to(dtype)[None]
    gen0 = make_generator(seed * 1000 + 999, dev)
    cols = [initial_points(pb, init, generator=gen0) for _ in ns for init in inits]
    return torch.stack(cols, -1), mask


def _gd_outputs(pb: Problem, Q, mask, te, ns, shape, lam_linear) -> dict[str, np.ndarray]:
    """Summaries, losses, test errors and the linear baseline fitted on each run's samples."""
    L, grad = pb.objective(Q, mask)
    d = pb.d
    p1 = positional_encodings(d, device=Q.device, dtype=Q.dtype)[0]
    m = (Q * p1[None, :, None]).sum(1) / math.sqrt(d)
    theta_emp = (Q * pb.q_star[:, :, None]).sum(1) / d
    q_emp = pb.sigma ** 2 * (Q * Q).sum(1) / d
    # linear baseline fitted on each run's samples: B = (sum T Gzz / d)(sum Gzz / d + lam I)^-1
    eye = torch.eye(2, dtype=Q.dtype, device=Q.device)
    cTG = torch.cumsum(pb.T @ pb.Gzz, 1) / d
    cG = torch.cumsum(pb.Gzz, 1) / d
    idx = torch.tensor([n - 1 for n in ns], device=Q.device)
    Bhat = cTG[:, idx] @ torch.linalg.inv(cG[:, idx] + lam_linear * eye)
    base = baseline_test_error_of(Bhat.cpu().numpy(), omega=pb.omega, sigma=pb.sigma, A=pb.A)

    def rs(x):
        return x.reshape(shape).cpu().numpy()

    return dict(m=rs(m), theta_emp=rs(theta_emp), q_emp=rs(q_emp), test_error=rs(te[0]),
                test_error_se=rs(te[1]), train_loss=rs(L) / d, grad_norm=rs(grad.norm(dim=1)),
                baseline_test_error=base)


def _check_grid_str(values: Any) -> list:
    """A non-empty list (of strings checked by the caller)."""
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise ValueError(f"inits must be a non-empty list of {list(INITS)}; got {values!r}")
    vals = list(values)
    if not vals:
        raise ValueError("inits must be a non-empty list; got an empty list")
    return vals
