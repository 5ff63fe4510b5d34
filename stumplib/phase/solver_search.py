"""One ``alpha`` of :func:`.solver.state_evolution`: the search over numbers of points until the
point's outcome is decided, with the delta-method error of each accepted fixed point.

:func:`solve_point` solves the pooled rule's fixed point (:func:`.solver_fixed_point.solve_pooled`)
at rising numbers of points ``2**p`` per scrambling. At each level the accepted fixed point's
quadrature error comes from the delta method: scrambling ``k``'s residual at the pooled fixed
point, propagated through ``(I - J)^{-1}``, is the offset of its own fixed point, and one more
Newton step on its map adds the second-order terms; the spread of these ``K`` fixed points
(standard error scaled to Student's ``t_{K-1}``) combined with the pooled fixed point's bias
estimate is the reported error. Then the point is classified (:class:`Outcome`) or the search goes
on at the level that should meet the target (the error falls about as ``1 / N``); near a branch's
end a delicate point must agree between two levels, and a point is declared without a fixed point
only at the level of the sweep's last converged point or a finer one. :class:`Sweep` carries what continuation needs
from one ``alpha`` to the next (the last points, Jacobian, minimisers and level);
:class:`SolveSetup` holds one call's validated arguments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from stumplib.phase.replica import initial_point
from stumplib.phase.setting import PhaseModel, StateEvolutionError
from stumplib.phase.solver_fixed_point import (admissible, constrain, jacobian_pass,
                                               predict_start, solve_pooled)
from stumplib.phase.solver_qmc import nested_values, pooled_nodes, pooled_update

_DELICATE = 0.01  # relative error of the order parameter above which two levels must agree
_ORDER_RTOL = 0.1  # largest relative error of the order parameter of a delicate point
_LEVEL_NSIG = 3.0  # how many combined errors two levels may differ by
_Z95 = 1.959963984540054  # the 0.975 quantile of the standard normal


class Outcome:
    """Names of the three outcomes of :func:`.solver.state_evolution` (plain strings)."""
    CONVERGED = "converged"
    NO_FIXED_POINT = "no_fixed_point"
    UNDECIDED = "undecided"
    ALL = (CONVERGED, NO_FIXED_POINT, UNDECIDED)


class AccuracyNotReached(StateEvolutionError):
    """A fixed point was found on every scrambling but its quadrature error stays above the target
    at the largest number of points allowed."""


@dataclass(eq=False)
class SolveSetup:
    """The validated arguments of one :func:`.solver.state_evolution` call and what follows from
    them.

    Attributes
    ----------
    model : PhaseModel
        The model and branch (:func:`.setting.check_model`).
    K : int
        Number of scramblings.
    pmin, pmax : int
        Smallest and largest level (base-2 logarithm of the points per scrambling).
    seed : int
        The family of scramblings.
    rtol : float
        The accuracy target of the test error (relative).
    continuation : bool
        Start each point from the sweep's previous points.
    stability : bool
        Compute the suppressed direction's derivative (where a symmetry is imposed).
    max_updates : int
        Cap on the map evaluations of one fixed-point solve.
    on_accuracy : str
        ``"raise"`` or ``"undecided"`` for a point that misses the target at ``pmax``.
    """
    model: PhaseModel
    K: int
    pmin: int
    pmax: int
    seed: int
    rtol: float
    continuation: bool
    stability: bool  # compute the suppressed direction's derivative (where a symmetry is imposed)
    max_updates: int
    on_accuracy: str

    @property
    def branch(self) -> str:
        """The branch, ``"semantic"`` or ``"positional"``."""
        return self.model.branch

    @property
    def rho(self) -> float:
        """``sigma**2``."""
        return self.model.rho

    @cached_property
    def free(self) -> np.ndarray:
        """The overlaps that are solved for (``m`` is held at 0 on a swap-symmetric semantic branch,
        ``theta`` on the positional one)."""
        sem = self.branch == "semantic"
        return np.array([True, not (sem and self.model.swap_symmetric), True, sem])

    @property
    def order_par(self) -> int:
        """Index of the branch's order parameter (semantic: ``theta``; positional: ``m``)."""
        return 3 if self.branch == "semantic" else 1

    @property
    def order_name(self) -> str:
        """The order parameter's name (semantic: ``"theta"``; positional: ``"m"``)."""
        return "theta" if self.branch == "semantic" else "m"

    @cached_property
    def kw(self) -> dict:
        """The model as the update's keywords: ``omega``, ``sigma``, ``lam``, ``A``."""
        return dict(omega=self.model.omega, sigma=self.model.sigma, lam=self.model.lam,
                    A=self.model.A)

    @property
    def ftol(self) -> float:
        """Fixed-point residual: 1% of the accuracy target (at most 1e-5)."""
        return min(1e-5, self.rtol * 1e-2)

    @cached_property
    def tq(self) -> float:
        """The t quantile of a 95% interval of a mean over ``K`` scramblings."""
        from scipy.stats import t as student_t
        return float(student_t.ppf(0.975, self.K - 1))


