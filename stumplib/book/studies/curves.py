"""Theory curves of both branches over ``alpha`` at one ``omega``, and what is read off them.

The accurate curves from the accuracy-controlled solver (:func:`accurate_curves`, with errors and
named outcomes), the fixed-rule curves with their crossings (:func:`.replica.solve_fixed_rule`), the semantic
branch followed below the solved points to its end (:func:`branch_tail`), where it ends fitted
from the converged points just above the end (:func:`fit_branch_end` on one sweep,
:func:`branch_end_fit` over independent families of scramblings), the converged semantic
point's values at given ``alpha`` (:func:`theory_at`), the lowest converged semantic point at each
omega of the phase diagram (:func:`lowest_points`), and the one-dimensional view along theta
under several rules (:func:`window_profiles`).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from stumplib.core.stats import Estimate
from stumplib.phase.crossings import first_crossing
from stumplib.phase.setting import DEFAULT_A

def accurate_curves(alphas: Any, *, omega: float, sigma: float = 0.5, lam: float = 0.01,
                    A: Any = DEFAULT_A, rtol: float = 3e-3,
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
    from stumplib.phase.setting import check_model
    from stumplib.phase.solver import solver_keywords, state_evolution

    out: dict[str, np.ndarray] = {}
    args = solver_keywords(dict(rtol=rtol, max_log2_points=max_log2_points,
                                on_accuracy="undecided", **kw))
    for br in branches:
        key = "sem" if br == "semantic" else "pos"
        model = check_model(omega=omega, sigma=sigma, lam=lam, A=A, branch=br)
        r = state_evolution(alphas, model=model, **args)
        for k in ("alpha", "q", "m", "V", "theta", "test_error", "train_loss", "seconds",
                  "log2_points",
                  "suppressed_derivative", "unstable", "unstable_undamped"):
            out[f"{key}_{k}"] = np.atleast_1d(r[k])
        for k in ("q", "m", "V", "theta", "test_error", "train_loss"):
            out[f"{key}_{k}_err"] = np.atleast_1d(r[f"{k}_err"])
        out[f"{key}_outcome"] = np.atleast_1d(r["outcome"]).astype(str)
    out["baseline"] = np.asarray(linear_baseline_test_error(check_model(omega=omega, sigma=sigma,
                                                                        A=A)))
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
    init = None
    if ok.any():
        init = {k: float(th[f"sem_{k}"][j]) for k in ("q", "m", "V", "theta")}
        if "sem_log2_points" in th:  # no "no fixed point" below the converged neighbour's rule
            init["log2_points"] = min(int(th["sem_log2_points"][j]), int(max_log2_points))
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


def semantic_points(th: Mapping[str, np.ndarray], alphas: Any,
                    omega: float) -> list[dict[str, float]]:
    """The converged semantic points of ``th`` at ``alphas`` (those not converged are left out),
    in the layout :func:`stumplib.phase.dynamics_check.stability_by_dynamics` takes.

    Parameters
    ----------
    th : mapping
        :func:`accurate_curves`' (or :func:`stumplib.book.studies.diagram.omega_curves`') result.
    alphas : array_like
        Where (matched to ``1e-4``).
    omega : float
        The positional share of ``th``.

    Returns
    -------
    list of dict
        ``omega, alpha, theta, q, derivative`` per converged point.
    """
    pts = []
    for a in np.atleast_1d(np.asarray(alphas, dtype=float)):
        i = np.flatnonzero(np.isclose(th["sem_alpha"], a, rtol=0, atol=1e-4)
                           & (np.asarray(th["sem_outcome"]) == "converged"))
        if i.size:
            j = int(i[0])
            pts.append(dict(omega=float(omega), alpha=float(th["sem_alpha"][j]),
                            theta=float(th["sem_theta"][j]), q=float(th["sem_q"][j]),
                            derivative=float(th["sem_suppressed_derivative"][j])))
    return pts


def lowest_points(diag: Mapping[str, np.ndarray], tail: Mapping[str, np.ndarray] | None = None,
                  omega: float | None = None) -> list[dict[str, float]]:
    """At each omega of the diagram the converged semantic point of lowest alpha; at ``omega`` the
    lowest converged point of ``tail`` instead.

    Parameters
    ----------
    diag : mapping
        :func:`stumplib.book.studies.diagram.phase_diagram`'s result.
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


