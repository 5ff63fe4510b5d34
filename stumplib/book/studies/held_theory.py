"""The theory along theta: the state evolution with ``theta`` held by a Lagrange multiplier.

Holding ``theta`` frees the conjugate ``theta_hat`` of the prior (ridge) channel, which then takes
the value that returns the held ``theta``, ``theta_hat = theta (lambda + V_hat sigma^2) /
sigma^4``; the output channel's conjugates (``q_hat, V_hat`` and the ``theta theta_hat / q`` term
of ``V_hat``) are unchanged, so

    q = sigma^2 (q_hat sigma^2 + m_hat^2) / (lambda + V_hat sigma^2)^2 + theta^2 / sigma^2,
    V = sigma^2 / (lambda + V_hat sigma^2),

iterated to their fixed point at each ``theta`` (:func:`held_theory`). The multiplier is the slope
of the constrained training loss: ``dE/dtheta = -(F(theta) - theta) / (sigma^2 V)`` with
``F(theta) = sigma^4 theta_hat_out / (lambda + V_hat sigma^2)`` the ``theta`` the unconstrained
update returns, so ``E`` is smallest at the fixed point and its curvature there is ``-g'(theta) /
(sigma^2 V)``: a flat residual ``g = F - theta`` (chapter 6, Appendix D) is a flat loss.
(Appendix D's :func:`.replica.theta_profile` updates ``q`` with the output channel's
``theta_hat`` instead; the two agree at the root only.) :func:`held_root` finds the fixed point
along ``theta`` by this second route.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np

from stumplib.core.stats import Estimate
from stumplib.core.validation import check_real
from stumplib.phase.landscape_fit import landscape_fit
from stumplib.phase.setting import DEFAULT_A


def held_theory(alpha: float, thetas: Sequence[float], *, omega: float = 0.3, sigma: float = 0.5,
                lam: float = 0.01, A: Any = DEFAULT_A, log2_points: int = 12,
                n_scramblings: int = 8, seed: int = 0, tol: float = 1e-10,
                max_iter: int = 2000) -> dict[str, np.ndarray]:
    """The state evolution with ``theta`` held (module docstring): the constrained minimum's
    training loss, overlaps and test error along ``theta``, once per scrambling of a Sobol rule.

    Each scrambling is its own rule (:func:`.solver_qmc.scrambled_rules`); their spread is the
    quadrature error. At each ``theta`` (``m = 0``, swap-symmetric ``A``) ``q`` and ``V`` are
    iterated with damping 0.5 to a relative change below ``tol``; the proximal problems are
    followed from their last minimisers and searched from every start every tenth update and at
    the end.

    Parameters
    ----------
    alpha : float
        Sample ratio.
    thetas : sequence of float, shape ``(T,)``
        Held overlaps in ``(0, sigma^2]``.
    omega, sigma, lam : float, optional
        The model: positional weight (default 0.3), token noise (0.5), ridge (0.01).
    A : array_like, shape ``(2, 2)``, optional
        The teacher's attention matrix (default ``DEFAULT_A``).
    log2_points : int, optional
        Each Sobol rule has ``2**log2_points`` nodes (default 12).
    n_scramblings : int, optional
        Number of scrambled rules ``K`` (default 8).
    seed : int, optional
        Seed of the scramblings (default 0).
    tol : float, optional
        Relative change of ``q, V`` below which they count as converged (default ``1e-10``).
    max_iter : int, optional
        Updates allowed (default 2000).

    Returns
    -------
    dict
        (K, T) arrays, one row per scrambling: ``train_loss``, ``q``, ``V``, ``F_theta`` (the
        theta the unconstrained update returns), ``residual`` (``F - theta``), ``test_error``,
        ``slope`` (``dE/dtheta = -residual / (sigma^2 V)``, the multiplier); ``thetas`` (T,),
        ``n_iter``, ``log2_points``.

    Raises
    ------
    StateEvolutionError
        When ``q, V`` do not converge.
    """
    from stumplib.phase.replica import UpdateOptions, se_update
    from stumplib.phase.setting import StateEvolutionError, check_model
    from stumplib.phase.solver_qmc import scrambled_rules

    rho = sigma * sigma
    th = np.asarray([check_real(f"thetas[{i}]", t, low=0.0, low_open=True, high=rho)
                     for i, t in enumerate(thetas)], dtype=float)
    nodes, w = scrambled_rules(log2_points, n_scramblings, seed)
    K, T_ = nodes.shape[0], th.size
    nd = np.repeat(nodes, T_, axis=0)  # row k * T + j: scrambling k, theta j
    wt = np.repeat(w, T_, axis=0)
    t = np.tile(th, K)
    a = np.full(t.shape, float(alpha))
    q = np.maximum(rho * (0.05 + 0.4 * min(alpha, 2) / (1 + min(alpha, 2))), 1.5 * t ** 2 / rho)
    V = np.full(t.shape, 20.0)
    model = check_model(omega=omega, sigma=sigma, lam=lam, A=A)
    opts = UpdateOptions(nodes=nd, weights=wt, with_test_error=False)
    warm = None
    for it in range(max_iter):
        up = se_update(a, q, 0.0, V, t, model=model, warm=warm,
                       options=replace(opts, restart=warm is None or it % 10 == 0))
        warm = up["prox"]
        den = lam + up["V_hat"] * rho
        qn = rho * (up["q_hat"] * rho + up["m_hat"] ** 2) / den ** 2 + t ** 2 / rho
        rel = max(np.abs(qn / q - 1).max(), np.abs(up["V"] / V - 1).max())
        q, V = 0.5 * (q + qn), 0.5 * (V + up["V"])
        if rel < tol and it % 10 == 9:
            break
    else:
        raise StateEvolutionError(f"held_theory: q, V did not converge in {max_iter} updates "
                                  f"(last relative change {rel:.1e})")
    up = se_update(a, q, 0.0, V, t, model=model, warm=warm,
                   options=replace(opts, restart=True, with_test_error=True))
    res = up["theta"] - t
    out = dict(train_loss=up["train_loss"], q=q, V=V, F_theta=up["theta"], residual=res,
               test_error=up["test_error"], slope=-res / (rho * V))
    return dict({k: v.reshape(K, T_) for k, v in out.items()}, thetas=th,
                n_iter=np.asarray(it + 1), log2_points=np.asarray(log2_points))


def held_root(theory: Mapping[str, np.ndarray], *, sigma: float = 0.5,
              level: float = 0.95) -> dict[str, Estimate]:
    """The fixed point along ``theta`` by a second route: per scrambling of :func:`held_theory`,
    the root of the residual ``g = F - theta`` (a least-squares polynomial of degree up to 3
    through it; the root inside the window nearest its first sign change from + to -) and the
    minimum of the constrained training loss (:func:`.landscape_fit.landscape_fit`'s cubic);
    Student intervals over the scramblings.

    Parameters
    ----------
    theory : mapping
        :func:`held_theory`'s output (``thetas``, shape ``(T,)``; ``residual``, ``train_loss``,
        ``V``, shape ``(K, T)``).
    sigma : float, optional
        Token noise (default 0.5).
    level : float, optional
        Interval coverage, in ``(0, 1)`` (default 0.95).

    Returns
    -------
    dict of Estimate
        ``root``, ``loss_min``, ``curvature`` (the loss's, at its minimum), ``curvature_from_g``
        (``-g' / (sigma^2 V)``, ``g'`` the slope of a line through the residual over the window,
        ``V`` its mean there).
    """
    from stumplib.core.stats import crossing, mean_interval

    th = np.asarray(theory["thetas"], dtype=float)
    g = np.asarray(theory["residual"], dtype=float)
    deg, roots = min(3, th.size - 1), []
    for gk in g:
        near = crossing(th, gk, 0.0, direction="down", which="first")
        r = np.roots(np.polyfit(th - near, gk, deg)) + near if np.isfinite(near) else np.array([])
        r = r[np.isreal(r)].real
        r = r[(r >= th.min()) & (r <= th.max())]
        roots.append(r[np.argmin(np.abs(r - near))] if r.size else np.nan)
    roots = np.asarray(roots)
    fit = landscape_fit(th, theory["train_loss"])
    slopes = np.array([np.polyfit(th, gk, 1)[0] for gk in g])
    fin = np.isfinite(roots)
    root = mean_interval(roots[fin], level=level) if fin.sum() > 1 else Estimate.nan("seeds")
    from_g = -slopes / (sigma ** 2 * np.asarray(theory["V"]).mean(1))
    return dict(root=root, loss_min=fit["theta_min"], curvature=fit["curvature"],
                curvature_from_g=mean_interval(from_g, level=level))
