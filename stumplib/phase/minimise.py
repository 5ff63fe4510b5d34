"""Converged minimisers of the attention student's regularised empirical risk.

The theory of Cui et al. describes *minimisers* of

    ``L(Q) = sum_mu |y_hat_mu - y_mu|^2 / (2 d) + (lambda / 2) |Q|^2``,

not a fixed number of gradient steps. :func:`minimise` runs L-BFGS (scipy's L-BFGS-B without
bounds: a Moré-Thuente line search that satisfies the strong Wolfe conditions) in float64 on the
full-batch objective and gradient of :meth:`.problem.Problem.objective`, until the **relative
gradient** ``|grad L| / (lambda |Q|)`` (the data term's gradient balances the ridge's ``lambda Q``
at a minimiser, so this ratio is scale-free) is at most ``gtol``; a run that stops above it is
reported as not converged, never averaged in silently. Where the line search stalls on the
objective's rounding, Newton-CG steps (exact Hessian-vector products) finish.

:func:`minimiser_runs` gives the minimisers of every (seed, alpha) at one ``d`` with their exact
test error (:func:`.exact_error.exact_test_error`) and, optionally, the paper's plain gradient
descent (:func:`gradient_descent`) from the same start; :func:`study` does so at every ``d``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from stumplib.core.device import make_generator
from stumplib.core.validation import check_int, check_real
from stumplib.phase.exact_error import exact_test_error
from stumplib.phase.problem import Problem, initial_points, make_problem, summaries
from stumplib.phase.setting import PhaseModel, as_model, check_model


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
    pb : Problem
        The problem (:func:`.problem.make_problem`, or a problem with a constraint such as
        :class:`.held_theta.HeldTheta`).
    s : int
        Seed index into ``pb``.
    n : int
        Samples used (``<= pb.n``).
    Q0 : torch.Tensor, shape ``(d,)``
        The start.
    gtol : float
        Relative-gradient tolerance (1e-14 to 1e-2).
    max_iter : int
        L-BFGS iteration cap.

    Returns
    -------
    dict
        ``Q`` (d,) tensor, ``loss`` (objective / d), ``rel_grad``, ``n_iter`` (L-BFGS),
        ``n_newton`` (Newton-CG steps that finish where the line search stalls on rounding),
        ``converged`` (bool: ``rel_grad <= gtol``).
    """
    from scipy.optimize import minimize

    gtol = check_real("gtol", gtol, low=1e-14, high=1e-2)
    n = check_int("n", n, minimum=1, maximum=pb.n)
    if pb.lam <= 0:
        raise ValueError("minimise needs lam > 0 (the relative gradient is measured against "
                         "lambda |Q|)")
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
    # the objective's rounding stalls the line search: Newton-CG (exact Hessian products) finishes
    while rel(x, g) > gtol and n_newton < min(8, max_iter):
        x = x + _newton_step(pb, x, g, mask, sl)
        L, g = fg(x)
        n_newton += 1
    rg = rel(x, g)
    return dict(Q=torch.as_tensor(x, dtype=pb.X.dtype, device=pb.X.device), loss=L / pb.d,
                rel_grad=rg, n_iter=n_iter, n_newton=n_newton, converged=bool(rg <= gtol))


def _newton_step(pb: Problem, x: np.ndarray, g: np.ndarray, mask: torch.Tensor,
                 sl: slice) -> np.ndarray:
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


@dataclass(frozen=True)
class MinimiserOptions:
    """How :func:`minimiser_runs` minimises, runs plain GD and scores: one frozen object, checked
    where it is built.

    Attributes
    ----------
    gtol : float
        Relative-gradient tolerance of :func:`minimise` (> 0; default 1e-8).
    max_iter : int
        L-BFGS iteration cap (>= 1; default 20000; a run that stops there is not converged).
    gd_steps : int
        Plain GD's steps from the same start (>= 0; default 0: no GD).
    gd_seeds : int or None
        GD on the first ``gd_seeds`` seeds only (``None``, default: all; NaN for the others).
    lr : float
        Plain GD's step size (> 0; default 0.15, the authors').
    n_nodes : int
        Rule of :func:`.exact_error.exact_test_error` (default 16).
    n_samples : int or None
        Samples drawn per seed (``None``, default: ``max(round(alpha d))``); the draw of a seed
        depends on it, so runs that must share a seed's data (a later alpha added to a stored run)
        draw the same number.

    Examples
    --------
    >>> MinimiserOptions(gd_steps=500).gtol
    1e-08
    """

    gtol: float = 1e-8
    max_iter: int = 20000
    gd_steps: int = 0
    gd_seeds: int | None = None
    lr: float = 0.15
    n_nodes: int = 16
    n_samples: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "gd_steps", check_int("gd_steps", self.gd_steps, minimum=0))


#: :func:`minimiser_runs`' default options
DEFAULT_MINIMISER_OPTIONS = MinimiserOptions()
#: the positional share of a study that names none (the paper's main point)
STUDY_OMEGA = 0.3