@dataclass(eq=False)
class Sweep:
    """What a sweep in ``alpha`` carries from one point to the next (continuation).

    Attributes
    ----------
    p_next : int
        Level (base-2 logarithm of the points per scrambling) for the next point.
    hist : list
        Converged points ``(alpha, z, J, level, (averages, vstar))``.
    rel_hist : list
        ``(level, relative error)`` of the converged points.
    jac_prev : numpy.ndarray or None
        The last Jacobian computed.
    prox_prev : numpy.ndarray or None
        The last accepted proximal minimisers, at level ``p_prox``.
    p_prox : int or None
        Their level.
    alt_store : tuple or None
        ``(level, minimisers the other default starts reached, alpha index)``.
    p_converged : int or None
        Level of the last converged point of the sweep (or of the converged point ``init`` came
        from): a point is declared without a fixed point only at this level or a finer one (a
        coarser rule leaves the branch where a finer one stays on it near the branch's end).
    """
    p_next: int  # number of points (log2, per scrambling) for the next point
    hist: list = field(default_factory=list)  # converged (alpha, z, J, level, (averages, vstar))
    rel_hist: list = field(default_factory=list)  # (level, relative error) of converged points
    jac_prev: np.ndarray | None = None  # the last Jacobian computed
    prox_prev: np.ndarray | None = None  # the last accepted proximal minimisers and their level
    p_prox: int | None = None
    # (level, minimisers the other default starts reached, alpha index)
    alt_store: tuple | None = None
    # level of the last converged point (or of ``init``'s): "no fixed point" needs at least it
    p_converged: int | None = None

    def start(self, a: float, init: dict[str, Any] | None, s: SolveSetup) -> "_Search":
        """The search at ``alpha = a``: predicted from the sweep's last points (continuation), else
        from ``init`` or the branch's default start, at the smallest number of points.

        Parameters
        ----------
        a : float
            The sample ratio.
        init : dict or None
            Initial ``q, m, V, theta`` (used without continuation history).
        s : SolveSetup
            The call's arguments.

        Returns
        -------
        _Search
            The point's search state.
        """
        if self.hist and s.continuation:
            z0, jac = predict_start(a, self.hist, self.p_next, s.branch, s.free, s.rho, s.model.lam)
            jac = self.jac_prev if jac is None else jac
            p = self.p_next
        else:
            if init is not None:
                z0 = np.array([float(init[k]) for k in ("q", "m", "V", "theta")])
            else:
                z0 = np.array([v[0] for v in initial_point(np.array([a]), s.branch, s.model.sigma)])
            p, jac = s.pmin, None
        if not s.continuation:
            self.alt_store = None
        # verify the global minimisers at the first level at once for a point of a sweep (the
        # neighbour's number of points is expected to suffice), after a first estimate otherwise
        return _Search(p=p, z0=z0, jac=jac, final=bool(self.hist) and s.continuation)

    def record(self, a: float, pt: "Point", s: SolveSetup) -> None:
        """After a converged point: remember it for the predictor, and choose the next point's
        number of points (this one's, fewer if the target was met with a wide margin, error about
        ``1 / N``; one more level at once if the error, growing along the sweep as over the last
        two points at this level, would miss the target there).

        Parameters
        ----------
        a : float
            The sample ratio.
        pt : Point
            Its converged answer.
        s : SolveSetup
            The call's arguments.
        """
        lv, p, rtol = pt.level, pt.p, s.rtol
        ev = lv.r["ev"]
        self.hist.append((a, pt.mean[:4].copy(), lv.J, p,
                          (ev["avg"][0], ev["vstar"][0]) if ev is not None else None))
        rel = lv.rel
        p_next = (max(s.pmin, p - max(0, math.floor(math.log2(rtol / (1.2 * rel)))))
                  if rel > 0 else p)
        if self.rel_hist and self.rel_hist[-1][0] == p and rel > 0 and p_next == p < s.pmax:
            grow = min(4.0, max(1.0, rel / self.rel_hist[-1][1]))
            if rel * grow > rtol / 1.2:
                p_next = p + 1
        self.p_next = p_next
        self.p_converged = p
        self.rel_hist.append((p, rel))


