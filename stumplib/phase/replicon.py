"""The replica-symmetric point's stability against replica symmetry breaking: the de
Almeida-Thouless condition of ridge-regularised empirical risk minimisation, ``alpha E |I -
J|_F^2 < 1`` with ``J`` the Jacobian of the proximal map in its centre (:func:`replicon`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stumplib.core.stats import Estimate
from stumplib.phase.setting import DEFAULT_A


def replicon(alpha: float, q: float, V: float, theta: float, *, omega: float = 0.3,
             sigma: float = 0.5, lam: float = 0.01, A: Any = DEFAULT_A,
             log2_points: int = 14, n_scramblings: int = 8, seed: int = 1) -> dict[str, Estimate]:
    """The de Almeida-Thouless (replicon) check of a replica-symmetric fixed point.

    For ridge-regularised empirical risk minimisation the replica-symmetric saddle point is stable
    against replica symmetry breaking when ``alpha E |d f_out/d omega|^2 (V)^2 < 1`` (Gardner and
    Derrida's condition for the perceptron, with the ridge prior's factor ``(sigma^2 / (lambda +
    V_hat sigma^2))^2 = V^2``); with ``f_out = (x - c) / V`` and the two tokens' fields sharing one
    overlap it reads ``alpha E |I - J|_F^2 < 1``, ``J = dx/dc = H^{-1} / V`` the Jacobian of the
    proximal minimiser ``x`` in its centre ``c`` (``H`` the proximal objective's Hessian). For a
    convex loss ``I - J`` has eigenvalues in ``[0, 1]`` and the condition follows from the
    fixed point's ``V_hat V = alpha E tr(I - J) < 1``; the softmax loss is not convex, so it is a
    check. This condition is derived here, not taken from the paper (which assumes replica
    symmetry); ``vhat_v`` and ``alpha_tr`` (``V_hat V`` and ``alpha E tr(I - J)``, equal by
    Stein's lemma) check the Jacobian.

    Parameters
    ----------
    alpha, q, V, theta : float
        The fixed point (``m = 0``): sample ratio, overlaps ``q``, ``V`` and ``theta``.
    omega, sigma, lam : float, optional
        The model: positional weight (default 0.3), token noise (0.5), ridge (0.01).
    A : array_like, shape ``(2, 2)``, optional
        The teacher's attention matrix (default ``DEFAULT_A``).
    log2_points : int, optional
        Each Sobol rule has ``2**log2_points`` nodes (default 14).
    n_scramblings : int, optional
        Number of scrambled rules (default 8); their spread is the error.
    seed : int, optional
        Seed of the scramblings (default 1).

    Returns
    -------
    dict of :class:`~stumplib.core.stats.Estimate`
        Means over scramblings with 95% Student intervals: ``replicon`` (``alpha E |I -
        J|_F^2`` over the points where the proximal map is smooth; stable below 1), ``vhat_v``,
        ``alpha_tr`` and ``stein_defect`` (``alpha E tr(I - J) - V_hat V``). Where the proximal
        minimiser *jumps* between two basins as its centre moves (the problem is not convex),
        Stein's identity picks up the jumps and ``J`` does not: ``stein_defect`` measures their
        weight. A jump puts a delta function into ``d f_out / d omega``, so wherever
        ``stein_defect`` is not zero the condition fails formally (as for the perceptron that
        minimises its errors above capacity, whose replica-symmetric solution is unstable for
        the same reason): replica symmetry is then broken, by an amount this check does not
        size.
    """
    from stumplib.core.stats import mean_interval
    from stumplib.core.validation import check_real
    from stumplib.phase.proximal import prox_objective_and_derivatives
    from stumplib.phase.replica import UpdateOptions, geometry, se_update
    from stumplib.phase.setting import check_A, check_model, teacher_rows
    from stumplib.phase.solver_qmc import scrambled_rules

    alpha = check_real("alpha", alpha, low=0.0, low_open=True, high=100.0)
    sigma = check_real("sigma", sigma, low=0.0, low_open=True, high=100.0)
    q = check_real("q", q, low=0.0, low_open=True)
    V = check_real("V", V, low=0.0, low_open=True)
    theta = check_real("theta", theta, low=0.0, low_open=True, high=sigma ** 2)
    if theta ** 2 >= q * sigma ** 2:
        raise ValueError(f"theta and q must satisfy theta^2 < q sigma^2 (a teacher variance "
                         f"V* > 0); got theta = {theta}, q = {q}, sigma = {sigma}")
    nodes, w = scrambled_rules(log2_points, n_scramblings, seed)
    K = nodes.shape[0]
    ones = np.ones(K)
    up = se_update(alpha * ones, q * ones, 0.0 * ones, V * ones, theta * ones,
                   model=check_model(omega=omega, sigma=sigma, lam=lam, A=A),
                   options=UpdateOptions(nodes=nodes, weights=w, with_test_error=False))
    center, u, _, _, _ = geometry(q * ones, 0.0 * ones, theta * ones, sigma, nodes)
    t = teacher_rows(u, omega, check_A(A))
    _, _, H = prox_objective_and_derivatives(up["prox"], center, t, V, sigma)
    IJ = np.eye(2) - np.linalg.inv(H) / V  # (K, N, 2, 2)
    rep = alpha * np.einsum("kn,kn->k", w, (IJ ** 2).sum((-1, -2)))
    tr = alpha * np.einsum("kn,kn->k", w, np.trace(IJ, axis1=-2, axis2=-1))
    return dict(replicon=mean_interval(rep), vhat_v=mean_interval(up["V_hat"] * V),
                alpha_tr=mean_interval(tr), stein_defect=mean_interval(tr - up["V_hat"] * V))
