"""The state evolution's stability flag along ``m`` checked by minimisation.

At a semantic fixed point, a start with the fixed point's overlaps and a small positional
component ``m`` (:func:`semantic_start`) is minimised at several ``d``: where the flag says
stable, ``m`` should decay (:func:`classify_dynamics`, judged on a distribution-free interval of
the median final ``|m|`` at the largest ``d``, :func:`median_interval`);
:func:`stability_by_dynamics` measures it at every point.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from stumplib.phase.data import positional_encodings
from stumplib.phase.minimise import minimise
from stumplib.phase.problem import Problem, make_problem, summaries
from stumplib.phase.setting import DEFAULT_A, check_model


def semantic_start(pb: Problem, theta: float, q: float, m0: float, *,
                   seed: int = 0) -> torch.Tensor:
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
        One start per seed.
    """
    S_, d = pb.q_star.shape
    qs = pb.q_star
    p1 = positional_encodings(d, device=qs.device, dtype=qs.dtype)[0]
    G = torch.stack([torch.stack([(qs * qs).sum(1), qs @ p1], -1),  # Gram matrix of (Q*, p_1)
                     torch.stack([qs @ p1, torch.ones_like(qs[:, 0])], -1)], -2)
    rhs = torch.stack([torch.full_like(qs[:, 0], theta / pb.sigma ** 2 * d),
                       torch.full_like(qs[:, 0], m0 * math.sqrt(d))], -1)
    # Q = a Q* + c p_1 with Q* . Q = theta_emp d, p_1 . Q = m0 sqrt(d)
    ac = torch.linalg.solve(G, rhs)
    Q = ac[:, :1] * qs + ac[:, 1:] * p1
    g = torch.Generator(device=qs.device).manual_seed(seed)
    u = torch.randn(S_, d, generator=g, dtype=qs.dtype, device=qs.device)
    B, _ = torch.linalg.qr(torch.stack([qs, p1.expand(S_, d)], -1))  # (S, d, 2) orthonormal
    u = u - (B @ (B.transpose(-1, -2) @ u[..., None]))[..., 0]
    u = u / u.norm(dim=1, keepdim=True)
    rest = (q * d / pb.sigma ** 2 - (Q * Q).sum(1, keepdim=True)).clamp_min(0).sqrt()
    return Q + rest * u


def median_interval(values: Any, level: float = 0.95) -> tuple[float, float, float]:
    """The distribution-free interval of a median from order statistics: ``(x_(j), x_(n+1-j))``
    with the largest ``j`` whose coverage ``1 - 2 P(B <= j - 1)``, ``B ~ Binomial(n, 1/2)``, is at
    least ``level``; with too few values for ``level`` (``n < 6`` at 95%), the smallest and largest,
    whose coverage is then below ``level``.

    Parameters
    ----------
    values : array_like
        The sample (non-finite values are left out).
    level : float
        The wanted coverage, in (0, 1).

    Returns
    -------
    (lo, hi, coverage) : tuple of float
        NaN for an empty sample.
    """
    from scipy.stats import binom

    x = np.sort(np.asarray(values, dtype=float).ravel())
    x = x[np.isfinite(x)]
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan
    j = 1
    while j + 1 <= (n + 1) // 2 and 1 - 2 * binom.cdf(j, n, 0.5) >= level:
        j += 1
    cover = 1 - 2 * binom.cdf(j - 1, n, 0.5) if 2 * j <= n else 0.0
    return float(x[j - 1]), float(x[n - j]), float(cover)


def classify_dynamics(m0: float, m_final: Mapping[int, Any], *, factor: float = 2.0,
                      level: float = 0.95) -> str:
    """What the positional overlap did from ``m0``, judged on the interval of the median final
    ``|m|`` at the largest ``d`` (:func:`median_interval`): ``"decays"`` when the whole interval
    lies below ``m0``; ``"grows"`` when it lies above ``factor * m0`` and the median does not fall
    with ``d``; ``"unclear"`` otherwise (a median below ``m0`` whose interval reaches it is not a
    decay).

    Parameters
    ----------
    m0 : float
        The starting positional overlap (> 0).
    m_final : mapping
        ``{d: (seeds,) final m}`` (an empty array: no run to judge at that ``d``).
    factor : float
        Growth that counts as ``"grows"``.
    level : float
        The median interval's coverage.

    Returns
    -------
    str
        ``"decays"``, ``"grows"`` or ``"unclear"``.
    """
    ds = sorted(m_final)
    med = [float(np.median(np.abs(np.asarray(m_final[d])))) if np.size(m_final[d]) else math.nan
           for d in ds]
    lo, hi, _ = median_interval(np.abs(np.asarray(m_final[ds[-1]], dtype=float)), level)
    if hi < m0:
        return "decays"
    if lo > factor * m0 and (len(med) == 1 or med[-1] >= med[0]):
        return "grows"
    return "unclear"


