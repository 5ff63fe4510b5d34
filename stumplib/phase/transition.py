"""Transition points from curves on a grid: where one branch's curve crosses another's."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["first_crossing", "theory_curves"]


def first_crossing(x: Any, above: Any, below: Any) -> float:
    """Smallest ``x`` (linear interpolation) after which ``below < above`` holds to the end of the grid.

    Parameters
    ----------
    x : (K,) increasing grid. above, below : (K,) curves.

    Returns
    -------
    The interpolated crossing of ``above - below`` from <= 0 to > 0 that starts the final run of
    positive differences; ``x[0]`` if positive everywhere; NaN if not positive at the end of the grid.
    """
    x = np.asarray(x, dtype=np.float64)
    diff = np.asarray(above, dtype=np.float64) - np.asarray(below, dtype=np.float64)
    if x.ndim != 1 or x.size < 2 or diff.shape != x.shape:
        raise ValueError("x, above and below must be 1-D arrays of the same length >= 2")
    if not np.all(np.diff(x) > 0):
        raise ValueError("x must be strictly increasing")
    if not np.all(np.isfinite(diff)):
        raise ValueError("above and below must be finite")
    if diff[-1] <= 0:
        return float("nan")
    neg = np.flatnonzero(diff <= 0)
    if neg.size == 0:
        return float(x[0])
    k = neg[-1]
    return float(x[k] + (x[k + 1] - x[k]) * (-diff[k]) / (diff[k + 1] - diff[k]))


def theory_curves(alphas: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                  A: Any = ((0.6, 0.4), (0.4, 0.6)), n_nodes: int = 10) -> dict[str, np.ndarray]:
    """Both branches of the state evolution on a grid of ``alpha`` and the linear baseline.

    Returns
    -------
    dict with ``alpha`` and, for ``br`` in (sem, pos), ``{br}_{q, m, V, theta, test_error,
    train_loss}`` (K,), plus ``baseline`` (scalar array), ``alpha_c`` (global minimum switches:
    semantic training loss below the positional one) and ``alpha_l`` (semantic test error below the
    baseline).
    """
    from .baseline import linear_baseline_test_error
    from .se import solve_fixed_rule as state_evolution

    out: dict[str, np.ndarray] = {"alpha": np.asarray(alphas, dtype=np.float64)}
    for br, key in (("semantic", "sem"), ("positional", "pos")):
        r = state_evolution(alphas, omega=omega, sigma=sigma, lam=lam, A=A, branch=br, n_nodes=n_nodes)
        for k in ("q", "m", "V", "theta", "test_error", "train_loss"):
            out[f"{key}_{k}"] = np.atleast_1d(r[k])
    base = linear_baseline_test_error(omega=omega, sigma=sigma, A=A)
    out["baseline"] = np.asarray(base)
    out["alpha_c"] = np.asarray(first_crossing(out["alpha"], out["pos_train_loss"], out["sem_train_loss"]))
    out["alpha_l"] = np.asarray(first_crossing(out["alpha"], np.full_like(out["alpha"], base),
                                               out["sem_test_error"]))
    return out
