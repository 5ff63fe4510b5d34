"""Accuracy-controlled state evolution: :func:`state_evolution`.

The Gaussian averages of the state evolution (:mod:`.replica`) are computed with a randomised
quasi-Monte Carlo rule: ``K`` independent scramblings of a Sobol sequence of ``2**p`` points each,
mapped to four standard normals. The ``K`` scramblings are pooled into one rule of ``K 2**p`` points
and the fixed point of the pooled rule is solved once. Its quadrature error comes from the delta
method: at the pooled fixed point ``z``, scrambling ``k``'s own update gives the residual
``F_k(z) - z``; propagated through ``(I - J)^{-1}`` (``J`` the update's Jacobian along the free
overlaps, by finite differences with common nodes on the first ``2**11`` points of each scrambling:
it enters only through ``(I - J)^{-1}``, where its own relative error of a few 1e-3 is immaterial)
it is the offset of scrambling ``k``'s own fixed point, and one more Newton step on scrambling
``k``'s map from there adds the second-order terms. The spread of these ``K`` fixed points (standard
error, scaled by ``t_{K-1} / z`` at 95% so that ``+-1.96 err`` is Student's interval for ``K``
samples) combined with the pooled fixed point's bias estimate (the ``K`` single-scrambling fixed
points have ``K`` times the pooled one's ``1/N`` bias: ``(mean_k z_k - z) / (K - 1)``) is the
reported error of every output (the losses move with the overlaps through their gradients). The
number of points is raised (about ``1/N`` for the error, measured) until the test error's error is
below ``rtol`` times the test error.

The pooled fixed point is found by Anderson acceleration of the undamped update far from it (scaled
residual above 0.05) and by a quasi-Newton method (finite-difference Jacobian, Broyden updates, the
neighbour's Jacobian in a sweep) near it, with every proximal problem followed from its previous
minimiser (the map is then smooth). A point is accepted only after an update whose proximal problems
were searched for their global minimisers from several starts meets the tolerance; iteration resumes
if that update differs (after a small difference, one Newton step and the global update again). The
multi-start search uses the centre, the current minimiser and the default starts (origin, matching
points, see :func:`.proximal.proximal`) on nodes met for the first time; on the other nodes the
minimisers that those default starts reached at the last multi-start (nearby overlaps) are followed
instead of starting again, and the centre is started afresh. Between multi-starts every update also
follows those tracked minimisers (and the centre's) at the few nodes where they lie in another basin
than the current minimiser (0.2% of the nodes at alpha = 1), so the followed map switches basins
where the global one does. Large rules are split by whole scramblings over the cores
(:func:`.parallel.num_threads`, ``STUMPLIB_THREADS``; the result does not depend on the split).
Points of a sweep in ``alpha`` are solved by continuation: the start is the quadratic through the
last three fixed points when they share the rule, else an Euler-Newton predictor from the last one
(the integrands do not depend on ``alpha``, so the update at the new ``alpha`` from the last point's
averages costs nothing; one Newton step with its Jacobian); the Jacobian extrapolated from the last
two, the neighbour's proximal minimisers and number of points, one level more when the error,
growing along the sweep as over its last two points, would miss the target, and a finer rule, after
a miss, verified at once. Sobol nets are nested, so the first ``2**(p-1)`` points of a scrambling
are its ``2**(p-1)`` net and keep their minimisers when ``p`` grows).

Three named outcomes per ``alpha`` (:class:`Outcome`):

- ``converged``: the pooled rule's fixed point is on the branch and the test error's quadrature
  error meets the target;
- ``no_fixed_point``: the iteration leaves the branch (semantic: ``theta`` flows to 0; positional:
  ``m`` flows to 0) with a rule at least as fine as that of the sweep's last converged point (or of
  the point ``init`` came from, ``init["log2_points"]``): a coarser rule that leaves the branch is
  refined to that level first (near a branch's end a coarse rule leaves it where a finer one stays);
- ``undecided``: the branch's order parameter is zero within its quadrature error, or the fixed
  point repels along the free overlaps (a Jacobian eigenvalue at or above 1: no error bound), or
  the iteration does not settle, or the fixed point moves with the rule: the rule cannot decide
  within its error (near a branch's end).

Delicate points. Where the order parameter's relative error exceeds 1% (near a branch's end), the
linearised error can fail: a coarse rule's fixed point was measured 6 to 10 of its errors away from
a finer rule's at alpha = 0.6 to 0.7 (semantic, omega = 0.3). Such a point is solved at two numbers
of points and is ``converged`` only if it moves between them by at most three combined errors, its
order parameter's error (with the move added) stays below 10% of its value and the test error's
below ``rtol``; the move is added to every reported error.

A converged point whose accuracy target cannot be met within ``max_log2_points`` raises
:class:`AccuracyNotReached` (never a silent inaccurate point).

Stability of the imposed symmetry: on the semantic branch ``m = 0`` is imposed (swap-symmetric
``A``), on the positional branch ``theta = 0``. The suppressed direction decouples at the fixed
point (the other overlaps are even in it), so the derivative of the update along it, ``dF_m/dm`` at
``m = 0`` (or ``dF_theta/dtheta`` at ``theta = 0``), is an eigenvalue of the update's Jacobian
(central finite difference, same nodes, proximal problems started from the fixed point's global
minimisers, on the first ``2**12`` points of each scrambling, with its standard error over the
scramblings). Its value is returned; ``unstable_undamped`` flags a magnitude above 1 (the undamped
iteration leaves the point), ``unstable`` a value above +1 (the damped iteration
``z <- eta z + (1 - eta) F(z)`` leaves it for every damping ``eta``; a value below -1 is an
oscillation that damping removes).

The code, by job: this module takes the model built and checked by :func:`.setting.check_model`,
walks the sweep carrying a :class:`.solver_search.Sweep` (the last points, Jacobian, minimisers
and level) from one ``alpha`` to the next, and gathers the answers in a :class:`StateEvolutionResult`, which reads
like a dict of arrays; :mod:`.solver_search` runs one ``alpha``'s search over levels
(:func:`.solver_search.solve_point`: the pooled rule's fixed point, its delta-method error, then
the outcome, :class:`.solver_search.Outcome`, or the next level); :mod:`.solver_fixed_point`
solves the pooled rule's fixed point (:func:`.solver_fixed_point.solve_pooled`) and predicts the
next start along a sweep; :mod:`.solver_qmc` holds the rule (:func:`.solver_qmc.scrambled_rules`,
nested Sobol nets) and the update on it (:func:`.solver_qmc.pooled_update`). :class:`Outcome`,
:class:`AccuracyNotReached` and :func:`scrambled_rules` are re-exported here, the solver's
public names.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any, Mapping

import numpy as np

from stumplib.core.validation import check_choice, check_int, check_real

from stumplib.phase.setting import MappingResult, PhaseModel, as_model, check_alphas
from stumplib.phase.solver_qmc import scrambled_rules  # noqa: F401  (re-exported)
from stumplib.phase.solver_search import (AccuracyNotReached, Outcome, Point, SolveSetup, Sweep,
                                          solve_point)

OUTPUT_KEYS = ("q", "m", "V", "theta", "test_error", "train_loss")


@dataclass(eq=False)
class StateEvolutionResult(MappingResult):
    """The result of :func:`state_evolution`: (A,) arrays (scalars for a scalar ``alpha``), read as
    attributes or by key like the dict of arrays it replaces (``r.theta`` or ``r["theta"]``,
    ``r.keys()``, ``r.items()``). The fields are described in :func:`state_evolution`'s Returns."""
    q: Any
    m: Any
    V: Any
    theta: Any
    test_error: Any
    train_loss: Any
    q_err: Any
    m_err: Any
    V_err: Any
    theta_err: Any
    test_error_err: Any
    train_loss_err: Any
    outcome: Any
    reason: Any
    log2_points: Any
    n_updates: Any
    suppressed_derivative: Any
    suppressed_derivative_err: Any
    unstable: Any
    unstable_undamped: Any
    jacobian_eigenvalue: Any
    seconds: Any
    alpha: Any
    n_scramblings: Any

    @classmethod
    def empty(cls, alphas: np.ndarray, K: int) -> "StateEvolutionResult":
        """Arrays for ``alphas``, every point not yet solved (NaN values, no outcome).

        Parameters
        ----------
        alphas : numpy.ndarray, shape ``(A,)``
            The sample ratios of the sweep (stored as the ``alpha`` field).
        K : int
            Number of scramblings (stored in every entry of ``n_scramblings``).

        Returns
        -------
        StateEvolutionResult
            ``(A,)`` arrays: NaN overlaps, losses, errors, suppressed derivatives and Jacobian
            eigenvalues; ``outcome`` and ``reason`` object arrays of ``None``; ``log2_points`` and
            ``n_updates`` zero; ``unstable`` and ``unstable_undamped`` False; ``seconds`` zero.
        """
        nA = alphas.size
        nan = {k: np.full(nA, np.nan) for k in OUTPUT_KEYS}
        nan.update({f"{k}_err": np.full(nA, np.nan) for k in OUTPUT_KEYS})
        return cls(**nan, outcome=np.empty(nA, dtype=object), reason=np.empty(nA, dtype=object),
                   log2_points=np.zeros(nA, dtype=int), n_updates=np.zeros(nA, dtype=int),
                   suppressed_derivative=np.full(nA, np.nan),
                   suppressed_derivative_err=np.full(nA, np.nan),
                   unstable=np.zeros(nA, dtype=bool), unstable_undamped=np.zeros(nA, dtype=bool),
                   jacobian_eigenvalue=np.full(nA, np.nan), seconds=np.zeros(nA), alpha=alphas,
                   n_scramblings=np.full(nA, K))


