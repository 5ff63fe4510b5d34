"""Theory curves of both branches over ``alpha`` at one ``omega``, and what is read off them.

The accurate curves from the accuracy-controlled solver (:func:`accurate_curves`, with errors and
named outcomes), the fixed-rule curves with their crossings (:func:`theory_curves`), the semantic
branch followed below the solved points to its end (:func:`branch_tail`), the converged semantic
point's values at given ``alpha`` (:func:`theory_at`), the lowest converged semantic point at each
omega of the phase diagram (:func:`lowest_points`), and the one-dimensional view along theta
under several rules (:func:`window_profiles`).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from stumplib.phase.crossings import first_crossing

__all__ = ["accurate_curves", "theory_curves", "theory_at", "branch_tail", "window_profiles",
           "lowest_points"]


def accurate_curves(alphas: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                    A: Any = ((0.6, 0.4), (0.4, 0.6)), rtol: float = 3e-3,
                    max_log2_points: int = 14,
                    branches=("semantic", "positional"), **kw) -> dict[str, np.ndarray]:
    """Both branches with the accuracy-controlled solver (:func:`stumplib.phase.state_evolution`).

    Points that miss the target at ``max_log2_points`` are reported undecided, not raised.

    Parameters
    ----------
    alphas : array_like, shape ``(K,)``
        Sample ratios.
    omega, sigma, lam : float
        The model.
    A : array_like, shape ``(2, 2)``
        The positional attention matrix.
    rtol : float
        The solver's accuracy target.
    max_log2_points : int
        The solver's largest rule.
    branches : tuple of str
        The branches solved.
    **kw
        Passed to the solver.

    Returns
    -------
    dict of np.ndarray
        ``{sem,pos}_{alpha, q, m, V, theta, test_error, train_loss}``, their ``_err``,
        ``_outcome``, ``_seconds``, ``_log2_points``, ``_suppressed_derivative``, and the exact
        ``baseline``.
    """
    from stumplib.phase.positional_baseline import linear_baseline_test_error
    from stumplib.phase.solver import state_evolution

    out: dict[str, np.ndarray] = {}
    for br in branches:
        key = "sem" if br == "semantic" else "pos"
        r = state_evolution(alphas, omega=omega, sigma=sigma, lam=lam, A=A, branch=br, rtol=rtol,
                            max_log2_points=max_log2_points, on_accuracy="undecided", **kw)
        for k in ("alpha", "q", "m", "V", "theta", "test_error", "train_loss", "seconds",
                  "log2_points",
                  "suppressed_derivative", "unstable", "unstable_undamped"):
            out[f"{key}_{k}"] = np.atleast_1d(r[k])
        for k in ("q", "m", "V", "theta", "test_error", "train_loss"):
            out[f"{key}_{k}_err"] = np.atleast_1d(r[f"{k}_err"])
        out[f"{key}_outcome"] = np.atleast_1d(r["outcome"]).astype(str)
    out["baseline"] = np.asarray(linear_baseline_test_error(omega=omega, sigma=sigma, A=A))
    return out


def theory_curves(alphas: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                  A: Any = ((0.6, 0.4), (0.4, 0.6)), n_nodes: int = 10, rule: str = "gauss-hermite"
                  ) -> dict[str, np.ndarray]:
    """Both branches of the state evolution with a fixed rule (:func:`.replica.solve_fixed_rule`) on
    a grid of alpha and the linear baseline (no error estimate: see :func:`accurate_curves`).

    Parameters
    ----------
    alphas : array_like, shape ``(K,)``
        Sample ratios.
    omega, sigma, lam : float
        The model.
    A : array_like, shape ``(2, 2)``
        The positional attention matrix.
    n_nodes : int
        Nodes of the rule (per axis).
    rule : str
        The fixed rule (:func:`.replica.solve_fixed_rule`).

    Returns
    -------
    dict with ``alpha`` and, for ``br`` in (sem, pos), the arrays ``{br}_q``, ``{br}_m``,
    ``{br}_V``, ``{br}_theta``, ``{br}_test_error``, ``{br}_train_loss`` (K,), plus ``baseline``
    (scalar array), ``alpha_c`` (global minimum switches: semantic training loss below the
    positional one) and ``alpha_l`` (semantic test error below the baseline).
    """
    from stumplib.phase.positional_baseline import linear_baseline_test_error
    from stumplib.phase.replica import solve_fixed_rule

    out: dict[str, np.ndarray] = {"alpha": np.asarray(alphas, dtype=np.float64)}
    for br, key in (("semantic", "sem"), ("positional", "pos")):
        r = solve_fixed_rule(alphas, omega=omega, sigma=sigma, lam=lam, A=A, branch=br,
                             n_nodes=n_nodes, rule=rule)
        for k in ("q", "m", "V", "theta", "test_error", "train_loss"):
            out[f"{key}_{k}"] = np.atleast_1d(r[k])
    base = linear_baseline_test_error(omega=omega, sigma=sigma, A=A)
    out["baseline"] = np.asarray(base)
    out["alpha_c"] = np.asarray(first_crossing(out["alpha"], out["pos_train_loss"],
                                               out["sem_train_loss"]))
    out["alpha_l"] = np.asarray(first_crossing(out["alpha"], np.full_like(out["alpha"], base),
                                               out["sem_test_error"]))
    return out


def theory_at(th: Mapping[str, np.ndarray], alphas: Any, key: str) -> tuple[np.ndarray, np.ndarray]:
    """The converged semantic point's ``key`` and its error at each of ``alphas``.

    Parameters
    ----------
    th : mapping
        :func:`accurate_curves`' result.
    alphas : array_like
        Where.
    key : str
        The quantity (``"test_error"``, ``"theta"``, ...).

    Returns
    -------
    (value, err) : tuple of np.ndarray
        NaN where absent.
    """
    val, err = [], []
    for a in np.atleast_1d(alphas):
        i = np.flatnonzero(np.isclose(th["sem_alpha"], a, rtol=0, atol=1e-4)
                           & (th["sem_outcome"] == "converged"))
        val.append(th[f"sem_{key}"][i[0]] if i.size else np.nan)
        err.append(th[f"sem_{key}_err"][i[0]] if i.size else np.nan)
    return np.asarray(val, dtype=float), np.asarray(err, dtype=float)


def branch_tail(th: Mapping[str, np.ndarray], alphas: Any, *, omega: float, rtol: float,
                max_log2_points: int, cache: bool = True, **solver: Any) -> dict[str, np.ndarray]:
    """The semantic branch followed below the solved points (at ``alphas``, looser ``rtol``),
    continuing from the lowest converged point of ``th``, joined with ``th``'s semantic points.

    Parameters
    ----------
    th : mapping
        :func:`accurate_curves`' result.
    alphas : array_like
        The sample ratios below.
    omega : float
        The positional share.
    rtol : float
        The solver's accuracy target there.
    max_log2_points : int
        The solver's largest rule.
    cache : bool
        Keep the result with :func:`stumplib.core.memo.remember`.
    **solver
        Passed to the solver.

    Returns
    -------
    dict of np.ndarray
        ``alpha, theta, theta_err, q, outcome, suppressed_derivative`` (decreasing alpha).
    """
    ok = th["sem_outcome"] == "converged"
    j = int(np.argmin(np.where(ok, th["sem_alpha"], np.inf)))
    init = {k: float(th[f"sem_{k}"][j]) for k in ("q", "m", "V", "theta")} if ok.any() else None
    cfg = dict(alphas=list(map(float, alphas)), omega=omega, rtol=rtol, max_log2=max_log2_points,
               init=init, **solver)

    def compute():
        return accurate_curves(alphas, omega=omega, rtol=rtol, max_log2_points=max_log2_points,
                               branches=("semantic",), init=init, **solver)

    if cache:
        from stumplib.core.memo import remember

        t = remember("branch_tail", cfg, compute)
    else:
        t = compute()
    keys = ("alpha", "theta", "theta_err", "q", "outcome", "suppressed_derivative")
    solved = np.asarray(th["sem_outcome"]) != "not_solved"
    out = {k: np.concatenate([np.asarray(th[f"sem_{k}"])[solved], np.asarray(t[f"sem_{k}"])])
           for k in keys}
    o = np.argsort(-out["alpha"])
    return {k: v[o] for k, v in out.items()}


def window_profiles(alpha: float, thetas: Any, rules: Any, *, omega: float, sigma: float,
                    lam: float, tol: float | None = None,
                    cache: bool = True) -> list[dict[str, np.ndarray]]:
    """:func:`.replica.theta_profile` at ``alpha`` along ``thetas`` for each rule.

    Parameters
    ----------
    alpha : sample ratio.
    thetas : the grid of semantic overlaps, shape ``(T,)``.
    rules : ``(label, rule, size)`` per rule (:func:`.quadrature.quadrature_4d`'s ``rule`` and
        ``n_nodes``).
    omega, sigma, lam : the model.
    tol : inner tolerance of :func:`.replica.theta_profile` (``None``: its default).
    cache : keep the result with :func:`stumplib.core.memo.remember` (no log).

    Returns
    -------
    list of dict
        One per rule, in the order of ``rules``: the arrays of :func:`.replica.theta_profile`
        (``theta``, ``F_theta``, ``residual``, ``q``, ``V``, ``test_error`` and ``train_loss``,
        each of shape ``(T,)``, and ``root``, 0-d).
    """
    from stumplib.phase.replica import theta_profile

    extra = {} if tol is None else dict(tol=tol)

    def compute() -> list[dict[str, np.ndarray]]:
        return [{key: np.asarray(v) for key, v in theta_profile(
                    alpha, thetas, omega=omega, sigma=sigma, lam=lam, rule=rule, n_nodes=nn,
                    **extra).items()}
                for _, rule, nn in rules]

    if not cache:
        return compute()
    from stumplib.core.memo import remember

    cfg = dict(alpha=alpha, thetas=list(map(float, thetas)), rules=[list(r[1:]) for r in rules],
               omega=omega, sigma=sigma, lam=lam, **extra)
    return remember("window_profiles", cfg, compute)


def lowest_points(diag: Mapping[str, np.ndarray], tail: Mapping[str, np.ndarray] | None = None,
                  omega: float | None = None) -> list[dict[str, float]]:
    """At each omega of the diagram the converged semantic point of lowest alpha; at ``omega`` the
    lowest converged point of ``tail`` instead.

    Parameters
    ----------
    diag : mapping
        :func:`stumplib.phase.diagram.phase_diagram`'s result.
    tail : mapping, optional
        :func:`branch_tail`'s result.
    omega : float, optional
        The omega whose point comes from ``tail``.

    Returns
    -------
    list of dict
        ``omega, alpha, theta, q, derivative`` per omega.
    """
    pts = []
    for i, w in enumerate(np.asarray(diag["omega"], dtype=float)):
        if tail is not None and omega is not None and np.isclose(w, omega):
            src, sel = tail, np.asarray(tail["outcome"]) == "converged"
            a = np.asarray(tail["alpha"])
        else:
            src = {k[4:]: np.asarray(v) for k, v in diag.items() if k.startswith("sem_")}
            a = np.asarray(diag["pt_alpha"])
            sel = (np.asarray(diag["pt_w"]) == i) & (src["outcome"] == "converged")
        if not sel.any():
            continue
        j = np.flatnonzero(sel)[np.argmin(a[sel])]
        pts.append(dict(omega=float(w), alpha=float(a[j]), theta=float(src["theta"][j]),
                        q=float(src["q"][j]), derivative=float(src["suppressed_derivative"][j])))
    return pts