@dataclass(eq=False)
class _Level:
    """The pooled rule's accepted fixed point at one number of points, with its delta-method
    error."""
    r: dict  # :func:`.solver_fixed_point.solve_pooled`'s result
    local: bool  # minimisers followed, not yet verified global
    z: np.ndarray
    J: np.ndarray  # Jacobian of the update on the free overlaps
    lam_max: float  # its largest real eigenvalue
    mean: np.ndarray  # (6,): q, m, V, theta, test error, train loss
    err: np.ndarray  # (6,) their quadrature errors
    deriv: tuple | None  # derivative along the suppressed direction and its standard error
    rel: float  # relative error of the test error
    why_unbounded: str = ""  # why ``err`` is infinite where it is (empty: it is finite)


@dataclass(eq=False)
class Point:
    """One ``alpha``'s answer: the outcome, its sentence, the values and errors, the level reached.

    Attributes
    ----------
    outcome : str
        One of :class:`Outcome`.
    reason : str
        The sentence that explains it.
    mean, err : numpy.ndarray, shape ``(6,)``
        ``q, m, V, theta``, the test error and the train loss, and their quadrature errors.
    p : int
        The level reached (base-2 logarithm of the points per scrambling).
    n_up : int
        Map evaluations spent.
    level : object or None
        The last level with an accepted fixed point (its Jacobian eigenvalue ``lam_max``, the
        suppressed derivative ``deriv``, ...; None: none).
    """
    outcome: str
    reason: str
    mean: np.ndarray
    err: np.ndarray
    p: int
    n_up: int
    level: _Level | None = None  # the last level with an accepted fixed point (None: none)


@dataclass(eq=False)
class _Search:
    """One ``alpha``'s search over the number of points ``2**p`` per scrambling."""
    p: int
    z0: np.ndarray  # start of the next solve
    jac: np.ndarray | None  # its Jacobian
    final: bool  # the next solve verifies the global minimisers at once
    n_up: int = 0  # map evaluations so far
    prox_cur: np.ndarray | None = None  # this point's proximal minimisers and their level
    p_cur: int | None = None
    rel_prev: tuple | None = None  # (relative error, level) at the last level left for a finer one
    level_hist: list = field(default_factory=list)  # (level, values, errors) of a delicate point
    unsettled: int = 0  # levels at which the iteration did not settle
    recheck: bool = False  # the next solve starts at a point converged with followed minimisers

    def jump(self, rel: float, s: SolveSetup) -> int:
        """The number of points that should meet the target (the error falls about as ``1 / N``,
        measured ``N^-0.9`` to ``N^-1.1``; the estimate from ``K`` scramblings is noisy, so the
        previous level's enters too)."""
        rp = self.rel_prev
        rel_jump = rel if rp is None else math.sqrt(rel * rp[0] * 2.0 ** (rp[1] - self.p))
        return min(s.pmax, self.p + max(1, math.ceil(math.log2(1.2 * rel_jump / s.rtol))))

    def next_level(self, lv: _Level, p: int, final: bool) -> None:
        """Go on at ``2**p`` points from the level's fixed point and Jacobian."""
        self.rel_prev = (lv.rel, self.p)
        self.p, self.z0, self.jac, self.final = p, lv.z, lv.J, final

    def done(self, outcome: str, reason: str, mean: np.ndarray, err: np.ndarray,
             level: _Level | None = None) -> Point:
        return Point(outcome, reason, mean, err, self.p, self.n_up, level)


