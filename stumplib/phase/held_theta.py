"""The landscape along theta at finite ``d``: the minimiser of the regularised empirical risk with
the semantic overlap ``theta = sigma^2 Q*.Q / d`` held.

The constraint ``Q*.Q = theta d / sigma^2`` is a plane in ``Q``; :class:`HeldTheta` projects the
argument onto it and the gradient onto its directions, so that L-BFGS (:func:`.minimise.minimise`)
stays on it (:func:`constrained_minimise`). :func:`landscape` follows the constrained minimiser per
seed over a window of ``theta``, with the unconstrained minimiser from ``Q = Q*`` and the lowest
minimiser found.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.validation import check_int, check_real
from stumplib.phase.exact_error import exact_test_error
from stumplib.phase.minimise import minimise
from stumplib.phase.problem import Problem, make_problem, summaries

__all__ = ["HeldTheta", "hold_theta", "constrained_minimise", "landscape"]


@dataclass
class HeldTheta(Problem):
    """A :class:`.problem.Problem` whose objective holds ``Q* . Q = target`` (per seed): the
    argument is projected onto the plane and the gradient onto its directions, so that a descent
    from a point on the plane stays on it and stops at the constrained minimiser.

    Attributes
    ----------
    target : torch.Tensor, shape ``(S,)``
        The held ``Q* . Q`` of every seed (``theta d / sigma^2``); the other attributes are
        :class:`.problem.Problem`'s.
    """

    target: torch.Tensor

    def objective(self, Q: torch.Tensor, mask: torch.Tensor, sl: slice = slice(None)):
        """Objective (S', R) and projected gradient (S', d, R) on the plane of seeds ``sl``.

        Parameters
        ----------
        Q : torch.Tensor, shape ``(S', d, R)``
            Candidate weights of the seeds ``sl`` (``R`` per seed); projected onto the plane
            ``Q* . Q = target`` before the objective is evaluated.
        mask : torch.Tensor, shape ``(1, n, R)``
            The samples each run uses (1 or 0), as in :meth:`.problem.Problem.objective`.
        sl : slice, optional
            The seeds evaluated (default: all).

        Returns
        -------
        L : torch.Tensor, shape ``(S', R)``
            The objective at the projected point.
        g : torch.Tensor, shape ``(S', d, R)``
            Its gradient with the component along ``Q*`` removed.
        """
        qs = self.q_star[sl][:, :, None]
        nrm = (qs * qs).sum(1, keepdim=True)
        Qp = Q + (self.target[sl][:, None, None] - (qs * Q).sum(1, keepdim=True)) / nrm * qs
        L, g = Problem.objective(self, Qp, mask, sl)
        return L, g - (qs * g).sum(1, keepdim=True) / nrm * qs


def hold_theta(pb: Problem, theta: float) -> HeldTheta:
    """The problem ``pb`` with ``theta = sigma^2 Q* . Q / d`` held at ``theta`` for every seed.

    Parameters
    ----------
    pb : Problem
        The problem (:func:`.problem.make_problem`).
    theta : float
        The held overlap in ``(0, sigma^2]`` (theory normalisation); the target is
        ``theta d / sigma^2`` for every seed.

    Returns
    -------
    HeldTheta
        The problem with the constraint.
    """
    theta = check_real("theta", theta, low=0.0, low_open=True, high=pb.sigma ** 2)
    target = torch.full((pb.q_star.shape[0],), theta * pb.d / pb.sigma ** 2, dtype=pb.X.dtype,
                        device=pb.X.device)
    return HeldTheta(**{f.name: getattr(pb, f.name) for f in fields(Problem)}, target=target)


def constrained_minimise(pb: Problem, s: int, n: int, theta: float, Q0: torch.Tensor, *,
                         gtol: float = 1e-8, max_iter: int = 20000) -> dict[str, Any]:
    """The minimiser of seed ``s``'s regularised empirical risk with ``theta`` held.

    ``Q0`` is projected onto the plane ``Q* . Q = theta d / sigma^2`` and
    :func:`.minimise.minimise` runs on :func:`hold_theta`'s objective (L-BFGS, Newton-CG finish);
    the relative gradient is that of the projected gradient.

    Parameters
    ----------
    pb : Problem
        The problem.
    s : int
        Seed index into ``pb``.
    n : int
        Number of samples used.
    theta : float
        The held overlap in ``(0, sigma^2]`` (theory normalisation).
    Q0 : torch.Tensor, shape ``(d,)``
        Start (e.g. the unconstrained minimiser), projected onto the plane first.
    gtol : float, optional
        Relative-gradient tolerance (default ``1e-8``), as in :func:`.minimise.minimise`.
    max_iter : int, optional
        Iterations allowed (default 20000), as in :func:`.minimise.minimise`.

    Returns
    -------
    dict
        :func:`.minimise.minimise`'s dict (``Q`` on the plane, ``loss`` = objective / d, ...).
    """
    hp = hold_theta(pb, theta)
    qs = pb.q_star[s]
    Q0 = Q0 + (hp.target[s] - qs @ Q0) / (qs @ qs) * qs
    return minimise(hp, s, n, Q0, gtol=gtol, max_iter=max_iter)


def landscape(alpha: float, d: int, seeds: Sequence[int], thetas: Sequence[float], *,
              omega: float = 0.3, sigma: float = 0.5, lam: float = 0.01,
              A: Any = ((0.6, 0.4), (0.4, 0.6)), seed: int = 0, gtol: float = 1e-8,
              device: Any = "cpu", progress: bool = False) -> dict[str, np.ndarray]:
    """Per seed: the unconstrained minimiser from ``Q = Q*`` (the deciding run's start), the
    constrained minimisers along the held ``thetas`` and the lowest minimiser found.

    The empirical risk can have several minima near the semantic one (at finite ``d`` they differ
    mainly in the sign of the small positional overlap ``m``). The constrained minimiser at each
    ``theta`` is therefore solved twice, by continuation up the grid and down it (both sweeps
    start from the projection of the minimiser from ``Q*``), and the lower is kept; the lowest
    point of the curve, released (minimised without the constraint), gives the ``best`` minimiser.

    Parameters
    ----------
    alpha : float
        Sample ratio ``n / d``, in ``(0, 100]``; ``n = round(alpha d)``.
    d : int
        Dimension (``>= 4``).
    seeds : sequence of int, length ``S``
        Seed offsets (as :func:`.problem.make_problem`), one problem each.
    thetas : sequence of float, shape ``(T,)``
        Held overlaps in ``(0, sigma^2]``, strictly increasing (theory normalisation).
    omega, sigma, lam : float, optional
        The model: positional weight (default 0.3), token noise (0.5), ridge (0.01).
    A : array_like, shape ``(2, 2)``, optional
        The teacher's attention matrix (default ``((0.6, 0.4), (0.4, 0.6))``).
    seed : int, optional
        The chapter's seed (default 0).
    gtol : float, optional
        Relative-gradient tolerance of every minimisation (default ``1e-8``).
    device : str or torch.device, optional
        Where to minimise (default ``"cpu"``).
    progress : bool, optional
        Show a tqdm bar over seeds (default ``False``).

    Returns
    -------
    dict: ``thetas`` (T,); (S, T) ``train_loss`` (objective / d), ``q``, ``m``, ``test_error``,
    ``converged``, ``sweeps_differ`` (the two sweeps ended in different minima); for ``free``
    (from ``Q*``) and ``best`` (the lowest found), (S,) ``<which>_theta``, ``_train_loss``, ``_q``,
    ``_m``, ``_test_error``, ``_converged``; ``seeds``, ``d``, ``alpha``.
    """
    alpha = check_real("alpha", alpha, low=0.0, low_open=True, high=100.0)
    d = check_int("d", d, minimum=4)
    seeds = [check_int(f"seeds[{i}]", s, minimum=0) for i, s in enumerate(seeds)]
    if not seeds:
        raise ValueError("seeds must hold at least one seed offset; got none")
    th = np.asarray([check_real(f"thetas[{i}]", t, low=0.0, low_open=True, high=sigma ** 2)
                     for i, t in enumerate(thetas)], dtype=float)
    if np.any(np.diff(th) <= 0):
        raise ValueError("thetas must be increasing")
    n = int(round(alpha * d))
    S_, T_ = len(seeds), th.size
    out = {k: np.zeros((S_, T_)) for k in ("train_loss", "q", "m", "test_error", "converged",
                                            "sweeps_differ")}
    for w in ("free", "best"):
        out.update({f"{w}_{k}": np.zeros(S_) for k in ("theta", "train_loss", "q", "m",
                                                        "test_error", "converged")})
    it = seeds
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(seeds, desc=f"d = {d}")

    def record(i: int, which: str, r: dict, pb: Problem) -> None:
        sm = summaries(r["Q"][None], pb.q_star, sigma)
        out[f"{which}_theta"][i] = sigma ** 2 * sm["theta_emp"][0]
        out[f"{which}_q"][i], out[f"{which}_m"][i] = sm["q_emp"][0], sm["m"][0]
        out[f"{which}_train_loss"][i], out[f"{which}_converged"][i] = r["loss"], r["converged"]
        out[f"{which}_test_error"][i] = exact_test_error(r["Q"], pb.q_star[0], omega=omega,
                                                         sigma=sigma, A=A)

    for i, s in enumerate(it):
        pb = make_problem(d, [s], n, seed=seed, omega=omega, sigma=sigma, lam=lam, A=A,
                          device=device)
        free = minimise(pb, 0, n, pb.q_star[0].clone(), gtol=gtol)
        record(i, "free", free, pb)
        runs: list[dict | None] = [None] * T_
        for order in (range(T_), range(T_ - 1, -1, -1)):
            Q0 = free["Q"]
            for j in order:
                r = constrained_minimise(pb, 0, n, float(th[j]), Q0, gtol=gtol)
                Q0 = r["Q"]
                if runs[j] is not None:
                    out["sweeps_differ"][i, j] = abs(r["loss"] / runs[j]["loss"] - 1) > 1e-9
                if runs[j] is None or r["loss"] < runs[j]["loss"]:
                    runs[j] = r
        Q = torch.stack([r["Q"] for r in runs])
        out["train_loss"][i] = [r["loss"] for r in runs]
        out["converged"][i] = [r["converged"] for r in runs]
        sm = summaries(Q, pb.q_star.expand(T_, d), sigma)
        out["q"][i], out["m"][i] = sm["q_emp"], sm["m"]
        out["test_error"][i] = exact_test_error(Q, pb.q_star.expand(T_, d), omega=omega,
                                                sigma=sigma, A=A)
        low = runs[int(np.argmin(out["train_loss"][i]))]
        best = minimise(pb, 0, n, low["Q"], gtol=gtol)
        record(i, "best", best if best["loss"] <= free["loss"] else free, pb)
    for k in ("converged", "sweeps_differ", "free_converged", "best_converged"):
        out[k] = out[k].astype(bool)
    return dict(out, thetas=th, seeds=np.asarray(seeds), d=np.asarray(d), alpha=np.asarray(alpha))
