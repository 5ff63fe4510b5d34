"""The minimiser of the regularised empirical risk at finite ``d`` with the semantic overlap
``theta = sigma^2 Q*.Q / d`` held.

The constraint ``Q*.Q = theta d / sigma^2`` is a plane in ``Q``; :class:`HeldTheta` projects the
argument onto it and the gradient onto its directions, so that L-BFGS (:func:`.minimise.minimise`)
stays on it (:func:`constrained_minimise`). :func:`.lowest_minima.line_scan` follows the
constrained minimiser over a window of ``theta`` (the landscape along theta), and
:func:`.lowest_minima.search` releases it in its search for the lowest minimum.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch

from stumplib.core.validation import check_real
from stumplib.phase.minimise import minimise
from stumplib.phase.problem import Problem


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
