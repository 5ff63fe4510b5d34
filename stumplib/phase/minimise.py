"""Converged minimisers of the attention student's regularised empirical risk, and their exact
test error.

The theory of Cui et al. describes *minimisers* of

    ``L(Q) = sum_mu |y_hat_mu - y_mu|^2 / (2 d) + (lambda / 2) |Q|^2``,

not a fixed number of gradient steps. :func:`minimise` runs L-BFGS (scipy's L-BFGS-B without
bounds: a Moré-Thuente line search that satisfies the strong Wolfe conditions) in float64 on the
full-batch objective and gradient of :func:`.attention.objective_and_grad`, until the **relative
gradient** ``|grad L| / (lambda |Q|)`` (the data term's gradient balances the ridge's ``lambda Q``
at a minimiser, so this ratio is scale-free) is at most ``gtol``; a run that stops above it is
reported as not converged, never averaged in silently.

:func:`exact_test_error` is the test error of a learned ``Q`` as an expectation over fresh tokens,
without test-sample noise: the integrand depends on the tokens only through their projections on
``span(Q*, Q)`` (a four-dimensional Gaussian integral, done with a tensor Gauss-Hermite rule), on
the third direction of ``span(Q*, Q, p_1)`` and on the orthogonal complement (both exact).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from stumplib.core.device import make_generator
from stumplib.core.validation import check_choice, check_int, check_real
from stumplib.phase.data import (positional_encodings, sample_teacher, sample_tokens, softmax_rows, teacher_matrix,
                   teacher_of_scores)
from stumplib.phase.objective import INITS, objective_from_grams
from stumplib.phase.setting import check_A

__all__ = ["Problem", "make_problem", "initial_points", "gradient_descent", "minimise",
           "exact_test_error", "summaries", "minimiser_runs", "decide", "study", "read_runs", "DECIDING_RUN",
           "deciding_run", "gd_gap", "RUN_PARAMETERS", "run_parameters", "parameter_mismatches",
           "at_alphas", "EXTRAPOLATIONS", "extrapolations", "consistency",
           "semantic_start", "classify_dynamics", "stability_by_dynamics"]

#: the deciding run committed with the book (``scripts/phase_minimisers.py``'s output, with its
#: command, commit, machine, duration and parameters; ``scripts/PHASE_MINIMISERS.md`` describes it)
DECIDING_RUN = Path(__file__).resolve().parents[2] / "scripts" / "PHASE_MINIMISERS_4000.npz"
#: the model parameters a stored run must share with the page that reads it
RUN_PARAMETERS = ("omega", "sigma", "lam", "A")
#: the three extrapolations to ``d -> infinity`` (name: polynomial degree in ``1/d``, smallest
#: ``d`` dropped); the decision stands only where all three agree
EXTRAPOLATIONS = {"line": (1, False), "quadratic": (2, False), "drop_smallest": (1, True)}


@dataclass
class Problem:
    """The data of ``S`` seeds at one ``d`` (torch, float64): teachers, tokens, Gram matrices.

    Attributes
    ----------
    q_star : (S, d) teachers. X : (S, n, 2, d) tokens with positions. T : (S, n, 2, 2) teachers'
    matrices. Gxx, Gxz, Gzz : (S, n, 2, 2) Gram matrices ``X X^T``, ``X Z^T``, ``Z Z^T``.
    c0 : (S, n) ``|T Z|_F^2``. d, n : sizes. omega, sigma, lam, A : the model.
    """

    q_star: torch.Tensor
    X: torch.Tensor
    T: torch.Tensor
    Gxx: torch.Tensor
    Gxz: torch.Tensor
    Gzz: torch.Tensor
    c0: torch.Tensor
    d: int
    n: int
    omega: float
    sigma: float
    lam: float
    A: np.ndarray

    def first(self, k: int) -> "Problem":
        """The problem of the first ``k`` seeds.

        Parameters
        ----------
        k : int
            Seeds kept.

        Returns
        -------
        Problem
        """
        return replace(self, q_star=self.q_star[:k], X=self.X[:k], T=self.T[:k], Gxx=self.Gxx[:k],
                       Gxz=self.Gxz[:k], Gzz=self.Gzz[:k], c0=self.c0[:k])

    def objective(self, Q: torch.Tensor, mask: torch.Tensor, sl: slice = slice(None)):
        """Objective and gradient of the runs ``Q`` of the seeds ``sl``.

        Parameters
        ----------
        Q : torch.Tensor, shape ``(S', d, R)``
            ``R`` runs per seed.
        mask : torch.Tensor, shape ``(1, n, R)``
            The samples each run uses (1 or 0).
        sl : slice
            The seeds.

        Returns
        -------
        L : torch.Tensor, shape ``(S', R)``
        grad : torch.Tensor, shape ``(S', d, R)``
        """
        return objective_from_grams(Q, self.X[sl], self.Gxx[sl], self.Gxz[sl], self.c0[sl], self.T[sl],
                                   mask, self.lam)


def make_problem(d: int, seeds: Sequence[int], n: int, *, seed: int = 0, omega: float = 0.3,
                 sigma: float = 0.5, lam: float = 0.01, A: Any = ((0.6, 0.4), (0.4, 0.6)),
                 device: Any = "cpu", dtype: torch.dtype = torch.float64) -> Problem:
    """Draw the teachers and ``n`` samples of each seed (seed ``s`` from generator
    ``seed * 1000 + s``; a run at ``alpha`` uses the first ``round(alpha d)`` samples). The draws
    are made on the CPU and then moved to ``device``, so every device sees the same data.

    Parameters
    ----------
    d : token dimension (>= 4).
    seeds : seed offsets.
    n : samples per seed (>= 1).
    seed : the chapter's seed.
    omega, sigma, lam, A : the model.
    device, dtype : torch placement.

    Returns
    -------
    Problem
    """
    d = check_int("d", d, minimum=4, maximum=1_000_000)
    n = check_int("n", n, minimum=1)
    omega = check_real("omega", omega, low=0.0, high=1.0)
    sigma = check_real("sigma", sigma, low=0.0, low_open=True, high=100.0)
    lam = check_real("lam", lam, low=0.0, high=1e3)
    A_ = check_A(A)
    q_star, Z = [], []
    for s in seeds:
        gen = make_generator(seed * 1000 + int(s), torch.device("cpu"))  # on the CPU, then moved
        q_star.append(sample_teacher(d, generator=gen, dtype=dtype).to(device))
        Z.append(sample_tokens(n, d, sigma=sigma, generator=gen, dtype=dtype).to(device))
    qs, Zt = torch.stack(q_star), torch.stack(Z)
    T = teacher_matrix(Zt, qs, omega=omega, A=A_)
    X = Zt + positional_encodings(d, device=device, dtype=dtype)
    Gzz = Zt @ Zt.transpose(-1, -2)
    return Problem(qs, X, T, X @ X.transpose(-1, -2), X @ Zt.transpose(-1, -2), Gzz,
                   ((T @ Gzz) * T).sum((-1, -2)), d, n, omega, sigma, lam, A_)


def initial_points(pb: Problem, init: str, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Initial ``Q`` of every seed.

    Parameters
    ----------
    pb : Problem
        The problem.
    init : str
        ``"semantic"`` (``Q*``), ``"positional"`` (``p_1``) or ``"random"`` (``N(0, I_d / d)``).
    generator : torch.Generator, optional
        Needed by ``"random"``.

    Returns
    -------
    torch.Tensor, shape ``(S, d)``
    """
    init = check_choice("init", init, INITS)
    S_, d = pb.q_star.shape
    if init == "semantic":
        return pb.q_star.clone()
    if init == "positional":
        return positional_encodings(d, device=pb.X.device, dtype=pb.X.dtype)[0].expand(S_, d).clone()
    if generator is None:
        raise ValueError("init='random' needs a generator")
    return torch.randn(S_, d, generator=generator, device=pb.X.device, dtype=pb.X.dtype) / math.sqrt(d)


def gradient_descent(pb: Problem, Q: torch.Tensor, mask: torch.Tensor, *, lr: float, steps: int,
                     on_step=None) -> torch.Tensor:
    """Plain full-batch GD ``Q <- Q - lr grad L``.

    Parameters
    ----------
    pb : Problem
        The problem.
    Q : torch.Tensor, shape ``(S, d, R)``
        The runs' start.
    mask : torch.Tensor, shape ``(1, n, R)``
        The samples each run uses.
    lr : float
        The step.
    steps : int
        Steps taken.
    on_step : callable, optional
        ``on_step(k, L, Q)`` is called after step ``k`` (1-based).

    Returns
    -------
    torch.Tensor, shape ``(S, d, R)``
        The runs after ``steps`` steps.
    """
    for k in range(steps):
        L, grad = pb.objective(Q, mask)
        Q = Q - lr * grad
        if on_step is not None:
            on_step(k + 1, L, Q)
    return Q


def minimise(pb: Problem, s: int, n: int, Q0: torch.Tensor, *, gtol: float = 1e-8,
             max_iter: int = 20000) -> dict[str, Any]:
    """L-BFGS (strong Wolfe line search, float64) on seed ``s``'s objective with its first ``n``
    samples, from ``Q0`` (d,), to a relative gradient ``|grad L| / (lambda |Q|) <= gtol``; where the
    line search stalls on the objective's rounding (about 1e-8), Newton-CG steps finish.

    Parameters
    ----------
    pb : the problem.
    s : seed index into ``pb``.
    n : samples used (<= ``pb.n``).
    Q0 : (d,) start.
    gtol : relative-gradient tolerance (1e-14 to 1e-2).
    max_iter : iteration cap.

    Returns
    -------
    dict: ``Q`` (d,) tensor, ``loss`` (objective / d), ``rel_grad``, ``n_iter`` (L-BFGS),
    ``n_newton`` (Newton-CG steps that finish where the line search stalls on rounding),
    ``converged`` (bool: ``rel_grad <= gtol``).
    """
    from scipy.optimize import minimize

    gtol = check_real("gtol", gtol, low=1e-14, high=1e-2)
    n = check_int("n", n, minimum=1, maximum=pb.n)
    if pb.lam <= 0:
        raise ValueError("minimise needs lam > 0 (the relative gradient is measured against lambda |Q|)")
    mask = (torch.arange(pb.n, device=pb.X.device) < n).to(pb.X.dtype)[None, :, None]
    sl = slice(s, s + 1)

    def fg(x):
        Q = torch.as_tensor(x, dtype=pb.X.dtype, device=pb.X.device)[None, :, None]
        L, g = pb.objective(Q, mask, sl)
        return float(L), g[0, :, 0].cpu().numpy()

    def rel(x, g):
        return float(np.linalg.norm(g) / (pb.lam * np.linalg.norm(x)))

    x = Q0.detach().cpu().numpy().astype(np.float64)
    r = minimize(fg, x, jac=True, method="L-BFGS-B",
                 options=dict(maxiter=max_iter, maxcor=20, ftol=0.0, gtol=1e-300, maxls=50))
    x, n_iter, n_newton = r.x, int(r.nit), 0
    L, g = fg(x)
    while rel(x, g) > gtol and n_newton < min(8, max_iter):  # the objective's rounding stalls the line search:
        x = x + _newton_step(pb, x, g, mask, sl)  # finish with Newton-CG (exact Hessian products)
        L, g = fg(x)
        n_newton += 1
    rg = rel(x, g)
    return dict(Q=torch.as_tensor(x, dtype=pb.X.dtype, device=pb.X.device), loss=L / pb.d, rel_grad=rg,
                n_iter=n_iter, n_newton=n_newton, converged=bool(rg <= gtol))


def _newton_step(pb: Problem, x: np.ndarray, g: np.ndarray, mask: torch.Tensor, sl: slice) -> np.ndarray:
    """The Newton step ``-H^-1 g`` by conjugate gradients with exact Hessian-vector products
    (autograd through the analytic gradient)."""
    from scipy.sparse.linalg import LinearOperator, cg

    Q = torch.as_tensor(x, dtype=pb.X.dtype, device=pb.X.device).requires_grad_(True)
    _, grad = pb.objective(Q[None, :, None], mask, sl)
    grad = grad[0, :, 0]

    def hv(v):
        vt = torch.as_tensor(np.asarray(v).ravel(), dtype=Q.dtype, device=Q.device)
        return torch.autograd.grad(grad, Q, vt, retain_graph=True)[0].detach().cpu().numpy()

    H = LinearOperator((x.size, x.size), matvec=hv, dtype=np.float64)
    p, _ = cg(H, -g, rtol=1e-5, atol=0.0, maxiter=300)
    return p


def _gauss_hermite_4(n_nodes: int, sigma: float, dtype, device):
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    g = np.stack(np.meshgrid(x, x, x, x, indexing="ij"), -1).reshape(-1, 4) * sigma
    W = np.prod(np.stack(np.meshgrid(w, w, w, w, indexing="ij"), -1).reshape(-1, 4), -1)
    return (torch.as_tensor(g, dtype=dtype, device=device).reshape(-1, 2, 2),
            torch.as_tensor(W, dtype=dtype, device=device))


def exact_test_error(Q: torch.Tensor, q_star: torch.Tensor, *, omega: float, sigma: float = 0.5,
                     A: Any = ((0.6, 0.4), (0.4, 0.6)), n_nodes: int = 16) -> np.ndarray:
    """Per-sample test error ``E |y_hat - y|^2 / (2 d)`` over fresh tokens, without sampling noise.

    With an orthonormal basis ``e_1, e_2, e_3`` of ``span(Q*, Q, p_1)`` (``Q*, Q`` in the first two),
    a token's projections ``g_l`` on ``e_1, e_2`` set both score vectors; given them, the residual's
    component along ``e_3`` and the orthogonal complement average exactly, and the expectation over
    ``g`` (four Gaussians) is a tensor Gauss-Hermite rule of ``n_nodes`` per axis.

    Parameters
    ----------
    Q, q_star : (R, d) students and their teachers (or (d,) each).
    omega, sigma, A : the model.
    n_nodes : Gauss-Hermite nodes per axis (4 to 40).

    Returns
    -------
    (R,) numpy array (a float for 1-D input).
    """
    omega = check_real("omega", omega, low=0.0, high=1.0)
    sigma = check_real("sigma", sigma, low=0.0, low_open=True, high=100.0)
    n_nodes = check_int("n_nodes", n_nodes, minimum=4, maximum=40)
    one = Q.ndim == 1
    Q, qs = (torch.atleast_2d(v).to(torch.float64) for v in (Q, q_star))
    G, W = _gauss_hermite_4(n_nodes, sigma, Q.dtype, Q.device)  # (N, 2 tokens, 2 coords), (N,)
    step = max(1, 2_000_000 // W.numel())
    out = np.concatenate([_exact_chunk(Q[i:i + step], qs[i:i + step], G, W, omega, sigma, A)
                          for i in range(0, Q.shape[0], step)])
    return float(out[0]) if one else out


def _exact_chunk(Q, qs, G, W, omega, sigma, A) -> np.ndarray:
    R, d = Q.shape
    p1 = positional_encodings(d, device=Q.device, dtype=Q.dtype)[0]
    B, Rm = torch.linalg.qr(torch.stack([qs, Q, p1.expand(R, d)], -1))  # (R, d, 3), (R, 3, 3)
    qsc, qc, pc = Rm[:, :2, 0], Rm[:, :2, 1], Rm[:, :, 2]  # coordinates on e_1, e_2 (p: also e_3)
    sgn = torch.tensor([1.0, -1.0], dtype=Q.dtype, device=Q.device)
    pq = (p1 * Q).sum(-1)  # p_1 . Q
    h = (sgn[None, None] * pq[:, None, None] + (G[None] @ qc[:, None, :, None])[..., 0]) / math.sqrt(d)
    hs = (G[None] @ qsc[:, None, :, None])[..., 0] / math.sqrt(d)  # (R, N, 2)
    Sm, Tm = softmax_rows(h), teacher_of_scores(hs, omega=omega, A=A)
    Ss = Sm @ sgn  # (R, N, 2): sum_k S_lk s_k
    D = Sm - Tm
    inplane = Ss[..., None] * pc[:, None, None, :2] + D @ G[None]  # (R, N, 2, 2)
    err = ((inplane ** 2).sum((-1, -2)) + (Ss ** 2).sum(-1) * pc[:, None, 2] ** 2
           + sigma ** 2 * (d - 2) * (D ** 2).sum((-1, -2))) / (2 * d)
    return (err * W).sum(-1).cpu().numpy()


def summaries(Q: torch.Tensor, q_star: torch.Tensor, sigma: float) -> dict[str, np.ndarray]:
    """The overlaps of students.

    Parameters
    ----------
    Q : torch.Tensor, shape ``(R, d)``
        The students.
    q_star : torch.Tensor, shape ``(R, d)``
        Their teachers.
    sigma : float
        The tokens' standard deviation.

    Returns
    -------
    dict of np.ndarray, each of shape ``(R,)``
        ``m = p_1 . Q / sqrt(d)``, ``theta_emp = Q* . Q / d``, ``q_emp = sigma^2 |Q|^2 / d``.
    """
    d = Q.shape[-1]
    p1 = positional_encodings(d, device=Q.device, dtype=Q.dtype)[0]
    return dict(m=((Q * p1).sum(-1) / math.sqrt(d)).cpu().numpy(),
                theta_emp=((Q * q_star).sum(-1) / d).cpu().numpy(),
                q_emp=(sigma ** 2 * (Q * Q).sum(-1) / d).cpu().numpy())


def minimiser_runs(alphas: Sequence[float], d: int, seeds: Sequence[int] | int, *,
                   init: str = "semantic", omega: float = 0.3, sigma: float = 0.5, lam: float = 0.01,
                   A: Any = ((0.6, 0.4), (0.4, 0.6)), gtol: float = 1e-8, gd_steps: int = 0,
                   gd_seeds: int | None = None, lr: float = 0.15, seed: int = 0, n_nodes: int = 16,
                   max_iter: int = 20000, n_samples: int | None = None,
                   device: Any = "cpu") -> dict[str, np.ndarray]:
    """Converged minimisers (and, with ``gd_steps``, the paper's plain GD from the same start) for
    every (seed, alpha) at one ``d``.

    Parameters
    ----------
    alphas : sample ratios.
    d : dimension.
    seeds : a count or a list of seed offsets.
    init : the start (:func:`initial_points`).
    omega, sigma, lam, A : the model.
    gtol : relative-gradient tolerance of :func:`minimise`.
    gd_steps, lr : plain GD's steps (0: no GD) and step size.
    gd_seeds : GD on the first ``gd_seeds`` seeds only (``None``: all; NaN for the others).
    seed : the chapter's seed.
    n_nodes : rule of :func:`exact_test_error`.
    max_iter : L-BFGS iteration cap (a run that stops there is not converged).
    n_samples : samples drawn per seed (``None``: ``max(round(alpha d))``); the draw of a seed
        depends on it, so runs that must share a seed's data (a later alpha added to a stored run)
        draw the same number.
    device : torch device.

    Returns
    -------
    dict of (seed, alpha) arrays: ``test_error`` (exact), ``m``, ``theta_emp``, ``q_emp``,
    ``train_loss`` (objective / d), ``rel_grad``, ``n_iter``, ``n_newton``, ``converged``; with ``gd_steps``,
    ``gd_test_error``, ``gd_rel_grad``; and ``alphas``, ``d``, ``seeds``.
    """
    seeds = list(range(check_int("seeds", seeds, minimum=1))) if isinstance(seeds, int) else list(seeds)
    alphas = [check_real(f"alphas[{i}]", a, low=0.0, low_open=True, high=100.0) for i, a in enumerate(alphas)]
    gd_steps = check_int("gd_steps", gd_steps, minimum=0)
    ns = [int(round(a * d)) for a in alphas]
    if min(ns) < 1:
        raise ValueError(f"alphas: every alpha must give n = round(alpha d) >= 1 at d={d}")
    n_draw = max(ns) if n_samples is None else check_int("n_samples", n_samples, minimum=max(ns))
    pb = make_problem(d, seeds, n_draw, seed=seed, omega=omega, sigma=sigma, lam=lam, A=A, device=device)
    Q0 = initial_points(pb, init, generator=make_generator(seed * 1000 + 999, torch.device(device)))
    keys = ("test_error", "m", "theta_emp", "q_emp", "train_loss", "rel_grad", "n_iter", "n_newton",
            "converged")
    out = {k: np.zeros((len(seeds), len(alphas))) for k in keys}
    for j, n in enumerate(ns):
        runs = [minimise(pb, s, n, Q0[s], gtol=gtol, max_iter=max_iter) for s in range(len(seeds))]
        Q = torch.stack([r["Q"] for r in runs])
        out["test_error"][:, j] = exact_test_error(Q, pb.q_star, omega=omega, sigma=sigma, A=A,
                                                   n_nodes=n_nodes)
        for k, v in summaries(Q, pb.q_star, sigma).items():
            out[k][:, j] = v
        for k in ("loss", "rel_grad", "n_iter", "n_newton", "converged"):
            out["train_loss" if k == "loss" else k][:, j] = [r[k] for r in runs]
    if gd_steps:
        k = len(seeds) if gd_seeds is None else check_int("gd_seeds", gd_seeds, minimum=1, maximum=len(seeds))
        for key, v in _gd_runs(pb.first(k), Q0[:k], ns, lr=lr, steps=gd_steps, n_nodes=n_nodes).items():
            out[key] = np.full((len(seeds), len(alphas)), np.nan)
            out[key][:k] = v
    out["converged"] = out["converged"].astype(bool)
    return dict(out, alphas=np.asarray(alphas), d=np.asarray(d), seeds=np.asarray(seeds))


def _gd_runs(pb: Problem, Q0: torch.Tensor, ns: list[int], *, lr: float, steps: int,
             n_nodes: int) -> dict[str, np.ndarray]:
    """Plain GD from ``Q0`` for every (seed, alpha) at once; exact test error and relative gradient."""
    mask = (torch.arange(pb.n, device=pb.X.device)[:, None]
            < torch.tensor(ns, device=pb.X.device)[None]).to(pb.X.dtype)[None]
    Q = gradient_descent(pb, Q0[:, :, None].repeat(1, 1, len(ns)), mask, lr=lr, steps=steps)
    _, g = pb.objective(Q, mask)
    rg = (g.norm(dim=1) / (pb.lam * Q.norm(dim=1))).cpu().numpy()
    S_, d, R = Q.shape
    Qf = Q.permute(0, 2, 1).reshape(S_ * R, d)
    qs = pb.q_star[:, None, :].expand(S_, R, d).reshape(S_ * R, d)
    te = exact_test_error(Qf, qs, omega=pb.omega, sigma=pb.sigma, A=pb.A, n_nodes=n_nodes)
    return dict(gd_test_error=te.reshape(S_, R), gd_rel_grad=rg)


def decide(runs: Mapping[int, Mapping[str, np.ndarray]], accurate: Any, accurate_err: Any, published: Any,
           *, follow: float = 2.0, separate: float = 4.0, level: float = 0.95) -> dict[str, Any]:
    """The minimisers' test error extrapolated to ``d -> infinity`` against two theories.

    Per ``alpha``: the mean exact test error over the converged runs at each ``d`` and its
    standard error over seeds; three weighted extrapolations in ``1/d``
    (:func:`extrapolations`: a straight line, a line with a ``1/d^2`` term, a line without the
    smallest ``d``) and the distances ``z`` of each value at ``1/d = 0`` from each theory in
    combined standard errors (the accurate theory's quadrature error included; the published
    curve carries none); and the same distances of the mean at the largest ``d`` itself.

    Parameters
    ----------
    runs : ``{d: minimiser_runs(...)}`` with the same alphas (:func:`at_alphas` selects them from a
        stored run).
    accurate, accurate_err, published : (A,) the theories at those alphas (the accurate one with
        its quadrature error).
    follow, separate : the rule of :func:`stumplib.core.verdicts.choose_theory`, used to size the
        seeds that would decide.
    level : the extrapolation's interval coverage.

    Returns
    -------
    dict: ``ds``; ``mean``, ``se``, ``spread`` (standard deviation over seeds), ``n`` (D, A);
    ``limit`` (A Estimates), ``limit_se`` (A,), ``z_accurate``, ``z_published`` (A,): the straight
    line; ``forms``: ``{name: {"limit", "limit_se", "z_accurate", "z_published"}}`` for every
    extrapolation of :data:`EXTRAPOLATIONS` (NaN where too few ``d``); ``dmax`` (the largest ``d``),
    ``dmax_mean``, ``dmax_se``, ``dmax_z_accurate``, ``dmax_z_published`` (A,): the seed mean
    there and its distances from the theories; ``converged_fraction`` (runs made; a stored run
    marks them ``ran``); ``spread_slope`` (log-log slope of the spread in ``d``, NaN with one
    ``d``); ``seeds_to_decide`` (seeds per ``d`` at which the theories would be ``follow +
    separate`` standard errors apart at the best-separated alpha; -1 if unknown).
    """
    from stumplib.core.stats import ols

    ds = sorted(int(d) for d in runs)
    acc, acc_e, pub = (np.asarray(v, dtype=float).ravel() for v in (accurate, accurate_err, published))
    mean, se, sd, n = (np.zeros((len(ds), acc.size)) for _ in range(4))
    for i, d in enumerate(ds):
        te, ok = np.asarray(runs[d]["test_error"]), np.asarray(runs[d]["converged"], dtype=bool)
        for j in range(acc.size):
            v = te[ok[:, j], j]
            n[i, j], mean[i, j] = v.size, v.mean() if v.size else np.nan
            sd[i, j] = v.std(ddof=1) if v.size > 1 else np.nan
    se = sd / np.sqrt(np.maximum(n, 1))
    forms = {}
    for name, (lim, lim_se) in extrapolations(ds, mean, se, level=level).items():
        forms[name] = dict(limit=lim, limit_se=lim_se,
                           z_accurate=(np.array([e.value for e in lim]) - acc) / np.hypot(lim_se, acc_e),
                           z_published=(np.array([e.value for e in lim]) - pub) / lim_se)
    line = forms["line"]
    gap = np.abs(acc - pub) / np.hypot(line["limit_se"], acc_e)
    n_last = np.array([n[n[:, j] > 0, j][-1] if (n[:, j] > 0).any() else np.nan for j in range(acc.size)])
    need_j = n_last * ((follow + separate) / gap) ** 2  # seeds at the largest d each alpha ran
    need = int(np.ceil(np.nanmin(need_j))) if np.any(np.isfinite(need_j)) else -1
    sd_m = sd.mean(1)
    fin = np.isfinite(sd_m) & (sd_m > 0)
    slope = ols(np.log(np.asarray(ds)[fin]), np.log(sd_m[fin]))[0] if fin.sum() > 1 else float("nan")
    made = [np.asarray(runs[d].get("ran", np.ones_like(runs[d]["converged"])), dtype=bool) for d in ds]
    conv = np.concatenate([np.asarray(runs[d]["converged"], dtype=bool)[m] for d, m in zip(ds, made)])
    return dict(ds=np.asarray(ds), mean=mean, se=se, spread=sd, n=n, limit=line["limit"],
                limit_se=line["limit_se"], z_accurate=line["z_accurate"], z_published=line["z_published"],
                forms=forms, dmax=ds[-1], dmax_mean=mean[-1], dmax_se=se[-1],
                dmax_z_accurate=(mean[-1] - acc) / np.hypot(se[-1], acc_e),
                dmax_z_published=(mean[-1] - pub) / se[-1],
                converged_fraction=float(conv.mean()) if conv.size else float("nan"),
                spread_slope=float(slope), seeds_to_decide=need)


def extrapolations(ds: Sequence[int], mean: Any, se: Any, *, level: float = 0.95
                   ) -> dict[str, tuple[list, np.ndarray]]:
    """The seed means extrapolated to ``1/d = 0`` in the three ways of :data:`EXTRAPOLATIONS`:
    a weighted straight line in ``1/d`` through every ``d``; a weighted parabola (a ``1/d^2``
    term added); a straight line without the smallest ``d``
    (:func:`stumplib.core.stats.extrapolate_linear`, standard errors known from the seeds).

    Parameters
    ----------
    ds : Sequence[int], shape (D,)
        The dimensions ``d``, increasing.
    mean, se : array_like, shape (D, A)
        Seed means of the minimiser at each ``d`` (rows) and alpha (columns), and their standard
        errors (NaN where an alpha has no runs at a ``d``).
    level : float
        The intervals' coverage, in (0, 1) (default 0.95).

    Returns
    -------
    ``{name: (limits, limit_se)}``: (A,) :class:`~stumplib.core.stats.Estimate` list and (A,)
    standard errors; NaN where the form has fewer ``d`` than it needs (3 for the parabola, 2
    for the lines).
    """
    from stumplib.core.stats import Estimate, extrapolate_linear

    ds = np.asarray(ds, dtype=float)
    mean, se = np.atleast_2d(np.asarray(mean, dtype=float)), np.atleast_2d(np.asarray(se, dtype=float))
    if mean.shape != se.shape or mean.shape[0] != ds.size:
        raise ValueError(f"mean and se must be (D, A) with D = {ds.size}; got {mean.shape}, {se.shape}")
    out: dict[str, tuple[list, np.ndarray]] = {}
    for name, (degree, drop) in EXTRAPOLATIONS.items():
        lims, errs = [], []
        for j in range(mean.shape[1]):
            ok = np.isfinite(mean[:, j]) & np.isfinite(se[:, j]) & (se[:, j] > 0)
            if drop and ok.any():
                ok[np.flatnonzero(ok)[0]] = False
            if ok.sum() < degree + 1:
                lims.append(Estimate.nan("seeds"))
                errs.append(float("nan"))
                continue
            e, s = extrapolate_linear(1.0 / ds[ok], mean[ok, j], se[ok, j], level=level, degree=degree)
            lims.append(e)
            errs.append(s)
        out[name] = (lims, np.asarray(errs))
    return out


def consistency(here: Mapping[str, Any], stored: Mapping[str, Any]) -> np.ndarray:
    """How far two decisions' straight-line limits lie apart: per alpha, their difference in
    combined standard errors (the page's own run against a stored one, independent seeds).

    Parameters
    ----------
    here, stored : :func:`decide` outputs at the same alphas.

    Returns
    -------
    (A,) ``z = (limit_here - limit_stored) / hypot(se_here, se_stored)``.
    """
    a = np.array([e.value for e in here["limit"]])
    b = np.array([e.value for e in stored["limit"]])
    if a.shape != b.shape:
        raise ValueError(f"the decisions have different alphas: {a.size} and {b.size}")
    return (a - b) / np.hypot(here["limit_se"], stored["limit_se"])


def at_alphas(runs: Mapping[int, Mapping[str, np.ndarray]], alphas: Sequence[float]
              ) -> dict[int, dict[str, np.ndarray]]:
    """A stored run restricted to ``alphas`` (columns in that order), at every ``d`` that ran at
    least one of them; an alpha missing at a ``d`` becomes a column of runs not made (NaN, not
    converged).

    Parameters
    ----------
    runs : ``{d: {key: (S, A_d) array, "alphas": (A_d,), ...}}`` (:func:`read_runs`).
    alphas : the sample ratios wanted.

    Returns
    -------
    ``{d: {key: (S, len(alphas)) array, ...}}``, the per-``d`` keys ``alphas``, ``seeds``, ``d``,
    ``seconds`` kept (``alphas`` replaced by the selection).
    """
    out = {}
    want = np.asarray(alphas, dtype=float)
    for d, r in runs.items():
        have = np.asarray(r["alphas"], dtype=float)
        idx = [int(np.flatnonzero(np.isclose(have, a, rtol=0, atol=1e-9))[0])
               if np.isclose(have, a, rtol=0, atol=1e-9).any() else -1 for a in want]
        if all(i < 0 for i in idx):
            continue
        sel: dict[str, np.ndarray] = {}
        for k, v in r.items():
            v = np.asarray(v)
            if v.ndim == 2 and v.shape[1] == have.size:
                fill = False if v.dtype == bool else (-1 if v.dtype.kind == "i" else np.nan)
                col = np.full((v.shape[0], want.size), fill, dtype=v.dtype)
                for j, i in enumerate(idx):
                    if i >= 0:
                        col[:, j] = v[:, i]
                sel[k] = col
            else:
                sel[k] = v
        sel["alphas"] = want.copy()
        out[int(d)] = sel
    return out


def study(alphas: Sequence[float], ds: Sequence[int], seeds: int, *, gd_steps: int = 5000,
          gd_seeds: int = 4, gd_max_d: int = 1000, cache: bool = True, **kw: Any) -> dict[int, dict]:
    """:func:`minimiser_runs` at every ``d`` of ``ds`` (the same seeds), kept with
    :func:`stumplib.core.cache.cached` (no log) when ``cache``.

    Parameters
    ----------
    alphas, seeds : as in :func:`minimiser_runs`.
    ds : dimensions.
    gd_steps, gd_seeds, gd_max_d : the paper's plain GD on the first ``gd_seeds`` seeds at
        ``d <= gd_max_d``.
    cache : keep it.
    **kw : passed to :func:`minimiser_runs` (``omega``, ``lam``, ``seed``, ``device``, ...).

    Returns
    -------
    ``{d: minimiser_runs output}``. The cache keeps ``{"ds": [...], "runs": [one
    :func:`minimiser_runs` output per d]}`` and :func:`stumplib.core.cache.cached` flattens it.
    """
    def compute() -> dict[str, Any]:
        return {"ds": [int(d) for d in ds],
                "runs": [minimiser_runs(alphas, d, seeds, gd_steps=gd_steps if d <= gd_max_d else 0,
                                        gd_seeds=min(gd_seeds, seeds), **kw) for d in ds]}

    if not cache:
        return _by_d(compute())
    from stumplib.core.cache import cached

    cfg = dict(alphas=list(alphas), ds=list(ds), seeds=seeds, gd_steps=gd_steps, gd_seeds=gd_seeds,
               gd_max_d=gd_max_d, **{k: (str(v) if k == "device" else v) for k, v in kw.items()})
    return _by_d(cached("ch6_minimisers", cfg, compute, verbose=False))


def _by_d(res: Mapping[str, Any]) -> dict[int, dict[str, np.ndarray]]:
    """``{d: {key: array}}`` from :func:`study`'s cached ``{"ds": [...], "runs": [...]}``."""
    return {int(d): {k: np.asarray(v) for k, v in r.items()} for d, r in zip(res["ds"], res["runs"])}


def read_runs(flat: Mapping[str, Any]) -> dict[int, dict[str, np.ndarray]]:
    """``{d: {key: array}}`` (as :func:`study` returns) from the flat layout ``d<d>_<key>`` of
    ``scripts/phase_minimisers.py``'s output file.

    Parameters
    ----------
    flat : the file's arrays (``np.load``): ``ds`` and ``d<d>_<key>`` for every ``d`` of ``ds``.

    Returns
    -------
    dict: ``{d: {key: array}}``.
    """
    ds = [int(d) for d in np.atleast_1d(flat["ds"])]
    return {d: {k[len(f"d{d}_"):]: np.asarray(flat[k]) for k in flat if k.startswith(f"d{d}_")} for d in ds}


def run_parameters(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The model and run parameters a stored run recorded (``{}`` for a file that recorded none,
    as the first deciding run did).

    Parameters
    ----------
    flat : the file's arrays (``np.load``).

    Returns
    -------
    dict: ``omega``, ``sigma``, ``lam`` (floats), ``A`` (2, 2), ``seed``, ``gtol``, ``n_alpha``,
    ``code_version``, ``alphas``, where recorded.
    """
    out: dict[str, Any] = {}
    for k in ("omega", "sigma", "lam", "seed", "gtol", "n_alpha"):
        if k in flat:
            out[k] = float(flat[k])
    if "A" in flat:
        out["A"] = np.asarray(flat["A"], dtype=float).reshape(2, 2)
    for k in ("code_version", "init"):
        if k in flat:
            out[k] = str(flat[k])
    if "alphas" in flat:
        out["alphas"] = np.asarray(flat["alphas"], dtype=float)
    return out


def parameter_mismatches(recorded: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """The model parameters (:data:`RUN_PARAMETERS`) on which a stored run differs from the page.

    Parameters
    ----------
    recorded : Mapping[str, Any]
        :func:`run_parameters` of the stored file.
    expected : Mapping[str, Any]
        The page's ``omega``, ``sigma``, ``lam``, ``A`` (those given are compared, with relative
        tolerance 1e-9; ``A`` as an array, a shape difference counts as a mismatch).

    Returns
    -------
    One phrase per difference (``"lam = 0.02 (this page: 0.01)"``), or ``"parameters not
    recorded"``; empty when the run matches.
    """
    if not any(k in recorded for k in RUN_PARAMETERS):
        return ["parameters not recorded"]
    out = []
    for k in RUN_PARAMETERS:
        if k not in expected:
            continue
        want = np.asarray(expected[k], dtype=float)
        if k not in recorded:
            out.append(f"{k} not recorded")
            continue
        got = np.asarray(recorded[k], dtype=float)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=0.0):
            fmt = (lambda v: str(np.round(v, 6).tolist())) if k == "A" else (lambda v: f"{float(v):g}")
            out.append(f"{k} = {fmt(got)} (this page: {fmt(want)})")
    return out


def deciding_run(path: str | Path | None = None, *, expect: Mapping[str, Any] | None = None,
                 strict: bool = True) -> tuple[dict[int, dict], dict[str, Any]] | None:
    """The committed deciding run (:data:`DECIDING_RUN`, or ``path``), read and checked against
    the page's model.

    Parameters
    ----------
    path : the file written by ``scripts/phase_minimisers.py`` (``None``: :data:`DECIDING_RUN`).
    expect : the page's ``omega``, ``sigma``, ``lam``, ``A``; ``None``: no check.
    strict : refuse (``ValueError``) a file whose parameters differ from ``expect`` or were not
        recorded; ``False``: return it with the differences listed in ``meta["mismatch"]``.

    Returns
    -------
    ``(runs, meta)``: ``runs`` as :func:`study` returns them (:func:`read_runs`), and ``meta`` the
    run's ``command``, ``commit``, ``machine`` (strings: the last process's), ``seconds`` (float;
    for a merged run the compute time of all its processes together), ``params``
    (:func:`run_parameters`), ``sources`` (one line per process that contributed runs) and
    ``mismatch`` (:func:`parameter_mismatches`, empty without ``expect``); ``None`` when the file
    does not exist.
    """
    p = Path(DECIDING_RUN if path is None else path)
    if not p.is_file():
        return None
    with np.load(p) as flat:
        meta: dict[str, Any] = {k: str(flat[k]) for k in ("command", "commit", "machine")}
        meta["seconds"] = float(flat["seconds"])
        if "sources" in flat:  # several processes: their compute time at every d, together
            meta["seconds"] = float(sum(float(flat[f"d{int(d)}_seconds"]) for d in np.atleast_1d(flat["ds"])))
        meta["params"] = run_parameters(flat)
        meta["sources"] = [str(x) for x in np.atleast_1d(flat["sources"])] if "sources" in flat else \
            [meta["command"]]
        runs = read_runs(flat)
    meta["mismatch"] = parameter_mismatches(meta["params"], expect) if expect is not None else []
    if strict and meta["mismatch"]:
        raise ValueError(f"{p.name} does not match this page's model: {'; '.join(meta['mismatch'])}. "
                         "Run scripts/phase_minimisers.py at these parameters, or use the page's own run")
    return runs, meta


def gd_gap(runs: Mapping[int, Mapping[str, np.ndarray]]) -> dict[str, Any]:
    """How far the paper's plain GD stops from the minimiser: per ``d`` (with GD) and alpha, the
    mean relative difference of the test errors over the seeds that ran both, and its largest
    relative gradient.

    A seed whose GD or minimiser test error is not finite at some alpha is left out at that ``d``
    and counted (``n_dropped``, ``dropped``).

    Parameters
    ----------
    runs : mapping
        ``{d: {key: array}}`` as :func:`study` returns them; the ``d`` holding ``gd_test_error``
        (seeds, alphas) and ``gd_rel_grad`` are used, with ``test_error`` (seeds, alphas).

    Returns
    -------
    dict
        ``ds`` (D,); ``rel_diff`` (D, A) and ``rel_diff_se`` (D, A): the mean relative difference
        and its standard error; ``gd_rel_grad_max`` (D,); ``n_seeds`` (D,): seeds used;
        ``n_dropped`` (D,): seeds left out; ``dropped`` (str): why; ``max_abs``, ``mean``,
        ``rel_grad_max`` (floats over all).
    """
    ds = [d for d in sorted(runs) if "gd_test_error" in runs[d]]
    diff, se, gmax, used, lost = [], [], [], [], []
    for d in ds:
        r = runs[d]
        x = r["gd_test_error"] / r["test_error"] - 1
        ok = np.isfinite(x).all(1)
        used.append(int(ok.sum()))
        lost.append(int((~ok).sum()))
        diff.append(x[ok].mean(0) if ok.any() else np.full(x.shape[1], np.nan))
        se.append(x[ok].std(0, ddof=1) / np.sqrt(max(1, ok.sum())) if ok.sum() > 1 else np.full(x.shape[1], np.nan))
        gmax.append(float(np.nanmax(r["gd_rel_grad"])))
    rd = np.asarray(diff, dtype=float)
    fin = rd[np.isfinite(rd)]
    why = ", ".join(f"{k} of {k + u} seeds at d = {d}" for d, k, u in zip(ds, lost, used) if k)
    return dict(ds=np.asarray(ds), rel_diff=rd, rel_diff_se=np.asarray(se), gd_rel_grad_max=np.asarray(gmax),
                n_seeds=np.asarray(used, dtype=int), n_dropped=np.asarray(lost, dtype=int),
                dropped=f"{why} without a finite test error (GD or minimiser)" if why else "",
                max_abs=float(np.abs(fin).max()) if fin.size else float("nan"),
                mean=float(fin.mean()) if fin.size else float("nan"),
                rel_grad_max=float(np.nanmax(gmax)) if gmax else float("nan"))


def semantic_start(pb: Problem, theta: float, q: float, m0: float, *, seed: int = 0) -> torch.Tensor:
    """Starts with the semantic fixed point's overlaps and a positional component ``m = m0``.

    The rest of ``|Q|`` lies along a random direction orthogonal to ``Q*`` and ``p_1``.

    Parameters
    ----------
    pb : Problem
        The problem.
    theta, q : float
        The fixed point's overlaps, in the theory's normalisation.
    m0 : float
        The positional overlap of the start.
    seed : int
        Seed of the random direction.

    Returns
    -------
    torch.Tensor, shape ``(S, d)``
    """
    S_, d = pb.q_star.shape
    qs = pb.q_star
    p1 = positional_encodings(d, device=qs.device, dtype=qs.dtype)[0]
    G = torch.stack([torch.stack([(qs * qs).sum(1), qs @ p1], -1),
                     torch.stack([qs @ p1, torch.ones_like(qs[:, 0])], -1)], -2)  # Gram of (Q*, p_1)
    rhs = torch.stack([torch.full_like(qs[:, 0], theta / pb.sigma ** 2 * d),
                       torch.full_like(qs[:, 0], m0 * math.sqrt(d))], -1)
    ac = torch.linalg.solve(G, rhs)  # Q = a Q* + c p_1 with Q* . Q = theta_emp d, p_1 . Q = m0 sqrt(d)
    Q = ac[:, :1] * qs + ac[:, 1:] * p1
    g = torch.Generator(device=qs.device).manual_seed(seed)
    u = torch.randn(S_, d, generator=g, dtype=qs.dtype, device=qs.device)
    B, _ = torch.linalg.qr(torch.stack([qs, p1.expand(S_, d)], -1))  # (S, d, 2) orthonormal
    u = u - (B @ (B.transpose(-1, -2) @ u[..., None]))[..., 0]
    u = u / u.norm(dim=1, keepdim=True)
    rest = (q * d / pb.sigma ** 2 - (Q * Q).sum(1, keepdim=True)).clamp_min(0).sqrt()
    return Q + rest * u


def classify_dynamics(m0: float, m_final: Mapping[int, Any], *, factor: float = 2.0) -> str:
    """What the positional overlap did from ``m0``: ``"decays"`` when at the largest ``d`` the median
    ``|m|`` is below ``m0``; ``"grows"`` when it exceeds ``factor * m0`` there and does not fall
    with ``d``; ``"unclear"`` otherwise.

    Parameters
    ----------
    m0 : the starting positional overlap (> 0).
    m_final : ``{d: (seeds,) final m}`` (an empty array: no run to judge at that ``d``).
    factor : growth that counts as ``"grows"``.

    Returns
    -------
    str
        ``"decays"``, ``"grows"`` or ``"unclear"``.
    """
    ds = sorted(m_final)
    med = [float(np.median(np.abs(np.asarray(m_final[d])))) if np.size(m_final[d]) else math.nan
           for d in ds]
    if med[-1] < m0:
        return "decays"
    if med[-1] > factor * m0 and (len(med) == 1 or med[-1] >= med[0]):
        return "grows"
    return "unclear"


def stability_by_dynamics(points: Sequence[Mapping[str, float]], ds: Sequence[int], seeds: int, *,
                          m0_sqrt_d: float = 3.0, sigma: float = 0.5, lam: float = 0.01,
                          A: Any = ((0.6, 0.4), (0.4, 0.6)), seed: int = 0, cache: bool = True,
                          device: Any = "cpu") -> list[dict[str, Any]]:
    """The solver's stability flag along ``m`` checked by minimisation: at each semantic fixed point
    (``omega, alpha, theta, q, derivative``), start at its overlaps with ``m = m0_sqrt_d / sqrt(d)``
    and minimise (:func:`minimise`) at each ``d``.

    Parameters
    ----------
    points : the fixed points (:func:`stumplib.phase.transition.lowest_points`).
    ds : dimensions.
    seeds : seeds per point and ``d``.
    m0_sqrt_d : the starting ``m sqrt(d)``.
    sigma, lam, A : the model.
    seed : the problems' seed.
    cache : keep the final ``m sqrt(d)`` and the converged flags with
        :func:`stumplib.core.cache.cached` (no log), as a list over points of lists over ``ds``.
    device : torch device.

    Returns
    -------
    rows: ``omega, alpha, ∂F_m/∂m, solver`` (``"unstable"`` when the derivative exceeds +1, else
    ``"stable"``), ``median |m| sqrt(d)`` at each ``d``, ``dynamics`` (:func:`classify_dynamics`
    on ``m sqrt(d)``), ``agree`` and ``not converged``: the runs (over all ``d``) that did not
    reach the relative gradient ``gtol`` of :func:`minimise`, left out of the medians (NaN where
    none converged, and then ``dynamics`` is ``"unclear"``).
    """
    def final_m(p: Mapping[str, float], d: int) -> dict[str, np.ndarray]:
        n = int(round(p["alpha"] * d))
        pb = make_problem(d, list(range(seeds)), n, seed=seed, omega=p["omega"], sigma=sigma,
                          lam=lam, A=A, device=device)
        Q0 = semantic_start(pb, p["theta"], p["q"], m0_sqrt_d / math.sqrt(d), seed=seed)
        res = [minimise(pb, s, n, Q0[s]) for s in range(seeds)]
        Q = torch.stack([r["Q"] for r in res])
        return {"m": summaries(Q, pb.q_star, sigma)["m"] * math.sqrt(d),
                "converged": np.array([r["converged"] for r in res])}

    def compute() -> list[list[dict[str, np.ndarray]]]:  # [point][d] -> final m sqrt(d), converged
        return [[final_m(p, d) for d in ds] for p in points]

    if cache:
        from stumplib.core.cache import cached

        cfg = dict(points=[dict(p) for p in points], ds=list(ds), seeds=seeds, m0=m0_sqrt_d, sigma=sigma,
                   lam=lam, A=np.asarray(A).tolist(), seed=seed)
        res = cached("ch6_stability", cfg, compute, verbose=False)
    else:
        res = compute()
    rows = []
    for i, p in enumerate(points):
        ok = {d: np.asarray(r["converged"], dtype=bool) for d, r in zip(ds, res[i])}
        mf = {d: np.asarray(r["m"])[ok[d]] for d, r in zip(ds, res[i])}  # converged runs only
        dyn = classify_dynamics(m0_sqrt_d, mf)
        solver = "unstable" if p["derivative"] > 1 else "stable"
        row = {"omega": p["omega"], "alpha": p["alpha"], "∂F_m/∂m": p["derivative"], "solver": solver}
        row.update({f"|m| sqrt(d), d = {d}": float(np.median(np.abs(mf[d]))) if mf[d].size else float("nan")
                    for d in ds})
        row.update(dynamics=dyn, agree=(dyn == "decays") == (solver == "stable") if dyn != "unclear" else None)
        row["not converged"] = int(sum((~ok[d]).sum() for d in ds))
        rows.append(row)
    return rows