def _store(out: StateEvolutionResult, i: int, pt: Point) -> None:
    """Write one point's answer into the result's arrays."""
    for k, key in enumerate(OUTPUT_KEYS):
        out[key][i] = pt.mean[k]
        out[f"{key}_err"][i] = pt.err[k]
    out.outcome[i], out.reason[i] = pt.outcome, pt.reason
    out.log2_points[i] = pt.p
    if pt.level is not None:
        out.jacobian_eigenvalue[i] = pt.level.lam_max
    if pt.outcome == Outcome.CONVERGED and pt.level.deriv is not None:
        deriv = pt.level.deriv
        out.suppressed_derivative[i], out.suppressed_derivative_err[i] = deriv
        out.unstable[i] = deriv[0] > 1
        out.unstable_undamped[i] = abs(deriv[0]) > 1
    out.n_updates[i] = pt.n_up


@dataclass(frozen=True)
class SolverOptions:
    """The accuracy control of :func:`state_evolution`: one frozen object, checked where it is
    built.

    Attributes
    ----------
    rtol : float
        Accuracy target: quadrature error of the test error (standard error over the scramblings of
        the pooled rule's fixed point, delta method) at most ``rtol`` times the test error (1e-5 to
        0.1; default 1e-3).
    n_scramblings : int
        Number ``K`` of independent scramblings (3 to 32; default 12); the cost depends on the total
        ``K 2**p`` points, and the error estimate is steadier with more scramblings.
    min_log2_points, max_log2_points : int
        Range of the number of points per scrambling, ``2**p`` (6 to 18; default 10 and 16); raised
        from the minimum (or the neighbour's) until the target is met.
    continuation : bool
        Start each point from the previous points' fixed points (linear extrapolation), Jacobian,
        proximal minimisers and number of points (default True).
    stability : bool
        Compute the derivative along the suppressed direction (two extra updates at the final rule;
        default True).
    max_updates : int
        Cap on the updates (map evaluations) of one fixed-point solve (5 to 100000; default 300).

    Examples
    --------
    >>> SolverOptions(rtol=1e-2, max_log2_points=12).n_scramblings
    12
    """

    rtol: float = 1e-3
    n_scramblings: int = 12
    min_log2_points: int = 10
    max_log2_points: int = 16
    continuation: bool = True
    stability: bool = True
    max_updates: int = 300

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "rtol", check_real("rtol", self.rtol, low=1e-5, high=0.1))
        set_(self, "n_scramblings", check_int("n_scramblings", self.n_scramblings, minimum=3,
                                              maximum=32))
        pmin = check_int("min_log2_points", self.min_log2_points, minimum=6, maximum=18)
        set_(self, "min_log2_points", pmin)
        set_(self, "max_log2_points", check_int("max_log2_points", self.max_log2_points,
                                                minimum=pmin + 1, maximum=18))
        set_(self, "max_updates", check_int("max_updates", self.max_updates, minimum=5,
                                            maximum=100_000))


