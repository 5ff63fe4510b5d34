"""The attention student's minimisation problem: the data of many seeds at one ``d``, the starts,
and the overlaps of a student.

:func:`make_problem` draws, for every seed, the teacher ``Q*`` and ``n`` samples of two tokens
with their positions, and keeps the Gram matrices the objective needs (:class:`Problem`: torch,
float64); a run at ``alpha`` uses the first ``round(alpha d)`` samples. :func:`initial_points`
gives the named starts (semantic ``Q*``, positional ``p_1``, random), :func:`summaries` the
overlaps ``m``, ``theta`` and ``q`` of learned students.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import torch

from stumplib.core.device import make_generator
from stumplib.core.validation import check_choice, check_int
from stumplib.phase.data import positional_encodings, sample_teacher, sample_tokens, teacher_matrix
from stumplib.phase.objective import INITS, objective_from_grams
from stumplib.phase.setting import PhaseModel, as_model


@dataclass
class Problem:
    """The data of ``S`` seeds at one ``d`` (torch, float64): teachers, tokens, Gram matrices.

    Attributes
    ----------
    q_star : torch.Tensor, shape ``(S, d)``
        The teachers.
    X : torch.Tensor, shape ``(S, n, 2, d)``
        The tokens with their positions.
    T : torch.Tensor, shape ``(S, n, 2, 2)``
        The teachers' attention matrices.
    Gxx, Gxz, Gzz : torch.Tensor, shape ``(S, n, 2, 2)``
        Gram matrices ``X X^T``, ``X Z^T``, ``Z Z^T``.
    c0 : torch.Tensor, shape ``(S, n)``
        ``|T Z|_F^2``.
    d, n : int
        Dimension and samples per seed.
    omega, sigma, lam : float
        The model: positional weight, token noise, ridge.
    A : np.ndarray, shape ``(2, 2)``
        The teacher's attention matrix.
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
        return objective_from_grams(Q, self.X[sl], self.Gxx[sl], self.Gxz[sl], self.c0[sl],
                                    self.T[sl], mask, self.lam)


def make_problem(d: int, seeds: Sequence[int], n: int, *, model: PhaseModel, seed: int = 0,
                 device: Any = "cpu", dtype: torch.dtype = torch.float64) -> Problem:
    """Draw the teachers and ``n`` samples of each seed (seed ``s`` from generator
    ``seed * 1000 + s``; a run at ``alpha`` uses the first ``round(alpha d)`` samples). The draws
    are made on the CPU and then moved to ``device``, so every device sees the same data.

    Parameters
    ----------
    d : int
        Token dimension (>= 4).
    seeds : sequence of int
        Seed offsets (``S`` of them).
    n : int
        Samples per seed (>= 1).
    model : PhaseModel
        The model (:func:`~stumplib.phase.check_model`): positional weight ``omega``, token noise
        ``sigma``, ridge ``lam``, the teacher's attention matrix ``A`` (the branch is not used).
    seed : int
        The chapter's seed.
    device, dtype : torch.device or str, torch.dtype
        Torch placement.

    Returns
    -------
    Problem
        The ``S`` seeds' data (torch tensors on ``device``: the minimisers' layer).
    """
    d = check_int("d", d, minimum=4, maximum=1_000_000)
    n = check_int("n", n, minimum=1)
    omega, sigma, lam, A_, _ = as_model(model)
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


def initial_points(pb: Problem, init: str, *,
                   generator: torch.Generator | None = None) -> torch.Tensor:
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
        p1 = positional_encodings(d, device=pb.X.device, dtype=pb.X.dtype)[0]
        return p1.expand(S_, d).clone()
    if generator is None:
        raise ValueError("init='random' needs a generator")
    Q = torch.randn(S_, d, generator=generator, device=pb.X.device, dtype=pb.X.dtype)
    return Q / math.sqrt(d)


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