def _pooled_solve(a: float, i: int, st: _Search, sweep: Sweep, s: SolveSetup
                  ) -> tuple[np.ndarray, dict, bool]:
    """The pooled rule's fixed point at the search's level: proximal minimisers carried over from
    this point's last level or the sweep's last point, tracked starts from the sweep. Returns the
    nodes, :func:`.solver_fixed_point.solve_pooled`'s result (status "local" reported as
    "converged") and whether the minimisers were only followed."""
    K, p = s.K, st.p
    nodes = pooled_nodes(p, K, s.seed)
    warm, known = None, None
    src, p_src = (st.prox_cur, st.p_cur) if st.prox_cur is not None else (
        (sweep.prox_prev, sweep.p_prox) if s.continuation else (None, None))
    if src is not None:
        warm, known = nested_values(src, p_src, p, K, 0.0)
    alts = None
    if sweep.alt_store is not None:
        alts, _ = nested_values(sweep.alt_store[1], sweep.alt_store[0], p, K, np.nan)
    r = solve_pooled(a, st.z0, nodes, K, free=s.free, branch=s.branch, kw=s.kw, rho=s.rho,
                     ftol=s.ftol, max_updates=s.max_updates, warm=warm, known=known, jac=st.jac,
                     verify_global=st.final or p >= s.pmax, alts=alts, verify_first=st.recheck)
    st.recheck = False
    if r.get("alts") is not None and (s.continuation or sweep.alt_store is None
                                      or sweep.alt_store[2] == i):
        sweep.alt_store = (p, r["alts"], i)
    st.n_up += r["n_updates"]
    st.final = False
    local = r["status"] == "local"
    if local:
        r["status"] = "converged"
    return nodes, r, local


def _delta_error(a: float, r: dict, nodes: np.ndarray, local: bool, st: _Search,
                 s: SolveSetup) -> _Level:
    """The accepted fixed point's quadrature error by the delta method.

    Scrambling ``k``'s residual at the pooled fixed point, propagated through ``(I - J)^{-1}``, is
    its linearised fixed point's offset (the losses move along with it); then one more Newton step
    on each scrambling's own map (its ``N`` points) from there carries the fixed point's
    second-order bias: scrambling ``k``'s fixed point has the bias ``b / N``, the pooled one
    ``b / (K N)``, so ``(mean_k z_k - z) / (K - 1)`` estimates the latter. The standard error over
    ``K`` scramblings is itself a ``K - 1`` degree-of-freedom estimate: scaled by ``t_{K-1} / z``
    (0.975 quantiles), ``+-1.96 err`` is the 95% interval of Student's t."""
    K, free, branch, rho = s.K, s.free, s.branch, s.rho
    fi = np.flatnonzero(free)
    z, ev = r["z"], r["ev"]
    jp = jacobian_pass(a, z, nodes, K, free=free, branch=branch, kw=s.kw, prox=r["prox"],
                       stability=s.stability and not local)
    st.n_up += jp["n"]
    nf, h = fi.size, jp["h"]
    P0, Pk = ev["pooled"][0], ev["per"][0]  # (6,), (K, 6) at z
    Pj = jp["ev"]["pooled"][:nf]  # (nf, 6) at z + h_j e_j
    D = ((Pj - jp["base"]) / h[:, None]).T  # (6, nf): derivatives of the update and losses
    J = D[fi]  # (nf, nf) Jacobian of F on the free coordinates
    lam_max = float(np.max(np.linalg.eigvals(J).real)) if nf else float("nan")
    mean = np.concatenate([z, P0[4:]])
    vals = np.full((K, 6), np.inf)
    why = ""
    try:
        IJ = np.eye(nf) - J
        dz = np.linalg.solve(IJ, (Pk[:, fi] - z[fi]).T).T  # (K, nf)
        zk = np.repeat(z[None], K, 0)
        zk[:, fi] += dz
        if not all(admissible(zk_, rho) for zk_ in zk):
            why = ("a scrambling's own fixed point (one Newton step from the pooled one) is "
                   "inadmissible")
        else:
            N = nodes.shape[0] // K
            ek = pooled_update(a, zk, nodes.reshape(K, N, 4), 1, s.kw, r["prox"].reshape(K, N, 2),
                               None, restart=False)["pooled"]  # (K, 6): F_k(z_k), losses at z_k
            st.n_up += 1
            dz2 = np.linalg.solve(IJ, (constrain(ek[:, :4], branch, free)[:, fi] - zk[:, fi]).T).T
            vals[:, :4] = zk
            vals[:, fi] += dz2
            vals[:, 4:] = ek[:, 4:] + dz2 @ D[4:].T
    except np.linalg.LinAlgError:
        why = "I - J is singular (the delta method has no solution)"
    se_ = vals.std(0, ddof=1) / math.sqrt(K) * (s.tq / _Z95)
    bias = (vals.mean(0) - mean) / (K - 1)
    err = np.sqrt(se_ ** 2 + bias ** 2)
    err[:4][~free] = 0.0
    deriv = None
    if jp["stab"] is not None:
        eps = jp["eps"]
        up, dn = jp["stab"]["pooled"], jp["stab"]["per"]
        dk = (dn[0] - dn[1]) / (2 * eps)
        deriv = ((up[0] - up[1]) / (2 * eps), dk.std(ddof=1) / math.sqrt(K))
    return _Level(r=r, local=local, z=z, J=J, lam_max=lam_max, mean=mean, err=err, deriv=deriv,
                  rel=err[4] / abs(mean[4]),
                  why_unbounded=why if not np.all(np.isfinite(err)) else "")