#: :func:`state_evolution`'s default accuracy control
DEFAULT_SOLVER_OPTIONS = SolverOptions()


def solver_keywords(flat: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`state_evolution`'s keyword arguments from a flat mapping (a study's settings): the
    fields of :class:`SolverOptions` gathered into ``options``, the others passed on.

    Parameters
    ----------
    flat : mapping of str to object
        Keyword arguments, :class:`SolverOptions` fields among them.

    Returns
    -------
    dict
        The other keywords and ``options``.
    """
    names = {f.name for f in fields(SolverOptions)}
    out = {k: v for k, v in flat.items() if k not in names}
    out["options"] = SolverOptions(**{k: v for k, v in flat.items() if k in names})
    return out


def state_evolution(alpha: Any, *, model: PhaseModel,
                    options: SolverOptions = DEFAULT_SOLVER_OPTIONS, seed: int = 0,
                    init: dict[str, Any] | None = None,
                    on_accuracy: str = "raise") -> StateEvolutionResult:
    """Fixed points of the state evolution with an estimate of their quadrature error.

    Parameters
    ----------
    alpha : positive number or 1-D sequence (a sweep; solved by continuation from the largest
        ``alpha`` down, results returned in the input order).
    model : :class:`~stumplib.phase.PhaseModel` (built by :func:`~stumplib.phase.check_model`):
        ``omega, sigma, lam, A`` and the branch, ``"semantic"`` (``theta > 0``; ``m = 0`` imposed
        for a swap-symmetric ``A``) or ``"positional"`` (``m > 0``, ``theta = 0`` imposed).
    options : :class:`SolverOptions`, the accuracy control (``rtol``, scramblings, numbers of
        points, continuation, stability, the cap on updates).
    seed : selects the family of scramblings (independent families for different seeds).
    init : optional dict of initial ``q, m, V, theta`` (scalars) for the first point solved, and
        optionally ``log2_points``: the level of the converged point they come from (no point of
        the sweep is declared without a fixed point at a coarser rule).
    on_accuracy : ``"raise"`` (default: :class:`AccuracyNotReached` when a converged point misses
        the target at ``max_log2_points``) or ``"undecided"`` (report such a point as undecided).

    Returns
    -------
    StateEvolutionResult
        (A,) numpy arrays (scalars for scalar ``alpha``), read by attribute or by key like a dict:
        for ``k`` in ``q, m, V, theta, test_error, train_loss`` the pooled rule's value ``k`` and its
        quadrature error ``k_err`` (NaN unless converged or undecided with theta (m) zero within its
        error; an undecided point whose iteration does not settle has its last iterate's values and
        NaN errors; NaN for no fixed point); ``outcome`` (one of :class:`Outcome`), ``reason`` (a
        sentence), ``log2_points`` (per scrambling), ``n_scramblings``, ``n_updates`` (map
        evaluations, each over all ``K 2**p`` points), ``suppressed_derivative`` (``dF_m/dm`` or
        ``dF_theta/dtheta`` of the pooled rule; NaN if not computed), ``suppressed_derivative_err``,
        ``unstable`` (bool: the derivative exceeds +1, so the fixed point repels along the
        suppressed direction under the update with any damping), ``unstable_undamped`` (bool: its
        magnitude exceeds 1, so the undamped update is unstable there; a derivative below -1 is an
        oscillation that damping removes), ``jacobian_eigenvalue`` (the largest real part of the
        eigenvalues of the update's Jacobian along the free overlaps: the amplification
        ``1 / (1 - lambda)`` of quadrature errors), ``seconds`` (wall time per point), ``alpha``.

    Raises
    ------
    ValueError for bad arguments (named); AccuracyNotReached (see ``on_accuracy``).
    """
    alphas, scalar = check_alphas(alpha)
    model = as_model(model)
    if not isinstance(options, SolverOptions):
        raise ValueError(f"options must be a SolverOptions; got {type(options).__name__}")
    rtol, K = options.rtol, options.n_scramblings
    pmin, pmax = options.min_log2_points, options.max_log2_points
    continuation, stability, max_updates = (options.continuation, options.stability,
                                            options.max_updates)
    seed = check_int("seed", seed, minimum=0)
    on_accuracy = check_choice("on_accuracy", on_accuracy, ("raise", "undecided"))
    s = SolveSetup(model=model, K=K, pmin=pmin, pmax=pmax, seed=seed, rtol=rtol,
                   continuation=continuation,
                   stability=stability and (model.branch == "positional" or model.swap_symmetric),
                   max_updates=max_updates, on_accuracy=on_accuracy)
    out = StateEvolutionResult.empty(alphas, K)
    sweep = Sweep(p_next=pmin)
    if init is not None and init.get("log2_points") is not None:
        sweep.p_converged = int(init["log2_points"])
    for i in np.argsort(-alphas, kind="stable"):
        t0 = time.perf_counter()
        a = float(alphas[i])
        pt = solve_point(a, i, init, sweep, s)
        _store(out, i, pt)
        if pt.outcome == Outcome.CONVERGED:
            sweep.record(a, pt, s)
        out.seconds[i] = time.perf_counter() - t0
    return out.first() if scalar else out


def estimate(result: Mapping[str, Any], key: str, index: int | None = None):
    """One output of :func:`state_evolution` as a :class:`stumplib.core.stats.Estimate`.

    Parameters
    ----------
    result : a :class:`StateEvolutionResult` (or a mapping with the same keys).
    key : one of :data:`OUTPUT_KEYS`.
    index : entry of an array result (None for a scalar result).

    Returns
    -------
    Estimate
        Kind ``"quadrature"``: the value +- its quadrature error.
    """
    from stumplib.core.stats import Estimate
    if key not in OUTPUT_KEYS:
        raise ValueError(f"key must be one of {OUTPUT_KEYS}; got {key!r}")
    v, e = result[key], result[f"{key}_err"]
    if index is not None:
        v, e = v[index], e[index]
    return Estimate.with_error(float(v), float(e), kind="quadrature")