def _line_end(a: np.ndarray, y: np.ndarray, sy: np.ndarray) -> dict[str, Any]:
    """Weighted least squares ``y = c0 + c1 a`` (errors ``sy``): the zero ``end = -c0 / c1``, its
    variance ``g C g`` (``C`` the coefficients' covariance, ``g`` the zero's gradient), ``c1``, the
    chi-square and ``dend_dy``, the zero's derivative in each ``y``."""
    X = np.stack([np.ones_like(a), a], 1)
    w = 1.0 / sy ** 2
    cov = np.linalg.inv(X.T @ (X * w[:, None]))
    M = cov @ (X * w[:, None]).T  # (2, P): the coefficients' derivatives in y
    c = M @ y
    end = -c[0] / c[1]
    g = -np.array([1.0, end]) / c[1]
    chi2 = float(np.sum(w * (y - X @ c) ** 2))
    return dict(end=float(end), var=float(g @ cov @ g), slope=float(c[1]), chi2=chi2,
                dend_dy=g @ M)


def fit_branch_end(alpha: Any, theta: Any, theta_err: Any) -> dict[str, float]:
    """Where the semantic branch ends, fitted: near its end ``theta*^2`` is linear in ``alpha``,
    ``theta*^2 = a (alpha - alpha_end)``, fitted by weighted least squares (the error of
    ``theta^2`` is ``2 theta`` times ``theta``'s).

    The error of ``alpha_end`` is the larger of two: the fit's (the errors taken independent, scaled
    up by ``sqrt(chi2 / dof)`` where the points scatter more than their errors or the line bends)
    and the coherent one: half the change of ``alpha_end`` between the two most distant fits when
    every ``theta`` moves by at most its error (each by its full error, in the direction that moves
    ``alpha_end`` one way, then the other). The quadrature errors of one sweep share its
    scramblings: they are correlated from point to point, and a smooth tilt of the curve across
    the window moves the end most (measured: two families of 12 scramblings of 2^15 points at
    0.73-0.78 differ by such a tilt, +0.0011 at 0.78 to -0.0011 at 0.74, each point within its
    error, their ends 1.8 independent-fit errors apart).

    Parameters
    ----------
    alpha, theta, theta_err : array_like, shape ``(P,)``
        Points on the branch near its end (non-finite ones, ``theta <= 0`` and errors ``<= 0`` are
        left out), with the error bars of the solver (``+-1.96 err`` a 95% interval).

    Returns
    -------
    dict of float
        ``alpha_end``, ``err`` (on the same scale as ``theta_err``), ``err_fit`` and
        ``err_coherent`` (the two parts), ``slope`` (``a``), ``chi2``, ``dof`` and ``n`` (points
        used); NaN values where fewer than two points remain or the slope is not positive.
    """
    a, t, e = (np.asarray(v, dtype=float).ravel() for v in (alpha, theta, theta_err))
    ok = np.isfinite(a) & np.isfinite(t) & np.isfinite(e) & (t > 0) & (e > 0)
    a, t, e = a[ok], t[ok], e[ok]
    nan = float("nan")
    out = dict(alpha_end=nan, err=nan, err_fit=nan, err_coherent=nan, slope=nan, chi2=nan,
               dof=float(max(0, a.size - 2)), n=float(a.size))
    if a.size < 2 or np.ptp(a) <= 0:
        return out
    sy = 2 * t * e
    f = _line_end(a, t ** 2, sy)
    if not f["slope"] > 0:
        return out
    dof = a.size - 2
    e_fit = math.sqrt(f["var"] * max(1.0, f["chi2"] / dof if dof else 1.0))
    direction = np.sign(f["dend_dy"]) * e  # moves every theta^2 the way that raises the end
    ends = [_line_end(a, np.clip(t + s_ * direction, 0, None) ** 2, sy)["end"]
            for s_ in (-1, 1)]
    e_coh = 0.5 * abs(ends[1] - ends[0])
    out.update(alpha_end=f["end"], err=max(e_fit, e_coh), err_fit=e_fit, err_coherent=e_coh,
               slope=f["slope"], chi2=f["chi2"])
    return out