def _after_local(lv: _Level, st: _Search, s: SolveSetup) -> None:
    """Minimisers followed from the previous ones, not yet verified global: if the target looks
    met (or nothing else is left), verify at this level; otherwise go up."""
    op = s.order_par
    if (np.all(np.isfinite(lv.err)) and lv.lam_max < 1 and lv.rel > s.rtol and st.p < s.pmax
            and lv.mean[op] - _Z95 * lv.err[op] > 0):
        st.next_level(lv, st.jump(lv.rel, s), final=False)
        return
    st.final = st.recheck = True
    st.z0, st.jac = lv.z, lv.J


def _delicate(lv: _Level, st: _Search, s: SolveSetup) -> Point | np.ndarray | None:
    """A point whose order parameter carries a relative error above ``_DELICATE`` (near a branch's
    end the fixed point of a coarse rule can sit many of its linearised errors away from a finer
    rule's): solved at two levels, it must not move between them by more than their errors, and
    carries the move in its error. Returns the errors with the move added (accepted), None (go on
    at a finer rule; the search is updated) or the undecided point."""
    p, op, mean, err = st.p, s.order_par, lv.mean, lv.err
    other = next((h for h in reversed(st.level_hist) if h[0] != p), None)
    st.level_hist.append((p, mean.copy(), err.copy()))
    moved, err_eff = math.inf, err
    if other is not None:
        shift = np.abs(mean - other[1])
        moved = max(shift[j_] / math.sqrt(err[j_] ** 2 + other[2][j_] ** 2) for j_ in (op, 4))
        err_eff = np.sqrt(err ** 2 + shift ** 2)
    coarse = err_eff[op] > _ORDER_RTOL * abs(mean[op])
    if not (moved > _LEVEL_NSIG or coarse or err_eff[4] > s.rtol * abs(mean[4])):
        return err_eff
    if p < s.pmax:
        st.next_level(lv, p + 1, final=True)
        return None
    name = s.order_name
    reason = (
        f"{name} carries a relative error above {_DELICATE} and no finer rule is allowed "
        f"(max_log2_points = {s.pmax}) to check it against" if other is None else
        f"the fixed point moves with the rule by {moved:.1f} combined errors between 2^{other[0]} "
        f"and 2^{p} points per scrambling (near the branch's end the linearised error does not "
        f"hold)" if moved > _LEVEL_NSIG else
        f"{name} = {mean[op]:.2e} +- {err_eff[op]:.1e} (with its move from 2^{other[0]} "
        f"to 2^{p} points per scrambling): a relative error above {_ORDER_RTOL}" if coarse else
        f"the test error moves from 2^{other[0]} to 2^{p} points per scrambling by more than rtol")
    return st.done(Outcome.UNDECIDED, reason, mean, np.full(6, np.nan), lv)