def minimiser_keywords(flat: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`minimiser_runs`' keyword arguments from a flat mapping (a study's settings): the
    model's ``omega, sigma, lam, A`` built into ``model`` (``omega`` by default
    :data:`STUDY_OMEGA`), the fields of :class:`MinimiserOptions` into ``options``, the others
    passed on.

    Parameters
    ----------
    flat : mapping of str to object
        Keyword arguments.

    Returns
    -------
    dict
        The other keywords, ``model`` and ``options``.
    """
    names = {f.name for f in fields(MinimiserOptions)}
    model_keys = ("omega", "sigma", "lam", "A")
    out = {k: v for k, v in flat.items() if k not in names and k not in model_keys}
    out["model"] = check_model(**{"omega": STUDY_OMEGA,
                                  **{k: flat[k] for k in model_keys if k in flat}})
    out["options"] = MinimiserOptions(**{k: v for k, v in flat.items() if k in names})
    return out


def minimiser_runs(alphas: Sequence[float], d: int, seeds: Sequence[int] | int, *,
                   model: PhaseModel, init: str = "semantic", seed: int = 0, device: Any = "cpu",
                   options: MinimiserOptions = DEFAULT_MINIMISER_OPTIONS) -> dict[str, np.ndarray]:
    """Converged minimisers (and, with ``gd_steps``, the paper's plain GD from the same start) for
    every (seed, alpha) at one ``d``.

    Parameters
    ----------
    alphas : sequence of float, shape ``(A,)``
        Sample ratios.
    d : int
        Dimension.
    seeds : int or sequence of int
        A count or a list of seed offsets (``S`` seeds).
    model : PhaseModel
        The model (:func:`~stumplib.phase.check_model`): positional weight, token noise, ridge and
        the teacher's attention matrix (the branch is not used).
    init : str
        The start (:func:`.problem.initial_points`).
    seed : int
        The chapter's seed.
    device : str or torch.device
        Where to minimise.
    options : MinimiserOptions
        The minimiser's tolerance and cap, plain GD's steps, seeds and step size, the test error's
        rule and the samples drawn (default :class:`MinimiserOptions`).

    Returns
    -------
    dict
        (S, A) numpy arrays ``test_error`` (exact), ``m``, ``theta_emp``, ``q_emp``, ``train_loss``
        (objective / d), ``rel_grad``, ``n_iter``, ``n_newton``, ``converged``; with
        ``gd_steps``, ``gd_test_error``, ``gd_rel_grad``; and ``alphas``, ``d``, ``seeds``.
    """
    seeds = (list(range(check_int("seeds", seeds, minimum=1))) if isinstance(seeds, int)
             else [check_int(f"seeds[{i}]", s, minimum=0) for i, s in enumerate(seeds)])
    if not seeds:
        raise ValueError("seeds must be a count >= 1 or a non-empty sequence of seed offsets; "
                         "got an empty sequence")
    d = check_int("d", d, minimum=4)
    alphas = [check_real(f"alphas[{i}]", a, low=0.0, low_open=True, high=100.0)
              for i, a in enumerate(alphas)]
    if not alphas:
        raise ValueError("alphas must hold at least one sample ratio; got none")
    if not isinstance(options, MinimiserOptions):
        raise ValueError(f"options must be a MinimiserOptions; got {type(options).__name__}")
    model = as_model(model)
    sigma = model.sigma
    gtol, max_iter, gd_steps, gd_seeds = (options.gtol, options.max_iter, options.gd_steps,
                                          options.gd_seeds)
    lr, n_nodes, n_samples = options.lr, options.n_nodes, options.n_samples
    ns = [int(round(a * d)) for a in alphas]
    if min(ns) < 1:
        raise ValueError(f"alphas: every alpha must give n = round(alpha d) >= 1 at d={d}")
    n_draw = max(ns) if n_samples is None else check_int("n_samples", n_samples, minimum=max(ns))
    pb = make_problem(d, seeds, n_draw, model=model, seed=seed, device=device)
    Q0 = initial_points(pb, init, generator=make_generator(seed * 1000 + 999, torch.device(device)))
    keys = ("test_error", "m", "theta_emp", "q_emp", "train_loss", "rel_grad", "n_iter", "n_newton",
            "converged")
    out = {k: np.zeros((len(seeds), len(alphas))) for k in keys}
    for j, n in enumerate(ns):
        runs = [minimise(pb, s, n, Q0[s], gtol=gtol, max_iter=max_iter)
                for s in range(len(seeds))]
        Q = torch.stack([r["Q"] for r in runs])
        out["test_error"][:, j] = exact_test_error(Q, pb.q_star, model=model, n_nodes=n_nodes)
        for k, v in summaries(Q, pb.q_star, sigma).items():
            out[k][:, j] = v
        for k in ("loss", "rel_grad", "n_iter", "n_newton", "converged"):
            out["train_loss" if k == "loss" else k][:, j] = [r[k] for r in runs]
    if gd_steps:
        k = (len(seeds) if gd_seeds is None
             else check_int("gd_seeds", gd_seeds, minimum=1, maximum=len(seeds)))
        gd = _gd_runs(pb.first(k), Q0[:k], ns, lr=lr, steps=gd_steps, n_nodes=n_nodes)
        for key, v in gd.items():
            out[key] = np.full((len(seeds), len(alphas)), np.nan)
            out[key][:k] = v
    out["converged"] = out["converged"].astype(bool)
    return dict(out, alphas=np.asarray(alphas), d=np.asarray(d), seeds=np.asarray(seeds))


def _gd_runs(pb: Problem, Q0: torch.Tensor, ns: list[int], *, lr: float, steps: int,
             n_nodes: int) -> dict[str, np.ndarray]:
    """Plain GD from ``Q0`` for every (seed, alpha) at once; exact test error and relative
    gradient."""
    mask = (torch.arange(pb.n, device=pb.X.device)[:, None]
            < torch.tensor(ns, device=pb.X.device)[None]).to(pb.X.dtype)[None]
    Q = gradient_descent(pb, Q0[:, :, None].repeat(1, 1, len(ns)), mask, lr=lr, steps=steps)
    _, g = pb.objective(Q, mask)
    rg = (g.norm(dim=1) / (pb.lam * Q.norm(dim=1))).cpu().numpy()
    S_, d, R = Q.shape
    Qf = Q.permute(0, 2, 1).reshape(S_ * R, d)
    qs = pb.q_star[:, None, :].expand(S_, R, d).reshape(S_ * R, d)
    te = exact_test_error(Qf, qs, n_nodes=n_nodes,
                          model=check_model(omega=pb.omega, sigma=pb.sigma, A=pb.A))
    return dict(gd_test_error=te.reshape(S_, R), gd_rel_grad=rg)


def study(alphas: Sequence[float], ds: Sequence[int], seeds: int, *, gd_steps: int = 5000,
          gd_seeds: int = 4, gd_max_d: int = 1000, cache: bool = True,
          **kw: Any) -> dict[int, dict]:
    """:func:`minimiser_runs` at every ``d`` of ``ds`` (the same seeds), kept with
    :func:`stumplib.core.memo.remember` (no log) when ``cache``.

    Parameters
    ----------
    alphas : sequence of float
        Sample ratios, as in :func:`minimiser_runs`.
    ds : sequence of int
        Dimensions.
    seeds : int
        Seeds per ``d``, as in :func:`minimiser_runs`.
    gd_steps, gd_seeds, gd_max_d : int
        The paper's plain GD (``gd_steps`` steps) on the first ``gd_seeds`` seeds at
        ``d <= gd_max_d``.
    cache : bool
        Keep the result.
    **kw
        Passed to :func:`minimiser_runs` through :func:`minimiser_keywords` (``omega``, ``lam``,
        ``seed``, ``device``, ``max_iter``, ...).

    Returns
    -------
    dict
        ``{d: minimiser_runs output}``. The cache keeps ``{"ds": [...], "runs": [one
        :func:`minimiser_runs` output per d]}`` and :func:`stumplib.core.memo.remember` flattens
        it.
    """
    ds = [check_int(f"ds[{i}]", d, minimum=4) for i, d in enumerate(ds)]
    if not ds or any(b <= a for a, b in zip(ds, ds[1:])):
        raise ValueError(f"ds must be a non-empty increasing sequence of dimensions; got {ds} "
                         "(the result is keyed by d in this order)")
    al = [check_real(f"alphas[{i}]", a, low=0.0, low_open=True, high=100.0)
          for i, a in enumerate(alphas)]
    if not al or len(set(al)) != len(al):
        raise ValueError(f"alphas must be non-empty and distinct; got {list(alphas)}")

    def compute() -> dict[str, Any]:
        return {"ds": [int(d) for d in ds],
                "runs": [minimiser_runs(alphas, d, seeds, **minimiser_keywords(dict(
                    kw, gd_steps=gd_steps if d <= gd_max_d else 0, gd_seeds=min(gd_seeds, seeds))))
                         for d in ds]}

    if not cache:
        return _by_d(compute())
    from stumplib.core.memo import remember

    cfg = dict(alphas=list(alphas), ds=list(ds), seeds=seeds, gd_steps=gd_steps, gd_seeds=gd_seeds,
               gd_max_d=gd_max_d, **{k: (str(v) if k == "device" else v) for k, v in kw.items()})
    return _by_d(remember("minimiser_study", cfg, compute))


def _by_d(res: Mapping[str, Any]) -> dict[int, dict[str, np.ndarray]]:
    """``{d: {key: array}}`` from :func:`study`'s cached ``{"ds": [...], "runs": [...]}``."""
    return {int(d): {k: np.asarray(v) for k, v in r.items()}
            for d, r in zip(res["ds"], res["runs"])}