def combine_branch_ends(ends: Any, errs: Any, *, z: float = 1.959963984540054) -> Estimate:
    """The fitted ends of independent sweeps (families of scramblings) combined: their
    inverse-variance weighted mean with the interval ``+- z err``, ``err = (sum 1/err_r^2)^(-1/2)``
    scaled up by the Birge ratio ``sqrt(chi2 / (R - 1))`` where the sweeps disagree by more than
    their errors.

    The sweeps differ in how many points converge (a point near the end converges only where two
    rules agree), so their errors differ many-fold: at ``quick`` (two sweeps of 2^14 points) one
    sweep's error was 0.002 and the other's up to 0.08 at some seeds. A plain mean gives the poor
    sweep half the weight and an interval dominated by its error (widths 0.007 to 0.111 over five
    seeds); the weighted mean gives each sweep the weight its own error says it deserves.

    Parameters
    ----------
    ends, errs : array_like, shape ``(R,)``
        :func:`fit_branch_end`'s ``alpha_end`` and ``err`` per sweep (NaN ones are left out).
    z : float
        The interval's half-width in errors (1.96: 95%).

    Returns
    -------
    Estimate
        Kind ``"quadrature"``, ``n`` the sweeps used (``n_dropped`` those without a fit); NaN when
        no sweep fitted.
    """
    a, e = np.asarray(ends, dtype=float).ravel(), np.asarray(errs, dtype=float).ravel()
    ok = np.isfinite(a) & np.isfinite(e) & (e > 0)
    R = int(ok.sum())
    if R == 0:
        return Estimate.nan("quadrature", 0)
    a, e = a[ok], e[ok]
    w = 1.0 / e ** 2
    mean = float(np.sum(w * a) / np.sum(w))
    err = float(1.0 / math.sqrt(np.sum(w)))
    if R > 1:
        chi2 = float(np.sum(w * (a - mean) ** 2))
        err *= math.sqrt(max(1.0, chi2 / (R - 1)))
    dropped = int((~ok).sum())
    return Estimate(mean, mean - z * err, mean + z * err, "quadrature", 0.95, None, R, dropped,
                    f"{dropped} sweep(s) with fewer than two converged points" if dropped else "")


#: what one sweep of :func:`branch_end_sweep` returns, one array per name
SWEEP_KEYS = ("alpha", "theta", "theta_err", "outcome", "log2_points", "suppressed_derivative",
              "seconds")


def branch_end_sweep(alphas: Any, replicate: int, *, omega: float, log2_points: int,
                     n_scramblings: int = 12, seed: int = 0, sigma: float = 0.5,
                     lam: float = 0.01, A: Any = DEFAULT_A,
                     init: Mapping[str, float] | None = None,
                     max_updates: int = 150) -> dict[str, np.ndarray]:
    """One sweep of :func:`branch_end_fit`: :func:`stumplib.phase.state_evolution` down
    ``alphas`` (decreasing) with ``n_scramblings`` scramblings of ``2**(log2_points - 1)`` and
    ``2**log2_points`` points and the scrambling family ``seed + 1000 (replicate + 1)``.

    The unit of work of ``scripts/phase_branch_end.py`` (one task a replicate): a recorded sweep
    and this function with the same arguments give the same arrays.

    Parameters
    ----------
    alphas : array_like, shape ``(P,)``
        The sample ratios, solved in decreasing order (each point starts from the previous one).
    replicate : int
        The sweep's index ``r`` (its scrambling family ``seed + 1000 (r + 1)``).
    omega : float
        The positional share.
    log2_points : int
        The finer rule's points per scrambling (base-2 logarithm).
    n_scramblings : int
        Scramblings per rule.
    seed : int
        The chapter's seed.
    sigma, lam, A : the model.
    init : mapping, optional
        Start of the first point (``q, m, V, theta``).
    max_updates : int
        The solver's cap on updates per solve.

    Returns
    -------
    dict
        The arrays :data:`SWEEP_KEYS`, shape ``(P,)`` (``outcome`` as str).
    """
    from stumplib.phase.setting import check_model
    from stumplib.phase.solver import SolverOptions, state_evolution

    alphas = sorted(map(float, alphas), reverse=True)
    start = None if init is None else {k: float(init[k]) for k in ("q", "m", "V", "theta")}
    res = state_evolution(alphas, seed=int(seed) + 1000 * (int(replicate) + 1), init=start,
                          on_accuracy="undecided",
                          model=check_model(omega=omega, sigma=sigma, lam=lam, A=A),
                          options=SolverOptions(rtol=0.05, n_scramblings=n_scramblings,
                                                min_log2_points=log2_points - 1,
                                                max_log2_points=log2_points,
                                                max_updates=max_updates))
    out = {k: np.atleast_1d(np.asarray(res[k])) for k in SWEEP_KEYS}
    out["outcome"] = out["outcome"].astype(str)
    return out