def _classify(a: float, lv: _Level, st: _Search, s: SolveSetup) -> Point | None:
    """The outcome of a verified fixed point (:class:`Outcome`), or None after choosing a finer
    rule (the search is updated). Raises :class:`AccuracyNotReached` where ``on_accuracy`` says
    so."""
    K, p, op, mean, err, rel = s.K, st.p, s.order_par, lv.mean, lv.err, lv.rel
    if not np.all(np.isfinite(err)) and lv.lam_max < 1:
        return st.done(Outcome.UNDECIDED, (
            f"fixed point of the pooled rule ({K} scramblings of 2^{p}) whose quadrature error "
            f"cannot be estimated: {lv.why_unbounded or 'a non-finite error'} (Jacobian eigenvalue "
            f"{lv.lam_max:.3f} < 1)"), mean, np.full(6, np.nan), lv)
    if not np.all(np.isfinite(err)) or lv.lam_max >= 1:
        return st.done(Outcome.UNDECIDED, (
            f"fixed point of the pooled rule ({K} scramblings of 2^{p}) with a Jacobian eigenvalue "
            f"{lv.lam_max:.3f} >= 1 along the free overlaps: it repels the damped iteration, and "
            f"its quadrature error is unbounded"), mean, np.full(6, np.nan), lv)
    if mean[op] - _Z95 * err[op] <= 0:
        return st.done(Outcome.UNDECIDED, (
            f"{s.order_name} is zero within its quadrature error "
            f"({mean[op]:.2e} +- {err[op]:.1e}, {K} scramblings of 2^{p})"), mean, err, lv)
    if rel <= s.rtol and err[op] > _DELICATE * abs(mean[op]):
        got = _delicate(lv, st, s)
        if not isinstance(got, np.ndarray):
            return got
        err = got
    if rel <= s.rtol:
        return st.done(Outcome.CONVERGED, (
            f"test error to {rel:.1e} relative (standard error over {K} scramblings of 2^{p} "
            f"points of the pooled rule's fixed point, delta method; Jacobian eigenvalue "
            f"{lv.lam_max:.3f})"), mean, err, lv)
    if p >= s.pmax:
        msg = (f"state evolution ({s.branch}, alpha={a:.4g}, omega={s.model.omega}): fixed point "
               f"found with the pooled rule of {K} scramblings of 2^{p} points but the test "
               f"error's quadrature error {rel:.1e} (relative) exceeds rtol={s.rtol}; raise "
               f"max_log2_points (now {s.pmax}) or rtol")
        if s.on_accuracy == "raise":
            raise AccuracyNotReached(msg)
        return st.done(Outcome.UNDECIDED, msg, mean, err, lv)
    # the finer rule is expected to meet the target: verify there at once
    st.next_level(lv, st.jump(rel, s), final=True)
    return None


def solve_point(a: float, i: int, init: dict[str, Any] | None, sweep: Sweep, s: SolveSetup
                ) -> Point:
    """One ``alpha`` (index ``i`` of the sweep): the pooled rule's fixed point at rising numbers of
    points until the outcome is decided.

    Parameters
    ----------
    a : float
        The sample ratio.
    i : int
        Its index in the sweep (the owner of the tracked starts without continuation).
    init : dict or None
        Initial ``q, m, V, theta`` for a point without continuation history.
    sweep : Sweep
        The sweep's state (read and updated: minimisers, Jacobian, tracked starts).
    s : SolveSetup
        The call's arguments.

    Returns
    -------
    Point
        The outcome, its reason, the values and their errors, the level reached.

    Raises
    ------
    AccuracyNotReached
        A converged point misses the target at the largest level and ``on_accuracy`` is
        ``"raise"``.
    """
    st = sweep.start(a, init, s)
    nan6 = np.full(6, np.nan)
    while True:
        nodes, r, local = _pooled_solve(a, i, st, sweep, s)
        if r["status"] == "left_branch":
            # issued only at the converged neighbour's level or finer: a coarser rule can leave
            # the branch near its end where the neighbour's rule stays on it
            floor = st.p if sweep.p_converged is None else min(s.pmax, sweep.p_converged)
            if st.p < floor:
                st.p = floor
                continue
            return st.done(Outcome.NO_FIXED_POINT, (
                f"the iteration leaves the {s.branch} branch ({s.order_name} flows to 0) with the "
                f"pooled rule of {s.K} scramblings of 2^{st.p} points"), nan6, nan6)
        if r["status"] != "converged":
            # a rule twice as fine may settle (smaller jumps from switching minimisers); after two
            # levels that do not, the point is undecided (near a branch's end), with its last
            # iterate
            st.unsettled += 1
            if st.p < s.pmax and st.unsettled < 2:
                st.p += 1
                continue
            mean = nan6
            if r["ev"] is not None and admissible(r["z"], s.rho):
                mean = np.concatenate([r["z"], r["ev"]["pooled"][0, 4:]])
            return st.done(Outcome.UNDECIDED, (
                f"the iteration does not settle with the pooled rule of {s.K} scramblings of "
                f"2^{st.p} points"), mean, np.full(6, np.nan))
        st.prox_cur, st.p_cur = r["prox"], st.p
        if s.continuation:
            sweep.prox_prev, sweep.p_prox = r["prox"], st.p
        lv = _delta_error(a, r, nodes, local, st, s)
        sweep.jac_prev = lv.J
        if local:
            _after_local(lv, st, s)
            continue
        pt = _classify(a, lv, st, s)
        if pt is not None:
            return pt
