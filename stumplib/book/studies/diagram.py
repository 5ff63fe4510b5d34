"""The phase diagram over (alpha, omega): alpha_c(omega) and alpha_l(omega) located by bracketing.

At each ``omega`` both branches of the state evolution are solved with the accuracy-controlled
solver (:func:`stumplib.phase.state_evolution`) on a coarse grid of ``alpha``; each crossing

- ``alpha_c``: the semantic training loss passes below the positional one,
- ``alpha_l``: the semantic test error passes below the linear positional baseline's,

is bracketed on that grid and refined by regula falsi (Illinois) inside its bracket, each new
``alpha`` solved for both branches from the nearest solved point. The crossing's interval comes
from the crossings of the curves shifted by three quadrature errors
(:func:`.crossings.crossing_estimate`). A crossing that does not exist in the grid's range is
reported as NaN with a named outcome (:data:`CROSSING_OUTCOMES`).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from stumplib.core.stats import Estimate
from stumplib.core.validation import check_int, check_real
from stumplib.phase.crossings import crossing_estimate
from stumplib.phase.setting import DEFAULT_A, check_model

#: named outcomes of a crossing: found; the curve stays above 0 (the crossing lies above the grid);
#: stays below 0 (below the grid or the branch's end); fewer than two points with both branches
CROSSING_OUTCOMES = ("found", "above_range", "below_range", "no_points")

POINT_KEYS = ("q", "m", "V", "theta", "test_error", "train_loss")


def diagram_key(omega: float) -> str:
    """The glue suffix of ``omega``.

    Parameters
    ----------
    omega : float
        The positional share.

    Returns
    -------
    str
        ``"w030"`` for 0.3 (``round(100 omega)``, three digits).
    """
    return f"w{int(round(100 * omega)):03d}"


def bracket_crossing(fn: Callable[[float], tuple[float, float]], grid: Sequence[float], *,
                     xtol: float = 0.01, max_refine: int = 4, nsig: float = 3.0
                     ) -> tuple[Estimate, str, np.ndarray, np.ndarray, np.ndarray]:
    """Where ``y(x)`` passes from ``>= 0`` to ``< 0`` as ``x`` grows (the last such crossing),
    bracketed on ``grid`` and refined by the Illinois regula falsi.

    Parameters
    ----------
    fn : ``x -> (y, err)``; NaN ``y`` where the curve is not available (a branch not converged).
        Called on ``grid`` from the largest ``x`` down until the first point at or above 0 (which,
        with the point above it, brackets the last crossing), then inside the bracket.
    grid : at least two distinct values.
    xtol : stop refining when the bracket is narrower.
    max_refine : at most this many refinement evaluations.
    nsig : interval from ``y -+ nsig err``.

    Returns
    -------
    (estimate, outcome, x, y, err): the crossing (:func:`.crossings.crossing_estimate` on every
    available point; NaN unless ``outcome == "found"``), one of :data:`CROSSING_OUTCOMES`, and the
    points evaluated (sorted by ``x``).
    """
    xtol = check_real("xtol", xtol, low=0.0, low_open=True)
    max_refine = check_int("max_refine", max_refine, minimum=0)
    grid_ = sorted({float(v) for v in grid}, reverse=True)
    if len(grid_) < 2:
        raise ValueError("grid must hold at least two distinct values")
    pts: dict[float, tuple[float, float]] = {}
    for x in grid_:  # scanning down, the first point at or above 0 closes the last crossing
        pts[x] = tuple(float(v) for v in fn(x))
        if np.isfinite(pts[x][0]) and pts[x][0] >= 0:
            break

    def arrays():
        xs = np.array(sorted(pts))
        ys = np.array([pts[x][0] for x in xs])
        es = np.array([pts[x][1] for x in xs])
        ok = np.isfinite(ys)
        return xs[ok], ys[ok], np.where(np.isfinite(es[ok]), es[ok], 0.0)

    side = 0  # Illinois: halve the weight of an end kept twice in a row
    for _ in range(max_refine):
        xs, ys, _e = arrays()
        if xs.size < 2 or ys[-1] >= 0 or np.all(ys < 0):
            break
        k = int(np.flatnonzero(ys >= 0)[-1])  # last point at or above 0; k + 1 is below
        (a, fa), (b, fb) = (xs[k], ys[k]), (xs[k + 1], ys[k + 1])
        if b - a <= xtol:
            break
        wa, wb = (0.5 if side == -1 else 1.0), (0.5 if side == 1 else 1.0)
        x = float(np.clip((a * wb * -fb + b * wa * fa) / (wa * fa - wb * fb), a + 0.1 * (b - a),
                          b - 0.1 * (b - a)))
        pts[x] = tuple(float(v) for v in fn(x))
        side = 1 if np.isfinite(pts[x][0]) and pts[x][0] >= 0 else -1
    xs, ys, es = arrays()
    nan = Estimate.nan("quadrature")
    if xs.size == 0:
        return nan, "no_points", xs, ys, es
    if ys[-1] >= 0:
        return nan, "above_range", xs, ys, es
    if np.all(ys < 0):
        return nan, "below_range", xs, ys, es
    return crossing_estimate(xs, ys, es, direction="down", nsig=nsig), "found", xs, ys, es


class BranchPoints:
    """Both branches at one ``omega``, solved on demand at any ``alpha`` and kept.

    Each new ``alpha`` of a branch starts from that branch's converged point nearest in ``alpha``.

    Parameters
    ----------
    omega : float
        The positional share.
    rtol : float
        The solver's accuracy target.
    sigma, lam : float
        The tokens' standard deviation and the regularisation.
    A : array_like, shape ``(2, 2)``
        The positional attention matrix.
    seed : int
        The solver's seed.
    **solver
        Passed to :func:`stumplib.phase.solver.state_evolution`.
    """

    def __init__(self, omega: float, *, rtol: float, sigma: float = 0.5, lam: float = 0.01,
                 A: Any = DEFAULT_A, seed: int = 0, **solver: Any) -> None:
        from stumplib.phase.positional_baseline import linear_baseline_test_error
        from stumplib.phase.solver import solver_keywords

        self.omega, self.sigma, self.lam, self.A = omega, sigma, lam, A
        self.kw = solver_keywords(dict(rtol=rtol, seed=seed, on_accuracy="undecided", **solver))
        self.points: dict[str, dict[float, dict[str, Any]]] = {"semantic": {}, "positional": {}}
        model = check_model(omega=omega, sigma=sigma, A=A)
        self.baseline = float(linear_baseline_test_error(model))

    def _init(self, branch: str, alpha: float) -> dict[str, float] | None:
        done = {a: p for a, p in self.points[branch].items() if p["outcome"] == "converged"}
        if not done:
            return None
        a0 = min(done, key=lambda a: abs(a - alpha))
        return {k: float(done[a0][k]) for k in ("q", "m", "V", "theta")}

    def get(self, branch: str, alpha: float) -> dict[str, Any]:
        """The solver's result (scalars) for ``branch`` at ``alpha``, solved on first request.

        Parameters
        ----------
        branch : str
            ``"semantic"`` or ``"positional"``.
        alpha : float
            The sample ratio.

        Returns
        -------
        dict
        """
        from stumplib.phase.solver import state_evolution

        if alpha not in self.points[branch]:
            model = check_model(omega=self.omega, sigma=self.sigma, lam=self.lam, A=self.A,
                                branch=branch)
            r = state_evolution(alpha, model=model, init=self._init(branch, alpha), **self.kw)
            self.points[branch][alpha] = {
                k: (v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v)
                for k, v in r.items()}
        return self.points[branch][alpha]

    def loss_gap(self, alpha: float) -> tuple[float, float]:
        """Training loss (per d), semantic minus positional, and its quadrature error.

        Parameters
        ----------
        alpha : float
            The sample ratio.

        Returns
        -------
        (gap, err) : tuple of float
        """
        s, p = self.get("semantic", alpha), self.get("positional", alpha)
        if s["outcome"] != "converged" or p["outcome"] != "converged":
            return float("nan"), float("nan")
        return (s["train_loss"] - p["train_loss"],
                float(np.hypot(s["train_loss_err"], p["train_loss_err"])))

    def test_gap(self, alpha: float) -> tuple[float, float]:
        """Semantic test error minus the linear baseline's, and its quadrature error.

        Parameters
        ----------
        alpha : float
            The sample ratio.

        Returns
        -------
        (gap, err) : tuple of float
        """
        s = self.get("semantic", alpha)
        if s["outcome"] != "converged":
            return float("nan"), float("nan")
        return s["test_error"] - self.baseline, float(s["test_error_err"])

    def table(self, branch: str, alphas: Sequence[float]) -> dict[str, np.ndarray]:
        """The points of ``branch`` at ``alphas`` as arrays.

        Parameters
        ----------
        branch : str
            ``"semantic"`` or ``"positional"``.
        alphas : sequence of float
            The sample ratios.

        Returns
        -------
        dict of np.ndarray, each of shape ``(len(alphas),)``
            NaN and outcome ``"not_solved"`` where it was not solved.
        """
        nan = {k: np.nan for k in (*POINT_KEYS, *(f"{k}_err" for k in POINT_KEYS),
                                   "suppressed_derivative", "seconds", "log2_points")}
        P = [self.points[branch].get(a, dict(nan, unstable=False, outcome="not_solved"))
             for a in alphas]
        out = {}
        for k in (*POINT_KEYS, *(f"{k}_err" for k in POINT_KEYS), "suppressed_derivative",
                  "seconds", "log2_points"):
            out[k] = np.array([p[k] for p in P], dtype=float)
        out["unstable"] = np.array([bool(p["unstable"]) for p in P])
        out["outcome"] = np.array([str(p["outcome"]) for p in P])
        return out


def phase_diagram(omegas: Sequence[float], grid: Sequence[float], *,
                  rtol: float | Mapping[float, float] = 5e-3,
                  extra: Mapping[float, Sequence[float]] | None = None,
                  max_log2_points: int | Mapping[float, int] = 14, xtol: float = 0.01,
                  max_refine: int = 4, sigma: float = 0.5, lam: float = 0.01,
                  A: Any = DEFAULT_A, seed: int = 0, cache: bool = True,
                  **solver: Any) -> dict[str, np.ndarray]:
    """alpha_c(omega) and alpha_l(omega), each located by bracketing and refinement.

    Parameters
    ----------
    omegas : sequence of float
        Positional shares, each in [0, 0.95].
    grid : sequence of float
        The coarse ``alpha`` grid (>= 2 values).
    rtol : float or dict
        The solver's accuracy target, or ``{omega: rtol}`` (missing omegas: 5e-3).
    max_log2_points : int or dict
        The solver's largest rule (points per scrambling ``2**p``), or ``{omega: p}`` (missing
        omegas: 14).
    extra : dict, optional
        ``{omega: alphas}`` solved besides the grid (for example the points of a comparison).
    xtol, max_refine
        Refinement of each crossing (:func:`bracket_crossing`).
    sigma, lam, A, seed
        The model and the solver's seed.
    cache : bool
        Keep the result with :func:`stumplib.core.memo.remember` (no log).
    **solver
        Passed to :func:`stumplib.phase.solver.state_evolution` (``max_log2_points``, ...).

    Returns
    -------
    dict
        Arrays. Per omega (axis ``W``): ``omega``, ``baseline``, ``seconds``, and for ``c`` in
        ``alpha_c, alpha_l``: ``c``, ``c_lo``, ``c_hi``, ``c_outcome``. Per solved point (axis
        ``P``, ``pt_w`` the omega index): ``pt_w``, ``pt_alpha`` and, for ``b`` in ``sem, pos``,
        ``b_<key>`` with its ``_err`` for the overlaps, test error and training loss,
        ``b_outcome``, ``b_suppressed_derivative``, ``b_unstable``, ``b_seconds`` and
        ``b_log2_points`` (the level the point was decided at; NaN where not solved).
    """
    om = [check_real(f"omegas[{i}]", w, low=0.0, high=0.95) for i, w in enumerate(omegas)]
    grid_ = [check_real(f"grid[{i}]", a, low=0.05, high=20.0) for i, a in enumerate(grid)]
    rt = {w: (rtol.get(w, 5e-3) if isinstance(rtol, Mapping) else rtol) for w in om}
    ex = {w: list((extra or {}).get(w, ())) for w in om}
    ml = {w: (max_log2_points.get(w, 14) if isinstance(max_log2_points, Mapping)
              else max_log2_points)
          for w in om}
    cfg = dict(omegas=om, grid=grid_, rtol=[rt[w] for w in om], extra=[ex[w] for w in om],
               max_log2=[ml[w] for w in om], xtol=xtol,
               max_refine=max_refine, sigma=sigma, lam=lam, A=np.asarray(A).tolist(), seed=seed,
               **solver)

    def compute() -> dict[str, np.ndarray]:
        return _diagram(om, grid_, rt, ex, ml, xtol=xtol, max_refine=max_refine, sigma=sigma,
                        lam=lam, A=A, seed=seed, **solver)

    if not cache:
        return compute()
    from stumplib.core.memo import remember

    return remember("phase_diagram", cfg, compute)


def _diagram(om, grid, rt, ex, ml, *, xtol, max_refine, sigma, lam, A, seed,
             **solver) -> dict[str, np.ndarray]:
    rows: dict[str, list] = {}
    pts: dict[str, list] = {}
    for i, w in enumerate(om):
        t0 = time.time()
        bp = BranchPoints(w, rtol=rt[w], sigma=sigma, lam=lam, A=A, seed=seed,
                          max_log2_points=ml[w], **solver)
        for name, fn in (("alpha_c", bp.loss_gap), ("alpha_l", bp.test_gap)):
            est, outcome, *_ = bracket_crossing(fn, grid, xtol=xtol, max_refine=max_refine)
            for k, v in ((name, est.value), (f"{name}_lo", est.lo), (f"{name}_hi", est.hi),
                         (f"{name}_outcome", outcome)):
                rows.setdefault(k, []).append(v)
        for a in sorted(ex[w], reverse=True):  # comparison points: both branches
            bp.get("semantic", a)
            bp.get("positional", a)
        for k, v in (("omega", w), ("baseline", bp.baseline), ("seconds", time.time() - t0)):
            rows.setdefault(k, []).append(v)
        al = sorted(set(bp.points["semantic"]) | set(bp.points["positional"]))
        for key, br in (("sem", "semantic"), ("pos", "positional")):
            for k, v in bp.table(br, al).items():
                pts.setdefault(f"{key}_{k}", []).append(v)
        pts.setdefault("pt_alpha", []).append(np.asarray(al, dtype=float))
        pts.setdefault("pt_w", []).append(np.full(len(al), i))
    out = {k: np.asarray(v) for k, v in rows.items()}
    out.update({k: np.concatenate(v) for k, v in pts.items()})
    return out


def crossing(diag: Mapping[str, np.ndarray], name: str, i: int) -> Estimate:
    """The crossing ``name`` at the ``i``-th omega as an Estimate.

    Parameters
    ----------
    diag : mapping
        :func:`phase_diagram`'s result.
    name : str
        ``"alpha_c"`` or ``"alpha_l"``.
    i : int
        The omega's index.

    Returns
    -------
    Estimate
    """
    return Estimate(float(diag[name][i]), float(diag[f"{name}_lo"][i]),
                    float(diag[f"{name}_hi"][i]), "quadrature", float("nan"))


def omega_curves(diag: Mapping[str, np.ndarray], omega: float) -> dict[str, np.ndarray]:
    """The solved points at one omega in the layout of :func:`.curves.accurate_curves`.

    Parameters
    ----------
    diag : mapping
        :func:`phase_diagram`'s result.
    omega : float
        One of its omegas.

    Returns
    -------
    dict of np.ndarray
        ``sem_alpha``, ``sem_test_error``, ``pos_outcome``, ..., ``baseline``.
    """
    i = int(np.argmin(np.abs(np.asarray(diag["omega"]) - omega)))
    sel = np.asarray(diag["pt_w"]) == i
    out = {f"{b}_alpha": np.asarray(diag["pt_alpha"])[sel] for b in ("sem", "pos")}
    for k, v in diag.items():
        if k.startswith(("sem_", "pos_")):
            out[k] = np.asarray(v)[sel]
    out["baseline"] = np.asarray(diag["baseline"][i])
    return out