def branch_end_fit(alphas: Any, *, omega: float, log2_points: int, n_scramblings: int = 12,
                   replicates: int = 2, seed: int = 0, sigma: float = 0.5, lam: float = 0.01,
                   A: Any = DEFAULT_A, init: Mapping[str, float] | None = None,
                   max_updates: int = 150, cache: bool = True,
                   recorded: Any = None) -> dict[str, Any]:
    """Where the semantic branch ends, fitted (:func:`fit_branch_end`) on ``replicates`` sweeps
    down ``alphas`` with independent families of scramblings, combined
    (:func:`combine_branch_ends`).

    Each sweep is :func:`branch_end_sweep` (the solver with ``n_scramblings`` scramblings of
    ``2**(log2_points - 1)`` and ``2**log2_points`` points; a loose accuracy target on the test
    error: a point near the end is converged only where the two rules agree, the solver's rule for
    delicate points) with the scrambling family ``seed + 1000 (r + 1)`` for sweep ``r`` (distinct
    from the chapter's own solves and from other seeds' sweeps).

    Parameters
    ----------
    alphas : array_like, shape ``(P,)``
        The sample ratios just above the end (e.g. 0.72 to 0.80 at omega = 0.3).
    omega : float
        The positional share.
    log2_points : int
        The finer rule's points per scrambling (base-2 logarithm, 7 to 18).
    n_scramblings : int
        Scramblings per sweep.
    replicates : int
        Independent sweeps.
    seed : int
        The chapter's seed (below 1000).
    sigma, lam, A : the model.
    init : mapping, optional
        Start of each sweep's first point (``q, m, V, theta``).
    max_updates : int
        The solver's cap on updates per solve.
    cache : bool
        Keep the sweeps with :func:`stumplib.core.memo.remember`.
    recorded : sequence of dict, optional
        The sweeps already computed with exactly these arguments (a recorded run of
        ``scripts/phase_branch_end.py``, read by :func:`stumplib.book.runs.read_branch_end`),
        ``replicates`` of them, in order: then nothing is solved here.

    Returns
    -------
    dict
        ``estimate`` (:class:`~stumplib.core.stats.Estimate` of ``alpha_end``), ``fits`` (one
        :func:`fit_branch_end` dict per sweep) and ``sweeps``: per sweep the arrays ``alpha``,
        ``theta``, ``theta_err``, ``outcome``, ``log2_points``, ``suppressed_derivative`` and
        ``seconds``.
    """
    if not 0 <= int(seed) < 1000:
        raise ValueError(f"seed must be in [0, 1000); got {seed}")
    if int(replicates) < 1:
        raise ValueError(f"replicates must be at least 1; got {replicates}")
    alphas = sorted(map(float, alphas), reverse=True)
    start = None if init is None else {k: float(init[k]) for k in ("q", "m", "V", "theta")}
    kw = dict(omega=omega, log2_points=int(log2_points), n_scramblings=int(n_scramblings),
              seed=int(seed), sigma=sigma, lam=lam, A=A, init=start,
              max_updates=int(max_updates))

    if recorded is not None:
        if len(recorded) != int(replicates):
            raise ValueError(f"recorded: {int(replicates)} sweeps expected; got {len(recorded)}")
        sweeps = [dict(sw) for sw in recorded]
    else:
        sweeps = []
        for r in range(int(replicates)):
            if cache:
                from stumplib.core.memo import remember

                cfg = dict(alphas=alphas, omega=omega, log2_points=int(log2_points),
                           n_scramblings=int(n_scramblings), seed=int(seed), replicate=r,
                           sigma=sigma, lam=lam, A=np.asarray(A).tolist(), init=start,
                           max_updates=int(max_updates))
                sweeps.append(remember("branch_end_sweep", cfg,
                                       lambda r=r: branch_end_sweep(alphas, r, **kw)))
            else:
                sweeps.append(branch_end_sweep(alphas, r, **kw))
    fits = []
    for sw in sweeps:
        conv = np.asarray(sw["outcome"]) == "converged"
        fits.append(fit_branch_end(np.asarray(sw["alpha"])[conv], np.asarray(sw["theta"])[conv],
                                   np.asarray(sw["theta_err"])[conv]))
    est = combine_branch_ends([f["alpha_end"] for f in fits], [f["err"] for f in fits])
    return dict(estimate=est, fits=fits, sweeps=sweeps)
