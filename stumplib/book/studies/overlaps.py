"""The minimisers' overlaps per ``(alpha, d)`` and the accurate theory's at the same alphas.

:func:`overlap_table` gives the seed means, standard errors and spreads of the training loss,
``theta = sigma^2 Q*.Q / d``, ``q = sigma^2 |Q|^2 / d``, ``|m|`` and the exact test error over the
converged runs; :func:`theory_points` the semantic branch of the state evolution at those alphas.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

#: the overlaps of the figure, in its order (keys of :func:`overlap_table`)
QUANTITIES = ("train_loss", "theta", "q", "abs_m", "test_error")


def overlap_table(runs: Mapping[int, Mapping[str, np.ndarray]], alphas: Sequence[float], *,
                  sigma: float = 0.5) -> dict[str, np.ndarray]:
    """Seed means and standard errors of every overlap per ``(alpha, d)``, over converged runs.

    Parameters
    ----------
    runs : mapping
        ``{d: minimiser_runs output}`` (:func:`.minimise.study`, or a stored run; each with
        ``alphas`` and ``(S, A_d)`` arrays ``train_loss``, ``theta_emp``, ``q_emp``, ``m``,
        ``test_error``, ``converged``; a ``d`` without an ``alpha`` gives NaN there).
    alphas : sequence of float, shape ``(A,)``
        The sample ratios to tabulate (matched to a run's to within ``1e-6``).
    sigma : float, optional
        Token noise (default 0.5): ``theta`` is given in the theory's normalisation,
        ``theta = sigma^2 theta_emp``.

    Returns
    -------
    dict
        ``ds`` (D,), ``alphas`` (A,); for each of :data:`QUANTITIES` ``<k>`` (A, D) mean,
        ``<k>_se`` (A, D) standard error, ``<k>_sd`` (A, D) spread over seeds; ``n`` (A, D) seeds.
    """
    ds = sorted(int(d) for d in runs)
    al = np.asarray(alphas, dtype=float)
    if not ds:
        raise ValueError("runs must hold at least one d")
    have = np.unique(np.concatenate([np.asarray(runs[d]["alphas"], dtype=float) for d in ds]))
    absent = [float(a) for a in al if not np.isclose(have, a, atol=1e-6).any()]
    if absent:
        raise ValueError(f"alphas {absent} are in no run; the runs hold alpha = "
                         f"{', '.join(f'{a:g}' for a in have)}")
    out: dict[str, np.ndarray] = {"ds": np.asarray(ds), "alphas": al,
                                  "n": np.zeros((al.size, len(ds)))}
    for k in QUANTITIES:
        for suf in ("", "_se", "_sd"):
            out[k + suf] = np.full((al.size, len(ds)), np.nan)
    for j, d in enumerate(ds):
        r = runs[d]
        vals = dict(train_loss=r["train_loss"], theta=sigma ** 2 * r["theta_emp"], q=r["q_emp"],
                    abs_m=np.abs(r["m"]), test_error=r["test_error"])
        for i, a in enumerate(al):
            col = np.flatnonzero(np.isclose(np.asarray(r["alphas"], dtype=float), a, atol=1e-6))
            if not col.size:
                continue
            ok = np.asarray(r["converged"], dtype=bool)[:, col[0]]
            out["n"][i, j] = ok.sum()
            for k, v in vals.items():
                x = np.asarray(v)[ok, col[0]]
                out[k][i, j] = x.mean() if x.size else np.nan
                out[k + "_sd"][i, j] = x.std(ddof=1) if x.size > 1 else np.nan
                out[k + "_se"][i, j] = out[k + "_sd"][i, j] / math.sqrt(max(x.size, 1))
    return out


def theory_points(alphas: Sequence[float], *, known: Mapping[str, np.ndarray] | None = None,
                  omega: float = 0.3, sigma: float = 0.5, lam: float = 0.01, rtol: float = 1e-3,
                  seed: int = 0, cache: bool = True) -> dict[str, np.ndarray]:
    """The accurate theory (semantic branch) at each of ``alphas``, with quadrature errors.

    Points that ``known`` (chapter 6's :func:`.diagram.omega_curves` output) holds converged are
    taken from it; the others are solved with :func:`.solver.state_evolution` at ``rtol`` (kept
    with :func:`stumplib.core.memo.remember` when ``cache``).

    Parameters
    ----------
    alphas : sequence of float, shape ``(A,)``
        Sample ratios.
    known : mapping or None, optional
        Solved curves (``sem_alpha``, ``sem_<key>``, ``sem_<key>_err``, ``sem_outcome``); a point
        within ``1e-4`` of an ``alpha`` and converged is reused. ``None``: solve every point.
    omega, sigma, lam : float, optional
        The model: positional weight ``omega`` (default 0.3), token noise ``sigma`` (0.5) and
        ridge ``lam`` (0.01).
    rtol : float, optional
        The solver's relative accuracy target (default ``1e-3``).
    seed : int, optional
        Seed of the solver's quadrature scramblings (default 0).
    cache : bool, optional
        Whether to keep the solved points with :func:`stumplib.core.memo.remember` (under
        ``theory_points``; default ``True``).

    Returns
    -------
    dict of np.ndarray, shape ``(A,)``
        ``<k>`` and ``<k>_err`` for ``k`` in ``q, m, V, theta, test_error, train_loss`` (NaN
        where no converged point), ``alphas``.
    """
    from stumplib.phase.setting import check_model
    from stumplib.phase.solver import OUTPUT_KEYS, SolverOptions, state_evolution

    al = np.asarray(alphas, dtype=float)
    out = {k: np.full(al.size, np.nan) for key in OUTPUT_KEYS for k in (key, f"{key}_err")}
    missing = []
    for i, a in enumerate(al):
        hit = np.array([], dtype=int)
        if known is not None:
            hit = np.flatnonzero(np.isclose(known["sem_alpha"], a, rtol=0, atol=1e-4)
                                 & (np.asarray(known["sem_outcome"]) == "converged"))
        if hit.size:
            for key in OUTPUT_KEYS:
                out[key][i] = known[f"sem_{key}"][hit[0]]
                out[f"{key}_err"][i] = known[f"sem_{key}_err"][hit[0]]
        else:
            missing.append(i)
    if missing:
        def compute() -> dict[str, np.ndarray]:
            r = state_evolution(al[missing], seed=seed, on_accuracy="undecided",
                                model=check_model(omega=omega, sigma=sigma, lam=lam),
                                options=SolverOptions(rtol=rtol, stability=False))
            conv = np.asarray(r["outcome"]) == "converged"
            return {k: np.where(conv, np.asarray(r[k], dtype=float), np.nan)
                    for key in OUTPUT_KEYS for k in (key, f"{key}_err")}

        if cache:
            from stumplib.core.memo import remember
            got = remember("theory_points", dict(alphas=al[missing].tolist(), omega=omega,
                                                 sigma=sigma, lam=lam, rtol=rtol, seed=seed),
                           compute)
        else:
            got = compute()
        for k, v in got.items():
            out[k][missing] = np.asarray(v, dtype=float)
    return dict(out, alphas=al)