def stability_by_dynamics(points: Sequence[Mapping[str, float]], ds: Sequence[int], seeds: int, *,
                          m0_sqrt_d: float = 3.0, sigma: float = 0.5, lam: float = 0.01,
                          A: Any = DEFAULT_A, seed: int = 0, cache: bool = True,
                          device: Any = "cpu") -> list[dict[str, Any]]:
    """The solver's stability flag along ``m`` checked by minimisation: at each semantic fixed
    point (``omega, alpha, theta, q, derivative``), start at its overlaps with ``m = m0_sqrt_d /
    sqrt(d)`` (:func:`semantic_start`) and minimise (:func:`.minimise.minimise`) at each ``d``.

    Parameters
    ----------
    points : sequence of mapping
        The fixed points: ``omega``, ``alpha``, ``theta``, ``q`` and ``derivative`` (the
        derivative of the state evolution's ``m`` update at ``m = 0``).
    ds : sequence of int, shape ``(D,)``
        Dimensions.
    seeds : int
        Seeds per point and ``d``.
    m0_sqrt_d : float
        The starting ``m sqrt(d)``.
    sigma, lam : float
        The model's token noise and ridge.
    A : array_like, shape ``(2, 2)``
        The teacher's attention matrix.
    seed : int
        The problems' seed.
    cache : bool
        Keep the final ``m sqrt(d)`` and the converged flags with
        :func:`stumplib.core.memo.remember` (no log), as a list over points of lists over ``ds``.
    device : str or torch.device
        Where to minimise.

    Returns
    -------
    list of dict
        One per point: ``omega``, ``alpha``, ``derivative``; ``solver`` (``"unstable"`` when the
        derivative exceeds +1, else ``"stable"``); ``ds`` (list, as given) and ``median_abs_m``
        (list of float, one per ``d``: the median ``|m| sqrt(d)`` over the converged runs, NaN
        where none converged); ``median_lo``, ``median_hi`` and ``median_coverage``: the interval
        of that median at the largest ``d`` (:func:`median_interval`, 95% where the runs allow);
        ``dynamics`` (:func:`classify_dynamics` on ``m sqrt(d)``);
        ``agree`` (whether ``dynamics`` says what ``solver`` says; ``None`` where the dynamics
        are ``"unclear"``); ``not_converged``: the runs (over all ``d``) that did not reach the
        relative gradient ``gtol`` of :func:`.minimise.minimise`, left out of the medians.
    """
    def final_m(p: Mapping[str, float], d: int) -> dict[str, np.ndarray]:
        n = int(round(p["alpha"] * d))
        pb = make_problem(d, list(range(seeds)), n, seed=seed, device=device,
                          model=check_model(omega=p["omega"], sigma=sigma, lam=lam, A=A))
        Q0 = semantic_start(pb, p["theta"], p["q"], m0_sqrt_d / math.sqrt(d), seed=seed)
        res = [minimise(pb, s, n, Q0[s]) for s in range(seeds)]
        Q = torch.stack([r["Q"] for r in res])
        return {"m": summaries(Q, pb.q_star, sigma)["m"] * math.sqrt(d),
                "converged": np.array([r["converged"] for r in res])}

    def compute() -> list[list[dict[str, np.ndarray]]]:  # [point][d] -> final m sqrt(d), converged
        return [[final_m(p, d) for d in ds] for p in points]

    if cache:
        from stumplib.core.memo import remember

        cfg = dict(points=[dict(p) for p in points], ds=list(ds), seeds=seeds, m0=m0_sqrt_d,
                   sigma=sigma, lam=lam, A=np.asarray(A).tolist(), seed=seed)
        res = remember("stability_by_dynamics", cfg, compute)
    else:
        res = compute()
    out = []
    for i, p in enumerate(points):
        ok = {d: np.asarray(r["converged"], dtype=bool) for d, r in zip(ds, res[i])}
        mf = {d: np.asarray(r["m"])[ok[d]] for d, r in zip(ds, res[i])}  # converged runs only
        dyn = classify_dynamics(m0_sqrt_d, mf)
        lo, hi, cover = median_interval(np.abs(mf[ds[-1]]))
        solver = "unstable" if p["derivative"] > 1 else "stable"
        out.append(dict(omega=p["omega"], alpha=p["alpha"], derivative=p["derivative"],
                        solver=solver, ds=list(ds),
                        median_abs_m=[float(np.median(np.abs(mf[d]))) if mf[d].size
                                      else float("nan") for d in ds],
                        median_lo=lo, median_hi=hi, median_coverage=cover, dynamics=dyn,
                        agree=(dyn == "decays") == (solver == "stable") if dyn != "unclear"
                        else None,
                        not_converged=int(sum((~ok[d]).sum() for d in ds))))
    return out
